"""Recovery rules of the mini-HDFS held to Hadoop's, in-process (issue 17, deviations
1-9 and 11): no commit of a block under recovery, create with overwrite of an open file,
reader locations of COMMITTED blocks and RWR replicas, recoverRbw's checks, syncBlock's
answer filter, bytesAcked on an all-SUCCESS ack, no timer restarting a recovery, the
pipeline-recovery limit per packet, and what a NameNode restart restores and logs."""

from __future__ import annotations

import socket
import threading
import time
import types

import pytest

from minihdfs import wire
from minihdfs.client import DataStreamer, PipelineError
from hdfs_contract.config import Config, ConfigError
from minihdfs.datanode import BlockReceiver, DataNode
from hdfs_contract.events import EventLog
from minihdfs.namenode import COMMITTED, COMPLETE, UNDER_CONSTRUCTION, UNDER_RECOVERY
from minihdfs.routing import Routes
from minihdfs.rpc import (AlreadyBeingCreatedException, HdfsError, IOExceptionRemote,
                          LeaseExpiredException, RecoveryInProgressException,
                          ReplicaNotFoundException)
from tests.unit.test_minihdfs_fsdataset import dataset, restart, write
from tests.unit.test_minihdfs_lease_recovery import nn, open_with_block  # noqa: F401
from tests.unit.test_minihdfs_namenode import (namenodes, new_namenode,  # noqa: F401
                                               received)


# -- 1. a block under recovery is never committed ---------------------------------------

def test_old_writer_cannot_commit_a_block_under_recovery_after_a_soft_limit_takeover(nn):
    lb = open_with_block(nn)
    nn.leases.clock.now += 61                 # c1 stopped renewing: soft limit passed
    with pytest.raises(RecoveryInProgressException):
        nn.rpc_append("/f", "c2")             # recovery starts; c1 keeps the lease
    info = nn.blocks[lb["block"]]
    assert info.state == UNDER_RECOVERY and nn.files["/f"].client_name == "c1"
    last = {"block": lb["block"], "gs": lb["gs"], "len": 1000}
    with pytest.raises(IOExceptionRemote, match="under recovery"):
        nn.rpc_complete("/f", "c1", last=last)
    with pytest.raises(IOExceptionRemote, match="under recovery"):
        nn.rpc_addBlock("/f", "c1", previous=last)
    assert info.state == UNDER_RECOVERY and len(nn.files["/f"].blocks) == 1
    assert nn.events.named("nn.rpc.reject", op="complete", holder="c1")
    # recovery goes through and closes the file with a readable block
    nn.rpc_commitBlockSynchronization(lb["block"], info.recovery_id, info.recovery_id, 1000,
                                      True, False, lb["locations"])
    assert nn.rpc_getFileInfo("/f")["closed"] is True


def test_holder_recovering_its_own_file_cannot_complete_it_meanwhile(nn):
    lb = open_with_block(nn)
    assert nn.rpc_recoverLease("/f", "c1") is False
    with pytest.raises(IOExceptionRemote, match="under recovery"):
        nn.rpc_complete("/f", "c1", last={"block": lb["block"], "gs": lb["gs"], "len": 1000})
    assert nn.blocks[lb["block"]].state == UNDER_RECOVERY


# -- 3. create(overwrite=true) of an open file -------------------------------------------

def test_create_with_overwrite_deletes_an_open_file_and_its_lease(nn):
    lb = open_with_block(nn)
    nn.rpc_create("/f", "c2", overwrite=True)
    assert nn.files["/f"].client_name == "c2" and nn.files["/f"].blocks == []
    assert lb["block"] not in nn.blocks
    assert nn.events.named("nn.lease.remove", holder="c1", path="/f", reason="delete")
    assert nn.events.named("nn.file.delete", path="/f")
    with pytest.raises(LeaseExpiredException):   # the old writer is shut out
        nn.rpc_addBlock("/f", "c1", previous={"block": lb["block"], "gs": lb["gs"], "len": 10})


def test_create_without_overwrite_of_an_open_file_goes_through_lease_recovery(nn):
    open_with_block(nn)
    with pytest.raises(AlreadyBeingCreatedException):   # soft limit not passed
        nn.rpc_create("/f", "c2")
    nn.leases.clock.now += 61
    with pytest.raises(RecoveryInProgressException):
        nn.rpc_create("/f", "c2")
    assert nn.files["/f"].client_name == "c1"
    assert nn.events.named("nn.lease.expired", limit="soft", path="/f")


# -- 4. COMMITTED blocks are readable from their RBW replicas ---------------------------

def test_committed_block_gives_readers_its_pipeline(nn):
    lb = open_with_block(nn, report="RBW")
    last = {"block": lb["block"], "gs": lb["gs"], "len": 1000}
    assert nn.rpc_complete("/f", "c1", last=last) is False
    assert nn.blocks[lb["block"]].state == COMMITTED
    [blk] = nn.rpc_getBlockLocations("/f")["blocks"]
    assert blk["state"] == COMMITTED and sorted(blk["locations"]) == sorted(lb["locations"])


# -- 8. no recovery timer, and the locations sent with few fresh nodes --------------------

def test_no_namenode_timer_restarts_a_recovery(tmp_path, namenodes):
    # Hadoop has no such timer (and no dfs.namenode.recovery.timeout): a stuck recovery
    # is retried by the lease monitor at the next hard limit or by a later recoverLease
    node = new_namenode(tmp_path / "nn", {"dfs.namenode.heartbeat.recheck-interval": "50ms",
                                          "dfs.namenode.lease-recheck-interval-ms": "50ms"})
    namenodes.append(node)
    lb = open_with_block(node)
    assert node.rpc_recoverLease("/f", "c2") is False
    time.sleep(0.6)                               # 12 monitor rounds, 6 x the old timeout
    assert len(node.events.named("nn.recovery.start", block=lb["block"])) == 1
    with pytest.raises(ConfigError, match="unknown configuration key"):
        Config({"dfs.namenode.recovery.timeout": "5s"})


def test_recovery_sends_every_location_when_fewer_than_two_are_fresh(nn):
    lb = open_with_block(nn)
    dead, stale = lb["locations"][1], lb["locations"][2]
    nn.datanodes[dead].dead = True
    nn.datanodes[stale].stale = True
    assert nn.rpc_recoverLease("/f", "c2") is False
    info = nn.blocks[lb["block"]]
    assert info.primary == lb["locations"][0]
    [cmd] = [c for c in nn.rpc_sendHeartbeat(info.primary)["commands"] if c["type"] == "recover"]
    assert sorted(cmd["locations"]) == sorted(lb["locations"])


# -- 9. NameNode restart -----------------------------------------------------------------

def test_restart_reopens_a_complete_last_block_and_logs_the_restored_leases(tmp_path, namenodes):
    nn1 = new_namenode(tmp_path / "nn")
    namenodes.append(nn1)
    nn1.rpc_create("/f", "c1", replication=1)
    lb = nn1.rpc_addBlock("/f", "c1")
    last = {"block": lb["block"], "gs": lb["gs"], "len": 100}
    assert nn1.rpc_complete("/f", "c1", last=last) is False    # COMMITTED, file open
    received(nn1, lb["locations"][0], lb["block"], lb["gs"], 100)
    assert nn1.blocks[lb["block"]].state == COMPLETE
    nn1.stop()
    nn2 = new_namenode(tmp_path / "nn")
    namenodes.append(nn2)
    assert nn2.files["/f"].under_construction
    assert nn2.blocks[lb["block"]].state == UNDER_CONSTRUCTION
    assert nn2.events.named("nn.lease.add", holder="c1", path="/f")
    # the writer's retried complete still closes the file once the replica is reported
    received(nn2, lb["locations"][0], lb["block"], lb["gs"], 100)
    assert nn2.rpc_complete("/f", "c1", last=last) is True


def test_retried_complete_matches_on_block_id_and_gs_only(nn):
    lb = open_with_block(nn, report="FINALIZED", length=500)
    last = {"block": lb["block"], "gs": lb["gs"], "len": 500}
    assert nn.rpc_complete("/f", "c1", last=last) is True
    assert nn.rpc_complete("/f", "c1", last=dict(last, len=400)) is True
    with pytest.raises(LeaseExpiredException):
        nn.rpc_complete("/f", "c1", last=dict(last, gs=lb["gs"] + 1))


# -- 11. configuration keys nothing read -------------------------------------------------

@pytest.mark.parametrize("key", ["dfs.client.max.block.acquire.failures"])
def test_keys_that_nothing_reads_are_refused(key):
    with pytest.raises(ConfigError, match="unknown configuration key"):
        Config({key: 1})


def test_a_key_only_hadoop_reads_is_refused_on_a_scenario_the_mini_hdfs_runs(tmp_path):
    from harness.scenario import check_scenario_file
    body = ("name: s\ncluster:\n  config: {dfs.datanode.socket.write.timeout: 20s}\n"
            "workload:\n  - {id: w1, client: c1, op: write, path: /f, size: 1KiB}\n")
    both = tmp_path / "both.yaml"
    both.write_text(body)
    scenario, issues = check_scenario_file(both)
    assert scenario is None and any("only Hadoop reads it" in str(i) for i in issues)
    hadoop = tmp_path / "hadoop.yaml"
    hadoop.write_text(body.replace("cluster:\n", "cluster:\n  system: hadoop\n")
                      + "systems: [hadoop]\nsystems_reason: the key\n")
    scenario, issues = check_scenario_file(hadoop)
    assert scenario is not None and not issues


# -- 5. RWR replicas are not readable ----------------------------------------------------

def _datanode(tmp_path) -> DataNode:
    routes = Routes({"nn": {"rpc": "127.0.0.1:1"}})
    return DataNode("dn1", "127.0.0.1:0", "127.0.0.1:0", routes, Config(),
                    str(tmp_path / "dn1"), EventLog(None, "dn1", "datanode"))


def test_rwr_replica_has_no_visible_length_and_is_not_read(tmp_path):
    dn = _datanode(tmp_path)
    replica = dn.data.create_rbw(7, 1001)
    write(dn.data, replica, b"x" * 1000)
    replica.bytes_acked = 1000
    assert dn.rpc_getReplicaVisibleLength(7) == 1000
    dn.data = restart(tmp_path / "dn1")                 # the DataNode restarted: RWR
    assert dn.data.get(7).state == "RWR"
    with pytest.raises(HdfsError):
        dn.rpc_getReplicaVisibleLength(7)
    a, b = socket.socketpair()
    with a, b:
        dn._read_block(a, {"block": 7, "gs": 1001, "offset": 0, "len": 1000})
        reply = wire.recv_message(b)
    assert reply["status"] == "ERROR"


class _StuckWriter:
    """A BlockReceiver that does not stop until let go (its downstream hangs)."""
    def __init__(self):
        self.let_go = threading.Event()
        self.stop_called = False

    def stop(self, timeout):
        self.stop_called = True
        self.let_go.wait(timeout)


def test_a_deletion_is_carried_out_off_the_heartbeat_thread_and_leaves_the_writer(tmp_path):
    """DNA_INVALIDATE is carried out off the heartbeat thread (HDFS deletes through
    FsDatasetAsyncDiskService; heartbeats that waited on disk work got a DataNode
    declared dead: the explorer's write-3-blocks finding), and, as
    FsDatasetImpl.invalidate, it does not stop the replica's writer."""
    dn = _datanode(tmp_path)
    replica = dn.data.create_rbw(7, 1001)
    write(dn.data, replica, b"x" * 100)
    stuck = replica.writer = _StuckWriter()
    command = {"type": "invalidate", "blocks": [{"block": 7, "gs": 1001}]}
    heartbeat = threading.Thread(target=dn._process_command, args=(command,))
    heartbeat.start()
    heartbeat.join(10)
    try:
        assert not heartbeat.is_alive(), "the heartbeat thread did the deletion"
        assert dn.data.get(7) is replica       # queued for the deleter, not done here
        deleter = threading.Thread(target=dn._deleter, daemon=True)
        deleter.start()
        deadline = time.monotonic() + 10
        while dn.data.get(7) is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert dn.data.get(7) is None
        assert not stuck.stop_called and replica.writer is stuck   # never stopped
        assert [(r["block"], r["kind"]) for r in dn._ibr] == [(7, "deleted")]
    finally:
        stuck.let_go.set()
        dn._stopped.set()


def test_a_receiver_whose_replica_was_deleted_acks_on_but_not_its_last_packet(tmp_path):
    """After FsDatasetImpl.invalidate the BlockReceiver writes on: its packets are acked,
    but finalizeBlock finds no replica (ReplicaNotFoundException) and the PacketResponder
    sends no ack for the last packet; the stream closes and the writer sees the error."""
    dn = _datanode(tmp_path)
    emitted = []
    dn.emit = lambda event, **fields: emitted.append(dict(fields, event=event))
    replica = dn.data.create_rbw(9, 1001)
    up_a, up_b = socket.socketpair()
    with up_a, up_b:
        receiver = BlockReceiver(dn, up_a, {"block": 9, "gs": 1001, "stage": "DATA_STREAMING"})
        receiver.replica = replica
        replica.writer = receiver
        assert dn.data.invalidate(9, 1001) is True
        responder = threading.Thread(target=receiver._packet_responder)
        responder.start()
        receiver.acks.put((wire.Packet(0, 0, b"y" * 512, b"\0" * 4), wire.SUCCESS))
        assert wire.FrameReader(up_b, 4096).ack() == (0, [wire.SUCCESS])
        receiver.acks.put((wire.Packet(1, 512, b"", b"", wire.FLAG_LAST), wire.SUCCESS))
        responder.join(5)
        assert not responder.is_alive()
        up_b.settimeout(0.3)
        with pytest.raises(socket.timeout):
            up_b.recv(1)                               # no ack for the last packet
    [err] = [e for e in emitted if e["event"] == "dn.pipeline.error"]
    assert err["error"] == "ReplicaNotFoundException" and err["reason"].startswith("finalize")
    assert dn.data.get(9) is None and not any(e.get("state") == "FINALIZED" for e in emitted)


# -- 6. recoverRbw's checks --------------------------------------------------------------

def _rbw(tmp_path, on_disk: int, acked: int, gs: int = 1001):
    ds = dataset(tmp_path / "dn")
    replica = ds.create_rbw(5, gs)
    write(ds, replica, bytes(range(256)) * (on_disk // 256) + b"z" * (on_disk % 256))
    replica.bytes_acked = acked
    return ds, replica


def test_recover_rbw_keeps_what_this_node_acked_beyond_the_clients_count(tmp_path):
    ds, replica = _rbw(tmp_path, on_disk=3000, acked=2048)
    ds.recover_rbw(5, 1001, 1002, 1024, 3000)
    assert (replica.num_bytes, replica.bytes_acked, replica.gs) == (2048, 2048, 1002)


def test_recover_rbw_refuses_fewer_acked_bytes_than_the_client_saw_acked(tmp_path):
    ds, replica = _rbw(tmp_path, on_disk=3000, acked=1024)
    with pytest.raises(ReplicaNotFoundException, match="unmatched length"):
        ds.recover_rbw(5, 1001, 1002, 2048, 3000)
    assert replica.num_bytes == 3000 and replica.gs == 1001


def test_recover_rbw_refuses_more_bytes_than_the_client_sent(tmp_path):
    ds, _ = _rbw(tmp_path, on_disk=3000, acked=3000)
    with pytest.raises(ReplicaNotFoundException, match="unmatched length"):
        ds.recover_rbw(5, 1001, 1002, 1024, 2048)


@pytest.mark.parametrize("replica_gs", [1000, 1003])
def test_recover_rbw_refuses_a_gs_outside_old_to_new(tmp_path, replica_gs):
    ds, _ = _rbw(tmp_path, on_disk=1024, acked=1024, gs=replica_gs)
    with pytest.raises(ReplicaNotFoundException, match="GS range"):
        ds.recover_rbw(5, 1001, 1002, 1024, 1024)


# -- 7. syncBlock's answers, and bytesAcked on an all-SUCCESS ack ------------------------

def test_sync_block_ignores_empty_and_older_answers(tmp_path):
    dn = _datanode(tmp_path)
    calls = []
    dn._call_dn = lambda peer, op, **args: calls.append((peer, op, args))
    dn.nn = lambda: types.SimpleNamespace(call=lambda op, **args: calls.append(("nn", op, args)))
    answers = [{"dn": "dn1", "state": "RBW", "len": 0, "gs": 1001},
               {"dn": "dn2", "state": "RBW", "len": 700, "gs": 1001},
               {"dn": "dn3", "state": "RBW", "len": 500, "gs": 1000},
               {"dn": "dn4", "state": "RBW", "len": 900, "gs": 1001}]
    dn._sync_block(5, 1005, answers, None, block_gs=1001)
    commit = [args for who, op, args in calls if op == "commitBlockSynchronization"][0]
    assert commit["new_len"] == 700 and sorted(commit["targets"]) == ["dn2", "dn4"]
    updated = sorted(peer for peer, op, _ in calls if op == "updateReplicaUnderRecovery")
    assert updated == ["dn2", "dn4"]


def test_sync_block_with_only_empty_answers_removes_the_block(tmp_path):
    dn = _datanode(tmp_path)
    calls = []
    dn.nn = lambda: types.SimpleNamespace(call=lambda op, **args: calls.append((op, args)))
    dn._sync_block(5, 1005, [{"dn": "dn1", "state": "RBW", "len": 0, "gs": 1001},
                             {"dn": "dn2", "state": "RWR", "len": 800, "gs": 999}],
                   None, block_gs=1001)
    [(op, args)] = calls
    assert op == "commitBlockSynchronization" and args["delete"] is True


def _recovery(tmp_path, answers: dict):
    """A primary whose initReplicaRecovery calls get `answers[dn]` (an info dict, or an
    exception to raise); returns (datanode, NameNode calls, emitted events)."""
    dn = _datanode(tmp_path)
    calls, emitted = [], []

    def call_dn(peer, op, **args):
        if op == "initReplicaRecovery":
            answer = answers[peer]
            if isinstance(answer, Exception):
                raise answer
            return dict(answer)
        calls.append((peer, op, args))
        return {}
    dn._call_dn = call_dn
    dn.nn = lambda: types.SimpleNamespace(call=lambda op, **args: calls.append(("nn", op, args)))
    dn.emit = lambda event, **fields: emitted.append(dict(fields, event=event))
    return dn, calls, emitted


def _recover(dn, locations):
    dn.recover_block({"block": 5, "gs": 1001, "recovery_id": 1005, "locations": locations})


def test_recovery_goes_on_when_only_some_locations_fail(tmp_path):
    """3.x BlockRecoveryWorker.recover: errors are counted, and the recovery aborts only
    if every location failed ("All datanodes failed"). One failure and two locations
    without the replica: syncBlock with nothing to sync removes the block."""
    dn, calls, emitted = _recovery(tmp_path, {
        "dn1": IOExceptionRemote("connection refused"),
        "dn2": ReplicaNotFoundException("no replica of block 5"),
        "dn3": ReplicaNotFoundException("no replica of block 5")})
    _recover(dn, ["dn1", "dn2", "dn3"])
    [commit] = [args for who, op, args in calls if op == "commitBlockSynchronization"]
    assert commit["delete"] is True and commit["targets"] == []


def test_recovery_aborts_when_every_location_failed(tmp_path):
    dn, calls, emitted = _recovery(tmp_path, {dn: IOExceptionRemote("down")
                                              for dn in ("dn1", "dn2")})
    _recover(dn, ["dn1", "dn2"])
    assert calls == []
    assert any("All datanodes failed" in e.get("reason", "") for e in emitted
               if e["event"] == "dn.recovery.error" and "peer" not in e)


def test_recovery_syncs_with_the_locations_that_answered(tmp_path):
    dn, calls, _ = _recovery(tmp_path, {
        "dn1": IOExceptionRemote("down"),
        "dn2": {"state": "RBW", "len": 700, "gs": 1001},
        "dn3": {"state": "RBW", "len": 900, "gs": 1001}})
    _recover(dn, ["dn1", "dn2", "dn3"])
    [commit] = [args for who, op, args in calls if op == "commitBlockSynchronization"]
    assert commit["delete"] is False and commit["new_len"] == 700
    assert sorted(commit["targets"]) == ["dn2", "dn3"]


def test_temporary_replica_goes_under_recovery_and_is_left_out_of_the_sync(tmp_path):
    """FsDatasetImpl.initReplicaRecoveryImpl stops a TEMPORARY replica's writer and puts
    it under recovery like any other; BlockRecoveryWorker counts it as a candidate but
    syncs only RWR or better, so a block whose only replica with data is TEMPORARY is
    not removed: the recovery fails ("none is in RWR or better state")."""
    ds = dataset(tmp_path / "dn")
    replica = ds.create_temporary(5, 1001)
    write(ds, replica, b"t" * 600)
    replica.writer = writer = _StuckWriter()
    writer.let_go.set()
    info = ds.init_replica_recovery(5, 1001, 1005, stop_timeout=1.0)
    assert info == {"state": "TEMPORARY", "len": 600, "gs": 1001}
    assert replica.state == "RUR" and writer.stop_called and replica.writer is None
    dn, calls, emitted = _recovery(tmp_path, {
        "dn1": info, "dn2": ReplicaNotFoundException("no replica of block 5")})
    _recover(dn, ["dn1", "dn2"])
    assert calls == []                          # no removal, no commit
    assert any("none is in RWR or better state" in e.get("reason", "") for e in emitted
               if e["event"] == "dn.recovery.error")


def test_sync_block_aborts_only_when_every_update_failed(tmp_path):
    """syncBlock: participants whose updateReplicaUnderRecovery failed are left out of
    the commit; only if all failed is nothing committed ("Cannot recover ...")."""
    dn, calls, emitted = _recovery(tmp_path, {})

    def call_dn(peer, op, **args):
        if peer == "dn1":
            raise IOExceptionRemote("gone")
        calls.append((peer, op, args))
    dn._call_dn = call_dn
    answers = [{"dn": d, "state": "RBW", "len": 700, "gs": 1001} for d in ("dn1", "dn2")]
    dn._sync_block(5, 1005, answers, None, block_gs=1001)
    [commit] = [args for who, op, args in calls if op == "commitBlockSynchronization"]
    assert commit["targets"] == ["dn2"]
    calls.clear()
    with pytest.raises(OSError, match=r"Cannot recover block 5, the following datanodes failed: \['dn1'\]"):
        dn._sync_block(5, 1005, answers[:1], None, block_gs=1001)
    assert calls == []


def test_datanode_advances_bytes_acked_only_on_an_all_success_ack(tmp_path):
    dn = _datanode(tmp_path)
    replica = dn.data.create_rbw(9, 1001)
    write(dn.data, replica, b"y" * 1024)
    replica.bytes_acked = 0
    up_a, up_b = socket.socketpair()
    down_a, down_b = socket.socketpair()
    with up_a, up_b, down_a, down_b:
        receiver = BlockReceiver(dn, up_a, {"block": 9, "gs": 1001, "stage": "DATA_STREAMING",
                                            "targets": ["dn2"]})
        receiver.replica, receiver.mirror = replica, down_a
        responder = threading.Thread(target=receiver._packet_responder)
        responder.start()
        receiver.acks.put((wire.Packet(0, 0, b"y" * 512, b"\0" * 4), wire.SUCCESS))
        down_b.sendall(wire.encode_ack(0, [wire.ERROR]))          # downstream failed
        assert wire.FrameReader(up_b, 4096).ack() == (0, [wire.SUCCESS, wire.ERROR])
        receiver.acks.put(None)
        responder.join(5)
    assert replica.bytes_acked == 0


# -- 2. the pipeline-recovery limit counts failures in a row for the same packet ---------

def _streamer(max_retries: int = 5) -> DataStreamer:
    conf = Config({"dfs.client.pipeline.recovery.max-retries": max_retries})
    stream = types.SimpleNamespace(path="/f", client=types.SimpleNamespace(conf=conf),
                                   emit=lambda *a, **k: None)
    streamer = DataStreamer(stream)
    streamer.block = {"block": 1, "gs": 1001, "len": 0}
    return streamer


def test_recovery_count_starts_again_when_acks_advanced_since_the_last_failure():
    streamer = _streamer()
    for seqno in range(20):                   # a failure after every acked packet
        streamer.last_acked_seqno = seqno
        streamer.count_recovery()
    assert streamer.recovery_count == 1


def test_more_than_five_recoveries_for_the_same_packet_fail_the_stream():
    streamer = _streamer()
    streamer.last_acked_seqno = 3
    for _ in range(5):
        streamer.count_recovery()
    with pytest.raises(PipelineError, match="5 times for the same packet"):
        streamer.count_recovery()


def test_a_restarting_node_does_not_count_toward_the_recovery_limit():
    """3.x DataStreamer: `if (!errorState.isRestartingNode() && ++pipelineRecoveryCount >
    maxPipelineRecoveryRetries)`: waiting for a node that sent the OOB RESTART ack takes
    as many rounds as the restart takes, none of them counted."""
    streamer = _streamer()
    streamer.last_acked_seqno = 3
    streamer.count_recovery()                 # a real failure: 1
    streamer.restarting_index = 0
    for _ in range(10):                       # the restart rounds for the same packet
        streamer.count_recovery()
    assert streamer.recovery_count == 1
    streamer.restarting_index = -1
    for _ in range(4):
        streamer.count_recovery()
    with pytest.raises(PipelineError, match="5 times for the same packet"):
        streamer.count_recovery()


# -- 10. a replica saved by a shutdown for restart ----------------------------------------

def test_rbw_saved_for_a_restart_loads_as_rbw_only_before_its_deadline(tmp_path):
    ds = dataset(tmp_path / "a")
    replica = ds.create_rbw(3, 1001)
    write(ds, replica, b"q" * 1500)
    assert ds.save_for_restart(replica, 50.0)
    back = restart(tmp_path / "a").get(3)
    assert (back.state, back.num_bytes, back.bytes_acked) == ("RBW", 1500, 1500)
    assert restart(tmp_path / "a").get(3).state == "RWR"    # the marker is used once
    ds = dataset(tmp_path / "b")
    replica = ds.create_rbw(4, 1001)
    write(ds, replica, b"q" * 100)
    assert ds.save_for_restart(replica, -1.0)                 # back too late
    assert restart(tmp_path / "b").get(4).state == "RWR"
