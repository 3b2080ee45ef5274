"""Fixtures shared by the test suites: real local mini-HDFS clusters, torn down always."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from minihdfs.cluster import LocalCluster  # noqa: E402
from tests.support import FAST  # noqa: E402


@pytest.fixture
def make_cluster(tmp_path):
    """Start a local cluster: make_cluster(datanodes=3, config={...}, racks={...}).
    Every cluster started is stopped at the end of the test, whatever happens."""
    started: list[LocalCluster] = []

    def make(datanodes: int = 3, config: dict | None = None, racks: dict | None = None,
             fast: bool = True) -> LocalCluster:
        conf = {**(FAST if fast else {}), **(config or {})}
        cluster = LocalCluster(str(tmp_path / f"cluster{len(started)}"), datanodes, conf, racks)
        started.append(cluster)
        cluster.start()
        return cluster

    yield make
    for cluster in started:
        for proc in list(cluster.procs.values()):
            if proc is not None and proc.poll() is None:
                try:
                    os.kill(proc.pid, 18)  # SIGCONT: a paused node must be able to stop
                except ProcessLookupError:
                    pass
        cluster.down()


_LATENCIES: list[tuple[str, str, float]] = []


@pytest.fixture
def recovery_latency():
    """Record a measured recovery latency: recovery_latency(path, test, seconds). The
    table is printed at the end of the session (and is what the closing notes quote)."""
    def record(path: str, test: str, seconds: float) -> None:
        _LATENCIES.append((path, test, seconds))
    return record


def pytest_terminal_summary(terminalreporter):
    if not _LATENCIES:
        return
    terminalreporter.section("recovery latencies measured")
    for path, test, seconds in _LATENCIES:
        terminalreporter.line(f"{seconds:8.3f}s  {path}  ({test})")
