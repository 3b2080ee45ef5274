"""Pipeline recovery checks P1-P7 (spec/CHECKS.md): what a client must do when a
DataNode of its write pipeline fails (DataStreamer.setupPipelineForAppendOrRecovery),
and whom it blames when a new block's pipeline cannot be set up (P7)."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window, functions as F

from ..load import RunSet
from .common import (LOG_SLACK_S, Outcome, Starts, assign_stream, base, client_streams,
                     first_after, first_of, last_before, node_deaths, runs_of, sql_string,
                     union_all, violation, with_conf)

_NEW_BLOCK_SETUP = "PIPELINE_SETUP_CREATE"


def _pipeline_errors(runs: RunSet) -> DataFrame:
    """client.pipeline.error rows that call for a pipeline recovery, with their stream.

    A setup error of a brand-new block (PIPELINE_SETUP_CREATE, or a block the client then
    abandons) is handled by abandonBlock + addBlock instead, so it is left out."""
    def build():
        errs = base(runs.of("client.pipeline.error"), "path", "block", "gs", "stage",
                    "pipeline", "error_index", "bad_node", "restarting", "acked", "offset",
                    "error")
        errs = errs.filter(F.coalesce(F.col("stage"), F.lit("")) != _NEW_BLOCK_SETUP)
        ab = runs.of("client.pipeline.abandon").select(
            F.col("run_id").alias("_r"), F.col("node").alias("_n"), F.col("block").alias("_b"),
            F.col("ts").alias("_t"))
        errs = errs.join(ab, (errs["run_id"] == ab["_r"]) & (errs["node"] == ab["_n"])
                         & (errs["block"] == ab["_b"]) & (ab["_t"] >= errs["ts"]), "left_anti")
        return assign_stream(errs, client_streams(runs))
    return runs.memo("pipeline_errors", build)


def ack_progress(runs: RunSet, split: bool = True) -> DataFrame:
    """run_id, node, path, s_open, block, last_ts, max_acked: how far the acks of each
    block of each output stream got. One pass over the acks (the bulk of a client's log),
    made once for all the checks (see `_stream_blocks` for how)."""
    return _stream_blocks(runs, "client.ack", ("acked",), split)


def write_progress(runs: RunSet, split: bool = True) -> DataFrame:
    """run_id, node, path, s_open, block, last_ts: each output stream's last write to
    each block, from the folded writes like `ack_progress` (P1 asks whether a stream
    wrote on after an error; reading the dense writes again for it cost a pass over
    every line: at 10 million events 31 s of P1's 67 s alone, and the other checks
    queued behind its scan)."""
    return _stream_blocks(runs, "client.write", (), split)


def _stream_blocks(runs: RunSet, event: str, values: tuple[str, ...],
                   split: bool) -> DataFrame:
    """run_id, node, path, s_open, block, last_ts and max_<v> for each of `values`: the
    latest line of `event` and the greatest of each value per output stream and block.

    Which stream a line belongs to needs the streams' opens, rare events that the loader
    parses in the background; writes and acks are dense lines. So the pass over them is
    split (`split`, the default; the tests compare both forms): the loader's folded rows
    of the dense lines, summed up per client, path and block (`bulk_blocks`), are made
    while the rare events are still parsed (prepare_bulk), and only then placed in
    streams. A block whose dense lines do not all fall in one stream (an append that goes
    on with the file's last block, lines logged before any open) has its lines placed one
    by one instead, as the unsplit form places all of them."""
    cols = ("run_id", "node", "path", "ts", "block") + values
    per_line = [F.max("ts").alias("last_ts")] + [F.max(v).alias(f"max_{v}") for v in values]
    out = ["run_id", "node", "path", "s_open", "block", "last_ts"]
    out += [f"max_{v}" for v in values]

    def per_stream_block(lines: DataFrame) -> DataFrame:
        return lines.groupBy("run_id", "node", "path", "s_open", "block").agg(*per_line)

    if not split:
        lines = assign_stream(runs.of(event).select(*cols), client_streams(runs))
        return per_stream_block(lines)

    def build():
        pre = bulk_blocks(runs, event, values)   # first: it needs no rare event
        streams = client_streams(runs)
        placed = assign_stream(pre, streams, first="first_ts", last="last_ts", how="left")
        whole = placed.filter(F.col("s_open").isNotNull()).select(*out)
        spread = placed.filter(F.col("s_open").isNull()).select(
            *[F.col(k).alias("_" + k) for k in _BLOCK_KEYS])
        one_by_one = runs.rare.filter(F.col("event") == event).select(*cols)
        spread_rows = spread.collect()     # a few blocks, if any (none: no scan of the lines)
        if spread_rows:
            keys = runs.spark.createDataFrame(spread_rows, spread.schema)
            dense = runs.bulk.filter(F.col("event") == event)
            dense = dense.join(F.broadcast(keys), [dense[k].eqNullSafe(keys["_" + k])
                                                   for k in _BLOCK_KEYS], "left_semi")
            one_by_one = one_by_one.unionByName(dense.select(*cols))
        return (whole.unionByName(per_stream_block(assign_stream(one_by_one, streams)))
                .groupBy("run_id", "node", "path", "s_open", "block")
                .agg(*[F.max(c).alias(c) for c in out[5:]]))
    return runs.memo(f"{event}_progress", build)


_BLOCK_KEYS = ("run_id", "node", "path", "block")


def bulk_blocks(runs: RunSet, event: str, values: tuple[str, ...] = ()) -> DataFrame:
    """run_id, node, path, block, first_ts, last_ts and max_<v> for each of `values`: the
    dense lines of `event` summed up per client, path and block, from the loader's folded
    table (it needs no rare event, so prepare_bulk builds it while the loader still
    parses those)."""
    return runs.memo(f"bulk_blocks_{event}_{'_'.join(values)}", lambda: (
        runs.folded.filter(F.col("event") == event).groupBy(*_BLOCK_KEYS)
        .agg(F.min("first_ts").alias("first_ts"), F.max("last_ts").alias("last_ts"),
             *[F.max(f"max_{v}").alias(f"max_{v}") for v in values])))


def check_p1(runs: RunSet) -> Outcome:
    """Rebuild: an error on a stream that went on afterwards (a later write, a close
    whatever its result, an hflush beyond what was acked, acks that moved on) is followed
    by client.pipeline.recovered for the block, with a greater GS and without the bad
    node. An error whose stream then failed for good (client.stream.error before any
    recovery) did not go on: P6 judges that stream. Missing evidence (no GS on either
    side, no bad node, no rebuilt pipeline) fails: it cannot show the rebuild happened."""
    st = client_streams(runs)
    errs = _pipeline_errors(runs)
    keys = ["run_id", "node", "path", "s_open"]
    went_on = _went_on(runs, errs, keys)
    rec = base(runs.of("client.pipeline.recovered"), "block", "gs", "pipeline")
    # the stream's first failure for good after the error, and the block's first
    # recovery: a failure before any recovery hands the stream to P6
    fails = assign_stream(base(runs.of("client.stream.error"), "path"), st)
    fa = first_after(errs.select("eid", *keys, "ts"), fails.select(*keys, "ts", "eid"),
                     keys, "f_").select("eid", "f_ts")
    considered = errs.join(went_on, "eid", "left_semi")
    j = first_after(considered, rec, ["run_id", "node", "block"], "r_").join(fa, "eid", "left")
    j = j.filter(F.col("f_ts").isNull()
                 | (F.col("r_ts").isNotNull() & (F.col("r_ts") < F.col("f_ts"))))
    why = (F.when(F.col("r_ts").isNull(),
                  "the stream went on but no client.pipeline.recovered followed for this block")
           .when(F.col("gs").isNull() | F.col("r_gs").isNull(),
                 "the error or the recovery names no GS: no proof the GS was bumped")
           .when(F.col("r_gs") <= F.col("gs"),
                 F.format_string("the rebuilt pipeline has GS %d, not greater than %d",
                                 F.col("r_gs"), F.col("gs")))
           # a node that announced its restart (RESTART OOB ack) is no bad node: it stays
           .when(F.col("bad_node").isNull() & F.col("restarting").isNull(),
                 "the error names no bad node: no proof the rebuilt pipeline left it out")
           .when(F.col("r_pipeline").isNull(), "the recovery names no pipeline")
           .when(F.array_contains(F.col("r_pipeline"), F.col("bad_node")),
                 F.format_string("bad node %s is still in the rebuilt pipeline",
                                 F.col("bad_node"))))
    bad = j.withColumn("why", why).filter(F.col("why").isNotNull())
    return Outcome(runs_of(j), violation(
        bad, F.col("why"), "path", "block", "gs", "stage", "pipeline", "bad_node", "acked",
        F.col("r_ts").alias("recovered_ts"), F.col("r_gs").alias("recovered_gs"),
        F.col("r_pipeline").alias("recovered_pipeline")))


def _went_on(runs: RunSet, errs: DataFrame, keys: list[str]) -> DataFrame:
    """eid of the pipeline errors `errs` whose stream (`keys`) went on afterwards: a later
    write, close or recovery, an hflush beyond the offset at the error, acks that moved
    on (P1)."""
    st = client_streams(runs)
    ctl = assign_stream(
        runs.of("client.close").unionByName(runs.of("client.hflush"))
        .unionByName(runs.of("client.pipeline.recovered"))
        # an hflush counts only beyond the file offset acked at the error: one returning
        # on acks that came before the error has not gone on
        .select("run_id", "node", "path", "ts",
                F.when(F.col("event") == "client.hflush", F.col("offset")).alias("h_off")), st)
    # a later write: each stream's last write to each block, from the folded writes
    # (the writes are the bulk of the events: not read again line by line)
    wrote = write_progress(runs).select(*keys, F.col("last_ts").alias("ts"),
                                        F.lit(None).cast("long").alias("h_off"))
    went_on_ctl = ctl.select(*keys, "ts", "h_off").unionByName(wrote)
    acks = ack_progress(runs)
    e = errs.select("eid", *keys, "ts", "block", "acked", "offset")
    l1 = went_on_ctl.select(*[F.col(k).alias("_" + k) for k in keys], F.col("ts").alias("_t"),
                            F.col("h_off").alias("_off"))
    c1 = e.join(l1, [e[k] == l1["_" + k] for k in keys] + [
        (l1["_t"] > e["ts"]) & (l1["_off"].isNull() | e["offset"].isNull()
                                | (l1["_off"] > e["offset"]))]).select("eid")
    a = acks.select(*[F.col(k).alias("_" + k) for k in keys], F.col("block").alias("_b"),
                    "last_ts", "max_acked")
    c2 = e.join(a, [e[k] == a["_" + k] for k in keys]
                + [(a["last_ts"] > e["ts"])
                   & ((a["_b"] != e["block"])
                      | (a["max_acked"] > F.coalesce(e["acked"], F.lit(-1))))]).select("eid")
    went_on = c1.unionByName(c2).distinct()
    return went_on


def replace_needed(policy, replication, remaining, hflushed, enable):
    """The replace-datanode-on-failure policy (ReplaceDatanodeOnFailure) as a Column:
    DEFAULT: r >= 3 and (r/2 >= n or (r > n and hflushed/appended)); ALWAYS: r > n;
    NEVER or disabled: never."""
    r, n = replication, remaining
    return (F.when(~F.coalesce(enable, F.lit(True)), F.lit(False))
            .when(policy == "NEVER", F.lit(False))
            .when(policy == "ALWAYS", r > n)
            .when(policy == "DEFAULT",
                  (r >= 3) & ((F.floor(r / 2) >= n) | ((r > n) & F.coalesce(hflushed, F.lit(False))))))


def nothing_written(stage: Column, append: Column, last_acked_seqno: Column) -> Column:
    """3.4 DataStreamer.addDatanode2ExistingPipeline's one return without a node: not an
    append, no packet of the stream acked yet (lastAckedSeqno < 0) and the stage
    PIPELINE_SETUP_CREATE (a new block's failed setup, recovered by 3.4.1's
    setupPipelineForCreate): there is nothing to copy. Null when the stage is that one
    but the event lacks last_acked_seqno."""
    return ((F.coalesce(stage, F.lit("")) == _NEW_BLOCK_SETUP)
            & ~F.coalesce(append, F.lit(False)) & (last_acked_seqno < 0))


def check_p2(runs: RunSet) -> Outcome:
    """Policy: each client.pipeline.replace decision is what the policy gives for its own
    inputs, best-effort is honoured, and `added` leads to a pipeline with the new node;
    where the policy asks for a node but nothing was written yet (`nothing_written`),
    Hadoop adds none, and neither may the client.
    A closing pipeline is no exception: 3.4.0's DataStreamer.addDatanode2ExistingPipeline
    applies the policy in PIPELINE_CLOSE(_RECOVERY) too (HDFS-16146; earlier releases
    returned at once and closed the block on fewer replicas)."""
    rep = with_conf(runs, base(runs.of("client.pipeline.replace"), "path", "block", "policy",
                               "replication", "remaining", "hflushed", "decision",
                               "new_node", "stage", "append", "last_acked_seqno"))
    policy = F.upper(F.coalesce(F.col("policy"), F.col("conf_policy")))
    says = replace_needed(policy, F.col("replication"), F.col("remaining"), F.col("hflushed"),
                          F.col("replace_enable"))
    rep = (rep.withColumn("says", says)
           .withColumn("early", nothing_written(F.col("stage"), F.col("append"),
                                                F.col("last_acked_seqno")))
           .withColumn("need", F.col("says") & ~F.col("early")))
    nxt = base(runs.of("client.pipeline.recovered", "client.pipeline.error",
                        "client.pipeline.replace"), "block", "pipeline")
    j = first_after(rep, nxt, ["run_id", "node", "block"], "n_")
    why = _p2_why(policy)
    bad = j.withColumn("why", why).filter(F.col("why").isNotNull())
    return Outcome(runs_of(rep), violation(
        bad, F.col("why"), "path", "block", F.col("policy"), "replication", "remaining",
        "hflushed", "decision", "new_node", "stage",
        F.col("need").alias("replacement_required"),
        F.col("n_pipeline").alias("next_pipeline")))


def _p2_why(policy: Column) -> Column:
    """Why a client.pipeline.replace row (with `need` and its next pipeline event, n_)
    breaks P2; null when it does not."""
    d = F.col("decision")
    tried = d.isin("added", "failed", "failed_best_effort")
    return (F.when(F.col("says").isNull(),
                   "cannot apply the policy: policy, replication or remaining missing")
            .when(F.col("need").isNull(),
                  "cannot tell whether anything was written: stage PIPELINE_SETUP_CREATE "
                  "without last_acked_seqno")
            .when(F.col("early") & (d != "not_needed"),
                  F.format_string("nothing written yet (stage %s, no packet acked, not an "
                                  "append): Hadoop adds no node, decision was %s",
                                  F.col("stage"), d))
            .when(F.col("need") & ~tried,
                  F.format_string("policy %s with replication %d, %d remaining, hflushed=%s "
                                  "requires a replacement, decision was %s", policy,
                                  F.col("replication"), F.col("remaining"),
                                  F.col("hflushed").cast("string"), d))
            .when(~F.col("need") & (d != "not_needed"),
                  F.format_string("policy %s with replication %d, %d remaining, hflushed=%s "
                                  "requires no replacement, decision was %s", policy,
                                  F.col("replication"), F.col("remaining"),
                                  F.col("hflushed").cast("string"), d))
            .when((d == "failed_best_effort") & ~F.coalesce(F.col("best_effort"), F.lit(False)),
                  "went on without a replacement (failed_best_effort) but best-effort is off")
            .when((d == "failed") & F.coalesce(F.col("best_effort"), F.lit(False)),
                  "best-effort is on, yet the failed replacement failed the stream")
            .when((d == "added") & F.col("new_node").isNull(), "decision added names no new_node")
            .when((d == "added") & (F.col("n_event") == "client.pipeline.recovered")
                  & ~F.array_contains(F.col("n_pipeline"), F.col("new_node")),
                  F.format_string("new node %s is missing from the next rebuilt pipeline",
                                  F.col("new_node"))))


def check_p3(runs: RunSet) -> Outcome:
    """No acked byte lost: after a recovery every replica of the new pipeline holds at
    least the bytes acked before the error (its first state at the new GS, and any
    transfer to a new node, carry at least `acked` bytes); a member that never logged a
    replica at the new GS fails."""
    considered, members = _p3_members(runs)
    return Outcome(runs_of(considered), union_all([
        _p3_short_replicas(runs, members), _p3_never_held(runs, members),
        _p3_short_transfers(runs, members)]))


def _p3_members(runs: RunSet) -> tuple[DataFrame, DataFrame]:
    """(considered, members): the recoveries P3 judges (client.pipeline.recovered with
    e_acked, e_ts of the client's last error of the block before), and one row per member
    of each new pipeline (dn, mkey)."""
    rec = base(runs.of("client.pipeline.recovered"), "path", "block", "gs", "old_gs", "pipeline")
    err = base(runs.of("client.pipeline.error"), "block", "acked", "pipeline")
    j = last_before(rec, err, ["run_id", "node", "block"], "e_")
    considered = j.filter(F.col("e_acked").isNotNull())
    members = considered.select("*", F.explode("pipeline").alias("dn")) \
        .withColumn("mkey", F.concat_ws("/", F.col("eid").cast("string"), F.col("dn")))
    return considered, members


def _p3_short_replicas(runs: RunSet, members: DataFrame) -> DataFrame:
    """P3's violations of members whose first replica state at the new GS holds fewer
    than the acked bytes."""
    states = (runs.of("dn.replica.state").filter(F.col("state").isin("RBW", "FINALIZED"))
              .select("run_id", F.col("node").alias("dn"), "block", "gs", "ts", "eid", "len",
                      "state"))
    # each member's first replica state at the new GS
    first_state = first_of(members, states, ["run_id", "dn", "block", "gs"], "s_",
                           key="mkey")
    short = first_state.filter(F.col("s_len") < F.col("e_acked"))
    return violation(
        short, F.format_string("replica on %s holds %d bytes at the new GS %d, fewer than the "
                               "%d acked before the error", F.col("dn"), F.col("s_len"),
                               F.col("gs"), F.col("e_acked")),
        "path", "block", "gs", "pipeline", F.col("dn").alias("replica_on"),
        F.col("s_len").alias("replica_len"), F.col("s_state").alias("replica_state"),
        F.col("e_acked").alias("acked"), ts="s_ts", node="dn", event=F.lit("dn.replica.state"))


def _p3_never_held(runs: RunSet, members: DataFrame) -> DataFrame:
    """P3's violations of members that never logged the replica at the new GS."""
    # a member that never logged the replica at the new GS (in any state) does not hold
    # the acked bytes at all: the client resumed through a node without the data
    held = (runs.of("dn.replica.state").filter(F.col("gs").isNotNull())
            .select("run_id", F.col("node").alias("dn"), "block", "gs").distinct())
    never = members.join(held, ["run_id", "dn", "block", "gs"], "left_anti")
    return violation(
        never, F.format_string("%s is in the new pipeline but never held the replica at the "
                               "new GS %d (the %d acked bytes were not there)", F.col("dn"),
                               F.col("gs"), F.col("e_acked")),
        "path", "block", "gs", "pipeline", F.col("dn").alias("member"),
        F.col("e_acked").alias("acked"))


def _p3_short_transfers(runs: RunSet, members: DataFrame) -> DataFrame:
    """P3's violations of transfers to a member, between the error and the recovery,
    that carried fewer than the acked bytes."""
    tr = runs.of("dn.transfer").select(F.col("run_id").alias("_r"), F.col("block").alias("_b"),
                                       F.col("target").alias("_d"), F.col("ts").alias("t_ts"),
                                       F.col("len").alias("t_len"), F.col("node").alias("t_node"))
    jt = members.join(tr, (members["run_id"] == tr["_r"]) & (members["block"] == tr["_b"])
                      & (members["dn"] == tr["_d"]) & (tr["t_ts"] >= members["e_ts"])
                      & (tr["t_ts"] <= members["ts"]))
    short_tr = jt.filter(F.col("t_len") < F.col("e_acked"))
    return violation(
        short_tr, F.format_string("transfer to %s carried %d bytes, fewer than the %d acked",
                                  F.col("dn"), F.col("t_len"), F.col("e_acked")),
        "path", "block", F.col("dn").alias("target"), F.col("t_len").alias("transferred"),
        F.col("e_acked").alias("acked"), ts="t_ts", node="t_node", event=F.lit("dn.transfer"))


def check_p4(runs: RunSet) -> Outcome:
    """NameNode agrees: each rebuilt pipeline has an nn.block.update_pipeline with the
    same block, GS and nodes, and an nn.block.gs_bump(reason=pipeline) to that GS."""
    rec = base(runs.of("client.pipeline.recovered"), "path", "block", "gs", "old_gs", "pipeline")
    ups = (runs.of("nn.block.update_pipeline")
           .groupBy("run_id", "block", "gs")
           .agg(F.collect_set(F.array_sort("pipeline")).alias("nn_pipelines")))
    bumps = (runs.of("nn.block.gs_bump").filter(F.col("reason") == "pipeline")
             .select("run_id", "block", "gs", F.lit(True).alias("bumped")).distinct())
    j = rec.join(ups, ["run_id", "block", "gs"], "left").join(bumps, ["run_id", "block", "gs"],
                                                              "left")
    why = (F.when(F.col("nn_pipelines").isNull(),
                  "no nn.block.update_pipeline for this block and GS")
           .when(~F.array_contains(F.col("nn_pipelines"), F.array_sort("pipeline")),
                 "the NameNode recorded a different pipeline for this GS")
           .when(F.col("bumped").isNull(),
                 "no nn.block.gs_bump with reason pipeline to this GS"))
    bad = j.withColumn("why", why).filter(F.col("why").isNotNull())
    return Outcome(runs_of(rec), violation(bad, F.col("why"), "path", "block", "old_gs", "gs",
                                           "pipeline", "nn_pipelines"))


def stale_locations(runs: RunSet, blocks: DataFrame) -> tuple[DataFrame, DataFrame]:
    """For the final-state blocks among `blocks` (run_id, block): the locations whose
    replica on disk has an older GS than the block, or no replica at all.
    Returns (exercised blocks, bad location rows)."""
    fb = runs.fs_blocks.join(blocks.distinct(), ["run_id", "block"], "left_semi")
    loc = fb.select("run_id", "path", "block", "gs", "len", "state",
                    F.explode("locations").alias("dn"))
    reps = runs.fs_replicas.select("run_id", "dn", "block", F.col("gs").alias("r_gs"),
                                   F.col("len").alias("r_len"), F.col("state").alias("r_state"))
    listed = runs.fs_datanodes.withColumn("listed", F.lit(True))
    j = loc.join(reps, ["run_id", "dn", "block"], "left").join(listed, ["run_id", "dn"], "left")
    why = (F.when(F.col("r_gs").isNotNull() & (F.col("r_gs") < F.col("gs")),
                  F.format_string("location %s holds generation %d, older than the block's %d",
                                  F.col("dn"), F.col("r_gs"), F.col("gs")))
           .when(F.col("r_gs").isNull() & F.col("listed").isNotNull(),
                 F.format_string("location %s has no replica of the block on disk", F.col("dn"))))
    bad = j.withColumn("why", why).filter(F.col("why").isNotNull())
    return fb, bad


def check_p5(runs: RunSet) -> Outcome:
    """Stale replicas: after a pipeline recovery, no final location of the block is a
    replica with an older GS (such replicas must be invalidated or reported stale)."""
    blocks = runs.of("client.pipeline.recovered").select("run_id", "block")
    ex, bad = stale_locations(runs, blocks)
    return Outcome(runs_of(ex), _stale_evidence(bad))


def _stale_evidence(bad: DataFrame) -> DataFrame:
    return violation(bad, F.col("why"), "path", "block", "gs", "len",
                     F.col("r_gs").alias("replica_gs"), F.col("r_len").alias("replica_len"),
                     F.col("r_state").alias("replica_state"),
                     ts=F.lit(None), node="dn", event=F.lit("final_state"))


# a failure of every node: an error in a one-node pipeline that names its bad node, or a
# stream failed for good (an error naming no bad node, error_index -1, waits for a
# restarting DataNode, MINIHDFS.md 5: it leaves the pipeline whole)
P6_STARTS = (Starts("client.pipeline.error", "bad_node IS NOT NULL AND size(pipeline) <= 1"),
             Starts("client.stream.error"))


def check_p6(runs: RunSet) -> Outcome:
    """Honest failure: once every node of a pipeline failed (an error in a one-node
    pipeline, or client.stream.error) the stream never reports success, and it does
    report an error (client.close ok=false, client.stream.error or client.op.end
    ok=false) unless the client itself was killed."""
    st = client_streams(runs)
    doomed = _p6_doomed(runs, st)
    ended = runs.of("harness.run.end").select("run_id", F.lit(True).alias("run_ended")).distinct()
    d = (doomed.join(_p6_outcomes(runs, st, doomed), "eid", "left")
         .join(_p6_killed(runs, doomed), "eid", "left")
         .join(ended, "run_id", "left"))
    why = (F.when(F.col("success_ts").isNotNull(),
                  F.format_string("%s reported success after every DataNode of the pipeline "
                                  "failed", F.col("success_event")))
           .when((F.col("event") == "client.pipeline.error") & (F.col("error_reported") != 1)
                 & F.col("killed").isNull() & F.col("run_ended").isNotNull(),
                 "every DataNode of the pipeline failed, yet the application was never told"))
    bad = d.withColumn("why", why).filter(F.col("why").isNotNull())
    return Outcome(runs_of(doomed), violation(
        bad, F.col("why"), "path", "block", "pipeline", "bad_node",
        F.col("success_ts").alias("success_ts")))


def _p6_doomed(runs: RunSet, st: DataFrame) -> DataFrame:
    """The failures of every node P6 starts from (P6_STARTS), on the client's stream
    (s_open) of `st`: run_id, eid, ts, node, event, path, block, pipeline, bad_node."""
    last = (_pipeline_errors(runs).filter(P6_STARTS[0].where)
            .select("run_id", "eid", "ts", "node", "event", "path", "block", "pipeline",
                    "bad_node", "s_open"))
    serr = assign_stream(base(P6_STARTS[1].rows(runs), "path", "error"), st) \
        .select("run_id", "eid", "ts", "node", "event", "path", F.lit(None).cast("long").alias("block"),
                F.lit(None).cast("array<string>").alias("pipeline"),
                F.lit(None).cast("string").alias("bad_node"), "s_open")
    return last.unionByName(serr)


def _p6_outcomes(runs: RunSet, st: DataFrame, doomed: DataFrame) -> DataFrame:
    """eid, success_ts, success_event, error_reported: what the stream of each `doomed`
    event reported from then on (client.close, client.op.end, client.stream.error): its
    first success (time and event), and whether any error followed."""
    outcome_events = assign_stream(
        base(runs.of("client.close", "client.op.end", "client.stream.error"), "path", "ok"), st)
    keys = ["run_id", "node", "path", "s_open"]
    o = outcome_events.select(*keys, "ts", "eid", "event", "ok")
    final = F.col("event").isin("client.close", "client.op.end")
    other = lambda l, r: r["o_eid"] != l["eid"]  # noqa: E731
    d = doomed.select("eid", *keys, "ts")
    s = first_after(d, o.filter(final & F.col("ok")), keys, "o_", strict=False, extra=other)
    e = first_after(d, o.filter(~final | ~F.col("ok")), keys, "o_", strict=False, extra=other)
    errors = e.select("eid", F.col("o_ts").isNotNull().cast("int").alias("error_reported"))
    return (s.select("eid", F.col("o_ts").alias("success_ts"),
                     F.col("o_event").alias("success_event"))
            .join(errors, "eid"))


def _p6_killed(runs: RunSet, doomed: DataFrame) -> DataFrame:
    """eid, killed: the `doomed` events whose client was killed or crashed after them."""
    deaths = node_deaths(runs).select(F.col("run_id").alias("_r"), F.col("target").alias("_n"),
                                      F.col("ts").alias("_t"))
    return doomed.join(deaths, (doomed["run_id"] == deaths["_r"]) & (doomed["node"] == deaths["_n"])
                       & (deaths["_t"] >= doomed["ts"]), "left_semi").select(
        "eid", F.lit(True).alias("killed"))


# a failed setup of a new block's pipeline that names the block and its nodes
P7_STARTS = (Starts("client.pipeline.error", f"stage = {sql_string(_NEW_BLOCK_SETUP)} AND "
                    "block IS NOT NULL AND size(pipeline) > 0"),)


def check_p7(runs: RunSet) -> Outcome:
    """Setup errors blame the right node: after a failed setup of a new block's pipeline
    (client.pipeline.error at PIPELINE_SETUP_CREATE), the node the client blames is the
    one the DataNodes' own dn.pipeline.setup events name: the first node when it never
    logged the setup (the client could not connect), otherwise the first node's
    `first_bad_link` (the first node itself when it failed with none). The NameNode's next
    allocation for the file excludes that node (`excluded`, when logged) and does not
    place it. Only a setup whose block the client then abandoned is excluded so: 3.4.1's
    DataStreamer.setupPipelineForCreate recovers a new block's failed setup on the
    survivors first (the bad node only leaves the pipeline), and abandons the block
    after its last failed setup. A setup the first node reports as SUCCESS failed
    elsewhere, and one of a block whose recovery had started may have been cut by it:
    not judged."""
    judged = _p7_abandoned(runs, _p7_judged(runs))
    alloc = base(runs.of("nn.block.allocate"), "path", "block", "pipeline", "excluded") \
        .withColumnRenamed("pipeline", "a_pipeline")
    nxt = first_after(judged, alloc.select("run_id", "path", "ts", "eid", "block",
                                           "a_pipeline", "excluded"),
                      ["run_id", "path"], "n_")
    why = (F.when(F.col("bad_node").isNull() | (F.col("bad_node") != F.col("named")),
                  F.format_string("the client blamed %s, but the DataNodes' setup names %s "
                                  "(%s)", F.coalesce(F.col("bad_node"), F.lit("nobody")),
                                  F.col("named"), _p7_setup_said()))
           .when(~F.col("abandoned"), F.lit(None).cast("string"))
           .when(F.col("n_excluded").isNotNull()
                 & ~F.array_contains(F.col("n_excluded"), F.col("named")),
                 F.format_string("the next addBlock excluded [%s], not %s",
                                 F.array_join(F.col("n_excluded"), ","), F.col("named")))
           .when(F.array_contains(F.coalesce(F.col("n_a_pipeline"),
                                             F.array().cast("array<string>")), F.col("named")),
                 F.format_string("the next block %d was placed on %s again", F.col("n_block"),
                                 F.col("named"))))
    bad = nxt.withColumn("why", why).filter(F.col("why").isNotNull())
    return Outcome(runs_of(judged), violation(
        bad, F.col("why"), "path", "block", "gs", "pipeline", "bad_node",
        F.col("named").alias("setup_names"), F.col("d_status").alias("first_node_status"),
        F.col("d_fbl").alias("first_bad_link"), F.col("n_block").alias("next_block"),
        F.col("n_a_pipeline").alias("next_pipeline"), F.col("n_excluded").alias("excluded")))


def _p7_judged(runs: RunSet) -> DataFrame:
    """The failed setups P7 judges, with `named` (the node the DataNodes' setup names) and
    the first node's last dn.pipeline.setup of the block (d_ts, d_status, d_fbl)."""
    errs = base(P7_STARTS[0].rows(runs), "path", "block", "gs", "stage", "pipeline",
                "bad_node")
    errs = errs.withColumn("first", F.col("pipeline")[0])
    # the first node's own account of the setup: its last dn.pipeline.setup of the block
    setup = runs.of("dn.pipeline.setup").select(
        "run_id", F.col("node").alias("first"), "block", "gs", "ts", "eid", "status",
        F.col("first_bad_link").alias("fbl"))
    j = last_before(errs, setup, ["run_id", "first", "block", "gs"], "d_", strict=False,
                    slack=LOG_SLACK_S)
    ok = F.upper(F.coalesce(F.col("d_status"), F.lit(""))) == "SUCCESS"
    fbl = F.when(F.col("d_fbl") != "", F.col("d_fbl"))
    j = j.withColumn("named", F.when(F.col("d_ts").isNull(), F.col("first"))
                     .when(~ok, F.coalesce(fbl, F.col("first"))))
    # a setup of a block whose recovery had started (a lease recovery of the block just
    # allocated) may be cut by it: the recovery's initReplicaRecovery stops the writers
    # of the block, the first node's among them, and then its answer (firstBadLink) never
    # reaches the client, which can only blame the node it lost; not a blame to judge
    rec = runs.of("nn.recovery.start").select(
        F.col("run_id").alias("_rr"), F.col("block").alias("_rb"), F.col("ts").alias("_rt"))
    return j.filter(F.col("named").isNotNull()).join(
        rec, (j["run_id"] == rec["_rr"]) & (j["block"] == rec["_rb"])
        & (rec["_rt"] <= j["ts"] + LOG_SLACK_S), "left_anti")


def _p7_abandoned(runs: RunSet, judged: DataFrame) -> DataFrame:
    """`judged` with `abandoned`: the client abandoned the block after this failed setup
    (a client.pipeline.abandon or nn.block.abandon of the block at or after it) and no
    later setup of the block failed in between (a recovered setup is not the one the
    client then excludes a node for)."""
    ab = (runs.of("client.pipeline.abandon", "nn.block.abandon")
          .select(F.col("run_id").alias("_ar"), F.col("block").alias("_ab"),
                  F.col("ts").alias("_at")))
    first_ab = (judged.join(ab, (judged["run_id"] == ab["_ar"]) & (judged["block"] == ab["_ab"])
                            & (ab["_at"] >= judged["ts"] - LOG_SLACK_S))
                .groupBy("eid").agg(F.min("_at").alias("ab_ts")))
    later = P7_STARTS[0].rows(runs).select(
        F.col("run_id").alias("_lr"), F.col("node").alias("_ln"), F.col("block").alias("_lb"),
        F.col("ts").alias("_lt"), F.col("eid").alias("_le"))
    j = judged.join(first_ab, "eid", "left")
    superseded = (j.join(later, (j["run_id"] == later["_lr"]) & (j["node"] == later["_ln"])
                         & (j["block"] == later["_lb"]) & (later["_le"] != j["eid"])
                         & ((later["_lt"] > j["ts"])
                            | ((later["_lt"] == j["ts"]) & (later["_le"] > j["eid"])))
                         & (later["_lt"] <= j["ab_ts"]))
                  .select("eid").distinct().withColumn("_sup", F.lit(True)))
    return (j.join(superseded, "eid", "left")
            .withColumn("abandoned", F.col("ab_ts").isNotNull()
                        & ~F.coalesce(F.col("_sup"), F.lit(False)))
            .drop("_sup", "ab_ts"))


def _p7_setup_said() -> Column:
    """What the first node's setup said, for P7's evidence."""
    return (F.when(F.col("d_ts").isNull(),
                   F.format_string("%s never logged the setup: the client could not "
                                   "connect", F.col("first")))
            .otherwise(F.format_string("%s answered %s, firstBadLink %s", F.col("first"),
                                       F.col("d_status"),
                                       F.coalesce(F.col("d_fbl"), F.lit("none")))))
