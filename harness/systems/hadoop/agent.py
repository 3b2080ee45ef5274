"""Events from inside the Hadoop JVMs (issue 32): a Byteman agent in every daemon and
workload client JVM, its rules generated from one table per release line, and the
mapper that turns what the rules write into contract events (spec/EVENTS.md).

Each `AgentRule` names a method (class, method, the exact descriptor its checks look for
in the release's jar), a Byteman location (AT ENTRY, AT EXIT, AT EXCEPTION EXIT, ...), a
condition and the fields it reads there, each a Byteman expression. `script()` writes
them as a .btm file: each rule appends one line to the JVM's agent file (the system
property `hdfs-chaos.agent.out`, Byteman's traceOpen: append, flushed per line)

    <rule> TAB <Instant.now()> TAB <thread id> TAB <thread name> TAB <field 1> TAB ...

so no JSON is built inside the JVM; `AgentMapper` parses those lines, joins the parts of
one call (an ENTRY part and its EXIT part, on the same thread) and makes the contract
event, with `source: "hadoop-agent"`. The harness writes them, with their own seq, to
`events/<node>-agent.jsonl` (a log of their own: check I1 counts each log's seq).

Where an agent event says what a log line said, the agent's wins and the log adapter
drops its own (`REPLACES`): one source per fact.

Exact injection (docs/hadoop.md): the rules an exact trigger can hold at
(`hold_rules`) are generated through the helper agenthold/AgentHold.java, which writes
the same line and then may hold the calling thread; `HoldRecords` maps the announced
line to contract events for harness.exact.HoldServer.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import re

SOURCE = "hadoop-agent"
OUT_PROPERTY = "hdfs-chaos.agent.out"
TRACE_KEY = "hdfs-chaos"
_BLK = re.compile(r"^blk_(-?\d+)_(\d+)$")
_BLK_IN = re.compile(r"blk_(-?\d+)_(\d+)")

FSN = "org.apache.hadoop.hdfs.server.namenode.FSNamesystem"
BM = "org.apache.hadoop.hdfs.server.blockmanagement.BlockManager"
BPS = "org.apache.hadoop.hdfs.server.datanode.fsdataset.impl.BlockPoolSlice"
_NN = "org.apache.hadoop.hdfs.server.namenode."
_BMP = "org.apache.hadoop.hdfs.server.blockmanagement."
_DN = "org.apache.hadoop.hdfs.server.datanode."

DS = "org.apache.hadoop.hdfs.DataStreamer"
RDF = "org.apache.hadoop.hdfs.protocol.datatransfer.ReplaceDatanodeOnFailure"
DFSOS = "org.apache.hadoop.hdfs.DFSOutputStream"

# contract events an agent rule provides in place of the log adapter's (logmap), by role:
# the log's recoverLease line names no requester; the log's client.pipeline.replace are
# inferred `added` only (a new node in a rebuilt pipeline), without the policy's inputs;
# its nn.file.close has no length, its truncate line no answer; its addStoredBlock line
# gives, before 3.4, the NameNode's block length, not the reported replica's. An entry is
# an event name, or (event, field, value)
# for the events of that name with that field's value only: a failed setup of a new
# block's pipeline is the agent's client.pipeline.error (rule setup_failed).
REPLACES: dict[str, frozenset] = {
    "namenode": frozenset({"nn.lease.recover", "nn.file.close", "nn.replica.reported",
                           "nn.file.truncate"}),
    "datanode": frozenset(),
    "client": frozenset({"client.pipeline.replace",
                         ("client.pipeline.error", "stage", "PIPELINE_SETUP_CREATE")}),
}


def replaced(drop: frozenset, event: dict) -> bool:
    """Whether the log adapter leaves `event` out: an entry of `drop` (REPLACES) names it."""
    name = event.get("event")
    return any(d == name or (isinstance(d, tuple) and d[0] == name and event.get(d[1]) == d[2])
               for d in drop)


@dataclasses.dataclass(frozen=True)
class AgentRule:
    """One Byteman rule: at `location` of `cls.method` (the method whose javap signature
    is `signature`, checked on each tested release), if `condition`, write `fields`
    (name -> Byteman expression). `event` is the contract event it makes, alone or with
    the other parts of the same call (`part`: entry, exit)."""
    name: str
    role: str
    cls: str
    method: str
    signature: str          # as javap -p prints it, without modifiers/throws
    location: str
    event: str
    fields: tuple[tuple[str, str], ...]
    condition: str = "true"
    part: str = "whole"     # whole | entry | note (a fact inside the call) | exit
    # every other member its expressions use: (class, javap text of the member)
    uses: tuple[tuple[str, str], ...] = ()
    # the method is overloaded: the rule names its parameter types (from `signature`)
    overload: bool = False

    def method_spec(self) -> str:
        if not self.overload:
            return self.method
        return self.method + self.signature[self.signature.index("("):]


def _f(**kw: str) -> tuple[tuple[str, str], ...]:
    return tuple(kw.items())


_RLI_SIG = ("boolean recoverLeaseInternal(org.apache.hadoop.hdfs.server.namenode.FSNamesystem"
            "$RecoverLeaseOp, org.apache.hadoop.hdfs.server.namenode.INodesInPath, "
            "java.lang.String, java.lang.String, java.lang.String, boolean)")
_CTC_SIG = ("void convertToCompleteBlock(org.apache.hadoop.hdfs.server.blockmanagement."
            "BlockInfo, org.apache.hadoop.hdfs.server.namenode.INodesInPath)")
_ARM_SIG = ("void addReplicaToReplicasMap(org.apache.hadoop.hdfs.protocol.Block, org.apache."
            "hadoop.hdfs.server.datanode.fsdataset.impl.ReplicaMap, org.apache.hadoop.hdfs."
            "server.datanode.fsdataset.impl.RamDiskReplicaTracker, boolean)")

# The 3.4 table (3.4.2's jars; 3.3.6 and 3.2.4 have the same methods, checked by
# tests/unit/test_hadoop_agent_rules.py against each release's jar).
TABLE_3_4: list[AgentRule] = [
    # L2: who asked for a lease recovery, and whether it was forced. FSNamesystem.
    # recoverLeaseInternal is where the recoverLease RPC (force) and a create / append of
    # a file another client holds (no force: the soft limit decides) meet; the lease's
    # holder is the file's under-construction client, read at entry, before the call
    # hands the lease to the recovering holder. Only files under construction: for a
    # closed file the method returns at once and recovers nothing.
    AgentRule("recover_lease_entry", "namenode", FSN, "recoverLeaseInternal", _RLI_SIG,
              "AT ENTRY", "nn.lease.recover",
              _f(op="$1", path="$3", requester="$4", force="$6",
                 holder="$2.getLastINode().asFile().getFileUnderConstructionFeature()"
                        ".getClientName()"),
              condition="$2.getLastINode() != null && $2.getLastINode().isFile() && "
                        "$2.getLastINode().asFile().isUnderConstruction()",
              part="entry",
              uses=((_NN + "INodesInPath", f"{_NN}INode getLastINode()"),
                    (_NN + "INode", "boolean isFile()"),
                    (_NN + "INode", f"{_NN}INodeFile asFile()"),
                    (_NN + "INodeFile", "boolean isUnderConstruction()"),
                    (_NN + "INodeFile",
                     f"{_NN}FileUnderConstructionFeature getFileUnderConstructionFeature()"),
                    (_NN + "FileUnderConstructionFeature", "java.lang.String getClientName()"),
                    (FSN + "$RecoverLeaseOp", "RECOVER_LEASE;"))),
    # a soft-limit takeover by create/append released the lease (internalReleaseLease
    # returned: true = closed, false = a block recovery started) and then throws
    # RecoveryInProgress when it did not close: the recovery's result is what
    # internalReleaseLease said, as the mini-HDFS logs it (the refusal is the RPC's own)
    AgentRule("recover_lease_released", "namenode", FSN, "internalReleaseLease",
              f"boolean internalReleaseLease({_NN}LeaseManager$Lease, java.lang.String, "
              f"{_NN}INodesInPath, java.lang.String)", "AT EXIT", "nn.lease.recover",
              _f(released="$!"), part="note"),
    # its answer: true = the file is closed, false = a block recovery runs on
    AgentRule("recover_lease_exit", "namenode", FSN, "recoverLeaseInternal", _RLI_SIG,
              "AT EXIT", "nn.lease.recover", _f(closed="$!"), part="exit"),
    # refused: AlreadyBeingCreated (soft limit not expired), RecoveryInProgress, ...
    AgentRule("recover_lease_error", "namenode", FSN, "recoverLeaseInternal", _RLI_SIG,
              "AT EXCEPTION EXIT", "nn.lease.recover",
              _f(error="$^.getClass().getSimpleName()"), part="exit"),
    # H1: a block becomes COMPLETE on the NameNode. BlockManager.convertToCompleteBlock is
    # the one place the state changes (completeBlock returns early for a block already
    # COMPLETE); iip is null when the last replica's report completes it (addStoredBlock)
    # or it is forced complete, so the path comes from the block's file. Not when the
    # NameNode replays its edit log at start (BlockManager.forceCompleteBlock, via
    # completeBlock): that block was COMPLETE before the restart, no state changes.
    AgentRule("block_complete", "namenode", BM, "convertToCompleteBlock", _CTC_SIG,
              "AT EXIT", "nn.block.state",
              _f(block="$1", len="$1.getNumBytes()",
                 path="$0.getBlockCollection($1) == null ? \"\" : "
                      "$0.getBlockCollection($1).getName()"),
              condition="!callerEquals(\"forceCompleteBlock\", 3)",
              uses=((BM, f"{_BMP}BlockCollection getBlockCollection({_BMP}BlockInfo)"),
                    (BM, f"void forceCompleteBlock({_BMP}BlockInfo)"),
                    (_BMP + "BlockCollection", "java.lang.String getName()"),
                    ("org.apache.hadoop.hdfs.protocol.Block", "long getNumBytes()"))),
    # H1's other input: a FINALIZED replica reported to the NameNode (BlockManager.
    # addStoredBlock: a RECEIVED_BLOCK, a full report's finalized replica, the last
    # report of a COMMITTED block, which may complete it inside the call: hence at entry),
    # with the reported block's GS and length; 3.3's and 3.2's log line prints the
    # NameNode's stored length instead (3.4 prints the reported one). Not when called by
    # addStoredBlockUnderConstruction: rule replica_reported_uc has that report already.
    AgentRule("replica_reported", "namenode", BM, "addStoredBlock",
              f"org.apache.hadoop.hdfs.protocol.Block addStoredBlock({_BMP}BlockInfo, "
              f"org.apache.hadoop.hdfs.protocol.Block, {_BMP}DatanodeStorageInfo, "
              f"{_BMP}DatanodeDescriptor, boolean)", "AT ENTRY", "nn.replica.reported",
              _f(dn="$3.getDatanodeDescriptor().getXferAddr()", block="$2.getBlockId()",
                 gs="$2.getGenerationStamp()", len="$2.getNumBytes()"),
              condition="!callerEquals(\"addStoredBlockUnderConstruction\")",
              uses=((_BMP + "DatanodeStorageInfo", f"{_BMP}DatanodeDescriptor getDatanodeDescriptor()"),
                    ("org.apache.hadoop.hdfs.protocol.DatanodeID", "java.lang.String getXferAddr()"),
                    ("org.apache.hadoop.hdfs.protocol.Block", "long getBlockId()"),
                    ("org.apache.hadoop.hdfs.protocol.Block", "long getGenerationStamp()"),
                    (BM, "void addStoredBlockUnderConstruction("))),
    # A FINALIZED replica reported for a block under construction (BlockManager.
    # addStoredBlockUnderConstruction): the NameNode records its GS and length in the
    # block's replica list (addReplicaIfNotPresent) and calls addStoredBlock only when the
    # storage is not yet a location of the block. A node of a close-stage recovery
    # reported the old GS FINALIZED first, so its report of the new GS reaches only here,
    # and commitOrCompleteLastBlock counts that storage (HDFS-16146 on 3.4.2).
    AgentRule("replica_reported_uc", "namenode", BM, "addStoredBlockUnderConstruction",
              f"void addStoredBlockUnderConstruction({BM}$StatefulBlockInfo, "
              f"{_BMP}DatanodeStorageInfo)", "AT ENTRY", "nn.replica.reported",
              _f(dn="$2.getDatanodeDescriptor().getXferAddr()",
                 block="$1.reportedBlock.getBlockId()",
                 gs="$1.reportedBlock.getGenerationStamp()",
                 len="$1.reportedBlock.getNumBytes()"),
              condition="$1.reportedState.name().equals(\"FINALIZED\")",
              uses=((BM + "$StatefulBlockInfo", "org.apache.hadoop.hdfs.protocol.Block reportedBlock;"),
                    (BM + "$StatefulBlockInfo", "org.apache.hadoop.hdfs.server.common."
                                                "HdfsServerConstants$ReplicaState reportedState;"),
                    (_BMP + "DatanodeStorageInfo", f"{_BMP}DatanodeDescriptor getDatanodeDescriptor()"),
                    ("org.apache.hadoop.hdfs.protocol.DatanodeID", "java.lang.String getXferAddr()"))),
    # A file closes: FSNamesystem.finalizeINodeFileUnderConstruction, called by
    # completeFile (FSDirWriteFileOp.completeFileInternal), by internalReleaseLease (all
    # blocks complete, or an empty last block removed) and by a closing
    # commitBlockSynchronization (closeFileCommitBlocks); its caller is the reason. The
    # length is the file's at that moment (INodeFile.computeFileSize).
    AgentRule("file_close", "namenode", FSN, "finalizeINodeFileUnderConstruction",
              "void finalizeINodeFileUnderConstruction(java.lang.String, "
              f"{_NN}INodeFile, int, boolean)", "AT EXIT", "nn.file.close",
              _f(path="$1", len="$2.computeFileSize()",
                 reason="callerEquals(\"closeFileCommitBlocks\") ? \"block_recovery\" : "
                        "(callerEquals(\"internalReleaseLease\") ? \"lease_recovery\" : "
                        "(callerEquals(\"completeFileInternal\") ? \"complete\" : \"\"))"),
              uses=((_NN + "INodeFile", "long computeFileSize()"),
                    (FSN, "void closeFileCommitBlocks(java.lang.String, "
                          f"{_NN}INodeFile, {_BMP}BlockInfo)"),
                    (FSN, "boolean internalReleaseLease("),
                    (_NN + "FSDirWriteFileOp", "boolean completeFileInternal("))),
    # B6: a replica of an rbw folder loaded at DataNode start: RWR, or RBW when a restart
    # for upgrade left its restart meta (BlockPoolSlice.addReplicaToReplicasMap; read back
    # from the replica map once added: the method decides the state and length inside)
    AgentRule("replica_loaded", "datanode", BPS, "addReplicaToReplicasMap", _ARM_SIG,
              "AT EXIT", "dn.replica.state",
              _f(block="$1.getBlockId()", gs="$2.get($0.bpid, $1.getBlockId())"
                 ".getGenerationStamp()",
                 len="$2.get($0.bpid, $1.getBlockId()).getNumBytes()",
                 state="$2.get($0.bpid, $1.getBlockId()).getState()"),
              condition="!$4 && $2.get($0.bpid, $1.getBlockId()) != null",
              uses=((BPS, "java.lang.String bpid;"),
                    (_DN + "fsdataset.impl.ReplicaMap",
                     f"{_DN}ReplicaInfo get(java.lang.String, long)"),
                    ("org.apache.hadoop.hdfs.protocol.Block", "long getBlockId()"),
                    ("org.apache.hadoop.hdfs.protocol.Block", "long getGenerationStamp()"),
                    (_DN + "Replica", "org.apache.hadoop.hdfs.server.common."
                                      "HdfsServerConstants$ReplicaState getState()"))),
    # P2: the replace-datanode-on-failure decision and its inputs, in the client's
    # DataStreamer (its streamer thread): ReplaceDatanodeOnFailure.satisfy gives the
    # policy's answer for (replication, the remaining nodes, append, hflushed), called by
    # DataStreamer.handleDatanodeReplacement only; addDatanode2ExistingPipeline then
    # adds a node, returns without one (3.4: nothing written yet, i.e. not an append,
    # lastAckedSeqno < 0 and stage PIPELINE_SETUP_CREATE; 3.3 and 3.2 also when the
    # pipeline is closing), or throws (handleDatanodeReplacement swallows it when
    # best-effort is set). The exit parts carry the stage and lastAckedSeqno (the
    # stream's, not the block's: -1 until the stream's first packet is acked), which
    # the call does not change, so that P2 can tell that return from a missed node.
    AgentRule("replace_policy", "client", RDF, "satisfy",
              f"boolean satisfy(short, {'org.apache.hadoop.hdfs.protocol.DatanodeInfo'}[], "
              "boolean, boolean)", "AT EXIT", "client.pipeline.replace",
              _f(policy="$0.policy", best_effort="$0.bestEffort", replication="$1",
                 remaining="java.util.Arrays.toString($2)", append="$3", hflushed="$4",
                 need="$!"),
              part="entry",
              uses=((RDF, f"{RDF}$Policy policy;"), (RDF, "boolean bestEffort;"))),
    AgentRule("replace_add_failed", "client", DS, "addDatanode2ExistingPipeline",
              "void addDatanode2ExistingPipeline()", "AT EXCEPTION EXIT",
              "client.pipeline.replace", _f(error="$^.getClass().getSimpleName()"),
              part="note"),
    AgentRule("replace_done", "client", DS, "handleDatanodeReplacement",
              "void handleDatanodeReplacement()", "AT EXIT", "client.pipeline.replace",
              _f(path="$0.src", block="$0.getBlock()",
                 pipeline="java.util.Arrays.toString($0.nodes)", stage="$0.stage",
                 last_acked_seqno="$0.lastAckedSeqno"),
              part="exit",
              uses=((DS, "java.lang.String src;"),
                    (DS, "org.apache.hadoop.hdfs.protocol.DatanodeInfo[] nodes;"),
                    (DS, "org.apache.hadoop.hdfs.protocol.ExtendedBlock getBlock()"),
                    (DS, "long lastAckedSeqno;"))),
    # A stream the client gives up without closing it: DFSOutputStream.abort, called by
    # DFSClient.closeAllFilesBeingWritten(true) when the client failed to renew its lease
    # for the hard limit (3.x DFSClient.renewLease) or a renewal timed out (LeaseRenewer
    # .run). The workload sees it only at its next call on the stream, and a writer that
    # keeps its file open without writing never does; abort sets this very message.
    AgentRule("stream_abort", "client", DFSOS, "abort", "void abort()", "AT ENTRY",
              "client.stream.error",
              _f(path="$0.src", timeout="$0.dfsClient.getConf().getHdfsTimeout() / 1000"),
              condition="!$0.isClosed()",
              uses=((DFSOS, "java.lang.String src;"), (DFSOS, "boolean isClosed()"),
                    (DFSOS, "org.apache.hadoop.hdfs.DFSClient dfsClient;"),
                    ("org.apache.hadoop.hdfs.DFSClient",
                     "org.apache.hadoop.hdfs.client.impl.DfsClientConf getConf()"),
                    ("org.apache.hadoop.hdfs.client.impl.DfsClientConf",
                     "int getHdfsTimeout()"))),
    AgentRule("replace_failed", "client", DS, "handleDatanodeReplacement",
              "void handleDatanodeReplacement()", "AT EXCEPTION EXIT",
              "client.pipeline.replace",
              _f(path="$0.src", block="$0.getBlock()", error="$^.getClass().getSimpleName()",
                 stage="$0.stage", last_acked_seqno="$0.lastAckedSeqno"),
              part="exit"),
]

# P3 and B6: a replica's state on the DataNode each time a write makes or changes it
# (FsDatasetImpl, called by BlockReceiver for each stage of a pipeline setup): created
# RBW, an RBW's GS bumped by a pipeline recovery (recoverRbw: every node of the rebuilt
# pipeline, the new one too), a FINALIZED replica reopened for append or recovered in an
# append setup (RBW at the new GS), a close recovery (FINALIZED at the new GS) and a
# transferred replica turned RBW on its new node (convertTemporaryToRbw, at the old GS).
# `len` is the bytes on disk: what the replica holds (recoverRbw has checked it is at
# least the bytes acked). Hadoop logs none of these (recoverRbw names only the old GS).
FSD = _DN + "fsdataset.impl.FsDatasetImpl"
_EB = "org.apache.hadoop.hdfs.protocol.ExtendedBlock"
_RH = _DN + "ReplicaHandler"
_RIP = _DN + "ReplicaInPipeline"
_STATE = "org.apache.hadoop.hdfs.server.common.HdfsServerConstants$ReplicaState getState()"


def _replica_rule(name: str, method: str, signature: str, replica: str, reason: str,
                  overload: bool = False) -> AgentRule:
    return AgentRule(name, "datanode", FSD, method, signature, "AT EXIT", "dn.replica.state",
                     _f(block=f"{replica}.getBlockId()", gs=f"{replica}.getGenerationStamp()",
                        len=f"{replica}.getBytesOnDisk()", state=f"{replica}.getState()",
                        reason=f"\"{reason}\""),
                     overload=overload,
                     uses=((_RH, f"{_RIP} getReplica()"), (_DN + "Replica", "long getBlockId()"),
                           (_DN + "Replica", "long getGenerationStamp()"),
                           (_DN + "Replica", "long getBytesOnDisk()"), (_DN + "Replica", _STATE)))


_REPLICA_RULES = [
    _replica_rule("replica_recover_rbw", "recoverRbw",
                  f"{_RH} recoverRbw({_EB}, long, long, long)", "$!.getReplica()", "recover_rbw"),
    _replica_rule("replica_append", "append", f"{_RH} append({_EB}, long, long)",
                  "$!.getReplica()", "append", overload=True),
    _replica_rule("replica_recover_append", "recoverAppend",
                  f"{_RH} recoverAppend({_EB}, long, long)", "$!.getReplica()", "recover_append"),
    _replica_rule("replica_recover_close", "recoverClose",
                  f"{_DN}Replica recoverClose({_EB}, long, long)", "$!", "recover_close"),
    _replica_rule("replica_transfer_rbw", "convertTemporaryToRbw",
                  f"{_RIP} convertTemporaryToRbw({_EB})", "$!", "transfer"),
]
_ST = "org.apache.hadoop.fs.StorageType"
# 3.4 added createRbw(..., long) for the block's expected size, which BlockReceiver calls
# (the old one now delegates to it); 3.3 and 3.2 have only the old one
_CREATED_3_4 = _replica_rule("replica_created", "createRbw",
                             f"{_RH} createRbw({_ST}, java.lang.String, {_EB}, boolean, long)",
                             "$!.getReplica()", "create", overload=True)
_CREATED_3_3 = _replica_rule("replica_created", "createRbw",
                             f"{_RH} createRbw({_ST}, java.lang.String, {_EB}, boolean)",
                             "$!.getReplica()", "create", overload=True)

# P7: a failed setup of a new block's pipeline. The client: DataStreamer.
# createBlockOutputStream returns false at the PIPELINE_SETUP_CREATE stage having set the
# bad node's index (the firstBadLink the first DataNode answered, else 0);
# nextBlockOutputStream then abandons the block and excludes that node from the next
# addBlock. Hadoop logs no "Error Recovery" line for it: this is its client.pipeline.error.
_DI = "org.apache.hadoop.hdfs.protocol.DatanodeInfo"
_SETUP_FAILED = AgentRule(
    "setup_failed", "client", DS, "createBlockOutputStream",
    f"boolean createBlockOutputStream({_DI}[], {_ST}[], java.lang.String[], long, boolean)",
    "AT EXIT", "client.pipeline.error",
    _f(path="$0.src", block="$0.block.getCurrentBlock()",
       pipeline="java.util.Arrays.toString($1)", index="$0.errorState.getBadNodeIndex()"),
    condition="!$! && $0.stage.name().equals(\"PIPELINE_SETUP_CREATE\") && "
              "$0.errorState.getBadNodeIndex() >= 0 && $0.errorState.getBadNodeIndex() < $1.length",
    uses=((DS, "org.apache.hadoop.hdfs.DataStreamer$BlockToWrite block;"),
          (DS, "org.apache.hadoop.hdfs.DataStreamer$ErrorState errorState;"),
          (DS, "org.apache.hadoop.hdfs.protocol.datatransfer.BlockConstructionStage stage;"),
          ("org.apache.hadoop.hdfs.DataStreamer$BlockToWrite", f"{_EB} getCurrentBlock()"),
          ("org.apache.hadoop.hdfs.DataStreamer$ErrorState", "int getBadNodeIndex()")))
# The DataNodes: DataXceiver.writeBlock answers its upstream's setup with a connect-ack
# (BlockOpResponseProto status + firstBadLink, the locals `mirrorInStatus` and
# `firstBadLink`): the 2nd setFirstBadLink call in the method forwards what its mirror
# answered (SUCCESS and "" when all connected); the 1st, in the catch of a failed connect
# to the mirror, answers ERROR naming the mirror (targets[0]). Only a client's write
# (isClient) answers; a transfer's target does not.
_XC = _DN + "DataXceiver"
_WB_SIG = (f"void writeBlock({_EB}, {_ST}, org.apache.hadoop.security.token.Token<org.apache."
           f"hadoop.hdfs.security.token.block.BlockTokenIdentifier>, java.lang.String, {_DI}[], "
           f"{_ST}[], {_DI}, org.apache.hadoop.hdfs.protocol.datatransfer.BlockConstructionStage, "
           "int, long, long, long, org.apache.hadoop.util.DataChecksum, "
           f"{_DN}CachingStrategy, boolean, boolean, boolean[], java.lang.String, "
           "java.lang.String[])")
# (Byteman parses no call on an array element: the mapper takes targets[0] from the list)
_SETUP_FIELDS = dict(block="$1.getBlockId()", gs="$1.getGenerationStamp()", stage="$8",
                     upstream="$4", targets="java.util.Arrays.toString($5)")
_SETUP_RULES = [
    AgentRule("setup_ack", "datanode", _XC, "writeBlock", _WB_SIG, "AT INVOKE setFirstBadLink 2",
              "dn.pipeline.setup", _f(**_SETUP_FIELDS, status="$mirrorInStatus",
                                      first_bad_link="$firstBadLink"),
              condition="$isClient && !$isTransfer"),
    AgentRule("setup_mirror_failed", "datanode", _XC, "writeBlock", _WB_SIG,
              "AT INVOKE setFirstBadLink 1", "dn.pipeline.setup",
              _f(**_SETUP_FIELDS, status="\"ERROR\"", first_bad_link="\"mirror\""),
              condition="$isClient && $5.length > 0"),
]

# A truncate on the NameNode (FSDirTruncateOp.truncate, under the namesystem's write
# lock): its answer says whether the cut was done at once (true) or a truncate recovery
# was started (false: prepareFileForTruncate queued it for the primary), which the log's
# truncate line, written before the call, cannot say. Held here (exact injection), the
# handler keeps the write lock, so no heartbeat takes the recovery command meanwhile.
_TRUNCATE = AgentRule(
    "truncate", "namenode", _NN + "FSDirTruncateOp", "truncate",
    f"static {_NN}FSDirTruncateOp$TruncateResult truncate({FSN}, java.lang.String, long, "
    f"java.lang.String, java.lang.String, long, {_NN}INode$BlocksMapUpdateInfo, "
    f"{_NN}FSPermissionChecker)", "AT EXIT", "nn.file.truncate",
    _f(path="$2", len="$3", ok="$!.getResult()"),
    uses=((_NN + "FSDirTruncateOp$TruncateResult", "boolean getResult()"),))

TABLE_3_4 += [_CREATED_3_4, *_REPLICA_RULES, _SETUP_FAILED, *_SETUP_RULES, _TRUNCATE]
TABLE_3_3: list[AgentRule] = [_CREATED_3_3 if r.name == "replica_created" else r
                              for r in TABLE_3_4]
TABLE_3_2: list[AgentRule] = TABLE_3_3

TABLES: dict[str, list[AgentRule]] = {"3.4": TABLE_3_4, "3.3": TABLE_3_3, "3.2": TABLE_3_2}
# the releases each table is checked on (their jars are in the Hadoop cache)
TESTED: dict[str, tuple[str, ...]] = {"3.4": ("3.4.2",), "3.3": ("3.3.6",), "3.2": ("3.2.4",)}


def table_for(release: str) -> list[AgentRule]:
    parts = release.split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        raise ValueError(f"hadoop release {release!r}: give it as MAJOR.MINOR[.PATCH], e.g. 3.4.2")
    line = ".".join(parts[:2])
    if line not in TABLES:
        raise ValueError(f"the hadoop agent has no rules for {release} (lines: "
                         f"{', '.join(sorted(TABLES))}): turn cluster.hadoop_agent off")
    return TABLES[line]


# -- exact injection (agenthold/AgentHold.java) ---------------------------------------------

HOLD_HELPER = "hdfschaos.AgentHold"
HOLD_TIMEOUT = "hold_timeout"       # the helper's own line: a hold nobody answered in time
HOLD_SOURCES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "agenthold")
# Events the logs make too, under the same name: only the agent's variant (this field
# with one of these values) can be held, and a trigger must say so in its `where`, or its
# `nth` would count events the hold never sees.
HOLD_PINS: dict[str, tuple[str, tuple[str, ...]]] = {
    "nn.block.state": ("state", ("COMPLETE",)),
    "dn.replica.state": ("reason", ("create", "recover_rbw", "append", "recover_append",
                                    "recover_close", "transfer", "restart", "restart_saved")),
    "client.pipeline.error": ("stage", ("PIPELINE_SETUP_CREATE",)),
}
# events an agent rule makes that no hold can stand for: the workload client makes them
# too, in its own code (a failed call's client.stream.error), where no rule runs
_UNHOLDABLE = {"client.stream.error": "the workload client makes it too, at its own calls"}
_ROLE_OF_NODE = (("nn", "namenode"), ("dn", "datanode"))


# the values the mapper gives a field of a rule's event (for hold_rules' filter)
_MADE_BY_MAPPER = {"replica_loaded": {"reason": ("restart", "restart_saved")}}


def holdable(release: str) -> dict[str, list[str]]:
    """The events an exact trigger can hold at on `release`: event -> its rules' names."""
    out: dict[str, list[str]] = {}
    for r in table_for(release):
        if r.event not in _UNHOLDABLE:
            out.setdefault(r.event, []).append(r.name)
    return out


def _literal(expr: str) -> str | None:
    """The string a rule's field always has (a Java string literal), else None."""
    m = re.fullmatch(r'"([^"\\]*)"', expr)
    return m.group(1) if m else None


def hold_rules(release: str, event: str, where: dict, node: str | None = None) -> list[str]:
    """The rules whose lines can make a held `event` (with `where`) on `release`, the parts
    of a call (entry, note) included: the mapper joins them. A rule whose field is a
    constant that `where` contradicts is left out (fewer announcements). Raises
    ValueError (one line) when the agent cannot hold that event."""
    if event in _UNHOLDABLE:
        raise ValueError(f"exact: true on {event}: on hadoop {_UNHOLDABLE[event]}; drop "
                         f"`exact: true` or declare `systems: [minihdfs]`")
    rules = [r for r in table_for(release) if r.event == event]
    if not rules:
        raise ValueError(
            f"exact: true on {event}: on hadoop only the agent's events can be held "
            f"({', '.join(sorted(holdable(release)))}); {event} comes from the logs, so "
            f"drop `exact: true` or declare `systems: [minihdfs]`")
    if node is not None:
        role = next((ro for p, ro in _ROLE_OF_NODE if node.startswith(p)), "client")
        if not any(r.role == role for r in rules):
            raise ValueError(f"exact: true on {event} at {node}: the agent makes {event} "
                             f"in the {rules[0].role} only")
    pin = HOLD_PINS.get(event)
    if pin is not None and where.get(pin[0]) not in pin[1]:
        raise ValueError(f"exact: true on {event}: the logs make {event} too; only the "
                         f"agent's can be held: give where {{{pin[0]}: one of "
                         f"{', '.join(pin[1])}}}")
    keep = []
    for r in rules:
        made = {k: (_literal(e),) for k, e in r.fields if _literal(e) is not None}
        made.update(_MADE_BY_MAPPER.get(r.name, {}))
        if any(k in made and str(v) not in made[k] for k, v in where.items()):
            continue
        keep.append(r.name)
    # a call's parts stay together: the exit needs its entry
    if any(r.part == "exit" for r in rules if r.name in keep):
        keep = sorted(set(keep) | {r.name for r in rules if r.part in ("entry", "note")})
    return keep


def spec_hold_rules(spec_path: str | None) -> frozenset[str]:
    """The rules the hold spec (MINIHDFS_HOLD's JSON, written by harness.exact) names."""
    import json
    if not spec_path:
        return frozenset()
    try:
        with open(spec_path) as f:
            spec = json.load(f)
    except (OSError, ValueError):
        return frozenset()
    return frozenset(r for h in spec.get("holds", []) for r in h.get("rules", []))


def hold_helper_dir(jar: str) -> str:
    """AgentHold compiled against the Byteman jar `jar`, once per source content (the
    agent cache, shared by every release)."""
    import hashlib
    import subprocess
    from .fetch import FetchError, agent_jar
    sources = sorted(os.path.join(HOLD_SOURCES, n) for n in os.listdir(HOLD_SOURCES)
                     if n.endswith(".java"))
    digest = hashlib.sha256()
    for path in sources:
        with open(path, "rb") as f:
            digest.update(f.read())
    out = os.path.join(os.path.dirname(str(agent_jar())), f"hold-{digest.hexdigest()[:12]}")
    stamp = os.path.join(out, ".built")
    if os.path.isfile(stamp):
        return out
    tmp = f"{out}.tmp{os.getpid()}"
    os.makedirs(tmp, exist_ok=True)
    # --release 17: the helper talks over a unix socket (java.net.UnixDomainSocketAddress)
    proc = subprocess.run(["javac", "-nowarn", "--release", "17", "-d", tmp, "-cp", jar,
                           *sources], capture_output=True, text=True)
    if proc.returncode != 0:
        raise FetchError(f"javac of {HOLD_SOURCES} failed: {proc.stderr.strip()[-400:]} "
                         f"(exact injection on hadoop needs a JDK 17+)")
    with open(os.path.join(tmp, ".built"), "w"):
        pass
    try:
        os.rename(tmp, out)     # whole or not at all: another build may have won
    except OSError:
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
    return out


class HoldRecords:
    """The harness side of a Hadoop hold: the agent line a JVM announced -> the contract
    events it makes (AgentMapper, one per node, fed only the announced lines), each with
    its node, for harness.exact.HoldServer to match."""

    def __init__(self, release: str, cluster_of):
        self.release = release
        self.cluster_of = cluster_of       # -> the run's HadoopCluster, once it exists
        self.mappers: dict[str, AgentMapper] = {}

    def __call__(self, message: dict) -> list[dict]:
        node, line = message.get("node"), message.get("agent")
        if not isinstance(node, str) or not isinstance(line, str):
            return []
        mapper = self.mappers.get(node)
        if mapper is None:
            cluster = self.cluster_of()
            spec = cluster.nodes.get(node, {}) if cluster is not None else {}
            role = spec.get("role") or next(
                (ro for p, ro in _ROLE_OF_NODE if node.startswith(p)), "client")
            hosts = cluster.address_map() if cluster is not None else None
            mapper = self.mappers[node] = AgentMapper(role, self.release, hosts)
        return [{**ev, "node": node} for ev in mapper.feed(line)]


# -- checking a release's jars ----------------------------------------------------------

def members(rules: list[AgentRule]) -> dict[str, set[str]]:
    """class -> the javap texts of the members the rules need in it (their target method
    and every member their expressions use)."""
    out: dict[str, set[str]] = {}
    for r in rules:
        for cls, member in ((r.cls, r.signature), *r.uses):
            out.setdefault(cls, set()).add(member)
    return out


def javap_classes(classpath: str, classes: list[str]) -> dict[str, str]:
    """`javap -p` of each class, by class name (a class javap cannot find is left out)."""
    import subprocess
    proc = subprocess.run(["javap", "-p", "-cp", classpath, *classes], capture_output=True,
                          text=True, timeout=120)
    out: dict[str, str] = {}
    current = None
    for line in proc.stdout.splitlines():
        m = re.match(r"^(?:[a-z]+ )*(?:class|interface|enum) ([\w.$]+)", line)
        if m:
            current = m.group(1)
            out[current] = ""
        elif current is not None:
            out[current] += line + "\n"
    return out


def missing_members(release: str, classpath: str) -> list[str]:
    """What the rules of `release`'s table need and its jars (`classpath`) lack, one
    `class: member` each; empty when every rule can be placed."""
    need = members(table_for(release))
    found = javap_classes(classpath, sorted(need))
    out = []
    for cls, wanted in sorted(need.items()):
        body = found.get(cls)
        for member in sorted(wanted):
            if body is None or not any(f" {member}" in ln for ln in body.splitlines()):
                out.append(f"{cls}: {member}" + ("" if body is not None else " (no such class)"))
    return out


def check_script(release: str, classpath: str, jar: str,
                 hold_rules: frozenset[str] | set[str] = frozenset(),
                 leases: tuple[float, float] | None = None) -> list[str]:
    """Byteman's own check of the generated script (org.jboss.byteman.check.TestScript)
    against the release's classes: each rule's class and method found, each expression
    type-checked (the rules in `hold_rules` through the hold helper). The lines that
    report a problem; empty when the script is sound."""
    import subprocess
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".btm", delete=False) as f:
        f.write(script(release, hold_rules, leases))
    extra = [hold_helper_dir(jar)] if hold_rules else []
    try:
        proc = subprocess.run(["java", "-cp", os.pathsep.join([jar, *extra, classpath]),
                               "org.jboss.byteman.check.TestScript", f.name],
                              capture_output=True, text=True, timeout=300)
    finally:
        os.unlink(f.name)
    lines = (proc.stdout + proc.stderr).splitlines()
    bad = [ln for ln in lines if ln.startswith(("ERROR", "WARNING", "org.jboss.byteman"))]
    if not any(ln.strip() == "TestScript: no errors" for ln in lines) and not bad:
        bad = [f"TestScript did not finish (exit {proc.returncode}): " + " | ".join(lines[-3:])]
    return bad


# -- the .btm script ---------------------------------------------------------------------

def _rule_text(r: AgentRule, hold: bool = False) -> str:
    line = " + \"\\t\" + ".join(
        [f"\"{r.name}\"", "java.time.Instant.now()", "Thread.currentThread().getId()",
         "Thread.currentThread().getName()"]
        + [f"({expr})" for _, expr in r.fields])
    if hold:
        # a rule an exact trigger may hold at: the helper writes the line, then may hold
        # the thread (agenthold/AgentHold.java)
        return (f"RULE hdfs-chaos {r.name}\n"
                f"CLASS {r.cls}\n"
                f"METHOD {r.method_spec()}\n"
                f"HELPER {HOLD_HELPER}\n"
                f"{r.location}\n"
                f"IF {r.condition}\n"
                f"DO emit(\"{r.name}\", {line})\n"
                f"ENDRULE\n")
    return (f"RULE hdfs-chaos {r.name}\n"
            f"CLASS {r.cls}\n"
            f"METHOD {r.method_spec()}\n"
            f"{r.location}\n"
            f"IF {r.condition}\n"
            f"DO traceOpen(\"{TRACE_KEY}\", System.getProperty(\"{OUT_PROPERTY}\"));\n"
            f"   traceln(\"{TRACE_KEY}\", {line})\n"
            f"ENDRULE\n")


# The lease limits a scenario asks for and the release's configuration cannot give (a
# soft limit, a hard limit before 3.4), set as Hadoop's own tests set them
# (MiniDFSCluster.setLeasePeriod; LeaseRenewer.setRenewalTime is @VisibleForTesting):
# class -> the javap text of the method
LEASE_MEMBERS = {
    "org.apache.hadoop.hdfs.server.namenode.LeaseManager": "public void setLeasePeriod(long, long)",
    "org.apache.hadoop.hdfs.client.impl.LeaseRenewer": "public synchronized void setRenewalTime(long)",
}


def lease_rules(soft_s: float, hard_s: float) -> str:
    """Rules that give the NameNode's LeaseManager these limits when it is made, and
    every client's LeaseRenewer a renewal every soft/2 (LeaseRenewer renews every
    LEASE_SOFTLIMIT_PERIOD / 2 otherwise)."""
    soft, hard = int(round(soft_s * 1000)), int(round(hard_s * 1000))
    return (f"RULE hdfs-chaos lease_period\n"
            f"CLASS org.apache.hadoop.hdfs.server.namenode.LeaseManager\n"
            f"METHOD <init>\n"
            f"AT EXIT\n"
            f"IF true\n"
            f"DO $0.setLeasePeriod({soft}L, {hard}L)\n"
            f"ENDRULE\n\n"
            f"RULE hdfs-chaos renewal_period\n"
            f"CLASS org.apache.hadoop.hdfs.client.impl.LeaseRenewer\n"
            f"METHOD <init>\n"
            f"AT EXIT\n"
            f"IF true\n"
            f"DO $0.setRenewalTime({max(1, soft // 2)}L)\n"
            f"ENDRULE\n")


def script(release: str, hold_rules: frozenset[str] | set[str] = frozenset(),
           leases: tuple[float, float] | None = None) -> str:
    """The Byteman script of `release`: every rule of its line's table; the rules named
    in `hold_rules` go through the hold helper (exact injection), the others write their
    line only; with `leases` (soft, hard seconds) also `lease_rules`."""
    head = (f"# generated by harness/systems/hadoop/agent.py for hadoop {release}: edit the "
            f"table there, not this file\n\n")
    body = "\n".join(_rule_text(r, r.name in hold_rules) for r in table_for(release))
    return head + body + ("\n" + lease_rules(*leases) if leases else "")


def write_script(release: str, path: str,
                 hold_rules: frozenset[str] | set[str] = frozenset(),
                 leases: tuple[float, float] | None = None) -> str:
    with open(path, "w") as f:
        f.write(script(release, hold_rules, leases))
    return path


def javaagent_flag(jar: str, script_path: str) -> str:
    return f"-javaagent:{jar}=script:{script_path}"


def boot_flag(jar: str) -> str:
    """Byteman's classes from the boot class path (as Byteman's own bmjava does): the JVM
    does not verify boot classes, and verifying Byteman's (its ASM is class version 49,
    checked by the slower type-inferring verifier) is a large part of the agent's start."""
    return f"-Xbootclasspath/a:{jar}"


# -- the agent's lines -> contract events --------------------------------------------------

def _ts(stamp: str) -> float:
    # Instant.toString, UTC: 2026-11-26T16:40:12.123456Z (a fraction of 0-9 digits)
    if not stamp.endswith("Z"):
        raise ValueError(f"not an Instant: {stamp!r}")
    return round(datetime.datetime.fromisoformat(stamp).timestamp(), 6)


def _null(v: str) -> str | None:
    return None if v in ("null", "") else v


def _int(v: str) -> int | None:
    v = _null(v)
    return None if v is None else int(v)


def _bool(v: str) -> bool | None:
    return None if _null(v) is None else v == "true"


class AgentMapper:
    """The agent lines of one JVM (one node) -> contract events."""

    def __init__(self, role: str, release: str, hosts: dict[str, str] | None = None):
        from .logmap import LogMapper
        self.role = role
        self.rules = {r.name: r for r in table_for(release)}
        # Hadoop's names of DataNodes (DatanodeInfoWithStorage[127.0.0.1:PORT,..]) -> node ids
        self.names = LogMapper(role if role in ("namenode", "datanode", "client") else "client",
                               release, hosts)
        self.entries: dict[tuple[str, str], dict] = {}   # (event, thread) -> entry part
        self.bad_lines = 0
        self.held: dict = {}        # LogAdapter's interface: nothing is held back

    def release_older(self, now: float) -> list[dict]:
        return []

    def flush(self) -> list[dict]:
        return []

    def feed(self, raw: str) -> list[dict]:
        parts = raw.rstrip("\r\n").split("\t")
        if parts[0] == HOLD_TIMEOUT:
            return self._hold_timeout(parts)
        rule = self.rules.get(parts[0])
        if rule is None or len(parts) != 4 + len(rule.fields):
            self.bad_lines += bool(raw.strip())
            return []
        try:
            ts = _ts(parts[1])
        except ValueError:
            self.bad_lines += 1
            return []
        # the parts of one call are joined on the thread's id: a DataStreamer renames its
        # thread after each block
        tid, thread = parts[2], parts[3]
        values = dict(zip((n for n, _ in rule.fields), parts[4:]))
        key = (rule.event, tid)
        if rule.part == "entry":
            self.entries[key] = {"ts": ts, **values}
            return []
        if rule.part == "note":     # a fact inside the call, kept for its exit
            if key in self.entries:
                self.entries[key].update({f"note_{k}": v for k, v in values.items()})
            return []
        if rule.part == "exit":
            entry = self.entries.pop(key, None)
            if entry is None:       # a call the entry rule's condition left out
                return []
            ev = _EVENTS[rule.event](entry, {**values, "_names": self.names,
                                             "_rule": rule.name})
            return [{"ts": entry["ts"], "event": rule.event, **ev, "source": SOURCE,
                     "rule": rule.name, "thread": thread}]
        make = _BY_RULE.get(rule.name) or _EVENTS[rule.event]
        return [{"ts": ts, "event": rule.event,
                 **make(values, {"_names": self.names, "_rule": rule.name}),
                 "source": SOURCE, "rule": rule.name, "thread": thread}]

    def _hold_timeout(self, parts: list[str]) -> list[dict]:
        """The helper's line for a hold the harness never answered (AgentHold.emit):
        `hold_timeout TAB ts TAB tid TAB thread TAB rule TAB seq TAB timeout`."""
        rule = self.rules.get(parts[4]) if len(parts) == 7 else None
        try:
            ts, seq, timeout = _ts(parts[1]), int(parts[5]), float(parts[6])
        except (ValueError, IndexError):
            rule = None
        if rule is None:
            self.bad_lines += 1
            return []
        prefix = {"namenode": "nn", "datanode": "dn"}.get(self.role, self.role)
        return [{"ts": ts, "event": f"{prefix}.hold.timeout", "held_event": rule.event,
                 "held_seq": seq, "timeout": timeout, "source": SOURCE, "rule": rule.name,
                 "thread": parts[3]}]

    def feed_all(self, lines) -> list[dict]:
        out: list[dict] = []
        for raw in lines:
            out.extend(self.feed(raw))
        return out


def _lease_recover(entry: dict, done: dict) -> dict:
    error = _null(done.get("error", ""))
    closed = _bool(done.get("closed", ""))
    released = _bool(entry.get("note_released", ""))
    if released is not None:    # the lease was released before any refusal
        error, closed = None, released
    result = "error" if error else ("closed" if closed else "recovering")
    return {"path": entry["path"], "holder": _null(entry["holder"]),
            "requester": _null(entry["requester"]), "force": _bool(entry["force"]),
            "result": result, "error": error, "op": _null(entry["op"])}


def _block_state(v: dict, _done: dict) -> dict:
    m = _BLK.match(v["block"])
    block, gs = (int(m.group(1)), int(m.group(2))) if m else (_int(v["block"]), None)
    return {"path": _null(v["path"]), "block": block, "gs": gs, "len": _int(v["len"]),
            "state": "COMPLETE"}


def _replica_loaded(v: dict, _done: dict) -> dict:
    # the mini-HDFS's reasons (minihdfs/datanode.py): an RBW loaded back is one a shutdown
    # for restart saved (its restart meta), any other becomes RWR
    reason = "restart_saved" if v["state"] == "RBW" else "restart"
    return {"block": _int(v["block"]), "gs": _int(v["gs"]), "len": _int(v["len"]),
            "state": v["state"], "reason": reason}


def _replace(entry: dict, done: dict) -> dict:
    names = done["_names"]
    remaining = names.nodes_in(entry["remaining"])
    pipeline = names.nodes_in(done.get("pipeline", "")) if done.get("pipeline") else None
    m = _BLK_IN.search(done.get("block", ""))
    need = _bool(entry["need"])
    new = [n for n in (pipeline or []) if n not in remaining]
    if not need:
        decision = "not_needed"
    elif done["_rule"] == "replace_failed":
        decision = "failed"
    elif entry.get("note_error"):
        decision = "failed_best_effort"
    elif new:
        decision = "added"
    else:
        # the policy asked for a node, but addDatanode2ExistingPipeline returned without
        # one: nothing written yet (stage and last_acked_seqno say so, P2 reads them) or,
        # before 3.4, the pipeline was closing
        decision = "not_needed"
    append = _bool(entry["append"])
    return {"path": _null(done.get("path", "")), "block": int(m.group(1)) if m else None,
            "gs": int(m.group(2)) if m else None, "policy": _null(entry["policy"]),
            "replication": _int(entry["replication"]), "remaining": len(remaining),
            # the policy's own input is "hflushed or appended" (ReplaceDatanodeOnFailure
            # .satisfy's isAppend || isHflushed), which check P2's formula reads here
            "hflushed": bool(_bool(entry["hflushed"]) or append), "append": append,
            "best_effort": _bool(entry["best_effort"]), "policy_says": need,
            "stage": _null(done.get("stage", "")),
            "last_acked_seqno": _int(done.get("last_acked_seqno", "")),
            "decision": decision, "new_node": new[0] if decision == "added" else None,
            "pipeline": pipeline,
            "error": _null(done.get("error", "") or entry.get("note_error", ""))}


def _file_truncate(v: dict, _done: dict) -> dict:
    return {"path": v["path"], "len": _int(v["len"]), "ok": _bool(v["ok"])}


def _file_close(v: dict, _done: dict) -> dict:
    return {"path": v["path"], "len": _int(v["len"]), "reason": _null(v["reason"])}


def _replica_reported(v: dict, done: dict) -> dict:
    return {"dn": done["_names"].node_of(v["dn"]), "block": _int(v["block"]),
            "gs": _int(v["gs"]), "len": _int(v["len"]), "state": "FINALIZED"}


def _replica_state(v: dict, _done: dict) -> dict:
    return {"block": _int(v["block"]), "gs": _int(v["gs"]), "len": _int(v["len"]),
            "state": v["state"], "reason": _null(v["reason"])}


def _stream_abort(v: dict, _done: dict) -> dict:
    # what the stream then throws at the workload (DFSOutputStream.abort)
    return {"path": v["path"], "error": "IOException",
            "reason": f"Lease timeout of {v['timeout']} seconds expired."}


def _setup_failed(v: dict, done: dict) -> dict:
    names = done["_names"]
    pipeline = names.nodes_in(v["pipeline"])
    index = _int(v["index"])
    m = _BLK_IN.search(v["block"])
    return {"path": _null(v["path"]), "block": int(m.group(1)) if m else None,
            "gs": int(m.group(2)) if m else None, "stage": "PIPELINE_SETUP_CREATE",
            "pipeline": pipeline, "error_index": index,
            "bad_node": pipeline[index] if index is not None and 0 <= index < len(pipeline)
            else None, "acked": None}


def _pipeline_setup(v: dict, done: dict) -> dict:
    names = done["_names"]
    targets = names.nodes_in(v["targets"])
    downstream = targets[0] if targets else None
    # the connect-ack's firstBadLink: the mirror's address (the catch of a failed connect
    # answers targets[0]) or what the mirror forwarded, "" when every node connected
    fbl = v["first_bad_link"]
    if fbl == "mirror":
        bad = downstream
    else:
        bad = names.node_of(fbl) if _null(fbl) else None
    return {"block": _int(v["block"]), "gs": _int(v["gs"]), "stage": v["stage"],
            "pipeline": None, "upstream": _null(v["upstream"]), "downstream": downstream,
            "status": v["status"], "first_bad_link": bad}


_EVENTS = {"nn.file.close": _file_close, "nn.file.truncate": _file_truncate,
           "client.pipeline.replace": _replace,
           "nn.lease.recover": _lease_recover, "nn.block.state": _block_state,
           "dn.replica.state": _replica_state, "client.pipeline.error": _setup_failed,
           "dn.pipeline.setup": _pipeline_setup, "nn.replica.reported": _replica_reported,
           "client.stream.error": _stream_abort}
# rules whose event another rule of the same name makes differently
_BY_RULE = {"replica_loaded": _replica_loaded}


# -- checking the rules against a build: python -m harness.systems.hadoop.agent VERSION ----

def check_release(version: str, say=print) -> int:
    """Fetch `version`'s jars (Maven Central, or the local Maven repository for a build
    the user installed there) and check every rule of its line against them: the
    members each rule needs (javap) and Byteman's type check of the whole script, hold
    variants included. 0 when every rule can be placed, 1 when not, 2 for bad input."""
    from . import fetch
    try:
        rules = table_for(version)
        rel = fetch.fetch(version)
        jar = str(fetch.fetch_agent())
    except (ValueError, fetch.FetchError) as e:
        say(f"hadoop agent: error: {e}")
        return 2
    cp = os.path.join(str(fetch.lib_dir(version)), "*")
    held = {name for names in holdable(version).values() for name in names}
    bad = missing_members(version, cp) or check_script(version, cp, jar, held)
    for line in bad:
        say(f"hadoop agent: {version}: {line}")
    say(f"hadoop agent: {version} ({rel}): {len(rules)} rules, "
        + ("every one placed and type-checked" if not bad else f"{len(bad)} problem(s)"))
    return 1 if bad else 0


if __name__ == "__main__":
    import sys
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        print("usage: python -m harness.systems.hadoop.agent VERSION   (e.g. 3.4.2, or "
              "3.4.3-SNAPSHOT after `mvn install` of your Hadoop build)", file=sys.stderr)
        sys.exit(2)
    sys.exit(check_release(sys.argv[1]))
