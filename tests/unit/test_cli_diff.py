"""`hdfs-chaos diff` and `run --system both` on the command line: both reach
harness.diffrun.run_both with the arguments given; a bad release is one line, exit 2."""

from __future__ import annotations

import os

from harness import cli
from harness.reconcile.verdict import Verdict

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCENARIO = os.path.join(ROOT, "scenarios", "replace-never.yaml")


def _capture(monkeypatch, passed=True):
    import harness.diffrun
    calls = []

    def fake(files, backend, results, seed, keep, progress, version):
        calls.append((files, backend, results, seed, version))
        return [Verdict.from_json({"passed": passed})]
    monkeypatch.setattr(harness.diffrun, "run_both", fake)
    return calls


def test_diff_command(monkeypatch, tmp_path):
    calls = _capture(monkeypatch)
    rc = cli.main(["diff", SCENARIO, "--hadoop-version", "3.3.6", "--out", str(tmp_path),
                   "--seed", "4", "--quiet"])
    assert rc == 0
    assert calls == [([SCENARIO], "local", str(tmp_path), 4, "3.3.6")]


def test_run_system_both_is_diff(monkeypatch, tmp_path):
    calls = _capture(monkeypatch, passed=False)
    rc = cli.main(["run", SCENARIO, "--system", "both", "--out", str(tmp_path), "--quiet"])
    assert rc == 1
    assert calls == [([SCENARIO], "local", str(tmp_path), None, None)]


def test_bad_release_and_backend(monkeypatch, capsys):
    calls = _capture(monkeypatch)
    assert cli.main(["diff", SCENARIO, "--hadoop-version", "three"]) == 2
    assert "--hadoop-version 'three' is not a release number" in capsys.readouterr().err
    assert cli.main(["run", SCENARIO, "--system", "both", "--backend", "docker"]) == 2
    assert "local backend only" in capsys.readouterr().err
    assert calls == []


def test_why_a_scenario_is_not_run_on_a_system(tmp_path):
    from harness.diffrun import _why_not
    from harness.scenario import validate_files
    from harness.systems import get_system
    text = open(SCENARIO).read()     # runs on both (its kill names c1.pipeline[1])
    assert "systems:" not in text and "lease.soft-limit" not in text
    only_mini = tmp_path / "only-mini.yaml"
    only_mini.write_text(text.replace("name: replace-never", "name: only-mini")
                         + "systems: [minihdfs]\nsystems_reason: needs racks\n")
    soft = tmp_path / "soft.yaml"    # a soft limit Hadoop cannot take, no systems given
    soft.write_text(text.replace("name: replace-never", "name: soft")
                    .replace("  config:\n", "  hadoop_agent: false\n  config:\n"
                             "    lease.soft-limit: 2s\n    lease.hard-limit: 5s\n"))
    runs = tmp_path / "runs.yaml"    # Hadoop's fixed soft limit, a hard limit it takes
    runs.write_text(text.replace("name: replace-never", "name: runs")
                    .replace("  config:\n", "  config:\n    lease.soft-limit: 60s\n    lease.hard-limit: 60s\n"))
    takeover = os.path.join(ROOT, "scenarios", "second-writer-after-soft-limit.yaml")
    scenarios, issues = validate_files([str(only_mini), str(soft), str(runs), SCENARIO, takeover])
    assert not issues, [str(i) for i in issues]
    hadoop = get_system("hadoop", "3.4.2")
    assert _why_not(scenarios[str(only_mini)], "hadoop", hadoop) == "needs racks"
    assert _why_not(scenarios[str(only_mini)], "minihdfs", hadoop) is None
    assert "hard-codes the soft limit" in _why_not(scenarios[str(soft)], "hadoop", hadoop)
    # a takeover after the soft limit runs on Hadoop with the agent, which sets the limit
    assert _why_not(scenarios[takeover], "hadoop", hadoop) is None
    first_hflush = os.path.join(ROOT, "scenarios", "nn-restart-fails-first-hflush.yaml")
    [sc] = validate_files([first_hflush])[0].values()
    assert "Hadoop places replicas at random" in _why_not(sc, "hadoop", hadoop)
    assert _why_not(scenarios[SCENARIO], "hadoop", hadoop) is None
    assert _why_not(scenarios[str(runs)], "hadoop", hadoop) is None
