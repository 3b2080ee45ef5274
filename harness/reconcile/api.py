"""What the CLI and the runner call: verify runs, build a run's report, build a suite
summary. One SparkSession per process (session.get_spark) serves every call.

    verify_runs(run_dirs, master=None) -> [Verdict]           (writes verdict.json)
    build_run_report(run_dir) -> path of report.html           (+ plots/*.png)
    build_suite_report(run_dirs, out_dir) -> path of index.html (+ checks.parquet)
"""

from __future__ import annotations

import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor

from .checks import CHECK_IDS, prepare_bulk, run_checks
from .expect import evaluate_expect, exercised, gather_facts
from .load import RunSet, event_bytes, load_runs
from .metrics import compute_metrics
from .observable import apply_skips, run_info
from .session import (SMALL_INPUT_BYTES, get_spark, is_local, session_conf, small_queries,
                      spark_log_path)
from .verdict import VERDICT_FILE, Verdict

log = logging.getLogger(__name__)

VERDICT = VERDICT_FILE


def verify_loaded(runs: RunSet, timings: dict | None = None) -> list[Verdict]:
    """Verdicts for runs already loaded (every check, the expect block, metrics)."""
    t0 = time.perf_counter()
    side_s: list[float] = []

    def side():
        t = time.perf_counter()
        out = compute_metrics(runs), gather_facts(runs)
        side_s.append(time.perf_counter() - t)
        return out

    # the few queries over the bulk of the events first, with generated code; then the
    # many small ones (checks, metrics, expect) without
    prepare_bulk(runs)
    t_bulk = time.perf_counter() - t0
    # metrics and the expect block's facts are jobs like the checks: run alongside them
    with session_conf(runs.spark, small_queries(runs.spark)), \
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="metrics") as pool:
        pending = pool.submit(side)
        results = run_checks(runs, timings=timings)
        t_checks = time.perf_counter() - t0
        metrics, facts = pending.result()
    if timings is not None:
        timings["bulk"] = t_bulk
        timings["checks_wall"] = t_checks - t_bulk
        timings["metrics_expect"] = side_s[0]
        timings["total"] = time.perf_counter() - t0
    verdicts = []
    for rid in sorted(runs.runs):
        info = runs.runs[rid]
        system, release, agent = run_info(info.run_dir, info.scenario)
        checks = apply_skips(results[rid], system, release, agent)
        m = metrics.get(rid) or {}
        passed, items = evaluate_expect(info.expect, checks, m, facts[rid])
        if m.get("malformed_lines"):
            log.warning("run %s: %d malformed log lines (see report.html)", rid,
                        m["malformed_lines"])
        verdicts.append(Verdict(
            scenario=info.name, run_id=rid, system=system, system_version=release,
            passed=bool(passed),
            checks=checks,
            exercised=exercised(checks),
            expect=items,
            metrics=m, run_dir=info.run_dir))
    return verdicts


def verify_runs(run_dirs: list[str], master: str | None = None) -> list[Verdict]:
    """Check every run folder, write `verdict.json` in each, return the verdicts (in the
    order of `run_dirs`). A JVM started here writes its output to spark_log_path(run_dirs)
    (docs/scenarios.md, "Spark's own output")."""
    if not run_dirs:
        return []
    size = event_bytes(run_dirs)
    spark = get_spark(master, log_path=spark_log_path(run_dirs), input_bytes=size)
    # Small inputs (one run, the library) are loaded as the checks run their queries:
    # interpreted, in one shuffle partition. The load's generated code (a Janino compile
    # per stage) and its exchanges then cost more than they save. Adaptive execution
    # re-plans every query stage once it ran: with tables of a few thousand rows there
    # is nothing to adapt, and the re-planning costs more than it saves.
    small = size <= SMALL_INPUT_BYTES and is_local(spark)
    with session_conf(spark, {**small_queries(spark), "spark.sql.adaptive.enabled": "false"}
                      if small else {}):
        runs = load_runs(list(run_dirs), spark)
        try:
            verdicts = verify_loaded(runs)
        finally:
            runs.close()
    by_id = {v.run_id: v for v in verdicts}
    out = []
    for d in run_dirs:
        rid = os.path.basename(os.path.abspath(d).rstrip("/"))
        v = by_id[rid]
        v.run_dir = d
        write_verdict(d, v)
        out.append(v)
    return out


def write_verdict(run_dir: str, verdict: Verdict) -> str:
    # evidence may hold values JSON has no type for (a timestamp): written as text
    return verdict.write(run_dir, indent=2, default=str)


def read_verdict(run_dir: str) -> Verdict | None:
    return Verdict.read(run_dir)


def build_run_report(run_dir: str) -> str:
    """report.html (and plots/*.png) for one run; verifies it first if it has no
    verdict.json yet. Returns the path of report.html."""
    from .report import write_run_report
    verdict = read_verdict(run_dir) or verify_runs([run_dir])[0]
    return write_run_report(run_dir, verdict)


def build_suite_report(run_dirs: list[str], out_dir: str, rewrite_runs: bool = False) -> str:
    """A summary of many runs in `out_dir`: index.html (pass/fail per scenario and check,
    recovery-latency distributions) and checks.parquet. Runs without a verdict.json are
    verified first. A run's own report.html (the suite links to it) is written only where
    it is missing, or for every run with `rewrite_runs`. Returns the path of index.html."""
    from .report import write_run_report
    from .suite import write_suite_report
    missing = [d for d in run_dirs if read_verdict(d) is None]
    if missing:
        verify_runs(missing)
    verdicts, dirs = [], {}
    for d in run_dirs:
        v = read_verdict(d)
        if v is not None:
            if rewrite_runs or not os.path.exists(os.path.join(d, "report.html")):
                write_run_report(d, v)
            verdicts.append(v)
            dirs[v.run_id] = d
    return write_suite_report(verdicts, out_dir, dirs)


__all__ = ["verify_runs", "build_run_report", "build_suite_report", "verify_loaded",
           "CHECK_IDS"]
