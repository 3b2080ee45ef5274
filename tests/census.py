"""The leak census: run a scenario in a harness process, SIGKILL it at a phase, and count
what it left (processes, listening ports, containers, networks, volumes).

What a harness starts is learned by watching it from outside while it runs: every
descendant process (by /proc ppid links, with its start time, so a recycled pid is not
mistaken for ours) and every port those processes listen on. After the kill nothing of
that may remain, nor any process whose command line names the run's folder (one started
between two looks).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A run with every phase long enough to be caught in: a paced 2 MiB write (workload), a
# latency injected at 1 s and active until the end (faults), the file left open so the
# NameNode must expire the lease before the cluster is quiescent (quiescence).
CENSUS_SCENARIO = textwrap.dedent("""\
    name: leak-census
    description: a run slow enough in every phase to be killed in it
    seed: 7
    timeout: 60s
    cluster:
      datanodes: 3
      config:
        dfs.blocksize: 1MiB
        dfs.heartbeat.interval: 300ms
        dfs.namenode.redundancy.interval.seconds: 1s
        lease.soft-limit: 2s
        lease.hard-limit: 5s
        dfs.namenode.lease-recheck-interval-ms: 500ms
    workload:
      - {id: w1, client: c1, op: write, path: /data/f1, size: 3MiB, hflush_every: 256KiB, close: false}
    faults:
      - {id: pace, kind: bandwidth, links: [[c1, dn1], [c1, dn2], [c1, dn3]], rate: 512KiB, at: 0s}
      - {id: slow, kind: latency, links: [[dn1, dn2], [dn2, dn3]], latency: 20ms, at: 1s}
    expect:
      checks: all
""")

PHASES = ("cluster", "workload", "faults", "quiescence", "verify")


def _stat(pid: int) -> tuple[int, str, str] | None:
    """(ppid, state, start ticks) of a process, None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(") ", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(rest[1]), rest[0], rest[19]


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def descendants(root: int) -> dict[tuple[int, str], str]:
    """{(pid, start ticks): command line} of every live descendant of `root`."""
    parent = {}
    for pid in _pids():
        st = _stat(pid)
        if st is not None and st[1] != "Z":
            parent[pid] = st
    found, frontier = {}, [root]
    while frontier:
        p = frontier.pop()
        for pid, (ppid, _, ticks) in parent.items():
            if ppid == p and (pid, ticks) not in found:
                found[(pid, ticks)] = _cmdline(pid)
                frontier.append(pid)
    return found


def alive(key: tuple[int, str]) -> bool:
    st = _stat(key[0])
    return st is not None and st[2] == key[1] and st[1] != "Z"


def _listening_inodes() -> dict[str, int]:
    """{socket inode: port} of every TCP socket in LISTEN on this host's namespace."""
    out = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    cols = line.split()
                    if cols[3] == "0A":   # LISTEN
                        out[cols[9]] = int(cols[1].rsplit(":", 1)[1], 16)
        except OSError:
            continue
    return out


def listening_ports(pids) -> set[int]:
    """The TCP ports the given processes listen on."""
    inodes = _listening_inodes()
    ports = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                port = inodes.get(target[8:-1])
                if port is not None:
                    ports.add(port)
    return ports


def all_listening_ports() -> set[int]:
    return set(_listening_inodes().values())


def naming(text: str) -> list[int]:
    """Live processes whose command line contains `text` (not this one)."""
    return [p for p in _pids() if p != os.getpid() and text in _cmdline(p)
            and (_stat(p) or (0, "Z"))[1] != "Z"]


class Harness:
    """`hdfs-chaos run` of one scenario in its own session, watched from outside."""

    def __init__(self, scenario_path: str, results: str, backend: str = "local"):
        self.results = results
        env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.log = open(os.path.join(results, "harness.out"), "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "harness.cli", "run", scenario_path, "--out", results,
             "--backend", backend],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
            cwd=ROOT, start_new_session=True)
        self.seen: dict[tuple[int, str], str] = {}
        self.ports: set[int] = set()
        # whether the cluster's first node runs (the docker census overrides this: its
        # nodes are containers, not descendants)
        self.cluster_starting = lambda: any("minihdfs.node namenode" in c
                                            for c in self.seen.values())

    def look(self) -> None:
        """Remember every descendant and port seen now."""
        now = descendants(self.proc.pid)
        self.seen.update(now)
        self.ports |= listening_ports([k[0] for k in now])

    def run_dir(self) -> str | None:
        dirs = [d for d in os.listdir(self.results)
                if os.path.isdir(os.path.join(self.results, d))]
        return os.path.join(self.results, dirs[0]) if dirs else None

    def events(self, node: str = "harness") -> list[dict]:
        run = self.run_dir()
        if run is None:
            return []
        out = []
        try:
            with open(os.path.join(run, "events", f"{node}.jsonl")) as f:
                for line in f:
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        pass   # the line being written
        except OSError:
            pass
        return out

    def reached(self, phase: str) -> bool:
        ev = self.events()
        names = [e.get("event") for e in ev]
        procs = self.seen.values()
        if phase == "cluster":   # the NameNode runs, the cluster is not up yet
            return self.cluster_starting() and "harness.node.start" not in names
        if phase == "workload":
            return any(e.get("event") == "harness.node.start" and e.get("target") == "c1"
                       for e in ev)
        if phase == "faults":
            return any(e.get("event") == "harness.fault.inject" and e.get("fault") == "slow"
                       for e in ev)
        if phase == "quiescence":   # healed, client stopped, the lease not yet expired
            return any(e.get("event") == "harness.node.stop" and e.get("target") == "c1"
                       for e in ev) and "harness.quiescent" not in names
        if phase == "verify":   # Spark's JVM runs
            return "harness.run.end" in names and any(
                "java" in c.split(" ", 1)[0] for c in procs)
        raise ValueError(phase)

    def kill_at(self, phase: str, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.look()
            if self.reached(phase):
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
                self.log.close()
                return
            if self.proc.poll() is not None:
                raise AssertionError(f"the harness exited ({self.proc.returncode}) before "
                                     f"phase {phase}: {self.output()}")
            time.sleep(0.02)
        os.kill(self.proc.pid, signal.SIGKILL)
        raise AssertionError(f"phase {phase} not reached in {timeout:.0f}s: {self.output()}")

    def output(self) -> str:
        try:
            with open(os.path.join(self.results, "harness.out"), errors="replace") as f:
                return f.read()[-2000:]
        except OSError:
            return ""

    def leftovers(self) -> list[str]:
        """What of this run is still there (empty: nothing)."""
        left = [f"process {k[0]}: {c[:120]}" for k, c in self.seen.items() if alive(k)]
        run = self.run_dir()
        if run:
            left += [f"process {p} naming the run: {_cmdline(p)[:120]}" for p in naming(run)
                     if not any(k[0] == p for k in self.seen)]
        left += [f"port {p} still listening" for p in sorted(self.ports & all_listening_ports())]
        return left


def wait_clean(harness: Harness, within: float) -> tuple[float, list[str]]:
    """Seconds until nothing of the run is left (or `within` passed), and what was left."""
    start = time.monotonic()
    while True:
        left = harness.leftovers()
        if not left or time.monotonic() - start > within:
            return time.monotonic() - start, left
        time.sleep(0.05)
