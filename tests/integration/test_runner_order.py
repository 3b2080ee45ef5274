"""The runner's order at the start of a run: a fault due at 0s is in place before any
client starts, however long Toxiproxy takes to add it. Without that order a quick
write can finish before its bandwidth cap applies: a 1 MiB write takes tens of
milliseconds, less than adding the toxics of a cap."""

from __future__ import annotations

import json
import os
import textwrap
import time

import pytest

from harness.runner import run_unverified
from harness.scenario import load_scenario_text

pytestmark = pytest.mark.integration

SCENARIO = textwrap.dedent("""\
    name: fault-before-clients
    seed: 1
    timeout: 60s
    cluster:
      datanodes: 3
      config: {dfs.blocksize: 1MiB, dfs.heartbeat.interval: 300ms}
    workload:
      - {id: w1, client: c1, op: write, path: /f, size: 64KiB}
    faults:
      - {id: pace, kind: bandwidth, links: [[c1, dn1], [c1, dn2], [c1, dn3]], rate: 1MiB,
         at: 0s}
    """)

SLOW_S = 2.0


def _events(run_dir: str, node: str) -> list[dict]:
    with open(os.path.join(run_dir, "events", f"{node}.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def test_a_fault_due_at_0s_is_in_place_before_the_clients_start(tmp_path, monkeypatch):
    from faults import network
    real = network.Bandwidth._apply

    def slow_apply(self):       # a Toxiproxy that takes its time to add the toxics
        time.sleep(SLOW_S)
        real(self)
    monkeypatch.setattr(network.Bandwidth, "_apply", slow_apply)
    outcome = run_unverified(load_scenario_text(SCENARIO, "inline.yaml"),
                             results_dir=str(tmp_path))
    assert outcome.status == "completed", outcome.errors
    run_dir = outcome.run_dir
    [inject] = [e for e in _events(run_dir, "harness") if e["event"] == "harness.fault.inject"]
    first = min(e["ts"] for e in _events(run_dir, "c1"))
    # inject is logged just before the toxics are added, which took SLOW_S here
    assert first >= inject["ts"] + SLOW_S, (first - inject["ts"])
