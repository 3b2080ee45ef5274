"""`hdfs-chaos run --system/--hadoop-version`: passed to the runner, checked first."""

from __future__ import annotations

import sys
import types

from harness import cli
from harness.reconcile.verdict import Verdict

def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def fake_runner(monkeypatch, calls):
    def run_scenarios(files, backend, results_dir, seed, keep, progress, **kw):
        calls.append(kw)
        return [Verdict.from_json({"passed": True})]
    module = types.ModuleType("harness.runner")
    module.run_scenarios = run_scenarios
    monkeypatch.setitem(sys.modules, "harness.runner", module)


def test_hadoop_version_implies_the_hadoop_system(capsys, monkeypatch, tmp_path):
    calls = []
    fake_runner(monkeypatch, calls)
    sc = tmp_path / "s.yaml"
    sc.write_text("name: s\nworkload: [{id: w1, client: c1, op: write, path: /f, size: 1MiB}]\n")
    code, _, err = run(capsys, "run", str(sc), "--hadoop-version", "3.3.6", "--quiet")
    assert code == 0, err
    assert calls == [{"system": "hadoop", "hadoop_version": "3.3.6"}]


def test_no_system_flag_leaves_the_call_as_before(capsys, monkeypatch, tmp_path):
    calls = []
    fake_runner(monkeypatch, calls)
    sc = tmp_path / "s.yaml"
    sc.write_text("name: s\nworkload: [{id: w1, client: c1, op: write, path: /f, size: 1MiB}]\n")
    assert run(capsys, "run", str(sc), "--quiet")[0] == 0
    assert calls == [{}]


def test_a_scenario_hadoop_cannot_run_is_refused_before_anything_starts(capsys, monkeypatch,
                                                                       tmp_path):
    calls = []
    fake_runner(monkeypatch, calls)
    sc = tmp_path / "s.yaml"
    sc.write_text("name: s\ncluster: {config: {lease.soft-limit: 2s, lease.hard-limit: 5s}}\n"
                  "workload: [{id: w1, client: c1, op: write, path: /f, size: 1MiB}]\n")
    assert run(capsys, "run", str(sc), "--quiet")[0] == 0    # fine on the mini-HDFS
    from harness.systems.hadoop import AGENT_ENV
    monkeypatch.setenv(AGENT_ENV, "")   # the flag sets it: put back as it was afterwards
    code, _, err = run(capsys, "run", str(sc), "--system", "hadoop", "--no-hadoop-agent")
    assert code == 2 and calls == [{}]
    assert "hard-codes the soft limit" in err and err.count("\n") == 1


def test_a_bad_release_is_one_line(capsys, monkeypatch, tmp_path):
    calls = []
    fake_runner(monkeypatch, calls)
    sc = tmp_path / "s.yaml"
    sc.write_text("name: s\nworkload: [{id: w1, client: c1, op: write, path: /f, size: 1MiB}]\n")
    code, _, err = run(capsys, "run", str(sc), "--hadoop-version", "latest")
    assert code == 2 and calls == []
    assert "is not a release number" in err and err.count("\n") == 1
