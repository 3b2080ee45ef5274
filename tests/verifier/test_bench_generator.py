"""The benchmark's synthetic runs (benchmarks/gen_events.py) are sound histories: every
check they exercise passes. A benchmark whose runs fail measures the failure paths
(evidence, reports) instead of what a user's passing runs cost, and a check that grows
stricter must take the generator along."""

from __future__ import annotations

import os
import sys

import pytest

pytestmark = pytest.mark.spark

BENCH = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks")


def test_generated_runs_pass_every_check_they_exercise(spark, tmp_path):
    sys.path.insert(0, BENCH)
    try:
        from gen_events import generate
    finally:
        sys.path.remove(BENCH)
    from harness.reconcile.api import verify_runs
    # three runs: the generator's three stories (plain, pipeline recovery, client crash)
    dirs, n = generate(str(tmp_path), 30_000, procs=1)
    assert len(dirs) == 3 and n > 25_000
    verdicts = [v.to_json() for v in verify_runs(dirs)]
    failed = {v["run_id"]: [c["id"] for c in v["checks"] if c["status"] not in ("pass", "skip")]
              for v in verdicts if not v["passed"]}
    assert not failed
    exercised = set().union(*(v["exercised"] for v in verdicts))
    # the stories reach the pipeline, lease and block recovery checks, and D2's cut
    assert {"P1", "P3", "L1", "B2", "B6", "H1", "D1", "D2"} <= exercised
