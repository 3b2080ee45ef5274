"""Block recovery checks B1-B6 (spec/CHECKS.md, spec/MINIHDFS.md section 3): the
NameNode's recovery id and primary, the primary DataNode's syncBlock length rule and
participants, commitBlockSynchronization, and a restarted DataNode's RBW replicas coming
back as RWR (B6). H1, an addition of hdfs-chaos to spec/CHECKS.md: a block becomes
COMPLETE only once enough FINALIZED replicas were reported."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window, functions as F

from ..load import RunSet
from .common import (LOG_SLACK_S, Outcome, base, last_before, runs_of, sql_string, union_all,
                     violation, with_conf)
from .pipeline import stale_locations, _stale_evidence


def check_b1(runs: RunSet) -> Outcome:
    """Recovery id: every nn.recovery.start uses a recovery id greater than every GS the
    block had before (in any process's events), and names a primary among the block's
    locations (the NameNode's pipelines and reported replicas) and its own list."""
    st = base(runs.of("nn.recovery.start"), "path", "block", "gs", "recovery_id", "primary",
              "pipeline").filter(F.col("block").isNotNull())
    j = (st.join(_b1_prior_gs(runs, st), "eid", "left")
         .join(_b1_known_locations(runs, st), "eid", "left"))
    floor = F.greatest(F.col("max_prior_gs"), F.col("gs"))
    why = (F.when(F.col("recovery_id").isNull(), "nn.recovery.start has no recovery_id")
           .when(floor.isNotNull() & (F.col("recovery_id") <= floor),
                 F.format_string("recovery id %d is not greater than GS %d the block already had",
                                 F.col("recovery_id"), floor))
           .when(F.col("primary").isNull(), "no primary named")
           .when(F.col("pipeline").isNotNull() & ~F.array_contains("pipeline", F.col("primary")),
                 F.format_string("primary %s is not among the recovery's locations",
                                 F.col("primary")))
           .when((F.size("known_locations") > 0)
                 & ~F.array_contains("known_locations", F.col("primary")),
                 F.format_string("primary %s never held the block (locations: %s)",
                                 F.col("primary"), F.array_join(F.array_sort("known_locations"), ","))))
    bad = j.withColumn("why", why).filter(F.col("why").isNotNull())
    return Outcome(runs_of(st), violation(bad, F.col("why"), "path", "block", "gs", "recovery_id",
                                          "primary", "pipeline", "max_prior_gs",
                                          "known_locations"))


def _b1_prior_gs(runs: RunSet, st: DataFrame) -> DataFrame:
    """eid, max_prior_gs: the greatest GS any event gave the block of each recovery start
    of `st` before it."""
    # the GS fields are all in protocol events: the bulk writes and acks carry none
    g = (runs.rare.filter(F.col("block").isNotNull()
                            & (F.col("gs").isNotNull() | F.col("old_gs").isNotNull()
                               | F.col("recovery_id").isNotNull()))
         .select(F.col("run_id").alias("_r"), F.col("block").alias("_b"), F.col("ts").alias("_t"),
                 F.greatest("gs", "old_gs", "recovery_id").alias("_g"),
                 ((F.col("event") == "nn.block.gs_bump") & (F.col("reason") == "recovery"))
                 .alias("_bump")))
    # the NameNode bumps the GS to the recovery id just before it logs the start: that
    # bump is this recovery itself, not a GS the block had before
    own = g["_bump"] & (g["_g"] == st["recovery_id"])
    return (st.join(g, (st["run_id"] == g["_r"]) & (st["block"] == g["_b"]) & (g["_t"] < st["ts"])
                    & ~F.coalesce(own, F.lit(False)), "left")
            .groupBy("eid").agg(F.max("_g").alias("max_prior_gs")))


def _b1_known_locations(runs: RunSet, st: DataFrame) -> DataFrame:
    """eid, known_locations: the block's locations the NameNode knew before each recovery
    start of `st` (its pipelines and reported replicas)."""
    allocs = runs.of("nn.block.allocate", "nn.block.update_pipeline").select(
        "run_id", "block", "ts", F.explode("pipeline").alias("dn"))
    reported = runs.of("nn.replica.reported").select("run_id", "block", "ts", "dn")
    locs = allocs.unionByName(reported).select(
        F.col("run_id").alias("_r"), F.col("block").alias("_b"), F.col("ts").alias("_t"),
        F.col("dn").alias("_d"))
    return (st.join(locs, (st["run_id"] == locs["_r"]) & (st["block"] == locs["_b"])
                    & (locs["_t"] < st["ts"]), "left")
            .groupBy("eid").agg(F.collect_set("_d").alias("known_locations")))


# syncBlock's length rule (MINIHDFS.md section 3; 3.x BlockRecoveryWorker.syncBlock), the
# one table that b2_length and the SQL of sync_rule_stages both read: the best original
# state among the usable answers names the rule (in this order); the length is the least
# length of the answers in that state; the participants are those answers and the ones
# in the `also` states whose length is exactly the chosen one. Before the table: a
# truncate recovery takes the requested length; after it (no data): remove.
SYNC_RULES = (
    # state, rule, also
    ("FINALIZED", "finalized", ("RBW",)),
    ("RBW", "min_rbw", ()),
    ("RWR", "min_rwr", ()),
)


def b2_length(answers, new_len=None, start_gs=None, keep_empty=False):
    """(rule, length, participants) that syncBlock must choose for its `answers` (dicts
    with dn, state, len, gs): B2 of spec/CHECKS.md. Answers without a length, or older
    than the block's GS `start_gs`, never take part; nor, as Hadoop has it, do zero-length
    ones (`keep_empty=True`: the literal reading that keeps them). `new_len`: a truncate
    recovery. participants: the sorted dns (None for remove, or with no answers list)."""
    usable = [a for a in answers or () if a is not None and a.get("len") is not None
              and (start_gs is None or a.get("gs") is None or a["gs"] >= start_gs)
              and (keep_empty or a["len"] > 0)]
    names = lambda xs: sorted((a.get("dn") for a in xs),  # noqa: E731
                              key=lambda d: (d is None, d or ""))
    if new_len is not None:
        return "truncate", new_len, (None if answers is None else  # no answers: none judged
                                     names(a for a in usable if a["len"] >= new_len))
    if not any(a["len"] > 0 for a in usable):
        return "remove", 0, None
    for state, rule, also in SYNC_RULES:
        mine = [a["len"] for a in usable if a.get("state") == state]
        if mine:
            length = min(mine)
            return rule, length, names(a for a in usable if a.get("state") == state or (
                a.get("state") in also and a["len"] == length))
    return "remove", 0, None


def sync_rule_stages(prefix: str, keep_empty: bool) -> list[list[str]]:
    """b2_length as SQL over a row's answers, new_len and start_gs, generated from
    SYNC_RULES: select lists to apply one after the other, each adding columns named
    `<prefix>_...`; the last adds `<prefix>_rule`, `_len` and `_participants`
    (`_inconsistent`: FINALIZED answers of different lengths).

    In stages, each naming what the next reads: written as one expression, the rule is
    copied into the length and the participants and every state filter into the rule,
    and Spark took about a second to plan the table."""
    p = prefix
    usable = "a.len IS NOT NULL AND (start_gs IS NULL OR a.gs IS NULL OR a.gs >= start_gs)"
    if not keep_empty:
        usable += " AND a.len > 0"
    of = lambda state: f"{p}_{state.lower()}"  # noqa: E731  the usable answers in a state
    names = lambda arr: f"array_sort(transform({arr}, a -> a.dn))"  # noqa: E731
    takes_part = lambda state, also: " OR ".join(  # noqa: E731
        [f"a.state = {sql_string(state)}"]
        + [f"(a.state = {sql_string(s)} AND a.len = {of(state)}_len)" for s in also])
    return [
        [f"filter(answers, a -> {usable}) AS {p}_cand"],
        [f"filter({p}_cand, a -> a.state = {sql_string(state)}) AS {of(state)}"
         for state, _, _ in SYNC_RULES]
        + [f"coalesce(exists({p}_cand, a -> a.len > 0), false) AS {p}_has_data"],
        ["CASE WHEN new_len IS NOT NULL THEN 'truncate' "
         f"WHEN NOT {p}_has_data THEN 'remove' "
         + " ".join(f"WHEN size({of(state)}) > 0 THEN {sql_string(rule)}"
                    for state, rule, _ in SYNC_RULES)
         + f" ELSE 'remove' END AS {p}_rule"]
        + [f"array_min(transform({of(state)}, a -> a.len)) AS {of(state)}_len"
           for state, _, _ in SYNC_RULES]
        + [f"size(array_distinct(transform({of('FINALIZED')}, a -> a.len))) > 1 "
           f"AS {p}_inconsistent"],
        [f"CASE {p}_rule WHEN 'truncate' THEN new_len WHEN 'remove' THEN CAST(0 AS BIGINT) "
         + " ".join(f"WHEN {sql_string(rule)} THEN {of(state)}_len"
                    for state, rule, _ in SYNC_RULES) + f" END AS {p}_len",
         f"CASE {p}_rule WHEN 'truncate' THEN "
         f"{names(f'filter({p}_cand, a -> a.len >= new_len)')} "
         + " ".join(f"WHEN {sql_string(rule)} THEN "
                    f"{names(f'filter({p}_cand, a -> {takes_part(state, also)})')}"
                    for state, rule, also in SYNC_RULES) + f" END AS {p}_participants"],
    ]


def _syncs(runs: RunSet) -> DataFrame:
    def build():
        sync = base(runs.of("dn.recovery.sync"), "block", "recovery_id", "answers", "rule", "len",
                    "pipeline", "new_len")
        st = (runs.of("nn.recovery.start")
              .select("run_id", "block", "recovery_id", F.col("gs").alias("start_gs"),
                      F.col("path").alias("start_path"))
              .dropDuplicates(["run_id", "block", "recovery_id"]))
        j = sync.join(st, ["run_id", "block", "recovery_id"], "left")
        # exp: Hadoop's reading (empty replicas left out); alt: the literal one
        for exp_stage, alt_stage in zip(sync_rule_stages("exp", False),
                                        sync_rule_stages("alt", True)):
            j = j.selectExpr("*", *exp_stage, *alt_stage)
        return j.withColumnRenamed("exp_inconsistent", "fin_inconsistent")
    return runs.memo("syncs", build)


def check_b2(runs: RunSet) -> Outcome:
    """Length rule: each dn.recovery.sync picks the rule and length that its own answers
    call for (zero-length answers may be left out, as Hadoop does, or kept), and its
    `pipeline` (the participants) is exactly the answers that qualify under that rule."""
    s = _syncs(runs)
    rule = F.lower(F.col("rule"))
    chosen = F.array_sort(F.coalesce(F.col("pipeline"), F.array().cast("array<string>")))
    exp_ok = (rule == F.col("exp_rule")) & (F.col("len") == F.col("exp_len"))
    alt_ok = (rule == F.col("alt_rule")) & (F.col("len") == F.col("alt_len"))
    matches = exp_ok | alt_ok
    # the participants of the reading whose rule and length matched (remove: none judged)
    want = F.when(F.coalesce(exp_ok, F.lit(False)), F.col("exp_participants")) \
        .otherwise(F.col("alt_participants"))
    why = (F.when(F.col("fin_inconsistent") & (rule == "finalized"),
                  "FINALIZED replicas of different lengths, yet the block was synced")
           .when(~F.coalesce(matches, F.lit(False)),
                 F.format_string("chose %s/%s, but the answers call for %s with length %s",
                                 F.coalesce(rule, F.lit("?")),
                                 F.coalesce(F.col("len").cast("string"), F.lit("?")),
                                 F.col("exp_rule"), F.col("exp_len").cast("string")))
           .when(want.isNotNull() & (rule != "remove") & (chosen != want),
                 F.format_string("participants [%s], but the answers that qualify for %s "
                                 "are [%s]", F.array_join(chosen, ","), rule,
                                 F.array_join(want, ","))))
    bad = s.withColumn("why", why).withColumn("exp_participants", want) \
        .filter(F.col("why").isNotNull())
    return Outcome(runs_of(s), violation(bad, F.col("why"), "block", "recovery_id", "answers",
                                         "rule", "len", "new_len", "exp_rule", "exp_len",
                                         "pipeline", "exp_participants"))


def _commits(runs: RunSet) -> DataFrame:
    """nn.recovery.commit rows with the file path and whether the block was removed."""
    def build():
        c = base(runs.of("nn.recovery.commit"), "block", "recovery_id", "gs", "len", "pipeline",
                 "close", "delete")
        st = (runs.of("nn.recovery.start").select("run_id", "block", "recovery_id",
                                                  F.col("path").alias("start_path"))
              .dropDuplicates(["run_id", "block", "recovery_id"]))
        removed = (runs.of("nn.block.state").filter(F.col("state") == "REMOVED")
                   .select("run_id", "block", F.lit(True).alias("removed")).distinct())
        return (c.join(st, ["run_id", "block", "recovery_id"], "left")
                .join(removed, ["run_id", "block"], "left")
                .withColumn("removed", F.when(F.coalesce(F.col("delete"), F.lit(False)), True)
                            .otherwise(F.col("removed")))
                # the GS every participant and the NameNode must end at: the recovery
                # id (B3 also fails a commit whose own GS differs from it)
                .withColumn("new_gs", F.coalesce("recovery_id", "gs")))
    return runs.memo("commits", build)


def check_b3(runs: RunSet) -> Outcome:
    """Agreement: after nn.recovery.commit every participant logged its replica FINALIZED
    with GS = recovery id and the committed length, the NameNode's block has GS = recovery
    id (the commit's own GS too) and that length, and the file closed."""
    c = _commits(runs).filter(F.col("removed").isNull() & (F.coalesce("len", F.lit(1)) > 0))
    return Outcome(runs_of(c), _b3_participants(runs, c).unionByName(_b3_namenode(runs, c)))


def _b3_participants(runs: RunSet, c: DataFrame) -> DataFrame:
    """B3's violations of the commits `c` on the participants' side: each logged its
    replica FINALIZED at the new GS with the committed length, and holds it so on disk."""
    parts = c.select("*", F.explode("pipeline").alias("dn"))
    fin = (runs.of("dn.replica.state").filter(F.col("state") == "FINALIZED")
           .select(F.col("run_id").alias("_r"), F.col("node").alias("_d"),
                   F.col("block").alias("_b"), F.col("gs").alias("_g"), F.col("len").alias("_l")))
    pj = (parts.join(fin, (parts["run_id"] == fin["_r"]) & (parts["dn"] == fin["_d"])
                     & (parts["block"] == fin["_b"]) & (parts["new_gs"] == fin["_g"]), "left")
          .groupBy("eid", "dn").agg(F.collect_set("_l").alias("fin_lens")))
    pj = parts.join(pj, ["eid", "dn"], "left")
    # the replica on disk at the end, when it still has the committed generation
    disk = runs.fs_replicas.select(F.col("run_id").alias("_r"), F.col("dn").alias("_d"),
                                   F.col("block").alias("_b"), F.col("gs").alias("_g"),
                                   F.col("len").alias("disk_len"), F.col("state").alias("disk_state"))
    pj = pj.join(disk, (pj["run_id"] == disk["_r"]) & (pj["dn"] == disk["_d"])
                 & (pj["block"] == disk["_b"]) & (pj["new_gs"] == disk["_g"]), "left")
    pwhy = (F.when(F.col("fin_lens").isNull() | (F.size("fin_lens") == 0),
                   F.format_string("participant %s never logged its replica FINALIZED at GS %d",
                                   F.col("dn"), F.col("new_gs")))
            .when(~F.array_contains("fin_lens", F.col("len")) | (F.size("fin_lens") > 1),
                  F.format_string("participant %s finalized GS %d with length(s) %s, committed %d",
                                  F.col("dn"), F.col("new_gs"),
                                  F.array_join(F.transform("fin_lens", lambda x: x.cast("string")), ","),
                                  F.col("len")))
            .when(F.col("disk_len").isNotNull()
                  & ((F.col("disk_len") != F.col("len")) | (F.col("disk_state") != "FINALIZED")),
                  F.format_string("participant %s holds %s/%d at GS %d on disk, committed %d",
                                  F.col("dn"), F.col("disk_state"), F.col("disk_len"),
                                  F.col("new_gs"), F.col("len"))))
    pbad = violation(pj.withColumn("why", pwhy).filter(F.col("why").isNotNull()), F.col("why"),
                     F.col("start_path").alias("path"), "block", "recovery_id",
                     F.col("new_gs").alias("gs"), "len", "pipeline", F.col("dn").alias("participant"))
    return pbad


def _b3_namenode(runs: RunSet, c: DataFrame) -> DataFrame:
    """B3's violations of the commits `c` on the NameNode's side: the commit's GS is the
    recovery id, the block has that GS and the committed length, the file closed."""
    nnb = (runs.of("nn.block.state").filter(F.col("state").isin("COMMITTED", "COMPLETE"))
           .groupBy("run_id", "block", "gs").agg(F.collect_set("len").alias("nn_lens")))
    fsb = runs.fs_blocks.select("run_id", "block", "gs", F.col("len").alias("fs_len"))
    closes = runs.of("nn.file.close").select(F.col("run_id").alias("_r"), F.col("path").alias("_p"),
                                             F.col("ts").alias("_t"))
    cl = (c.join(closes, (c["run_id"] == closes["_r"]) & (c["start_path"] == closes["_p"])
                 & (closes["_t"] >= c["ts"] - 1.0), "left_semi").select("eid", F.lit(True).alias("closed_after")))
    fsf = runs.fs_files.select("run_id", F.col("path").alias("start_path"),
                               F.col("closed").alias("fs_closed"))
    nj = (c.join(nnb.withColumnRenamed("gs", "new_gs"), ["run_id", "block", "new_gs"], "left")
          .join(fsb.withColumnRenamed("gs", "new_gs"), ["run_id", "block", "new_gs"], "left")
          .join(cl, "eid", "left").join(fsf, ["run_id", "start_path"], "left"))
    nwhy = (F.when(F.col("recovery_id").isNull(), "the commit names no recovery id")
            .when(F.col("gs").isNotNull() & (F.col("gs") != F.col("recovery_id")),
                  F.format_string("the commit set GS %d, not the recovery id %d",
                                  F.col("gs"), F.col("recovery_id")))
            .when(F.col("nn_lens").isNotNull() & ~F.array_contains("nn_lens", F.col("len")),
                   F.format_string("the NameNode's block at GS %d has length %s, committed %d",
                                   F.col("new_gs"), F.array_join(
                                       F.transform("nn_lens", lambda x: x.cast("string")), ","),
                                   F.col("len")))
            .when(F.col("fs_len").isNotNull() & (F.col("fs_len") != F.col("len")),
                  F.format_string("final_state has the block at GS %d with length %d, committed %d",
                                  F.col("new_gs"), F.col("fs_len"), F.col("len")))
            .when(F.col("nn_lens").isNull() & F.col("fs_len").isNull(),
                  F.format_string("the NameNode never recorded the block at the committed GS %d",
                                  F.col("new_gs")))
            .when(F.coalesce(F.col("close"), F.lit(True)) & F.col("closed_after").isNull()
                  & ~F.coalesce(F.col("fs_closed"), F.lit(False)),
                  "the file did not close after the commit"))
    nbad = violation(nj.withColumn("why", nwhy).filter(F.col("why").isNotNull()), F.col("why"),
                     F.col("start_path").alias("path"), "block", "recovery_id",
                     F.col("new_gs").alias("gs"), F.col("gs").alias("commit_gs"), "len",
                     "nn_lens", "fs_len", "fs_closed")
    return nbad


def check_b4(runs: RunSet) -> Outcome:
    """Empty block: a recovery whose answers all have length zero (or that has no answer
    at all) removes the block (rule remove, nn.block.state REMOVED) and never commits it."""
    # no answer at all (no DataNode ever received the block: the writer died between
    # addBlock and its first packet) is the same case: nothing to keep
    s = _syncs(runs).filter(F.col("new_len").isNull() & F.col("answers").isNotNull()
                            & (F.col("exp_rule") == "remove"))
    # a recovery superseded by a newer one that committed removes nothing: the NameNode
    # refuses its commit (recovery id mismatch), whatever its primary found
    newer = runs.of("nn.recovery.commit").select(
        F.col("run_id").alias("_r"), F.col("block").alias("_b"), F.col("recovery_id").alias("_rid"))
    s = s.join(newer, (s["run_id"] == newer["_r"]) & (s["block"] == newer["_b"])
               & (newer["_rid"] > s["recovery_id"]), "left_anti")
    commits = (runs.of("nn.recovery.commit")
               .filter((F.col("len") > 0) & ~F.coalesce(F.col("delete"), F.lit(False)))
               .select("run_id", "block", "recovery_id", F.lit(True).alias("committed")).distinct())
    kept = (runs.of("nn.block.state").filter(F.col("state").isin("COMMITTED", "COMPLETE"))
            .select(F.col("run_id").alias("_r"), F.col("block").alias("_b"),
                    F.col("gs").alias("_g"), F.col("ts").alias("_t")))
    kj = (s.join(kept, (s["run_id"] == kept["_r"]) & (s["block"] == kept["_b"])
                 & (kept["_t"] > s["ts"]) & (kept["_g"] >= s["recovery_id"]), "left_semi")
          .select("eid", F.lit(True).alias("completed")))
    in_file = runs.fs_blocks.select("run_id", "block", F.lit(True).alias("in_file")).distinct()
    j = (s.join(commits, ["run_id", "block", "recovery_id"], "left").join(kj, "eid", "left")
         .join(in_file, ["run_id", "block"], "left"))
    why = (F.when(F.lower(F.col("rule")) != "remove",
                  F.format_string("every replica is empty, yet the rule was %s", F.col("rule")))
           .when(F.col("committed").isNotNull(), "the empty block was committed with data")
           .when(F.col("completed").isNotNull(),
                 "the NameNode made the empty block COMMITTED/COMPLETE")
           .when(F.col("in_file").isNotNull(), "the empty block is still part of its file"))
    bad = j.withColumn("why", why).filter(F.col("why").isNotNull())
    return Outcome(runs_of(s), violation(bad, F.col("why"), "block", "recovery_id", "answers",
                                         "rule", "len"))


def check_b5(runs: RunSet) -> Outcome:
    """Old generation rejected: after a block recovery commits GS g, no replica with an
    older GS is a final location, the NameNode's block never goes back below g, and
    final_state does not hold the block at an older GS."""
    c = _commits(runs).filter(F.col("removed").isNull())
    ex, bad = stale_locations(runs, c.select("run_id", "block"))
    loc_v = _stale_evidence(bad)
    nnb = (runs.of("nn.block.state")
           .select(F.col("run_id").alias("_r"), F.col("block").alias("_b"),
                   F.col("gs").alias("b_gs"), F.col("ts").alias("b_ts"),
                   F.col("state").alias("b_state"), F.col("node").alias("b_node")))
    back = c.join(nnb, (c["run_id"] == nnb["_r"]) & (c["block"] == nnb["_b"])
                  & (nnb["b_ts"] > c["ts"]) & (nnb["b_gs"] < c["new_gs"]))
    back_v = violation(back, F.format_string("the NameNode's block went back to GS %d (%s) after "
                                             "recovery committed GS %d", F.col("b_gs"),
                                             F.col("b_state"), F.col("new_gs")),
                       "block", F.col("b_gs").alias("gs"), F.col("b_state").alias("state"),
                       F.col("new_gs").alias("committed_gs"), ts="b_ts", node="b_node",
                       event=F.lit("nn.block.state"))
    fsb = runs.fs_blocks.select("run_id", "block", "path", F.col("gs").alias("fs_gs"))
    older = c.join(fsb, ["run_id", "block"]).filter(F.col("fs_gs") < F.col("new_gs"))
    older_v = violation(older, F.format_string("final_state holds the block at GS %d, older than "
                                               "the committed %d", F.col("fs_gs"), F.col("new_gs")),
                        "path", "block", "fs_gs", F.col("new_gs").alias("committed_gs"),
                        ts=F.lit(None), node=F.lit("final_state"), event=F.lit("final_state"))
    exercised = runs_of(c.join(runs.fs_runs, "run_id", "left_semi"))
    return Outcome(exercised, union_all([loc_v, back_v, older_v]))


def check_b6(runs: RunSet) -> Outcome:
    """Restart makes RWR: a replica whose last state before its DataNode started again
    (a dn.start after an earlier one) was RBW is logged as RWR first after that start,
    never goes from RWR straight back to RBW (rejoining a pipeline), and answers
    initReplicaRecovery as RWR while it is one (until the node's next start).

    One exception, Hadoop's (HDFS-5585, MINIHDFS.md 5): a DataNode shut down *for a
    restart* (dn.stop restart=true, after sending the RESTART OOB ack) saves its RBW
    replicas, and one back before they expire loads as RBW again (logged with reason
    restart_saved) so that the waiting writer can go on with it. Such a replica is not
    judged here: the shutdown has to say so, a crash never does."""
    cases, states = _b6_cases(runs)
    after = _b6_after(cases, states, runs)
    is_state = F.col("kind") == "state"
    why = (F.when(is_state & F.col("prev_state").isNull() & (F.col("state") != "RWR"),
                  F.format_string("the replica was RBW when %s stopped, but came back as %s, "
                                  "not RWR", F.col("node"), F.col("state")))
           .when(is_state & (F.col("prev_state") == "RWR") & (F.col("state") == "RBW"),
                 F.format_string("the RWR replica on %s rejoined a pipeline as RBW (GS %d)",
                                 F.col("node"), F.col("gs")))
           .when(~is_state & (F.col("prev_state") == "RWR")
                 & ~F.coalesce(F.col("state") == "RWR", F.lit(False)),
                 F.format_string("the RWR replica on %s answered block recovery %s as %s",
                                 F.col("node"), F.coalesce(F.col("recovery_id").cast("string"),
                                                           F.lit("?")),
                                 F.coalesce(F.col("state"), F.lit("nothing")))))
    bad = violation(after.withColumn("why", why).filter(F.col("why").isNotNull()),
                    F.col("why"), "block", "gs", "len", "state", "prev_state", "recovery_id",
                    F.col("r_ts").alias("restarted_at"), F.col("rbw_gs").alias("rbw_gs"),
                    event=F.when(is_state, F.lit("dn.replica.state"))
                    .otherwise(F.lit("dn.recovery.init_replica")))
    return Outcome(runs_of(cases), bad.unionByName(_b6_silent(cases, after)))


def _b6_after(cases: DataFrame, states: DataFrame, runs: RunSet) -> DataFrame:
    """Each B6 case's replica states and recovery answers (kind state / init) from its
    restart to the node's next start, with prev_state: its last state before each."""
    inits = base(runs.of("dn.recovery.init_replica"), "block", "gs", "len", "state",
                 "recovery_id")
    timeline = (states.drop("reason").withColumn("kind", F.lit("state")).withColumn("recovery_id",
                                                                      F.lit(None).cast("long"))
                .unionByName(inits.select("run_id", "node", "block", "gs", "len", "state", "ts",
                                          "eid", F.lit("init").alias("kind"), "recovery_id")))
    after = (cases.join(timeline, ["run_id", "node", "block"])
             .filter((F.col("ts") >= F.col("r_ts"))
                     & (F.col("until").isNull() | (F.col("ts") < F.col("until")))))
    wa = (Window.partitionBy("run_id", "node", "block", "r_ts").orderBy("ts", "eid")
          .rowsBetween(Window.unboundedPreceding, -1))
    after = after.withColumn("prev_state", F.last(
        F.when(F.col("kind") == "state", F.col("state")), ignorenulls=True).over(wa))
    return after


def _b6_silent(cases: DataFrame, after: DataFrame) -> DataFrame:
    """B6's violations of cases that logged nothing of the replica after the restart."""
    silent = cases.join(after.select("run_id", "node", "block", "r_ts").distinct(),
                        ["run_id", "node", "block", "r_ts"], "left_anti")
    return violation(
        silent, F.format_string("the replica was RBW when %s stopped, but it never logged it "
                                "as RWR after the restart", F.col("node")),
        "block", F.col("rbw_gs").alias("gs"), F.col("rbw_len").alias("len"),
        ts="r_ts", event=F.lit("dn.start"))


def _b6_cases(runs: RunSet) -> tuple[DataFrame, DataFrame]:
    """(cases, states): the replicas B6 judges, run_id, node, block, r_ts (the restart),
    until (the node's next start), rbw_gs, rbw_len: RBW when their node started again and
    not saved for the restart (check_b6); and the nodes' dn.replica.state rows."""
    starts = runs.of("dn.start").select("run_id", "node", "ts", "eid")
    w = Window.partitionBy("run_id", "node").orderBy("ts", "eid")
    restarts = (starts.withColumn("prev", F.lag("ts").over(w))
                .withColumn("until", F.lead("ts").over(w))
                .filter(F.col("prev").isNotNull())
                .select("run_id", "node", "prev", F.col("ts").alias("r_ts"), "until"))
    states = runs.of("dn.replica.state").filter(F.col("block").isNotNull()).select(
        "run_id", "node", "block", "gs", "len", "state", "reason", "ts", "eid")
    # each block's last state on the node before the restart, when it was RBW
    cases = (last_before(restarts, states, ["run_id", "node"], "b_", at="r_ts", how="inner",
                         key=["run_id", "node", "r_ts", "b_block"])
             .filter(F.col("b_state") == "RBW")
             .select("run_id", "node", F.col("b_block").alias("block"), "prev", "r_ts", "until",
                     F.col("b_gs").alias("rbw_gs"), F.col("b_len").alias("rbw_len")))
    # the exception: a shutdown for restart between the two starts, and the replica
    # logged back as RBW with reason restart_saved after the second
    for_restart = (runs.of("dn.stop").filter(F.coalesce(F.col("restart"), F.lit(False)))
                   .select("run_id", "node", F.col("ts").alias("stop_ts")))
    saved = (states.filter((F.col("state") == "RBW") & (F.col("reason") == "restart_saved"))
             .select("run_id", "node", "block", F.col("ts").alias("saved_ts")))
    kept = (cases.join(for_restart, ["run_id", "node"])
            .filter((F.col("stop_ts") > F.col("prev")) & (F.col("stop_ts") <= F.col("r_ts")))
            .join(saved, ["run_id", "node", "block"])
            .filter((F.col("saved_ts") >= F.col("r_ts"))
                    & (F.col("until").isNull() | (F.col("saved_ts") < F.col("until"))))
            .select("run_id", "node", "block", "r_ts").distinct())
    cases = cases.join(kept, ["run_id", "node", "block", "r_ts"], "left_anti").drop("prev")
    return cases, states


def check_h1(runs: RunSet) -> Outcome:
    """COMPLETE needs replicas (seed 004 2.3-2.4; BlockManager.completeBlock): a block the
    NameNode logs as COMPLETE had, by then, at least dfs.namenode.replication.min
    FINALIZED replicas of its GS and length reported by distinct DataNodes to that same
    NameNode process (since its last nn.start). A block made COMPLETE on the client's word
    alone would be listed as readable with no replica that holds it. A closing
    commitBlockSynchronization completes the recovered block at once (3.x
    BlockManager.commitOrCompleteLastBlock: its targets are its locations, or it is
    completed "forcibly"), so a COMPLETE after such a commit of the same GS and length
    is not judged. The NameNode completes the block inside that call: a commit logged when
    the call returned (Hadoop's `commitBlockSynchronization(...) successful` line) may
    follow the COMPLETE by LOG_SLACK_S."""
    judged, done = _h1_judged(runs)
    g = _h1_reported(runs, done)
    need = F.coalesce(F.col("min_replication"), F.lit(1))
    bad = g.filter(F.col("reported") < need)
    return Outcome(runs_of(judged), violation(
        bad, F.format_string("block %d became COMPLETE with %d FINALIZED replica(s) of GS %d "
                             "and length %d reported, below dfs.namenode.replication.min %d",
                             F.col("block"), F.col("reported"), F.col("gs"), F.col("len"), need),
        "path", "block", "gs", "len", "reported_by"))


def _h1_judged(runs: RunSet) -> tuple[DataFrame, DataFrame]:
    """(judged, done): the nn.block.state COMPLETE rows of a block, and those of them not
    explained by a closing commitBlockSynchronization of the same GS and length."""
    judged = base(runs.of("nn.block.state"), "block", "gs", "len", "state", "path").filter(
        (F.col("state") == "COMPLETE") & F.col("block").isNotNull())
    synced = (runs.of("nn.recovery.commit")
              .filter(F.coalesce(F.col("close"), F.lit(False))
                      & ~F.coalesce(F.col("delete"), F.lit(False)))
              .select(F.col("run_id").alias("_r"), F.col("block").alias("_b"),
                      F.col("gs").alias("_g"), F.col("len").alias("_l"), F.col("ts").alias("_t")))
    done = judged.join(synced, (judged["run_id"] == synced["_r"])
                       & (judged["block"] == synced["_b"]) & (judged["gs"] == synced["_g"])
                       & (judged["len"] == synced["_l"])
                       & (synced["_t"] <= judged["ts"] + LOG_SLACK_S),
                       "left_anti")
    return judged, done


def _h1_reported(runs: RunSet, done: DataFrame) -> DataFrame:
    """Each COMPLETE of `done` with `reported` (how many distinct DataNodes reported a
    FINALIZED replica of its GS and length to that NameNode process before it),
    reported_by, and the run's conf."""
    # the NameNode process that completed it: since its last start
    d = (last_before(done, runs.of("nn.start").select("run_id", "ts", "eid"), ["run_id"], "s_",
                     strict=False)
         .withColumnRenamed("s_ts", "since").drop("s_eid"))
    reps = (runs.of("nn.replica.reported").filter(F.col("state") == "FINALIZED")
            .select(F.col("run_id").alias("_r"), F.col("block").alias("_b"),
                    F.col("gs").alias("_g"), F.col("len").alias("_l"), F.col("dn").alias("_dn"),
                    F.col("ts").alias("_t")))
    j = d.join(reps, (d["run_id"] == reps["_r"]) & (d["block"] == reps["_b"])
               & (d["gs"] == reps["_g"]) & (d["len"] == reps["_l"]) & (reps["_t"] <= d["ts"])
               & (d["since"].isNull() | (reps["_t"] >= d["since"])), "left")
    return with_conf(runs, j.groupBy("run_id", "eid", "ts", "node", "event", "path", "block", "gs",
                                    "len")
                    .agg(F.countDistinct("_dn").alias("reported"),
                         F.sort_array(F.collect_set("_dn")).alias("reported_by")))
