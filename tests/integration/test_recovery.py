"""Pipeline, lease and block recovery on a real local cluster, with faults from process
control (SIGKILL, SIGSTOP, restart). Each test asserts the outcome on the cluster's
final state (fsck) and on the events, and records the recovery latency it measured."""

from __future__ import annotations

import os

import pytest

from minihdfs import state
from minihdfs.rpc import (AlreadyBeingCreatedException, LeaseExpiredException,
                         RecoveryInProgressException)
from tests.support import all_events, events, start_client, wait_for

pytestmark = pytest.mark.integration

KiB, MiB = 1024, 1024 * 1024


def fsck(cluster, path):
    client = cluster.client("fsck")
    try:
        return state.fsck(client, path, {n: cluster.nodes[n]["storage"] for n in cluster.datanodes()})
    finally:
        client.close()


def assert_replicas_agree(report, live=None):
    """Every FINALIZED replica of every block has the block's GS, length and one CRC."""
    for b in report["blocks"]:
        reps = [r for r in b["replicas"] if r["state"] == "FINALIZED" and r["gs"] == b["gs"]
                and (live is None or r["dn"] in live)]
        assert reps, f"block {b['block']} has no FINALIZED replica with gs {b['gs']}: {b}"
        assert {r["len"] for r in reps} == {b["len"]}, b
        assert len({r["crc"] for r in reps}) == 1, b


def file_closed(cluster, path):
    client = cluster.client("probe")
    try:
        info = client.info(path)
        return info if info and info["closed"] else None
    finally:
        client.close()


def write_op(path, size, hflush_every=None, close=True, op_id="w1"):
    return {"id": op_id, "op": "write", "path": path, "size": size, "hflush_every": hflush_every,
            "close": close}


# -- lease recovery -------------------------------------------------------------------

def test_client_killed_before_any_hflush_closes_through_lease_recovery(make_cluster, recovery_latency):
    cluster = make_cluster()
    start_client(cluster, "c1", [write_op("/f", 700 * KiB, close=False)])
    wait_for(lambda: events(cluster, "c1", "client.op.end"), what="write done (file left open)")
    cluster.kill_node("c1")
    killed = events(cluster, "c1", "client.op.end")[0]["ts"]
    closed = wait_for(lambda: events(cluster, "nn", "nn.file.close", path="/f"), 60,
                      what="the NameNode closing /f")[0]
    recovery_latency("lease recovery, client killed before any hflush",
                     "test_client_killed_before_any_hflush_closes_through_lease_recovery",
                     closed["ts"] - killed)
    assert closed["reason"] in ("lease_recovery", "block_recovery")
    report = fsck(cluster, "/f")
    assert report["closed"] and report["holder"] is None
    assert_replicas_agree(report)
    # the lease expired (hard limit, HDFS_NameNode takes over) and no lease is left
    assert events(cluster, "nn", "nn.lease.expired", limit="hard")
    [reassign] = events(cluster, "nn", "nn.lease.reassign", path="/f")
    assert reassign["holder"].startswith("HDFS_NameNode-")    # 3.x: HDFS_NameNode-<time>


def test_client_killed_after_kth_hflush_keeps_hflushed_bytes(make_cluster, recovery_latency):
    cluster = make_cluster()
    start_client(cluster, "c1", [write_op("/f", 4 * MiB, hflush_every=300 * KiB)])
    # kill right after the 3rd hflush returned
    wait_for(lambda: len(events(cluster, "c1", "client.hflush")) >= 3, what="3 hflushes")
    cluster.kill_node("c1")
    flushed = max(e["offset"] for e in events(cluster, "c1", "client.hflush"))
    killed_at = max(e["ts"] for e in events(cluster, "c1"))
    wait_for(lambda: file_closed(cluster, "/f"), 60, what="/f closed by lease recovery")
    closed = events(cluster, "nn", "nn.file.close", path="/f")[0]
    recovery_latency("lease + block recovery, client killed after k-th hflush",
                     "test_client_killed_after_kth_hflush_keeps_hflushed_bytes",
                     closed["ts"] - killed_at)
    report = fsck(cluster, "/f")
    assert report["len"] >= flushed, (report["len"], flushed)
    assert_replicas_agree(report)
    sync = events(cluster, "dn*", "dn.recovery.sync") or all_events(cluster, "dn.recovery.sync")
    # the last block was being written (min_rbw), or just allocated when the client
    # died, so that no replica holds a byte of it (remove)
    assert sync and sync[-1]["rule"] in ("min_rbw", "finalized", "remove")
    assert sync[-1]["rule"] != "remove" or sync[-1]["len"] == 0
    client = cluster.client("reader")
    data = client.read("/f")
    client.close()
    assert len(data) == report["len"]


def test_second_writer_rejected_before_soft_limit_and_succeeds_after(make_cluster, recovery_latency):
    cluster = make_cluster(config={"lease.soft-limit": "3s", "lease.hard-limit": "60s"})
    start_client(cluster, "c1", [write_op("/f", 200 * KiB, hflush_every=100 * KiB, close=False)])
    wait_for(lambda: events(cluster, "c1", "client.op.end"), what="c1 wrote and holds /f")
    other = cluster.client("c2")
    try:
        # the holder is alive and renewing: AlreadyBeingCreated, whatever the wait
        with pytest.raises(AlreadyBeingCreatedException):
            other.append("/f")
        cluster.kill_node("c1")
        killed = max(e["ts"] for e in events(cluster, "c1"))
        # before the soft limit passes, still refused
        with pytest.raises((AlreadyBeingCreatedException, RecoveryInProgressException)):
            other.append("/f")

        def try_append():
            try:
                return other.append("/f")
            except (AlreadyBeingCreatedException, RecoveryInProgressException):
                return None
        stream = wait_for(try_append, 60, interval=0.5, what="append after the soft limit")
        took = max(e["ts"] for e in events(cluster, "nn", "nn.file.append", path="/f")) - killed
        recovery_latency("soft-limit takeover by a second writer (append)",
                         "test_second_writer_rejected_before_soft_limit_and_succeeds_after", took)
        stream.write(b"x" * 1000)
        stream.close()
    finally:
        other.close()
    rejects = events(cluster, "nn", "nn.rpc.reject", op="append")
    assert {r["error"] for r in rejects} <= {"AlreadyBeingCreatedException",
                                              "RecoveryInProgressException"}
    assert any(r["error"] == "AlreadyBeingCreatedException" for r in rejects)
    takeover = [e for e in events(cluster, "nn", "nn.lease.recover", path="/f")
                if e["result"] != "error" and not e["force"]]
    assert takeover
    report = fsck(cluster, "/f")
    assert report["closed"] and report["len"] >= 200 * KiB + 1000
    assert_replicas_agree(report)


def test_recover_lease_closes_at_once_when_nothing_to_recover(make_cluster):
    cluster = make_cluster(config={"lease.hard-limit": "60s"})
    writer = cluster.client("c1")
    writer.create("/empty")           # open, no block: nothing to recover
    other = cluster.client("c2")
    try:
        assert other.recover_lease("/empty") is True
        assert file_closed(cluster, "/empty")
        ev = events(cluster, "nn", "nn.lease.recover", path="/empty")[-1]
        assert ev["force"] is True and ev["result"] == "closed"
    finally:
        writer.close()
        other.close()


def test_recover_lease_after_block_recovery(make_cluster, recovery_latency):
    cluster = make_cluster(config={"lease.hard-limit": "60s", "lease.soft-limit": "60s"})
    start_client(cluster, "c1", [write_op("/f", 300 * KiB, hflush_every=150 * KiB, close=False)])
    wait_for(lambda: events(cluster, "c1", "client.op.end"), what="c1 holds /f")
    cluster.kill_node("c1")
    other = cluster.client("c2")
    try:
        first = other.recover_lease("/f")
        assert first is False            # block recovery started
        start = events(cluster, "nn", "nn.recovery.start")[-1]
        wait_for(lambda: other.recover_lease("/f"), 60, interval=0.3, what="recoverLease true")
        commit = events(cluster, "nn", "nn.recovery.commit")[-1]
        recovery_latency("recoverLease with block recovery (recovery start -> commit)",
                         "test_recover_lease_after_block_recovery", commit["ts"] - start["ts"])
    finally:
        other.close()
    reassign = events(cluster, "nn", "nn.lease.reassign", path="/f")
    assert reassign and reassign[0]["holder"].startswith("DFSClient_c2")
    report = fsck(cluster, "/f")
    assert report["closed"] and report["len"] >= 300 * KiB
    assert_replicas_agree(report)


def test_hard_limit_expiry_closes_file_as_namenode(make_cluster, recovery_latency):
    cluster = make_cluster(config={"lease.soft-limit": "1s", "lease.hard-limit": "3s"})
    # a live writer that stops renewing: pause it (SIGSTOP), so nobody calls recoverLease
    start_client(cluster, "c1", [write_op("/f", 100 * KiB, hflush_every=100 * KiB, close=False)])
    wait_for(lambda: events(cluster, "c1", "client.op.end"), what="c1 holds /f")
    cluster.pause_node("c1")
    paused = max(e["ts"] for e in events(cluster, "c1"))
    wait_for(lambda: file_closed(cluster, "/f"), 60, what="/f closed by the hard limit")
    cluster.resume_node("c1")
    expired = events(cluster, "nn", "nn.lease.expired", limit="hard")
    assert expired
    reassign = events(cluster, "nn", "nn.lease.reassign", path="/f")
    assert reassign[0]["holder"].startswith("HDFS_NameNode-")
    close = events(cluster, "nn", "nn.file.close", path="/f")[0]
    recovery_latency("hard-limit expiry (last renewal -> file closed)",
                     "test_hard_limit_expiry_closes_file_as_namenode", close["ts"] - paused)
    # c1's own renewals (not the NameNode's renewal of its lease inside the recovery)
    renewals = [e["ts"] for e in events(cluster, "nn", "nn.lease.renew")
                if e.get("reason") != "lease_recovery"]
    last_renewal = max(renewals) if renewals else paused
    # hard limit + 2 monitor intervals, measured from the last renewal, with slack for load
    assert close["ts"] - last_renewal >= 3.0


# -- block recovery -------------------------------------------------------------------

def test_block_recovery_picks_min_rbw_length_of_unequal_replicas(make_cluster, recovery_latency):
    cluster = make_cluster(config={"lease.soft-limit": "2s", "lease.hard-limit": "4s",
                                   "dfs.client.socket-timeout": "30s"})
    writer = cluster.client("c1")
    stream = writer.create("/f")
    stream.write(os.urandom(200 * KiB))
    stream.hflush()                        # every node has 200 KiB
    first, middle, last = stream.streamer.nodes
    cluster.pause_node(middle)             # the middle node stops reading
    stream.write(os.urandom(320 * KiB))    # 5 whole packets: reach the first node only
    dn_len = lambda dn: next(r["len"] for r in cluster_replicas(cluster, dn) if r["state"] == "RBW")
    wait_for(lambda: dn_len(first) == 520 * KiB, 30, what="first node 320 KiB ahead")
    writer.renewer.stop()                  # the writer "crashes": no renewals, no more data
    stream.streamer.shutdown()
    cluster.kill_node(middle)              # what sat unread in its socket is lost
    cluster.start_node(middle)             # and its RBW replica comes back as RWR
    wait_for(lambda: file_closed(cluster, "/f"), 60, what="/f closed by lease recovery")
    sync = all_events(cluster, "dn.recovery.sync")[-1]
    answers = {a["dn"]: (a["state"], a["len"]) for a in sync["answers"]}
    assert answers[first] == ("RBW", 520 * KiB) and answers[last] == ("RBW", 200 * KiB), answers
    assert sync["rule"] == "min_rbw" and sync["len"] == 200 * KiB, sync
    assert set(sync["pipeline"]) == {first, last}   # the RWR replica does not take part
    start = all_events(cluster, "nn.recovery.start")[-1]
    commit = all_events(cluster, "nn.recovery.commit")[-1]
    recovery_latency("block recovery, unequal RBW lengths (start -> commit)",
                     "test_block_recovery_picks_min_rbw_length_of_unequal_replicas",
                     commit["ts"] - start["ts"])
    assert commit["len"] == sync["len"] and commit["gs"] == sync["recovery_id"]
    report = fsck(cluster, "/f")
    assert report["len"] == 200 * KiB
    assert_replicas_agree(report)
    writer.close()


def cluster_replicas(cluster, dn):
    from minihdfs.rpc import RpcClient
    peer = RpcClient(cluster.nodes[dn]["rpc"], 5, 10)
    try:
        return peer.call("getReplicas", with_crc=False)
    finally:
        peer.close()


def fsck_replicas(cluster, path):
    return [b["replicas"] for b in fsck(cluster, path)["blocks"]]


def test_restarted_datanodes_rwr_replicas_take_part_in_recovery(make_cluster):
    cluster = make_cluster()
    start_client(cluster, "c1", [write_op("/f", 400 * KiB, hflush_every=200 * KiB, close=False)])
    wait_for(lambda: events(cluster, "c1", "client.op.end"), what="c1 holds /f")
    cluster.kill_node("c1")
    for dn in cluster.datanodes():
        cluster.restart_node(dn)
    # after a restart the rbw replicas load as RWR
    assert all(any(e["state"] == "RWR" for e in events(cluster, dn, "dn.replica.state"))
               for dn in cluster.datanodes())
    wait_for(lambda: file_closed(cluster, "/f"), 60, what="/f closed")
    sync = all_events(cluster, "dn.recovery.sync")[-1]
    assert sync["rule"] == "min_rwr"
    report = fsck(cluster, "/f")
    assert report["len"] >= 400 * KiB
    assert_replicas_agree(report)


def test_truncate_inside_a_block_goes_through_block_recovery(make_cluster):
    cluster = make_cluster()
    client = cluster.client("c1")
    data = os.urandom(MiB + 300 * KiB)
    s = client.create("/t")
    s.write(data)
    s.close()
    new_len = MiB + 1234
    assert client.truncate("/t", new_len) is False       # inside the second block
    wait_for(lambda: file_closed(cluster, "/t"), 60, what="truncate recovery done")
    sync = all_events(cluster, "dn.recovery.sync")[-1]
    assert sync["rule"] == "truncate" and sync["len"] == 1234
    assert client.read("/t") == data[:new_len]
    report = fsck(cluster, "/t")
    assert report["len"] == new_len
    assert_replicas_agree(report)
    assert client.truncate("/t", MiB) is True             # on a block boundary: at once
    assert client.read("/t") == data[:MiB]
    client.close()


# -- pipeline recovery ----------------------------------------------------------------

@pytest.mark.parametrize("position", [0, 1, 2])
def test_datanode_killed_in_streaming_at_each_position(make_cluster, recovery_latency, position):
    cluster = make_cluster(datanodes=4)
    client = cluster.client("c1", os.path.join(cluster.dir, "events", "c1.jsonl"))
    s = client.create("/p")
    data = os.urandom(900 * KiB)
    s.write(data[:300 * KiB])
    s.hflush()
    old = list(s.streamer.nodes)
    victim = old[position]
    cluster.kill_node(victim)
    s.write(data[300 * KiB:])
    s.close()
    err = events(cluster, "c1", "client.pipeline.error")[0]
    assert err["error_index"] == position and err["bad_node"] == victim, err
    rec = events(cluster, "c1", "client.pipeline.recovered")[0]
    assert rec["gs"] > rec["old_gs"] and victim not in rec["pipeline"]
    recovery_latency(f"pipeline recovery, DataNode killed at position {position}",
                     f"test_datanode_killed_in_streaming_at_each_position[{position}]",
                     rec["ts"] - err["ts"])
    rep = events(cluster, "c1", "client.pipeline.replace")[0]
    assert rep["decision"] == "added" and rep["new_node"] in rec["pipeline"]
    assert len(rec["pipeline"]) == 3
    upd = events(cluster, "nn", "nn.block.update_pipeline", gs=rec["gs"])
    assert upd and upd[0]["pipeline"] == rec["pipeline"]
    assert client.read("/p") == data
    # the killed node comes back with its stale replica, which is invalidated
    cluster.start_node(victim)
    wait_for(lambda: any(e["block"] == err["block"] for e in events(cluster, victim, "dn.replica.invalidate")),
             60, what="stale replica invalidated")
    report = fsck(cluster, "/p")
    assert victim not in report["blocks"][0]["locations"]
    assert_replicas_agree(report)
    client.close()


@pytest.mark.parametrize("policy,hflush,expect", [
    ("DEFAULT", True, "added"),        # r=3, n=2: hflushed -> replace
    ("DEFAULT", False, "not_needed"),  # r=3, n=2, not hflushed -> keep going with 2
    ("ALWAYS", False, "added"),
    ("NEVER", True, "not_needed"),
])
def test_replace_datanode_policy(make_cluster, policy, hflush, expect):
    cluster = make_cluster(datanodes=4, config={
        "dfs.client.block.write.replace-datanode-on-failure.policy": policy})
    client = cluster.client("c1", os.path.join(cluster.dir, "events", "c1.jsonl"))
    s = client.create("/r")
    s.write(os.urandom(192 * KiB))         # 3 whole packets: sent without a flush
    if hflush:
        s.hflush()
    else:
        wait_for(lambda: s.acked_file_offset >= 192 * KiB, what="first bytes acked")
    cluster.kill_node(s.streamer.nodes[1])
    s.write(os.urandom(200 * KiB))
    s.close()
    rep = events(cluster, "c1", "client.pipeline.replace")[0]
    assert (rep["policy"], rep["replication"], rep["remaining"], rep["hflushed"]) == \
        (policy, 3, 2, hflush)
    assert rep["decision"] == expect
    rec = events(cluster, "c1", "client.pipeline.recovered")[0]
    assert len(rec["pipeline"]) == (3 if expect == "added" else 2)
    client.close()


def test_best_effort_goes_on_when_no_node_is_left_to_add(make_cluster):
    cluster = make_cluster(datanodes=3, config={
        "dfs.client.block.write.replace-datanode-on-failure.policy": "ALWAYS",
        "dfs.client.block.write.replace-datanode-on-failure.best-effort": "true"})
    client = cluster.client("c1", os.path.join(cluster.dir, "events", "c1.jsonl"))
    s = client.create("/b")
    data = os.urandom(400 * KiB)
    s.write(data[:200 * KiB])
    s.hflush()
    cluster.kill_node(s.streamer.nodes[0])
    s.write(data[200 * KiB:])
    s.close()
    rep = events(cluster, "c1", "client.pipeline.replace")[0]
    assert rep["decision"] == "failed_best_effort"
    assert client.read("/b") == data
    client.close()


def test_replacement_failure_without_best_effort_fails_the_stream(make_cluster):
    cluster = make_cluster(datanodes=3, config={
        "dfs.client.block.write.replace-datanode-on-failure.policy": "ALWAYS"})
    client = cluster.client("c1", os.path.join(cluster.dir, "events", "c1.jsonl"))
    s = client.create("/b")
    s.write(os.urandom(200 * KiB))
    s.hflush()
    cluster.kill_node(s.streamer.nodes[0])
    with pytest.raises(IOError):
        s.write(os.urandom(200 * KiB))
        s.close()
    assert events(cluster, "c1", "client.pipeline.replace")[0]["decision"] == "failed"
    assert events(cluster, "c1", "client.stream.error")
    client.close()


def test_all_datanodes_bad_fails_the_stream(make_cluster):
    cluster = make_cluster(datanodes=1, config={"dfs.replication": 1})
    client = cluster.client("c1", os.path.join(cluster.dir, "events", "c1.jsonl"))
    s = client.create("/a")
    s.write(os.urandom(100 * KiB))
    s.hflush()
    cluster.kill_node("dn1")
    with pytest.raises(IOError, match="All datanodes"):
        s.write(os.urandom(100 * KiB))
        s.close()
    with pytest.raises(IOError):       # and closing it never reports success
        s.close()
    closes = events(cluster, "c1", "client.close", path="/a")
    assert closes and closes[-1]["ok"] is False
    client.close()


def test_datanode_killed_at_pipeline_setup_abandons_and_reallocates(make_cluster):
    cluster = make_cluster(datanodes=4, config={"dfs.namenode.stale.datanode.interval": "60s",
                                                "dfs.namenode.heartbeat.recheck-interval": "60s"})
    client = cluster.client("c1", os.path.join(cluster.dir, "events", "c1.jsonl"))
    cluster.kill_node("dn2")          # still live for the NameNode: it will be chosen
    for i in range(4):                # placement is random: write until dn2 was picked
        s = client.create(f"/s{i}")
        s.write(os.urandom(100 * KiB))
        s.close()
        if events(cluster, "c1", "client.pipeline.abandon"):
            break
    ab = events(cluster, "c1", "client.pipeline.abandon")[0]
    assert ab["bad_node"] == "dn2"
    assert events(cluster, "nn", "nn.block.abandon", block=ab["block"])
    allocs = events(cluster, "nn", "nn.block.allocate")
    after = [a for a in allocs if a["ts"] > ab["ts"]]
    assert after and "dn2" not in after[0]["pipeline"]
    client.close()


@pytest.mark.parametrize("min_replication", [0, 1])
def test_new_block_setup_failure_with_min_replication(make_cluster, min_replication):
    """Four of six DataNodes are dead but still live for the NameNode: every pipeline of
    three, and every one after each exclusion, holds a dead node. Abandoning the block and
    excluding one node per attempt runs out of the four attempts; with min-replication 1
    the new block's pipeline is recovered on its survivors (3.4.1 setupPipelineForCreate)."""
    cluster = make_cluster(datanodes=6, config={
        "dfs.namenode.stale.datanode.interval": "60s",
        "dfs.namenode.heartbeat.recheck-interval": "60s",
        "dfs.client.block.write.replace-datanode-on-failure.min-replication": min_replication})
    client = cluster.client("c1", os.path.join(cluster.dir, "events", "c1.jsonl"))
    for dn in ("dn3", "dn4", "dn5", "dn6"):
        cluster.kill_node(dn)
    s = client.create("/r")
    if min_replication == 0:
        with pytest.raises(IOError, match="Unable to create new block"):
            s.write(os.urandom(100 * KiB))
            s.close()
        assert len(events(cluster, "c1", "client.pipeline.abandon")) == 4
        client.close()
        return
    s.write(os.urandom(100 * KiB))
    s.close()
    rec = events(cluster, "c1", "client.pipeline.recovered", path="/r")
    assert rec and set(rec[-1]["pipeline"]) <= {"dn1", "dn2"}
    ups = events(cluster, "nn", "nn.block.update_pipeline", block=rec[-1]["block"])
    assert ups and ups[-1]["gs"] == rec[-1]["gs"] and ups[-1]["pipeline"] == rec[-1]["pipeline"]
    assert file_closed(cluster, "/r")
    client.close()


def test_error_while_closing_uses_close_recovery(make_cluster, recovery_latency):
    # NEVER: with no spare DataNode, DEFAULT after an hflush would fail the close (3.4.0)
    cluster = make_cluster(datanodes=3, config={
        "dfs.client.socket-timeout": "3s",
        "dfs.client.block.write.replace-datanode-on-failure.policy": "NEVER"})
    client = cluster.client("c1", os.path.join(cluster.dir, "events", "c1.jsonl"))
    s = client.create("/c")
    data = os.urandom(300 * KiB)
    s.write(data)
    s.hflush()                         # everything acked: only the close packet is left
    last = s.streamer.nodes[-1]
    cluster.pause_node(last)
    s.close()                          # its ack never comes from the paused node
    cluster.resume_node(last)
    err = events(cluster, "c1", "client.pipeline.error")[0]
    assert err["stage"] == "PIPELINE_CLOSE" and err["bad_node"] == last
    setup = [e for e in events(cluster, "c1", "client.pipeline.setup")
             if e["stage"] == "PIPELINE_CLOSE_RECOVERY"]
    assert setup and last not in setup[0]["pipeline"]
    rec = events(cluster, "c1", "client.pipeline.recovered")[0]
    recovery_latency("close-stage error (PIPELINE_CLOSE_RECOVERY)",
                     "test_error_while_closing_uses_close_recovery", rec["ts"] - err["ts"])
    assert client.read("/c") == data
    report = fsck(cluster, "/c")
    assert report["closed"]
    assert_replicas_agree(report, live=setup[0]["pipeline"])
    client.close()


def test_error_while_closing_adds_a_replacement(make_cluster):
    """3.4.0 (HDFS-16146): a close-stage recovery asks the replace policy too. DEFAULT,
    r=3, hflushed, two survivors: the spare DataNode gets the survivor's FINALIZED
    replica and joins the PIPELINE_CLOSE_RECOVERY pipeline."""
    cluster = make_cluster(datanodes=4, config={"dfs.client.socket-timeout": "3s"})
    client = cluster.client("c1", os.path.join(cluster.dir, "events", "c1.jsonl"))
    s = client.create("/c")
    data = os.urandom(300 * KiB)
    s.write(data)
    s.hflush()                         # everything acked: only the close packet is left
    first = list(s.streamer.nodes)
    last = first[-1]
    spare = ({"dn1", "dn2", "dn3", "dn4"} - set(first)).pop()
    cluster.pause_node(last)
    s.close()                          # its ack never comes from the paused node
    cluster.resume_node(last)
    added = [e for e in events(cluster, "c1", "client.pipeline.replace")
             if e["decision"] == "added"]
    assert added and added[0]["stage"] == "PIPELINE_CLOSE_RECOVERY"
    assert added[0]["new_node"] == spare
    assert all_events(cluster, "dn.transfer", target=spare)
    setup = [e for e in events(cluster, "c1", "client.pipeline.setup")
             if e["stage"] == "PIPELINE_CLOSE_RECOVERY"]
    assert setup and set(setup[-1]["pipeline"]) == set(first[:-1]) | {spare}
    assert client.read("/c") == data
    report = fsck(cluster, "/c")
    assert report["closed"]
    assert_replicas_agree(report, live=setup[-1]["pipeline"])
    client.close()


def _write_across_a_restart(cluster, restart, replication=3, victim_index=1):
    """c1 writes 300 KiB, hflushes, `restart(victim)` hits a pipeline node, then writes
    the rest and closes; returns (client, victim, data)."""
    client = cluster.client("c1", os.path.join(cluster.dir, "events", "c1.jsonl"))
    s = client.create("/w", replication=replication)
    data = os.urandom(700 * KiB)
    s.write(data[:300 * KiB])
    s.hflush()
    victim = s.streamer.nodes[victim_index]
    restart(victim)
    s.write(data[300 * KiB:])
    s.close()
    assert client.read("/w") == data
    return client, victim, data


def test_datanode_restarted_in_time_stays_in_the_pipeline(make_cluster):
    """MINIHDFS.md 5 (seed 003, restartingNodeIndex): a DataNode stopped for a restart
    sends the RESTART OOB ack and saves its RBW replica; the client of a one-node
    pipeline keeps it, waits, and goes on with it once it is back."""
    cluster = make_cluster(datanodes=2)
    client, victim, _ = _write_across_a_restart(cluster, cluster.restart_node, 1, 0)
    assert events(cluster, victim, "dn.pipeline.oob", status="OOB_RESTART")
    assert events(cluster, "c1", "client.pipeline.restart_wait", dn=victim)
    assert not events(cluster, "c1", "client.pipeline.restart_timeout")
    states = events(cluster, victim, "dn.replica.state")
    assert any(e["state"] == "RBW" and e.get("reason") == "restart_saved" for e in states)
    assert not any(e["state"] == "RWR" for e in states)
    [recovered] = events(cluster, "c1", "client.pipeline.recovered")
    assert recovered["pipeline"] == [victim]
    assert_replicas_agree(fsck(cluster, "/w"))
    client.close()


def test_datanode_restarted_too_late_is_dropped_by_normal_recovery(make_cluster):
    cluster = make_cluster(datanodes=2, config={"dfs.client.datanode-restart.timeout": "1s"})
    with pytest.raises(IOError, match="All datanodes"):
        _write_across_a_restart(cluster, lambda dn: cluster.restart_node(dn, down=3.0), 1, 0)
    victim = events(cluster, "c1", "client.pipeline.restart_wait")[0]["dn"]
    assert events(cluster, "c1", "client.pipeline.restart_timeout", dn=victim)
    assert not events(cluster, "c1", "client.pipeline.recovered")


def test_restart_of_one_of_several_nodes_is_a_node_error(make_cluster):
    """Hadoop's shouldWaitForRestart: a restarting node that is neither alone in the
    pipeline nor on the writer's machine is dropped at once; the write goes on."""
    cluster = make_cluster(datanodes=4)
    client, victim, _ = _write_across_a_restart(cluster, cluster.restart_node)
    assert events(cluster, victim, "dn.pipeline.oob", status="OOB_RESTART")
    assert not events(cluster, "c1", "client.pipeline.restart_wait")
    recovered = events(cluster, "c1", "client.pipeline.recovered")
    assert recovered and victim not in recovered[-1]["pipeline"]
    client.close()


def test_datanode_crashed_and_started_during_a_write(make_cluster):
    """A crash is not a restart: no OOB ack, the RBW replica comes back as RWR, never
    rejoins, and is invalidated once a full block report shows its old GS (3.x: no
    sweep of older-GS replicas; the reports come every second here)."""
    cluster = make_cluster(datanodes=4, config={"dfs.blockreport.intervalMsec": "1s"})

    def crash(dn):
        cluster.kill_node(dn)
        cluster.start_node(dn)
    client, victim, _ = _write_across_a_restart(cluster, crash)
    assert [e for e in events(cluster, victim, "dn.replica.state") if e["state"] == "RWR"]
    assert not events(cluster, "c1", "client.pipeline.restart_wait")
    recovered = events(cluster, "c1", "client.pipeline.recovered")
    assert recovered and victim not in recovered[-1]["pipeline"]
    # the RWR replica with the old GS never rejoins and is invalidated
    wait_for(lambda: events(cluster, victim, "dn.replica.invalidate"), 60,
             what="stale RWR replica invalidated")
    client.close()


def test_block_allocated_but_never_written_is_removed_by_recovery(make_cluster):
    """The writer died between addBlock and its first packet: no DataNode has the block;
    recovery must remove it and close the file, not retry forever (HDFS-8344)."""
    cluster = make_cluster(config={"lease.hard-limit": "60s"})
    writer = cluster.client("c1")
    s = writer.create("/e")
    s.write(os.urandom(100 * KiB))
    s.hflush()
    s.close()
    stream = writer.append("/e")            # reopen; then only ask for a new block ...
    stream.streamer.shutdown()
    lb = writer.nn_call("addBlock", path="/e", holder=writer.holder,
                        previous=stream.streamer.last_block)
    # ... and "die": nothing is ever written to the new block
    other = cluster.client("c2")
    try:
        wait_for(lambda: other.recover_lease("/e"), 60, interval=0.5, what="recoverLease true")
    finally:
        other.close()
        writer.close()
    commit = [e for e in all_events(cluster, "nn.recovery.commit") if e["block"] == lb["block"]]
    assert commit and commit[0]["delete"] is True
    report = fsck(cluster, "/e")
    assert report["closed"] and report["len"] == 100 * KiB
    assert lb["block"] not in [b["block"] for b in report["blocks"]]


def test_zombie_hflush_into_a_block_removed_by_recovery_fails(make_cluster):
    """A writer frozen between addBlock and the pipeline setup of its second block comes
    back after lease recovery removed that block (no DataNode had it) and closed the file.
    The DataNodes accept its pipeline and report the replicas; the NameNode does not know
    the block and has them deleted. As FsDatasetImpl.invalidate, a deletion does not stop
    the writer: the replicas leave the DataNodes' maps while the BlockReceivers write on
    into the deleted files, so the packets are still acked. The first hflush of a new
    pipeline persists the block list with fsync (Hadoop's flushOrSync), which checks the
    lease: the hflush must fail there, not report bytes the file no longer has. The test
    waits for the deletions to be carried out on every pipeline node before the hflush."""
    cluster = make_cluster(config={"lease.hard-limit": "60s"})
    writer = cluster.client("c1", os.path.join(cluster.events_dir, "c1.jsonl"))
    other = cluster.client("c2")
    recovered, pipeline = [], []
    try:
        s = writer.create("/z")
        setup = s.streamer.create_block_output_stream

        def frozen_before_second_pipeline(nodes, gs, stage):
            if s.streamer.last_block is not None and not recovered:
                # "frozen": the NameNode recovers the lease meanwhile
                wait_for(lambda: other.recover_lease("/z"), 60, interval=0.5,
                         what="recoverLease true")
                recovered.append(s.streamer.block["block"])
                pipeline.extend(nodes)
            return setup(nodes, gs, stage)

        s.streamer.create_block_output_stream = frozen_before_second_pipeline
        s.write(os.urandom(MiB))
        s.hflush()
        s.write(os.urandom(64 * KiB))
        wait_for(lambda: pipeline and all(
            events(cluster, dn, "dn.replica.invalidate", block=recovered[0])
            for dn in pipeline), 30, interval=0.2, what="the zombie's replicas deleted")
        with pytest.raises(LeaseExpiredException):
            s.hflush()
        s.abort()
    finally:
        other.close()
        writer.close()
    assert recovered
    hflushes = events(cluster, "c1", "client.hflush", path="/z")
    assert [e["offset"] for e in hflushes] == [MiB]
    # the writers were not stopped: no pipeline error before the fsync
    assert not events(cluster, "c1", "client.pipeline.error", path="/z", block=recovered[0])
    rejects = [e for e in all_events(cluster, "nn.rpc.reject") if e["op"] == "fsync"]
    assert rejects and rejects[0]["holder"] == writer.holder
    report = fsck(cluster, "/z")
    assert report["closed"] and report["len"] == MiB
    assert recovered[0] not in [b["block"] for b in report["blocks"]]
