"""Lease checks L1-L6 (spec/CHECKS.md): the NameNode's LeaseManager and the client's
LeaseRenewer (soft limit, hard limit, recoverLeaseInternal, internalReleaseLease)."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window, functions as F

from ..load import NAMENODE_HOLDER, RunSet
from .common import (LOG_SLACK_S, Outcome, Starts, assign_stream, base, client_streams,
                     fault_windows, first_after, last_before, lease_changes, lease_intervals,
                     last_renewal, node_deaths, recovery_renewals, runs_of, sql_string,
                     touches, union_all, violation, with_conf)

# The monitor acts on a lease in its first pass after the hard limit; on top of the
# spec's "+ 2 monitor intervals" allow for scheduling on a loaded machine.
HARD_LIMIT_SLACK_S = 0.5


def check_l1(runs: RunSet) -> Outcome:
    """One writer: at no instant do two holders hold a lease on the same path (a running
    count of holders per path, over the lease add / reassign / remove events)."""
    c = lease_changes(runs)
    w = (Window.partitionBy("run_id", "path").orderBy("ts", "seq", "sub", "eid")
         .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    counted = c.withColumn("holders", F.sum("delta").over(w))
    over = counted.filter((F.col("delta") == 1) & (F.col("holders") >= 2))
    # the evidence: the latest other holder's start at or before it
    starts = c.filter("delta = 1").select("run_id", "path", "holder", "ts", "eid")
    j = last_before(over, starts, ["run_id", "path"], "o_", strict=False,
                    extra=lambda l, r: r["o_holder"] != l["holder"])
    return Outcome(runs_of(c), violation(
        j, F.format_string("%s holds a lease on %s while %s still holds one (since %.6f)",
                           F.col("holder"), F.col("path"), F.col("o_holder"), F.col("o_ts")),
        "path", "holder", F.col("holders").alias("holders_now"),
        F.col("o_holder").alias("other_holder"), F.col("o_ts").alias("other_since")))


def error_name(col):
    """An exception name without a package or an `Exception` suffix, so that
    AlreadyBeingCreatedException and ...AlreadyBeingCreated compare equal."""
    return F.regexp_replace(F.regexp_replace(F.coalesce(col, F.lit("")), r"^.*\.", ""),
                            r"Exception$", "")


# a takeover attempt by another client: not forced, not the NameNode's own recovery
L2_STARTS = (Starts("nn.lease.recover", "NOT coalesce(force, false) AND holder IS NOT NULL "
                    "AND requester IS NOT NULL AND requester <> holder AND NOT "
                    f"startswith(requester, {sql_string(NAMENODE_HOLDER)})"),)


def check_l2(runs: RunSet) -> Outcome:
    """Soft limit: a takeover by another client (nn.lease.recover, force=false, result not
    error) only once the holder's last renewal is older than the soft limit; earlier
    attempts fail with AlreadyBeingCreated or RecoveryInProgress."""
    rec = base(L2_STARTS[0].rows(runs), "path", "holder", "requester", "force", "result",
               "error")
    # The holder's renewals: its own (renew, add, reassign) and those of lease recoveries
    # (internalReleaseLease renews the lease it leaves behind), each taken at its
    # nn.lease.recover: the renewal a takeover makes is logged just before its own
    # nn.lease.recover and is no renewal that preceded the takeover.
    ren = union_all([
        runs.of("nn.lease.renew", "nn.lease.add", "nn.lease.reassign")
        .filter(F.coalesce(F.col("reason"), F.lit("")) != "lease_recovery")
        .select("run_id", "holder", "ts"),
        recovery_renewals(runs).select("run_id", "holder", "ts")]) \
        .filter(F.col("holder").isNotNull())
    rec = with_conf(runs, last_renewal(runs, rec, renewals=ren))
    age = F.col("ts") - F.col("last_renew")
    early = F.col("last_renew").isNotNull() & (age < F.col("soft_limit") - LOG_SLACK_S)
    took = F.col("result").isin("closed", "recovering")
    why = (F.when(early & took,
                  F.format_string("%s took the file over from %s %.3fs after its last renewal, "
                                  "before the soft limit (%.3fs)", F.col("requester"),
                                  F.col("holder"), age, F.col("soft_limit")))
           .when(early & (F.col("result") == "error")
                 & ~error_name(F.col("error")).isin("AlreadyBeingCreated", "RecoveryInProgress"),
                 F.format_string("attempt before the soft limit failed with %s, not "
                                 "AlreadyBeingCreated or RecoveryInProgress",
                                 F.coalesce(F.col("error"), F.lit("no error")))))
    bad = rec.withColumn("why", why).filter(F.col("why").isNotNull())
    return Outcome(runs_of(rec), violation(
        bad, F.col("why"), "path", "holder", "requester", "force", "result", "error",
        F.col("last_renew").alias("last_renewal"), F.round(age, 3).alias("age_s"),
        "soft_limit"))


def check_l3(runs: RunSet) -> Outcome:
    """Hard limit: a lease not renewed for longer than the hard limit is recovered by the
    NameNode within hard limit + 2 monitor intervals (the NameNode down or in startup
    safe mode stops that clock: after safe mode, 2 intervals); and the monitor never
    expires a lease (nn.lease.expired limit=hard) that is younger than the hard limit. A
    recovery by the monitor that fails (nn.lease.recover by the NameNode, result error)
    leaves the lease, as Hadoop 3.x's checkLeases does, and must be retried within 2
    monitor intervals until it succeeds."""
    ren = _l3_renewals(runs)
    gaps = _l3_clock(runs, ren)
    long_gaps = gaps.filter(F.col("p_kind").isin("renew", "resume")
                            & (F.col("next_ts") - F.col("renewed") > F.col("hard_limit")))
    exp = with_conf(runs, base(runs.of("nn.lease.expired"), "holder", "limit")
                    .filter(F.col("limit") == "hard"))
    exp = last_renewal(runs, exp, renewals=ren)
    return Outcome(runs_of(long_gaps).unionByName(runs_of(exp)).distinct(),
                   _l3_late(gaps).unionByName(_l3_early(exp)))


def _l3_renewals(runs: RunSet) -> DataFrame:
    """run_id, holder, ts, eid, event, kind ("renew"): the renewals of L3's clock."""
    # the NameNode's renewals: the holder's own, and those inside a lease recovery that
    # leaves the file open (a recovering client that calls recoverLease again renews its
    # lease; HDFS's reassignLease -> addLease)
    return union_all([runs.of("nn.lease.renew", "nn.lease.add", "nn.lease.reassign")
                      .select("run_id", "holder", "ts", "eid", "event"), recovery_renewals(runs)]) \
        .select("run_id", "holder", "ts", "eid", "event", F.lit("renew").alias("kind"))


def _l3_clock(runs: RunSet, ren: DataFrame) -> DataFrame:
    """The timeline of each lease interval not held by the NameNode (_l3_timeline), each
    point with next_ts (the next point, or the interval's end), renewed (the last
    renewal so far), the run's conf and deadline: when the lease must be gone by."""
    # the NameNode's own holder: HDFS_NameNode, on 3.x with a timestamp suffix
    iv = lease_intervals(runs).filter(~F.col("holder").startswith(NAMENODE_HOLDER)) \
        .withColumn("ikey", F.col("s_eid"))
    pts = _l3_timeline(runs, iv, ren)
    w = Window.partitionBy("ikey").orderBy("p_ts", "p_eid")
    gaps = with_conf(runs, pts.withColumn("next_ts", F.coalesce(F.lead("p_ts").over(w), F.col("e"))))
    upto = w.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    gaps = gaps.withColumn("renewed", F.last(F.when(F.col("p_kind") == "renew", F.col("p_ts")),
                                             ignorenulls=True).over(upto))
    due = F.col("renewed") + F.col("hard_limit")
    retry = 2 * F.col("lease_recheck") + HARD_LIMIT_SLACK_S
    gaps = gaps.withColumn("deadline", F.when(F.col("p_kind") == "resume",
                                              F.greatest(due, F.col("p_ts")))
                           .when(F.col("p_kind") == "attempt", F.col("p_ts"))
                           .otherwise(due) + retry)
    return gaps


def _l3_late(gaps: DataFrame) -> DataFrame:
    """L3's violations of leases still held past their deadline."""
    late = gaps.filter(F.col("p_kind").isin("renew", "resume", "attempt")
                       & (F.col("next_ts") > F.col("deadline")))
    return violation(
        late, F.when(F.col("p_kind") == "attempt", F.format_string(
            "the NameNode's recovery of the lease of %s on %s failed at %.6f and was not "
            "retried: still held %.3fs later, past 2 monitor intervals (%.3fs)",
            F.col("holder"), F.col("path"), F.col("p_ts"), F.col("next_ts") - F.col("p_ts"),
            F.col("deadline") - F.col("p_ts")))
        .otherwise(F.format_string(
            "the lease of %s on %s was not renewed after %.6f and was still held %.3fs "
            "later, past hard limit + 2 monitor intervals (%.3fs)%s",
            F.col("holder"), F.col("path"), F.col("renewed"),
            F.col("next_ts") - F.col("renewed"), F.col("deadline") - F.col("renewed"),
            F.when(F.col("p_kind") == "resume",
                   F.lit(" or 2 monitor intervals after safe mode ended"))
            .otherwise(F.lit("")))),
        "path", "holder", F.col("renewed").alias("last_renewal"),
        F.col("next_ts").alias("held_until"), "hard_limit", "lease_recheck",
        ts="p_ts", node=F.lit("nn"), event="p_event")


def _l3_early(exp: DataFrame) -> DataFrame:
    """L3's violations of hard-limit expiries `exp` (with last_renew) before the hard
    limit."""
    early = exp.filter(F.col("last_renew").isNotNull()
                       & (F.col("ts") - F.col("last_renew") < F.col("hard_limit") - LOG_SLACK_S))
    return violation(
        early, F.format_string("the NameNode expired the lease of %s %.3fs after its last "
                               "renewal, before the hard limit (%.3fs)", F.col("holder"),
                               F.col("ts") - F.col("last_renew"), F.col("hard_limit")),
        "holder", "limit", F.col("last_renew").alias("last_renewal"), "hard_limit")


def _l3_timeline(runs: RunSet, iv: DataFrame, ren: DataFrame) -> DataFrame:
    """The moments inside each lease interval of `iv` that bear on its hard-limit clock
    (p_ts, p_eid, p_event, p_kind): its start and the holder's renewals `ren` (renew),
    the NameNode's starts (renew), kills, stops and safe mode (down), the end of safe
    mode (resume), and the monitor's failed recoveries of the lease (attempt)."""
    r = ren.select(F.col("run_id").alias("_r"), F.col("holder").alias("_h"),
                   F.col("ts").alias("p_ts"), F.col("eid").alias("p_eid"),
                   F.col("event").alias("p_event"), F.col("kind").alias("p_kind"))
    pts_ren = iv.join(r, (iv["run_id"] == r["_r"]) & (iv["holder"] == r["_h"])
                      & (r["p_ts"] > iv["s"]) & (r["p_ts"] < iv["e"]))
    # The NameNode's own lifecycle: a start renews every restored lease, a kill or stop
    # suspends the monitor (no deadline runs while it is down), and so does startup safe
    # mode (LeaseManager.Monitor releases nothing in it): once it is left, a lease past
    # its hard limit is due within 2 monitor intervals ("resume").
    nn_up = runs.of("nn.start").select("run_id", "ts", "eid", "event", F.lit("renew").alias("kind"))
    nn_down = union_all([
        runs.of("harness.node.kill", "harness.node.stop").filter(F.col("target") == "nn")
        .select("run_id", "ts", "eid", "event", F.lit("down").alias("kind")),
        runs.of("nn.safemode.enter").select("run_id", "ts", "eid", "event",
                                            F.lit("down").alias("kind")),
        runs.of("nn.safemode.leave").select("run_id", "ts", "eid", "event",
                                            F.lit("resume").alias("kind"))])
    life = nn_up.unionByName(nn_down).select(
        F.col("run_id").alias("_r"), F.col("ts").alias("p_ts"), F.col("eid").alias("p_eid"),
        F.col("event").alias("p_event"), F.col("kind").alias("p_kind"))
    pts_life = iv.join(life, (iv["run_id"] == life["_r"]) & (life["p_ts"] > iv["s"])
                       & (life["p_ts"] < iv["e"]))
    # the monitor's failed recoveries of the holder's lease on the path (3.x: retried)
    att = (runs.of("nn.lease.recover")
           .filter(F.col("requester").startswith(NAMENODE_HOLDER) & (F.col("result") == "error"))
           .select(F.col("run_id").alias("_r"), F.col("holder").alias("_h"),
                   F.col("path").alias("_p"), F.col("ts").alias("p_ts"),
                   F.col("eid").alias("p_eid"), F.col("event").alias("p_event"),
                   F.lit("attempt").alias("p_kind")))
    pts_att = iv.join(att, (iv["run_id"] == att["_r"]) & (iv["holder"] == att["_h"])
                      & (iv["path"] == att["_p"]) & (att["p_ts"] > iv["s"])
                      & (att["p_ts"] < iv["e"]))
    cols = ["run_id", "path", "holder", "s", "e", "open", "ikey", "p_ts", "p_eid", "p_event",
            "p_kind"]
    start_pts = iv.select("*", F.col("s").alias("p_ts"), F.col("s_eid").alias("p_eid"),
                          F.lit("nn.lease.add").alias("p_event"), F.lit("renew").alias("p_kind"))
    pts = union_all([start_pts.select(*cols), pts_ren.select(*cols), pts_life.select(*cols),
                     pts_att.select(*cols)])
    return pts


# events saying a path's lease was recovered
L4_STARTS = (Starts("nn.lease.recover", "result IN ('closed', 'recovering')"),
             Starts("nn.lease.reassign"), Starts("nn.recovery.start"),
             Starts("nn.file.close", "reason IN ('lease_recovery', 'block_recovery')"))


def _recovered_paths(runs: RunSet) -> DataFrame:
    """run_id, path, ts, eid, event, node: events saying a path's lease was recovered."""
    evs = union_all([s.rows(runs) for s in L4_STARTS])
    return evs.select("run_id", "path", "ts", "eid", "event", "node").filter(
        F.col("path").isNotNull())


def check_l4(runs: RunSet) -> Outcome:
    """Closed in the end: every file whose lease was recovered is closed in
    final_state.json and no lease names it (unless it was reopened, deleted or renamed
    after the recovery)."""
    rp = _recovered_paths(runs).join(runs.fs_runs, "run_id", "left_semi")
    w = Window.partitionBy("run_id", "path").orderBy(F.desc("ts"), F.desc("eid"))
    last = rp.withColumn("_rn", F.row_number().over(w)).filter("_rn = 1").drop("_rn")
    later = runs.of("nn.file.create", "nn.file.append", "nn.file.delete", "nn.file.rename") \
        .select(F.col("run_id").alias("_r"), F.col("path").alias("_p"), F.col("ts").alias("_t"))
    last = last.join(later, (last["run_id"] == later["_r"]) & (last["path"] == later["_p"])
                     & (later["_t"] > last["ts"]), "left_anti")
    files = runs.fs_files.select("run_id", "path", "closed", F.col("len").alias("final_len"),
                                 F.lit(True).alias("listed"))
    leases = runs.fs_leases.groupBy("run_id", "path").agg(
        F.collect_set("holder").alias("lease_holders"))
    j = last.join(files, ["run_id", "path"], "left").join(leases, ["run_id", "path"], "left")
    why = (F.when(F.col("listed").isNull(), "the file is missing from final_state.json")
           .when(~F.coalesce(F.col("closed"), F.lit(False)),
                 "the file is still open in final_state.json")
           .when(F.col("lease_holders").isNotNull(),
                 F.format_string("a lease still names the file (%s)",
                                 F.array_join("lease_holders", ", "))))
    bad = j.withColumn("why", why).filter(F.col("why").isNotNull())
    return Outcome(runs_of(last), violation(bad, F.col("why"), "path", "closed", "final_len",
                                            "lease_holders"))


# NameNode events that record an operation a lease holder asked for (addBlock, complete,
# fsync, updatePipeline, abandonBlock), when they name the holder.
_HOLDER_OPS = ("nn.file.complete", "nn.block.allocate", "nn.block.update_pipeline",
               "nn.block.abandon", "nn.file.fsync")


def check_l5(runs: RunSet) -> Outcome:
    """Old holder shut out: once a holder's lease on a path was recovered or reassigned,
    the NameNode accepts no addBlock / updatePipeline / abandonBlock / complete / fsync
    of that holder on that path (nn.block.allocate, nn.block.update_pipeline and
    nn.block.abandon carry the holder; until it opens the file again), and its stream
    never closes successfully."""
    shut = _l5_shut_out(runs)
    return Outcome(runs_of(shut), _l5_namenode(runs, shut).unionByName(_l5_client(runs, shut)))


def _l5_shut_out(runs: RunSet) -> DataFrame:
    """run_id, path, shut, ts, eid, event, until: each holder shut out of a path by a
    reassign or a recovery, from then until it is added again (null: never)."""
    rea = runs.of("nn.lease.reassign").filter(F.col("old_holder") != F.col("holder")) \
        .select("run_id", "path", F.col("old_holder").alias("shut"), "ts", "eid", "event")
    rec = (runs.of("nn.lease.recover").filter((F.col("result") == "recovering")
                                              & (F.coalesce(F.col("requester"), F.lit("")) != F.col("holder")))
           .select("run_id", "path", F.col("holder").alias("shut"), "ts", "eid", "event"))
    shut = rea.unionByName(rec).filter(F.col("shut").isNotNull() & F.col("path").isNotNull())
    readd = runs.of("nn.lease.add").select("run_id", "path", F.col("holder").alias("shut"), "ts", "eid")
    return (first_after(shut, readd, ["run_id", "path", "shut"], "re_")
            .withColumnRenamed("re_ts", "until").drop("re_eid"))


def _l5_namenode(runs: RunSet, shut: DataFrame) -> DataFrame:
    """L5's violations on the NameNode's side: operations accepted from a holder while
    it was shut out."""
    # updatePipeline names the block, not always the path: the block's allocation does
    block_path = (runs.of("nn.block.allocate").filter(F.col("block").isNotNull())
                  .groupBy("run_id", "block").agg(F.first("path", True).alias("_bp")))
    accepted = (runs.of(*_HOLDER_OPS).join(block_path, ["run_id", "block"], "left")
                .withColumn("path", F.coalesce("path", "_bp"))
                .filter(F.col("holder").isNotNull() & F.col("path").isNotNull()
                        & F.coalesce(F.col("ok"), F.lit(True)))
                .select(F.col("run_id").alias("_r"), F.col("path").alias("_p"),
                        F.col("holder").alias("_h"), F.col("ts").alias("a_ts"),
                        F.col("event").alias("a_event"), F.col("node").alias("a_node")))
    j = shut.join(accepted, (shut["run_id"] == accepted["_r"]) & (shut["path"] == accepted["_p"])
                  & (shut["shut"] == accepted["_h"]) & (accepted["a_ts"] > shut["ts"])
                  & (shut["until"].isNull() | (accepted["a_ts"] < shut["until"])))
    return violation(
        j, F.format_string("the NameNode accepted %s from %s on %s after its lease was "
                           "recovered/reassigned at %.6f", F.col("a_event"), F.col("shut"),
                           F.col("path"), F.col("ts")),
        "path", F.col("shut").alias("old_holder"), F.col("ts").alias("shut_out_at"),
        ts="a_ts", node="a_node", event="a_event")


def _l5_client(runs: RunSet, shut: DataFrame) -> DataFrame:
    """L5's violations on the client's side: the shut-out holder's stream (opened
    before) reports a successful close, while the NameNode never accepted its complete
    before the recovery."""
    st = client_streams(runs)
    closes = assign_stream(base(runs.of("client.close").filter(F.col("ok")), "path", "len"), st)
    c = closes.select(F.col("run_id").alias("_r"), F.col("path").alias("_p"),
                      F.col("s_holder").alias("_h"), F.col("s_open").alias("c_open"),
                      F.col("ts").alias("c_ts"), F.col("node").alias("c_node"),
                      F.col("eid").alias("c_eid"))
    jc = shut.join(c, (shut["run_id"] == c["_r"]) & (shut["path"] == c["_p"])
                   & (shut["shut"] == c["_h"]) & (c["c_open"] < shut["ts"]) & (c["c_ts"] > shut["ts"]))
    done = runs.of("nn.file.complete").filter(F.coalesce(F.col("ok"), F.lit(True))) \
        .select(F.col("run_id").alias("_r2"), F.col("path").alias("_p2"),
                F.col("holder").alias("_h2"), F.col("ts").alias("_t2"))
    jc = jc.join(done, (jc["run_id"] == done["_r2"]) & (jc["path"] == done["_p2"])
                 & (jc["shut"] == done["_h2"]) & (done["_t2"] >= jc["c_open"])
                 & (done["_t2"] <= jc["ts"]), "left_anti")
    return violation(
        jc, F.format_string("%s's stream on %s closed successfully after its lease was "
                            "recovered/reassigned at %.6f", F.col("shut"), F.col("path"),
                            F.col("ts")),
        "path", F.col("shut").alias("old_holder"), F.col("ts").alias("shut_out_at"),
        ts="c_ts", node="c_node", event=F.lit("client.close"))


def check_l6(runs: RunSet) -> Outcome:
    """Renewals: while a live client has files open it logs client.lease.renew at least
    every soft/2 + slack (slack: max(1s, soft/4)). Gaps that overlap a pause of the client
    or a fault naming it (its links slowed or cut) are not held against it; nor is the
    time the NameNode cannot renew a lease (down, paused, or in startup safe mode, where
    FSNamesystem.renewLease refuses with SafeModeException): the clock starts again when
    it can."""
    periods = _l6_periods(runs)
    pts = _l6_marks(runs, periods)
    # at one instant: the NameNode back, then off again (nn.start, then nn.safemode.enter
    # in the same millisecond of a Hadoop log), then the client's pause, then its renewal
    w2 = Window.partitionBy("run_id", "pkey").orderBy("m_ts", "m_ord")
    pts = pts.withColumn("next_ts", F.coalesce(F.lead("m_ts").over(w2), F.col("p_end")))
    # a renewal the client logs while the NameNode is off (its answer raced the kill or
    # pause) starts no gap: the NameNode's return does
    pts = pts.withColumn("in_off", F.coalesce(F.last("nn_off", ignorenulls=True).over(
        w2.rowsBetween(Window.unboundedPreceding, Window.currentRow)), F.lit(False)))
    late = pts.filter((F.col("m_kind") == "renew") & ~F.col("in_off")
                      & (F.col("next_ts") - F.col("m_ts") > F.col("bound")))
    # a client whose links or process are being faulted cannot be held to the period
    fw = fault_windows(runs).select(F.col("run_id").alias("_r"), "f_start", "f_end", "f_text")
    late = late.join(fw, (late["run_id"] == fw["_r"]) & touches("f_text", "node")
                     & (fw["f_start"] < late["next_ts"]) & (fw["f_end"] > late["m_ts"]), "left_anti")
    exercised = periods.filter(F.col("p_end") - F.col("p_start") > F.col("soft_limit") / 2)
    return Outcome(runs_of(exercised), violation(
        late, F.format_string("%s had files open but did not renew its lease for %.3fs "
                              "(bound %.3fs = soft/2 + slack)", F.col("node"),
                              F.col("next_ts") - F.col("m_ts"), F.col("bound")),
        "holder", F.col("m_ts").alias("from_ts"), F.col("next_ts").alias("to_ts"), "bound",
        "soft_limit", ts="m_ts", node="node", event="m_event"))


def _l6_periods(runs: RunSet) -> DataFrame:
    """run_id, node, period, pkey, p_start, p_end, holder, bound, soft_limit, ...: the
    periods in which a client had files open (its overlapping streams merged, each from
    its open to its close, failure, the client's death or the end of the run)."""
    st = client_streams(runs)
    ends = (assign_stream(base(runs.of("client.close", "client.stream.error"), "path"), st)
            .groupBy("run_id", "node", "path", "s_open").agg(F.min("ts").alias("s_close")))
    deaths = node_deaths(runs).select("run_id", F.col("target").alias("node"), "ts")
    s = st.join(ends, ["run_id", "node", "path", "s_open"], "left")
    # a client that neither closed, failed, nor was killed or stopped is alive to the end
    # of the run: a renewer that went silent there is a gap, not the end of the period
    # (the harness stops every client still running, harness.node.stop, when it heals)
    s = (first_after(s, deaths, ["run_id", "node"], "k_", at="s_open",
                     key=["run_id", "node", "path", "s_open"])
         .withColumnRenamed("k_ts", "s_kill")
         .join(runs.bounds.select("run_id", "end_ts"), "run_id", "left"))
    big = F.lit(float("inf"))
    s = s.withColumn("s_end", F.least(F.coalesce("s_close", big), F.coalesce("s_kill", big),
                                      F.col("end_ts")))
    # merge overlapping streams of a client into periods with files open
    w = Window.partitionBy("run_id", "node").orderBy("s_open", "s_end")
    prev_end = F.max("s_end").over(w.rowsBetween(Window.unboundedPreceding, -1))
    s = s.withColumn("new", F.when(prev_end.isNull() | (F.col("s_open") > prev_end), 1).otherwise(0))
    s = s.withColumn("period", F.sum("new").over(w.rowsBetween(Window.unboundedPreceding, 0)))
    periods = s.groupBy("run_id", "node", "period").agg(
        F.min("s_open").alias("p_start"), F.max("s_end").alias("p_end"),
        F.first("s_holder").alias("holder"))
    periods = with_conf(runs, periods).withColumn(
        "bound", F.col("soft_limit") / 2 + F.greatest(F.lit(1.0), F.col("soft_limit") / 4))
    periods = periods.withColumn("pkey", F.concat_ws("/", "node", F.col("period").cast("string")))
    return periods


def _l6_marks(runs: RunSet, periods: DataFrame) -> DataFrame:
    """The moments of each period of `periods` that bear on the renewal clock (m_ts,
    m_event, m_kind renew / pause, nn_off, m_ord: the order at one instant): the
    period's start, the client's renewals, pauses and resumes, and the NameNode going
    off (kill, stop, pause, safe mode) and coming back."""
    marks = (runs.of("client.lease.renew").select("run_id", "node", "ts", "event",
                                                  F.lit("renew").alias("kind"))
             .unionByName(runs.of("harness.node.pause").select(
                 "run_id", F.col("target").alias("node"), "ts", "event", F.lit("pause").alias("kind")))
             .unionByName(runs.of("harness.node.resume").select(
                 "run_id", F.col("target").alias("node"), "ts", "event", F.lit("renew").alias("kind"))))
    m = marks.select(F.col("run_id").alias("_r"), F.col("node").alias("_n"),
                     F.col("ts").alias("m_ts"), F.col("event").alias("m_event"),
                     F.col("kind").alias("m_kind"), F.lit(None).cast("boolean").alias("nn_off"),
                     F.when(F.col("kind") == "pause", 2).otherwise(3).alias("m_ord"))
    pm = periods.join(m, (periods["run_id"] == m["_r"]) & (periods["node"] == m["_n"])
                      & (m["m_ts"] > periods["p_start"]) & (m["m_ts"] < periods["p_end"]))
    # The NameNode cannot renew from its kill, stop or pause to its next start or resume,
    # nor in startup safe mode (renewals refused until nn.safemode.leave); the client's
    # renewer retries every second, so the clock starts again when the NameNode can renew.
    nn_state = union_all([
        runs.of("harness.node.kill", "harness.node.stop", "harness.node.pause")
        .filter(F.col("target") == "nn").select("run_id", "ts", "event", F.lit(True).alias("off")),
        runs.of("nn.safemode.enter").select("run_id", "ts", "event", F.lit(True).alias("off")),
        runs.of("harness.node.resume").filter(F.col("target") == "nn")
        .select("run_id", "ts", "event", F.lit(False).alias("off")),
        runs.of("nn.start", "nn.safemode.leave").select("run_id", "ts", "event",
                                                        F.lit(False).alias("off"))])
    n = nn_state.select(F.col("run_id").alias("_r"), F.col("ts").alias("m_ts"),
                        F.col("event").alias("m_event"),
                        F.when(F.col("off"), "pause").otherwise("renew").alias("m_kind"),
                        F.col("off").alias("nn_off"), F.col("off").cast("int").alias("m_ord"))
    pn = periods.join(n, (periods["run_id"] == n["_r"]) & (n["m_ts"] > periods["p_start"])
                      & (n["m_ts"] < periods["p_end"]))
    cols = ["run_id", "node", "pkey", "holder", "p_start", "p_end", "bound", "soft_limit",
            "m_ts", "m_event", "m_kind", "nn_off", "m_ord"]
    starts = periods.select("*", F.col("p_start").alias("m_ts"),
                            F.lit("client.stream.open").alias("m_event"),
                            F.lit("renew").alias("m_kind"), F.lit(None).cast("boolean").alias("nn_off"),
                            F.lit(3).alias("m_ord"))
    pts = union_all([starts.select(*cols), pm.select(*cols), pn.select(*cols)])
    return pts
