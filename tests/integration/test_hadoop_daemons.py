"""Real Hadoop daemons as separate JVMs: SIGKILL, restart, SIGSTOP/SIGCONT act on the
JVM's own pid; storage (the DataNode's replicas, the NameNode's namespace) survives a
restart; readiness and liveness come from the NameNode's JMX. And a whole scenario run
by the harness on Hadoop (`system: hadoop`): faults, quiescence, final_state.json."""

from __future__ import annotations

import json
import os
import shutil
import time
import zlib

import pytest

from tests import hadoop_support as hs

from harness.systems.hadoop import conf, fetch, state
from harness.systems.hadoop.cluster import HadoopCluster

pytestmark = [pytest.mark.integration, pytest.mark.hadoop, pytest.mark.timeout(600)]

VERSION = os.environ.get("HDFS_CHAOS_HADOOP_VERSION", fetch.DEFAULT_VERSION)
SHELL = "org.apache.hadoop.fs.FsShell"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    hs.fetched_or_skip(VERSION)
    c = HadoopCluster(str(tmp_path_factory.mktemp("hadoop-daemons")), VERSION, 3,
                      {"dfs.blocksize": "1MiB", "dfs.heartbeat.interval": "1s",
                       # long enough for the open-file test to read its state before the
                       # NameNode recovers the writer's lease (its renewals come every 30 s)
                       "lease.hard-limit": "20s"})
    try:
        c.start(timeout=120)
        data = os.urandom(2 * 1024 * 1024 + 1000)
        r = c.run_client("c1", SHELL, ["-put", "-", "/kept"], stdin=data)
        assert r.returncode == 0, r.stderr.decode()[-1000:]
        c.kept_crc = zlib.crc32(data)
        # a pipeline slowed by the load may have dropped a node: wait for re-replication
        deadline = time.monotonic() + 60
        while any(len(state.scan_storage(c.nodes[dn]["storage"])) < 3 for dn in c.datanodes()):
            assert time.monotonic() < deadline, "/kept never had 3 replicas of each block"
            time.sleep(0.5)
        yield c
    finally:
        c.down()


def _exe(pid: int) -> str:
    return os.path.basename(os.readlink(f"/proc/{pid}/exe"))


def test_each_daemon_is_its_own_jvm(cluster):
    pids = {n: cluster.nodes[n]["pid"] for n in ("nn", "dn1", "dn2", "dn3")}
    assert len(set(pids.values())) == 4
    for node, pid in pids.items():
        assert _exe(pid) == "java", node
        cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        assert b"-XX:TieredStopAtLevel=1" in cmd and f"-Dhdfs-chaos-node={node}".encode() in cmd
    # Jetty's scratch folders go under the run, not into /tmp where nothing removes them
    scratch = os.listdir(os.path.join(cluster.dir, "tmp"))
    assert len([d for d in scratch if d.startswith("jetty-")]) >= 4, scratch


def test_sigkill_lands_on_the_jvm_and_a_restart_keeps_the_replicas(cluster):
    before = state.scan_storage(cluster.nodes["dn1"]["storage"])
    assert len(before) == 3 and all(r["state"] == "FINALIZED" for r in before)
    pid = cluster.nodes["dn1"]["pid"]
    cluster.kill_node("dn1")
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split(") ")[1][0] == "Z"
    assert state.scan_storage(cluster.nodes["dn1"]["storage"]) == before
    cluster.start_node("dn1")
    assert cluster.nodes["dn1"]["pid"] != pid
    deadline = time.monotonic() + 60
    while True:   # back, and its block report names the same replicas
        live = cluster.live_nodes()
        if "dn1" in live and live["dn1"]["numBlocks"] == len(before) and live["dn1"]["lastContact"] <= 2:
            break
        assert time.monotonic() < deadline, live.get("dn1")
        time.sleep(0.5)


def test_pause_freezes_the_heartbeats_and_resume_brings_them_back(cluster):
    cluster.pause_node("dn2")
    try:
        # one sample in which the paused node is silent for 4 s while dn3 heartbeats (a
        # loaded machine may delay dn3's heartbeat past one fixed moment)
        deadline = time.monotonic() + 30
        while True:
            live = cluster.live_nodes()
            if live["dn2"]["lastContact"] >= 4 and live["dn3"]["lastContact"] <= 2:
                break
            assert time.monotonic() < deadline, (live["dn2"], live["dn3"])
            time.sleep(0.5)
    finally:
        cluster.resume_node("dn2")
    deadline = time.monotonic() + 30
    while cluster.live_nodes()["dn2"]["lastContact"] > 2:
        assert time.monotonic() < deadline
        time.sleep(0.5)


def test_a_namenode_restart_keeps_the_namespace_and_the_file_reads_back(cluster):
    cluster.restart_node("nn")
    cluster.wait_healthy(timeout=90)
    view = state.namenode_view(cluster)
    [f] = [f for f in view["files"] if f["path"] == "/kept"]
    assert f["closed"] and f["len"] == 2 * 1024 * 1024 + 1000 and len(f["blocks"]) == 3
    assert view["readback"]["/kept"] == {"len": f["len"], "crc": cluster.kept_crc}


def test_a_scenario_runs_on_hadoop_end_to_end(tmp_path):
    """The runner on system hadoop: a DataNode restarted and a slow client link while
    the client writes; final_state.json in the mini-HDFS format, read-back intact."""
    if shutil.which("java") is None:
        pytest.skip("no java")
    from harness.runner import run_unverified
    from hdfs_contract.content import Content
    sc = tmp_path / "hadoop-smoke.yaml"
    sc.write_text("""
name: hadoop-smoke
seed: 7
timeout: 90s
cluster:
  system: hadoop
  hadoop_version: "%s"
  config: {dfs.replication: 3, dfs.blocksize: 1MiB, dfs.heartbeat.interval: 1s}
workload:
  - {id: w1, client: c1, op: write, path: /data/f1, size: 3MiB}
faults:
  - {id: bounce, kind: restart, target: dn3, down: 1s, at: 0s}
  - {id: slow, kind: latency, links: [[c1, dn1]], latency: 20ms, at: 0s}
""" % VERSION)
    outcome = run_unverified(str(sc), results_dir=str(tmp_path / "results"))
    assert outcome.status == "completed", outcome.errors
    assert outcome.errors == []
    doc = json.load(open(os.path.join(outcome.run_dir, "final_state.json")))
    [f] = doc["files"]
    assert f["path"] == "/data/f1" and f["closed"] and f["len"] == 3 * 1024 * 1024
    assert [len(b["locations"]) for b in f["blocks"]] == [3, 3, 3]
    crc = zlib.crc32(Content(7).get("/data/f1", 0, 3 * 1024 * 1024))
    assert doc["readback"]["/data/f1"] == {"len": 3 * 1024 * 1024, "crc": crc}
    for dn in ("dn1", "dn2", "dn3"):
        blocks = {r["block"]: r for r in doc["datanodes"][dn]}
        for b in f["blocks"]:
            r = blocks[b["block"]]
            assert (r["gs"], r["len"], r["state"]) == (b["gs"], b["len"], "FINALIZED")
    events = [json.loads(line) for line in open(os.path.join(outcome.run_dir, "events",
                                                             "harness.jsonl"))]
    # each fault healed once; in which order depends on whether dn3 was back before the
    # write ended (then the end of the run heals only the latency)
    assert sorted(e["fault"] for e in events if e["event"] == "harness.fault.heal") == [
        "bounce", "slow"]


def test_final_state_shows_an_open_file_its_lease_and_the_rbw_replicas(cluster):
    """A writer holds /open with 300 KiB sent but not closed: the NameNode's view has
    the file open, its holder and lease, the last block under construction; every
    DataNode of the pipeline has an RBW replica with a .meta of the block's GS."""
    import subprocess
    cluster.add_client("w9")
    proc = subprocess.Popen(cluster.java_command("w9", SHELL, ["-appendToFile", "-", "/open"]),
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd=cluster.dir)
    try:
        proc.stdin.write(os.urandom(300 * 1024))
        proc.stdin.flush()
        deadline = time.monotonic() + 60
        while not all(any(r["state"] == "RBW" and r["len"] > 0
                          for r in state.scan_storage(cluster.nodes[dn]["storage"]))
                      for dn in cluster.datanodes()):
            assert time.monotonic() < deadline, "no RBW replica appeared"
            time.sleep(0.5)
        doc = state.final_state(cluster, read_back=False)
        [f] = [f for f in doc["files"] if f["path"] == "/open"]
        assert not f["closed"] and f["holder"].startswith("DFSClient_")
        assert {"holder": f["holder"], "paths": ["/open"]} in doc["leases"]
        [b] = f["blocks"]
        assert b["state"] == "UNDER_CONSTRUCTION" and sorted(b["locations"]) == ["dn1", "dn2", "dn3"]
        for dn in cluster.datanodes():
            [r] = [r for r in doc["datanodes"][dn] if r["block"] == b["block"]]
            assert r["state"] == "RBW" and r["gs"] == b["gs"] and r["len"] > 0
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.skipif(not conf.has_hard_limit_key(VERSION),
                    reason=f"hadoop {VERSION} hard-codes the lease hard limit (20 min)")
def test_the_scenario_hard_limit_reaches_the_namenode(cluster):
    """lease.hard-limit: 20s became dfs.namenode.lease-hard-limit-sec: the file the
    killed writer of the test above left open is recovered and closed by the NameNode."""
    deadline = time.monotonic() + 90
    while True:
        # the view lists the open files (leases) before it reads the files: a close
        # between the two reads shows a closed file beside its recovery lease, so both
        # are waited for
        view = state.namenode_view(cluster, read_back=False, path="/open")
        [f] = view["files"]
        if f["closed"] and view["leases"] == []:
            break
        assert time.monotonic() < deadline, f"/open still open: {f}, leases {view['leases']}"
        time.sleep(2)
    assert f["len"] > 0
    with open(cluster.nodes["nn"]["log"]) as log:
        assert any("/open" in line and ("hard limit" in line.lower()
                                         or "internalReleaseLease" in line) for line in log)
