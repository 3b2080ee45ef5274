"""Helpers for tests that run a real local mini-HDFS: start workload clients, wait for
events and states, read logs. No mocks: every helper talks to real processes."""

from __future__ import annotations

import os
import subprocess
import time

from minihdfs.cluster import LocalCluster
from hdfs_contract.events import read_events

FAST = {
    "dfs.blocksize": "1MiB",
    "dfs.heartbeat.interval": "300ms",
    "dfs.namenode.heartbeat.recheck-interval": "1s",
    "dfs.namenode.stale.datanode.interval": "3s",
    "dfs.namenode.lease-recheck-interval-ms": "200ms",
    "dfs.namenode.redundancy.interval.seconds": "500ms",
    "dfs.client.socket-timeout": "4s",
    "lease.soft-limit": "2s",
    "lease.hard-limit": "6s",
}


def wait_for(predicate, timeout: float = 30.0, interval: float = 0.05, what: str = "condition"):
    """Poll `predicate` until it returns something truthy; fail the test after `timeout`."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def events(cluster: LocalCluster, node: str, name: str | None = None, **where) -> list[dict]:
    path = os.path.join(cluster.events_dir, f"{node}.jsonl")
    if not os.path.exists(path):
        return []
    out = []
    for e in read_events(path):
        if name and not (e["event"] == name or (name.endswith("*") and e["event"].startswith(name[:-1]))):
            continue
        if all(e.get(k) == v for k, v in where.items()):
            out.append(e)
    return out


def all_events(cluster: LocalCluster, name: str | None = None, **where) -> list[dict]:
    out = []
    for f in os.listdir(cluster.events_dir):
        out += events(cluster, f[:-len(".jsonl")], name, **where)
    return sorted(out, key=lambda e: e["ts"])


def start_client(cluster: LocalCluster, client_id: str, ops: list[dict], seed: int = 1,
                 config: dict | None = None) -> subprocess.Popen:
    """A workload client process (python -m minihdfs.node client) on direct routes; the
    cluster stops it at teardown like any node."""
    return cluster.start_client(client_id, ops, seed=seed, config=config)
