"""The Byteman agent in real Hadoop JVMs (issue 32): a small cluster started with
`agent=True` writes, from inside its JVMs, the facts its logs lack: a block becoming
COMPLETE on the NameNode (H1), who asked for a lease recovery (L2), the RWR replica a
restarted DataNode loads (B6), a file's length when it closes, and the replacement
decision of a writer that lost a node (P2)."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from tests import hadoop_support as hs

from harness.systems.hadoop import agent, fetch
from harness.systems.hadoop.cluster import HadoopCluster

pytestmark = [pytest.mark.integration, pytest.mark.hadoop, pytest.mark.timeout(600)]

VERSION = os.environ.get("HDFS_CHAOS_HADOOP_VERSION", fetch.DEFAULT_VERSION)
SHELL = "org.apache.hadoop.fs.FsShell"
DEBUG_ADMIN = "org.apache.hadoop.hdfs.tools.DebugAdmin"


def _events(cluster: HadoopCluster, node: str) -> list[dict]:
    spec = cluster.nodes[node]
    if not os.path.isfile(spec["agent_out"]):
        return []
    with open(spec["agent_out"]) as f:
        return agent.AgentMapper(spec["role"], VERSION).feed_all(f)


def _wait(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(0.3)
    raise AssertionError(f"not within {timeout:.0f}s: {what}")


def _agent_cluster(tmp_path, datanodes: int, replication: int) -> HadoopCluster:
    """A cluster of VERSION with the agent on (not started); skipped without its jars."""
    hs.fetched_or_skip(VERSION)
    if not fetch.agent_jar().is_file():
        pytest.skip(f"needs {fetch.agent_jar()}: run tools/setup.sh --hadoop")
    return HadoopCluster(str(tmp_path / "cluster"), VERSION, datanodes,
                         {"dfs.replication": str(replication), "dfs.heartbeat.interval": "1s"},
                         agent=True)


def test_agent_events_from_a_real_cluster(tmp_path):
    c = _agent_cluster(tmp_path, 1, replication=1)
    writer = None
    try:
        c.start(timeout=180)
        nn_cmd = open(f"/proc/{c.nodes['nn']['pid']}/cmdline", "rb").read().split(b"\0")
        assert any(a.startswith(b"-javaagent:") and a.endswith(b"agent.btm") for a in nn_cmd)

        # H1: a closed file's block is COMPLETE, with its length and path
        data = os.urandom(300_000)
        r = c.run_client("c1", SHELL, ["-put", "-d", "-", "/done"], stdin=data)
        assert r.returncode == 0, r.stderr.decode()[-800:]
        complete = _wait(lambda: [e for e in _events(c, "nn") if e["event"] == "nn.block.state"
                                  and e["path"] == "/done"], 30, "nn.block.state of /done")
        assert complete[0]["state"] == "COMPLETE" and complete[0]["len"] == len(data)
        assert complete[0]["source"] == "hadoop-agent" and complete[0]["gs"] > 0
        closed = [e for e in _events(c, "nn") if e["event"] == "nn.file.close"
                  and e["path"] == "/done"]
        assert [(e["len"], e["reason"]) for e in closed] == [(len(data), "complete")]

        # a writer that keeps /open open (its stdin stays open): an RBW replica on dn1
        c.add_client("c2")
        writer = subprocess.Popen(c.java_command("c2", SHELL, ["-appendToFile", "-", "/open"]),
                                  stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, cwd=c.dir)
        writer.stdin.write(os.urandom(200_000))
        writer.stdin.flush()
        rbw = os.path.join(c.nodes["dn1"]["storage"], "current")
        _wait(lambda: any("rbw" in root and any(f.startswith("blk_") for f in files)
                          for root, _, files in os.walk(rbw)), 60, "an rbw replica on dn1")

        # B6: dn1 crashes and restarts: the rbw replica comes back as RWR
        c.kill_node("dn1")
        c.start_node("dn1")
        c.wait_healthy(120)
        loaded = _wait(lambda: [e for e in _events(c, "dn1") if e["event"] == "dn.replica.state"
                                and e["rule"] == "replica_loaded"],
                       30, "dn.replica.state from dn1's start")
        assert loaded[0]["state"] == "RWR" and loaded[0]["reason"] == "restart"
        assert loaded[0]["block"] > 0 and loaded[0]["gs"] > 0
        # the same replica, RBW when the write created it (rule replica_created): B6's case
        created = [e for e in _events(c, "dn1") if e["event"] == "dn.replica.state"
                   and e["rule"] == "replica_created" and e["block"] == loaded[0]["block"]]
        assert [(e["state"], e["reason"]) for e in created] == [("RBW", "create")]
        assert created[0]["ts"] < loaded[0]["ts"]

        # L2: another client asks for the lease; the NameNode's event names both
        r = c.run_client("c3", DEBUG_ADMIN, ["recoverLease", "-path", "/open", "-retries", "1"])
        rec = _wait(lambda: [e for e in _events(c, "nn") if e["event"] == "nn.lease.recover"
                             and e["path"] == "/open"], 30, "nn.lease.recover of /open")
        ev = rec[0]
        assert ev["holder"].startswith("DFSClient_") and ev["requester"].startswith("DFSClient_")
        assert ev["holder"] != ev["requester"], ev
        assert ev["force"] is True and ev["op"] == "RECOVER_LEASE"
        assert ev["result"] in ("recovering", "closed") and ev["error"] is None
        # the block recovery that follows closes /open at the length dn1 kept (appendToFile
        # had created and closed it empty first: that close comes before)
        close = _wait(lambda: [e for e in _events(c, "nn") if e["event"] == "nn.file.close"
                               and e["path"] == "/open" and e["ts"] > ev["ts"]], 60,
                      "nn.file.close of /open after the recoverLease")
        assert close[0]["reason"] in ("block_recovery", "lease_recovery")
        assert close[0]["len"] == loaded[0]["len"]
    finally:
        if writer is not None:
            writer.kill()
            writer.wait()
        c.down()


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:     # finalized (moved) meanwhile
        return 0


def _rbw_holders(c: HadoopCluster) -> list[str]:
    """The DataNodes holding an RBW replica with data in it: a replica only set up has
    nothing acked yet, and a node lost then is no replacement case
    (DataStreamer.addDatanode2ExistingPipeline returns when nothing was written)."""
    out = []
    for dn in c.datanodes():
        for root, _, files in os.walk(os.path.join(c.nodes[dn]["storage"], "current")):
            if "rbw" in root and any(f.startswith("blk_") and not f.endswith(".meta")
                                     and _size(os.path.join(root, f)) > 0 for f in files):
                out.append(dn)
                break
    return out


def test_agent_reports_the_replacement_decision(tmp_path):
    """P2: a writer loses one node of its 2-node pipeline; with policy ALWAYS the client
    asks for a third DataNode, and the agent's client.pipeline.replace says so, with the
    policy's inputs."""
    c = _agent_cluster(tmp_path, 3, replication=2)
    writer = None
    try:
        c.start(timeout=180)
        c.add_client("c1", {"dfs.client.block.write.replace-datanode-on-failure.policy":
                            "ALWAYS"})
        writer = subprocess.Popen(c.java_command("c1", SHELL, ["-appendToFile", "-", "/p"]),
                                  stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, cwd=c.dir)
        writer.stdin.write(os.urandom(300_000))
        writer.stdin.flush()
        holders = _wait(lambda: (lambda h: h if len(h) == 2 else None)(_rbw_holders(c)), 60,
                        "rbw replicas of /p on 2 DataNodes")
        c.kill_node(holders[1])
        writer.stdin.write(os.urandom(300_000))
        writer.stdin.close()
        assert writer.wait(120) == 0
        names = c.address_map()
        spec = c.nodes["c1"]
        rep = _wait(lambda: [e for e in agent.AgentMapper("client", VERSION, names).feed_all(
            open(spec["agent_out"])) if e["event"] == "client.pipeline.replace"]
            if os.path.isfile(spec["agent_out"]) else None, 30, "client.pipeline.replace")
        ev = rep[0]
        assert (ev["policy"], ev["replication"], ev["remaining"]) == ("ALWAYS", 2, 1), ev
        assert ev["decision"] == "added" and ev["policy_says"] is True, ev
        spare = next(dn for dn in c.datanodes() if dn not in holders)
        assert ev["new_node"] == spare and sorted(ev["pipeline"]) == sorted([holders[0], spare]), ev
        assert ev["path"] == "/p" and ev["block"] > 0
    finally:
        if writer is not None and writer.poll() is None:
            writer.kill()
            writer.wait()
        c.down()
