"""Lease recovery in the NameNode, in-process with a fake clock: recoverLeaseInternal's
outcomes and internalReleaseLease's branches (seeds 000, 002), the hard-limit monitor,
and the old holder shut out afterwards."""

from __future__ import annotations

import re

import pytest

from minihdfs.leases import NAMENODE_LEASE_HOLDER
from minihdfs.namenode import COMMITTED, UNDER_RECOVERY
from minihdfs.rpc import (AlreadyBeingCreatedException, LeaseExpiredException,
                          RecoveryInProgressException)
from tests.unit.test_minihdfs_namenode import namenodes, new_namenode, received  # noqa: F401


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def nn(tmp_path, namenodes):
    node = new_namenode(tmp_path / "nn", {"lease.soft-limit": "60s", "lease.hard-limit": "1h"})
    clock = Clock()
    node.leases.clock = clock
    node.clock = clock
    namenodes.append(node)
    return node


def open_with_block(nn, path="/f", holder="c1", length=1000, report="RBW"):
    nn.rpc_create(path, holder)
    lb = nn.rpc_addBlock(path, holder)
    for dn in lb["locations"]:
        nn.rpc_blockReceivedAndDeleted(dn, [{"block": lb["block"], "gs": lb["gs"], "len": length,
                                              "state": report, "kind": "receiving"}])
    return lb


def test_same_holder_recreating_is_already_being_created(nn):
    nn.rpc_create("/f", "c1")
    with pytest.raises(AlreadyBeingCreatedException, match="already the current lease holder"):
        nn.rpc_create("/f", "c1")


def test_other_writer_before_soft_limit_is_refused_after_it_takes_over(nn):
    open_with_block(nn)
    with pytest.raises(AlreadyBeingCreatedException, match="currently owned by c1"):
        nn.rpc_append("/f", "c2")
    nn.leases.clock.now += 61                     # c1 stopped renewing: soft limit passed
    with pytest.raises(RecoveryInProgressException):
        nn.rpc_append("/f", "c2")                 # block recovery had to start first
    last = nn.blocks[nn.files["/f"].blocks[-1]]
    assert last.state == UNDER_RECOVERY and last.primary is not None
    assert nn.events.named("nn.lease.expired", limit="soft")
    # while recovery runs, another attempt is told so
    with pytest.raises(RecoveryInProgressException):
        nn.rpc_append("/f", "c2")


def test_all_blocks_complete_closes_at_once(nn):
    nn.rpc_create("/f", "c1")
    lb = nn.rpc_addBlock("/f", "c1")
    for dn in lb["locations"]:
        received(nn, dn, lb["block"], lb["gs"], 500)
    nn.blocks[lb["block"]].num_bytes = 500
    nn._commit_block("t", nn.files["/f"], {"block": lb["block"], "gs": lb["gs"], "len": 500}, "c1")
    assert nn.rpc_recoverLease("/f", "c2") is True
    assert nn.rpc_getFileInfo("/f")["closed"]
    [ev] = nn.events.named("nn.file.close", path="/f")
    assert ev["reason"] == "lease_recovery"


def test_last_block_committed_without_min_replicas_waits_then_closes(nn):
    nn.rpc_create("/f", "c1")
    lb = nn.rpc_addBlock("/f", "c1")
    inode = nn.files["/f"]
    nn._commit_block("t", inode, {"block": lb["block"], "gs": lb["gs"], "len": 700}, "c1")
    assert nn.blocks[lb["block"]].state == COMMITTED
    with pytest.raises(AlreadyBeingCreatedException, match="minimally replicated"):
        nn.rpc_recoverLease("/f", "c2")
    received(nn, lb["locations"][0], lb["block"], lb["gs"], 700)
    assert nn.rpc_recoverLease("/f", "c2") is True


def test_empty_last_block_never_reported_is_removed_and_the_file_closed(nn):
    nn.rpc_create("/f", "c1")
    lb = nn.rpc_addBlock("/f", "c1")
    nn.blocks[lb["block"]].expected = []          # no DataNode ever heard of it
    assert nn.rpc_recoverLease("/f", "c2") is True
    assert nn.files["/f"].blocks == []
    assert nn.events.named("nn.block.state", block=lb["block"], state="REMOVED")


def test_force_recovery_reassigns_the_lease_to_the_caller(nn):
    lb = open_with_block(nn)
    assert nn.rpc_recoverLease("/f", "c2") is False
    [ev] = nn.events.named("nn.lease.reassign", path="/f")
    assert (ev["old_holder"], ev["holder"]) == ("c1", "c2")
    start = nn.events.named("nn.recovery.start", block=lb["block"])[0]
    assert start["recovery_id"] > lb["gs"] and start["primary"] in lb["locations"]
    cmds = nn.datanodes[start["primary"]].recover
    assert cmds and cmds[0]["recovery_id"] == start["recovery_id"]


def test_hard_limit_monitor_recovers_as_the_namenode(nn):
    open_with_block(nn)
    nn.leases.clock.now += 3601
    nn.check_leases()
    assert nn.events.named("nn.lease.expired", limit="hard")
    [ev] = nn.events.named("nn.lease.reassign", path="/f")
    # 3.x LeaseManager.getInternalLeaseHolder: HDFS_NameNode-yyyy-MM-dd HH:mm:ss,SSSZ
    assert re.fullmatch(NAMENODE_LEASE_HOLDER + r"-\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}[+-]\d{4}",
                        ev["holder"]), ev["holder"]
    assert nn.leases.get(ev["holder"]).paths == {"/f"}
    # the reassigned lease is fresh: the monitor does not spin on it
    nn.check_leases()
    assert len(nn.events.named("nn.recovery.start")) == 1


def test_release_that_throws_removes_the_lease_by_force(nn):
    nn.rpc_create("/f", "c1")
    lb = nn.rpc_addBlock("/f", "c1")
    nn._commit_block("t", nn.files["/f"], {"block": lb["block"], "gs": lb["gs"], "len": 9}, "c1")
    nn.leases.clock.now += 3601                   # COMMITTED, no replica: release throws
    nn.check_leases()
    assert nn.events.named("nn.lease.remove", path="/f", reason="forced")
    assert nn.leases.get_by_path("/f") is None


def test_old_holder_is_shut_out_after_recovery(nn):
    lb = open_with_block(nn)
    nn.rpc_recoverLease("/f", "c2")
    prev = {"block": lb["block"], "gs": lb["gs"], "len": 1000}
    for call in (lambda: nn.rpc_addBlock("/f", "c1", previous=prev),
                 lambda: nn.rpc_complete("/f", "c1", last=prev),
                 lambda: nn.rpc_fsync("/f", "c1")):
        with pytest.raises(LeaseExpiredException):
            call()
    assert len(nn.events.named("nn.rpc.reject", holder="c1", error="LeaseExpiredException")) == 3


def test_commit_block_synchronization_closes_and_invalidates_stale_replicas(nn):
    lb = open_with_block(nn)
    nn.rpc_recoverLease("/f", "c2")
    start = nn.events.named("nn.recovery.start")[0]
    keep = lb["locations"][:2]
    for dn in keep:
        received(nn, dn, lb["block"], start["recovery_id"], 800)
    nn.rpc_commitBlockSynchronization(lb["block"], start["recovery_id"], start["recovery_id"], 800,
                                      True, False, keep)
    info = nn.rpc_getFileInfo("/f")
    assert info["closed"] and info["len"] == 800
    assert nn.events.named("nn.file.close", path="/f", reason="block_recovery")
    stale = lb["locations"][2]
    assert nn.events.named("nn.replica.invalidate", dn=stale, block=lb["block"])
    with pytest.raises(Exception, match="closed"):   # a late, other commit is refused
        nn.rpc_commitBlockSynchronization(lb["block"], 1, 1, 5, True, False, keep)


def test_rename_and_delete_update_leases(nn):
    nn.rpc_create("/a/f", "c1")
    nn.rpc_rename("/a", "/b")
    assert nn.leases.get_by_path("/b/f").holder == "c1" and nn.leases.get_by_path("/a/f") is None
    nn.rpc_delete("/b", recursive=True)
    assert nn.leases.get("c1") is None
