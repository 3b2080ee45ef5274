"""A fault addressed by pipeline position kills the DataNode that really was at that
position: a real local mini-HDFS run (processes, Toxiproxy) of the library's
dn-crash-middle-in-pipeline with a seed that places the block on [dn3, dn1, dn4], so
`c1.pipeline[1]` is dn1 (not dn2, which a resolution by name or by a fixed order would
pick). The run's own events say which node was where, which one was killed, and which
one the client found bad."""

from __future__ import annotations

import json
import os

import pytest

from harness.runner import run_unverified
from harness.scenario import load_scenario_text

pytestmark = pytest.mark.integration

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIBRARY = os.path.join(ROOT, "scenarios", "dn-crash-middle-in-pipeline.yaml")
SEED = 7   # the mini-HDFS places block 1 on [dn3, dn1, dn4] with it (dn2 spare)


def pipeline_at_fault(events: list[dict], fault: str) -> tuple[dict, list[str]]:
    """The fault's harness.fault.inject event and c1's pipeline (its newest pipeline
    event) just before it."""
    inject = next(e for e in events if e["event"] == "harness.fault.inject"
                  and e["fault"] == fault)
    before = [e for e in events if e["event"] in ("client.pipeline.setup",
                                                  "client.pipeline.recovered")
              and e["node"] == "c1" and e["ts"] < inject["ts"]]
    assert before, f"c1 logged no pipeline before {fault}"
    return inject, before[-1]["pipeline"]


def _events(run_dir: str) -> list[dict]:
    out = []
    folder = os.path.join(run_dir, "events")
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name)) as f:
            out += [json.loads(line) for line in f if line.strip()]
    return sorted(out, key=lambda e: e["ts"])


def test_the_kill_of_c1_pipeline_1_hits_the_second_node_of_the_live_pipeline(tmp_path):
    text = open(LIBRARY).read().replace("seed: 2\n", f"seed: {SEED}\n")
    assert "target: c1.pipeline[1]" in text
    outcome = run_unverified(load_scenario_text(text, "positions.yaml"),
                             results_dir=str(tmp_path))
    assert outcome.status == "completed", outcome.errors
    assert outcome.errors == []
    events = _events(outcome.run_dir)
    inject, pipeline = pipeline_at_fault(events, "crash-middle")
    assert pipeline[1] != "dn2", f"seed {SEED} no longer separates place from name: {pipeline}"
    # what the harness killed is what was second in c1's pipeline when it fired
    assert inject["target"] == pipeline[1]
    assert inject["resolved"] == [f"c1.pipeline[1]={pipeline[1]}"]
    kill = next(e for e in events if e["event"] == "harness.node.kill")
    assert kill["target"] == pipeline[1]
    # and the client saw exactly that node fail, at index 1, and went on without it
    error = next(e for e in events if e["event"] == "client.pipeline.error"
                 and e["ts"] > inject["ts"])
    assert (error["error_index"], error["bad_node"]) == (1, pipeline[1])
    recovered = next(e for e in events if e["event"] == "client.pipeline.recovered")
    assert recovered["pipeline"] == [pipeline[0], pipeline[2]]
    # healing the kill (at the end of the workload) starts the node it killed
    restart = [e for e in events if e["event"] == "harness.node.start"
               and e["ts"] > inject["ts"] and e.get("target", "").startswith("dn")]
    assert [e["target"] for e in restart] == [pipeline[1]]
