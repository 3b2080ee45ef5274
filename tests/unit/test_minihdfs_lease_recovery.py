"""Lease recovery in the NameNode, in-process with a fake clock: recoverLeaseInternal's
outcomes and internalReleaseLease's branches (seeds 000, 002), the hard-limit monitor,
and the old holder shut out afterwards."""

from __future__ import annotations

import re
import time

import pytest

from minihdfs.leases import NAMENODE_LEASE_HOLDER, is_namenode_holder
from minihdfs.namenode import COMMITTED, COMPLETE, UNDER_RECOVERY
from minihdfs.rpc import (AlreadyBeingCreatedException, IOExceptionRemote,
                          LeaseExpiredException, RecoveryInProgressException)
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


def recovery_commands(nn, dn) -> list[dict]:
    """The recover-block commands a heartbeat of `dn` takes now."""
    return [c for c in nn.rpc_sendHeartbeat(dn)["commands"] if c["type"] == "recover"]


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


def test_committed_last_block_with_min_replicas_closes(nn):
    nn.rpc_create("/f", "c1")
    lb = nn.rpc_addBlock("/f", "c1")
    nn._commit_block("t", nn.files["/f"], {"block": lb["block"], "gs": lb["gs"], "len": 700}, "c1")
    assert nn.blocks[lb["block"]].state == COMMITTED
    received(nn, lb["locations"][0], lb["block"], lb["gs"], 700)
    assert nn.rpc_recoverLease("/f", "c2") is True


def test_committed_last_block_without_replicas_falls_through_to_block_recovery(nn):
    # 3.x internalReleaseLease: the penultimate block is fine (there is none), so a
    # COMMITTED last block lacking replicas is recovered as an UNDER_CONSTRUCTION one
    nn.rpc_create("/f", "c1")
    lb = nn.rpc_addBlock("/f", "c1")
    nn._commit_block("t", nn.files["/f"], {"block": lb["block"], "gs": lb["gs"], "len": 700}, "c1")
    assert nn.rpc_recoverLease("/f", "c2") is False
    info = nn.blocks[lb["block"]]
    assert info.state == UNDER_RECOVERY and info.primary in lb["locations"]
    assert nn.leases.get_by_path("/f").holder == "c2"
    [rec] = nn.events.named("nn.lease.recover", path="/f")
    assert rec["result"] == "recovering"


def test_committed_penultimate_block_without_replicas_refuses_the_release(nn):
    nn.rpc_create("/f", "c1")
    b1 = nn.rpc_addBlock("/f", "c1")
    prev = {"block": b1["block"], "gs": b1["gs"], "len": 1000}
    b2 = nn.rpc_addBlock("/f", "c1", previous=prev)          # b1 COMMITTED, no replica
    nn._commit_block("t", nn.files["/f"], {"block": b2["block"], "gs": b2["gs"], "len": 5}, "c1")
    with pytest.raises(AlreadyBeingCreatedException, match="minimally replicated"):
        nn.rpc_recoverLease("/f", "c2")
    assert nn.leases.get_by_path("/f").holder == "c1"
    assert not nn.events.named("nn.recovery.start")


def test_committed_empty_last_block_is_removed_and_the_file_closed(nn):
    # 3.x internalReleaseLease, HDFS-14498
    nn.rpc_create("/f", "c1")
    lb = nn.rpc_addBlock("/f", "c1")
    nn._commit_block("t", nn.files["/f"], {"block": lb["block"], "gs": lb["gs"], "len": 0}, "c1")
    assert nn.rpc_recoverLease("/f", "c2") is True
    assert nn.files["/f"].blocks == [] and nn.rpc_getFileInfo("/f")["closed"]
    assert nn.leases.get_by_path("/f") is None


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
    [cmd] = recovery_commands(nn, start["primary"])
    assert cmd["recovery_id"] == start["recovery_id"]


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


def test_monitor_keeps_a_lease_whose_release_fails_and_retries_it(nn):
    # 3.x LeaseManager.checkLeases: "It will be retried"; never a file open without a lease
    nn.rpc_create("/f", "c1")
    b1 = nn.rpc_addBlock("/f", "c1")
    prev = {"block": b1["block"], "gs": b1["gs"], "len": 1000}
    b2 = nn.rpc_addBlock("/f", "c1", previous=prev)
    last = {"block": b2["block"], "gs": b2["gs"], "len": 9}
    assert nn.rpc_complete("/f", "c1", last=last) is False   # both COMMITTED, no replica
    nn.leases.clock.now += 3601
    nn.check_leases()
    [rec] = nn.events.named("nn.lease.recover", path="/f")
    assert (rec["result"], rec["error"]) == ("error", "AlreadyBeingCreatedException")
    assert not nn.events.named("nn.lease.remove", path="/f")
    assert nn.leases.get_by_path("/f").holder == "c1" and nn.files["/f"].under_construction
    nn.check_leases()                                        # still failing: still kept
    assert nn.leases.get_by_path("/f").holder == "c1"
    # the reports arrive (a partition healed): the next round closes the file
    received(nn, b1["locations"][0], b1["block"], b1["gs"], 1000)
    received(nn, b2["locations"][0], b2["block"], b2["gs"], 9)
    nn.check_leases()
    assert nn.rpc_getFileInfo("/f")["closed"] and nn.leases.get_by_path("/f") is None


def test_hard_limit_on_a_committed_last_block_recovers_it_and_closes_the_file(nn):
    # the writer died after complete() answered "not yet": its reports are held back
    nn.rpc_create("/f", "c1")
    lb = nn.rpc_addBlock("/f", "c1")
    last = {"block": lb["block"], "gs": lb["gs"], "len": 700}
    assert nn.rpc_complete("/f", "c1", last=last) is False
    nn.leases.clock.now += 3601
    nn.check_leases()
    assert is_namenode_holder(nn.leases.get_by_path("/f").holder)
    info = nn.blocks[lb["block"]]
    assert info.state == UNDER_RECOVERY
    nn.rpc_commitBlockSynchronization(lb["block"], info.recovery_id, info.recovery_id, 700,
                                      True, False, lb["locations"])
    assert nn.rpc_getFileInfo("/f")["closed"] and nn.leases.get_by_path("/f") is None


def test_internal_release_lease_logs_the_renewal_it_makes(nn):
    open_with_block(nn)
    nn.rpc_recoverLease("/f", "c2")
    [renew] = nn.events.named("nn.lease.renew", holder="c2")
    assert (renew["path"], renew["reason"]) == ("/f", "lease_recovery")
    nn.leases.clock.now += 61                   # a soft-limit takeover renews the holder's
    with pytest.raises(RecoveryInProgressException):
        nn.rpc_append("/f", "c3")
    assert nn.events.named("nn.lease.renew", holder="c2", reason="lease_recovery")[1:]


# -- one block recovery at a time (3.x PendingRecoveryBlocks, HDFS-11576) ---------------

def test_a_second_request_changes_only_the_lease_holder_until_the_attempt_times_out(nn):
    lb = open_with_block(nn)                      # heartbeats every 3 s: 90 s timeout
    assert nn.rpc_recoverLease("/f", "c2") is False
    info = nn.blocks[lb["block"]]
    first = info.recovery_id
    nn.leases.clock.now += 1
    assert nn.rpc_recoverLease("/f", "c2") is False      # the caller again
    assert nn.rpc_recoverLease("/f", "c3") is False      # another caller: takes the lease
    assert info.recovery_id == first and len(nn.events.named("nn.recovery.start")) == 1
    assert nn.leases.get_by_path("/f").holder == "c3" and nn.files["/f"].client_name == "c3"
    assert len(nn.datanodes[info.primary].recover) == 1
    nn.leases.clock.now += 90                     # the attempt timed out
    assert nn.rpc_recoverLease("/f", "c3") is False
    assert info.recovery_id > first and len(nn.events.named("nn.recovery.start")) == 2


def test_the_monitor_retries_a_recovery_only_once_the_attempt_timed_out(tmp_path, namenodes):
    node = new_namenode(tmp_path / "nn", {"lease.hard-limit": "10s"})   # 90 s timeout
    node.leases.clock = node.clock = Clock()
    namenodes.append(node)
    lb = open_with_block(node)
    node.leases.clock.now += 11
    node.check_leases()
    info = node.blocks[lb["block"]]
    first = info.recovery_id
    node.leases.clock.now += 11                   # the NameNode's own lease expires
    node.check_leases()
    assert info.recovery_id == first and len(node.events.named("nn.recovery.start")) == 1
    assert len(node.events.named("nn.lease.recover", result="recovering")) == 2
    node.leases.clock.now += 80                   # 102 s after the first attempt
    node.check_leases()
    assert info.recovery_id > first and len(node.events.named("nn.recovery.start")) == 2


def test_sub_second_heartbeats_allow_a_new_attempt_at_once(tmp_path, namenodes):
    # Hadoop reads dfs.heartbeat.interval in whole seconds: 300 ms is a 0 s timeout
    node = new_namenode(tmp_path / "nn", {"dfs.heartbeat.interval": "300ms"})
    namenodes.append(node)
    lb = open_with_block(node)
    assert node.rpc_recoverLease("/f", "c2") is False
    time.sleep(0.01)
    assert node.rpc_recoverLease("/f", "c2") is False
    assert len(node.events.named("nn.recovery.start", block=lb["block"])) == 2


def closed_file(nn, path="/f", holder="c1", length=1000) -> dict:
    """A closed file of one block of `length` bytes, FINALIZED on its three targets."""
    nn.rpc_create(path, holder)
    lb = nn.rpc_addBlock(path, holder)
    for dn in lb["locations"]:
        received(nn, dn, lb["block"], lb["gs"], length)
    assert nn.rpc_complete(path, holder, last={"block": lb["block"], "gs": lb["gs"],
                                               "len": length}) is True
    return lb


def test_truncate_recovery_is_no_pending_attempt_a_lease_recovery_starts_its_own(nn):
    # 3.x FSDirTruncateOp.prepareFileForTruncate starts the recovery without
    # BlockManager.addBlockRecoveryAttempt: only internalReleaseLease registers one
    lb = closed_file(nn)
    assert nn.rpc_truncate("/f", 600, "c1") is False
    info = nn.blocks[lb["block"]]
    first = info.recovery_id
    assert info.state == UNDER_RECOVERY and lb["block"] not in nn.pending_recovery
    nn.leases.clock.now += 1                      # well inside the 90 s timeout
    assert nn.rpc_recoverLease("/f", "c2") is False
    assert info.recovery_id > first and len(nn.events.named("nn.recovery.start")) == 2
    [cmd] = recovery_commands(nn, info.primary)
    assert cmd["new_len"] == 600 and cmd["recovery_id"] == info.recovery_id   # still the truncate
    second = info.recovery_id
    assert nn.rpc_recoverLease("/f", "c3") is False   # that attempt is pending
    assert info.recovery_id == second and len(nn.events.named("nn.recovery.start")) == 2
    assert nn.leases.get_by_path("/f").holder == "c3"


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


def test_commit_block_synchronization_completes_the_last_block_so_append_works(nn):
    # 3.x commitBlockSynchronization -> closeFileCommitBlocks: COMPLETE at once, before
    # any DataNode reported the recovered replica
    lb = open_with_block(nn)
    nn.rpc_recoverLease("/f", "c2")
    rid = nn.blocks[lb["block"]].recovery_id
    nn.rpc_commitBlockSynchronization(lb["block"], rid, rid, 800, True, False, lb["locations"])
    assert nn.blocks[lb["block"]].state == COMPLETE
    [blk] = nn.rpc_getBlockLocations("/f")["blocks"]
    assert sorted(blk["locations"]) == sorted(lb["locations"])
    reply = nn.rpc_append("/f", "c3")
    assert reply["last_block"]["block"] == lb["block"] and reply["len"] == 800


def test_commit_block_synchronization_completes_even_without_a_live_target(nn):
    lb = open_with_block(nn)
    nn.rpc_recoverLease("/f", "c2")
    rid = nn.blocks[lb["block"]].recovery_id
    for dn in lb["locations"]:
        nn.datanodes[dn].dead = True
    nn.rpc_commitBlockSynchronization(lb["block"], rid, rid, 800, True, False, lb["locations"])
    assert nn.blocks[lb["block"]].state == COMPLETE and nn.rpc_getFileInfo("/f")["closed"]


def test_update_pipeline_refuses_a_smaller_length(nn):
    lb = open_with_block(nn)
    nn.rpc_fsync("/f", "c1", last_block_len=1000)
    new = nn.rpc_updateBlockForPipeline(lb["block"], "c1")
    old = {"block": lb["block"], "gs": lb["gs"], "len": 1000}
    with pytest.raises(IOExceptionRemote, match="to a smaller size block"):
        nn.rpc_updatePipeline("c1", old, dict(new, len=600), lb["locations"][:2])
    info = nn.blocks[lb["block"]]
    assert (info.gs, info.num_bytes) == (lb["gs"], 1000)
    assert nn.rpc_updatePipeline("c1", old, dict(new, len=1000), lb["locations"][:2])


def test_rename_and_delete_update_leases(nn):
    nn.rpc_create("/a/f", "c1")
    nn.rpc_rename("/a", "/b")
    assert nn.leases.get_by_path("/b/f").holder == "c1" and nn.leases.get_by_path("/a/f") is None
    nn.rpc_delete("/b", recursive=True)
    assert nn.leases.get("c1") is None


# -- the recover-block command is built at the heartbeat (3.x getBlockRecoveryCommand) ----

def test_a_queued_truncate_recovery_goes_out_with_the_latest_recovery_id(nn):
    # 3.x DatanodeManager.getBlockRecoveryCommand reads the block's recovery id when the
    # primary heartbeats: the truncate's primary runs the lease recovery's id
    lb = closed_file(nn)
    assert nn.rpc_truncate("/f", 600, "c1") is False
    info = nn.blocks[lb["block"]]
    first, truncate_primary = info.recovery_id, info.primary
    assert nn.rpc_recoverLease("/f", "c2") is False
    assert info.recovery_id > first and info.primary != truncate_primary
    for dn in (truncate_primary, info.primary):
        [cmd] = recovery_commands(nn, dn)
        assert (cmd["block"], cmd["gs"], cmd["recovery_id"], cmd["new_len"]) == (
            lb["block"], lb["gs"], info.recovery_id, 600)


def test_a_block_queued_twice_at_one_primary_goes_out_once_with_the_latest_id(nn):
    # 3.x DatanodeDescriptor.addBlockToBeRecovered: a block already queued is not queued again
    lb = open_with_block(nn)
    primary = lb["locations"][0]
    for dn in lb["locations"][1:]:
        nn.datanodes[dn].dead = True              # the only live location: primary twice
    assert nn.rpc_recoverLease("/f", "c2") is False
    info = nn.blocks[lb["block"]]
    first = info.recovery_id
    nn.leases.clock.now += 91                     # the attempt timed out
    assert nn.rpc_recoverLease("/f", "c2") is False
    assert info.recovery_id > first and info.primary == primary
    assert len(nn.events.named("nn.recovery.start", block=lb["block"])) == 2
    [cmd] = recovery_commands(nn, primary)
    assert cmd["recovery_id"] == info.recovery_id
    assert sorted(cmd["locations"]) == sorted(lb["locations"])   # < 2 fresh: all of them
    assert recovery_commands(nn, primary) == []


def test_the_locations_are_those_of_the_heartbeat(nn):
    lb = open_with_block(nn)
    assert nn.rpc_recoverLease("/f", "c2") is False
    info = nn.blocks[lb["block"]]
    stale = next(dn for dn in lb["locations"] if dn != info.primary)
    nn.datanodes[stale].stale = True              # stale after the recovery started
    [cmd] = recovery_commands(nn, info.primary)
    assert sorted(cmd["locations"]) == sorted(set(lb["locations"]) - {stale})


def test_a_block_completed_before_its_primary_heartbeats_fails_that_heartbeat(nn):
    # 3.x DatanodeManager.getBlockRecoveryCommand: "Recovery block ... where it is not
    # under construction"; the queue was taken, the next heartbeat goes through
    lb = open_with_block(nn)
    assert nn.rpc_recoverLease("/f", "c2") is False
    info = nn.blocks[lb["block"]]
    first_primary = info.primary
    nn.leases.clock.now += 91
    assert nn.rpc_recoverLease("/f", "c2") is False
    assert info.primary != first_primary
    nn.rpc_commitBlockSynchronization(lb["block"], info.recovery_id, info.recovery_id, 1000,
                                      True, False, lb["locations"])
    assert info.state == COMPLETE and nn.rpc_getFileInfo("/f")["closed"]
    with pytest.raises(IOExceptionRemote, match="not under construction"):
        nn.rpc_sendHeartbeat(first_primary)
    assert recovery_commands(nn, first_primary) == []


def test_a_recovery_command_goes_out_alone_and_the_rest_waits(nn):
    # DatanodeManager.handleHeartbeat returns the BlockRecoveryCommand by itself; the
    # transfers and deletions queued beside it go out with the next heartbeat
    lb = open_with_block(nn)
    nn.leases.clock.now += 3600 + 1
    nn.rpc_recoverLease("/f", "c2")
    primary = nn.events.named("nn.recovery.start", block=lb["block"])[0]["primary"]
    d = nn.datanodes[primary]
    d.commands.append({"type": "transfer", "block": 99, "gs": 1, "targets": []})
    d.invalidate.append(98)
    nn.deletion_delay = 0
    first = nn.rpc_sendHeartbeat(primary)["commands"]
    assert [c["type"] for c in first] == ["recover"]
    second = nn.rpc_sendHeartbeat(primary)["commands"]
    assert [c["type"] for c in second] == ["transfer", "invalidate"]


def test_a_heartbeat_in_safe_mode_takes_no_command(nn):
    # DatanodeManager.handleHeartbeat: in safe mode nothing is sent and nothing drained
    dn = open_with_block(nn)["locations"][0]
    nn.datanodes[dn].commands.append({"type": "transfer", "block": 99, "gs": 1, "targets": []})
    nn.safemode_status = "PENDING_THRESHOLD"
    assert nn.rpc_sendHeartbeat(dn)["commands"] == []
    nn.safemode_status = "OFF"
    assert [c["type"] for c in nn.rpc_sendHeartbeat(dn)["commands"]] == ["transfer"]
