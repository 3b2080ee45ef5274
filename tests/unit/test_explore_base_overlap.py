"""The base run's verification overlaps the first schedules: the explorer queues the
schedules at the base run's points as soon as the run ended, verifies it in a thread,
and stops with a clear error if its verdict is not a pass."""

from __future__ import annotations

import os
import shutil
import threading

import pytest

from harness.explore.engine import Explorer, ExploreError
from harness.reconcile.verdict import CheckResult, Verdict

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                    "explore-write-3-blocks")
RUN = os.path.join(DATA, "run-x59413228c9")


def explorer_with_slow_verifier(tmp_path, verdict: Verdict):
    run_dir = tmp_path / "base-run"
    shutil.copytree(RUN, run_dir)
    x = Explorer(os.path.join(DATA, "base.yaml"), str(tmp_path / "out"), 60,
                 say=lambda m: None, status=lambda m: None)
    x._load_or_init()
    release = threading.Event()

    def slow_verify(results):
        assert release.wait(30)
        return [verdict for _ in results]
    x._run_all = lambda schedules: [{"run_dir": str(run_dir), "status": "completed",
                                     "errors": []}]
    x._verify = slow_verify
    return x, release


def test_the_schedules_are_queued_before_the_base_run_is_verified(tmp_path):
    x, release = explorer_with_slow_verifier(
        tmp_path, Verdict(scenario="base", passed=True, checks=[]))
    t = threading.Thread(target=x._record_base, daemon=True)
    t.start()
    t.join(10)
    try:
        assert not t.is_alive(), "the base run's verification held up the schedules"
        assert len(x.queue) > 0 and x.state.base_run["outcome"] == "unverified"
    finally:
        release.set()
    x._check_base(wait=True)
    assert x.state.base_run["outcome"] == "pass"


def test_a_base_run_that_fails_its_checks_stops_the_exploration(tmp_path):
    failing = Verdict(scenario="base", passed=False,
                      checks=[CheckResult(id="L6", status="fail")])
    x, release = explorer_with_slow_verifier(tmp_path, failing)
    release.set()
    x._record_base()
    with pytest.raises(ExploreError, match="clean run of the base scenario does not pass"):
        x._explore(lambda: False)
    assert x.state.base_run["outcome"] == "fail" and x.state.base_run["failed"] == ["L6"]


class _DonePool:
    """A pool whose runs end at once, each in a run folder of the base run's events."""

    def __init__(self, run_dir):
        self.run_dir, self.submitted = run_dir, 0

    def submit(self, fn, *args):
        import concurrent.futures as cf
        self.submitted += 1
        future = cf.Future()
        future.set_result({"run_dir": self.run_dir, "status": "completed", "errors": []})
        return future


def test_one_worker_verifies_in_batches_not_run_by_run(tmp_path):
    """A lone worker has no run going between two of its runs: that moment is not idle,
    or every verification batch would hold one run (each a Spark job of its own)."""
    x, release = explorer_with_slow_verifier(
        tmp_path, Verdict(scenario="base", passed=True, checks=[]))
    release.set()
    x._record_base()
    x._check_base(wait=True)
    batches = []

    def verify(results):
        batches.append(len(results))
        return [Verdict(scenario="s", passed=True, checks=[]) for _ in results]
    x._verify = verify
    x.workers, x.batch, x.max_schedules = 1, 4, 6
    x.pool = _DonePool(str(tmp_path / "base-run"))
    x._explore(lambda: True)
    assert x.pool.submitted == 6 and sum(batches) == 6
    assert batches == [4, 2]
