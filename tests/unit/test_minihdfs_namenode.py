"""The NameNode driven in-process (no network): the block state machine of create /
addBlock / complete, checkLease, append, and the edit log replayed by a restart.

Every test builds a NameNode on a temporary storage folder, registers DataNodes by
calling the DataNode protocol directly, and reports replicas the way a DataNode's
incremental block report would."""

from __future__ import annotations

import json
import os

import pytest

from hdfs_contract.config import Config
from hdfs_contract.events import EventLog
from minihdfs.namenode import (COMMITTED, COMPLETE, UNDER_CONSTRUCTION, NameNode)
from minihdfs.rpc import (AlreadyBeingCreatedException, FileAlreadyExistsException,
                          FileNotFoundException, IOExceptionRemote, LeaseExpiredException,
                          NotReplicatedYetException)

DNS = {"dn1": "/r1", "dn2": "/r1", "dn3": "/r2", "dn4": "/r2"}


class RecordingLog(EventLog):
    """An EventLog that writes nowhere and keeps every record in memory."""

    def __init__(self, node: str = "nn", role: str = "namenode"):
        super().__init__(None, node, role)
        self.records: list[dict] = []

    def emit(self, event, **fields):
        record = super().emit(event, **fields)
        self.records.append(record)
        return record

    def named(self, name: str, **where) -> list[dict]:
        return [r for r in self.records if r["event"] == name
                and all(r.get(k) == v for k, v in where.items())]


def new_namenode(storage, config: dict | None = None, datanodes=DNS) -> NameNode:
    nn = NameNode("nn", Config(config or {}), str(storage), RecordingLog(), seed=7)
    nn.start()
    for dn, rack in datanodes.items():
        nn.rpc_registerDatanode(dn, rack)
    return nn


@pytest.fixture
def namenodes():
    started: list[NameNode] = []
    yield started
    for nn in started:
        nn._stopped.set()


@pytest.fixture
def nn(tmp_path, namenodes):
    node = new_namenode(tmp_path / "nn")
    namenodes.append(node)
    return node


def received(nn: NameNode, dn: str, block: int, gs: int, length: int, state="FINALIZED"):
    """An incremental block report, as a DataNode sends after finalizing a replica."""
    return nn.rpc_blockReceivedAndDeleted(dn, [{"block": block, "gs": gs, "len": length,
                                                 "state": state, "kind": "received"}])


def state_of(nn: NameNode, block: int) -> str:
    return nn.blocks[block].state


def write_block(nn: NameNode, path: str, holder: str, length: int, previous=None,
                report: bool = True) -> dict:
    """addBlock, then (optionally) every target reports a FINALIZED replica of `length`."""
    lb = nn.rpc_addBlock(path, holder, previous=previous)
    if report:
        for dn in lb["locations"]:
            received(nn, dn, lb["block"], lb["gs"], length)
    return {"block": lb["block"], "gs": lb["gs"], "len": length}


# -- block state machine ---------------------------------------------------------------

def test_add_block_starts_under_construction_with_a_pipeline(nn):
    nn.rpc_create("/d/f", "c1", replication=3)
    lb = nn.rpc_addBlock("/d/f", "c1")
    assert lb["state"] == UNDER_CONSTRUCTION and lb["len"] == 0
    assert len(lb["locations"]) == 3 and len(set(lb["locations"])) == 3
    assert set(lb["locations"]) <= set(DNS)
    assert state_of(nn, lb["block"]) == UNDER_CONSTRUCTION
    [alloc] = nn.events.named("nn.block.allocate", block=lb["block"])
    assert alloc["path"] == "/d/f" and alloc["gs"] == lb["gs"] and alloc["pipeline"] == lb["locations"]
    assert nn.events.named("nn.block.state", block=lb["block"], state=UNDER_CONSTRUCTION)
    info = nn.rpc_getFileInfo("/d/f")
    assert info["closed"] is False and info["holder"] == "c1"


def test_complete_commits_then_waits_for_a_finalized_replica(nn):
    nn.rpc_create("/f", "c1", replication=3)
    lb = nn.rpc_addBlock("/f", "c1")
    last = {"block": lb["block"], "gs": lb["gs"], "len": 1000}
    # no replica reported yet: the block is COMMITTED, complete says "not yet"
    assert nn.rpc_complete("/f", "c1", last=last) is False
    assert state_of(nn, lb["block"]) == COMMITTED
    assert nn.blocks[lb["block"]].num_bytes == 1000
    assert nn.rpc_getFileInfo("/f")["closed"] is False
    # a replica being written (RBW) does not complete the block
    received(nn, lb["locations"][0], lb["block"], lb["gs"], 1000, state="RBW")
    assert state_of(nn, lb["block"]) == COMMITTED
    assert nn.rpc_complete("/f", "c1", last=last) is False
    # a FINALIZED replica with the committed GS and length does
    received(nn, lb["locations"][0], lb["block"], lb["gs"], 1000)
    assert state_of(nn, lb["block"]) == COMPLETE
    assert nn.rpc_complete("/f", "c1", last=last) is True
    info = nn.rpc_getFileInfo("/f")
    assert info["closed"] is True and info["holder"] is None and info["len"] == 1000
    assert nn.leases.get_by_path("/f") is None and nn.leases.get("c1") is None
    states = [e["state"] for e in nn.events.named("nn.block.state", block=lb["block"])]
    assert states == [UNDER_CONSTRUCTION, COMMITTED, COMPLETE]
    oks = [e["ok"] for e in nn.events.named("nn.file.complete", path="/f")]
    assert oks == [False, False, True]
    [close] = nn.events.named("nn.file.close", path="/f")
    assert close["reason"] == "complete" and close["len"] == 1000
    assert nn.events.named("nn.lease.remove", holder="c1", path="/f")


def test_finalized_replica_with_other_gs_or_length_does_not_complete(nn):
    """3.x BlockManager.checkReplicaCorrupt: for a COMMITTED block a FINALIZED replica of
    another length (SIZE_MISMATCH) or GS (GENSTAMP_MISMATCH) is corrupt; with no live
    replica (min replication not met) markBlockAsCorrupt keeps both."""
    nn.rpc_create("/f", "c1", replication=2)
    lb = nn.rpc_addBlock("/f", "c1")
    last = {"block": lb["block"], "gs": lb["gs"], "len": 4096}
    assert nn.rpc_complete("/f", "c1", last=last) is False
    short, old = lb["locations"]
    received(nn, short, lb["block"], lb["gs"], 4000)            # wrong length
    received(nn, old, lb["block"], lb["gs"] - 1, 4096)          # old GS
    assert state_of(nn, lb["block"]) == COMMITTED
    assert nn.rpc_complete("/f", "c1", last=last) is False
    corrupt = {(e["dn"], e["gs"], e["reason"])
               for e in nn.events.named("nn.replica.corrupt", block=lb["block"])}
    assert corrupt == {(short, lb["gs"], "size_mismatch"),
                       (old, lb["gs"] - 1, "genstamp_mismatch")}
    assert nn.blocks[lb["block"]].corrupt == {short: "size_mismatch", old: "genstamp_mismatch"}
    assert not nn.events.named("nn.replica.invalidate", block=lb["block"])


def test_finalized_replica_of_a_wrong_length_is_kept_corrupt_until_replaced(nn):
    """3.x BlockManager.checkReplicaCorrupt (SIZE_MISMATCH) -> markBlockAsCorrupt: a wrong
    length on a COMPLETE block of 2 live replicas of 3 is kept (not deleted at once, as
    live + corrupt do not exceed the replication and the GS is the block's) until a copy
    on the spare node is in; an older GS (GENSTAMP_MISMATCH) is deleted at once."""
    nn.rpc_create("/f", "c1", replication=3)
    lb = nn.rpc_addBlock("/f", "c1")
    first, second, third = lb["locations"]
    for dn in (first, second):
        received(nn, dn, lb["block"], lb["gs"], 1000)
    assert nn.rpc_complete("/f", "c1", last={"block": lb["block"], "gs": lb["gs"], "len": 1000})
    received(nn, third, lb["block"], lb["gs"], 900)
    [corrupt] = nn.events.named("nn.replica.corrupt", block=lb["block"])
    assert (corrupt["dn"], corrupt["reason"]) == (third, "size_mismatch")
    assert not nn.events.named("nn.replica.invalidate", block=lb["block"])
    assert third not in nn.rpc_getBlockLocations("/f")["blocks"][0]["locations"]
    nn.compute_redundancy_work()
    [spare] = set(DNS) - {first, second, third}
    [copy] = nn.events.named("nn.replication.schedule", block=lb["block"])
    assert copy["target"] == spare
    received(nn, spare, lb["block"], lb["gs"], 1000)
    [gone] = nn.events.named("nn.replica.invalidate", block=lb["block"])
    assert (gone["dn"], gone["gs"]) == (third, lb["gs"])
    # a FINALIZED replica of an older GS, min replication met: corrupt, deleted at once
    assert [b["block"] for c in _invalidations(nn, third) for b in c["blocks"]] == [lb["block"]]
    nn.rpc_blockReceivedAndDeleted(third, [{"kind": "deleted", "block": lb["block"]}])
    received(nn, third, lb["block"], lb["gs"] - 1, 1000)
    stale = nn.events.named("nn.replica.corrupt", block=lb["block"], gs=lb["gs"] - 1)
    assert [e["reason"] for e in stale] == ["genstamp_mismatch"]
    assert nn.events.named("nn.replica.invalidate", block=lb["block"], gs=lb["gs"] - 1)


def test_late_rbw_report_never_downgrades_a_finalized_replica(tmp_path, namenodes):
    """3.x BlockManager.processReportedBlock: an RBW report that arrives after the
    FINALIZED one (an incremental "receiving" or a full report built before the
    finalize) neither replaces the FINALIZED replica nor is corrupt: a COMMITTED block
    only adds it to its replica list, a COMPLETE one ignores it (HDFS-2791)."""
    nn = new_namenode(tmp_path / "nn", {"dfs.namenode.replication.min": 2})
    namenodes.append(nn)
    nn.rpc_create("/f", "c1", replication=3)
    lb = nn.rpc_addBlock("/f", "c1")
    first, second, third = lb["locations"]
    last = {"block": lb["block"], "gs": lb["gs"], "len": 10}
    assert nn.rpc_complete("/f", "c1", last=last) is False
    received(nn, first, lb["block"], lb["gs"], 10)
    received(nn, first, lb["block"], lb["gs"], 5, state="RBW")          # COMMITTED: late
    assert nn.blocks[lb["block"]].replicas[first]["state"] == "FINALIZED"
    received(nn, second, lb["block"], lb["gs"], 10)
    assert state_of(nn, lb["block"]) == COMPLETE
    received(nn, third, lb["block"], lb["gs"], 10)
    assert nn.rpc_complete("/f", "c1", last=last) is True
    nn.rpc_blockReceivedAndDeleted(second, [{"block": lb["block"], "gs": lb["gs"], "len": 7,
                                             "state": "RBW", "kind": "receiving"}])
    nn.rpc_blockReport(third, [{"block": lb["block"], "gs": lb["gs"], "len": 8, "state": "RBW"}])
    info = nn.blocks[lb["block"]]
    assert {dn: r["state"] for dn, r in info.replicas.items()} == dict.fromkeys(
        (first, second, third), "FINALIZED")
    assert sorted(nn.rpc_getBlockLocations("/f")["blocks"][0]["locations"]) == sorted(
        (first, second, third))
    assert not nn.events.named("nn.replica.corrupt", block=lb["block"])
    nn.compute_redundancy_work()
    assert not nn.events.named("nn.replication.schedule", block=lb["block"])
    assert not nn.events.named("nn.replica.invalidate", block=lb["block"])


def test_rbw_replica_of_an_older_gs_than_a_complete_block_is_corrupt(nn):
    """3.x BlockManager.checkReplicaCorrupt: an RBW replica whose GS is not the COMPLETE
    block's is corrupt (GENSTAMP_MISMATCH), deleted at once with min replication met."""
    lb = _closed_block(nn, "/f")
    [spare] = set(DNS) - set(lb["locations"])
    received(nn, spare, lb["block"], lb["gs"] - 1, 500, state="RBW")
    [corrupt] = nn.events.named("nn.replica.corrupt", block=lb["block"])
    assert (corrupt["dn"], corrupt["gs"], corrupt["reason"]) == (
        spare, lb["gs"] - 1, "genstamp_mismatch")
    [gone] = nn.events.named("nn.replica.invalidate", block=lb["block"])
    assert (gone["dn"], gone["gs"]) == (spare, lb["gs"] - 1)


def test_rwr_replica_with_the_gs_of_a_complete_block_is_corrupt_and_kept_until_replaced(nn):
    """3.x BlockManager.checkReplicaCorrupt: for a COMPLETE block, an RWR replica of the
    block's GS is corrupt (INVALID_STATE); markBlockAsCorrupt keeps it while the block
    has fewer live replicas than its replication, so it is deleted only once a copy on
    another node is in. An RBW one of that GS is only a late report (HDFS-2791)."""
    nn.rpc_create("/f", "c1", replication=3)
    lb = nn.rpc_addBlock("/f", "c1")
    first, second, third = lb["locations"]
    for dn in (first, second):
        received(nn, dn, lb["block"], lb["gs"], 1000)
    last = {"block": lb["block"], "gs": lb["gs"], "len": 1000}
    assert nn.rpc_complete("/f", "c1", last=last) is True
    assert state_of(nn, lb["block"]) == COMPLETE
    received(nn, third, lb["block"], lb["gs"], 900, state="RWR")     # back from a crash
    [corrupt] = nn.events.named("nn.replica.corrupt", block=lb["block"])
    assert corrupt["dn"] == third and corrupt["reason"] == "invalid_state"
    assert nn.blocks[lb["block"]].corrupt == {third: "invalid_state"}
    nn.compute_redundancy_work()
    assert not nn.events.named("nn.replica.invalidate", block=lb["block"])
    [spare] = set(DNS) - {first, second, third}
    [copy] = nn.events.named("nn.replication.schedule", block=lb["block"])
    assert copy["target"] == spare
    received(nn, spare, lb["block"], lb["gs"], 1000)
    received(nn, first, lb["block"], lb["gs"], 1000, state="RBW")    # a late RBW report
    assert len(nn.events.named("nn.replica.corrupt", block=lb["block"])) == 1
    invalidated = {(e["dn"], e["gs"]) for e in nn.events.named("nn.replica.invalidate",
                                                               block=lb["block"])}
    assert invalidated == {(third, lb["gs"])}


def test_good_report_clears_a_genstamp_mismatch_mark_only(tmp_path, namenodes):
    """3.x BlockManager.addStoredBlock: a replica marked corrupt for its GS
    (GENSTAMP_MISMATCH) and reported again with the block's GS and length is no longer
    corrupt (CorruptReplicasMap.removeFromCorruptReplicasMap(..., GENSTAMP_MISMATCH)); a
    mark of another reason (here SIZE_MISMATCH) stays."""
    nn = new_namenode(tmp_path / "nn", {"dfs.namenode.replication.min": 2})
    namenodes.append(nn)
    nn.rpc_create("/f", "c1", replication=3)
    lb = nn.rpc_addBlock("/f", "c1")
    first, second, third = lb["locations"]
    last = {"block": lb["block"], "gs": lb["gs"], "len": 1000}
    assert nn.rpc_complete("/f", "c1", last=last) is False
    received(nn, first, lb["block"], lb["gs"] - 1, 1000)          # older GS
    received(nn, second, lb["block"], lb["gs"], 900)              # wrong length
    reasons = {e["dn"]: e["reason"] for e in nn.events.named("nn.replica.corrupt")}
    assert reasons == {first: "genstamp_mismatch", second: "size_mismatch"}
    info = nn.blocks[lb["block"]]
    received(nn, first, lb["block"], lb["gs"], 1000)
    received(nn, second, lb["block"], lb["gs"], 1000)
    assert set(info.corrupt) == {second}
    assert nn._live_replicas(info) == [first] and state_of(nn, lb["block"]) == COMMITTED
    received(nn, third, lb["block"], lb["gs"], 1000)
    assert state_of(nn, lb["block"]) == COMPLETE
    assert sorted(nn._live_replicas(info)) == sorted((first, third))


def test_replica_older_than_an_under_construction_block_is_corrupt(nn):
    """3.x BlockManager.checkReplicaCorrupt: for a block not yet COMPLETE an RBW or RWR
    replica of an older GS is corrupt (GENSTAMP_MISMATCH), and so is a FINALIZED one
    while the block is UNDER_CONSTRUCTION (not UNDER_RECOVERY); markBlockAsCorrupt keeps
    them (no live replica yet) and they are no pipeline location. A later report with
    the block's GS clears the mark (addStoredBlockUnderConstruction -> addStoredBlock)."""
    nn.rpc_create("/f", "c1", replication=3)
    lb = nn.rpc_addBlock("/f", "c1")
    first, second, third = lb["locations"]
    [spare] = set(DNS) - set(lb["locations"])
    old = {"block": lb["block"], "gs": lb["gs"], "len": 0}
    new_gs = nn.rpc_updateBlockForPipeline(lb["block"], "c1")["gs"]
    assert nn.rpc_updatePipeline("c1", old, dict(old, gs=new_gs), [second, third])
    received(nn, first, lb["block"], lb["gs"], 100, state="RBW")
    received(nn, spare, lb["block"], lb["gs"], 100)
    corrupt = {(e["dn"], e["gs"], e["reason"])
               for e in nn.events.named("nn.replica.corrupt", block=lb["block"])}
    assert corrupt == {(first, lb["gs"], "genstamp_mismatch"),
                       (spare, lb["gs"], "genstamp_mismatch")}
    info = nn.blocks[lb["block"]]
    assert info.expected == [second, third]
    assert not nn.events.named("nn.replica.invalidate", block=lb["block"])
    received(nn, first, lb["block"], new_gs, 100, state="RBW")
    assert set(info.corrupt) == {spare} and first in info.expected
    # UNDER_RECOVERY: a FINALIZED replica of an older GS is not corrupt
    nn.rpc_create("/g", "c1", replication=3)
    lb2 = nn.rpc_addBlock("/g", "c1")
    old2 = {"block": lb2["block"], "gs": lb2["gs"], "len": 0}
    new_gs2 = nn.rpc_updateBlockForPipeline(lb2["block"], "c1")["gs"]
    assert nn.rpc_updatePipeline("c1", old2, dict(old2, gs=new_gs2), lb2["locations"][1:])
    assert nn.rpc_recoverLease("/g", "c2") is False
    assert state_of(nn, lb2["block"]) == "UNDER_RECOVERY"
    received(nn, lb2["locations"][0], lb2["block"], lb2["gs"], 100)
    assert not nn.events.named("nn.replica.corrupt", block=lb2["block"])


def _closed_block(nn: NameNode, path: str, length: int = 1000) -> dict:
    """A file of one block of replication 3, every pipeline node FINALIZED, closed."""
    nn.rpc_create(path, "c1", replication=3)
    lb = write_block(nn, path, "c1", length)
    assert nn.rpc_complete(path, "c1", last=lb) is True
    lb["locations"] = sorted(nn.blocks[lb["block"]].finalized_matching())
    return lb


def test_corrupt_replica_without_a_spare_node_is_kept_and_never_copied_onto(tmp_path, namenodes):
    """3.x BlockManager.markBlockAsCorrupt: with 2 live replicas of 3 and no other node,
    the corrupt replica is kept (not counted, not a location); no node holding the
    block, the corrupt one included, is a copy target (computeReconstructionWorkForBlocks
    excludes the containing nodes), so the block stays under-replicated."""
    nn = new_namenode(tmp_path / "nn", datanodes={"dn1": "/r1", "dn2": "/r1", "dn3": "/r2"})
    namenodes.append(nn)
    lb = _closed_block(nn, "/f")
    assert lb["locations"] == ["dn1", "dn2", "dn3"]
    nn.rpc_reportBadBlocks([{"block": lb["block"], "dn": "dn2"}])
    [corrupt] = nn.events.named("nn.replica.corrupt", block=lb["block"])
    assert corrupt["dn"] == "dn2" and corrupt["reason"] == "checksum"
    for _ in range(3):
        nn.compute_redundancy_work()
    info = nn.blocks[lb["block"]]
    assert info.corrupt == {"dn2": "checksum"} and "dn2" in info.replicas
    assert not nn.events.named("nn.replica.invalidate", block=lb["block"])
    assert not nn.events.named("nn.replication.schedule", block=lb["block"])
    assert _invalidations(nn, "dn2") == []
    [located] = nn.rpc_getBlockLocations("/f")["blocks"]
    assert located["locations"] and "dn2" not in located["locations"]


def test_corrupt_replica_is_deleted_once_a_copy_on_a_spare_node_is_in(nn):
    """The block is copied to the node that holds no replica of it, and only when that
    copy is reported (BlockManager.addStoredBlock -> invalidateCorruptReplicas) is the
    corrupt replica deleted."""
    lb = _closed_block(nn, "/f")
    bad = lb["locations"][1]
    [spare] = set(DNS) - set(lb["locations"])
    nn.rpc_reportBadBlocks([{"block": lb["block"], "dn": bad}])
    nn.compute_redundancy_work()
    assert not nn.events.named("nn.replica.invalidate", block=lb["block"])
    [copy] = nn.events.named("nn.replication.schedule", block=lb["block"])
    assert copy["target"] == spare
    nn.compute_redundancy_work()                  # pending: no second copy, no deletion
    assert len(nn.events.named("nn.replication.schedule", block=lb["block"])) == 1
    assert not nn.events.named("nn.replica.invalidate", block=lb["block"])
    received(nn, spare, lb["block"], lb["gs"], lb["len"])
    [gone] = nn.events.named("nn.replica.invalidate", block=lb["block"])
    assert gone["dn"] == bad and gone["gs"] == lb["gs"]
    assert [b["block"] for c in _invalidations(nn, bad) for b in c["blocks"]] == [lb["block"]]
    nn.rpc_blockReceivedAndDeleted(bad, [{"kind": "deleted", "block": lb["block"]}])
    info = nn.blocks[lb["block"]]
    assert info.corrupt == {} and sorted(nn._live_replicas(info)) == sorted(
        set(lb["locations"]) - {bad} | {spare})


def test_corrupt_replica_of_a_block_with_enough_live_replicas_is_deleted_at_once(nn):
    """markBlockAsCorrupt: with the replication still met by live replicas (here a 4th
    replica of a block of replication 3), the corrupt one is invalidated at once."""
    lb = _closed_block(nn, "/f")
    [spare] = set(DNS) - set(lb["locations"])
    received(nn, spare, lb["block"], lb["gs"], lb["len"])
    bad = lb["locations"][0]
    nn.rpc_reportBadBlocks([{"block": lb["block"], "dn": bad}])
    [gone] = nn.events.named("nn.replica.invalidate", block=lb["block"])
    assert gone["dn"] == bad


def test_full_report_without_a_corrupt_replica_drops_its_mark(nn):
    """3.x BlockManager.removeStoredBlock (a replica missing from a full block report)
    also removes the node's corrupt mark: a good replica it receives later counts."""
    lb = _closed_block(nn, "/f")
    bad = lb["locations"][0]
    nn.rpc_reportBadBlocks([{"block": lb["block"], "dn": bad}])
    info = nn.blocks[lb["block"]]
    assert bad in info.corrupt and bad in info.replicas         # kept: 2 live of 3
    nn.rpc_blockReport(bad, [])                                  # the replica is gone
    assert bad not in info.replicas and bad not in info.corrupt
    received(nn, bad, lb["block"], lb["gs"], lb["len"])          # copied back
    assert sorted(nn._live_replicas(info)) == lb["locations"]


def _invalidations(nn: NameNode, dn: str) -> list[dict]:
    return [c for c in nn.rpc_sendHeartbeat(dn, replicas=1)["commands"]
            if c["type"] == "invalidate"]


def test_deletions_wait_for_the_startup_delay(tmp_path, namenodes):
    """dfs.namenode.startup.delay.block.deletion.sec (InvalidateBlocks): a replica of an
    unknown block is queued for deletion at once, but no heartbeat carries the deletion
    until the delay after the NameNode's start has passed; then the next one does."""
    nn = new_namenode(tmp_path / "nn", {"dfs.namenode.startup.delay.block.deletion.sec": 60})
    namenodes.append(nn)
    received(nn, "dn1", 1073741900, 1001, 0, state="RBW")       # a block it does not know
    assert nn.events.named("nn.replica.invalidate", dn="dn1", block=1073741900)
    assert _invalidations(nn, "dn1") == []
    assert _invalidations(nn, "dn1") == []                     # still queued, not dropped
    nn.started -= 61
    [cmd] = _invalidations(nn, "dn1")
    assert cmd["blocks"] == [{"block": 1073741900, "gs": 1001}]
    assert _invalidations(nn, "dn1") == []


def test_without_a_startup_delay_the_next_heartbeat_carries_the_deletion(nn):
    received(nn, "dn1", 1073741900, 1001, 0, state="RBW")
    [cmd] = _invalidations(nn, "dn1")
    assert cmd["blocks"] == [{"block": 1073741900, "gs": 1001}]


def test_replication_min_two_needs_two_finalized_replicas(tmp_path, namenodes):
    nn = new_namenode(tmp_path / "nn", {"dfs.namenode.replication.min": 2})
    namenodes.append(nn)
    nn.rpc_create("/f", "c1", replication=3)
    lb = nn.rpc_addBlock("/f", "c1")
    last = {"block": lb["block"], "gs": lb["gs"], "len": 10}
    received(nn, lb["locations"][0], lb["block"], lb["gs"], 10)
    assert nn.rpc_complete("/f", "c1", last=last) is False
    received(nn, lb["locations"][1], lb["block"], lb["gs"], 10)
    assert state_of(nn, lb["block"]) == COMPLETE
    assert nn.rpc_complete("/f", "c1", last=last) is True


def test_add_block_commits_the_previous_block_and_checks_file_progress(nn):
    nn.rpc_create("/f", "c1", replication=3)
    b1 = write_block(nn, "/f", "c1", 1 << 20, report=False)
    lb2 = nn.rpc_addBlock("/f", "c1", previous=b1)
    assert state_of(nn, b1["block"]) == COMMITTED            # no replica reported yet
    b2 = {"block": lb2["block"], "gs": lb2["gs"], "len": 1 << 20}
    # checkFileProgress: the penultimate block (b1) must be COMPLETE for a third block
    with pytest.raises(NotReplicatedYetException):
        nn.rpc_addBlock("/f", "c1", previous=b2)
    assert nn.events.named("nn.rpc.reject", op="addBlock", error="NotReplicatedYetException")
    # 3.x FSDirWriteFileOp: the refusal comes before the commit of `previous` (b2)
    assert state_of(nn, b2["block"]) == UNDER_CONSTRUCTION
    received(nn, "dn1", b1["block"], b1["gs"], 1 << 20)
    assert state_of(nn, b1["block"]) == COMPLETE
    lb3 = nn.rpc_addBlock("/f", "c1", previous=b2)            # a retry after the report
    assert state_of(nn, b2["block"]) == COMMITTED
    assert nn.files["/f"].blocks == [b1["block"], b2["block"], lb3["block"]]
    assert lb3["gs"] > lb2["gs"] > b1["gs"]                     # one GS counter
    assert lb3["block"] > lb2["block"] > b1["block"]


def test_add_block_with_a_wrong_previous_block_is_refused(nn):
    nn.rpc_create("/f", "c1")
    b1 = write_block(nn, "/f", "c1", 100)
    with pytest.raises(IOExceptionRemote):
        nn.rpc_addBlock("/f", "c1", previous=dict(b1, block=b1["block"] + 99))
    with pytest.raises(IOExceptionRemote):       # the GS the client commits must match
        nn.rpc_complete("/f", "c1", last=dict(b1, gs=b1["gs"] + 5))


def test_retried_complete_on_a_closed_file_succeeds_hdfs_3031(nn):
    nn.rpc_create("/f", "c1", replication=1)
    last = write_block(nn, "/f", "c1", 777)
    assert nn.rpc_complete("/f", "c1", last=last) is True
    # the reply was lost; the client retries the same complete
    assert nn.rpc_complete("/f", "c1", last=last) is True
    assert [e.get("retry") for e in nn.events.named("nn.file.complete", path="/f")] == [None, True]
    # a complete naming another last block is not a retry: the file is not open
    with pytest.raises(LeaseExpiredException):
        nn.rpc_complete("/f", "c1", last=dict(last, block=last["block"] + 1))
    # nor one with an older GS: block recovery bumped it while the writer was away
    with pytest.raises(LeaseExpiredException):
        nn.rpc_complete("/f", "c1", last=dict(last, gs=last["gs"] - 1))


def test_complete_of_an_empty_file_closes_it(nn):
    nn.rpc_create("/empty", "c1")
    assert nn.rpc_complete("/empty", "c1", last=None) is True
    assert nn.rpc_getFileInfo("/empty") == dict(nn.rpc_getFileInfo("/empty"), closed=True, len=0)


def test_dead_and_excluded_datanodes_are_never_targets(nn):
    nn.datanodes["dn2"].dead = True
    nn.datanodes["dn3"].stale = True
    for i in range(20):
        nn.rpc_create(f"/f{i}", "c1", replication=3)
        lb = nn.rpc_addBlock(f"/f{i}", "c1", excluded=["dn4"])
        assert lb["locations"] == ["dn1"]


def test_add_block_without_enough_datanodes_fails(nn):
    nn.rpc_create("/f", "c1", replication=3)
    with pytest.raises(IOExceptionRemote):
        nn.rpc_addBlock("/f", "c1", excluded=list(DNS))


# -- checkLease ------------------------------------------------------------------------

def test_check_lease_rejects_a_missing_file(nn):
    with pytest.raises(FileNotFoundException):
        nn.rpc_addBlock("/nope", "c1")
    with pytest.raises(FileNotFoundException):
        nn.rpc_complete("/nope", "c1", last=None)
    [reject] = nn.events.named("nn.rpc.reject", op="addBlock")
    assert reject["path"] == "/nope" and reject["holder"] == "c1"
    assert reject["error"] == "FileNotFoundException"


def test_check_lease_rejects_a_file_not_open_for_write(nn):
    nn.rpc_create("/f", "c1", replication=1)
    last = write_block(nn, "/f", "c1", 10)
    assert nn.rpc_complete("/f", "c1", last=last)
    for call in (lambda: nn.rpc_addBlock("/f", "c1", previous=last),
                 lambda: nn.rpc_fsync("/f", "c1"),
                 lambda: nn.rpc_abandonBlock("/f", "c1", last["block"]),
                 lambda: nn.rpc_updateBlockForPipeline(last["block"], "c1")):
        with pytest.raises(LeaseExpiredException):
            call()
    errors = {e["op"]: e["error"] for e in nn.events.named("nn.rpc.reject")}
    assert errors == {op: "LeaseExpiredException" for op in
                      ("addBlock", "fsync", "abandonBlock", "updateBlockForPipeline")}


def test_check_lease_rejects_another_holder(nn):
    nn.rpc_create("/f", "c1")
    lb = nn.rpc_addBlock("/f", "c1")
    block = {"block": lb["block"], "gs": lb["gs"], "len": 0}
    for call in (lambda: nn.rpc_addBlock("/f", "c2", previous=block),
                 lambda: nn.rpc_complete("/f", "c2", last=block),
                 lambda: nn.rpc_updateBlockForPipeline(lb["block"], "c2"),
                 lambda: nn.rpc_updatePipeline("c2", block, dict(block, gs=block["gs"] + 1),
                                               lb["locations"]),
                 lambda: nn.rpc_getAdditionalDatanode("/f", "c2", lb["block"],
                                                      lb["locations"][:1], [])):
        with pytest.raises(LeaseExpiredException, match="c1"):
            call()
    assert all(e["holder"] == "c2" for e in nn.events.named("nn.rpc.reject"))
    # the rightful holder is still fine, and its block was not touched
    assert state_of(nn, lb["block"]) == UNDER_CONSTRUCTION
    assert nn.rpc_fsync("/f", "c1") is True


def test_fsync_keeps_the_last_block_length_and_logs_it(nn):
    nn.rpc_create("/f", "c1")
    lb = nn.rpc_addBlock("/f", "c1")
    assert nn.rpc_fsync("/f", "c1", last_block_len=4096) is True
    assert nn.blocks[lb["block"]].num_bytes == 4096
    assert nn.rpc_fsync("/f", "c1", last_block_len=100) is True    # never shrinks
    assert nn.blocks[lb["block"]].num_bytes == 4096
    assert [(e["holder"], e["block"], e["len"]) for e in nn.events.named("nn.file.fsync")] \
        == [("c1", lb["block"], 4096), ("c1", lb["block"], 4096)]


def test_check_lease_ignores_the_soft_limit(tmp_path, namenodes):
    clock = [1000.0]
    nn = new_namenode(tmp_path / "nn", {"lease.soft-limit": "1s", "lease.hard-limit": "1h"})
    namenodes.append(nn)
    nn.leases.clock = lambda: clock[0]
    nn.rpc_create("/f", "c1")
    clock[0] += 30           # far past the soft limit, no one else asked for the file
    assert nn.rpc_addBlock("/f", "c1")["state"] == UNDER_CONSTRUCTION


def test_create_of_an_open_file_by_its_holder_or_another_is_refused(nn):
    nn.rpc_create("/f", "c1")
    with pytest.raises(AlreadyBeingCreatedException):
        nn.rpc_create("/f", "c1")
    with pytest.raises(AlreadyBeingCreatedException):   # soft limit not passed
        nn.rpc_create("/f", "c2")
    nn.rpc_complete("/f", "c1", last=None)
    with pytest.raises(FileAlreadyExistsException):
        nn.rpc_create("/f", "c2")


# -- append ----------------------------------------------------------------------------

def test_append_reopens_a_complete_last_block_as_under_construction(nn):
    nn.rpc_create("/f", "c1", replication=3)
    last = write_block(nn, "/f", "c1", 1500)
    assert nn.rpc_complete("/f", "c1", last=last)
    assert state_of(nn, last["block"]) == COMPLETE
    reply = nn.rpc_append("/f", "c2", client_machine="c2")
    assert reply["len"] == 1500
    lb = reply["last_block"]
    assert lb["block"] == last["block"] and lb["gs"] == last["gs"] and lb["len"] == 1500
    assert lb["state"] == UNDER_CONSTRUCTION
    assert sorted(lb["locations"]) == sorted(nn.blocks[last["block"]].replicas)
    assert state_of(nn, last["block"]) == UNDER_CONSTRUCTION
    assert nn.events.named("nn.block.state", block=last["block"])[-1]["state"] == UNDER_CONSTRUCTION
    info = nn.rpc_getFileInfo("/f")
    assert info["closed"] is False and info["holder"] == "c2"
    assert nn.leases.get_by_path("/f").holder == "c2"
    assert nn.events.named("nn.file.append", path="/f", holder="c2")
    # the appender goes on: pipeline GS bump, then commit with the new length
    new_gs = nn.rpc_updateBlockForPipeline(last["block"], "c2")["gs"]
    assert new_gs > last["gs"]
    assert nn.rpc_updatePipeline("c2", last, dict(last, gs=new_gs), lb["locations"])
    for dn in lb["locations"]:
        received(nn, dn, last["block"], new_gs, 2500)
    assert nn.rpc_complete("/f", "c2", last={"block": last["block"], "gs": new_gs, "len": 2500})
    assert nn.rpc_getFileInfo("/f")["len"] == 2500
    assert state_of(nn, last["block"]) == COMPLETE


def test_append_to_a_full_last_block_starts_a_new_block(nn):
    nn.rpc_create("/f", "c1", replication=1, block_size=1024)
    last = write_block(nn, "/f", "c1", 1024)
    assert nn.rpc_complete("/f", "c1", last=last)
    reply = nn.rpc_append("/f", "c2")
    assert reply["last_block"] is None and reply["len"] == 1024
    assert state_of(nn, last["block"]) == COMPLETE
    lb = nn.rpc_addBlock("/f", "c2", previous=None)
    assert lb["block"] != last["block"]


def test_append_with_new_block_leaves_the_partial_last_block_complete(nn):
    nn.rpc_create("/f", "c1", replication=3, block_size=4096)
    first = write_block(nn, "/f", "c1", 1500)
    assert nn.rpc_complete("/f", "c1", last=first)
    reply = nn.rpc_append("/f", "c2", client_machine="c2", new_block=True)
    assert reply["last_block"] is None and reply["len"] == 1500
    assert reply["previous_block"] == {"block": first["block"], "gs": first["gs"], "len": 1500}
    assert state_of(nn, first["block"]) == COMPLETE
    assert nn.rpc_getFileInfo("/f")["holder"] == "c2"
    assert nn.events.named("nn.file.append", path="/f", holder="c2")[-1]["new_block"] is True
    # the next addBlock names the partial block as its previous one: nothing to commit
    second = nn.rpc_addBlock("/f", "c2", previous=reply["previous_block"])
    assert second["block"] != first["block"]
    assert state_of(nn, first["block"]) == COMPLETE and nn.blocks[first["block"]].num_bytes == 1500
    for dn in second["locations"]:
        received(nn, dn, second["block"], second["gs"], 700)
    assert nn.rpc_complete("/f", "c2", last={"block": second["block"], "gs": second["gs"],
                                              "len": 700})
    located = nn.rpc_getBlockLocations("/f")
    assert [(b["offset"], b["len"]) for b in located["blocks"]] == [(0, 1500), (1500, 700)]
    # a plain append then reopens the partial last block, not the first one
    again = nn.rpc_append("/f", "c3")
    assert again["last_block"]["block"] == second["block"] and again["len"] == 2200


def test_append_with_new_block_survives_a_restart_with_the_last_block_complete(tmp_path,
                                                                                namenodes):
    nn = new_namenode(tmp_path / "nn")
    namenodes.append(nn)
    nn.rpc_create("/f", "c1", replication=1)
    first = write_block(nn, "/f", "c1", 1500)
    assert nn.rpc_complete("/f", "c1", last=first)
    nn.rpc_append("/f", "c2", new_block=True)
    nn._stopped.set()        # a crash: the edit log is replayed
    nn2 = new_namenode(tmp_path / "nn", {"dfs.namenode.safemode.threshold-pct": 0})
    namenodes.append(nn2)
    assert nn2.rpc_getFileInfo("/f")["closed"] is False
    assert state_of(nn2, first["block"]) == COMPLETE


def test_append_to_an_open_file_or_a_missing_one_is_refused(nn):
    with pytest.raises(FileNotFoundException):
        nn.rpc_append("/nope", "c1")
    nn.rpc_create("/f", "c1")
    with pytest.raises(AlreadyBeingCreatedException):
        nn.rpc_append("/f", "c2")


# -- edit log replay (NameNode restart in-process) ---------------------------------------

def build_namespace(nn: NameNode) -> dict:
    """Closed, renamed, deleted and open files; returns what a restart must keep."""
    nn.rpc_create("/a/closed", "c1", replication=3)
    b1 = write_block(nn, "/a/closed", "c1", 1 << 20)
    b2 = write_block(nn, "/a/closed", "c1", 300, previous=b1)
    assert nn.rpc_complete("/a/closed", "c1", last=b2)
    nn.rpc_create("/a/renamed-src", "c1", replication=2)
    b3 = write_block(nn, "/a/renamed-src", "c1", 50)
    assert nn.rpc_complete("/a/renamed-src", "c1", last=b3)
    assert nn.rpc_rename("/a/renamed-src", "/b/renamed")
    nn.rpc_create("/a/deleted", "c1")
    write_block(nn, "/a/deleted", "c1", 10)
    assert nn.rpc_delete("/a/deleted")
    nn.rpc_create("/c/x/y", "c1")
    assert nn.rpc_complete("/c/x/y", "c1", last=None)
    with pytest.raises(IOExceptionRemote):
        nn.rpc_delete("/c")                    # not empty, not recursive
    assert nn.rpc_delete("/c", recursive=True)
    nn.rpc_create("/a/over", "c1", replication=1)
    over = write_block(nn, "/a/over", "c1", 64)
    assert nn.rpc_complete("/a/over", "c1", last=over)
    nn.rpc_create("/a/over", "c2", overwrite=True, replication=2)
    assert nn.rpc_complete("/a/over", "c2", last=None)
    # open files: one with a finished first block and a last block being written,
    # one renamed while open, one empty
    nn.rpc_create("/open/two-blocks", "writer-A", replication=3)
    o1 = write_block(nn, "/open/two-blocks", "writer-A", 1 << 20)
    o2 = nn.rpc_addBlock("/open/two-blocks", "writer-A", previous=o1)
    nn.rpc_create("/open/moving", "writer-B", replication=1)
    m1 = nn.rpc_addBlock("/open/moving", "writer-B")
    assert nn.rpc_rename("/open/moving", "/open/moved")
    nn.rpc_create("/open/empty", "writer-B")
    return {"b1": b1, "b2": b2, "b3": b3, "o1": o1, "o2": o2, "m1": m1}


def snapshot(nn: NameNode) -> dict:
    return {"dirs": sorted(nn.dirs),
            "files": {p: (f.replication, f.block_size, f.client_name, list(f.blocks))
                      for p, f in nn.files.items()},
            "blocks": {b: (i.gs, i.num_bytes, i.state, i.path) for b, i in nn.blocks.items()},
            "leases": {p: lease.holder for p, lease in nn.leases.by_path.items()},
            "last_gs": nn.last_gs, "last_block_id": nn.last_block_id}


def check_restarted(nn2: NameNode, before: dict, ids: dict) -> None:
    after = snapshot(nn2)
    assert after["dirs"] == before["dirs"]
    assert after["blocks"] == before["blocks"]
    assert after["files"] == before["files"]
    assert after["last_gs"] == before["last_gs"]
    assert after["last_block_id"] == before["last_block_id"]
    assert after["leases"] == {"/open/two-blocks": "writer-A", "/open/moved": "writer-B",
                               "/open/empty": "writer-B"}
    assert "/a/deleted" not in nn2.files and "/a/renamed-src" not in nn2.files
    assert not any(d.startswith("/c") for d in nn2.dirs) and "/c/x/y" not in nn2.files
    assert nn2.rpc_getFileInfo("/a/over")["len"] == 0
    assert nn2.rpc_getFileInfo("/a/over")["replication"] == 2
    assert nn2.rpc_getFileInfo("/a/closed") == dict(nn2.rpc_getFileInfo("/a/closed"), closed=True,
                                                    len=(1 << 20) + 300)
    assert nn2.rpc_getFileInfo("/b/renamed")["len"] == 50
    # seed 004 5: the last block of an open file is UNDER_CONSTRUCTION, all others COMPLETE
    assert nn2.blocks[ids["b1"]["block"]].state == COMPLETE
    assert nn2.blocks[ids["b2"]["block"]].state == COMPLETE
    assert nn2.blocks[ids["o1"]["block"]].state == COMPLETE
    assert nn2.blocks[ids["o2"]["block"]].state == UNDER_CONSTRUCTION
    assert nn2.blocks[ids["m1"]["block"]].state == UNDER_CONSTRUCTION
    assert nn2.blocks[ids["m1"]["block"]].path == "/open/moved"
    for path, holder in (("/open/two-blocks", "writer-A"), ("/open/moved", "writer-B")):
        info = nn2.rpc_getFileInfo(path)
        assert info["closed"] is False and info["holder"] == holder
    [start] = nn2.events.named("nn.start")
    assert start["open_files"] == 3


def test_restart_after_a_crash_replays_the_edit_log(tmp_path, namenodes):
    nn = new_namenode(tmp_path / "nn")
    namenodes.append(nn)
    ids = build_namespace(nn)
    before = snapshot(nn)
    nn._stopped.set()        # a crash: no checkpoint, only the fsync'd edit log
    assert os.path.getsize(tmp_path / "nn" / "edits.log") > 0
    nn2 = new_namenode(tmp_path / "nn")
    namenodes.append(nn2)
    check_restarted(nn2, before, ids)


def test_restart_after_a_clean_stop_loads_the_checkpoint(tmp_path, namenodes):
    nn = new_namenode(tmp_path / "nn")
    namenodes.append(nn)
    ids = build_namespace(nn)
    before = snapshot(nn)
    nn.stop()
    assert os.path.getsize(tmp_path / "nn" / "edits.log") == 0
    # no DataNode reports here: without safe mode (test_minihdfs_safemode) nn2 takes edits
    nn2 = new_namenode(tmp_path / "nn", {"dfs.namenode.safemode.threshold-pct": 0})
    namenodes.append(nn2)
    check_restarted(nn2, before, ids)
    # and again, after more edits on top of that checkpoint, crashed this time
    nn2.rpc_create("/late", "c9", replication=1)
    late = write_block(nn2, "/late", "c9", 5)
    assert nn2.rpc_complete("/late", "c9", last=late)
    nn2._stopped.set()
    nn3 = new_namenode(tmp_path / "nn")
    namenodes.append(nn3)
    assert nn3.rpc_getFileInfo("/late")["closed"] is True
    assert nn3.files["/late"].blocks == [late["block"]]
    assert nn3.last_gs >= late["gs"]


def test_open_file_writer_goes_on_after_a_restart(tmp_path, namenodes):
    nn = new_namenode(tmp_path / "nn")
    namenodes.append(nn)
    ids = build_namespace(nn)
    nn._stopped.set()
    nn2 = new_namenode(tmp_path / "nn")
    namenodes.append(nn2)
    o2 = ids["o2"]
    # the DataNodes' full block reports after the restart: their FINALIZED replicas (safe
    # mode ends once they are in) and the replicas being written
    for dn in DNS:
        replicas = [{"block": b, "gs": r["gs"], "len": r["len"], "state": r["state"]}
                    for b, info in nn.blocks.items() for d, r in info.replicas.items()
                    if d == dn and r["state"] == "FINALIZED"]
        if dn in o2["locations"]:
            replicas.append({"block": o2["block"], "gs": o2["gs"], "len": 4096, "state": "RBW"})
        nn2.rpc_blockReport(dn, replicas)
    assert not nn2.in_safe_mode()
    assert sorted(nn2.blocks[o2["block"]].expected) == sorted(o2["locations"])
    last = {"block": o2["block"], "gs": o2["gs"], "len": 4096}
    lb = nn2.rpc_addBlock("/open/two-blocks", "writer-A", previous=last)
    assert lb["block"] > o2["block"] and lb["gs"] > o2["gs"]   # counters were restored
    for dn in o2["locations"]:
        received(nn2, dn, o2["block"], o2["gs"], 4096)
    assert nn2.blocks[o2["block"]].state == COMPLETE
    last = {"block": lb["block"], "gs": lb["gs"], "len": 10}
    for dn in lb["locations"]:
        received(nn2, dn, lb["block"], lb["gs"], 10)
    assert nn2.rpc_complete("/open/two-blocks", "writer-A", last=last) is True
    assert nn2.rpc_getFileInfo("/open/two-blocks")["len"] == (1 << 20) + 4096 + 10


def test_torn_last_line_of_the_edit_log_is_ignored(tmp_path, namenodes):
    nn = new_namenode(tmp_path / "nn")
    namenodes.append(nn)
    nn.rpc_create("/kept", "c1", replication=1)
    last = write_block(nn, "/kept", "c1", 42)
    assert nn.rpc_complete("/kept", "c1", last=last)
    nn._stopped.set()
    edits = tmp_path / "nn" / "edits.log"
    whole = edits.read_bytes()
    torn = json.dumps({"txid": 10 ** 6, "op": "OP_ADD",
                       "file": {"path": "/torn", "replication": 1, "block_size": 1024,
                                "client_name": "x", "client_machine": "", "blocks": []}})
    with open(edits, "ab") as f:
        f.write(torn.encode()[:len(torn) // 2])     # a crash in the middle of a write
    nn2 = new_namenode(tmp_path / "nn")
    namenodes.append(nn2)
    assert "/torn" not in nn2.files
    assert nn2.rpc_getFileInfo("/kept")["closed"] is True
    assert nn2.files["/kept"].blocks == [last["block"]]
    assert len(whole) > 0
    # the restarted NameNode logs on cleanly after the torn line
    nn2.rpc_create("/after", "c2")
    nn2._stopped.set()
    nn3 = new_namenode(tmp_path / "nn")
    namenodes.append(nn3)
    assert nn3.rpc_getFileInfo("/after")["holder"] == "c2"
    assert "/kept" in nn3.files


def test_restart_keeps_an_append_and_a_pipeline_update(tmp_path, namenodes):
    nn = new_namenode(tmp_path / "nn")
    namenodes.append(nn)
    nn.rpc_create("/app", "c1", replication=3)
    last = write_block(nn, "/app", "c1", 700)
    assert nn.rpc_complete("/app", "c1", last=last)
    lb = nn.rpc_append("/app", "c2")["last_block"]
    new_gs = nn.rpc_updateBlockForPipeline(lb["block"], "c2")["gs"]
    assert nn.rpc_updatePipeline("c2", last, dict(last, gs=new_gs), lb["locations"][:2])
    nn._stopped.set()                                   # crash
    nn2 = new_namenode(tmp_path / "nn")
    namenodes.append(nn2)
    info = nn2.rpc_getFileInfo("/app")
    assert info["closed"] is False and info["holder"] == "c2" and info["len"] == 700
    block = nn2.blocks[last["block"]]
    assert (block.state, block.gs, block.num_bytes) == (UNDER_CONSTRUCTION, new_gs, 700)
    assert nn2.last_gs >= new_gs
    assert nn2.leases.get_by_path("/app").holder == "c2"
    assert nn2.rpc_updateBlockForPipeline(last["block"], "c2")["gs"] > new_gs


def test_restart_of_a_file_appended_at_a_block_boundary(tmp_path, namenodes):
    nn = new_namenode(tmp_path / "nn")
    namenodes.append(nn)
    nn.rpc_create("/full", "c1", replication=1, block_size=1024)
    last = write_block(nn, "/full", "c1", 1024)
    assert nn.rpc_complete("/full", "c1", last=last)
    assert nn.rpc_append("/full", "c2")["last_block"] is None
    nn._stopped.set()
    nn2 = new_namenode(tmp_path / "nn")
    namenodes.append(nn2)
    assert nn2.rpc_getFileInfo("/full")["holder"] == "c2"
    # seed 004 5 (Hadoop's image loader): the last block of an open file is
    # UNDER_CONSTRUCTION after a restart, even a full one; a commit completes it again
    assert nn2.blocks[last["block"]].state == UNDER_CONSTRUCTION
    received(nn2, "dn1", last["block"], last["gs"], 1024)
    assert nn2.rpc_complete("/full", "c2", last=last) is True


def test_a_transferred_replica_is_no_longer_pending_once_reported(tmp_path, namenodes):
    """Found while timing the explorer: every schedule that needed a re-replication waited
    ~10 s more for quiescence, since a transfer stayed pending until its timeout even
    after the target reported the replica (HDFS decrements pendingReconstruction in
    addStoredBlock)."""
    nn = new_namenode(tmp_path / "nn", {"dfs.replication": 3})
    namenodes.append(nn)
    nn.rpc_create("/f", "c1", replication=3)
    lb = nn.rpc_addBlock("/f", "c1")
    first, second = lb["locations"][:2]
    for dn in (first, second):       # two of three replicas: the block is under-replicated
        received(nn, dn, lb["block"], lb["gs"], 100)
    assert nn.rpc_complete("/f", "c1", last={"block": lb["block"], "gs": lb["gs"], "len": 100})
    with nn.lock:
        nn.compute_redundancy_work()
    [(block, target)] = list(nn.pending_replication)
    assert block == lb["block"] and target not in (first, second)
    assert nn.rpc_getClusterState()["pending"]["replication"] == 1
    received(nn, target, lb["block"], lb["gs"], 100)
    assert nn.rpc_getClusterState()["pending"]["replication"] == 0


def test_heartbeat_check_uses_hadoops_stale_floor_and_dead_interval(tmp_path, namenodes):
    """HeartbeatManager.heartbeatCheck with 1 s heartbeats, a 2 s stale interval (raised
    to 3 heartbeat seconds) and a 5 s recheck (dead after 2 x 5 + 10 x 1 = 20 s); with
    300 ms heartbeats the heartbeat counts 0 s (dead after 10 s)."""
    nn = new_namenode(tmp_path / "nn", {"dfs.heartbeat.interval": "1s",
                                        "dfs.namenode.stale.datanode.interval": "2s",
                                        "dfs.namenode.heartbeat.recheck-interval": "5s"})
    namenodes.append(nn)
    d = nn.datanodes["dn1"]
    nn.heartbeat_check(d.last_heartbeat + 2.5)
    assert not d.stale and not nn.events.named("nn.dn.stale", dn="dn1")
    nn.heartbeat_check(d.last_heartbeat + 3.2)
    assert d.stale and nn.events.named("nn.dn.stale", dn="dn1")
    nn.heartbeat_check(d.last_heartbeat + 19.5)
    assert not d.dead
    nn.heartbeat_check(d.last_heartbeat + 20.5)
    assert d.dead and nn.events.named("nn.dn.dead", dn="dn1")
    fast = new_namenode(tmp_path / "nn2", {"dfs.heartbeat.interval": "300ms",
                                           "dfs.namenode.heartbeat.recheck-interval": "5s"})
    namenodes.append(fast)
    d = fast.datanodes["dn1"]
    fast.heartbeat_check(d.last_heartbeat + 10.5)     # 2 x 5 s + 10 x 0 s
    assert d.dead and fast.events.named("nn.dn.dead", dn="dn1")


def test_seeded_placement_of_new_blocks_does_not_depend_on_redundancy_work(tmp_path, namenodes):
    """Two NameNodes of the same seed place the same new blocks alike whether or not the
    redundancy monitor re-replicated a block in between: when it runs is a timing, and
    a schedule of the explorer replays the base run's placement from its seed."""
    placed = []
    for name, monitor in (("a", False), ("b", True)):
        nn = new_namenode(tmp_path / name)
        namenodes.append(nn)
        nn.rpc_create("/f", "c1", replication=3)
        lb = nn.rpc_addBlock("/f", "c1")
        received(nn, lb["locations"][0], lb["block"], lb["gs"], 1000)   # one replica of 3
        assert nn.rpc_complete("/f", "c1", last={"block": lb["block"], "gs": lb["gs"],
                                                 "len": 1000}) is True
        if monitor:
            nn.compute_redundancy_work()
            assert nn.events.named("nn.replication.schedule", block=lb["block"])
        pipelines = []
        for i in range(6):
            nn.rpc_create(f"/g{i}", "c1", replication=3)
            pipelines.append(nn.rpc_addBlock(f"/g{i}", "c1")["locations"])
        placed.append(pipelines)
    assert placed[0] == placed[1]
