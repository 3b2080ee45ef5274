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


def _span(run_dir: str) -> tuple[float, float]:
    """When a run's harness started and ended it (events/harness.jsonl)."""
    with open(os.path.join(run_dir, "events", "harness.jsonl")) as f:
        events = [json.loads(line) for line in f if line.strip()]
    return (next(e["ts"] for e in events if e["event"] == "harness.run.start"),
            next(e["ts"] for e in events if e["event"] == "harness.run.end"))


def test_run_two_library_scenarios_with_two_workers(tmp_path):
    out = tmp_path / "results"
    names = ["setup-first-bad-link", "replace-never"]
    done = cli("run", *names, "--workers", "2", "--json", "--out", str(out))
    assert done.returncode == 0, done.stderr
    objects = [json.loads(line) for line in done.stdout.splitlines()]
    assert [o["name"] for o in objects] == names                  # the order given
    assert [o["verdict"] for o in objects] == ["pass", "pass"], done.stderr
    assert len({o["run_dir"] for o in objects}) == 2
    assert all(os.path.dirname(o["run_dir"]) == str(out) for o in objects)
    # they ran at once, each cluster on its own ports (a clash fails a run)
    (start1, end1), (start2, end2) = (_span(o["run_dir"]) for o in objects)
    assert max(start1, start2) < min(end1, end2), "the runs did not overlap"
    # progress lines are whole lines, each led by its scenario's name
    progress = [line for line in done.stderr.splitlines()
                if not line.startswith(("PASS ", "FAIL ", "verifying "))]
    assert progress and all(line.split(":")[0] in names for line in progress), done.stderr
    assert [line.split()[1] for line in done.stderr.splitlines()
            if line.startswith(("PASS ", "FAIL "))] == names
