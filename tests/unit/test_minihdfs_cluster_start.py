"""LocalCluster.start: the NameNode first (the DataNodes register with it), then every
DataNode's process at once, each waited for on its port only once all run: a run's
cluster starts in about the time of its slowest DataNode, not the sum of them."""

from __future__ import annotations

from minihdfs import cluster as local_cluster
from minihdfs.cluster import LocalCluster


class FakeProc:
    def __init__(self, pid: int):
        self.pid = pid

    def poll(self):
        return None


def test_datanodes_start_side_by_side_after_the_namenode(tmp_path, monkeypatch):
    calls: list[tuple[str, str]] = []
    c = LocalCluster(str(tmp_path), datanodes=3)
    by_port = {spec["rpc"]: node for node, spec in c.nodes.items()}

    def popen(cmd, **kw):
        calls.append(("start", cmd[cmd.index("--id") + 1]))
        return FakeProc(1000 + len(calls))
    monkeypatch.setattr(c, "_popen", popen)
    monkeypatch.setattr(local_cluster, "_wait_port",
                        lambda addr, proc, node, log, timeout=30.0: calls.append(("port", node)))
    c.start(wait=False)
    assert calls == [("start", "nn"), ("port", "nn"),
                     ("start", "dn1"), ("start", "dn2"), ("start", "dn3"),
                     ("port", "dn1"), ("port", "dn2"), ("port", "dn3")]
    assert all(c.nodes[n]["pid"] for n in by_port.values())


def test_stop_nodes_tells_every_node_before_waiting_for_any(tmp_path, monkeypatch):
    c = LocalCluster(str(tmp_path), datanodes=2)
    calls: list[tuple[str, int]] = []
    for i, node in enumerate(c.nodes):
        c.nodes[node]["pid"] = 5000 + i
    alive = set(range(5000, 5003))
    monkeypatch.setattr(local_cluster, "pid_alive", lambda pid: pid in alive)

    def kill(pid, sig):
        calls.append(("signal", pid))
    monkeypatch.setattr(local_cluster.os, "kill", kill)

    def wait_exit(pid, proc, timeout):
        calls.append(("wait", pid))
        alive.discard(pid)
        return True
    monkeypatch.setattr(local_cluster, "_wait_exit", wait_exit)
    c.stop_nodes(list(c.nodes), timeout=5.0)
    waits = [i for i, (what, _) in enumerate(calls) if what == "wait"]
    told = {pid for what, pid in calls[:waits[0]] if what == "signal"}
    assert told == {5000, 5001, 5002}
    assert all(c.nodes[n]["pid"] is None for n in c.nodes)


def test_node_processes_cache_their_bytecode_outside_the_tree(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    monkeypatch.setattr(local_cluster, "PACKAGE_ROOT", str(tmp_path / "mutant"))
    env = local_cluster.node_env()
    assert "PYTHONDONTWRITEBYTECODE" not in env
    assert env["PYTHONPYCACHEPREFIX"] == local_cluster.BYTECODE_DIR
    assert not env["PYTHONPYCACHEPREFIX"].startswith(local_cluster.PACKAGE_ROOT)
    assert env["PYTHONPATH"].split(":")[0] == str(tmp_path / "mutant")
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(tmp_path / "mine"))
    assert local_cluster.node_env()["PYTHONPYCACHEPREFIX"] == str(tmp_path / "mine")
