"""`hdfs-chaos run` on real runs as a user types it (issue 29): -k picks scenarios,
--fail-fast stops at the first failure, --json puts one object per scenario on stdout and
the result lines on stderr, and `report` of the results folder prints its summary."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.integration

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCENARIO = textwrap.dedent("""\
    name: {name}
    seed: 3
    timeout: 30s
    cluster:
      datanodes: 1
      config: {{dfs.replication: 1, dfs.blocksize: 1MiB, dfs.heartbeat.interval: 300ms}}
    workload:
      - {{id: w1, client: c1, op: write, path: /data/f1, size: 256KiB}}
    expect:
      files:
        /data/f1: {{closed: true, len: {length}}}
""")


def cli(*argv) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "harness.cli", *argv], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=600)


def test_run_k_fail_fast_json_then_report(tmp_path):
    library = tmp_path / "library"
    library.mkdir()
    # in run order: a failing one (its file holds 256 KiB, not 1 MiB), then one never run
    (library / "a-cli-wrong-length.yaml").write_text(
        SCENARIO.format(name="a-cli-wrong-length", length="1MiB"))
    (library / "b-cli-right-length.yaml").write_text(
        SCENARIO.format(name="b-cli-right-length", length="256KiB"))
    (library / "c-other.yaml").write_text(SCENARIO.format(name="c-other", length="256KiB"))
    out = tmp_path / "results"
    done = cli("run", str(library), "-k", "*-cli-*", "--fail-fast", "--json", "--quiet",
               "--out", str(out))
    assert done.returncode == 1, done.stderr
    objects = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(objects) == 1, done.stdout
    (only,) = objects
    assert only["name"] == "a-cli-wrong-length" and only["verdict"] == "fail"
    assert only["failed_checks"] == []
    assert only["unmet_expectations"] == ["/data/f1 len == 1048576 (got 262144)"]
    assert os.path.isdir(only["run_dir"]) and os.path.dirname(only["run_dir"]) == str(out)
    assert "FAIL a-cli-wrong-length" in done.stderr
    assert "--fail-fast: stopped after a failure; 1 scenario not run" in done.stderr
    assert sorted(os.listdir(out)) == [os.path.basename(only["run_dir"])]

    report = cli("report", str(out))
    assert report.returncode == 0, report.stderr
    assert report.stdout == f"1 run: 0 passed, 1 failed; suite report: {out / 'index.html'}\n"
    html = (out / "index.html").read_text()
    assert "unmet: /data/f1 len == 1048576 (got 262144)" in html
