"""No daemon dies of bad input (issue 20): every listening service of a real mini-HDFS
(NameNode RPC, DataNode RPC, DataNode data transfer) gets thousands of bad inputs over
loopback, one connection each: random bytes, truncated frames, oversized length
prefixes, frames that are not JSON objects, unknown operations, valid operations with
wrong types or missing or unknown fields, and (data transfer) packets with lying
checksums, offsets and lengths.

After each batch (one kind, one service): every daemon still runs, answers a valid
request (the NameNode its cluster state, the DataNode a ping, and a read of a file
written before the fuzzing returns its bytes), has logged each rejection the kind must
cause (`nn.rpc.malformed`, `dn.rpc.malformed`, `dn.xfer.malformed`, or for packets
`dn.checksum.error` / `dn.pipeline.error`), no `*.internal_error` was logged (a bug
caught is still a bug), and no replica that existed before changed on disk.

Bounded: HDFS_CHAOS_FUZZ_N inputs per kind (default 1000; 24000 in all, ~40 s) and
HDFS_CHAOS_FUZZ_SECONDS per kind (default 20). The counts per kind are printed.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import socket
import struct
import time

import pytest

from minihdfs import wire
from minihdfs.rpc import RpcClient
from tests.support import events

N = int(os.environ.get("HDFS_CHAOS_FUZZ_N", "1000"))
SECONDS = float(os.environ.get("HDFS_CHAOS_FUZZ_SECONDS", "20"))
BASE = bytes(random.Random(5).randrange(256) for _ in range(300 * 1024))

COUNTS: list[tuple[str, str, int, int, float]] = []   # service, kind, sent, logged, seconds


def _frame(body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + body


def _msg(obj) -> bytes:
    return _frame(json.dumps(obj).encode())


def send(addr: str, payload: bytes, wait: float = 2.0) -> bytes:
    """One connection: send, half-close, read what comes back until the server closes."""
    host, port = wire.parse_addr(addr)
    with socket.create_connection((host, port), timeout=wait) as s:
        try:
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
        except OSError:   # the server refused early and closed: that is an answer too
            return b""
        out = b""
        try:
            while True:
                got = s.recv(65536)
                if not got:
                    return out
                out += got
        except (socket.timeout, ConnectionResetError):
            return out


# -- bad values, systematically: for a field, every JSON type but its own ----------------

WRONG = {"int": ["7", 7.5, True, None, [], {}, "x" * 300],
         "str": [7, 7.5, False, None, [], {"a": 1}],
         "bool": [1, "true", None, [], {}],
         "list": ["a", 1, {}, None, True],
         "dict": ["a", 1, [], True]}


def _type_of(value) -> str:
    return {bool: "bool", int: "int", str: "str", list: "list", dict: "dict",
            float: "int"}[type(value)]


def wrong_args(valid: dict, rng: random.Random) -> tuple[dict, str]:
    """A mutation of a valid argument set that the signature must refuse."""
    choice = rng.randrange(4)
    args = dict(valid)
    lists = [k for k, v in args.items() if isinstance(v, list)]
    if choice == 3 and lists:
        name = rng.choice(sorted(lists))
        args[name] = [rng.choice([None, 7, "x", [], True])]
        return args, f"wrong item type in {name}"
    choice = min(choice, 2)
    if choice == 0 and args:
        name = rng.choice(sorted(args))
        args[name] = rng.choice(WRONG[_type_of(valid[name])])
        if args[name] is None:   # None is refused only where no default None exists
            args[name] = [None] if _type_of(valid[name]) != "list" else "none"
        return args, f"wrong type of {name}"
    if choice == 1 and args:
        name = rng.choice(sorted(args))
        del args[name]
        return args, f"missing {name}"
    args["no_such_field_" + str(rng.randrange(100))] = rng.choice([1, "x", None])
    return args, "unknown field"


NN_OPS = {
    "create": {"path": "/fuzz/f", "holder": "fuzz"},
    "append": {"path": "/fuzz/f", "holder": "fuzz"},
    "addBlock": {"path": "/fuzz/f", "holder": "fuzz"},
    "abandonBlock": {"path": "/fuzz/f", "holder": "fuzz", "block": 1},
    "updateBlockForPipeline": {"block": 1, "holder": "fuzz"},
    "fsync": {"path": "/fuzz/f", "holder": "fuzz"},
    "complete": {"path": "/fuzz/f", "holder": "fuzz"},
    "renewLease": {"holder": "fuzz"},
    "recoverLease": {"path": "/fuzz/f", "holder": "fuzz"},
    "truncate": {"path": "/fuzz/f", "new_len": 0, "holder": "fuzz"},
    "getFileInfo": {"path": "/base"},
    "getListing": {"path": "/"},
    "getBlockLocations": {"path": "/base"},
    "delete": {"path": "/fuzz/f"},
    "rename": {"src": "/fuzz/f", "dst": "/fuzz/g"},
    "reportBadBlocks": {"blocks": []},
    "registerDatanode": {"dn": "dnX"},
    "sendHeartbeat": {"dn": "dnX"},
    "blockReport": {"dn": "dnX", "replicas": []},
    "blockReceivedAndDeleted": {"dn": "dnX", "reports": []},
}
DN_OPS = {
    "initReplicaRecovery": {"block": 1, "gs": 1, "recovery_id": 1},
    "updateReplicaUnderRecovery": {"block": 1, "recovery_id": 1, "new_len": 0},
    "getReplicaVisibleLength": {"block": 1},
    "getReplicas": {},   # its one argument has a default: only unknown fields are wrong
}


def rpc_inputs(kind: str, ops: dict, rng: random.Random) -> tuple[bytes, bool]:
    """(payload, whether the daemon must log a rejection for it)."""
    good = {"id": 1, "op": "getListing", "args": {"path": "/"}}
    if kind == "random_bytes":
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 600))), False
    if kind == "truncated":
        frame = _msg(good)
        return frame[:rng.randrange(1, len(frame))], False
    if kind == "oversized_length":
        return struct.pack(">I", rng.randrange(wire.MAX_MESSAGE + 1, 1 << 32)) + b"{}", True
    if kind == "not_json_object":
        body = rng.choice([b"\xff\xfe" + bytes(rng.randrange(256) for _ in range(20)),
                           b"[1,2]", b"\"op\"", b"42", b"null", b"{\"op\":", b""])
        return _frame(body), True
    if kind == "unknown_op":
        op = rng.choice(["nope", "", "__init__", "_reject", 7, None, ["create"], "CREATE"])
        return _msg({"id": 1, "op": op, "args": {}}), True
    if kind == "args_not_object":
        op = rng.choice(sorted(ops))
        return _msg({"id": 1, "op": op, "args": rng.choice([[], "x", 1, True])}), True
    if kind == "wrong_fields":
        op = rng.choice(sorted(ops))
        args, _ = wrong_args(ops[op], rng)
        return _msg({"id": rng.choice([1, "x", None]), "op": op, "args": args}), True
    if kind == "bad_records":
        return bad_record(rng), True
    raise ValueError(kind)


RPC_KINDS = ("random_bytes", "truncated", "oversized_length", "not_json_object", "unknown_op",
             "args_not_object", "wrong_fields")
NN_KINDS = RPC_KINDS + ("bad_records",)

# Reports whose records are objects with a field missing or of the wrong type (from an
# unregistered DataNode, so that a well-formed one could change nothing either).
RECORDS = {
    "reportBadBlocks": ("blocks", {"block": 1073741825, "dn": "dnX"}),
    "blockReport": ("replicas", {"block": 1, "gs": 1, "len": 0, "state": "FINALIZED"}),
    "blockReceivedAndDeleted": ("reports", {"kind": "received", "block": 1, "gs": 1,
                                            "len": 0, "state": "FINALIZED"}),
}


def bad_record(rng: random.Random) -> bytes:
    op = rng.choice(sorted(RECORDS))
    arg, valid = RECORDS[op]
    record = dict(valid)
    name = rng.choice(sorted(k for k in record if k != "kind" or rng.randrange(2)))
    if rng.randrange(3) == 0:
        del record[name]
    else:
        record[name] = rng.choice([v for v in WRONG[_type_of(valid[name])] if v is not None])
    args = {arg: [dict(valid), record]}
    if op != "reportBadBlocks":
        args["dn"] = "dnX"
    return _msg({"id": 1, "op": op, "args": args})

XFER_HEADERS = {
    "READ_BLOCK": {"op": "READ_BLOCK", "block": 1, "offset": 0, "len": 10, "gs": 0},
    "WRITE_BLOCK": {"op": "WRITE_BLOCK", "block": 1, "gs": 1, "stage": "PIPELINE_SETUP_CREATE",
                    "targets": [], "client": "fuzz", "src": "fuzz", "min_bytes": 0,
                    "max_bytes": 0, "bpc": 512},
    "TRANSFER_BLOCK": {"op": "TRANSFER_BLOCK", "block": 1, "gs": 1, "targets": ["dn1"],
                       "stage": "TRANSFER_RBW", "client": "fuzz"},
}
XFER_KINDS = ("random_bytes", "truncated", "oversized_length", "not_json_object", "unknown_op",
              "wrong_fields", "packet_bad_checksum", "packet_bad_offset", "packet_bad_length")


def xfer_inputs(kind: str, rng: random.Random, next_block) -> tuple[bytes, bool]:
    if kind in ("random_bytes", "truncated", "oversized_length", "not_json_object"):
        return rpc_inputs(kind, {}, rng)
    if kind == "unknown_op":
        return _msg({"op": rng.choice(["NOPE", "", 7, None, ["READ_BLOCK"], "read_block"])}), True
    if kind == "wrong_fields":
        op = rng.choice(sorted(XFER_HEADERS))
        valid = {k: v for k, v in XFER_HEADERS[op].items() if k != "op"}
        # only the fields the DataNode requires: a missing optional one is no error
        required = {"READ_BLOCK": ("block", "offset", "len"),
                    "WRITE_BLOCK": ("block", "gs", "stage"),
                    "TRANSFER_BLOCK": ("block", "targets", "stage", "gs")}[op]
        name = rng.choice(required)
        header = dict(valid, op=op)
        if rng.randrange(2):
            del header[name]
        else:
            header[name] = rng.choice([v for v in WRONG[_type_of(valid[name])]
                                       if v is not None and not isinstance(v, (bool, float))]
                                      + ["not-a-number" if _type_of(valid[name]) == "int"
                                         else {"x": 1}])
        if op == "WRITE_BLOCK":
            header["block"] = header.get("block") if name == "block" else next_block()
        return _msg(header), True
    # packets on a real pipeline of a fresh block (stage CREATE, no targets): the
    # DataNode verifies every packet as the last node of the pipeline
    header = dict(XFER_HEADERS["WRITE_BLOCK"], block=next_block(), gs=1)
    data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 2048)))
    sums = wire.chunk_checksums(data, 512)
    if kind == "packet_bad_checksum":
        k = rng.randrange(len(sums) // 4)
        bad = bytes(b ^ 0xFF for b in sums[4 * k:4 * k + 4])
        pkt = wire.Packet(0, 0, data, sums[:4 * k] + bad + sums[4 * k + 4:]).encode()
    elif kind == "packet_bad_offset":
        pkt = wire.Packet(0, rng.choice([1 << 20, 4096, 10 ** 12]), data, sums).encode()
    else:   # the header's data length disagrees with the frame
        raw = bytearray(wire.Packet(0, 0, data, sums).encode())
        struct.pack_into(">I", raw, 4 + 17, rng.choice([len(data) + 1, len(data) + 513,
                                                         len(data) - 1, 10 ** 6]))
        pkt = bytes(raw)
    return _msg(header) + pkt, True


# -- the cluster and its health ---------------------------------------------------------

def replica_files(storage: str) -> dict[str, str]:
    out = {}
    for root, _, files in os.walk(storage):
        for name in files:
            if name.startswith("blk_"):
                path = os.path.join(root, name)
                try:
                    with open(path, "rb") as f:
                        out[os.path.relpath(path, storage)] = hashlib.sha256(f.read()).hexdigest()
                except FileNotFoundError:   # a fuzz replica invalidated meanwhile
                    pass
    return out


@pytest.fixture(scope="module")
def fuzz_cluster(tmp_path_factory):
    from minihdfs.cluster import LocalCluster
    from tests.support import FAST
    cluster = LocalCluster(str(tmp_path_factory.mktemp("fuzz")), 1,
                           {**FAST, "dfs.replication": 1, "dfs.client.socket-timeout": "2s"})
    cluster.start()
    try:
        client = cluster.client("writer")
        out = client.create("/base")
        out.write(BASE)
        out.close()
        client.close()
        # the replicas of /base, before any fuzzing: none of them may ever change
        cluster.base_replicas = replica_files(cluster.nodes["dn1"]["storage"])
        assert cluster.base_replicas, "no replica of /base on disk"
        yield cluster
    finally:
        cluster.down()


def names(cluster, node: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for e in events(cluster, node):
        counts[e["event"]] = counts.get(e["event"], 0) + 1
    return counts


def assert_healthy(cluster, what: str) -> None:
    before = cluster.base_replicas
    for node, proc in cluster.procs.items():
        assert proc is not None and proc.poll() is None, f"{node} died of {what}"
    nn = RpcClient(cluster.nodes["nn"]["rpc"], 5.0, 10.0)
    dn = RpcClient(cluster.nodes["dn1"]["rpc"], 5.0, 10.0)
    try:
        assert nn.call("getClusterState")["files"], f"the NameNode lost its files after {what}"
        assert dn.call("ping") is not None
    finally:
        nn.close()
        dn.close()
    client = cluster.client("reader")
    try:
        assert client.read("/base") == BASE, f"/base reads differently after {what}"
    finally:
        client.close()
    after = replica_files(cluster.nodes["dn1"]["storage"])
    changed = [p for p, h in before.items() if after.get(p) != h]
    assert not changed, f"replicas changed on disk by {what}: {changed}"
    for node in ("nn", "dn1"):
        bugs = events(cluster, node, f"{'nn' if node == 'nn' else 'dn'}.internal_error")
        assert not bugs, f"{node} hit a bug on {what}: {bugs[-1]['reason'][-600:]}"


def batch(cluster, node, addr, kind, make, logged_as) -> None:
    counts = names(cluster, node)
    start = time.monotonic()
    sent = must = 0
    rng = random.Random(f"{node}-{addr}-{kind}")
    while sent < N and time.monotonic() - start < SECONDS:
        payload, expect = make(kind, rng)
        send(addr, payload)
        sent += 1
        must += expect
    took = time.monotonic() - start
    deadline = time.monotonic() + 10   # the event lines of the last inputs
    while True:
        after = names(cluster, node)
        logged = sum(after.get(n, 0) - counts.get(n, 0) for n in logged_as)
        if logged >= must or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    COUNTS.append((node + ":" + addr.rsplit(":", 1)[1], kind, sent, logged, took))
    print(f"fuzz {node} {kind}: {sent} inputs in {took:.1f}s, {logged} rejections logged "
          f"({must} required)")
    assert sent >= min(N, 50), f"only {sent} inputs of {kind} in {SECONDS}s"
    assert logged >= must, f"{kind}: {must} inputs must be refused with a log line, {logged} were"
    assert_healthy(cluster, f"{sent} inputs of kind {kind}")


@pytest.mark.parametrize("kind", NN_KINDS)
def test_namenode_rpc_survives(fuzz_cluster, kind):
    addr = fuzz_cluster.nodes["nn"]["rpc"]
    batch(fuzz_cluster, "nn", addr, kind, lambda k, r: rpc_inputs(k, NN_OPS, r),
          ["nn.rpc.malformed"])


@pytest.mark.parametrize("kind", RPC_KINDS)
def test_datanode_rpc_survives(fuzz_cluster, kind):
    addr = fuzz_cluster.nodes["dn1"]["rpc"]
    batch(fuzz_cluster, "dn1", addr, kind, lambda k, r: rpc_inputs(k, DN_OPS, r),
          ["dn.rpc.malformed"])


_BLOCKS = iter(range(9_000_000_000, 10_000_000_000))


@pytest.mark.parametrize("kind", XFER_KINDS)
def test_datanode_data_transfer_survives(fuzz_cluster, kind):
    addr = fuzz_cluster.nodes["dn1"]["xfer"]
    batch(fuzz_cluster, "dn1", addr, kind, lambda k, r: xfer_inputs(k, r, lambda: next(_BLOCKS)),
          ["dn.xfer.malformed", "dn.checksum.error", "dn.pipeline.error"])


def test_zz_counts(capsys):
    """The inputs tried, per service and kind (run last: the file's tests run in order)."""
    with capsys.disabled():
        print("\nfuzz inputs per service and kind (sent / rejections logged / seconds):")
        for service, kind, sent, logged, took in COUNTS:
            print(f"  {service:12} {kind:20} {sent:6} {logged:6} {took:6.1f}")
        print(f"  total {sum(c[2] for c in COUNTS)} inputs")
