"""Shrinking stops at the budget: a round that would start after the budget is spent
is not run (each round is a batch of runs and a verification, tens of seconds on a
loaded machine), and the finding keeps the smallest schedule found so far."""

from __future__ import annotations

import json
import os

from harness.explore.engine import Explorer
from harness.explore.points import FailurePoint
from harness.explore.schedules import Schedule
from harness.reconcile.verdict import CheckResult, Verdict

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                    "explore-write-3-blocks")


def test_no_shrinking_round_starts_once_the_budget_is_spent(tmp_path):
    x = Explorer(os.path.join(DATA, "base.yaml"), str(tmp_path / "out"), 60,
                 say=lambda m: None, status=lambda m: None)
    x._load_or_init()
    with open(os.path.join(DATA, "base-points.json")) as f:
        x.points = [FailurePoint.from_json(p) for p in json.load(f)]
    d1 = x.depth1(x.points)
    original = Schedule((d1[40].steps[0], d1[80].steps[0]))
    x.state.schedules[original.id] = original.to_json()
    x.state.results[original.id] = {"id": original.id, "run_dir": None, "outcome": "fail"}
    x.state.findings["fail:L6:x"] = {"signature": "fail:L6:x", "members": [original.id],
                                      "outcome": "fail", "failed": ["L6"]}
    spent, rounds = [False], []

    def run_and_verify(options):   # every smaller schedule still fails; then time's up
        rounds.append(len(options))
        spent[0] = True
        return [({"run_dir": None, "status": "completed", "errors": []},
                 Verdict(scenario=None, passed=False, checks=[CheckResult(id="L6", status="fail")]))
                for _ in options]
    x._run_and_verify = run_and_verify
    x._shrink_findings(lambda: not spent[0])
    assert len(rounds) == 1
    group = x.state.findings["fail:L6:x"]
    assert group["finding"]["shrunk_by"] == ["drop a fault"]
    assert os.path.exists(os.path.join(x.out, group["reproducer"]))


def test_the_shrinking_share_is_explored_while_there_is_nothing_to_shrink(tmp_path):
    # a one-hour exploration without findings explored 45 min and ended (27 Nov 2026)
    x = Explorer(os.path.join(DATA, "base.yaml"), str(tmp_path / "out"), 100,
                 say=lambda m: None, status=lambda m: None)
    x._load_or_init()
    x.t0 = __import__("time").time()
    x.elapsed_before = 80                       # in the last quarter
    assert x.exploring()
    x.state.findings["fail:L6:x"] = {"signature": "fail:L6:x", "members": ["a"],
                                      "outcome": "fail", "failed": ["L6"]}
    assert not x.exploring()                    # a finding: its share is kept for shrinking
    x.elapsed_before = 50
    assert x.exploring()
    x.state.findings.clear()
    x.elapsed_before = 100                      # the budget is spent either way
    assert not x.exploring()
