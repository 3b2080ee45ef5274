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
