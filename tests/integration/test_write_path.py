"""The mini-HDFS write path on a real local cluster (1 NameNode + DataNodes, separate
processes on loopback, 1 MiB blocks): multi-block writes, append, hflush visibility,
NameNode and DataNode restarts, a dead DataNode, a corrupt replica, and garbage on
every port. No mocks: clients, NameNode and DataNodes are the real code over TCP."""

from __future__ import annotations

import json
import os
import random
import socket
import struct
import threading
import zlib

import pytest

from minihdfs import state, wire
from tests.support import events, wait_for

pytestmark = pytest.mark.integration

MiB = 1 << 20
KiB = 1 << 10


def payload(n: int, seed: int = 0) -> bytes:
    return random.Random(seed).randbytes(n)


def client(cluster, cid: str):
    """An in-process DFSClient whose events go to the cluster's events/<cid>.jsonl."""
    c = cluster.client(cid, events_path=os.path.join(cluster.dir, "events", f"{cid}.jsonl"))
    return c


@pytest.fixture
def clients():
    made = []
    yield made
    for c in made:
        c.close()


def storages(cluster) -> dict[str, str]:
    return {dn: cluster.nodes[dn]["storage"] for dn in cluster.datanodes()}


def fsck(cluster, c, path: str) -> dict:
    return state.fsck(c, path, storages(cluster))


def write_file(c, path: str, data: bytes, piece: int = 100_003, replication: int = 3) -> None:
    stream = c.create(path, replication=replication)
    for i in range(0, len(data), piece):
        stream.write(data[i:i + piece])
    stream.close()


def block_slices(data: bytes, block_lens: list[int]) -> list[bytes]:
    out, pos = [], 0
    for n in block_lens:
        out.append(data[pos:pos + n])
        pos += n
    return out


def healthy(report: dict, data: bytes, replication: int, exclude: tuple = ()) -> bool:
    """Every block COMPLETE with `replication` FINALIZED replicas (outside `exclude`) of
    the block's GS and length whose CRC is that of the block's bytes, and the NameNode's
    locations are exactly those replicas: a DataNode's incremental block report travels
    on its own thread, so a replica can be FINALIZED on disk before the NameNode lists it."""
    if not report["closed"] or report["len"] != len(data):
        return False
    slices = block_slices(data, [b["len"] for b in report["blocks"]])
    for b, chunk in zip(report["blocks"], slices):
        if b["state"] != "COMPLETE":
            return False
        live = [r for r in b["replicas"] if r["dn"] not in exclude]
        good = [r for r in live if r["state"] == "FINALIZED" and r["gs"] == b["gs"]
                and r["len"] == b["len"] and r["crc"] == zlib.crc32(chunk)]
        if len(good) != replication or len(live) != replication:
            return False
        if sorted(b["locations"]) != sorted(r["dn"] for r in good):
            return False
    return True


def wait_healthy_file(cluster, c, path, data, replication=3, exclude=(), timeout=60.0) -> dict:
    last = {}

    def check():
        last["report"] = fsck(cluster, c, path)
        return healthy(last["report"], data, replication, exclude)
    try:
        wait_for(check, timeout, 0.5, f"{path} to have {replication} good replicas per block")
    except AssertionError:
        raise AssertionError(f"fsck of {path}: {json.dumps(last.get('report'), indent=1)}")
    return last["report"]


# -- writes and reads ------------------------------------------------------------------

def test_multi_block_file_is_replicated_and_read_back(make_cluster, clients):
    cluster = make_cluster()
    c = client(cluster, "c1")
    clients.append(c)
    data = payload(3 * MiB + 512 * KiB, seed=1)
    write_file(c, "/data/multi", data)
    assert c.read("/data/multi") == data
    info = c.info("/data/multi")
    assert info["closed"] is True and info["len"] == len(data) and info["holder"] is None
    report = wait_healthy_file(cluster, c, "/data/multi", data)
    assert [b["len"] for b in report["blocks"]] == [MiB, MiB, MiB, 512 * KiB]
    assert len({b["block"] for b in report["blocks"]}) == 4
    for b in report["blocks"]:
        assert sorted(r["dn"] for r in b["replicas"]) == ["dn1", "dn2", "dn3"]
        assert len({(r["gs"], r["len"], r["crc"]) for r in b["replicas"]}) == 1
    # the contract's events: allocations, COMPLETE blocks, a closed file
    allocs = events(cluster, "nn", "nn.block.allocate", path="/data/multi")
    assert [a["block"] for a in allocs] == [b["block"] for b in report["blocks"]]
    assert all(len(a["pipeline"]) == 3 for a in allocs)
    [close] = events(cluster, "nn", "nn.file.close", path="/data/multi")
    assert close["len"] == len(data) and close["reason"] == "complete"
    [cclose] = events(cluster, "c1", "client.close", path="/data/multi")
    assert cclose["ok"] is True and cclose["len"] == len(data)
    writes = events(cluster, "c1", "client.write", path="/data/multi")
    assert sum(w["len"] for w in writes) == len(data)
    # a second client reads the same bytes
    c2 = client(cluster, "c2")
    clients.append(c2)
    assert c2.read("/data/multi") == data


def test_small_and_empty_files(make_cluster, clients):
    cluster = make_cluster()
    c = client(cluster, "c1")
    clients.append(c)
    write_file(c, "/empty", b"")
    assert c.read("/empty") == b"" and c.info("/empty")["closed"] is True
    write_file(c, "/tiny", b"x")
    assert c.read("/tiny") == b"x"
    exact = payload(MiB, seed=2)          # exactly one block
    write_file(c, "/exact", exact)
    assert c.read("/exact") == exact
    report = wait_healthy_file(cluster, c, "/exact", exact)
    assert [b["len"] for b in report["blocks"]] == [MiB]


def test_append_to_a_closed_file(make_cluster, clients):
    cluster = make_cluster()
    c = client(cluster, "c1")
    clients.append(c)
    old = payload(MiB + 512 * KiB, seed=3)
    write_file(c, "/app", old)
    first = wait_healthy_file(cluster, c, "/app", old)
    new = payload(700 * KiB, seed=4)
    stream = c.append("/app")
    assert stream.file_offset == len(old)
    stream.write(new)
    stream.close()
    assert c.read("/app") == old + new
    report = wait_healthy_file(cluster, c, "/app", old + new)
    # the partial last block was filled up, then a new block started
    assert [b["len"] for b in report["blocks"]] == [MiB, MiB, 188 * KiB]
    assert report["blocks"][0] == dict(report["blocks"][0], gs=first["blocks"][0]["gs"])
    assert report["blocks"][1]["block"] == first["blocks"][1]["block"]
    assert report["blocks"][1]["gs"] > first["blocks"][1]["gs"]   # append bumps the GS
    assert events(cluster, "nn", "nn.file.append", path="/app")
    assert events(cluster, "c1", "client.stream.open", path="/app", mode="append")
    # a second append, by another client, of a few bytes
    c2 = client(cluster, "c2")
    clients.append(c2)
    more = b"the end\n"
    stream = c2.append("/app")
    stream.write(more)
    stream.close()
    assert c.read("/app") == old + new + more
    wait_healthy_file(cluster, c, "/app", old + new + more)


def test_hflush_makes_data_visible_to_a_concurrent_reader(make_cluster, clients):
    cluster = make_cluster()
    writer, reader = client(cluster, "c1"), client(cluster, "c2")
    clients += [writer, reader]
    data = payload(2 * MiB + 100 * KiB, seed=5)
    stream = writer.create("/open/hflushed", replication=3)
    try:
        stream.write(data[:300_000])
        assert stream.hflush() == 300_000
        info = reader.info("/open/hflushed")
        assert info["closed"] is False and info["holder"] == writer.holder
        assert reader.read("/open/hflushed") == data[:300_000]
        # across a block boundary: a finished block and the one being written
        stream.write(data[300_000:1_300_000])
        assert stream.hflush() == 1_300_000
        assert reader.read("/open/hflushed") == data[:1_300_000]
        [flush1, flush2] = events(cluster, "c1", "client.hflush", path="/open/hflushed")
        assert (flush1["offset"], flush2["offset"]) == (300_000, 1_300_000)
        stream.write(data[1_300_000:])
    finally:
        stream.close()
    assert reader.read("/open/hflushed") == data
    wait_healthy_file(cluster, reader, "/open/hflushed", data)


# -- NameNode restart ------------------------------------------------------------------

def test_namenode_restart_keeps_the_namespace_and_open_files(make_cluster, clients):
    # a loaded machine may keep the NameNode down or in safe mode (renewals refused) past
    # a short hard limit, and the client would then give its open file up (renewLease)
    cluster = make_cluster(config={"lease.hard-limit": "60s"})
    c1 = client(cluster, "c1")
    clients.append(c1)
    closed = payload(MiB + 300 * KiB, seed=6)
    write_file(c1, "/nn/closed", closed)
    write_file(c1, "/nn/to-move", b"moved bytes")
    assert c1.rename("/nn/to-move", "/nn/moved")
    write_file(c1, "/nn/deleted", b"gone")
    assert c1.delete("/nn/deleted")
    data = payload(2 * MiB + 200 * KiB, seed=7)
    stream = c1.create("/nn/open", replication=3)
    try:
        stream.write(data[:1_200_000])
        stream.hflush()
        cluster.restart_node("nn")
        cluster.wait_healthy(60)
        c2 = client(cluster, "c2")
        clients.append(c2)
        info = wait_for(lambda: c2.info("/nn/closed"), 30, what="the NameNode to answer")
        assert info["closed"] is True and info["len"] == len(closed)
        assert c2.read("/nn/closed") == closed
        assert c2.read("/nn/moved") == b"moved bytes"
        assert c2.info("/nn/to-move") is None and c2.info("/nn/deleted") is None
        info = c2.info("/nn/open")
        assert info["closed"] is False and info["holder"] == c1.holder
        state_now = c2.nn_call("getClusterState")
        assert {"holder": c1.holder, "paths": ["/nn/open"]} in state_now["leases"]
        [_, restarted] = events(cluster, "nn", "nn.start")
        assert restarted["open_files"] == 1
        # the writer goes on across a block boundary (addBlock after the restart), closes
        stream.write(data[1_200_000:])
    finally:
        stream.close()
    assert c2.read("/nn/open") == data
    info = c2.info("/nn/open")
    assert info["closed"] is True and info["len"] == len(data)
    wait_healthy_file(cluster, c2, "/nn/open", data)


def test_hflush_whose_fsync_fails_ends_the_stream_and_its_lease_renewal(make_cluster, clients):
    """A new block's first hflush persists it with fsync; when the NameNode is gone the
    hflush fails, and as in 3.x DFSOutputStream.flushOrSync the stream is closed for good
    (client.stream.error) and its file leaves the lease renewer."""
    cluster = make_cluster(config={"dfs.blocksize": 64 * KiB,
                                   "dfs.client-write-packet-size": 8 * KiB,
                                   # the renewer must not give the stream up first
                                   "lease.hard-limit": "60s"})
    c = client(cluster, "c1")
    clients.append(c)
    stream = c.create("/f", replication=3)
    stream.write(b"x" * 1000)
    stream.hflush()   # block 1 set up and persisted
    stream.write(b"y" * 72 * KiB)   # into block 2, whose pipeline is not persisted yet
    wait_for(lambda: [e for e in events(cluster, "c1", "client.ack") if e["block"] !=
                      events(cluster, "c1", "client.pipeline.setup")[0]["block"]],
             30, what="an ack on block 2")
    assert "/f" in c.renewer.open_files
    cluster.stop_node("nn")
    with pytest.raises(OSError):
        stream.hflush()
    [error] = events(cluster, "c1", "client.stream.error", path="/f")
    assert error["error"] in ("ConnectionRefusedError", "ConnectionResetError", "ConnectError",
                              "BrokenPipeError")
    assert "/f" not in c.renewer.open_files
    with pytest.raises(Exception, match="/f"):   # a failed stream keeps saying so
        stream.close()
    assert [e["offset"] for e in events(cluster, "c1", "client.hflush")] == [1000]


def test_a_client_that_cannot_renew_for_the_hard_limit_gives_up_its_files(make_cluster,
                                                                            clients):
    """3.x DFSClient.renewLease: when renewals have failed for the lease hard limit the
    client aborts every stream it writes (closeAllFilesBeingWritten(abort=true))."""
    cluster = make_cluster(config={"lease.soft-limit": "1s", "lease.hard-limit": "2s"})
    c = client(cluster, "c1")
    clients.append(c)
    stream = c.create("/f", replication=3)
    stream.write(b"x" * 1000)
    stream.hflush()
    wait_for(lambda: events(cluster, "c1", "client.lease.renew"), 30, what="a renewal")
    cluster.stop_node("nn")
    [error] = wait_for(lambda: events(cluster, "c1", "client.stream.error", path="/f"), 30,
                       what="the stream given up")
    assert error["reason"] == "Lease timeout of 2 seconds expired."
    assert c.renewer.open_files == set()
    with pytest.raises(Exception, match="Lease timeout"):
        stream.write(b"y")


def test_client_calls_the_namenode_again_after_its_restart(make_cluster, clients):
    """A client whose kept-alive NameNode connection was closed by a NameNode restart
    reconnects for its next call, as Hadoop's IPC client does."""
    cluster = make_cluster()
    c = client(cluster, "c1")
    clients.append(c)
    write_file(c, "/before", b"abc")
    assert c.info("/before")["len"] == 3          # the connection is open and idle now
    cluster.restart_node("nn")
    cluster.wait_healthy(60)
    assert c.info("/before")["len"] == 3
    write_file(c, "/after", b"def")
    assert c.read("/after") == b"def"


# -- DataNode restart, death ------------------------------------------------------------

def test_datanode_restart_during_an_open_write_turns_rbw_into_rwr(make_cluster, clients):
    # with 3 DataNodes no replacement exists: go on with the two that are left; full
    # block reports every second, so a report may find the stale replica first
    cluster = make_cluster(config={
        "dfs.client.block.write.replace-datanode-on-failure.best-effort": "true",
        "dfs.blockreport.intervalMsec": "1s"})
    c = client(cluster, "c1")
    clients.append(c)
    data = payload(600 * KiB, seed=8)
    stream = c.create("/dn/restart", replication=3)
    try:
        stream.write(data[:200 * KiB])
        stream.hflush()
        [alloc] = events(cluster, "nn", "nn.block.allocate", path="/dn/restart")
        block, gs, victim = alloc["block"], alloc["gs"], alloc["pipeline"][1]
        # a crash and a start (a SIGTERM would be a shutdown for restart, which saves
        # the replica as RBW and sends the RESTART OOB ack: test_recovery's restart tests)
        cluster.kill_node(victim)
        cluster.start_node(victim)
        rwr = wait_for(lambda: events(cluster, victim, "dn.replica.state", block=block,
                                      state="RWR"), 30, what=f"{victim} to load its RBW as RWR")
        assert rwr[0]["reason"] == "restart" and rwr[0]["gs"] == gs
        assert rwr[0]["len"] >= 200 * KiB
        report = fsck(cluster, c, "/dn/restart")
        [mine] = [r for r in report["blocks"][0]["replicas"] if r["dn"] == victim]
        assert (mine["state"], mine["gs"]) == ("RWR", gs)
        # the writer recovers its pipeline without the restarted node and goes on
        stream.write(data[200 * KiB:])
    finally:
        stream.close()
    assert c.read("/dn/restart") == data
    recovered = events(cluster, "c1", "client.pipeline.recovered", path="/dn/restart")
    assert recovered and victim not in recovered[0]["pipeline"]
    assert recovered[0]["gs"] > gs
    # an RWR replica never rejoins a pipeline: it is invalidated (old GS: the redundancy
    # monitor's sweep, or a report that marks it corrupt, whichever comes first) and the
    # block is re-replicated back to three FINALIZED replicas of the new GS
    report = wait_healthy_file(cluster, c, "/dn/restart", data)
    assert events(cluster, "nn", "nn.replica.invalidate", dn=victim, block=block)


def test_killed_datanode_is_declared_dead_and_its_blocks_re_replicated(make_cluster, clients):
    cluster = make_cluster(datanodes=4, config={"dfs.namenode.heartbeat.recheck-interval": "1s"})
    c = client(cluster, "c1")
    clients.append(c)
    data = payload(2 * MiB + 512 * KiB, seed=9)
    write_file(c, "/dead/file", data)
    report = wait_healthy_file(cluster, c, "/dead/file", data)
    # a second file, to be deleted while the NameNode still counts the victim live: the
    # deletion is queued for the victim, which never takes it
    write_file(c, "/dead/gone", data[:100 * KiB])
    gone = wait_healthy_file(cluster, c, "/dead/gone", data[:100 * KiB])
    holders = [r["dn"] for r in report["blocks"][0]["replicas"]]
    victim = next(d for d in holders if d in [r["dn"] for r in gone["blocks"][0]["replicas"]])
    lost = [b["block"] for b in report["blocks"] if victim in [r["dn"] for r in b["replicas"]]]
    cluster.kill_node(victim)
    assert c.nn_call("delete", path="/dead/gone", recursive=False)
    assert wait_for(lambda: events(cluster, "nn", "nn.replica.invalidate", dn=victim), 10,
                    what=f"a deletion queued for {victim}")
    wait_for(lambda: events(cluster, "nn", "nn.dn.dead", dn=victim), 60,
             what=f"the NameNode to declare {victim} dead")
    dn_report = c.nn_call("getDatanodeReport")
    assert {d["dn"]: d["state"] for d in dn_report}[victim] == "dead"
    # BlockManager.removeBlocksAssociatedTo: a dead node's queued deletions are dropped
    # (kept, they left the NameNode with work it could never hand out: no quiescence)
    assert c.nn_call("getClusterState")["pending"]["invalidate"] == 0
    report = wait_healthy_file(cluster, c, "/dead/file", data, exclude=(victim,), timeout=90)
    for b in report["blocks"]:
        assert victim not in b["locations"] and len(b["locations"]) == 3
    scheduled = events(cluster, "nn", "nn.replication.schedule")
    assert {e["block"] for e in scheduled} >= set(lost)
    assert all(e["target"] != victim for e in scheduled)
    assert c.read("/dead/file") == data
    # the dead node comes back with its old replicas: the excess ones are invalidated
    cluster.start_node(victim)
    wait_for(lambda: events(cluster, "nn", "nn.dn.alive", dn=victim), 60,
             what=f"{victim} to register again")
    report = wait_healthy_file(cluster, c, "/dead/file", data, timeout=90)
    assert c.read("/dead/file") == data


# -- corruption ------------------------------------------------------------------------

def test_corrupt_replica_is_detected_on_read_and_replaced(make_cluster, clients):
    """The corrupt replica is kept (not a location) until the block is copied to the
    fourth DataNode, then deleted (3.x BlockManager.markBlockAsCorrupt, addStoredBlock ->
    invalidateCorruptReplicas); no node holding the block is a copy target."""
    cluster = make_cluster(datanodes=4)
    c = client(cluster, "c1")
    clients.append(c)
    data = payload(600 * KiB, seed=10)
    write_file(c, "/corrupt/file", data)
    wait_healthy_file(cluster, c, "/corrupt/file", data)
    located = wait_for(lambda: (lambda l: l if len(l["blocks"][0]["locations"]) == 3 else None)(
        c.nn_call("getBlockLocations", path="/corrupt/file", client_machine=c.id)), 30,
        what="three reported locations")
    blk = located["blocks"][0]
    victim = blk["locations"][0]              # the replica the reader tries first
    path = os.path.join(cluster.nodes[victim]["storage"], "current", "finalized",
                        f"blk_{blk['block']}")
    with open(path, "r+b") as f:
        for offset in (1000, 200_000, 500_000):
            f.seek(offset)
            byte = f.read(1)
            f.seek(offset)
            f.write(bytes([byte[0] ^ 0xFF]))
    assert c.read("/corrupt/file") == data    # another replica served the read
    [err] = events(cluster, "c1", "client.checksum.error", path="/corrupt/file")
    assert err["dn"] == victim and err["block"] == blk["block"]
    assert err["offset"] == 1000 - 1000 % 512
    wait_for(lambda: events(cluster, "nn", "nn.replica.corrupt", dn=victim, block=blk["block"]),
             30, what="nn.replica.corrupt")
    wait_for(lambda: events(cluster, "nn", "nn.replica.invalidate", dn=victim, block=blk["block"]),
             60, what="the corrupt replica to be invalidated")
    report = wait_healthy_file(cluster, c, "/corrupt/file", data, timeout=90)
    assert len({r["crc"] for r in report["blocks"][0]["replicas"]}) == 1
    assert victim not in [r["dn"] for r in report["blocks"][0]["replicas"]]
    assert events(cluster, victim, "dn.replica.state", block=blk["block"], state="DELETED")
    [copy] = events(cluster, "nn", "nn.replication.schedule", block=blk["block"])
    [spare] = set(cluster.nodes) - {"nn"} - set(blk["locations"])
    assert copy["target"] == spare
    [gone] = events(cluster, "nn", "nn.replica.invalidate", dn=victim, block=blk["block"])
    arrived = events(cluster, "nn", "nn.replica.reported", dn=spare, block=blk["block"],
                     state="FINALIZED")[0]
    assert arrived["seq"] < gone["seq"]          # deleted only once the copy is in
    assert c.read("/corrupt/file") == data


def test_truncated_replica_is_neither_read_short_nor_hangs_the_reader(make_cluster, clients):
    """A FINALIZED replica whose data file lost its tail (a disk fault): the reader must
    get the right bytes from another replica, in bounded time."""
    cluster = make_cluster()
    c = client(cluster, "c1")
    clients.append(c)
    data = payload(600 * KiB, seed=14)
    write_file(c, "/truncated/file", data)
    wait_healthy_file(cluster, c, "/truncated/file", data)
    blk = c.nn_call("getBlockLocations", path="/truncated/file", client_machine=c.id)["blocks"][0]
    victim = blk["locations"][0]              # the replica the reader tries first
    os.truncate(os.path.join(cluster.nodes[victim]["storage"], "current", "finalized",
                             f"blk_{blk['block']}"), 100 * KiB)
    result: dict = {}

    def read():
        try:
            result["data"] = c.read("/truncated/file")
        except Exception as e:  # noqa: BLE001 - reported below
            result["error"] = e
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(60)
    assert not reader.is_alive(), f"the read of a truncated replica on {victim} hangs"
    assert "data" in result, result
    assert result["data"] == data


# -- garbage on every port -------------------------------------------------------------

def exchange(addr: str, data: bytes, half_close: bool = True, timeout: float = 10.0) -> bytes:
    """Send raw bytes, then read whatever comes back until the peer closes or goes quiet."""
    sock = wire.connect(addr, 10.0)
    sock.settimeout(timeout)
    got = b""
    try:
        sock.sendall(data)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            got += chunk
    except OSError:
        pass
    finally:
        sock.close()
    return got


def frame(obj) -> bytes:
    body = json.dumps(obj).encode()
    return struct.pack(">I", len(body)) + body


def first_reply(raw: bytes) -> dict | None:
    if len(raw) < 4:
        return None
    (n,) = struct.unpack(">I", raw[:4])
    return json.loads(raw[4:4 + n])


GARBAGE = {
    "random": random.Random(11).randbytes(4096),
    "huge_length": b"\xff\xff\xff\xf0" + b"x" * 100,
    "non_json": struct.pack(">I", 64) + b"\x00\x01not json at all\xff" * 3 + b"\x00" * 10,
    "truncated": struct.pack(">I", 1000) + b'{"op": "create", "ar',
    "not_an_object": frame(["op", "create"]),
    "empty": b"",
    "length_only": b"\x00\x00",
}


def test_garbage_on_every_port_leaves_every_daemon_serving(make_cluster, clients):
    cluster = make_cluster()
    c = client(cluster, "c1")
    clients.append(c)
    rpc_ports = {node: cluster.nodes[node]["rpc"] for node in ["nn"] + cluster.datanodes()}
    xfer_ports = {dn: cluster.nodes[dn]["xfer"] for dn in cluster.datanodes()}
    for node, addr in list(rpc_ports.items()) + list(xfer_ports.items()):
        for name, data in GARBAGE.items():
            exchange(addr, data)
    # valid frames with nonsense in them
    for node, addr in rpc_ports.items():
        unknown = first_reply(exchange(addr, frame({"id": 1, "op": "selfDestruct", "args": {}})))
        assert unknown["ok"] is False and unknown["error"] == "MalformedFrame", (node, unknown)
        bad_args = first_reply(exchange(addr, frame({"id": 2, "op": "ping", "args": [1]})))
        assert bad_args["ok"] is False, (node, bad_args)
        wrong = first_reply(exchange(addr, frame({"id": 3, "op": "getReplicaVisibleLength"
                                                  if node != "nn" else "create",
                                                  "args": {"nonsense": True}})))
        assert wrong["ok"] is False and wrong["error"] == "MalformedFrame", (node, wrong)
        no_op = first_reply(exchange(addr, frame({"id": 4})))
        assert no_op["ok"] is False, (node, no_op)
        raw = exchange(addr, GARBAGE["non_json"])
        assert first_reply(raw)["error"] == "MalformedFrame", (node, raw)
    nn_addr = rpc_ports["nn"]
    for args in ({"dn": "nobody", "reports": [{"kind": "received"}]},
                 {"dn": "dn1", "reports": "not a list"},
                 {"dn": "dn1", "reports": [{"kind": "received", "block": "x", "gs": None}]}):
        reply = first_reply(exchange(nn_addr, frame({"id": 5, "op": "blockReceivedAndDeleted",
                                                     "args": args})))
        assert reply["ok"] is False, reply
    reply = first_reply(exchange(nn_addr, frame({"id": 6, "op": "getFileInfo",
                                                 "args": {"path": 12}})))
    assert reply["ok"] is False, reply
    for dn, addr in xfer_ports.items():
        for header in ({"op": "SELF_DESTRUCT"}, {"op": "WRITE_BLOCK"},
                       {"op": "WRITE_BLOCK", "block": 1, "gs": 1, "stage": "NO_SUCH_STAGE"},
                       {"op": "READ_BLOCK", "block": 424242, "gs": 1, "offset": 0, "len": 10},
                       {"op": "READ_BLOCK", "block": "x"},
                       {"op": "TRANSFER_BLOCK", "block": 424242, "gs": 1, "targets": ["dn9"],
                        "stage": "TRANSFER_RBW"}):
            reply = first_reply(exchange(addr, frame(header)))
            assert reply is None or reply.get("status") == "ERROR", (dn, header, reply)
        # a valid WRITE_BLOCK header for a new block, then garbage instead of packets
        ack = first_reply(exchange(addr, frame({
            "op": "WRITE_BLOCK", "block": 999_000 + int(dn[2:]), "gs": 1,
            "stage": "PIPELINE_SETUP_CREATE", "targets": [], "client": "garbage",
            "src": "garbage", "bpc": 512}) + GARBAGE["random"]))
        assert ack is None or ack.get("status") in ("SUCCESS", "ERROR")
    # every daemon is alive and serving
    for node, proc in cluster.procs.items():
        assert proc.poll() is None, f"{node} died (see {cluster.nodes[node]['stdout']})"
    cluster.wait_healthy(30)
    for node, addr in rpc_ports.items():
        if node != "nn":
            assert first_reply(exchange(addr, frame({"id": 7, "op": "ping", "args": {}})))["ok"]
    data = payload(1536 * KiB, seed=12)
    write_file(c, "/after/garbage", data)
    assert c.read("/after/garbage") == data
    wait_healthy_file(cluster, c, "/after/garbage", data)


def test_append_at_a_block_boundary_and_to_an_empty_file(make_cluster, clients):
    cluster = make_cluster()
    c = client(cluster, "c1")
    clients.append(c)
    full = payload(MiB, seed=13)                 # the last block is full: a new block
    write_file(c, "/full", full)
    stream = c.append("/full")
    stream.write(b"0123456789")
    stream.close()
    assert c.read("/full") == full + b"0123456789"
    report = wait_healthy_file(cluster, c, "/full", full + b"0123456789")
    assert [b["len"] for b in report["blocks"]] == [MiB, 10]
    write_file(c, "/was-empty", b"")             # no block at all yet
    stream = c.append("/was-empty")
    stream.write(b"first bytes")
    stream.close()
    assert c.read("/was-empty") == b"first bytes"
    wait_healthy_file(cluster, c, "/was-empty", b"first bytes")
    # appending nothing leaves the file as it was
    stream = c.append("/full")
    stream.close()
    assert c.read("/full") == full + b"0123456789"
    assert c.info("/full")["closed"] is True
