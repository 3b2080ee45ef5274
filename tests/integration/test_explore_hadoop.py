"""`hdfs-chaos explore --system hadoop` end to end on real Apache Hadoop daemons (JVMs)
with the Byteman agent, real Toxiproxy and real Spark: the clean run of
explore-bases/hadoop-append.yaml on Hadoop, failure points from its agent and log
events, a tiny budget of depth-1 schedules (exact triggers at the agent's events, plain
event triggers at the logs'), each run on Hadoop, verified, and timed, and the summary.
Skipped without Java or the fetched jars. Bounded by a number of schedules, not by time
(a loaded machine makes it slower, not different); no shrinking (a finding's reproducer
is tests/unit/test_explore_hadoop.py's). About 3 minutes on a quiet machine (6 at load
20-30): the append base's first schedules pause c1 and kill a DataNode at
nn.block.allocate (its writer's crash would wait for Hadoop's 20 min lease)."""

from __future__ import annotations

import html
import json
import os

import pytest

from tests import hadoop_support as hs

from harness.explore.engine import explore
from harness.explore.points import read_run_events
from harness.scenario import load_scenario
from harness.systems.hadoop import fetch
from harness.systems.hadoop.agent import holdable

pytestmark = [pytest.mark.integration, pytest.mark.hadoop, pytest.mark.spark,
              pytest.mark.timeout(1800)]

VERSION = os.environ.get("HDFS_CHAOS_HADOOP_VERSION", fetch.DEFAULT_VERSION)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASE = os.path.join(ROOT, "explore-bases", "hadoop-append.yaml")


def _matches(e: dict, at) -> bool:
    return e.get("event") == at.event and e.get("node") == at.node and all(
        e.get(k) == v for k, v in at.where.items())


def test_explore_on_hadoop_runs_verifies_and_times_schedules(tmp_path):
    hs.fetched_or_skip(VERSION)
    out = str(tmp_path / "explore")
    said: list[str] = []
    state = explore(BASE, out, budget=3600, depth=1, workers=1, max_schedules=2,
                    system="hadoop", hadoop_version=VERSION, say=said.append, shrink=False)
    # the agent is on: exact injection at its events, plain triggers at the logs'
    note = f"hadoop {VERSION}: exact injection at the agent's events"
    assert state.exact is True and sum(note in m for m in said) == 1   # said once
    assert state.system == f"hadoop {VERSION}"
    assert state.base_run["outcome"] == "pass", state.base_run
    base_events = read_run_events(state.base_run["run_dir"])
    sources = {e.get("source") for e in base_events}
    assert {"hadoop-log", "hadoop-agent"} <= sources                   # adapted, agent on
    kinds = {p["event"] for p in state.points}
    # the agent's pipeline setup is the DataNodes' point, not the log's receive line;
    # the held create / append lines are no points
    assert {"nn.block.allocate", "dn.pipeline.setup", "dn.replica.state",
            "client.hflush"} <= kinds, kinds
    assert not kinds & {"nn.file.create", "nn.file.append"}, kinds
    # a receive stays a point only where the agent has no setup of that node and block
    # (a replica received by transfer, when Hadoop placed a block on two nodes first)
    setups = {(p["node"], p["where"]["block"]) for p in state.points
              if p["event"] == "dn.pipeline.setup"}
    assert not [p for p in state.points if p["event"] == "dn.pipeline.receive"
                and (p["node"], p["where"]["block"]) in setups]
    assert any(p["event"] == "dn.pipeline.setup" and
               p["where"].get("stage") == "PIPELINE_SETUP_APPEND" for p in state.points)
    start = state.base_run["timings"]
    assert start["daemons"] > 0 and "format" in start and state.base_run["verify"] > 0
    results = [r for r in state.results.values() if not r.get("shrink")]
    assert len(results) == 2
    landed = 0
    for r in results:
        assert r["outcome"] in ("pass", "fail", "hung", "unreached"), r
        assert r["verify"] > 0 and r["wall"] > 0, r
        # the base's format was kept: each schedule copies it
        assert r["timings"]["format"] < 5.0 and r["timings"]["daemons"] > 0, r["timings"]
        scenario = load_scenario(os.path.join(out, "schedules", f"{r['id']}.yaml"))
        assert scenario.cluster.system == "hadoop" and scenario.cluster.hadoop_version == VERSION
        assert scenario.cluster.hadoop_agent is True
        fault = scenario.faults[-1]
        # exact only where the agent can hold (an event only the logs make: plain)
        assert fault.at.event in holdable(VERSION) or not fault.at.exact, fault.at
        with open(os.path.join(r["run_dir"], "verdict.json")) as f:    # verified
            verdict = json.load(f)
        assert verdict.get("checks"), verdict
        events = read_run_events(r["run_dir"])
        run = next(e for e in events if e["event"] == "harness.run.start")
        assert run["system"] == "hadoop" and run["hadoop_agent"] is True
        inject = [e for e in events if e["event"] == "harness.fault.inject"
                  and e.get("fault") == fault.id]
        if r["outcome"] == "unreached" or fault.at.exact:
            continue
        assert not [e for e in events if e["event"] == "harness.hold.release"]
        # the fault went in after the adapted event it waited for (its nth), not before
        seen = [e for e in events if e["ts"] >= run["ts"] and _matches(e, fault.at)]
        assert len(seen) >= fault.at.nth and len(inject) == 1, (seen, inject)
        lag = inject[0]["ts"] - seen[fault.at.nth - 1]["ts"]
        assert 0 <= lag < 5.0, lag
        landed += 1
    assert landed >= 1
    page = open(os.path.join(out, "index.html")).read()
    assert html.escape(note) in page
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    assert summary["verified_per_hour"] > 0 and "daemons" in summary["median_split_s"]
