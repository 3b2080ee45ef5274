"""Startup safe mode of the NameNode (Hadoop's BlockManagerSafeMode and the
checkNameNodeSafeMode of FSNamesystem), driven in-process.

A NameNode restarted on a namespace with COMPLETE blocks stays in safe mode until
(long) (blocks x dfs.namenode.safemode.threshold-pct) of them have a live FINALIZED
replica and dfs.namenode.safemode.min.datanodes DataNodes are live, then waits the
extension. Meanwhile it refuses changes with a SafeModeException, releases no lease,
starts no block recovery, schedules no re-replication and queues no deletion."""

from __future__ import annotations

import time

import pytest

from hdfs_contract.config import Config, ConfigError
from minihdfs.namenode import UNDER_CONSTRUCTION, NameNode, safemode_threshold
from minihdfs.rpc import SafeModeException

from .test_minihdfs_namenode import (namenodes, new_namenode,  # noqa: F401
                                    write_block)

DNS = {"dn1": "/r1", "dn2": "/r1", "dn3": "/r2"}
MiB = 1 << 20


def start(storage, config: dict | None = None, datanodes=DNS) -> NameNode:
    return new_namenode(storage, config, datanodes)


def restarted(tmp_path, namenodes, config: dict | None = None, datanodes=DNS,
              before: dict | None = None) -> tuple[NameNode, dict]:
    """A namespace with /old (two COMPLETE blocks on dn1..dn3) and /open (one block being
    written by c1, nothing fsync'd), built with `before` (default: `config`), then a
    restart with `config` that no DataNode has reported to."""
    nn = start(tmp_path / "nn", config if before is None else before)
    namenodes.append(nn)
    nn.rpc_create("/old", "c0", replication=3)
    b1 = write_block(nn, "/old", "c0", MiB)
    b2 = write_block(nn, "/old", "c0", 100, previous=b1)
    assert nn.rpc_complete("/old", "c0", last=b2)
    nn.rpc_create("/open", "c1", replication=3)
    o1 = nn.rpc_addBlock("/open", "c1")
    nn.stop()
    nn2 = start(tmp_path / "nn", config, datanodes)
    namenodes.append(nn2)
    return nn2, {"b1": b1, "b2": b2, "o1": o1}


def report(nn: NameNode, dn: str, *blocks: dict, state: str = "FINALIZED") -> None:
    """A full block report of `dn` with these replicas."""
    nn.rpc_blockReport(dn, [{"block": b["block"], "gs": b["gs"], "len": b["len"], "state": state}
                            for b in blocks])


def wait_until(condition, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def test_a_restart_with_unreported_blocks_refuses_changes_until_they_are_reported(tmp_path, namenodes):
    nn, ids = restarted(tmp_path, namenodes)
    assert nn.in_safe_mode()
    [enter] = nn.events.named("nn.safemode.enter")
    # (long) (2 x 0.999f) = 1 block must be reported
    assert (enter["safe_blocks"], enter["total_blocks"], enter["threshold_blocks"]) == (0, 2, 1)
    with pytest.raises(SafeModeException) as e:
        nn.rpc_addBlock("/open", "c1", previous={"block": ids["o1"]["block"],
                                                 "gs": ids["o1"]["gs"], "len": 10})
    assert str(e.value).startswith("Cannot add block to /open. Name node is in safe mode.\n"
                                   "The reported blocks 0 needs additional 1 blocks to reach "
                                   "the threshold 0.9990 of total blocks 2.\n")
    assert str(e.value).endswith("Safe mode will be turned off automatically once the "
                                 "thresholds have been reached.")
    [reject] = nn.events.named("nn.rpc.reject", op="addBlock")
    assert reject["error"] == "SafeModeException" and reject["holder"] == "c1"
    assert nn.blocks[ids["o1"]["block"]].state == UNDER_CONSTRUCTION   # nothing committed
    refused = {
        "create": lambda: nn.rpc_create("/new", "c2"),
        "append": lambda: nn.rpc_append("/old", "c2"),
        "complete": lambda: nn.rpc_complete("/open", "c1", last=None),
        "fsync": lambda: nn.rpc_fsync("/open", "c1", 10),
        "renewLease": lambda: nn.rpc_renewLease("c1"),
        "recoverLease": lambda: nn.rpc_recoverLease("/open", "c2"),
        "truncate": lambda: nn.rpc_truncate("/old", 5, "c2"),
        "delete": lambda: nn.rpc_delete("/old"),
        "rename": lambda: nn.rpc_rename("/old", "/older"),
        "abandonBlock": lambda: nn.rpc_abandonBlock("/open", "c1", ids["o1"]["block"]),
        "updateBlockForPipeline": lambda: nn.rpc_updateBlockForPipeline(ids["o1"]["block"], "c1"),
        "getAdditionalDatanode": lambda: nn.rpc_getAdditionalDatanode(
            "/open", "c1", ids["o1"]["block"], ["dn1"], [], 1),
        "getBlockLocations": lambda: nn.rpc_getBlockLocations("/old"),
    }
    for op, call in refused.items():
        with pytest.raises(SafeModeException):
            call()
    assert {r["op"] for r in nn.events.named("nn.rpc.reject", error="SafeModeException")} \
        == set(refused) | {"addBlock"}
    assert nn.rpc_getFileInfo("/old")["closed"] is True          # reads go on
    # dn1 reports one of the two blocks: the threshold (1) is met, safe mode is off
    report(nn, "dn1", ids["b1"])
    assert not nn.in_safe_mode()
    [leave] = nn.events.named("nn.safemode.leave")
    assert (leave["safe_blocks"], leave["total_blocks"]) == (1, 2) and leave["waited"] >= 0
    lb = nn.rpc_addBlock("/open", "c1", previous={"block": ids["o1"]["block"],
                                                  "gs": ids["o1"]["gs"], "len": 10})
    assert lb["block"] > ids["o1"]["block"]


def test_no_lease_is_released_and_no_recovery_started_in_safe_mode(tmp_path, namenodes):
    """The dead writer's lease is past the hard limit while no DataNode has reported:
    released then, its block (nothing fsync'd, no location known) would be removed as
    empty and the file closed without the bytes its replicas hold."""
    config = {"lease.hard-limit": "200ms", "dfs.namenode.lease-recheck-interval-ms": "50ms"}
    nn, ids = restarted(tmp_path, namenodes, config)
    time.sleep(0.6)
    assert not nn.events.named("nn.lease.expired")
    assert not nn.events.named("nn.recovery.start")
    assert nn.rpc_getFileInfo("/open")["closed"] is False
    o1 = ids["o1"]
    for dn in o1["locations"]:
        nn.rpc_blockReport(dn, [
            {"block": ids["b1"]["block"], "gs": ids["b1"]["gs"], "len": MiB, "state": "FINALIZED"},
            {"block": ids["b2"]["block"], "gs": ids["b2"]["gs"], "len": 100, "state": "FINALIZED"},
            {"block": o1["block"], "gs": o1["gs"], "len": 4096, "state": "RBW"}])
    assert not nn.in_safe_mode()
    assert wait_until(lambda: nn.events.named("nn.recovery.start", block=o1["block"]))
    [recovery] = nn.events.named("nn.recovery.start", block=o1["block"])
    assert recovery["primary"] in o1["locations"]
    assert sorted(recovery["pipeline"]) == sorted(o1["locations"])
    assert not nn.events.named("nn.block.state", block=o1["block"], state="REMOVED")


def test_recover_lease_is_refused_in_safe_mode(tmp_path, namenodes):
    nn, _ = restarted(tmp_path, namenodes)
    with pytest.raises(SafeModeException, match=r"^Cannot recover the lease of /open\. Name "
                                                r"node is in safe mode\."):
        nn.rpc_recoverLease("/open", "c2")
    assert not nn.events.named("nn.lease.recover")
    assert not nn.events.named("nn.recovery.start")


def test_no_replication_or_deletion_is_decided_in_safe_mode(tmp_path, namenodes):
    config = {"dfs.namenode.safemode.threshold-pct": 1.0, "dfs.heartbeat.interval": "100ms",
              "dfs.namenode.redundancy.interval.seconds": "100ms"}
    nn, ids = restarted(tmp_path, namenodes, config)
    b1, b2 = ids["b1"], ids["b2"]
    # dn1 reports b1 (under-replicated: 1 of 3), a stale copy of b2 and an orphan replica
    report(nn, "dn1", b1, dict(b2, gs=b2["gs"] - 1), {"block": 99, "gs": 5, "len": 7})
    assert nn.in_safe_mode()                   # b2 not reported: 1 of 2 blocks safe
    time.sleep(1.5)                            # longer than the old fixed start-up wait
    assert not nn.events.named("nn.replication.schedule")
    assert not nn.events.named("nn.replica.invalidate")
    assert all(not d.invalidate and not d.commands for d in nn.datanodes.values())
    # dn2 reports both: safe mode ends, the redundancy monitor does its work, and dn1's
    # next report of its stale copy has it deleted (3.x: a report finds a stale replica)
    report(nn, "dn2", b1, b2)
    assert not nn.in_safe_mode()
    assert wait_until(lambda: nn.events.named("nn.replication.schedule", block=b1["block"]))
    report(nn, "dn1", b1, dict(b2, gs=b2["gs"] - 1), {"block": 99, "gs": 5, "len": 7})
    assert nn.events.named("nn.replica.invalidate", dn="dn1", block=b2["block"])


def test_one_complete_block_never_enters_safe_mode(tmp_path, namenodes):
    """(long) (1 x 0.999f) = 0: Hadoop needs no block reported for a single block."""
    nn = start(tmp_path / "nn")
    namenodes.append(nn)
    nn.rpc_create("/one", "c0", replication=3)
    b = write_block(nn, "/one", "c0", 100)
    assert nn.rpc_complete("/one", "c0", last=b)
    nn.stop()
    nn2 = start(tmp_path / "nn")
    namenodes.append(nn2)
    assert not nn2.in_safe_mode()
    assert not nn2.events.named("nn.safemode.enter")
    assert not nn2.events.named("nn.safemode.leave")
    nn2.rpc_create("/two", "c1")


def test_a_fresh_namenode_is_in_safe_mode_only_for_min_datanodes(tmp_path, namenodes):
    nn = start(tmp_path / "nn", datanodes={})
    namenodes.append(nn)
    assert not nn.in_safe_mode() and not nn.events.named("nn.safemode.enter")
    nn.rpc_create("/f", "c1")
    # activate(0) with a DataNode threshold: no block needed, but the DataNodes are
    nn2 = start(tmp_path / "nn2", {"dfs.namenode.safemode.min.datanodes": 1}, datanodes={})
    namenodes.append(nn2)
    assert nn2.in_safe_mode()
    nn2.rpc_registerDatanode("dn1", "/r1")
    assert not nn2.in_safe_mode()


def test_the_threshold_is_a_float32_share_truncated_as_hadoop_does():
    assert [safemode_threshold(n, 0.999) for n in (0, 1, 2, 1000)] == [0, 0, 1, 999]
    # 78001 x 0.999f = 77923.000004 -> 77923 (a float64 0.999 would give 77922.999 -> 77922)
    assert safemode_threshold(78001, 0.999) == 77923
    assert safemode_threshold(5, 0) == 0 and safemode_threshold(5, 1.5) == 7


def test_the_extension_keeps_safe_mode_on_after_the_thresholds_are_met(tmp_path, namenodes):
    nn, ids = restarted(tmp_path, namenodes, {"dfs.namenode.safemode.extension": "300ms"})
    report(nn, "dn1", ids["b1"], ids["b2"])
    [ext] = nn.events.named("nn.safemode.extension")
    assert ext["extension"] == pytest.approx(0.3) and ext["safe_blocks"] == 2
    assert nn.in_safe_mode()
    with pytest.raises(SafeModeException, match="In safe mode extension"):
        nn.rpc_create("/new", "c2")
    assert wait_until(lambda: not nn.in_safe_mode(), 5.0)
    [leave] = nn.events.named("nn.safemode.leave")
    assert leave["waited"] >= 0.3
    nn.rpc_create("/new", "c2")


def test_min_datanodes_keeps_safe_mode_on_until_enough_are_live(tmp_path, namenodes):
    nn, ids = restarted(tmp_path, namenodes, {"dfs.namenode.safemode.min.datanodes": 4},
                        before={})
    report(nn, "dn1", ids["b1"], ids["b2"])
    assert nn.in_safe_mode()
    with pytest.raises(SafeModeException, match="The number of live datanodes 3 needs an "
                                                "additional 1 live datanodes"):
        nn.rpc_create("/new", "c2")
    nn.rpc_registerDatanode("dn4", "/r2")
    assert not nn.in_safe_mode()


def test_safe_mode_keys_parse_and_refuse_bad_values():
    conf = Config({"dfs.namenode.safemode.threshold-pct": "0.5",
                   "dfs.namenode.safemode.min.datanodes": 2,
                   "dfs.namenode.safemode.extension": 30000})
    assert conf["dfs.namenode.safemode.threshold-pct"] == 0.5
    assert conf["dfs.namenode.safemode.min.datanodes"] == 2
    assert conf["dfs.namenode.safemode.extension"] == 30.0     # a bare number is ms
    defaults = Config()
    assert defaults["dfs.namenode.safemode.threshold-pct"] == pytest.approx(0.999)
    assert defaults["dfs.namenode.safemode.extension"] == 0.0
    with pytest.raises(ConfigError, match="threshold-pct: expected a number"):
        Config({"dfs.namenode.safemode.threshold-pct": "most"})
    with pytest.raises(ConfigError, match="min.datanodes: must be at least 0"):
        Config({"dfs.namenode.safemode.min.datanodes": -1})
