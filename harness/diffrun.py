"""`hdfs-chaos diff` / `run --system both`: each scenario on the mini-HDFS, then on
Apache Hadoop HDFS (one after the other: the two clusters never share the machine),
all verified in one Spark batch, then compared (harness/reconcile/diff.py) into
<results>/diff.html and <results>/diff.parquet.

The run folders go to <results>/minihdfs/ and <results>/hadoop-<release>/. A scenario
that leaves a system out (`systems:`) or that the release cannot run (Hadoop.issues)
is not run there, and the diff says why.
"""

from __future__ import annotations

import os

from harness.reconcile.verdict import Verdict
from harness.scenario import ScenarioError, validate_files


def run_both(files: list[str], backend: str = "local", results_dir: str = "results",
             seed: int | None = None, keep: bool = False, progress=None,
             hadoop_version: str | None = None) -> list[Verdict]:
    """Run every scenario of `files` on both systems, write the diff; returns every
    verdict of the runs made (for the exit code), after printing one line per run and
    the path of diff.html."""
    from harness.reconcile.diff import compare, load_result, not_run, write_diff
    from harness.runner import result_line, run_unverified, verify_outcomes
    from harness.systems import get_system
    scenarios, issues = validate_files(files)
    if issues:
        raise ScenarioError(issues)
    hadoop = get_system("hadoop", hadoop_version)
    dirs = {"minihdfs": os.path.join(results_dir, "minihdfs"),
            "hadoop": os.path.join(results_dir, f"hadoop-{hadoop.version}")}
    plan: list[tuple[str, dict]] = []     # (scenario name, system -> outcome | reason)
    outcomes = []
    interrupted = False
    for path in files:
        sc = scenarios[path]
        sides: dict = {}
        for system in ("minihdfs", "hadoop"):
            why = _why_not(sc, system, hadoop)
            if why or interrupted:
                sides[system] = why or "interrupted before it ran"
                continue
            if progress:
                progress(f"{sc.name}: on {system}")
            outcome = run_unverified(sc, backend, dirs[system], seed, keep, progress,
                                     system=system,
                                     hadoop_version=hadoop.version if system == "hadoop" else None)
            sides[system] = outcome
            outcomes.append(outcome)
            if outcome.status == "interrupted":
                interrupted = True
        plan.append((sc.name, sides))
        if interrupted:
            break
    verdicts = verify_outcomes(outcomes, progress)
    for v in verdicts:
        print(result_line(v), flush=True)
    diffs = []
    for name, sides in plan:
        res = {}
        for system in ("minihdfs", "hadoop"):
            side = sides[system]
            version = hadoop.version if system == "hadoop" else None
            res[system] = not_run(system, side, version) if isinstance(side, str) \
                else load_result(side.run_dir, system)
        diffs.append(compare(name, res["minihdfs"], res["hadoop"]))
    path = write_diff(diffs, results_dir)
    differing = [d.scenario for d in diffs if d.diffs]
    print(f"diff: {os.path.relpath(path)} ({len(differing)} of {len(diffs)} scenarios "
          f"differ{': ' + ', '.join(differing) if differing else ''})", flush=True)
    if interrupted:
        raise KeyboardInterrupt
    return verdicts


def _why_not(sc, system: str, hadoop) -> str | None:
    """Why `sc` does not run on `system` (None: it does)."""
    if system not in tuple(sc.systems):
        return sc.systems_reason or f"its systems: are {', '.join(sc.systems)}"
    if system == "hadoop":
        issues = hadoop.issues(sc)
        if issues:
            return "; ".join(issues)
    return None
