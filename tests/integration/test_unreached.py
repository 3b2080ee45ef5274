"""A run whose pending fault can no longer fire ends at once as `unreached` (issue 33):
the workload is over and the cluster settled, and the fault waits for a protocol event
that only a workload brings about. It used to wait out the scenario's whole timeout."""

from __future__ import annotations

import json
import os
import textwrap

import pytest

from harness.runner import run_unverified
from harness.scenario import load_scenario_text

pytestmark = pytest.mark.integration

SCENARIO = textwrap.dedent("""\
    name: unreachable-point
    seed: 2
    timeout: 120s
    cluster:
      datanodes: 3
      config: {dfs.blocksize: 1MiB, dfs.heartbeat.interval: 300ms}
    workload:
      - {id: w1, client: c1, op: write, path: /f, size: 256KiB}
    faults:
      # a clean write recovers no pipeline: this point never comes
      - {id: x1, kind: kill, target: dn2, at: {event: client.pipeline.recovered}}
    """)


def test_a_point_that_cannot_come_ends_the_run_as_unreached(tmp_path):
    outcome = run_unverified(load_scenario_text(SCENARIO), "local", results_dir=str(tmp_path))
    assert outcome.status == "unreached", outcome.errors
    assert any("pending: inject x1" in e for e in outcome.errors), outcome.errors
    with open(os.path.join(outcome.run_dir, "events", "harness.jsonl")) as f:
        events = [json.loads(line) for line in f if line.strip()]
    start = next(e["ts"] for e in events if e["event"] == "harness.run.start")
    end = next(e for e in events if e["event"] == "harness.run.end")
    assert end["status"] == "unreached" and end["faults_fired"] == []
    # far less than the 120 s timeout: the write, two quiet polls, the teardown
    assert end["ts"] - start < 60, end["ts"] - start
    # the verdict of such a run fails (I1: the run did not go through)
    from harness.runner import verify_outcomes
    (verdict,) = verify_outcomes([outcome])
    assert not verdict.passed
    assert verdict.run_status == "unreached"


def test_a_fault_with_a_duration_whose_point_cannot_come_ends_as_unreached(tmp_path):
    """The explorer's faults last a while (a 5 s pause): their heal trigger is pending from
    the start, yet it cannot come before the fault does, so it keeps no run going."""
    text = SCENARIO.replace(
        "{id: x1, kind: kill, target: dn2, at: {event: client.pipeline.recovered}}",
        "{id: x1, kind: pause, target: dn2, duration: 5s,\n"
        "         at: {event: client.pipeline.recovered, exact: true}}")
    assert "pause" in text
    outcome = run_unverified(load_scenario_text(text), "local", results_dir=str(tmp_path))
    assert outcome.status == "unreached", outcome.errors
    assert any("pending: inject x1" in e for e in outcome.errors), outcome.errors
