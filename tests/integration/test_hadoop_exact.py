"""Exact injection on real Hadoop (the agent's hold, harness/systems/hadoop/agenthold):
dn2's DataXceiver is held right after createRbw made the new block's replica (the agent's
dn.replica.state, reason create) and dn2 is SIGKILLed while it waits. The fault lands
before that thread's next step: dn2 never answers the pipeline setup (no
dn.pipeline.setup of that block in its agent log), and the client sees the failure at
setup (the agent's client.pipeline.error, stage PIPELINE_SETUP_CREATE, bad node dn2),
not while streaming. And dn2 held where its DataXceiver is about to send its setup
answer upstream (the agent's dn.pipeline.setup) and killed: the answer never leaves, so the
client fails the setup; an ordinary trigger fires ~20 ms after the line, when the answer
is long sent and the pipeline streams. Skipped without Java or the fetched jars and the
Byteman jar."""

from __future__ import annotations

import json
import os

import pytest

from harness.runner import run_unverified
from harness.scenario import load_scenario_text
from harness.systems.hadoop import fetch
from tests import hadoop_support as hs

pytestmark = [pytest.mark.integration, pytest.mark.hadoop, pytest.mark.timeout(400)]

VERSION = os.environ.get("HDFS_CHAOS_HADOOP_VERSION", fetch.DEFAULT_VERSION)

SCENARIO = """
name: hadoop-exact-kill-at-replica-created
description: dn2 is killed while its xceiver is held right after createRbw.
seed: 1
timeout: 90s
cluster:
  datanodes: 3
  hadoop_agent: true
  config:
    dfs.replication: 3
    dfs.blocksize: 1MiB
    dfs.heartbeat.interval: 300ms
    dfs.client.socket-timeout: 3s
workload:
  - {id: w1, client: c1, op: write, path: /data/f1, size: 256KiB}
faults:
  - id: kill-held
    kind: kill
    target: dn2
    at: {event: dn.replica.state, node: dn2, where: {reason: create}, exact: true}
"""


def _events(run_dir: str) -> dict[str, list[dict]]:
    out = {}
    folder = os.path.join(run_dir, "events")
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name)) as f:
            out[name[:-len(".jsonl")]] = [json.loads(line) for line in f if line.strip()]
    return out


def _held_run(text: str, name: str, tmp_path) -> tuple[dict, dict]:
    """Run the scenario `text` on Hadoop; its event logs and its one hold release."""
    outcome = run_unverified(load_scenario_text(text, name), results_dir=str(tmp_path),
                             system="hadoop", hadoop_version=VERSION)
    assert outcome.status == "completed", outcome.errors
    logs = _events(outcome.run_dir)
    release, = [e for e in logs["harness"] if e["event"] == "harness.hold.release"]
    return logs, release


def test_a_datanode_killed_while_held_at_replica_created_never_answers_the_setup(tmp_path):
    hs.fetched_or_skip(VERSION)
    if not fetch.agent_jar().is_file():
        pytest.skip(f"needs {fetch.agent_jar()}: python -m harness.systems.hadoop.fetch")
    logs, release = _held_run(SCENARIO, "exact.yaml", tmp_path)
    harness = logs["harness"]
    assert (release["held_node"], release["held_event"], release["fired"], release["late"]) == \
        ("dn2", "dn.replica.state", ["('inject', 'kill-held')"], False)
    inject = next(e for e in harness if e["event"] == "harness.fault.inject"
                  and e.get("fault") == "kill-held")
    # the held thread went on only once dn2's kill was in
    assert inject["ts"] <= release["ts"]
    created = [e for e in logs["dn2-agent"] if e["event"] == "dn.replica.state"
               and e["reason"] == "create"]
    assert len(created) == 1, created         # the held line; nothing after it
    block = created[0]["block"]
    assert created[0]["ts"] <= inject["ts"]
    # the held thread's next step, its setup answer upstream, never happened
    assert not [e for e in logs["dn2-agent"] if e["event"] == "dn.pipeline.setup"
                and e["block"] == block]
    # the client saw the failure at the setup of that block, dn2 blamed
    error = [e for e in logs.get("c1-agent", []) if e["event"] == "client.pipeline.error"
             and e["block"] == block]
    assert [(e["stage"], e["bad_node"]) for e in error] == [("PIPELINE_SETUP_CREATE", "dn2")]
    # and wrote the file on another block without dn2
    closes = [e for e in logs["nn-agent"] if e["event"] == "nn.file.close"]
    assert [(e["path"], e["len"]) for e in closes] == [("/data/f1", 256 * 1024)]


def test_a_datanode_killed_while_held_before_its_setup_answer_fails_the_setup(tmp_path):
    hs.fetched_or_skip(VERSION)
    if not fetch.agent_jar().is_file():
        pytest.skip(f"needs {fetch.agent_jar()}: python -m harness.systems.hadoop.fetch")
    text = SCENARIO.replace(
        "at: {event: dn.replica.state, node: dn2, where: {reason: create}, exact: true}",
        "at: {event: dn.pipeline.setup, node: dn2, exact: true}")
    assert "dn.pipeline.setup" in text
    logs, release = _held_run(text, "exact-setup.yaml", tmp_path)
    harness = logs["harness"]
    assert (release["held_node"], release["held_event"], release["late"]) == \
        ("dn2", "dn.pipeline.setup", False)
    inject = next(e for e in harness if e["event"] == "harness.fault.inject"
                  and e.get("fault") == "kill-held")
    assert inject["ts"] <= release["ts"]
    setup, = [e for e in logs["dn2-agent"] if e["event"] == "dn.pipeline.setup"]
    assert setup["ts"] <= inject["ts"] and setup["status"] == "SUCCESS"
    # dn2 had its downstream's answer but its own never reached upstream: the client's
    # setup of that block failed, blaming dn2, and no streaming error came before
    errors = [e for e in logs.get("c1-agent", []) + logs.get("c1-dfsclient", [])
              if e["event"] == "client.pipeline.error" and e["block"] == setup["block"]]
    assert [(e["stage"], e["bad_node"]) for e in errors] == [("PIPELINE_SETUP_CREATE", "dn2")]
    closes = [e for e in logs["nn-agent"] if e["event"] == "nn.file.close"]
    assert [(e["path"], e["len"]) for e in closes] == [("/data/f1", 256 * 1024)]
