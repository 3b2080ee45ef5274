"""Hadoop's quiescence poll starts the state tool's JVM only when the NameNode's JMX
counters moved since its last answer (or that answer is QUIET_REUSE_S old): the runner's
confirming poll and the polls of a run waiting for a lease to expire reuse it. No JVM:
the JMX bean and the state tool are replaced."""

from __future__ import annotations

import types

from harness.systems.hadoop import Hadoop
from harness.systems.hadoop import state as state_mod

BEAN = {"LastWrittenTransactionId": 16, "FilesTotal": 3, "BlocksTotal": 3,
        "NumFilesUnderConstruction": 0, "NumLiveDataNodes": 3, "CapacityUsed": 139783,
        "TotalLoad": 0, "PendingReplicationBlocks": 0, "UnderReplicatedBlocks": 0}
CLOSED = {"leases": [],
          "files": [{"path": "/data/f1", "closed": True, "holder": None, "replication": 3,
                     "blocks": [{"block": 1, "state": "COMPLETE",
                                 "locations": ["dn1", "dn2", "dn3"]}]}],
          "datanode_report": [{"dn": d, "state": "live"} for d in ("dn1", "dn2", "dn3")]}
OPEN = {"leases": [], "files": [{"path": "/data/f1", "closed": False, "holder": "DFSClient_x",
                   "replication": 3, "blocks": []}],
        "datanode_report": CLOSED["datanode_report"]}


def setup(monkeypatch, views):
    bean = dict(BEAN)
    cluster = types.SimpleNamespace(dir="/run/1", jmx=lambda node, q: dict(bean))
    calls = []

    def namenode_view(c, read_back=True):
        calls.append(c)
        return views[min(len(calls), len(views)) - 1]

    monkeypatch.setattr(state_mod, "namenode_view", namenode_view)
    ctx = types.SimpleNamespace(cluster=cluster)
    return Hadoop("3.4.2"), ctx, bean, calls


def test_the_confirming_poll_reuses_the_answer_while_the_namenode_did_not_move(monkeypatch):
    sut, ctx, bean, calls = setup(monkeypatch, [CLOSED])
    assert sut.not_quiet(ctx) is None
    assert sut.not_quiet(ctx) is None
    assert len(calls) == 1                         # one JVM for two polls


def test_a_moved_counter_asks_the_state_tool_again(monkeypatch):
    sut, ctx, bean, calls = setup(monkeypatch, [OPEN, CLOSED])
    assert sut.not_quiet(ctx) == "/data/f1 is still open (lease DFSClient_x)"
    assert sut.not_quiet(ctx) == "/data/f1 is still open (lease DFSClient_x)"
    assert len(calls) == 1
    bean["LastWrittenTransactionId"] = 19          # the lease recovery closed the file
    bean["NumFilesUnderConstruction"] = 0
    assert sut.not_quiet(ctx) is None
    assert len(calls) == 2


def test_an_old_answer_is_asked_again(monkeypatch):
    from harness.systems import hadoop
    sut, ctx, bean, calls = setup(monkeypatch, [CLOSED])
    monkeypatch.setattr(hadoop, "QUIET_REUSE_S", 0.0)
    sut.not_quiet(ctx)
    sut.not_quiet(ctx)
    assert len(calls) == 2


def test_queued_work_answers_without_the_state_tool(monkeypatch):
    sut, ctx, bean, calls = setup(monkeypatch, [CLOSED])
    bean["PendingReplicationBlocks"] = 1
    assert "still has work queued: 1 PendingReplicationBlocks" in sut.not_quiet(ctx)
    assert calls == []


def test_a_block_no_live_node_can_copy_is_not_work_queued(monkeypatch):
    """dn3 of three killed: Hadoop keeps the file's block under-replicated for good; with
    2 replicas on the 2 live nodes the cluster is quiescent, as on the mini-HDFS."""
    two = {"files": [{"path": "/data/f1", "closed": True, "holder": None, "replication": 3,
                      "blocks": [{"block": 1, "state": "COMPLETE",
                                  "locations": ["dn1", "dn2", "dn3"]}]}],
           "datanode_report": [{"dn": "dn1", "state": "live"}, {"dn": "dn2", "state": "live"},
                               {"dn": "dn3", "state": "dead"}]}
    sut, ctx, bean, calls = setup(monkeypatch, [two])
    bean.update(UnderReplicatedBlocks=1, NumLiveDataNodes=2, NumDeadDataNodes=1)
    assert sut.not_quiet(ctx) is None
    # with three live nodes and two replicas it is not
    three = {**two, "datanode_report": [{"dn": d, "state": "live"} for d in ("dn1", "dn2", "dn3")],
             "files": [{**two["files"][0], "blocks": [{"block": 1, "state": "COMPLETE",
                                                       "locations": ["dn1", "dn2"]}]}]}
    sut, ctx, bean, calls = setup(monkeypatch, [three])
    bean.update(UnderReplicatedBlocks=1)
    assert sut.not_quiet(ctx) == "block 1 of /data/f1 has 2 of 3 replicas"


def test_settle_polls_of_a_still_cluster_are_frequent_and_start_few_jvms(monkeypatch):
    """The runner's unreached detection polls every settle_poll_seconds and ends a run
    after two quiet polls in a row; a minute of polls of a cluster that does not move
    starts one state-tool JVM per QUIET_REUSE_S, not one per poll."""
    from harness.systems import hadoop
    now = [1000.0]
    import time as time_mod
    monkeypatch.setattr(time_mod, "monotonic", lambda: now[0])
    sut, ctx, bean, calls = setup(monkeypatch, [CLOSED])
    assert 2 * Hadoop.settle_poll_seconds <= 2.0
    polls = int(60 / Hadoop.settle_poll_seconds)
    for _ in range(polls):
        assert sut.not_quiet(ctx) is None
        now[0] += Hadoop.settle_poll_seconds
    assert len(calls) <= 60 / hadoop.QUIET_REUSE_S + 1 < polls


def _final_state_setup(monkeypatch, views):
    sut, ctx, bean, calls = setup(monkeypatch, views)
    reads = []
    real = state_mod.namenode_view

    def view(c, read_back=True):
        reads.append(read_back)
        return dict(real(c, read_back), readback={"/data/f1": {"len": 3}} if read_back else {})

    monkeypatch.setattr(state_mod, "namenode_view", view)
    monkeypatch.setattr(state_mod, "scan_storage", lambda path: [])
    monkeypatch.setattr(state_mod, "datanode_space", lambda c: {})
    ctx.cluster.datanodes = lambda: ["dn1"]
    ctx.cluster.nodes = {"dn1": {"storage": "/s"}}
    ctx.cluster.version = "3.4.2"
    return sut, ctx, bean, calls, reads


def test_the_final_state_reuses_the_read_back_of_the_quiet_poll(monkeypatch):
    sut, ctx, bean, calls, reads = _final_state_setup(monkeypatch, [CLOSED])
    assert sut.not_quiet(ctx) is None and sut.not_quiet(ctx) is None
    doc = sut.final_state(ctx)
    assert len(calls) == 1 and reads == [True]     # one JVM: the poll read every file
    assert doc["readback"] == {"/data/f1": {"len": 3}} and doc["files"] == CLOSED["files"]


def test_the_final_state_asks_again_when_the_namenode_moved_or_a_file_was_open(monkeypatch):
    sut, ctx, bean, calls, reads = _final_state_setup(monkeypatch, [CLOSED])
    sut.not_quiet(ctx)
    bean["LastWrittenTransactionId"] = 17
    sut.final_state(ctx)
    assert reads == [True, True]
    sut, ctx, bean, calls, reads = _final_state_setup(monkeypatch, [OPEN, CLOSED])
    bean["NumFilesUnderConstruction"] = 1
    assert sut.not_quiet(ctx) is not None          # an open file is not read back
    sut.final_state(ctx)
    assert reads == [False, True]
