"""Exact injection on real processes: a kill `at: {event: ..., exact: true}` lands before
the killed process logs anything after that event.

dn2 is killed at its first `dn.pipeline.setup` (block 1). With exact injection dn2 logs
nothing more of that block until the harness starts it again (`dn.start`); the runner
logs `harness.hold.release` for the hold. The second test kills dn2 half a second after
the same event, without a hold: dn2 has logged more of the block by then (its replica's
states), so the first test's assertion does see a kill that lands late. (An ordinary
trigger without a delay fires ~20 ms late: sometimes dn2 logged something in between,
sometimes not.)"""

from __future__ import annotations

import json
import os
import textwrap

import pytest

from harness.runner import run_unverified
from harness.scenario import load_scenario_text

pytestmark = pytest.mark.integration

SCENARIO = textwrap.dedent("""\
    name: exact-kill-dn2-at-setup
    seed: 2
    timeout: 40s
    cluster:
      datanodes: 3
      config:
        dfs.replication: 3
        dfs.blocksize: 256KiB
        dfs.heartbeat.interval: 300ms
        dfs.client.socket-timeout: 3s
        dfs.client.block.write.replace-datanode-on-failure.policy: NEVER
    workload:
      - {id: w1, client: c1, op: write, path: /data/f1, size: 600KiB, hflush_every: 128KiB}
    faults:
      - id: kill-dn2
        kind: kill
        target: dn2
        at: {event: dn.pipeline.setup, node: dn2, WHEN}
    """)


def _events(run_dir: str, node: str) -> list[dict]:
    with open(os.path.join(run_dir, "events", f"{node}.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def _after_setup_until_restart(run_dir: str) -> tuple[dict, list[str]]:
    """dn2's first pipeline setup, and the events of that block dn2 logged after it before
    it came back: what the held xceiver thread did next (a hold stops that thread only;
    dn2's other threads, e.g. its incremental block reports, may log meanwhile)."""
    events = _events(run_dir, "dn2")
    i = next(i for i, e in enumerate(events) if e["event"] == "dn.pipeline.setup")
    rest = []
    for e in events[i + 1:]:
        if e["event"] == "dn.start":
            break
        if e.get("block") == events[i]["block"]:
            rest.append(e["event"])
    return events[i], rest


def _run(tmp_path, exact: bool):
    text = SCENARIO.replace("WHEN", "exact: true" if exact else "delay: 500ms")
    outcome = run_unverified(load_scenario_text(text, "inline.yaml"), results_dir=str(tmp_path))
    assert outcome.status == "completed", outcome.errors
    return outcome.run_dir


def test_an_exact_kill_lands_before_the_next_event_of_the_process(tmp_path):
    run_dir = _run(tmp_path, exact=True)
    setup, after = _after_setup_until_restart(run_dir)
    assert after == [], f"dn2 logged {after} after its held setup, before the kill"
    harness = _events(run_dir, "harness")
    [release] = [e for e in harness if e["event"] == "harness.hold.release"]
    assert (release["held_node"], release["held_seq"]) == ("dn2", setup["seq"])
    assert release["late"] is False
    [kill] = [e for e in harness if e["event"] == "harness.node.kill"]
    assert setup["ts"] <= kill["ts"] <= release["ts"]


def test_a_kill_that_lands_later_lets_the_process_log_more(tmp_path):
    run_dir = _run(tmp_path, exact=False)
    _, after = _after_setup_until_restart(run_dir)
    assert after, "dn2 logged nothing between its setup and a kill 500 ms later"
    assert not [e for e in _events(run_dir, "harness") if e["event"] == "harness.hold.release"]
