"""The command lines: `python -m minihdfs.cluster up/down/status/restart/kill` and
`python -m minihdfs.shell put/get/cat/ls/append/rm/mv/fsck`, run as real processes
against a real local cluster, as a user would."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys

import pytest

from minihdfs.cluster import PACKAGE_ROOT, LocalCluster
from hdfs_contract.events import read_events
from tests.support import FAST, wait_for

pytestmark = pytest.mark.integration

KiB, MiB = 1 << 10, 1 << 20


def run(module: str, *args: str, stdin: bytes | None = None, timeout: float = 180.0):
    env = dict(os.environ, PYTHONPATH=PACKAGE_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", module, *args], input=stdin,
                          stdin=None if stdin is not None else subprocess.DEVNULL,
                          capture_output=True, timeout=timeout, env=env, cwd=PACKAGE_ROOT)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


def pids(directory: str) -> dict[str, int | None]:
    with open(os.path.join(directory, "cluster.json")) as f:
        return {n: s.get("pid") for n, s in json.load(f)["nodes"].items()}


class ShellCluster:
    """A cluster started with `python -m minihdfs.cluster up`, driven by the shell."""

    def __init__(self, directory: str):
        self.dir = directory
        self.json = os.path.join(directory, "cluster.json")

    def up(self, *extra: str) -> subprocess.CompletedProcess:
        config = [a for k, v in FAST.items() for a in ("--config", f"{k}={v}")]
        return run("minihdfs.cluster", "up", "--datanodes", "3", "--dir", self.dir, *config,
                   *extra)

    def cluster(self, *args: str) -> subprocess.CompletedProcess:
        return run("minihdfs.cluster", *args, "--dir", self.dir)

    def shell(self, *args: str, stdin: bytes | None = None,
              events: str | None = None) -> subprocess.CompletedProcess:
        head = ["--cluster", self.json] + (["--events", events] if events else [])
        return run("minihdfs.shell", *head, *args, stdin=stdin)

    def ok(self, *args: str, stdin: bytes | None = None, events: str | None = None) -> bytes:
        proc = self.shell(*args, stdin=stdin, events=events)
        assert proc.returncode == 0, (args, proc.stderr.decode())
        return proc.stdout

    def nn_events(self, name: str) -> list[dict]:
        path = os.path.join(self.dir, "events", "nn.jsonl")
        return [e for e in read_events(path) if e["event"] == name] if os.path.exists(path) else []

    def teardown(self) -> None:
        if not os.path.exists(self.json):
            return
        run("minihdfs.cluster", "down", "--dir", self.dir, timeout=120)
        for node, pid in pids(self.dir).items():   # whatever `down` could not stop
            if pid and alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def shell_cluster(tmp_path):
    made: list[ShellCluster] = []

    def make(up: bool = True) -> ShellCluster:
        sc = ShellCluster(str(tmp_path / f"cluster{len(made)}"))
        made.append(sc)
        if up:
            proc = sc.up()
            assert proc.returncode == 0, proc.stderr.decode()
        return sc
    yield make
    for sc in made:
        sc.teardown()


def one_line(stderr: bytes) -> str:
    lines = stderr.decode().strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


# -- up, status, down ------------------------------------------------------------------

def test_up_status_down(shell_cluster):
    sc = shell_cluster(up=False)
    proc = sc.up()
    assert proc.returncode == 0, proc.stderr.decode()
    out = json.loads(proc.stdout)
    assert out["cluster"] == sc.json and set(out["nodes"]) == {"nn", "dn1", "dn2", "dn3"}
    started = pids(sc.dir)
    assert all(alive(pid) for pid in started.values())
    status = sc.cluster("status")
    assert status.returncode == 0
    doc = json.loads(status.stdout)
    assert all(n["running"] for n in doc["nodes"].values())
    assert sorted((d["dn"], d["state"]) for d in doc["datanodes"]) == \
        [("dn1", "live"), ("dn2", "live"), ("dn3", "live")]
    down = sc.cluster("down")
    assert down.returncode == 0, down.stderr.decode()
    wait_for(lambda: not any(alive(pid) for pid in started.values()), 30,
             what="every node to stop")
    assert all(pid is None for pid in pids(sc.dir).values())
    assert sc.nn_events("nn.stop")                       # a clean stop, not a kill


# -- the shell commands ----------------------------------------------------------------

def test_shell_commands(shell_cluster, tmp_path):
    sc = shell_cluster()
    local = tmp_path / "local.bin"
    data = random.Random(1).randbytes(MiB + 300 * KiB)
    local.write_bytes(data)
    put = sc.shell("put", str(local), "/user/a/file")
    assert put.returncode == 0, put.stderr.decode()
    assert f"{len(data)} bytes" in put.stderr.decode()
    got = tmp_path / "got.bin"
    sc.ok("get", "/user/a/file", str(got))
    assert got.read_bytes() == data
    assert sc.ok("cat", "/user/a/file") == data
    # put from stdin with hflush points
    events_path = str(tmp_path / "shell-events.jsonl")
    piped = random.Random(2).randbytes(700 * KiB)
    sc.ok("put", "-", "/user/a/piped", "--hflush-every", "256KiB", stdin=piped,
          events=events_path)
    assert sc.ok("cat", "/user/a/piped") == piped
    flushes = [e["offset"] for e in read_events(events_path) if e["event"] == "client.hflush"]
    assert flushes == [256 * KiB, 512 * KiB]
    # ls: a directory, then the files in it
    root = sc.ok("ls", "/").decode().splitlines()
    assert root == [f"d {'-':>12}  /user"]
    listing = sc.ok("ls", "/user/a").decode().splitlines()
    assert listing == [f"- {len(data):>12}  /user/a/file", f"- {len(piped):>12}  /user/a/piped"]
    # append
    tail = random.Random(3).randbytes(900 * KiB)
    (tmp_path / "tail.bin").write_bytes(tail)
    sc.ok("append", str(tmp_path / "tail.bin"), "/user/a/file")
    assert sc.ok("cat", "/user/a/file") == data + tail
    # fsck: the contract's field names
    report = json.loads(sc.ok("fsck", "/user/a/file"))
    assert {"path", "closed", "len", "holder", "blocks"} <= set(report)
    assert report["path"] == "/user/a/file" and report["closed"] is True
    assert report["len"] == len(data) + len(tail) and report["holder"] is None
    assert [b["len"] for b in report["blocks"]] == [MiB, MiB, len(data) + len(tail) - 2 * MiB]
    for b in report["blocks"]:
        assert {"block", "gs", "len", "state", "replicas"} <= set(b)
        assert b["state"] == "COMPLETE" and len(b["replicas"]) == 3
        for r in b["replicas"]:
            assert {"dn", "state", "gs", "len", "crc"} <= set(r)
            assert (r["state"], r["gs"], r["len"]) == ("FINALIZED", b["gs"], b["len"])
        assert len({r["crc"] for r in b["replicas"]}) == 1
    # mv, then rm
    sc.ok("mv", "/user/a/file", "/user/b/renamed")
    assert sc.ok("cat", "/user/b/renamed") == data + tail
    missing = sc.shell("cat", "/user/a/file")
    assert missing.returncode == 1 and "/user/a/file" in one_line(missing.stderr)
    sc.ok("rm", "/user/b/renamed")
    assert sc.ok("ls", "/user/b") == b""
    again = sc.shell("rm", "/user/b/renamed")
    assert again.returncode == 1 and "does not exist" in one_line(again.stderr)
    sc.ok("rm", "-r", "/user")
    assert sc.ok("ls", "/") == b""
    # put onto an existing file needs -f
    sc.ok("put", str(local), "/x")
    refused = sc.shell("put", str(local), "/x")
    assert refused.returncode == 1 and "FileAlreadyExists" in one_line(refused.stderr)
    sc.ok("put", "-f", "-", "/x", stdin=b"new content")
    assert sc.ok("cat", "/x") == b"new content"


def test_ls_and_fsck_of_an_open_file(shell_cluster):
    sc = shell_cluster()
    cluster = LocalCluster.load(sc.dir)
    writer = cluster.start_client("c1", [{"id": "w", "op": "write", "path": "/open/f",
                                          "size": 300_000, "hflush_every": 100_000,
                                          "close": False}])
    try:
        events = os.path.join(sc.dir, "events", "c1.jsonl")
        wait_for(lambda: os.path.exists(events) and any(
            e["event"] == "client.op.end" for e in read_events(events)), 60,
            what="the writer to hflush its file")
        holder = next(e["holder"] for e in read_events(events) if e["event"] == "client.start")
        [line] = sc.ok("ls", "/open").decode().splitlines()
        assert line.endswith(f"/open/f  (open, lease {holder})")
        report = json.loads(sc.ok("fsck", "/open/f"))
        assert report["closed"] is False and report["holder"] == holder
        [block] = report["blocks"]
        assert block["state"] == "UNDER_CONSTRUCTION"
        assert sorted(r["state"] for r in block["replicas"]) == ["RBW"] * 3
        assert sc.ok("cat", "/open/f") == _workload_bytes(0, "/open/f", 300_000)
    finally:
        writer.send_signal(signal.SIGTERM)
        writer.wait(30)


def _workload_bytes(seed: int, path: str, n: int) -> bytes:
    from hdfs_contract.content import Content
    return Content(seed).get(path, 0, n)


# -- refusals --------------------------------------------------------------------------

@pytest.mark.parametrize("pair,words", [
    ("dfs.blocksise=1MiB", ["unknown configuration key 'dfs.blocksise'",
                            "did you mean 'dfs.blocksize'"]),
    ("dfs.blocksize=lots", ["dfs.blocksize", "lots"]),
    ("dfs.heartbeat.interval=soon", ["dfs.heartbeat.interval", "soon"]),
    ("dfs.replication=0", ["dfs.replication"]),
    ("dfs.blocksize", ["KEY=VALUE"]),
])
def test_bad_configuration_is_refused_with_one_line(shell_cluster, pair, words):
    sc = shell_cluster(up=False)
    proc = run("minihdfs.cluster", "up", "--datanodes", "1", "--dir", sc.dir, "--config", pair)
    assert proc.returncode == 2
    line = one_line(proc.stderr)
    assert "Traceback" not in proc.stderr.decode()
    for w in words:
        assert w in line, line
    assert not os.path.exists(sc.json)         # nothing was started


def test_bad_rack_is_refused_with_one_line_naming_the_option(shell_cluster):
    sc = shell_cluster(up=False)
    proc = run("minihdfs.cluster", "up", "--datanodes", "1", "--dir", sc.dir, "--rack", "dn1")
    assert proc.returncode == 2
    line = one_line(proc.stderr)
    assert "--rack" in line or "DN=/RACK" in line, line
    assert not os.path.exists(sc.json)


def test_bad_size_option_of_the_shell_is_refused(tmp_path):
    proc = run("minihdfs.shell", "--cluster", str(tmp_path / "c.json"), "put", "-", "/x",
               "--hflush-every", "lots", stdin=b"")
    assert proc.returncode == 2
    last = proc.stderr.decode().strip().splitlines()[-1]
    assert "--hflush-every" in last and "lots" in last


def test_unknown_node_and_missing_cluster_are_refused(shell_cluster, tmp_path):
    sc = shell_cluster(up=False)
    proc = run("minihdfs.cluster", "restart", "dn1", "--dir", str(tmp_path / "nothing"))
    assert proc.returncode == 2 and "no cluster" in one_line(proc.stderr)
    sc = shell_cluster()
    proc = sc.cluster("restart", "dn7")
    assert proc.returncode == 2 and "unknown node 'dn7'" in one_line(proc.stderr)
    proc = run("minihdfs.shell", "--cluster", str(tmp_path / "nothing.json"), "ls", "/")
    assert proc.returncode != 0 and "does not exist" in one_line(proc.stderr)


# -- restart and kill ------------------------------------------------------------------

def test_restart_and_kill_nodes(shell_cluster, tmp_path):
    sc = shell_cluster()
    data = random.Random(4).randbytes(1536 * KiB)
    sc.ok("put", "-", "/f", stdin=data)
    before = pids(sc.dir)
    # restart a DataNode: a new process, registered again, the data still readable
    proc = sc.cluster("restart", "dn1")
    assert proc.returncode == 0, proc.stderr.decode()
    after = pids(sc.dir)
    assert after["dn1"] != before["dn1"] and alive(after["dn1"]) and not alive(before["dn1"])
    assert all(after[n] == before[n] for n in ("nn", "dn2", "dn3"))
    dn1_events = read_events(os.path.join(sc.dir, "events", "dn1.jsonl"))
    assert [e["event"] for e in dn1_events].count("dn.start") == 2
    assert [e for e in dn1_events if e["event"] == "dn.start"][-1]["replicas"] == 2
    assert sc.ok("cat", "/f") == data
    # kill a DataNode: gone at once, declared dead by the NameNode
    proc = sc.cluster("kill", "dn2")
    assert proc.returncode == 0, proc.stderr.decode()
    assert pids(sc.dir)["dn2"] is None and not alive(after["dn2"])
    status = json.loads(sc.cluster("status").stdout)
    assert status["nodes"]["dn2"]["running"] is False and status["nodes"]["dn1"]["running"]
    wait_for(lambda: any(e["dn"] == "dn2" for e in sc.nn_events("nn.dn.dead")), 60,
             what="the NameNode to declare dn2 dead")
    assert not any(e.get("event") == "dn.stop"
                   for e in read_events(os.path.join(sc.dir, "events", "dn2.jsonl")))
    assert sc.ok("cat", "/f") == data
    # restart the NameNode: the namespace is kept
    proc = sc.cluster("restart", "nn")
    assert proc.returncode == 0, proc.stderr.decode()
    assert len(sc.nn_events("nn.start")) == 2

    def readable():
        p = sc.shell("cat", "/f")
        return p.returncode == 0 and p.stdout == data
    wait_for(readable, 60, interval=0.5, what="/f to be readable after the NameNode restart")
    # start the killed DataNode again
    proc = sc.cluster("start", "dn2")
    assert proc.returncode == 0, proc.stderr.decode()
    assert alive(pids(sc.dir)["dn2"])

    def dn2_live():
        doc = json.loads(sc.cluster("status").stdout)
        return isinstance(doc["datanodes"], list) and \
            {d["dn"]: d["state"] for d in doc["datanodes"]}.get("dn2") == "live"
    wait_for(dn2_live, 60, interval=0.5, what="dn2 to be live again")
