"""A run's teardown stops the Hadoop JVMs side by side: each gets its SIGTERM before any
is waited for (their shutdown hooks take a moment each), and one that lingers is killed.
Plain Python processes stand in for the JVMs."""

from __future__ import annotations

import signal
import subprocess
import sys

from harness.systems.hadoop import cluster as cluster_mod
from harness.systems.hadoop.cluster import HadoopCluster

# exits 0.3 s after SIGTERM (a shutdown hook); "stubborn" ignores SIGTERM
CHILD = """
import signal, sys, time
if sys.argv[1] == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
else:
    signal.signal(signal.SIGTERM, lambda *a: (time.sleep(0.3), sys.exit(0)))
print("up", flush=True)
while True:
    time.sleep(0.05)
"""


def _cluster(tmp_path, monkeypatch, kinds):
    c = HadoopCluster(str(tmp_path / "c"), "3.4.2", len(kinds) - 1)
    for node, kind in zip(c.nodes, kinds):
        proc = subprocess.Popen([sys.executable, "-c", CHILD, kind], stdout=subprocess.PIPE)
        assert proc.stdout.readline() == b"up\n"
        c.procs[node], c.nodes[node]["pid"] = proc, proc.pid
    signals = []
    real = cluster_mod._signal
    monkeypatch.setattr(cluster_mod, "_signal",
                        lambda pid, sig: (signals.append((pid, sig)), real(pid, sig)))
    return c, signals


def test_every_jvm_is_told_before_any_is_waited_for(tmp_path, monkeypatch):
    c, signals = _cluster(tmp_path, monkeypatch, ["hook"] * 4)
    c.upgrade_stops = False             # the teardown's stop
    waited = []
    real_wait = c._wait_exit

    def wait(node, timeout):
        waited.append((node, len([s for s in signals if s[1] == signal.SIGTERM])))
        return real_wait(node, timeout)
    c._wait_exit = wait
    nodes = list(c.nodes)
    c.stop_nodes(nodes, timeout=10)
    assert [n for n, _ in waited] == nodes
    assert all(told == len(nodes) for _, told in waited)   # all SIGTERMs came first
    assert all(c.procs[n].poll() == 0 for n in nodes)      # each ran its hook and exited
    assert all(c.nodes[n]["pid"] is None for n in nodes)
    assert not [s for s in signals if s[1] == signal.SIGKILL]


def test_a_jvm_that_lingers_is_killed(tmp_path, monkeypatch):
    c, signals = _cluster(tmp_path, monkeypatch, ["hook", "stubborn"])
    c.upgrade_stops = False
    nodes = list(c.nodes)
    c.stop_nodes(nodes, timeout=0.8)
    assert c.procs[nodes[0]].poll() == 0
    assert c.procs[nodes[1]].poll() == -signal.SIGKILL
    assert (c.procs[nodes[1]].pid, signal.SIGKILL) in signals
