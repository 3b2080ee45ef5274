"""`hdfs-chaos explore --system hadoop` end to end on real Apache Hadoop daemons (JVMs),
real Toxiproxy and real Spark: the clean run on Hadoop, failure points from its adapted
log events, a tiny budget of depth-1 schedules with plain event triggers (no exact
injection), each run on Hadoop and verified, and the summary saying there is no exact
injection. Skipped without Java or the fetched jars. Bounded by a number of schedules,
not by time (a loaded machine makes it slower, not different)."""

from __future__ import annotations

import json
import os

import pytest

from tests import hadoop_support as hs

from harness.explore.engine import explore
from harness.explore.points import read_run_events
from harness.scenario import load_scenario
from harness.systems.hadoop import fetch

pytestmark = [pytest.mark.integration, pytest.mark.hadoop, pytest.mark.spark,
              pytest.mark.timeout(1800)]

VERSION = os.environ.get("HDFS_CHAOS_HADOOP_VERSION", fetch.DEFAULT_VERSION)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASE = os.path.join(ROOT, "explore-bases", "hadoop-write.yaml")


def _matches(e: dict, at) -> bool:
    return e.get("event") == at.event and e.get("node") == at.node and all(
        e.get(k) == v for k, v in at.where.items())


def test_explore_on_hadoop_runs_and_verifies_schedules_with_event_triggers(tmp_path):
    hs.fetched_or_skip(VERSION)
    out = str(tmp_path / "explore")
    said: list[str] = []
    state = explore(BASE, out, budget=3600, depth=1, workers=1, max_schedules=2,
                    system="hadoop", hadoop_version=VERSION, say=said.append)
    note = f"hadoop {VERSION}: no exact injection; faults fire on the adapted log event"
    assert sum(note in m for m in said) == 1                      # said once
    assert state.system == f"hadoop {VERSION}" and state.exact is False
    assert state.base_run["outcome"] == "pass", state.base_run
    base_events = read_run_events(state.base_run["run_dir"])
    assert any(e.get("source") == "hadoop-log" for e in base_events)   # adapted, not mini-HDFS
    kinds = {p["event"] for p in state.points}
    assert {"nn.block.allocate", "dn.pipeline.receive", "client.hflush"} <= kinds, kinds
    results = [r for r in state.results.values() if not r.get("shrink")]
    assert len(results) == 2
    landed = 0
    for r in results:
        assert r["outcome"] in ("pass", "fail", "hung", "unreached"), r
        scenario = load_scenario(os.path.join(out, "schedules", f"{r['id']}.yaml"))
        assert scenario.cluster.system == "hadoop" and scenario.cluster.hadoop_version == VERSION
        fault = scenario.faults[-1]
        assert fault.at.exact is False
        with open(os.path.join(r["run_dir"], "verdict.json")) as f:    # verified
            verdict = json.load(f)
        assert verdict.get("checks"), verdict
        events = read_run_events(r["run_dir"])
        run = next(e for e in events if e["event"] == "harness.run.start")
        assert run["system"] == "hadoop"
        assert not [e for e in events if e["event"] == "harness.hold.release"]
        inject = [e for e in events if e["event"] == "harness.fault.inject"
                  and e.get("fault") == fault.id]
        if r["outcome"] == "unreached":
            continue
        # the fault went in after the adapted event it waited for (its nth), not before
        seen = [e for e in events if e["ts"] >= run["ts"] and _matches(e, fault.at)]
        assert len(seen) >= fault.at.nth and len(inject) == 1, (seen, inject)
        lag = inject[0]["ts"] - seen[fault.at.nth - 1]["ts"]
        assert 0 <= lag < 5.0, lag
        landed += 1
    assert landed >= 1
    page = open(os.path.join(out, "index.html")).read()
    assert note in page
