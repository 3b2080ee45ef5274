"""A Hadoop cluster starts its DataNodes once the NameNode's RPC port is bound: a
DataNode whose first version request finds no NameNode sleeps 5 s before the next
(BPServiceActor.retrieveNamespaceInfo). No JVM: spawning is recorded, and a socket
bound on the NameNode's port a moment after its spawn stands for the NameNode."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from hdfs_contract.errors import ClusterError

from harness.systems.hadoop import cluster as cluster_mod
from harness.systems.hadoop.cluster import HadoopCluster


class FakeProc:
    def __init__(self, code=None):
        self.code, self.pid, self.returncode = code, 4242, code

    def poll(self):
        return self.code


def make(tmp_path, monkeypatch, nn_proc=None):
    monkeypatch.setattr(cluster_mod.fetch, "is_fetched", lambda v: True)
    c = HadoopCluster(str(tmp_path / "c"), "3.4.2", 3, {"dfs.replication": 3})
    monkeypatch.setattr(c, "format", lambda: False)
    spawned = []

    def spawn(node, cmd):
        spawned.append((node, time.monotonic()))
        c.procs[node] = nn_proc if node == "nn" and nn_proc else FakeProc()
        return c.procs[node]

    monkeypatch.setattr(c, "_spawn", spawn)
    return c, spawned


def test_the_datanodes_start_once_the_namenodes_rpc_port_is_bound(tmp_path, monkeypatch):
    c, spawned = make(tmp_path, monkeypatch)
    bound_at = []
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)

    def namenode():
        time.sleep(0.5)                      # loading its image
        listener.bind(("127.0.0.1", c.nn_port))
        listener.listen(8)
        bound_at.append(time.monotonic())

    t = threading.Thread(target=namenode)
    t.start()
    try:
        c.start(timeout=10, wait=False)
    finally:
        t.join()
        listener.close()
    assert [n for n, _ in spawned] == ["nn", "dn1", "dn2", "dn3"]
    assert all(at >= bound_at[0] for n, at in spawned if n.startswith("dn"))


def test_a_namenode_that_exits_fails_the_start_in_one_line(tmp_path, monkeypatch):
    c, spawned = make(tmp_path, monkeypatch, nn_proc=FakeProc(code=1))
    with pytest.raises(ClusterError, match="nn exited with code 1; see .*nn.out"):
        c.start(timeout=10, wait=False)
    assert [n for n, _ in spawned] == ["nn"]
