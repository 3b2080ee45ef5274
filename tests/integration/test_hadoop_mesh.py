"""Real Apache Hadoop daemons (a NameNode and 3 DataNodes, each its own JVM) behind a
real Toxiproxy link mesh: every directed link goes through its own proxy, and a fault
on link X -> Y touches only that link (client -> DataNode, DataNode -> DataNode data
path, DataNode -> NameNode). Toxiproxy's per-proxy byte counters (-proxy-metrics) show
which link carried what.

Needs the Hadoop jars (fetched once into the cache; `tox -e hadoop` does it) and Java.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
import urllib.request

import pytest

from faults.toxiproxy_server import ToxiproxyAPI, ToxiproxyError, ensure_binary, free_port
from harness.systems.hadoop import fetch, state
from harness.systems.hadoop.cluster import HadoopCluster
from harness.systems.hadoop.mesh import HadoopLinkMesh

pytestmark = [pytest.mark.integration, pytest.mark.hadoop, pytest.mark.timeout(600)]

VERSION = os.environ.get("HDFS_CHAOS_HADOOP_VERSION", fetch.DEFAULT_VERSION)
MiB = 1 << 20
SHELL = "org.apache.hadoop.fs.FsShell"
DFSADMIN = "org.apache.hadoop.hdfs.tools.DFSAdmin"
# a refused connection fails at once instead of after Hadoop's 10 connect retries
NO_RETRY = {"ipc.client.connect.max.retries": "0",
            "ipc.client.connect.max.retries.on.timeouts": "0"}


class MetricsToxiproxy:
    """A toxiproxy-server of this test with its per-proxy byte counters on."""

    def __init__(self, log_path: str):
        self.port = free_port()
        with open(log_path, "ab") as out:
            self.proc = subprocess.Popen([ensure_binary(), "-host", "127.0.0.1", "-port",
                                          str(self.port), "-proxy-metrics"],
                                         stdout=out, stderr=out, stdin=subprocess.DEVNULL)
        self.api = ToxiproxyAPI("127.0.0.1", self.port)
        deadline = time.monotonic() + 15
        while True:
            try:
                self.api.version(timeout=1)
                break
            except ToxiproxyError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.stop()
                    raise
                time.sleep(0.1)

    def received(self) -> dict[tuple[str, str], int]:
        """(proxy name, "upstream"|"downstream") -> bytes the proxy received so far."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as r:
            text = r.read().decode()
        out = {}
        for m in re.finditer(r'toxiproxy_proxy_received_bytes_total\{direction="(\w+)",'
                             r'listener="[^"]*",proxy="([^"]+)",[^}]*\} (\S+)', text):
            out[(m.group(2), m.group(1))] = int(float(m.group(3)))
        return out

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def hadoop(tmp_path_factory):
    if shutil.which("java") is None:
        pytest.skip("no java")
    try:
        fetch.fetch(VERSION)
        ensure_binary()
    except (fetch.FetchError, ToxiproxyError) as e:
        pytest.skip(str(e))
    base = tmp_path_factory.mktemp("hadoop-mesh")
    tp = MetricsToxiproxy(str(base / "toxiproxy.log"))
    cluster = HadoopCluster(str(base / "cluster"), VERSION, 3,
                            {"dfs.blocksize": "1MiB", "dfs.heartbeat.interval": "1s",
                             "dfs.replication": 3, "dfs.client.socket-timeout": "10s",
                             "ipc.client.connection.maxidletime": 1000})
    mesh = HadoopLinkMesh(tp.api, cluster.listen(), ["c1", "c2"]).create()
    cluster.routes_for = lambda n: mesh.routes(n) if n in mesh.nodes else {}
    try:
        cluster.start(timeout=120)
        yield cluster, mesh, tp
    finally:
        cluster.down()
        mesh.destroy()
        tp.stop()


def delta(before: dict, after: dict, proxy: str, stream: str = "upstream") -> int:
    return after.get((proxy, stream), 0) - before.get((proxy, stream), 0)


def received_once(tp: "MetricsToxiproxy", before: dict, want: dict[str, int],
                  timeout: float = 20.0) -> dict:
    """The counters once every proxy of `want` received at least its bytes since `before`,
    or as they are at the timeout. Toxiproxy counts a connection's bytes when it ends, and
    a DataNode closes its mirror connection a moment after the last ack it passes on: a
    reading taken as the client returns may miss the last hop's bytes."""
    deadline = time.monotonic() + timeout
    while True:
        after = tp.received()
        if all(delta(before, after, p) >= n for p, n in want.items()) \
                or time.monotonic() > deadline:
            return after
        time.sleep(0.25)


def all_within(cluster: HadoopCluster, nodes, limit: float, timeout: float = 15.0) -> dict:
    """live_nodes() once every node of `nodes` was heard from at most `limit` s before
    (asserted within `timeout`): on a loaded machine one reading may catch a heartbeat
    late, a link that carries none never catches up."""
    deadline = time.monotonic() + timeout
    while True:
        live = cluster.live_nodes()
        if all(live[n]["lastContact"] <= limit for n in nodes):
            return live
        assert time.monotonic() < deadline, {n: live[n] for n in nodes}
        time.sleep(0.5)


def pipelines(cluster: HadoopCluster, path_prefix: str) -> dict[str, list[list[str]]]:
    """Each file's allocations in the NameNode's log, in order: the node ids of each."""
    names = cluster.address_map()
    out: dict[str, list[list[str]]] = {}
    with open(cluster.nodes["nn"]["log"]) as f:
        for line in f:
            m = re.search(r"BLOCK\* allocate \S+, replicas=(.*) for (\S+)", line)
            if m and m.group(2).startswith(path_prefix):
                path = m.group(2).removesuffix("._COPYING_")
                out.setdefault(path, []).append(
                    [names[a.strip()] for a in m.group(1).split(",")])
    return out


def put(cluster, client, local_files, target, **kw):
    folder = target if target.endswith("/") else target.rpartition("/")[0]
    r = cluster.run_client(client, SHELL, ["-mkdir", "-p", folder])
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    r = cluster.run_client(client, SHELL, ["-put", *local_files, target], **kw)
    assert r.returncode == 0, r.stderr.decode()[-2000:]


def test_the_hosts_files_send_each_source_to_its_own_proxy(hadoop):
    cluster, mesh, _ = hadoop
    with open(cluster.nodes["dn2"]["hosts"]) as f:
        hosts = dict(reversed(line.split()[:2]) for line in f if line.strip())
    # DataNode 2 reaches the NameNode and DataNode 3 each through the proxy of its link
    assert hosts["nn.hdfs"] == "127.1.2.0"
    assert hosts["dn3.hdfs"] == "127.1.2.3"
    port = cluster.nodes["dn3"]["xfer"].rpartition(":")[2]
    assert mesh.proxy("dn2", "dn3", "xfer").address == f"127.1.2.3:{port}"


def test_a_write_pipeline_goes_through_the_proxy_of_each_hop(hadoop, tmp_path):
    cluster, mesh, tp = hadoop
    src = tmp_path / "one"
    src.write_bytes(os.urandom(MiB - 4096))   # one block
    before = tp.received()
    put(cluster, "c1", [str(src)], "/hop/one")
    [pipe] = pipelines(cluster, "/hop/")["/hop/one"]
    hops = [("c1", pipe[0])] + list(zip(pipe, pipe[1:]))
    after = received_once(tp, before, {f"{a}->{b}.xfer": MiB - 4096 for a, b in hops})
    for a, b in hops:
        assert delta(before, after, f"{a}->{b}.xfer") >= MiB - 4096, (a, b, pipe)
    # no other source sent data to a DataNode meanwhile
    for proxy in mesh.proxies:
        if proxy.spec.service == "xfer" and proxy.link not in hops:
            assert delta(before, after, proxy.name) < 64 * 1024, (proxy.name, pipe)
    assert delta(before, after, "c1->nn.rpc") > 0


def test_a_cut_datanode_to_namenode_link_silences_only_that_datanode(hadoop):
    cluster, mesh, _ = hadoop
    cut = mesh.proxies_of("dn1", "nn")
    mesh.disable(cut, "t-dn-nn")
    try:
        # one reading with dn1 silent for 5 s and dn2, dn3 heard from within 3 s (a
        # loaded machine may delay one of their heartbeats past a fixed moment)
        deadline = time.monotonic() + 30
        while True:
            live = cluster.live_nodes()
            if live["dn1"]["lastContact"] >= 5 and max(
                    live[dn]["lastContact"] for dn in ("dn2", "dn3")) <= 3:
                break
            assert time.monotonic() < deadline, f"dn1 still heartbeats or dn2/dn3 not: {live}"
            time.sleep(0.5)
    finally:
        mesh.enable(cut, "t-dn-nn")
    deadline = time.monotonic() + 30
    while cluster.live_nodes()["dn1"]["lastContact"] > 2:
        assert time.monotonic() < deadline, "dn1 did not heartbeat again after the heal"
        time.sleep(0.5)


def test_a_cut_client_to_datanode_link_touches_only_that_link(hadoop, tmp_path):
    cluster, mesh, tp = hadoop

    def ipc_probe(client, dn):
        return cluster.run_client(client, DFSADMIN, ["-getDatanodeInfo",
                                                     f"{dn}.hdfs:" + cluster.nodes[dn]["ipc"].rpartition(":")[2]],
                                  extra_props=NO_RETRY, timeout=60)

    cut = mesh.proxies_of("c1", "dn1")
    mesh.disable(cut, "t-c1-dn1")
    try:
        assert ipc_probe("c1", "dn1").returncode != 0            # the cut link
        assert ipc_probe("c1", "dn2").returncode == 0            # same source, other DN
        assert ipc_probe("c2", "dn1").returncode == 0            # other source, same DN
        src = tmp_path / "f"
        src.write_bytes(os.urandom(MiB // 2))
        before = tp.received()
        put(cluster, "c1", [str(src)], "/c1cut/f")
        # dn1 still gets its replica, from another DataNode (pipeline or re-replication)
        deadline = time.monotonic() + 40
        while not any(r["state"] == "FINALIZED" and r["len"] == MiB // 2
                      for r in state.scan_storage(cluster.nodes["dn1"]["storage"])
                      if r["block"] in _blocks_of(cluster, "/c1cut/f")):
            assert time.monotonic() < deadline, "dn1 never got a replica of /c1cut/f"
            time.sleep(1)
        # the replica is FINALIZED before its sender's connection ends (and is counted)
        deadline = time.monotonic() + 20
        while True:
            after = tp.received()
            into_dn1 = max(delta(before, after, f"{d}->dn1.xfer") for d in ("dn2", "dn3"))
            if into_dn1 >= MiB // 2 or time.monotonic() > deadline:
                break
            time.sleep(0.25)
        assert delta(before, after, "c1->dn1.xfer") == 0
        assert into_dn1 >= MiB // 2
    finally:
        mesh.enable(cut, "t-c1-dn1")
    assert ipc_probe("c1", "dn1").returncode == 0                # healed


def _blocks_of(cluster, path):
    view = state.namenode_view(cluster, read_back=False, path=path)
    return {b["block"] for f in view["files"] for b in f["blocks"]}


def test_a_cut_datanode_to_datanode_link_breaks_only_that_hop(hadoop, tmp_path):
    """dn1 -> dn2 cut: a pipeline with the hop dn1 -> dn2 fails at setup with dn2 as
    the first bad link and is rebuilt without that hop; every other DataNode hop,
    dn2 -> dn1 included, carries its block as before."""
    cluster, mesh, tp = hadoop
    names = cluster.address_map()
    cut = mesh.proxies_of("dn1", "dn2")
    mesh.disable(cut, "t-dn1-dn2")
    try:
        seen_cut_hop = False
        for batch in range(4):
            files = []
            for i in range(6):
                p = tmp_path / f"b{batch}-{i}"
                p.write_bytes(os.urandom(256 * 1024))
                files.append(str(p))
            cluster.run_client("c2", SHELL, ["-mkdir", "-p", f"/dndn{batch}"])
            before = tp.received()
            put(cluster, "c1", files, f"/dndn{batch}/", timeout=180)
            allocs = pipelines(cluster, f"/dndn{batch}/")
            assert len(allocs) == 6
            expected: dict[tuple[str, str], int] = {}
            for path, tries in allocs.items():
                final = tries[-1]
                assert ("dn1", "dn2") not in set(zip(final, final[1:])), (path, tries)
                for hop in zip(final, final[1:]):
                    expected[hop] = expected.get(hop, 0) + 256 * 1024
                if ("dn1", "dn2") in set(zip(tries[0], tries[0][1:])):
                    seen_cut_hop = True
                    assert len(tries) >= 2, (path, tries)   # rebuilt after the bad link
            after = received_once(tp, before, {f"{a}->{b}.xfer": n
                                               for (a, b), n in expected.items()})
            assert delta(before, after, "dn1->dn2.xfer") == 0
            for (a, b), n in expected.items():
                assert delta(before, after, f"{a}->{b}.xfer") >= n, ((a, b), expected)
            if seen_cut_hop:
                break
        assert seen_cut_hop, "no pipeline put dn1 right before dn2 in 24 files"
        log = open(cluster.nodes["c1"]["log"]).read()
        bad = {names.get(a) for a in re.findall(r"firstBadLink as (\S+)", log)}
        assert bad == {"dn2"}, bad
    finally:
        mesh.enable(cut, "t-dn1-dn2")


def test_a_cut_client_to_namenode_link_touches_only_that_client(hadoop):
    cluster, mesh, _ = hadoop
    cut = mesh.proxies_of("c1", "nn")
    mesh.disable(cut, "t-c1-nn")
    try:
        r = cluster.run_client("c1", SHELL, ["-ls", "/"], extra_props=NO_RETRY, timeout=60)
        assert r.returncode != 0 and b"Connection refused" in r.stderr, r.stderr[-500:]
        r = cluster.run_client("c2", SHELL, ["-ls", "/"], extra_props=NO_RETRY, timeout=60)
        assert r.returncode == 0, r.stderr[-500:]
        all_within(cluster, ("dn1", "dn2", "dn3"), 3)
    finally:
        mesh.enable(cut, "t-c1-nn")
    r = cluster.run_client("c1", SHELL, ["-ls", "/"], extra_props=NO_RETRY, timeout=60)
    assert r.returncode == 0, r.stderr[-500:]


def test_block_recovery_rpcs_go_from_the_primary_through_its_own_proxies(hadoop):
    """A writer dies with an open block on all three DataNodes; recoverLease makes the
    NameNode pick a primary, which calls initReplicaRecovery/updateReplica on the
    others over the inter-DataNode RPC: those calls use exactly the proxies
    primary -> other .ipc, and no other DataNode -> DataNode RPC link carries anything."""
    cluster, mesh, tp = hadoop
    cluster.add_client("c2")
    proc = subprocess.Popen(cluster.java_command("c2", SHELL, ["-appendToFile", "-", "/rec"]),
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd=cluster.dir)
    try:
        proc.stdin.write(os.urandom(200 * 1024))
        proc.stdin.flush()
        deadline = time.monotonic() + 60
        while not all(any(r["state"] == "RBW" and r["len"] > 0
                          for r in state.scan_storage(cluster.nodes[dn]["storage"]))
                      for dn in cluster.datanodes()):
            assert time.monotonic() < deadline, "no RBW replicas appeared"
            time.sleep(0.5)
    finally:
        proc.kill()
        proc.wait()
    before = tp.received()
    r = cluster.run_client("c1", "org.apache.hadoop.hdfs.tools.DebugAdmin",
                           ["recoverLease", "-path", "/rec", "-retries", "6"], timeout=120)
    assert r.returncode == 0 and b"recoverLease SUCCEEDED" in r.stdout + r.stderr, r.stderr[-800:]
    # Toxiproxy counts a connection's bytes when it ends; Hadoop closes an idle IPC
    # connection after ipc.client.connection.maxidletime (1 s in this cluster)
    time.sleep(5)
    after = tp.received()
    # the primary is the DataNode the NameNode asked (BlockRecoveryWorker logs the call).
    # A recovery not ended after 30 heartbeats is started again by the next recoverLease
    # (3.x BlockManager.addBlockRecoveryAttempt), with a replica not yet tried as primary
    # (BlockUnderConstructionFeature.initializeBlockRecovery): a loaded machine may see
    # two primaries, each calling the others through its own proxies
    primaries = {dn for dn in cluster.datanodes()
                 if "calls recoverBlock" in open(cluster.nodes[dn]["log"]).read()}
    assert primaries, "no DataNode was asked to recover the block"
    for proxy in mesh.proxies:
        a, b = proxy.link
        if proxy.spec.service != "ipc" or not (a.startswith("dn") and b.startswith("dn")):
            continue
        moved = delta(before, after, proxy.name)
        if a in primaries:
            assert moved > 0, f"{proxy.name} carried nothing (primaries {primaries})"
        else:
            assert moved == 0, f"{proxy.name} carried {moved} bytes (primaries {primaries})"
