"""The Hadoop log mapper (harness/systems/hadoop/logmap.py) on real log lines: every line
of ../shared/notes/hadoop-3.4.1-log-lines.md (copied here verbatim), a whole real run of
Hadoop 3.4.2 (tests/unit/data/hadoop-3.4.2-lease-recovery: a write, an append, a file
kept open and its lease recovered by a second client), and lines that must not map."""

from __future__ import annotations

import os

import pytest

from harness.reconcile.checks import CHECKS
from harness.systems.hadoop import logmap
from harness.systems.hadoop.logmap import LogMapper, map_lines, parse_line

HOSTS = {"127.0.0.1:10010": "dn1", "127.0.0.1:10020": "dn2", "127.0.0.1:10030": "dn3"}
BP = "BP-1753042130-127.0.0.1-1795460682483"

# -- the notes' lines (Hadoop 3.4.1), verbatim ------------------------------------------

NN_ALLOCATE = "2026-11-23 19:10:44,240 INFO [IPC Server handler 3 on default port 9000] StateChange: BLOCK* allocate blk_1073741832_1015, replicas=127.0.0.1:10030, 127.0.0.1:10010, 127.0.0.1:10020 for /bench/c1"
NN_FSYNC = "2026-11-23 19:07:49,440 INFO [IPC Server handler 2 on default port 9000] StateChange: BLOCK* fsync: /t/p3 for DFSClient_NONMAPREDUCE_-1609533089_1"
CL_BAD_ACK = f"java.io.IOException: Bad response ERROR for {BP}:blk_1073741830_1011 from datanode DatanodeInfoWithStorage[127.0.0.1:10010,DS-1b4c0c20-a327-4599-add5-82c896c88e23,DISK]"
CL_ERROR_RECOVERY = f"2026-11-23 19:06:47,793 WARN [DataStreamer for file /t/h1 block {BP}:blk_1073741827_1005] DataStreamer: Error Recovery for {BP}:blk_1073741827_1005 in pipeline [DatanodeInfoWithStorage[127.0.0.1:10030,DS-58b84c57-558c-48c4-a8ce-9190d7804444,DISK], DatanodeInfoWithStorage[127.0.0.1:10010,DS-1b4c0c20-a327-4599-add5-82c896c88e23,DISK], DatanodeInfoWithStorage[127.0.0.1:10020,DS-088355e8-44c1-4b14-8581-4b90b4463844,DISK]]: datanode 0(DatanodeInfoWithStorage[127.0.0.1:10030,DS-58b84c57-558c-48c4-a8ce-9190d7804444,DISK]) is bad."
CL_NO_REPLACEMENT = "java.io.IOException: Failed to replace a bad datanode on the existing pipeline due to no more good datanodes being available to try. (Nodes: current=[DatanodeInfoWithStorage[127.0.0.1:10020,DS-088355e8-44c1-4b14-8581-4b90b4463844,DISK], DatanodeInfoWithStorage[127.0.0.1:10030,DS-58b84c57-558c-48c4-a8ce-9190d7804444,DISK]], original=[DatanodeInfoWithStorage[127.0.0.1:10020,DS-088355e8-44c1-4b14-8581-4b90b4463844,DISK], DatanodeInfoWithStorage[127.0.0.1:10030,DS-58b84c57-558c-48c4-a8ce-9190d7804444,DISK]]). The current failed datanode replacement policy is DEFAULT, and a client may configure this via 'dfs.client.block.write.replace-datanode-on-failure.policy' in its configuration."
CL_BEST_EFFORT = f"2026-11-23 19:09:14,612 WARN [DataStreamer for file /t/d1 block {BP}:blk_1073741830_1011] DataStreamer/DataStreamer: Failed to replace datanode. Continue with the remaining datanodes since dfs.client.block.write.replace-datanode-on-failure.best-effort is set to true."
CL_PIPELINE = "2026-11-23 19:09:24,653 DEBUG [Thread-5] DataStreamer/DataStreamer: pipeline = [DatanodeInfoWithStorage[127.0.0.1:10020,DS-088355e8-44c1-4b14-8581-4b90b4463844,DISK], DatanodeInfoWithStorage[127.0.0.1:10030,DS-58b84c57-558c-48c4-a8ce-9190d7804444,DISK]], blk_1073741831_1013"
NN_BUMP = f"2026-11-23 19:07:49,863 INFO [IPC Server handler 4 on default port 9000] FSNamesystem: bumpBlockGenerationStamp({BP}:blk_1073741829_1010, client=DFSClient_NONMAPREDUCE_-1609533089_1) success"
NN_UPDATE = "2026-11-23 19:07:49,886 INFO [IPC Server handler 1 on default port 9000] FSNamesystem: updatePipeline(blk_1073741829_1009, newGS=1010, newLength=8388608, newNodes=[127.0.0.1:10010, 127.0.0.1:10020], client=DFSClient_NONMAPREDUCE_-1609533089_1)"
NN_UPDATE_OK = "2026-11-23 19:07:49,893 INFO [IPC Server handler 1 on default port 9000] FSNamesystem: updatePipeline(blk_1073741829_1009 => blk_1073741829_1010) success"
DN_WRITE_STAGE = f"2026-11-23 19:09:14,630 DEBUG [DataXceiver for client DFSClient_NONMAPREDUCE_979565021_1 at /127.0.0.1:41676 [Receiving block {BP}:blk_1073741830_1011]] DataNode/DataXceiver: opWriteBlock: stage=PIPELINE_SETUP_STREAMING_RECOVERY, clientname=DFSClient_NONMAPREDUCE_979565021_1"
DN_RECOVER_RBW = f"2026-11-23 19:07:49,872 INFO [DataXceiver for client DFSClient_NONMAPREDUCE_-1609533089_1 at /127.0.0.1:35962 [Receiving block {BP}:blk_1073741829_1009]] FsDatasetImpl: At localhost:10010, Recovering ReplicaBeingWritten, blk_1073741829_1009, RBW"
DN_TRUNCATE = f"2026-11-23 19:09:14,631 INFO [DataXceiver for client DFSClient_NONMAPREDUCE_979565021_1 at /127.0.0.1:41676 [Receiving block {BP}:blk_1073741830_1011]] LocalReplica/LocalReplica: truncateBlock: blockFile=STORAGE/dn2/data/current/{BP}/current/rbw/blk_1073741830, metaFile=STORAGE/dn2/data/current/{BP}/current/rbw/blk_1073741830_1011.meta, oldlen=5420032, newlen=4194304"
DN_CLIENTTRACE = f"2026-11-23 19:10:49,808 INFO [PacketResponder: {BP}:blk_1073741832_1015, type=HAS_DOWNSTREAM_IN_PIPELINE, downstreams=1:[127.0.0.1:10020]] clienttrace: src: /127.0.0.1:49032, dest: /127.0.0.1:10010, volume: STORAGE/dn1/data, bytes: 134217728, op: HDFS_WRITE, cliID: DFSClient_NONMAPREDUCE_2008754478_1, offset: 0, srvID: 7cc1bea4-6799-44a9-9bb1-79402dbeecf3, blockid: {BP}:blk_1073741832_1015, duration(ns): 4566422566"
NN_EXPIRED = "2026-11-23 19:06:07,773 INFO [org.apache.hadoop.hdfs.server.namenode.LeaseManager$Monitor@4eba373c] LeaseManager: [Lease.  Holder: DFSClient_NONMAPREDUCE_655657776_1, pending creates: 1] has expired hard limit"
NN_RECOVER_LEASE = "2026-11-23 19:09:27,475 INFO [IPC Server handler 0 on default port 9000] FSNamesystem/FSNamesystem: recoverLease: [Lease.  Holder: DFSClient_NONMAPREDUCE_1123809683_1, pending creates: 1], src=/t/d2 from client DFSClient_NONMAPREDUCE_1123809683_1"
NN_RELEASE = "2026-11-23 19:09:27,477 WARN [IPC Server handler 0 on default port 9000] StateChange/FSNamesystem: DIR* NameSystem.internalReleaseLease: File /t/d2 has not been closed. Lease recovery is in progress. RecoveryId = 1014 for block blk_1073741831_1013"
DN_RECOVER_BLOCK = f"2026-11-23 19:09:27,835 INFO [org.apache.hadoop.hdfs.server.datanode.BlockRecoveryWorker$1@18a35e0b] DataNode/BlockRecoveryWorker: BlockRecoveryWorker: NameNode at localhost/127.0.0.1:9000 calls recoverBlock({BP}:blk_1073741831_1013, targets=[DatanodeInfoWithStorage[127.0.0.1:10020,null,null], DatanodeInfoWithStorage[127.0.0.1:10030,null,null]], newGenerationStamp=1014, newBlock=null, isStriped=false)"
DN_INIT_CHANGE = "2026-11-23 19:09:28,163 INFO [IPC Server handler 3 on default port 10021] FsDatasetImpl/FsDatasetImpl: initReplicaRecovery: changing replica state for blk_1073741831_1013 from RBW to RUR"
DN_SYNC_LIST = f"2026-11-23 19:09:28,186 INFO [org.apache.hadoop.hdfs.server.datanode.BlockRecoveryWorker$1@18a35e0b] DataNode/BlockRecoveryWorker$RecoveryTaskContiguous: BlockRecoveryWorker: block={BP}:blk_1073741831_1013 (length=2097152), isTruncateRecovery=false, syncList=[block:blk_1073741831_1013[numBytes=2161664,originalReplicaState=RBW] node:DatanodeInfoWithStorage[127.0.0.1:10020,null,null], block:blk_1073741831_1013[numBytes=2161664,originalReplicaState=RBW] node:DatanodeInfoWithStorage[127.0.0.1:10030,null,null]]"
DN_SYNC_REPLICA_DEBUG = f"2026-11-23 19:09:28,186 DEBUG [org.apache.hadoop.hdfs.server.datanode.BlockRecoveryWorker$1@18a35e0b] DataNode/BlockRecoveryWorker$RecoveryTaskContiguous: syncBlock replicaInfo: block={BP}:blk_1073741831_1013, from datanode DatanodeInfoWithStorage[127.0.0.1:10020,null,null], receivedState=RBW, receivedLength=2161664, bestState=RBW"
DN_SYNC_BEST = f"2026-11-23 19:09:28,187 INFO [org.apache.hadoop.hdfs.server.datanode.BlockRecoveryWorker$1@18a35e0b] DataNode/BlockRecoveryWorker$RecoveryTaskContiguous: BlockRecoveryWorker: block={BP}:blk_1073741831_1013 (length=2097152), bestState=RBW, newBlock={BP}:blk_1073741831_1014 (length=2161664), participatingList=[block:blk_1073741831_1013[numBytes=2161664,originalReplicaState=RBW] node:DatanodeInfoWithStorage[127.0.0.1:10020,null,null], block:blk_1073741831_1013[numBytes=2161664,originalReplicaState=RBW] node:DatanodeInfoWithStorage[127.0.0.1:10030,null,null]]"
DN_UPDATE_REPLICA = f"2026-11-23 19:09:28,194 INFO [IPC Server handler 4 on default port 10021] FsDatasetImpl/FsDatasetImpl: updateReplica: {BP}:blk_1073741831_1013, recoveryId=1014, length=2161664, replica=ReplicaUnderRecovery, blk_1073741831_1013, RUR"
DN_COMMIT_DEBUG = f"2026-11-23 19:09:28,200 DEBUG [org.apache.hadoop.hdfs.server.datanode.BlockRecoveryWorker$1@18a35e0b] DataNode/BlockRecoveryWorker$RecoveryTaskContiguous: Datanode triggering commitBlockSynchronization, block={BP}:blk_1073741831_1013, newGs=1014, newLength=2161664"
NN_COMMIT = f"2026-11-23 19:09:28,218 INFO [IPC Server handler 0 on default port 9000] FSNamesystem/FSNamesystem: commitBlockSynchronization(oldBlock={BP}:blk_1073741831_1013, newgenerationstamp=1014, newlength=2161664, newtargets=[127.0.0.1:10020, 127.0.0.1:10030], closeFile=true, deleteBlock=false)"
NN_COMMIT_OK = f"2026-11-23 19:09:28,221 INFO [IPC Server handler 0 on default port 9000] FSNamesystem/FSNamesystem: commitBlockSynchronization(oldBlock={BP}:blk_1073741831_1013, file=/t/d2, newgenerationstamp=1014, newlength=2161664, newtargets=[127.0.0.1:10020, 127.0.0.1:10030]) successful"
NN_STORED = "2026-11-23 19:10:33,654 INFO [Block report processor] BlockStateChange: BLOCK* addStoredBlock: 127.0.0.1:10010 is added to blk_1073741830_1012 (size=16777216)"
CL_LEASE_EXPIRED = "org.apache.hadoop.ipc.RemoteException(org.apache.hadoop.hdfs.server.namenode.LeaseExpiredException): Client (=DFSClient_NONMAPREDUCE_-1246925715_1) is not the lease owner (=DFSClient_NONMAPREDUCE_-594275121_1: /t/h1 (inode 16389) Holder DFSClient_NONMAPREDUCE_-1246925715_1 does not have any open files."
CL_TIMEOUT = "java.net.SocketTimeoutException: 20000 millis timeout while waiting for channel to be ready for read. ch : java.nio.channels.SocketChannel[connected local=/127.0.0.1:38426 remote=dn2.hdfs/127.1.0.2:10020]"

# a WARN line of the layout that a stack trace's first line continues
CL_WARN = f"2026-11-23 19:09:14,600 WARN [ResponseProcessor for block {BP}:blk_1073741830_1011] DataStreamer/DataStreamer$ResponseProcessor: Exception for {BP}:blk_1073741830_1011"


def strip(events):
    """The events without the fields every adapted event has (checked elsewhere)."""
    return [{k: v for k, v in e.items() if k not in ("ts", "source", "logger")} for e in events]


def one(lines, role, **kw):
    return strip(map_lines(lines if isinstance(lines, list) else [lines], role, hosts=HOSTS, **kw))


# -- the layout --------------------------------------------------------------------------

def test_parse_line_both_layouts_and_nested_brackets():
    a = parse_line(DN_WRITE_STAGE)
    assert a.level == "DEBUG" and a.logger == "DataNode/DataXceiver"
    assert a.thread.endswith(f"[Receiving block {BP}:blk_1073741830_1011]")
    assert a.msg.startswith("opWriteBlock: stage=")
    b = parse_line(NN_ALLOCATE)          # the notes' layout: no /Caller
    assert b.logger == "StateChange" and b.msg.startswith("BLOCK* allocate")
    c = parse_line(DN_CLIENTTRACE)       # a thread name with ", ...:[addr]" in it
    assert c.logger == "clienttrace" and c.msg.startswith("src: /127.0.0.1:49032")
    assert parse_line(CL_BAD_ACK) is None and parse_line("") is None
    assert parse_line("2026-11-23 19:10:44,240 INFO [unclosed thread StateChange: x") is None


def test_every_adapted_event_names_its_source_and_logger():
    evs = map_lines([NN_ALLOCATE, NN_FSYNC], "namenode", hosts=HOSTS)
    assert [e["source"] for e in evs] == ["hadoop-log", "hadoop-log"]
    assert [e["logger"] for e in evs] == ["StateChange", "StateChange"]
    # the line's own time (log4j writes local time; this machine's zone)
    import datetime
    want = datetime.datetime(2026, 11, 23, 19, 10, 44, 240000).timestamp()
    assert evs[0]["ts"] == pytest.approx(want)


# -- NameNode lines ----------------------------------------------------------------------

def test_allocate_names_the_pipeline_in_order_and_the_lease_holder():
    assert one(NN_ALLOCATE, "namenode") == [dict(
        event="nn.block.allocate", path="/bench/c1", block=1073741832, gs=1015,
        pipeline=["dn3", "dn1", "dn2"], holder=None)]
    # the holder comes from the lease the mapper saw for that path (here an fsync)
    fsync = NN_FSYNC.replace("/t/p3", "/bench/c1")
    evs = one([fsync, NN_ALLOCATE], "namenode")
    assert evs[0] == dict(event="nn.file.fsync", path="/bench/c1",
                          holder="DFSClient_NONMAPREDUCE_-1609533089_1")
    assert evs[1]["holder"] == "DFSClient_NONMAPREDUCE_-1609533089_1"


def test_unknown_address_stays_as_written():
    evs = strip(map_lines([NN_ALLOCATE], "namenode", hosts={"127.0.0.1:10010": "dn1"}))
    assert evs[0]["pipeline"] == ["127.0.0.1:10030", "dn1", "127.0.0.1:10020"]


def test_bump_and_update_pipeline_make_gs_bump_and_update_pipeline():
    evs = map_lines([NN_BUMP.replace("1010", "1009"), NN_UPDATE, NN_UPDATE_OK], "namenode",
                    hosts=HOSTS)
    assert strip(evs) == [
        dict(event="nn.block.gs_bump", block=1073741829, old_gs=1009, gs=1010, reason="pipeline",
             holder="DFSClient_NONMAPREDUCE_-1609533089_1"),
        dict(event="nn.block.update_pipeline", path=None, block=1073741829, old_gs=1009, gs=1010,
             len=8388608, pipeline=["dn1", "dn2"], holder="DFSClient_NONMAPREDUCE_-1609533089_1")]
    # the bump keeps the time and logger of its own line
    assert evs[0]["ts"] < evs[1]["ts"] and evs[0]["logger"] == "FSNamesystem"
    # the notes' bump line alone (a bump without updatePipeline, seen under a
    # blackhole) says nothing: its new GS is unknown
    assert one(NN_BUMP, "namenode") == []
    # an updatePipeline request that never succeeds is no pipeline change
    assert one(NN_UPDATE, "namenode") == []


def test_lease_expiry_and_recover_lease():
    assert one(NN_EXPIRED, "namenode") == [dict(
        event="nn.lease.expired", holder="DFSClient_NONMAPREDUCE_655657776_1", limit="hard")]
    assert one(NN_RECOVER_LEASE, "namenode") == [dict(
        event="nn.lease.recover", path="/t/d2", holder="DFSClient_NONMAPREDUCE_1123809683_1",
        requester=None, force=True, result="recovering", error=None)]


def test_lease_recovery_block_recovery_and_commit():
    evs = one([NN_RECOVER_LEASE, NN_RELEASE, NN_COMMIT, NN_COMMIT_OK], "namenode")
    names = [e["event"] for e in evs]
    assert names == ["nn.lease.recover", "nn.recovery.start", "nn.block.gs_bump",
                     "nn.lease.reassign", "nn.recovery.commit", "nn.block.state",
                     "nn.file.close", "nn.lease.remove"]
    start = evs[1]
    assert (start["path"], start["block"], start["gs"], start["recovery_id"]) == (
        "/t/d2", 1073741831, 1013, 1014)
    assert evs[2] == dict(event="nn.block.gs_bump", block=1073741831, old_gs=1013, gs=1014,
                          reason="recovery")
    # a recoverLease RPC hands the lease to its caller, whom the NameNode does not name
    assert evs[3] == dict(event="nn.lease.reassign", path="/t/d2",
                          old_holder="DFSClient_NONMAPREDUCE_1123809683_1", holder=None)
    assert evs[4] == dict(event="nn.recovery.commit", path="/t/d2", block=1073741831,
                          recovery_id=1014, gs=1014, old_gs=1013, len=2161664,
                          pipeline=["dn2", "dn3"], close=True, delete=False)
    # the NameNode holds the block at the recovery's GS and length from the commit on
    assert evs[5] == dict(event="nn.block.state", path="/t/d2", block=1073741831, gs=1014,
                          len=2161664, state="COMMITTED")
    assert evs[6] == dict(event="nn.file.close", path="/t/d2", len=None, reason="block_recovery")
    assert evs[7] == dict(event="nn.lease.remove", holder=None, path="/t/d2",
                          reason="block_recovery")
    # the request line alone commits nothing
    assert one(NN_COMMIT, "namenode") == []


def test_hard_limit_recovery_reassigns_to_the_namenode():
    monitor = NN_RELEASE.replace("IPC Server handler 0 on default port 9000",
                                 "org.apache.hadoop.hdfs.server.namenode.LeaseManager$Monitor@4eba373c")
    evs = one([NN_EXPIRED, monitor], "namenode")
    assert [e for e in evs if e["event"] == "nn.lease.reassign"][0]["holder"] == "HDFS_NameNode"


def test_replica_reported():
    assert one(NN_STORED, "namenode") == [dict(
        event="nn.replica.reported", dn="dn1", block=1073741830, gs=1012, len=16777216,
        state="FINALIZED")]


# -- DataNode lines ----------------------------------------------------------------------

def test_recover_block_init_replica_sync_and_update():
    evs = one([DN_RECOVER_BLOCK, DN_INIT_CHANGE, DN_SYNC_LIST, DN_SYNC_REPLICA_DEBUG,
               DN_SYNC_BEST, DN_UPDATE_REPLICA, DN_COMMIT_DEBUG], "datanode")
    assert [e["event"] for e in evs] == [
        "dn.recovery.command", "dn.recovery.init_replica", "dn.replica.state",
        "dn.recovery.sync", "dn.recovery.update_replica", "dn.replica.state"]
    assert evs[0] == dict(event="dn.recovery.command", block=1073741831, gs=1013,
                          recovery_id=1014, pipeline=["dn2", "dn3"])
    assert evs[1]["state"] == "RBW" and evs[2]["state"] == "RUR" and evs[1]["result"] == "ok"
    assert evs[3] == dict(
        event="dn.recovery.sync", block=1073741831, gs=1013, recovery_id=1014,
        answers=[{"dn": "dn2", "state": "RBW", "len": 2161664, "gs": 1013},
                 {"dn": "dn3", "state": "RBW", "len": 2161664, "gs": 1013}],
        rule="min_rbw", len=2161664, pipeline=["dn2", "dn3"], new_len=None, best_state="RBW")
    assert evs[4] == dict(event="dn.recovery.update_replica", block=1073741831, gs=1013,
                          recovery_id=1014, len=2161664)
    assert evs[5] == dict(event="dn.replica.state", block=1073741831, gs=1014, len=2161664,
                          state="FINALIZED", reason="update_replica")


def test_init_replica_takes_recovery_id_and_length_from_its_header_line():
    header = ("2026-11-24 03:11:44,479 INFO [IPC Server handler 6 on default port 58379] "
              "FsDatasetImpl/FsDatasetImpl: initReplicaRecovery: blk_1073741831_1013, "
              "recoveryId=1014, replica=ReplicaBeingWritten, blk_1073741831_1013, RBW")
    evs = one([header, "  getNumBytes()     = 2161664", "  getBytesOnDisk()  = 2161664",
               DN_INIT_CHANGE], "datanode")
    assert evs[0] == dict(event="dn.recovery.init_replica", block=1073741831, gs=1013,
                          recovery_id=1014, state="RBW", len=2161664, result="ok")


def test_pipeline_recovery_lines_of_a_datanode():
    assert one(DN_RECOVER_RBW, "datanode") == [dict(
        event="dn.replica.recover_rbw", block=1073741829, gs=1009, state="RBW")]
    assert one(DN_TRUNCATE, "datanode") == [dict(
        event="dn.replica.truncate", block=1073741830, gs=1011, old_len=5420032, len=4194304)]
    assert one(DN_WRITE_STAGE, "datanode") == [dict(
        event="dn.pipeline.stage", block=1073741830, gs=1011,
        stage="PIPELINE_SETUP_STREAMING_RECOVERY", holder="DFSClient_NONMAPREDUCE_979565021_1")]


def test_clienttrace_write_is_a_finalized_replica():
    assert one(DN_CLIENTTRACE, "datanode") == [dict(
        event="dn.replica.state", block=1073741832, gs=1015, len=134217728, state="FINALIZED",
        holder="DFSClient_NONMAPREDUCE_2008754478_1", reason="write")]


def test_empty_sync_list_removes_the_block():
    empty = DN_SYNC_LIST.split("syncList=")[0] + "syncList=[]"
    evs = one([DN_RECOVER_BLOCK, empty], "datanode")
    assert evs[-1] == dict(event="dn.recovery.sync", block=1073741831, gs=1013, recovery_id=1014,
                           answers=[], rule="remove", len=0, pipeline=[], new_len=None)


def test_truncate_recovery_rule():
    lines = [DN_SYNC_LIST.replace("isTruncateRecovery=false", "isTruncateRecovery=true"),
             DN_SYNC_BEST]
    sync = one(lines, "datanode")[0]
    assert (sync["rule"], sync["new_len"]) == ("truncate", 2161664)


# -- client lines ------------------------------------------------------------------------

def test_error_recovery_names_the_bad_node():
    assert one(CL_ERROR_RECOVERY, "client") == [dict(
        event="client.pipeline.error", path="/t/h1", block=1073741827, gs=1005, stage=None,
        pipeline=["dn3", "dn1", "dn2"], error_index=0, bad_node="dn3", acked=None)]


def test_bad_ack_and_replacement_failures():
    assert one([CL_WARN, CL_BAD_ACK], "client") == [dict(
        event="client.pipeline.ack_error", path=None, block=1073741830, gs=1011, status="ERROR",
        dn="dn1")]
    evs = one([CL_ERROR_RECOVERY, CL_NO_REPLACEMENT, CL_NO_REPLACEMENT], "client")
    fails = [e for e in evs if e["event"] == "client.pipeline.replace_failed"]
    assert fails == [dict(event="client.pipeline.replace_failed", path="/t/h1", block=1073741827,
                          gs=1005, policy="DEFAULT", pipeline=["dn2", "dn3"], best_effort=False)]
    be = one([CL_ERROR_RECOVERY, CL_BEST_EFFORT], "client")[-1]
    assert be["event"] == "client.pipeline.replace_failed" and be["best_effort"] is True


def test_recovered_pipeline_is_announced_with_its_new_gs():
    """`pipeline = ` carries the GS before the bump; the first line that shows the block
    streaming at a greater GS announces the recovered pipeline."""
    stream = (f"2026-11-23 19:09:24,700 DEBUG [DataStreamer for file /t/d2 block "
              f"{BP}:blk_1073741831_1014] DataStreamer/DataStreamer: stage=DATA_STREAMING, "
              "blk_1073741831_1014")
    error = CL_ERROR_RECOVERY.replace("/t/h1", "/t/d2").replace("blk_1073741827_1005",
                                                                "blk_1073741831_1013")
    evs = one([error, CL_PIPELINE, stream, stream], "client")
    assert [e["event"] for e in evs] == ["client.pipeline.error", "client.pipeline.recovered"]
    assert evs[1] == dict(event="client.pipeline.recovered", path="/t/d2", block=1073741831,
                          old_gs=1013, gs=1014, pipeline=["dn2", "dn3"])
    # the notes' pipeline line alone announces nothing yet
    assert one(CL_PIPELINE, "client") == []


def test_lease_renewal_of_the_client():
    line = ("2026-11-24 03:12:00,000 DEBUG [LeaseRenewer:root@127.0.0.1:9000] "
            "LeaseRenewer/LeaseRenewer: Lease renewed for client DFSClient_NONMAPREDUCE_1_1")
    assert one(line, "client") == [
        dict(event="client.lease.renew", holder="DFSClient_NONMAPREDUCE_1_1"),
        dict(event="nn.lease.renew", holder="DFSClient_NONMAPREDUCE_1_1", observed_by="client")]


# -- lines that must not map --------------------------------------------------------------

@pytest.mark.parametrize("role,lines", [
    # covered by the INFO syncList / bestState and commitBlockSynchronization lines
    ("datanode", [DN_SYNC_REPLICA_DEBUG]),
    ("datanode", [DN_COMMIT_DEBUG]),
    # the Java client reports its own errors (client.op.end / client.close)
    ("client", [CL_WARN, CL_LEASE_EXPIRED]),
    # names no block: which one timed out is in the Error Recovery line that follows
    ("client", [CL_WARN, CL_TIMEOUT]),
    # a line of another role's process
    ("datanode", [NN_ALLOCATE]),
    ("namenode", [CL_ERROR_RECOVERY]),
    ("client", [DN_SYNC_BEST]),
    # other daemons' chatter, and text that is not a log line
    ("namenode", ["2026-11-24 03:11:34,641 INFO [org.apache.hadoop.util.JvmPauseMonitor$Monitor@34129c78] JvmPauseMonitor/JvmPauseMonitor$Monitor: Starting JVM pause monitor"]),
    ("namenode", ["not a log line at all", "", "\tat org.apache.hadoop.ipc.Server$Handler.run(Server.java:3198)"]),
    # a stack trace's exception line with no failed RPC before it
    ("namenode", ["java.io.IOException: Unexpected BlockUCState: x is UNDER_RECOVERY"]),
])
def test_lines_that_must_not_map(role, lines):
    assert map_lines(lines, role, hosts=HOSTS) == []


# -- a whole real run of Hadoop 3.4.2 ------------------------------------------------------

RUN = os.path.join(os.path.dirname(__file__), "data", "hadoop-3.4.2-lease-recovery")
RUN_HOSTS = {"127.0.0.1:39627": "dn1", "127.0.0.1:50177": "dn2"}
HOLDER = "DFSClient_NONMAPREDUCE_-472480054_1"


def run_events(node, role):
    with open(os.path.join(RUN, f"{node}.log")) as f:
        return map_lines(f, role, "3.4.2", RUN_HOSTS)


def test_real_run_namenode():
    nn = run_events("nn", "namenode")
    by = lambda name: [e for e in nn if e["event"] == name]  # noqa: E731
    # the log also holds `NameNode -format`'s banners: only the daemon's start counts,
    # and the daemon was killed (no SHUTDOWN_MSG)
    assert [e["event"] for e in nn if e["event"] in ("nn.start", "nn.stop")] == ["nn.start"]
    assert [(e["path"], e["holder"]) for e in by("nn.file.create")] == [
        ("/t/a", HOLDER), ("/t/open", HOLDER)]
    assert [(e["path"], e["holder"]) for e in by("nn.file.append")] == [("/t/a", HOLDER)]
    assert [(e["path"], e["holder"]) for e in by("nn.lease.add")] == [
        ("/t/a", HOLDER), ("/t/a", HOLDER), ("/t/open", HOLDER)]
    assert [(e["path"], e["holder"]) for e in by("nn.lease.remove")][:2] == [
        ("/t/a", HOLDER), ("/t/a", HOLDER)]
    allocs = by("nn.block.allocate")
    assert [(a["path"], a["block"], a["gs"]) for a in allocs] == [
        ("/t/a", 1073741825, 1001), ("/t/a", 1073741826, 1002), ("/t/a", 1073741827, 1003),
        ("/t/a", 1073741828, 1005), ("/t/open", 1073741829, 1006), ("/t/open", 1073741830, 1007)]
    assert all(sorted(a["pipeline"]) == ["dn1", "dn2"] and a["holder"] == HOLDER for a in allocs)
    # the append's bump of the partial last block
    assert [(e["block"], e["old_gs"], e["gs"], e["reason"]) for e in by("nn.block.gs_bump")] == [
        (1073741827, 1003, 1004, "pipeline"), (1073741830, 1007, 1008, "recovery")]
    [upd] = by("nn.block.update_pipeline")
    assert (upd["path"], upd["block"], upd["old_gs"], upd["gs"], upd["holder"]) == (
        "/t/a", 1073741827, 1003, 1004, HOLDER)
    [start] = by("nn.recovery.start")
    assert (start["path"], start["block"], start["gs"], start["recovery_id"], start["primary"]) == (
        "/t/open", 1073741830, 1007, 1008, "dn2")
    assert sorted(start["pipeline"]) == ["dn1", "dn2"]
    [commit] = by("nn.recovery.commit")
    assert (commit["block"], commit["gs"], commit["len"], commit["close"]) == (
        1073741830, 1008, 524288, True)
    closes = [(e["path"], e["reason"]) for e in by("nn.file.close")]
    assert closes == [("/t/a", "complete"), ("/t/a", "complete"), ("/t/open", "block_recovery")]
    # the writer, shut out, tried to rebuild its pipeline: rejected
    [rej] = by("nn.rpc.reject")
    assert (rej["op"], rej["error"]) == ("updateBlockForPipeline", "IOException")
    reported = {(e["dn"], e["block"], e["gs"]) for e in by("nn.replica.reported")}
    assert ("dn2", 1073741830, 1008) in reported


def test_real_run_datanodes_and_client():
    dn1, dn2 = run_events("dn1", "datanode"), run_events("dn2", "datanode")
    assert [e["event"] for e in dn1 if e["event"].startswith("dn.st")] == ["dn.start"]
    [cmd] = [e for e in dn2 if e["event"] == "dn.recovery.command"]   # dn2 is the primary
    assert not [e for e in dn1 if e["event"] == "dn.recovery.command"]
    [sync] = [e for e in dn2 if e["event"] == "dn.recovery.sync"]
    assert (sync["rule"], sync["len"], sorted(sync["pipeline"])) == ("min_rbw", 524288,
                                                                     ["dn1", "dn2"])
    for dn in (dn1, dn2):
        [init] = [e for e in dn if e["event"] == "dn.recovery.init_replica"]
        assert (init["recovery_id"], init["len"], init["state"]) == (1008, 524288, "RBW")
        fin = [(e["block"], e["gs"], e["len"]) for e in dn
               if e["event"] == "dn.replica.state" and e["state"] == "FINALIZED"]
        assert fin == [(1073741825, 1001, 1048576), (1073741826, 1002, 1048576),
                       (1073741827, 1003, 524288), (1073741827, 1004, 1048576),
                       (1073741828, 1005, 192512), (1073741829, 1006, 1048576),
                       (1073741830, 1008, 524288)]
    c1 = run_events("c1", "client")
    setups = [(e["path"], e["block"], e["gs"], e["stage"]) for e in c1
              if e["event"] == "client.pipeline.setup"]
    assert setups == [
        ("/t/a", 1073741825, 1001, "PIPELINE_SETUP_CREATE"),
        ("/t/a", 1073741826, 1002, "PIPELINE_SETUP_CREATE"),
        ("/t/a", 1073741827, 1003, "PIPELINE_SETUP_CREATE"),
        ("/t/a", 1073741827, 1004, "PIPELINE_SETUP_APPEND"),
        ("/t/a", 1073741828, 1005, "PIPELINE_SETUP_CREATE"),
        ("/t/open", 1073741829, 1006, "PIPELINE_SETUP_CREATE"),
        ("/t/open", 1073741830, 1007, "PIPELINE_SETUP_CREATE")]
    [err] = [e for e in c1 if e["event"] == "client.pipeline.error"]
    assert (err["path"], err["block"], err["gs"], err["bad_node"]) == ("/t/open", 1073741830,
                                                                       1007, "dn1")
    # its lease was gone: no pipeline came back
    assert not [e for e in c1 if e["event"] == "client.pipeline.recovered"]


def test_banners_start_and_stop():
    head = "2026-11-24 03:11:32,757 INFO [main] NameNode/StringUtils: STARTUP_MSG: "
    down = "2026-11-24 03:11:33,708 INFO [shutdown-hook-0] NameNode/StringUtils$1: SHUTDOWN_MSG: "
    banner = ["/" + "*" * 60, "STARTUP_MSG: Starting NameNode", "STARTUP_MSG:   host = vm/127.0.0.1"]
    fmt = [head, *banner, "STARTUP_MSG:   args = [-format, -force, -nonInteractive]",
           down, "SHUTDOWN_MSG: Shutting down NameNode at vm/127.0.0.1"]
    loaded = ("2026-11-24 03:11:33,600 INFO [main] FSNamesystem/FSNamesystem: Finished loading "
              "FSImage in 550 msecs")
    run = [head, *banner, "STARTUP_MSG:   args = []", loaded,
           down, "SHUTDOWN_MSG: Shutting down NameNode at vm/127.0.0.1"]
    evs = map_lines(fmt + run, "namenode", hosts=HOSTS)
    assert [e["event"] for e in evs] == ["nn.start", "nn.stop"]
    # the NameNode starts when its namespace (and the open files' leases) is loaded
    assert evs[0]["ts"] == parse_line(loaded).ts
    dn = [line.replace("NameNode", "DataNode") for line in run if line != loaded]
    assert one(dn, "datanode") == [dict(event="dn.start", replicas=None),
                                   dict(event="dn.stop", restart=False)]


def test_namenode_starts_when_its_image_starts_loading():
    # a real 3.4.2 restart (nn-restart-open-file, load 70): the edits that restored the open
    # file's lease loaded 0.3-0.7 s before "Finished loading FSImage", and the lease expired
    # 4.64 s after that line; nn.start there made L3 fail on a true log
    head = "2026-11-26 13:04:50,100 INFO [main] NameNode/StringUtils: STARTUP_MSG: "
    planning = ("2026-11-26 13:04:56,068 INFO [main] FSImage/FSImage: Planning to load image: "
                "FSImageFile(file=/s/nn/current/fsimage_0000000000000000000, cpktTxId=0)")
    edits = ("2026-11-26 13:04:56,600 INFO [main] FSImage/FSEditLogLoader: Start loading edits "
             "file /s/nn/current/edits_0000000000000000001-0000000000000000012 maxTxnsToRead = "
             "9223372036854775807")
    loaded = ("2026-11-26 13:04:57,280 INFO [main] FSNamesystem/FSNamesystem: Finished loading "
              "FSImage in 1689 msecs")
    run = [head, "STARTUP_MSG: Starting NameNode", "STARTUP_MSG:   args = []",
           planning, edits, loaded]
    evs = map_lines(run, "namenode", hosts=HOSTS)
    assert [e["event"] for e in evs] == ["nn.start"]
    assert evs[0]["ts"] == parse_line(planning).ts



# a real 3.4.2 run (hard-limit-committed-last-block): complete() answered "not yet" twice
NN_COMPLETE_REQ = "2026-11-26 10:41:04,504 DEBUG [IPC Server handler 7 on default port 21632] StateChange/FSDirWriteFileOp: DIR* NameSystem.completeFile: /data/f1 for DFSClient_NONMAPREDUCE_-55009994_1"
NN_COMPLETE_NOT_YET = "2026-11-26 10:41:04,505 INFO [IPC Server handler 7 on default port 21632] FSNamesystem/FSNamesystem: BLOCK* blk_1073741825_1001 is COMMITTED but not COMPLETE(numNodes= 0 <  minimum = 1) in file /data/f1"


def test_complete_answered_not_yet():
    evs = one([NN_COMPLETE_REQ, NN_COMPLETE_NOT_YET], "namenode")
    assert evs == [
        dict(event="nn.file.complete", path="/data/f1",
             holder="DFSClient_NONMAPREDUCE_-55009994_1", ok=False),
        dict(event="nn.block.state", path="/data/f1", block=1073741825, gs=1001, len=None,
             state="COMMITTED")]
    # the same line from another thread (addBlock's check of the penultimate block) or
    # long after the request is not complete()'s answer
    other = NN_COMPLETE_NOT_YET.replace("handler 7", "handler 3")
    late = NN_COMPLETE_NOT_YET.replace("10:41:04,505", "10:41:09,505")
    for lines in ([NN_COMPLETE_REQ, other], [NN_COMPLETE_REQ, late], [NN_COMPLETE_NOT_YET]):
        assert [e["event"] for e in one(lines, "namenode")] == ["nn.block.state"]


# -- startup safe mode (BlockManagerSafeMode) ----------------------------------------------
# a real Hadoop 3.4.2 NameNode (nn-restart-slow-block-reports): at the first start the
# thresholds are met (no block), after the restart it waits for block reports
SM_FIRST_START = "2026-11-26 10:34:18,509 INFO [main] StateChange/BlockManagerSafeMode: STATE* Leaving safe mode after 0 secs"
SM_ON = ["2026-11-26 10:34:37,215 INFO [main] StateChange/BlockManagerSafeMode: STATE* Safe mode ON. ",
         "The reported blocks 0 needs additional 1 blocks to reach the threshold 0.9990 of total blocks 2.",
         "The minimum number of live datanodes is not required. Safe mode will be turned off automatically once the thresholds have been reached."]
SM_NEXT = "2026-11-26 10:34:37,284 INFO [IPC Server Responder] Server/Server$Responder: IPC Server Responder: starting"
SM_OFF = ["2026-11-26 10:34:42,365 INFO [Block report processor] StateChange/BlockManagerSafeMode: STATE* Safe mode is OFF",
          "2026-11-26 10:34:42,365 INFO [Block report processor] StateChange/BlockManagerSafeMode: STATE* Leaving safe mode after 5 secs",
          "2026-11-26 10:34:42,365 INFO [Block report processor] StateChange/BlockManagerSafeMode: STATE* Network topology has 1 racks and 3 datanodes"]
# checkSafeMode's repeat of the ON line (20 s later at most) and the extension's line,
# with the tips getSafeModeTip formats (%n ends the line only where it is in the format)
SM_REPEAT = ["2026-11-26 10:34:40,001 INFO [Block report processor] StateChange/BlockManagerSafeMode: STATE* Safe mode ON. ",
             "The reported blocks 0 needs additional 1 blocks to reach the threshold 0.9990 of total blocks 2.",
             "The minimum number of live datanodes is not required. Safe mode will be turned off automatically once the thresholds have been reached."]
SM_EXT = ["2026-11-26 10:34:41,100 INFO [Block report processor] StateChange/BlockManagerSafeMode: STATE* Safe mode extension entered. ",
          "The reported blocks 2 has reached the threshold 0.9990 of total blocks 2. The number of live datanodes 3 has reached the minimum number 1. In safe mode extension. Safe mode will be turned off automatically in 29 seconds."]
SM_NULLS = dict(safe_blocks=None, total_blocks=None, threshold_blocks=None,
                live_datanodes=None, min_datanodes=None)


@pytest.mark.parametrize("release", ["3.4.2", "3.3.6", "3.2.4"])
def test_safe_mode_enter_and_leave(release):
    # the three releases log the same texts (their jars' string constants)
    evs = map_lines([SM_FIRST_START, *SM_ON, SM_NEXT, *SM_REPEAT, *SM_OFF], "namenode",
                    release, HOSTS)
    assert strip(evs) == [
        dict(event="nn.safemode.enter", safe_blocks=0, total_blocks=2, threshold_blocks=1,
             live_datanodes=None, min_datanodes=0),
        dict(event="nn.safemode.leave", waited=5, **SM_NULLS)]
    assert evs[0]["ts"] == parse_line(SM_ON[0]).ts
    assert evs[1]["ts"] == parse_line(SM_OFF[1]).ts
    assert evs[0]["logger"] == "StateChange/BlockManagerSafeMode"


def test_safe_mode_extension_takes_its_counts_from_the_tip():
    evs = map_lines([*SM_ON, *SM_EXT, *SM_OFF], "namenode", hosts=HOSTS)
    assert strip(evs)[1:] == [
        dict(event="nn.safemode.extension", extension=None, safe_blocks=2, total_blocks=2,
             threshold_blocks=None, live_datanodes=3, min_datanodes=1),
        dict(event="nn.safemode.leave", waited=5, **SM_NULLS)]


def test_safe_mode_enter_without_its_tip_comes_out_with_the_next_line():
    mp = LogMapper("namenode", hosts=HOSTS)
    assert mp.feed(SM_ON[0]) == []
    evs = mp.feed(SM_NEXT)
    assert strip(evs) == [dict(event="nn.safemode.enter", **SM_NULLS)]
    assert evs[0]["ts"] == parse_line(SM_ON[0]).ts
    # a log gone quiet after the line
    mp = LogMapper("namenode", hosts=HOSTS)
    mp.feed(SM_ON[0])
    assert mp.release_older(parse_line(SM_ON[0]).ts + 0.5) == []
    assert [e["event"] for e in mp.release_older(parse_line(SM_ON[0]).ts + 2)] == \
        ["nn.safemode.enter"]


def test_a_restarted_namenode_enters_safe_mode_again():
    head = "2026-11-26 10:34:30,000 INFO [main] NameNode/StringUtils: STARTUP_MSG: "
    start = [head, "STARTUP_MSG: Starting NameNode", "STARTUP_MSG:   args = []"]
    # killed in safe mode (no OFF line), then started again
    evs = map_lines([*SM_ON, *start, *SM_ON, *SM_OFF], "namenode", hosts=HOSTS)
    assert [e["event"] for e in evs] == ["nn.safemode.enter", "nn.safemode.enter",
                                         "nn.safemode.leave"]


# -- releases and observability -----------------------------------------------------------

def test_release_tables():
    assert logmap.table_for("3.4.2") is logmap.TABLE_3_4
    assert logmap.table_for("3.3.6") is logmap.TABLE_3_3
    assert logmap.table_for("3.2.4") is logmap.TABLE_3_2
    assert logmap.table_for("3.5.0") is logmap.TABLE_3_4
    with pytest.raises(ValueError, match="MAJOR.MINOR"):
        logmap.table_for("latest")
    with pytest.raises(ValueError, match="role"):
        LogMapper("journalnode")


def test_observability_covers_every_check():
    ids = {c.id for c in CHECKS}
    assert ids <= set(logmap.OBSERVABLE), ids - set(logmap.OBSERVABLE)
    required = {"P1", "P4", "P6", "L1", "L3", "L4", "B1", "B2", "B3", "D1", "D2", "D3", "D4"}
    assert all(logmap.OBSERVABLE[c] is None for c in required)
    why = logmap.skip_reason("B6", "3.4.2")
    assert why.startswith("not observable on hadoop 3.4.2: needs dn.replica.state")
    assert logmap.skip_reason("B2") is None


def test_debug_loggers_are_logger_names():
    assert logmap.DEBUG_LOGGERS and all(" " not in n for n in logmap.DEBUG_LOGGERS)
    assert "org.apache.hadoop.hdfs.server.datanode.DataNode" not in logmap.DEBUG_LOGGERS


def test_real_setup_failure_is_an_error_then_an_abandon():
    """Hadoop 3.4.2: a DataNode SIGKILLed just as the client set up a new block's
    pipeline: the error is a setup error (stage PIPELINE_SETUP_CREATE) and the block is
    abandoned, which the verifier's P1 leaves to abandonBlock + addBlock."""
    path = os.path.join(os.path.dirname(__file__), "data", "hadoop-3.4.2-setup-failure", "c1.log")
    with open(path) as f:
        evs = strip(map_lines(f, "client", "3.4.2", {"127.0.0.1:45311": "dn1",
                                                     "127.0.0.1:44469": "dn3",
                                                     "127.0.0.1:46597": "dn2"}))
    errors = [e for e in evs if e["event"] in ("client.pipeline.error", "client.pipeline.abandon")]
    assert errors == [
        dict(event="client.pipeline.error", path="/t/p", block=1073741828, gs=1004,
             stage="PIPELINE_SETUP_CREATE", pipeline=["dn1", "dn3"], error_index=0,
             bad_node="dn1", acked=None),
        dict(event="client.pipeline.abandon", path="/t/p", block=1073741828, gs=1004,
             bad_node="dn1")]
    assert not [e for e in evs if e["event"] == "client.pipeline.recovered"]


# real 3.3.6 lines: an append's updatePipeline, with no bumpBlockGenerationStamp line
UPD_336 = ("2026-11-24 03:19:52,470 INFO [IPC Server handler 3 on default port 56551] FSNamesystem/FSNamesystem: updatePipeline(blk_1073741827_1003, newGS=1004, newLength=524288, newNodes=[127.0.0.1:59347, 127.0.0.1:51499], client=DFSClient_NONMAPREDUCE_2088789120_1)",
           "2026-11-24 03:19:52,473 INFO [IPC Server handler 3 on default port 56551] FSNamesystem/FSNamesystem: updatePipeline(blk_1073741827_1003 => blk_1073741827_1004) success")


@pytest.mark.parametrize("release", ["3.3.6", "3.2.4"])
def test_before_3_4_the_pipeline_bump_comes_from_update_pipeline(release):
    hosts = {"127.0.0.1:59347": "dn1", "127.0.0.1:51499": "dn2"}
    evs = map_lines(list(UPD_336), "namenode", release, hosts)
    assert [e["event"] for e in evs] == ["nn.block.gs_bump", "nn.block.update_pipeline"]
    assert strip(evs)[0] == dict(event="nn.block.gs_bump", block=1073741827, old_gs=1003,
                                 gs=1004, reason="pipeline",
                                 holder="DFSClient_NONMAPREDUCE_2088789120_1")
    assert evs[0]["ts"] < evs[1]["ts"]       # the request's time, not the success line's
    # the 3.4 table waits for the bump line that 3.4 writes
    assert [e["event"] for e in map_lines(list(UPD_336), "namenode", "3.4.2", hosts)] == [
        "nn.block.update_pipeline"]


def test_truncate_delete_and_rename_of_the_namenode():
    """Real 3.4.2 lines: truncate's INFO line, and the audit log's delete and rename."""
    lines = [
        "2026-11-24 03:45:53,130 INFO [IPC Server handler 6 on default port 58461] StateChange/FSNamesystem: DIR* NameSystem.truncate: src=/t/a newLength=1049576",
        "2026-11-24 03:45:53,133 INFO [IPC Server handler 6 on default port 58461] audit/FSNamesystem$FSNamesystemAuditLogger: allowed=true\tugi=root (auth:SIMPLE)\tip=/127.0.0.1\tcmd=truncate\tsrc=/t/a\tdst=null\tperm=root:supergroup:rw-r--r--\tproto=rpc",
        "2026-11-24 03:45:54,133 INFO [IPC Server handler 1 on default port 58461] audit/FSNamesystem$FSNamesystemAuditLogger: allowed=true\tugi=root (auth:SIMPLE)\tip=/127.0.0.1\tcmd=delete\tsrc=/t/b\tdst=null\tperm=null\tproto=rpc",
        "2026-11-24 03:45:55,133 INFO [IPC Server handler 2 on default port 58461] audit/FSNamesystem$FSNamesystemAuditLogger: allowed=true\tugi=root (auth:SIMPLE)\tip=/127.0.0.1\tcmd=rename\tsrc=/t/c\tdst=/t/d\tperm=root:supergroup:rw-r--r--\tproto=rpc",
        # refused: nothing changed
        "2026-11-24 03:45:56,133 INFO [IPC Server handler 2 on default port 58461] audit/FSNamesystem$FSNamesystemAuditLogger: allowed=false\tugi=root (auth:SIMPLE)\tip=/127.0.0.1\tcmd=delete\tsrc=/t/e\tdst=null\tperm=null\tproto=rpc",
    ]
    assert one(lines, "namenode") == [
        dict(event="nn.file.truncate", path="/t/a", len=1049576, ok=None),
        dict(event="nn.file.delete", path="/t/b"),
        dict(event="nn.file.rename", path="/t/c", dst="/t/d")]



# real lines of truncate-then-recover-lease on Hadoop 3.4.2 (hosts renamed to HOSTS' ports)
TR_UC = ("replicas=[ReplicaUC[[DISK]DS-14b16fb2-d95e-4e26-b6a8-34b30bf32eda:NORMAL:127.0.0.1:10030|RBW], "
         "ReplicaUC[[DISK]DS-923a299a-a8a0-423e-a436-e17cf4eafe87:NORMAL:127.0.0.1:10010|RBW], "
         "ReplicaUC[[DISK]DS-4387e1fc-4385-4289-9621-7d0c2a77f79a:NORMAL:127.0.0.1:10020|RBW]]}")
TR_LINES = [
    "2026-11-27 07:18:40,101 INFO [IPC Server handler 3 on default port 23251] StateChange/FSNamesystem: BLOCK* allocate blk_1073741826_1002, replicas=127.0.0.1:10030, 127.0.0.1:10010, 127.0.0.1:10020 for /data/t",
    "2026-11-27 07:18:46,237 INFO [IPC Server handler 7 on default port 23251] StateChange/FSNamesystem: DIR* NameSystem.truncate: src=/data/t newLength=1049576",
    "2026-11-27 07:18:46,264 DEBUG [IPC Server handler 7 on default port 23251] StateChange/FSDirTruncateOp: BLOCK* prepareFileForTruncate: {UCState=UNDER_CONSTRUCTION, truncateBlock=blk_1073741826_1003, primaryNodeIndex=-1, " + TR_UC + " Scheduling in-place block truncate to new size 1000",
    "2026-11-27 07:18:46,265 DEBUG [IPC Server handler 7 on default port 23251] BlockStateChange/BlockUnderConstructionFeature: BLOCK* {UCState=UNDER_RECOVERY, truncateBlock=blk_1073741826_1003, primaryNodeIndex=1, " + TR_UC + " recovery started, primary=ReplicaUC[[DISK]DS-923a299a-a8a0-423e-a436-e17cf4eafe87:NORMAL:127.0.0.1:10010|RBW]",
    "2026-11-27 07:18:46,454 INFO [IPC Server handler 7 on default port 23251] FSNamesystem/FSNamesystem: recoverLease: [Lease.  Holder: DFSClient_NONMAPREDUCE_1174563300_1, pending creates: 1], src=/data/t from client DFSClient_NONMAPREDUCE_1174563300_1",
    "2026-11-27 07:18:46,455 DEBUG [IPC Server handler 7 on default port 23251] BlockStateChange/BlockUnderConstructionFeature: BLOCK* {UCState=UNDER_RECOVERY, truncateBlock=blk_1073741826_1004, primaryNodeIndex=2, " + TR_UC + " recovery started, primary=ReplicaUC[[DISK]DS-4387e1fc-4385-4289-9621-7d0c2a77f79a:NORMAL:127.0.0.1:10020|RBW]",
    "2026-11-27 07:18:46,455 WARN [IPC Server handler 7 on default port 23251] StateChange/FSNamesystem: DIR* NameSystem.internalReleaseLease: File /data/t has not been closed. Lease recovery is in progress. RecoveryId = 1004 for block blk_1073741826_1002",
]


def test_a_truncates_recovery_starts_at_its_recovery_started_line():
    """prepareFileForTruncate starts the truncate's recovery with no internalReleaseLease
    line: its `recovery started` line is its nn.recovery.start; a recoverLease's on the
    same handler thread right after still comes from internalReleaseLease, once."""
    starts = [e for e in one(TR_LINES, "namenode") if e["event"] == "nn.recovery.start"]
    assert starts == [
        dict(event="nn.recovery.start", path="/data/t", block=1073741826, gs=1002,
             recovery_id=1003, primary="dn1", pipeline=["dn3", "dn1", "dn2"]),
        dict(event="nn.recovery.start", path="/data/t", block=1073741826, gs=1002,
             recovery_id=1004, primary="dn2", pipeline=["dn3", "dn1", "dn2"])]
    # a normal recovery's `recovery started` line alone starts nothing
    assert one(TR_LINES[5], "namenode") == []

# real lines of dn-restart-during-write on Hadoop 3.4.2: dn1 shut down for upgrade
# (dfsadmin -shutdownDatanode ... upgrade) sends the writer an OOB RESTART ack
RS_BP = "BP-602091023-127.0.0.1-1795503020364"
RS_DN = "127.0.0.1:10010,DS-75a4c207-ad1d-4b3c-8f6d-15afb6878e0a,DISK"
RS_LINES = [
    f"2026-11-24 06:50:28,083 DEBUG [DataStreamer for file /data/f1] DataStreamer/DataStreamer: pipeline = [DatanodeInfoWithStorage[{RS_DN}]], blk_1073741826_1002",
    f"2026-11-24 06:50:28,090 DEBUG [DataStreamer for file /data/f1 block {RS_BP}:blk_1073741826_1002] DataStreamer/DataStreamer: stage=DATA_STREAMING, blk_1073741826_1002",
    f"2026-11-24 06:50:28,322 INFO [ResponseProcessor for block {RS_BP}:blk_1073741826_1002] DataStreamer/DataStreamer$ErrorState: Datanode 0 is restarting: DatanodeInfoWithStorage[{RS_DN}]",
    f"2026-11-24 06:50:32,363 DEBUG [DataStreamer for file /data/f1 block {RS_BP}:blk_1073741826_1002] DataStreamer/DataStreamer: pipeline = [DatanodeInfoWithStorage[{RS_DN}]], blk_1073741826_1002",
    f"2026-11-24 06:50:34,114 DEBUG [DataStreamer for file /data/f1 block {RS_BP}:blk_1073741826_1003] DataStreamer/DataStreamer: nodes [DatanodeInfoWithStorage[{RS_DN}]] storageTypes [DISK] storageIDs [DS-75a4c207-ad1d-4b3c-8f6d-15afb6878e0a]",
]


def test_restart_oob_ack_is_a_restart_wait_then_a_recovery_keeping_the_node():
    evs = one(RS_LINES, "client")
    assert [e["event"] for e in evs] == ["client.pipeline.setup", "client.pipeline.restart_wait",
                                         "client.pipeline.error", "client.pipeline.recovered"]
    assert evs[1] == dict(event="client.pipeline.restart_wait", path="/data/f1",
                          block=1073741826, dn="dn1")
    assert evs[2]["error_index"] == -1 and evs[2]["bad_node"] is None
    assert evs[2]["restarting"] == "dn1" and evs[2]["pipeline"] == ["dn1"]
    assert evs[3] == dict(event="client.pipeline.recovered", path="/data/f1", block=1073741826,
                          old_gs=1002, gs=1003, pipeline=["dn1"])


# real lines of Hadoop 3.4.2 (recover-lease-fencing, second-writer-before-soft-limit): the
# NameNode logs fsync / startFile / appendFile before its lease checks, so a refused call
# logs them too; its handler thread then logs the call's exception
REFUSED_FSYNC = [
    '2026-11-24 06:39:43,621 INFO [IPC Server handler 7 on default port 22094] StateChange/FSNamesystem: BLOCK* fsync: /data/f1 for DFSClient_NONMAPREDUCE_2141994586_1',
    '2026-11-24 06:39:43,622 INFO [IPC Server handler 7 on default port 22094] Server/Server: IPC Server handler 7 on default port 22094, call Call#5 Retry#0 org.apache.hadoop.hdfs.protocol.ClientProtocol.fsync from 127.0.0.1:37602: org.apache.hadoop.hdfs.server.namenode.LeaseExpiredException: Client (=DFSClient_NONMAPREDUCE_2141994586_1) is not the lease owner (=DFSClient_NONMAPREDUCE_-1177208907_1: /data/f1 (inode 16387) Holder DFSClient_NONMAPREDUCE_2141994586_1 does not have any open files.',
]
REFUSED_APPEND_CREATE = [
    '2026-11-24 06:43:11,187 DEBUG [IPC Server handler 8 on default port 26687] StateChange/NameNodeRpcServer: *DIR* NameNode.append: file /data/f1 for DFSClient_NONMAPREDUCE_-122756982_1 at 127.0.0.1.',
    '2026-11-24 06:43:11,187 DEBUG [IPC Server handler 8 on default port 26687] StateChange/FSNamesystem: DIR* NameSystem.appendFile: src=/data/f1, holder=DFSClient_NONMAPREDUCE_-122756982_1, clientMachine=127.0.0.1',
    '2026-11-24 06:43:11,188 WARN [IPC Server handler 8 on default port 26687] StateChange/FSDirAppendOp: DIR* NameSystem.append: Failed to APPEND_FILE /data/f1 for DFSClient_NONMAPREDUCE_-122756982_1 on 127.0.0.1 because this file lease is currently owned by DFSClient_NONMAPREDUCE_-392477979_1 on 127.0.0.1',
    '2026-11-24 06:43:11,189 INFO [IPC Server handler 8 on default port 26687] Server/Server: IPC Server handler 8 on default port 26687, call Call#0 Retry#0 org.apache.hadoop.hdfs.protocol.ClientProtocol.append from 127.0.0.1:51980: org.apache.hadoop.hdfs.protocol.AlreadyBeingCreatedException: Failed to APPEND_FILE /data/f1 for DFSClient_NONMAPREDUCE_-122756982_1 on 127.0.0.1 because this file lease is currently owned by DFSClient_NONMAPREDUCE_-392477979_1 on 127.0.0.1',
    '2026-11-24 06:43:11,233 DEBUG [IPC Server handler 9 on default port 26687] StateChange/NameNodeRpcServer: *DIR* NameNode.create: file /data/f1 for DFSClient_NONMAPREDUCE_-122756982_1 at 127.0.0.1.',
    "2026-11-24 06:43:11,233 DEBUG [IPC Server handler 9 on default port 26687] StateChange/FSNamesystem: DIR* NameSystem.startFile: src=/data/f1, holder=DFSClient_NONMAPREDUCE_-122756982_1, clientMachine=127.0.0.1, createParent=true, replication=3, createFlag=[CREATE], blockSize=1048576, supportedVersions=[CryptoProtocolVersion{description='Encryption zones', version=2, unknownValue=null}], ecPolicyName=, storagePolicy=",
    '2026-11-24 06:43:11,234 INFO [IPC Server handler 9 on default port 26687] Server/Server: IPC Server handler 9 on default port 26687, call Call#1 Retry#0 org.apache.hadoop.hdfs.protocol.ClientProtocol.create from 127.0.0.1:51980: org.apache.hadoop.hdfs.protocol.AlreadyBeingCreatedException: Failed to CREATE_FILE /data/f1 for DFSClient_NONMAPREDUCE_-122756982_1 on 127.0.0.1 because this file lease is currently owned by DFSClient_NONMAPREDUCE_-392477979_1 on 127.0.0.1',
]
CREATED = [
    "2026-11-24 06:43:06,820 DEBUG [IPC Server handler 4 on default port 26687] StateChange/FSNamesystem: DIR* NameSystem.startFile: src=/data/f1, holder=DFSClient_NONMAPREDUCE_-392477979_1, clientMachine=127.0.0.1, createParent=true, replication=3, createFlag=[CREATE], blockSize=1048576, supportedVersions=[CryptoProtocolVersion{description='Encryption zones', version=2, unknownValue=null}], ecPolicyName=, storagePolicy=",
    '2026-11-24 06:43:06,914 DEBUG [IPC Server handler 4 on default port 26687] StateChange/FSDirWriteFileOp: DIR* NameSystem.startFile: added /data/f1 inode 16387 DFSClient_NONMAPREDUCE_-392477979_1',
]


def test_a_refused_call_is_not_an_event_and_an_accepted_one_is():
    assert [e["event"] for e in one(REFUSED_FSYNC, "namenode")] == ["nn.rpc.reject"]
    assert [(e["event"], e.get("op")) for e in one(REFUSED_APPEND_CREATE, "namenode")] == [
        ("nn.rpc.reject", "append"), ("nn.rpc.reject", "create")]
    assert [e["event"] for e in one(CREATED, "namenode")] == ["nn.file.create", "nn.lease.add"]
    # an fsync whose handler logs nothing more is released by the next line a second on
    later = REFUSED_FSYNC[0].replace("06:39:43,621", "06:39:45,000").replace(
        "handler 7", "handler 2").replace("BLOCK* fsync", "BLOCK* fsyncX")
    assert [e["event"] for e in one([REFUSED_FSYNC[0], later], "namenode")] == ["nn.file.fsync"]
    # and a held event keeps the time of its own line
    mp = LogMapper("namenode", hosts=HOSTS)
    assert mp.feed(REFUSED_FSYNC[0]) == []
    [ev] = mp.release_older(parse_line(REFUSED_FSYNC[0]).ts + 2)
    assert ev["ts"] == round(parse_line(REFUSED_FSYNC[0]).ts, 6)


# real lines of Hadoop 3.4.2 (second-writer-after-soft-limit, the soft limit set by the
# agent): c2's append finds c1's lease past its soft limit and starts its recovery inside
# the call, which is refused (RecoveryInProgress); the append after the recovery goes on
SOFT_TAKEOVER = [
    '2026-11-27 10:50:54,767 DEBUG [IPC Server handler 7 on default port 24301] StateChange/NameNodeRpcServer: *DIR* NameNode.append: file /data/f1 for DFSClient_NONMAPREDUCE_452276056_1 at 127.0.0.1.',
    '2026-11-27 10:50:54,767 DEBUG [IPC Server handler 7 on default port 24301] StateChange/FSNamesystem: DIR* NameSystem.appendFile: src=/data/f1, holder=DFSClient_NONMAPREDUCE_452276056_1, clientMachine=127.0.0.1',
    '2026-11-27 10:50:54,776 INFO [IPC Server handler 7 on default port 24301] FSNamesystem/FSNamesystem: startFile: recover [Lease.  Holder: DFSClient_NONMAPREDUCE_1708537123_1, pending creates: 1], src=/data/f1 client DFSClient_NONMAPREDUCE_1708537123_1',
    '2026-11-27 10:50:54,776 INFO [IPC Server handler 7 on default port 24301] FSNamesystem/FSNamesystem: Recovering [Lease.  Holder: DFSClient_NONMAPREDUCE_1708537123_1, pending creates: 1], src=/data/f1',
    '2026-11-27 10:50:54,777 DEBUG [IPC Server handler 7 on default port 24301] BlockStateChange/BlockUnderConstructionFeature: BLOCK* {UCState=UNDER_RECOVERY, truncateBlock=null, primaryNodeIndex=0, replicas=[]} recovery started, primary=null',
    '2026-11-27 10:50:54,777 WARN [IPC Server handler 7 on default port 24301] StateChange/FSNamesystem: DIR* NameSystem.internalReleaseLease: File /data/f1 has not been closed. Lease recovery is in progress. RecoveryId = 1002 for block blk_1073741825_1001',
    '2026-11-27 10:50:54,780 WARN [IPC Server handler 7 on default port 24301] StateChange/FSDirAppendOp: DIR* NameSystem.append: Failed to APPEND_FILE /data/f1 for DFSClient_NONMAPREDUCE_452276056_1 on 127.0.0.1 because lease recovery is in progress. Try again later.',
    '2026-11-27 10:50:54,780 INFO [IPC Server handler 7 on default port 24301] Server/Server: IPC Server handler 7 on default port 24301, call Call#0 Retry#0 org.apache.hadoop.hdfs.protocol.ClientProtocol.append from 127.0.0.1:38600: org.apache.hadoop.hdfs.protocol.RecoveryInProgressException: Failed to APPEND_FILE /data/f1 for DFSClient_NONMAPREDUCE_452276056_1 on 127.0.0.1 because lease recovery is in progress. Try again later.',
    '2026-11-27 10:50:56,937 DEBUG [IPC Server handler 9 on default port 24301] StateChange/FSNamesystem: DIR* NameSystem.appendFile: src=/data/f1, holder=DFSClient_NONMAPREDUCE_452276056_1, clientMachine=127.0.0.1',
    '2026-11-27 10:50:56,943 DEBUG [IPC Server handler 9 on default port 24301] StateChange/FSDirAppendOp: DIR* NameSystem.appendFile: file /data/f1 for DFSClient_NONMAPREDUCE_452276056_1 at 127.0.0.1 block BP-555498238-127.0.0.1-1795776143708:blk_1073741825_1002 block size 786432',
]


def test_an_append_refused_after_recovering_the_old_lease_adds_no_lease():
    """The recovery lines the append's handler logs inside the call do not release the
    append's held events: the call's exception drops them (L1 on Hadoop saw two holders)."""
    evs = one(SOFT_TAKEOVER, "namenode")
    adds = [e for e in evs if e["event"] in ("nn.lease.add", "nn.file.append")]
    assert [(e["event"], e["holder"]) for e in adds] == [
        ("nn.file.append", "DFSClient_NONMAPREDUCE_452276056_1"),
        ("nn.lease.add", "DFSClient_NONMAPREDUCE_452276056_1")]
    names = [e["event"] for e in evs]
    assert names.index("nn.rpc.reject") < names.index("nn.file.append")


# real lines of stale-datanode-recovery-primary on Hadoop 3.4.2: dn3 copies the block to
# dn1 on the NameNode's order (the target named by host name and the link's proxy)
TRANSFER_LINES = [
    '2026-11-24 06:54:38,132 INFO [Command processor] DataNode/DataNode: DatanodeRegistration(127.0.0.1:22654, datanodeUuid=103faeb4-8806-467c-a890-67f0af9b86be, infoPort=23262, infoSecurePort=0, ipcPort=25694, storageInfo=lv=-57;cid=CID-102fabb4-63db-49cb-afb0-2584b187e5ce;nsid=47021356;c=1795503258997) Starting thread to transfer BP-1087369162-127.0.0.1-1795503258997:blk_1073741825_1002 to 127.0.0.1:26397',
    '2026-11-24 06:54:38,436 INFO [java.util.concurrent.ThreadPoolExecutor$Worker@4da9672d[State = -1, empty queue]] DataNode/DataNode$DataTransfer: DataTransfer, at dn3.hdfs:22654: Transmitted BP-1087369162-127.0.0.1-1795503258997:blk_1073741825_1002 (numBytes=786432) to dn1.hdfs/127.1.3.1:26397',
]


def test_a_transfer_the_namenode_ordered_is_a_finalized_transfer():
    import re
    port = re.search(r"to dn1\.hdfs/[\d.]+:(\d+)", TRANSFER_LINES[-1]).group(1)
    evs = strip(map_lines(TRANSFER_LINES, "datanode", hosts={f"127.0.0.1:{port}": "dn1",
                                                               f"dn1.hdfs:{port}": "dn1"}))
    assert evs == [dict(event="dn.transfer", block=1073741825, gs=1002, len=786432,
                        target="dn1", stage="TRANSFER_FINALIZED")]
    # the same copy without the order: a writer's pipeline replacement
    assert strip(map_lines(TRANSFER_LINES[-1:], "datanode", hosts={f"127.0.0.1:{port}": "dn1"})
                 )[0]["stage"] == "TRANSFER_RBW"


# real lines of dn-restart-too-late on Hadoop 3.4.2: dn1 restarting, not back within 1 s
RESTART_LATE_LINES = [
    '2026-11-24 06:53:49,602 DEBUG [DataStreamer for file /data/f1] DataStreamer/DataStreamer: pipeline = [DatanodeInfoWithStorage[127.0.0.1:25878,DS-762b2ee0-3952-4781-8eee-5ba79848bf29,DISK]], blk_1073741826_1002',
    '2026-11-24 06:53:49,621 DEBUG [DataStreamer for file /data/f1 block BP-586010473-127.0.0.1-1795503219867:blk_1073741826_1002] DataStreamer/DataStreamer: stage=DATA_STREAMING, blk_1073741826_1002',
    '2026-11-24 06:53:50,329 INFO [ResponseProcessor for block BP-586010473-127.0.0.1-1795503219867:blk_1073741826_1002] DataStreamer/DataStreamer$ErrorState: Datanode 0 is restarting: DatanodeInfoWithStorage[127.0.0.1:25878,DS-762b2ee0-3952-4781-8eee-5ba79848bf29,DISK]',
    '2026-11-24 06:53:51,434 WARN [DataStreamer for file /data/f1 block BP-586010473-127.0.0.1-1795503219867:blk_1073741826_1002] DataStreamer/DataStreamer$ErrorState: Datanode 0 did not restart within 1000ms: DatanodeInfoWithStorage[127.0.0.1:25878,DS-762b2ee0-3952-4781-8eee-5ba79848bf29,DISK]',
]


def test_a_restart_not_in_time_is_a_timeout_and_a_bad_node():
    import re
    port = re.search(r"127\.0\.0\.1:(\d+),DS-", RESTART_LATE_LINES[-1]).group(1)
    evs = strip(map_lines(RESTART_LATE_LINES, "client", hosts={f"127.0.0.1:{port}": "dn1"}))
    assert [e["event"] for e in evs] == [
        "client.pipeline.setup", "client.pipeline.restart_wait", "client.pipeline.error",
        "client.pipeline.restart_timeout", "client.pipeline.error"]
    assert evs[3] == dict(event="client.pipeline.restart_timeout", path="/data/f1",
                          block=1073741826, dn="dn1", timeout=1.0)
    assert (evs[4]["bad_node"], evs[4]["error_index"]) == ("dn1", 0)


# -- a pipeline rebuilt with a new node, and one rebuilt while closing (Hadoop 3.4.2 runs of
# replace-always and close-stage-partition; addresses and block pool as in the notes) ------

def _streamer(ts: str, gs: int, level: str, message: str) -> str:
    return (f"2026-11-24 09:{ts} {level} [DataStreamer for file /data/f1 block "
            f"{BP}:blk_1073741825_{gs}] DataStreamer/DataStreamer: {message}")


def _infos(*ports: int) -> str:
    return ", ".join(f"DatanodeInfoWithStorage[127.0.0.1:{p},DS-{p},DISK]" for p in ports)


HOSTS4 = {**HOSTS, "127.0.0.1:10040": "dn4"}


def _rebuilt(*after: int) -> list[str]:
    """DataStreamer lines of [dn3, dn2, dn4] losing dn2 and rebuilt on `after` (ports)."""
    return [
        _streamer("37:52,264", 1001, "WARN", f"Error Recovery for {BP}:blk_1073741825_1001 in "
                  f"pipeline [{_infos(10030, 10020, 10040)}]: datanode 1({_infos(10020)}) is bad."),
        _streamer("37:52,380", 1001, "DEBUG", f"pipeline = [{_infos(*after)}], "
                  "blk_1073741825_1001"),
        _streamer("37:52,384", 1002, "DEBUG", "stage=DATA_STREAMING, blk_1073741825_1002"),
    ]


def test_a_new_node_in_the_rebuilt_pipeline_is_an_inferred_replacement():
    """Hadoop logs no successful replacement; a node in the recovered pipeline that the
    failed one lacked came from getAdditionalDatanode (the replace-always run: [dn3, dn2,
    dn4], dn2 killed, rebuilt [dn3, dn4, dn1])."""
    evs = strip(map_lines(_rebuilt(10030, 10040, 10010), "client", hosts=HOSTS4))
    assert [e["event"] for e in evs] == ["client.pipeline.error", "client.pipeline.replace",
                                         "client.pipeline.recovered"]
    assert evs[1] == dict(event="client.pipeline.replace", path="/data/f1", block=1073741825,
                          policy=None, replication=None, remaining=2, hflushed=None,
                          decision="added", new_node="dn1", inferred=True)
    assert evs[2]["pipeline"] == ["dn3", "dn4", "dn1"]


def test_the_survivors_alone_are_no_replacement():
    assert [e["event"] for e in map_lines(_rebuilt(10030, 10040), "client", hosts=HOSTS4)] == [
        "client.pipeline.error", "client.pipeline.recovered"]


def test_a_pipeline_rebuilt_while_closing_is_announced_by_closing_old_block():
    """PIPELINE_CLOSE_RECOVERY finalizes during setup, so no packet shows the new GS; the
    close-stage-partition run's `Closing old block ..._1002` is the first line that does."""
    lines = [
        _streamer("38:58,697", 1001, "WARN", f"Error Recovery for {BP}:blk_1073741825_1001 in "
                  f"pipeline [{_infos(10010, 10030, 10020)}]: datanode 0({_infos(10010)}) is bad."),
        _streamer("38:58,705", 1001, "DEBUG", f"pipeline = [{_infos(10030, 10020)}], "
                  "blk_1073741825_1001"),
        _streamer("38:59,325", 1001, "DEBUG", f"Closing old block {BP}:blk_1073741825_1002"),
    ]
    evs = strip(map_lines(lines, "client", hosts=HOSTS))
    assert [e["event"] for e in evs] == ["client.pipeline.error", "client.pipeline.recovered"]
    assert evs[1] == dict(event="client.pipeline.recovered", path="/data/f1", block=1073741825,
                          old_gs=1001, gs=1002, pipeline=["dn3", "dn2"])
    # a block closed at the GS it was announced with announces nothing again
    normal = [_streamer("38:56,197", 1001, "DEBUG", "nodes [" + _infos(10010, 10030) +
                        "] storageTypes [DISK, DISK] storageIDs [DS-1, DS-3]"),
              _streamer("38:57,000", 1001, "DEBUG", f"Closing old block {BP}:blk_1073741825_1001")]
    assert [e["event"] for e in map_lines(normal, "client", hosts=HOSTS)] == ["client.pipeline.setup"]


def _ack(ts: str, seqno: int) -> str:
    return (f"2026-11-24 09:{ts} DEBUG [ResponseProcessor for block {BP}:blk_1073741825_1001] "
            f"DataStreamer/DataStreamer$ResponseProcessor: DFSClient seqno: {seqno} reply: "
            "SUCCESS reply: SUCCESS reply: SUCCESS downstreamAckTimeNanos: 1 flag: 0 flag: 0 "
            "flag: 0")


def test_pipeline_error_carries_the_bytes_acked_before_it():
    """P3 needs what was acked by all when the pipeline failed: the last SUCCESS ack of the
    block (its packet's lastByteOffsetInBlock) before the Error Recovery line."""
    sent = [_streamer(f"37:5{i},000", 1001, "DEBUG",
                      f"blk_1073741825_1001 sending packet seqno: {i} offsetInBlock: {i * 65536} "
                      f"lastPacketInBlock: false lastByteOffsetInBlock: {(i + 1) * 65536}")
            for i in range(3)]
    lines = sent + [_ack("37:51,500", 0), _ack("37:51,600", 1)] + _rebuilt(10030, 10040)
    evs = map_lines(lines, "client", hosts=HOSTS4)
    err, = [e for e in evs if e["event"] == "client.pipeline.error"]
    assert err["acked"] == 2 * 65536      # seqno 2 was sent, never acked
    # no ack logged for the block: unknown, not 0
    err, = [e for e in map_lines(_rebuilt(10030, 10040), "client", hosts=HOSTS4)
            if e["event"] == "client.pipeline.error"]
    assert err["acked"] is None


def test_a_shutdown_for_restart_is_a_dn_stop_with_restart():
    """`dfsadmin -shutdownDatanode <ipc> upgrade` (the harness's graceful restart, real
    3.4.2 lines): the RBW replicas are saved, dn.stop says so (B6 then accepts them back
    as RBW); a stop without the command (SIGTERM) is no restart."""
    cmd = ("2026-11-26 12:59:10,695 INFO [IPC Server handler 0 on default port 23514] "
           "DataNode/DataNode: shutdownDatanode command received (upgrade=true). Shutting "
           "down Datanode...")
    down = ["2026-11-26 12:59:10,849 INFO [shutdown-hook-0] DataNode/StringUtils$1: "
            "SHUTDOWN_MSG: ", "SHUTDOWN_MSG: Shutting down DataNode at vm/127.0.0.1"]
    assert one([cmd, *down, *down], "datanode") == [dict(event="dn.stop", restart=True),
                                                    dict(event="dn.stop", restart=False)]
    assert one([cmd.replace("upgrade=true", "upgrade=false"), *down], "datanode") == [
        dict(event="dn.stop", restart=False)]
