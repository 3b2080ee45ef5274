"""`hdfs-chaos spark up|status|down` with Spark's real Connect server (issue 33): a
verification through the server gives the same verdicts as one in a Spark of its own,
on the verifier's hand-written cases (passing, failing and skipped checks), and `down`
leaves no process behind."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "verifier"))

# failing, passing and skipping checks of several kinds, and a torn log (I1)
CASES = ("happy", "L1-two-writers", "B2-max-length", "P4-no-update", "I1-seq-lost-and-repeated",
         "H1-complete-without-reports", "D1-lost-hflush", "L1-no-leases")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _statuses(run_dir: str) -> dict[str, str]:
    with open(os.path.join(run_dir, "verdict.json")) as f:
        verdict = json.load(f)
    return {"passed": str(verdict["passed"]),
            **{c["id"]: c["status"] for c in verdict["checks"]}}


def _verdict(run_dir: str) -> dict:
    with open(os.path.join(run_dir, "verdict.json")) as f:
        return json.load(f)


# verifies the runs given through HDFS_CHAOS_SPARK_REMOTE and prints how many plans the
# client sent the server to execute (queries, and commands such as a view or checkpoint),
# then how many schemas, DDL texts and file lists it asked the server for (AnalyzePlan)
_COUNT_REQUESTS = """
import sys
from pyspark.sql.connect.client.core import SparkConnectClient as C
n = {"execute": 0, "schema": 0, "ddl_parse": 0, "input_files": 0}
def counted(fn, kind=None):
    def call(self, *a, **k):
        key = kind or (a[0] if a else k.get("method", ""))
        n[key] = n.get(key, 0) + 1
        return fn(self, *a, **k)
    return call
C._execute_and_fetch = counted(C._execute_and_fetch, "execute")
C._execute = counted(C._execute, "execute")
C._analyze = counted(C._analyze)
from harness.reconcile.api import verify_runs
verify_runs(sys.argv[1:])
print(n["execute"], n["schema"], n["ddl_parse"], n["input_files"])
"""


@pytest.fixture()
def cli(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               XDG_CACHE_HOME=str(tmp_path / "cache"))
    env.pop("HDFS_CHAOS_SPARK_REMOTE", None)

    def run(*argv, timeout=600) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "harness.cli", *argv],
                              capture_output=True, text=True, env=env, cwd=ROOT,
                              timeout=timeout)
    yield run
    run("spark", "down", timeout=60)    # whatever the test did


def test_verdicts_through_the_server_are_the_local_ones(cli, tmp_path):
    pytest.importorskip("grpc", reason="the Spark Connect client: pip install 'pyspark[connect]'")
    from cases import CASES as ALL
    names = [c for c in CASES if c in ALL]
    assert len(names) == len(CASES), sorted(set(CASES) - set(ALL))
    local_dirs = [ALL[c]().write(str(tmp_path / "local")) for c in names]
    remote_dirs = [ALL[c]().write(str(tmp_path / "remote")) for c in names]

    done = cli("spark", "status")
    assert done.returncode == 1 and done.stdout.startswith("down"), done.stdout
    port = _free_port()
    done = cli("spark", "up", "--port", str(port), "--no-warm")
    assert done.returncode == 0, done.stderr
    assert f"up at sc://127.0.0.1:{port}" in done.stdout
    done = cli("spark", "status")
    assert done.returncode == 0 and f"sc://127.0.0.1:{port}" in done.stdout, done.stdout
    pid = int(done.stdout.split("(pid ")[1].split(",")[0])

    local = cli("verify", "--remote", "off", *local_dirs)
    assert local.returncode == 1, local.stderr          # cases with failing checks
    remote = cli("verify", *remote_dirs)                # the server, found by its state
    assert remote.returncode == 1, remote.stderr
    for name, a, b in zip(names, local_dirs, remote_dirs):
        assert _statuses(a) == _statuses(b), name
        # evidence too: through the server each check is a DataFrame query of its own
        # (checks._run_batched), on a local session a statement over temporary views
        assert _verdict(a) == _verdict(b), name
    # a verification through the server is one request per check and per derived table,
    # not six per check (some 140 execute requests on one recorded run before, 60 now)
    count = subprocess.run(
        [sys.executable, "-c", _COUNT_REQUESTS, *remote_dirs[:1]], capture_output=True,
        text=True, cwd=ROOT, timeout=600,
        env=dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
                 HDFS_CHAOS_SPARK_REMOTE=f"sc://127.0.0.1:{port}"))
    assert count.returncode == 0, count.stderr
    executed, schemas, ddl, files = map(int, count.stdout.split()[-4:])
    assert executed <= 80, count.stdout
    # the columns a check's join needs are asked for once per join, metrics name their
    # own, and createDataFrame gets a StructType (12 schema and 1 DDL request before);
    # the logs' file names are asked for once (3 times before: the load, log_stats, I1),
    # final_state.json's once
    assert schemas <= 8 and ddl == 0 and files <= 2, count.stdout
    # the remote verify ran no JVM of its own: it wrote no Spark log beside the runs
    assert os.path.exists(os.path.join(tmp_path, "local", "spark.log"))
    assert not os.path.exists(os.path.join(tmp_path, "remote", "spark.log"))

    done = cli("spark", "down")
    assert done.returncode == 0 and "stopped" in done.stdout
    from hdfs_contract.procs import pid_alive
    assert not pid_alive(pid)      # gone, or a zombie its reaper has not collected yet
    assert cli("spark", "status").returncode == 1


def test_an_unreachable_remote_is_one_line(cli, tmp_path):
    from cases import CASES as ALL
    run_dir = ALL["happy"]().write(str(tmp_path / "runs"))
    done = cli("verify", "--remote", f"sc://127.0.0.1:{_free_port()}", run_dir, timeout=300)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot reach the Spark Connect server" in lines[0], done.stderr
    done = cli("verify", "--remote", "localhost:15002", run_dir)
    assert done.returncode == 2 and "not a Spark Connect URL" in done.stderr
