"""The Java workload client (harness/systems/hadoop/java) against a real Hadoop NameNode and
two DataNodes on loopback: its contract events, field by field against the mini-HDFS
workload client running the same ops, the bytes it wrote (read back and CRC-checked
against minihdfs.workload.Content), lease recovery by a second client, and the events
the log mapper makes of the daemons' and the client's own log4j lines."""

from __future__ import annotations

import json
import os
import subprocess
import time
import zlib

import pytest

from harness.systems.hadoop.logmap import map_lines
from hdfs_contract.events import read_events
from hdfs_contract.content import Content
from tests import hadoop_support as hs
from tests.support import start_client, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.hadoop,
              pytest.mark.skipif(hs.missing() is not None, reason=hs.missing() or "")]

KiB, MiB = 1024, 1024 * 1024
SEED = 11

C1_OPS = [
    {"id": "w1", "op": "write", "path": "/t/a", "size": 2 * MiB + 512 * KiB,
     "hflush_every": MiB, "close": True, "gated": False},
    {"id": "a1", "op": "append", "path": "/t/a", "size": 700 * KiB, "hflush_every": 512 * KiB,
     "close": True, "gated": False},
    {"id": "r1", "op": "read", "path": "/t/a", "size": 0, "hflush_every": None, "close": True,
     "gated": False},
    # a cut inside the second block: Hadoop truncates it by a truncate recovery
    {"id": "t1", "op": "truncate", "path": "/t/a", "new_len": MiB + 1000, "size": 0,
     "hflush_every": None, "close": True, "gated": False},
    {"id": "r3", "op": "read", "path": "/t/a", "size": 0, "hflush_every": None, "close": True,
     "gated": False},
    {"id": "w2", "op": "write", "path": "/t/open", "size": MiB + 512 * KiB,
     "hflush_every": 512 * KiB, "close": False, "gated": False},
]
C2_OPS = [
    {"id": "rl", "op": "recover_lease", "path": "/t/open", "size": 0, "hflush_every": None,
     "close": True, "gated": True, "timeout": 60.0},
    {"id": "r2", "op": "read", "path": "/t/open", "size": 0, "hflush_every": None, "close": True,
     "gated": False},
]
# the events both clients write themselves (the pipeline, ack and renew events of the
# Python client come, on Hadoop, from the log adapter)
OWN = {"client.start", "client.op.start", "client.op.end", "client.stream.open", "client.write",
       "client.hflush", "client.close", "client.read", "client.recover_lease",
       "client.stream.error"}


@pytest.fixture(scope="module")
def hadoop_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("hadoop")
    classes = hs.build_client(str(root / "classes"))
    cluster = hs.HadoopCluster(str(root / "cluster"), datanodes=2)
    procs = []
    try:
        t0 = time.monotonic()
        cluster.start()
        started = time.monotonic() - t0
        gates = root / "gates"
        gates.mkdir()
        out = {}
        for node, ops in (("c1", C1_OPS), ("c2", C2_OPS)):
            ops_file = root / f"{node}.json"
            ops_file.write_text(json.dumps(ops))
            out[node] = str(root / "events" / f"{node}.jsonl")
            cmd = cluster.client_command(classes, node, str(ops_file), out[node], str(gates), SEED)
            procs.append(subprocess.Popen(cmd, stdout=open(root / f"{node}.out", "wb"),
                                          stderr=subprocess.STDOUT, start_new_session=True))
        c1, c2 = procs

        def c1_done():
            evs = read_events(out["c1"]) if os.path.exists(out["c1"]) else []
            return any(e["event"] == "client.hflush" and e["path"] == "/t/open"
                       and e["offset"] == MiB + 512 * KiB for e in evs)
        wait_for(c1_done, timeout=120, what="c1 to hflush all of /t/open")
        (gates / "rl").write_text("")
        assert c2.wait(120) == 0, (root / "c2.out").read_text()[-3000:]
        c1.terminate()       # SIGTERM: the open file stays open, as a stopped writer's does
        c1.wait(30)
        yield dict(root=root, cluster=cluster, events=out, c1_rc=c1.returncode,
                   started=started)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        cluster.stop()


def own_events(path):
    return [e for e in read_events(path) if e["event"] in OWN]


def test_java_client_events_and_bytes(hadoop_run):
    c1 = own_events(hadoop_run["events"]["c1"])
    assert [e["seq"] for e in read_events(hadoop_run["events"]["c1"])] == list(range(len(
        read_events(hadoop_run["events"]["c1"]))))
    assert {e["node"] for e in c1} == {"c1"} and {e["role"] for e in c1} == {"client"}
    ends = {e["op_id"]: e for e in c1 if e["event"] == "client.op.end"}
    assert all(ends[i]["ok"] for i in ("w1", "a1", "r1", "t1", "r3", "w2")), ends
    assert ends["t1"]["len"] == MiB + 1000
    holder = c1[0]["holder"]
    assert c1[0]["event"] == "client.start" and holder.startswith("DFSClient_")
    content = Content(SEED)
    # every write's CRC is the CRC of the workload's bytes at that offset, and the
    # stream CRC runs over the stream from its start offset
    streams = {}
    for e in c1:
        if e["event"] == "client.stream.open":
            streams[e["stream"]] = [e["offset"], 0]
            assert e["holder"] == holder and e["content"] == "workload"
        if e["event"] == "client.write":
            off, crc = streams[e["stream"]]
            assert e["offset"] == off and e["stream_crc"] == crc
            data = content.get(e["path"], e["offset"], e["len"])
            assert e["crc"] == zlib.crc32(data)
            streams[e["stream"]] = [off + e["len"], zlib.crc32(data, crc)]
    opens = [e for e in c1 if e["event"] == "client.stream.open"]
    assert [(o["path"], o["mode"], o["offset"]) for o in opens] == [
        ("/t/a", "create", 0), ("/t/a", "append", 2 * MiB + 512 * KiB), ("/t/open", "create", 0)]
    flushes = [(e["path"], e["offset"]) for e in c1 if e["event"] == "client.hflush"]
    assert flushes == [("/t/a", MiB), ("/t/a", 2 * MiB), ("/t/a", 2 * MiB + 512 * KiB + 512 * KiB),
                       ("/t/open", 512 * KiB), ("/t/open", MiB), ("/t/open", MiB + 512 * KiB)]
    closes = [e for e in c1 if e["event"] == "client.close"]
    assert [(c["path"], c["len"], c["ok"]) for c in closes] == [
        ("/t/a", 2 * MiB + 512 * KiB, True), ("/t/a", 3 * MiB + 188 * KiB, True)]
    # the bytes on HDFS, read back through DistributedFileSystem
    total = 3 * MiB + 188 * KiB
    read, cut = [e for e in c1 if e["event"] == "client.read"]
    assert (read["len"], read["crc"]) == (total, zlib.crc32(content.get("/t/a", 0, total)))
    assert (cut["len"], cut["crc"]) == (MiB + 1000, zlib.crc32(content.get("/t/a", 0, MiB + 1000)))
    # the second client recovered the lease of the file c1 kept open: closed with at
    # least the hflushed bytes, all of them the workload's
    c2 = own_events(hadoop_run["events"]["c2"])
    rl = [e for e in c2 if e["event"] == "client.recover_lease"]
    assert rl and rl[-1]["result"] is True and all(r["path"] == "/t/open" for r in rl)
    read2 = [e for e in c2 if e["event"] == "client.read"][0]
    assert read2["len"] >= MiB + 512 * KiB
    assert read2["crc"] == zlib.crc32(content.get("/t/open", 0, read2["len"]))


def test_java_client_matches_the_python_client_field_by_field(hadoop_run, make_cluster):
    """The same ops on the mini-HDFS: the same events in the same order, with the same
    fields, and the same values wherever they do not name a process or a time."""
    cluster = make_cluster(datanodes=2, config={"dfs.replication": "2"})
    proc = start_client(cluster, "c1", C1_OPS, seed=SEED)
    path = os.path.join(cluster.events_dir, "c1.jsonl")
    wait_for(lambda: os.path.exists(path) and any(
        e["event"] == "client.hflush" and e["offset"] == MiB + 512 * KiB
        for e in read_events(path)), timeout=60, what="the Python client to finish")
    proc.terminate()
    proc.wait(20)
    py = own_events(path)
    java = [e for e in own_events(hadoop_run["events"]["c1"])]
    assert [e["event"] for e in java] == [e["event"] for e in py]
    varying = {"ts", "seq", "holder", "reason"}
    for j, p in zip(java, py):
        assert set(j) == set(p), (j["event"], set(j) ^ set(p))
        for k in set(j) - varying:
            assert type(j[k]) is type(p[k]) and j[k] == p[k], (j["event"], k, j[k], p[k])


def test_daemon_and_client_logs_map_to_contract_events(hadoop_run):
    """The real logs of this run through the log mapper: the facts of the write path."""
    cluster = hadoop_run["cluster"]
    holder = own_events(hadoop_run["events"]["c1"])[0]["holder"]

    def mapped(node, role):
        with open(cluster.log_of(node), errors="replace") as f:
            return map_lines(f, role, hs.RELEASE, cluster.hosts)
    nn = mapped("nn", "namenode")
    names = [e["event"] for e in nn]
    assert all(e["source"] == "hadoop-log" and e["logger"] for e in nn)
    creates = [e for e in nn if e["event"] == "nn.file.create"]
    assert {(e["path"], e["holder"]) for e in creates} >= {("/t/a", holder), ("/t/open", holder)}
    alloc = [e for e in nn if e["event"] == "nn.block.allocate" and e["path"] == "/t/a"]
    assert len(alloc) >= 3 and all(sorted(a["pipeline"]) == ["dn1", "dn2"] for a in alloc)
    assert all(a["holder"] == holder for a in alloc)
    assert any(e["event"] == "nn.file.complete" and e["path"] == "/t/a" for e in nn)
    assert any(e["event"] == "nn.file.append" and e["path"] == "/t/a" for e in nn)
    assert [(e["path"], e["len"]) for e in nn if e["event"] == "nn.file.truncate"] == [
        ("/t/a", MiB + 1000)]
    # the append to a partial last block bumps its GS through updatePipeline
    upd = [e for e in nn if e["event"] == "nn.block.update_pipeline"]
    bumps = [e for e in nn if e["event"] == "nn.block.gs_bump" and e["reason"] == "pipeline"]
    assert upd and all(u["gs"] > u["old_gs"] and u["holder"] == holder for u in upd)
    assert {(b["block"], b["gs"]) for b in bumps} == {(u["block"], u["gs"]) for u in upd}
    # lease recovery of /t/open: recoverLease, recovery id, commit, file closed
    assert any(e["event"] == "nn.lease.recover" and e["path"] == "/t/open" for e in nn)
    start = [e for e in nn if e["event"] == "nn.recovery.start" and e["path"] == "/t/open"]
    assert start and start[0]["recovery_id"] > start[0]["gs"]
    assert start[0]["primary"] in ("dn1", "dn2")
    commit = [e for e in nn if e["event"] == "nn.recovery.commit"]
    assert commit and commit[-1]["recovery_id"] == start[-1]["recovery_id"]
    assert any(e["event"] == "nn.file.close" and e["path"] == "/t/open"
               and e["reason"] == "block_recovery" for e in nn), names
    dn = mapped("dn1", "datanode") + mapped("dn2", "datanode")
    inits = [e for e in dn if e["event"] == "dn.recovery.init_replica"
             and e["recovery_id"] == start[-1]["recovery_id"]]
    assert len(inits) == 2
    assert all(i["len"] is not None for i in inits)
    # each sync is logged by its recovery's primary, which Hadoop picks at random among
    # the replicas: the two DataNodes' events in time order (recovery ids grow with it)
    syncs = sorted((e for e in dn if e["event"] == "dn.recovery.sync"),
                   key=lambda e: (e["ts"], e["recovery_id"]))
    # the truncate's recovery of /t/a's second block, then the lease recovery of /t/open
    assert [(s["rule"], s["len"]) for s in syncs] == [("truncate", 1000),
                                                       ("min_rbw", commit[-1]["len"])]
    assert syncs[-1]["recovery_id"] == start[-1]["recovery_id"]
    assert all(sorted(s["pipeline"]) == ["dn1", "dn2"] for s in syncs)
    fin = [e for e in dn if e["event"] == "dn.replica.state" and e["state"] == "FINALIZED"]
    assert {(e["block"], e["gs"]) for e in fin} >= {(commit[-1]["block"], commit[-1]["gs"])}
    client = mapped("c1", "client")
    setups = [e for e in client if e["event"] == "client.pipeline.setup"]
    assert [s["stage"] for s in setups].count("PIPELINE_SETUP_APPEND") == 1
    assert all(sorted(s["pipeline"]) == ["dn1", "dn2"] for s in setups
               if s["stage"] == "PIPELINE_SETUP_CREATE")
    # an append is set up on the locations the NameNode knows of the last block: under
    # load the second replica's report may not have reached it yet (one node then)
    assert all(s["pipeline"] and set(s["pipeline"]) <= {"dn1", "dn2"} for s in setups)
