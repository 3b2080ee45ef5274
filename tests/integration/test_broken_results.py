"""Broken result folders given to `hdfs-chaos verify` and `report` (issue 20): one line
naming the problem and the fix, a non-zero exit, never a traceback. The folders are
damaged copies of a real run's folder; the real one still verifies (the checks before
the JVM refuse nothing good)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from harness.runner import run_unverified

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCENARIO = textwrap.dedent("""\
    name: broken-results-source
    seed: 3
    timeout: 30s
    cluster:
      datanodes: 1
      config: {dfs.replication: 1, dfs.blocksize: 1MiB, dfs.heartbeat.interval: 300ms}
    workload:
      - {id: w1, client: c1, op: write, path: /data/f1, size: 256KiB}
    expect:
      checks: all
""")


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("broken-results")
    path = base / "s.yaml"
    path.write_text(SCENARIO)
    outcome = run_unverified(str(path), results_dir=str(base / "results"))
    assert outcome.status == "completed", outcome.errors
    with open(os.path.join(outcome.run_dir, "verdict.json"), "w") as f:
        json.dump({"scenario": "broken-results-source", "run_id": outcome.run_id,
                   "passed": True, "checks": [], "expect": [], "metrics": {}}, f)
    return outcome.run_dir


def _damage(run: str, dest: str, how: str) -> str:
    shutil.copytree(run, dest)
    if how == "empty folder":
        shutil.rmtree(dest)
        os.makedirs(dest)
    elif how == "no events folder":
        shutil.rmtree(os.path.join(dest, "events"))
    elif how == "events folder empty":
        for n in os.listdir(os.path.join(dest, "events")):
            os.unlink(os.path.join(dest, "events", n))
    elif how == "no scenario.yaml":
        os.unlink(os.path.join(dest, "scenario.yaml"))
    elif how == "scenario.yaml broken":
        with open(os.path.join(dest, "scenario.yaml"), "a") as f:
            f.write("\nfaults: [{kind: partitoin}]\n")
    elif how == "scenario.yaml binary":
        with open(os.path.join(dest, "scenario.yaml"), "wb") as f:
            f.write(bytes(range(256)))
    elif how == "final_state.json not JSON":
        with open(os.path.join(dest, "final_state.json"), "w") as f:
            f.write('{"files": [1, 2,')
    elif how == "final_state.json a list":
        with open(os.path.join(dest, "final_state.json"), "w") as f:
            f.write("[]")
    elif how == "verdict.json not JSON":
        with open(os.path.join(dest, "verdict.json"), "w") as f:
            f.write("{oops")
    elif how == "a file, not a folder":
        shutil.rmtree(dest)
        with open(dest, "w") as f:
            f.write("x")
    else:
        raise ValueError(how)
    return dest


DAMAGE = ["empty folder", "no events folder", "events folder empty", "no scenario.yaml",
          "scenario.yaml broken", "scenario.yaml binary", "final_state.json not JSON",
          "final_state.json a list", "verdict.json not JSON", "a file, not a folder"]


def cli(*argv) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("HDFS_CHAOS_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "harness.cli", *argv], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120)


@pytest.mark.parametrize("command", ["verify", "report"])
@pytest.mark.parametrize("how", DAMAGE)
def test_a_broken_result_folder_gets_one_line_and_a_nonzero_exit(real_run, tmp_path, how,
                                                                  command):
    broken = _damage(real_run, str(tmp_path / os.path.basename(real_run)), how)
    extra = ["--out", str(tmp_path / "report")] if command == "report" else []
    done = cli(command, broken, *extra)
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode != 0, f"{how}: exit 0 ({done.stdout} {done.stderr})"
    assert "Traceback" not in done.stderr, f"{how}: {done.stderr[-1500:]}"
    assert len(lines) == 1 and lines[0].startswith("hdfs-chaos: error: "), (how, lines)
    print(f"{command} [{how}]: {lines[0]}")


def test_the_intact_folder_passes_the_checks(real_run):
    from harness.rundir import check_run_dir
    assert check_run_dir(real_run) is None
