"""The checks of spec/CHECKS.md, and the runner that turns them into per-run results.

Every check is a function RunSet -> Outcome written with DataFrames, so one call checks
every loaded run at once. `run_checks` collects only what a verdict needs: for each
check, the runs it exercised and, per failing run, the violation count and the first
`MAX_EVIDENCE` evidence rows (ordered by time).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import os
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from pyspark.sql import DataFrame, Window, functions as F

from ..load import RunSet
from ..sparkjvm import has_jvm
from ..verdict import CheckResult
from .block import check_b1, check_b2, check_b3, check_b4, check_b5, check_b6, check_h1
from .common import Outcome, Starts, ident
from .data import check_d1, check_d2, check_d3, check_d4
from .integrity import check_i1
from .lease import (L2_STARTS, L4_STARTS, check_l1, check_l2, check_l3, check_l4, check_l5,
                    check_l6)
from .pipeline import (P6_STARTS, P7_STARTS, check_p1, check_p2, check_p3, check_p4,
                       check_p5, check_p6, check_p7)

log = logging.getLogger(__name__)

MAX_EVIDENCE = 20


@dataclasses.dataclass(frozen=True)
class Check:
    id: str
    title: str
    fn: Callable[[RunSet], Outcome]
    # The events the check starts from (common.Starts, or a bare event name): every row
    # it can give, an exercised run or a violation, derives from one of them, so without
    # one the check skips in every run and need not be planned at all. () : no such
    # precondition.
    starts: tuple[Starts | str, ...] = ()
    # The same precondition as a SQL aggregate over the runs' rare events
    # (RunSet.rare), false when it is absent: made from `starts`; given directly only
    # where no filter of single events says it (B6). None: the check is always planned.
    needs: str | None = None

    def __post_init__(self):
        if self.starts:
            if self.needs is not None:
                raise ValueError(f"check {self.id}: give `starts` or `needs`, not both")
            object.__setattr__(self, "needs", starts_sql(self.starts))


def starts_sql(starts) -> str:
    """A `needs` met by any of the starting events."""
    conds = [(s if isinstance(s, Starts) else Starts(s)).sql() for s in starts]
    return f"count_if({' OR '.join(conds)}) > 0"


# B6 starts from a DataNode started again: a second dn.start of one node in one run
_DN_RESTARTED = ("count_if(event = 'dn.start') > "
                 "count(DISTINCT CASE WHEN event = 'dn.start' THEN concat(run_id, '/', node) END)")

CHECKS: list[Check] = [
    Check("I1", "event logs complete", check_i1),
    Check("P1", "pipeline rebuilt after an error", check_p1, ("client.pipeline.error",)),
    Check("P2", "replace-datanode policy followed", check_p2, ("client.pipeline.replace",)),
    Check("P3", "no acked byte lost in recovery", check_p3, ("client.pipeline.recovered",)),
    Check("P4", "NameNode agrees on the new pipeline", check_p4,
          ("client.pipeline.recovered",)),
    Check("P5", "stale replicas are not valid locations", check_p5,
          ("client.pipeline.recovered",)),
    # the rows P6 and P7 start from, not every pipeline error: a run whose DataNode
    # crash was recovered has errors but nothing for them (a check costs ~0.5 s to plan)
    Check("P6", "honest failure when every DataNode failed", check_p6, P6_STARTS),
    Check("P7", "setup errors blame the right node", check_p7, P7_STARTS),
    Check("L1", "one writer per file", check_l1),
    Check("L2", "soft limit respected", check_l2, L2_STARTS),
    Check("L3", "hard limit enforced by the NameNode", check_l3),
    Check("L4", "recovered files closed in the end", check_l4, L4_STARTS),
    Check("L5", "old holder shut out", check_l5, ("nn.lease.recover", "nn.lease.reassign")),
    Check("L6", "live writers renew their lease", check_l6),
    Check("B1", "recovery id and primary", check_b1, ("nn.recovery.start",)),
    Check("B2", "syncBlock length rule", check_b2, ("dn.recovery.sync",)),
    Check("B3", "participants and NameNode agree after commit", check_b3,
          ("nn.recovery.commit",)),
    Check("B4", "empty block removed", check_b4, ("dn.recovery.sync",)),
    Check("B5", "old generation rejected", check_b5, ("nn.recovery.commit",)),
    Check("B6", "restart makes RWR", check_b6, needs=_DN_RESTARTED),
    # an addition of hdfs-chaos to spec/CHECKS.md (docs/events.md, "Checks")
    Check("H1", "COMPLETE only with enough FINALIZED replicas", check_h1),
    Check("D1", "hflushed bytes durable", check_d1, ("client.hflush",)),
    Check("D2", "content read back is what was written", check_d2),
    Check("D3", "FINALIZED replicas agree", check_d3),
    Check("D4", "replication restored", check_d4),
]
CHECK_IDS = [c.id for c in CHECKS]
BY_ID = {c.id: c for c in CHECKS}


def prepare_bulk(runs: RunSet) -> None:
    """Build the tables that the checks and metrics read from the bulk of the events
    (writes and acks): the per-process event counts and spans, the acks' and writes'
    progress per stream and block (P1's, only where a pipeline error was logged), D2's
    per-file layout of the writers' streams. Each reads the loader's folded table
    (load.RunSet.folded) rather than the lines; all three at once, so that the parts that
    need no rare event (bulk_stats) run while the loader still parses the rare events in
    one task, which in local mode would leave the other core idle.

    A table that cannot be built is left for the checks that need it: each of them then
    fails on its own as status `error`, and the other checks still run."""
    from . import data, pipeline
    def acks():     # P1's alone: not where no pipeline error leaves P1 unplanned
        if "client.pipeline.error" in runs.event_names:
            pipeline.ack_progress(runs)
            pipeline.write_progress(runs)
    jobs = {"bounds": lambda: runs.bounds, "content_layout": lambda: data.content_layout(runs),
            "ack_progress": acks}
    with ThreadPoolExecutor(max_workers=len(jobs), thread_name_prefix="bulk") as pool:
        pending = {name: pool.submit(job) for name, job in jobs.items()}
        for name, f in pending.items():
            try:
                f.result()
            except Exception as exc:
                log.warning("building %s failed (%s: %s); the checks that need it will "
                            "say so", name, type(exc).__name__, str(exc).splitlines()[0][:200])


def possible_checks(runs: RunSet, checks: list[Check],
                    by_run: bool = False) -> set[str] | dict[str, set[str]]:
    """The ids of `checks` whose `needs` the loaded runs meet (a check without `needs`
    always): one small aggregate over the rare events for all of them. With `by_run`,
    {run_id: ids} for each run that has rare events."""
    gated = [c for c in checks if c.needs]
    always = {c.id for c in checks if not c.needs}
    cols = [f"coalesce({c.needs}, false) AS {ident(c.id)}" for c in gated]
    if not gated:
        return always if not by_run else {rid: set(always) for rid in runs.runs}
    if by_run:
        rows = runs.rare.groupBy("run_id").agg(*[F.expr(c) for c in cols]).collect()
        return {r["run_id"]: always | {c.id for c in gated if r[c.id]} for r in rows}
    row = runs.rare.selectExpr(*cols).collect()[0]
    return always | {c.id for c in gated if row[c.id]}


def run_checks(runs: RunSet, ids: list[str] | None = None,
               timings: dict[str, float] | None = None,
               threads: int | None = None, gate: bool = True) -> dict[str, list[CheckResult]]:
    """Every check (or those in `ids`) over every run: {run_id: [CheckResult...]} in
    CHECKS order.

    In a local session each check is one Spark job over all runs (one giant union of
    all checks plans far slower under adaptive execution). The jobs are submitted from
    `threads` driver threads at once (HDFS_CHAOS_CHECK_THREADS, default 2): much of a
    check's time is spent planning it on the driver and in small stages that leave cores
    idle, which the other thread's job then uses. Through Spark Connect, where every
    request is a round trip, each check is one request (_run_batched). A
    check that crashes is reported as status `error` for every run, so one broken oracle
    cannot hide the others.

    With `gate`, a check whose `needs` no run meets is not built at all: it skips in
    every run, as it would have (planning a check costs about half a second of driver
    time however small the runs are, and one recorded run leaves most checks without
    their starting events)."""
    selected = [BY_ID[i] for i in (ids or CHECK_IDS)]
    threads = threads or int(os.environ.get("HDFS_CHAOS_CHECK_THREADS", "2"))
    if gate:
        try:
            possible = possible_checks(runs, selected)
        except Exception as exc:    # cannot tell: plan them all, as without the gate
            log.warning("could not tell which checks the runs exercise (%s: %s); running "
                        "every check", type(exc).__name__, str(exc).splitlines()[0][:200])
            possible = {c.id for c in selected}
    else:
        possible = {c.id for c in selected}
    order = [c.id for c in selected]
    unneeded = [c for c in selected if c.id not in possible]
    selected = [c for c in selected if c.id in possible]

    starts = _run_starts(runs) if selected else {}
    if selected and not has_jvm(runs.spark):
        done = _run_batched(runs, selected, starts, threads)
    else:
        done = _run_each(runs, selected, starts, threads)
    per_check = {c.id: res for c, (res, _) in zip(selected, done)}
    per_check.update({c.id: {} for c in unneeded})
    if timings is not None:
        timings.update({c.id: took for c, (_, took) in zip(selected, done)})
        timings.update({c.id: 0.0 for c in unneeded})
    out: dict[str, list[CheckResult]] = {}
    for rid in runs.runs:
        out[rid] = [per_check[i].get(rid) or CheckResult(i, "skip", []) for i in order]
    return out


def _crashed(runs: RunSet, check: Check, exc: Exception) -> dict[str, CheckResult]:
    """Status `error` in every run for a check that crashed (a broken oracle must not
    hide the others)."""
    msg = f"check crashed: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
    log.error("check %s crashed: %s", check.id, msg)
    tb = traceback.format_exc().splitlines()[-3:]
    return {rid: CheckResult(check.id, "error", [{"why": msg, "trace": tb}])
            for rid in runs.runs}


def _run_batched(runs: RunSet, selected: list[Check], starts: dict[str, float],
                 threads: int) -> list[tuple[dict[str, CheckResult], float]]:
    """The checks through Spark Connect: each check's result rows (_result_frame) built
    with the DataFrame API and collected in one request, where the temporary views of
    _result_rows cost five round trips more per check (make two views, run the
    statement, drop both). `threads` checks at a time. One union of every check is no
    faster: the server then plans it as one, slower than the parts."""
    def one(check: Check) -> tuple[dict[str, CheckResult], float]:
        t0 = time.perf_counter()
        try:
            rows = _result_frame(check.id, check.fn(runs)).collect()
            res = _results_from_rows(check.id, rows, starts)
        except Exception as exc:    # a broken oracle must not hide the others
            res = _crashed(runs, check, exc)
        return res, time.perf_counter() - t0

    if threads > 1 and len(selected) > 1:
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="check") as pool:
            return list(pool.map(one, selected))
    return [one(c) for c in selected]


def _result_frame(check_id: str, outcome: Outcome) -> DataFrame:
    """_result_rows' statement built with the DataFrame API (and the check's id in
    `check`): on Spark Connect a DataFrame is a plan built on the client, sent once with
    the query."""
    by_run = Window.partitionBy("run_id")
    order = by_run.orderBy(F.col("ts").asc_nulls_last(), F.col("node").asc_nulls_first(),
                           F.col("event").asc_nulls_first(), F.col("why").asc_nulls_first())
    viol = (outcome.violations
            .select("run_id", "ts", "node", "event", "why", "fields",
                    F.row_number().over(order).alias("rn"),
                    F.count(F.lit(1)).over(by_run).alias("n"))
            .filter(F.col("rn") <= MAX_EVIDENCE)
            .select(F.lit(check_id).alias("check"), "run_id", F.lit(1).alias("kind"),
                    "rn", "n", "ts", "node", "event", "why", "fields"))
    ex = outcome.exercised.select(
        F.lit(check_id).alias("check"), "run_id", F.lit(0).alias("kind"),
        F.lit(None).cast("int").alias("rn"), F.lit(None).cast("bigint").alias("n"),
        F.lit(None).cast("double").alias("ts"), F.lit(None).cast("string").alias("node"),
        F.lit(None).cast("string").alias("event"), F.lit(None).cast("string").alias("why"),
        F.lit(None).cast("string").alias("fields"))
    return viol.unionByName(ex)


def _run_each(runs: RunSet, selected: list[Check], starts: dict[str, float],
              threads: int) -> list[tuple[dict[str, CheckResult], float]]:
    """The checks one job each (a local session), `threads` at a time."""
    def one(check: Check) -> tuple[dict[str, CheckResult], float]:
        t0 = time.perf_counter()
        views = ()
        try:
            rows, views = _result_rows(runs, check)
            res = _results_from_rows(check.id, rows.collect(), starts)
        except Exception as exc:  # a broken oracle must not hide the others
            res = _crashed(runs, check, exc)
        finally:
            _drop_views(runs, views)
        return res, time.perf_counter() - t0

    if threads > 1 and len(selected) > 1:
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="check") as pool:
            return list(pool.map(one, selected))
    return [one(c) for c in selected]


_views = itertools.count()


def _result_rows(runs: RunSet, check: Check):
    """(DataFrame, the temporary views to drop once it is collected): what the verdict
    needs from `check`: a row per exercised run
    (kind 0) and the first MAX_EVIDENCE violations per failing run (kind 1), with their
    count. One SQL statement over the outcome's two DataFrames as temporary views: Spark
    analyses a DataFrame's whole plan again at every call that extends it, and a check's
    plan is tens of operators deep, so the window, filter, union and projections added
    call by call cost some 2.5 s of analysis per verification (17 checks), one statement
    a few tenths. The views' names are unique to the call (checks run in threads)."""
    outcome = check.fn(runs)
    n = next(_views)
    viol, ex = f"_check_{n}_violations", f"_check_{n}_exercised"
    outcome.violations.createOrReplaceTempView(viol)
    outcome.exercised.createOrReplaceTempView(ex)
    return runs.spark.sql(f"""
        SELECT run_id, 1 AS kind, rn, n, ts, node, event, why, fields FROM (
          SELECT *, row_number() OVER (PARTITION BY run_id
                                       ORDER BY ts ASC NULLS LAST, node, event, why) AS rn,
                 count(1) OVER (PARTITION BY run_id) AS n
          FROM {viol}) WHERE rn <= {MAX_EVIDENCE}
        UNION ALL
        SELECT run_id, 0, CAST(NULL AS INT), CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE),
               CAST(NULL AS STRING), CAST(NULL AS STRING), CAST(NULL AS STRING),
               CAST(NULL AS STRING) FROM {ex}"""), (viol, ex)


def _drop_views(runs: RunSet, views) -> None:
    """Drop the temporary views _result_rows made (a failed drop only leaves a name)."""
    for name in views:
        try:
            runs.spark.catalog.dropTempView(name)
        except Exception:
            pass


def _run_starts(runs: RunSet) -> dict[str, float]:
    """{run_id: the time of its first event}: evidence times are shown from there."""
    try:
        return {r["run_id"]: r["start_ts"] for r in runs.bounds.collect()}
    except Exception as exc:    # a check's evidence then shows no relative time
        log.warning("no run start times (%s: %s)", type(exc).__name__,
                    str(exc).splitlines()[0][:200])
        return {}


def _results_from_rows(check_id: str, rows, starts: dict[str, float]) -> dict[str, CheckResult]:
    results: dict[str, CheckResult] = {}
    evidence: dict[str, list[tuple[int, dict]]] = {}
    for r in rows:
        res = results.setdefault(r["run_id"], CheckResult(check_id, "pass", []))
        if r["kind"] == 1:
            res.status = "fail"
            res.violations = int(r["n"])
            evidence.setdefault(r["run_id"], []).append(
                (r["rn"], _evidence_row(r, starts.get(r["run_id"]))))
    for rid, items in evidence.items():
        results[rid].evidence = [e for _, e in sorted(items, key=lambda x: x[0])]
        if results[rid].violations > len(items):
            results[rid].evidence.append(
                {"why": f"... and {results[rid].violations - len(items)} more violations"})
    return results


def _evidence_row(r, start_ts: float | None) -> dict:
    t = (round(r["ts"] - start_ts, 3)
         if r["ts"] is not None and start_ts is not None else None)
    item = {"ts": r["ts"], "t": t, "node": r["node"], "event": r["event"]}
    try:
        item.update(json.loads(r["fields"] or "{}"))
    except ValueError:
        item["fields"] = r["fields"]
    item["why"] = r["why"]
    return {k: v for k, v in item.items() if v is not None}
