"""Failure points of a real clean Hadoop 3.4.2 run with the Byteman agent on
(explore-bases/hadoop-write.yaml; its events, trimmed to the first block and the
close, in tests/unit/data/hadoop-3.4.2-explore-write): the agent's event of a step the
log reports too is the point, its nodes named as the mini-HDFS names them, and events
a trigger cannot wait for at their time are no points."""

from __future__ import annotations

import os
import shutil

from harness.explore.points import extract_points, read_run_events
from harness.explore.schedules import faults_at

RUN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                   "hadoop-3.4.2-explore-write")
B1, B2 = 1073741825, 1073741826


def points(run_dir=RUN):
    return extract_points(read_run_events(run_dir))


def test_the_agents_pipeline_setup_is_the_datanodes_point_not_the_logs_receive():
    ps = points()
    assert not [p for p in ps if p.event == "dn.pipeline.receive"]
    setups = [p for p in ps if p.event == "dn.pipeline.setup" and dict(p.where)["block"] == B1]
    # dn3, the last of [dn1, dn2, dn3], answers its connect-ack first
    assert [p.node for p in setups] == ["dn3", "dn2", "dn1"]
    assert all(dict(p.where)["stage"] == "PIPELINE_SETUP_CREATE" and p.nth == 1
               for p in setups)
    # the agent's upstream is the writer's DFSClient name: the pipeline's node before
    # it, the client c1 for the first
    ups = {p.node: dict(p.fields).get("upstream") for p in setups}
    assert ups == {"dn1": "c1", "dn2": "dn1", "dn3": "dn2"}
    assert dict(setups[0].fields)["pipeline"] == ("dn1", "dn2", "dn3")


def test_the_agents_rbw_and_the_logs_finalized_replica_are_both_points():
    states = sorted((p.node, dict(p.where)["state"]) for p in points()
                    if p.event == "dn.replica.state" and dict(p.where)["block"] == B1)
    assert states == [(dn, s) for dn in ("dn1", "dn2", "dn3") for s in ("FINALIZED", "RBW")]


def test_events_a_trigger_cannot_wait_for_are_no_points():
    events = read_run_events(RUN)
    assert any(e["event"] == "nn.file.create" for e in events)
    ps = points()
    kinds = {p.event for p in ps}
    # the adapter holds the create line's event until the handler's next line
    assert "nn.file.create" not in kinds
    assert {"nn.block.allocate", "client.pipeline.setup", "client.hflush", "client.close",
            "nn.file.complete"} <= kinds
    # complete() answers false, then true: the answer picks the call out
    completes = [(dict(p.where).get("ok"), p.nth) for p in ps if p.event == "nn.file.complete"]
    assert completes == [(False, 1), (True, 1)]


def test_hadoop_acks_are_sampled_first_and_middle_not_last():
    events = read_run_events(RUN)
    total = sum(1 for e in events if e["event"] == "client.ack" and e.get("block") == B2)
    assert total == 4
    acks = [p.nth for p in points() if p.event == "client.ack" and dict(p.where)["block"] == B2]
    assert acks == [1, 2]


def test_without_the_agent_the_logs_receive_is_the_point_and_its_socket_no_node(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    for name in os.listdir(run / "events"):
        if name.endswith("-agent.jsonl"):
            os.remove(run / "events" / name)
    ps = points(str(run))
    receive = [p for p in ps if p.event == "dn.pipeline.receive" and dict(p.where)["block"] == B1]
    assert sorted(p.node for p in receive) == ["dn1", "dn2", "dn3"]
    # the log's upstream is the sender's socket (/127.0.0.1:port), no node
    assert all(dict(p.fields).get("upstream") is None for p in receive)
    assert not [p for p in ps if p.event == "dn.pipeline.setup"]


def test_a_pipeline_setup_point_gets_the_links_of_its_pipeline():
    p = next(p for p in points() if p.event == "dn.pipeline.setup" and p.node == "dn2")
    faults = faults_at(p, ["dn1", "dn2", "dn3"], ["c1"], {"/data/f1": "c1"})
    links = {(f.target, f.relation) for f in faults if isinstance(f.target, tuple)}
    assert (("dn1", "dn2"), "link:upstream->self") in links
    assert (("dn2", "dn3"), "link:self->downstream") in links
    assert {f.relation for f in faults if f.target == "dn1"} == {"upstream"}


def test_a_receive_by_transfer_without_an_agent_setup_stays_a_point():
    """Hadoop placed a block on two nodes and copied it to the third: the third's
    "Receiving" line has no agent setup (its rules see client writes only)."""
    events = read_run_events(RUN)
    end = max(e["ts"] for e in events if e["node"] != "harness")
    events.append({"ts": end + 0.1, "node": "dn2", "role": "datanode", "seq": 99,
                   "event": "dn.pipeline.receive", "block": 1073741827, "gs": 1003,
                   "upstream": "/127.0.0.1:53862", "source": "hadoop-log"})
    receive = [(p.node, dict(p.where)["block"]) for p in extract_points(events)
               if p.event == "dn.pipeline.receive"]
    assert receive == [("dn2", 1073741827)]
