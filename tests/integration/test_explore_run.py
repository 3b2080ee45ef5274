"""`hdfs-chaos explore` end to end on real processes, real Toxiproxy and real Spark: the
clean run, its failure points, two depth-1 schedules run by two workers and verified in
one batch, the state file, the summary, and `--resume` going on from it.

Bounded by a number of schedules, not by time, so that a loaded machine makes it slower
but not different (the first Spark start alone can take minutes there)."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from harness.explore.engine import explore
from harness.scenario import load_scenario

pytestmark = pytest.mark.integration

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASE = os.path.join(ROOT, "explore-bases", "write-3-blocks.yaml")


def test_explore_runs_schedules_at_recorded_points_and_resumes(tmp_path):
    out = str(tmp_path / "explore")
    state = explore(BASE, out, budget=3600, depth=1, workers=2, max_schedules=2)
    assert state.base_run["outcome"] == "pass"
    assert len(state.points) > 10 and state.space > len(state.points)
    results = list(state.results.values())
    assert len(results) == 2
    for r in results:
        assert r["outcome"] in ("pass", "fail", "hung", "unreached"), r
        path = os.path.join(out, "schedules", f"{r['id']}.yaml")
        scenario = load_scenario(path)                       # a plain, valid scenario
        assert scenario.faults[-1].at.exact
        assert os.path.exists(os.path.join(r["run_dir"], "verdict.json"))
        h = [json.loads(line) for line in open(os.path.join(r["run_dir"], "events",
                                                            "harness.jsonl"))]
        if r["outcome"] != "unreached":     # the fault went in while its point's node waited
            assert [e for e in h if e["event"] == "harness.hold.release"]
    # the two highest-priority schedules have different signatures (novelty first)
    assert len({r["signature"] for r in results}) == 2
    summary = yaml.safe_load(open(os.path.join(out, "summary.json")))
    assert summary["schedules"] == 2 and summary["space_depth1"] == state.space
    assert os.path.exists(os.path.join(out, "index.html"))
    # --resume keeps what was done and goes on with the queue
    again = explore(BASE, out, budget=3600, depth=1, workers=2, resume=True, max_schedules=3)
    assert set(state.results) < set(again.results) and len(again.results) == 3
