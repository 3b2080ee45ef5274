"""`hdfs-chaos known-bugs` before any cluster starts (harness/knownbugs.py, the CLI):
which scenarios load, which runs the plan holds, and the bad input refused in one line
with exit code 2. The stand-in known bugs are tests/known-bug-corpus/*.yaml."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness import cli
from harness import knownbugs as kbr

CORPUS = Path(__file__).resolve().parent.parent / "known-bug-corpus"


def test_load_known_bugs_reads_every_scenario_with_its_jira():
    bugs = kbr.load_known_bugs(str(CORPUS))
    assert [sc.known_bug.jira for _, sc in bugs] == ["HDFS-99998", "HDFS-99999"]
    only = kbr.load_known_bugs(str(CORPUS), ["HDFS-99999"])
    assert [sc.name for _, sc in only] == ["fake-bug-wrong-length"]


def test_only_a_jira_that_is_not_there_is_refused():
    with pytest.raises(kbr.KnownBugsError, match=r"--only HDFS-1: no such JIRA .*HDFS-99998"):
        kbr.load_known_bugs(str(CORPUS), ["HDFS-1"])


def test_a_scenario_without_known_bug_is_refused(tmp_path):
    shutil.copy(CORPUS / "HDFS-99999.yaml", tmp_path)
    shutil.copy(Path(cli.REPO_ROOT) / "scenarios" / "recover-lease-mid-block.yaml", tmp_path)
    with pytest.raises(kbr.KnownBugsError, match="recover-lease-mid-block.yaml: no known_bug:"):
        kbr.load_known_bugs(str(tmp_path))


def test_two_scenarios_of_one_jira_are_refused(tmp_path):
    text = (CORPUS / "HDFS-99999.yaml").read_text()
    (tmp_path / "a.yaml").write_text(text)
    (tmp_path / "b.yaml").write_text(text.replace("name: fake-bug-wrong-length",
                                                  "name: another"))
    with pytest.raises(kbr.KnownBugsError, match="HDFS-99999 is declared by .*a.yaml already"):
        kbr.load_known_bugs(str(tmp_path))


def test_plan_runs_each_release_n_times_and_the_minihdfs_once():
    bugs = kbr.load_known_bugs(str(CORPUS), ["HDFS-99999"])
    tasks = kbr.plan(bugs, None, 3)
    assert [(t.release, t.repeat) for t in tasks] == [
        ("3.3.6", 1), ("3.3.6", 2), ("3.3.6", 3), ("3.4.2", 1), ("3.4.2", 2), ("3.4.2", 3),
        ("minihdfs", 1)]
    assert [t.folder for t in tasks][::3] == ["hadoop-3.3.6", "hadoop-3.4.2", "minihdfs"]
    # --versions keeps only the releases named; the mini-HDFS still runs
    assert [t.release for t in kbr.plan(bugs, ["3.4.2", "3.2.4"], 1)] == ["3.4.2", "minihdfs"]


def test_plan_leaves_the_minihdfs_out_when_systems_does(tmp_path):
    text = (CORPUS / "HDFS-99999.yaml").read_text()
    text = text.replace("cluster:\n", "cluster:\n  system: hadoop\n")
    text += "systems: [hadoop]\nsystems_reason: a test's stand-in\n"
    (tmp_path / "x.yaml").write_text(text)
    bugs = kbr.load_known_bugs(str(tmp_path))
    assert [t.release for t in kbr.plan(bugs, None, 1)] == ["3.3.6", "3.4.2"]


def test_a_release_not_fetched_is_one_line_naming_setup(tmp_path):
    tasks = kbr.plan(kbr.load_known_bugs(str(CORPUS)), None, 1)
    with pytest.raises(kbr.KnownBugsError) as e:
        kbr.check_runnable(tasks, fetched=lambda r: r != "3.3.6", issues_of=lambda sc, r: [])
    assert str(e.value) == ("Hadoop 3.3.6 not fetched yet: run tools/setup.sh --hadoop 3.3.6 "
                            "(or leave it out with --versions)")
    with pytest.raises(kbr.KnownBugsError, match=r"run tools/setup.sh --hadoop 3.3.6 "
                                                 r"--hadoop 3.4.2 \(or leave them out"):
        kbr.check_runnable(tasks, fetched=lambda r: False, issues_of=lambda sc, r: [])
    kbr.check_runnable(tasks, fetched=lambda r: True, issues_of=lambda sc, r: [])


def test_a_setting_a_release_refuses_is_bad_input():
    tasks = kbr.plan(kbr.load_known_bugs(str(CORPUS), ["HDFS-99999"]), None, 1)
    refuse = lambda sc, r: ["dfs.x: unknown on 3.3.6"] if r == "3.3.6" else []   # noqa: E731
    with pytest.raises(kbr.KnownBugsError, match=r"HDFS-99999.yaml: on hadoop 3.3.6: dfs.x"):
        kbr.check_runnable(tasks, fetched=lambda r: True, issues_of=refuse)


def test_parse_list_takes_commas_and_repeats():
    assert kbr.parse_list(["3.3.6,3.4.2", " 3.2.4 ", "3.3.6"]) == ["3.3.6", "3.4.2", "3.2.4"]
    assert kbr.parse_list(None) == []


@pytest.mark.parametrize("argv, message", [
    (["--versions", "3.3"], "--versions 3.3: not a release number"),
    (["--repeat", "0"], "--repeat 0: give a number of runs"),
    (["--only", "HDFS-5"], "--only HDFS-5: no such JIRA"),
    (["--dir", "/nonexistent/kb"], "/nonexistent/kb: no such folder"),
])
def test_cli_bad_input_exits_2_with_one_line(argv, message, capsys, tmp_path):
    argv = ["known-bugs", "--out", str(tmp_path)] + \
        (["--dir", str(CORPUS)] if "--dir" not in argv else []) + argv
    assert cli.main(argv) == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hdfs-chaos: error: ") and message in err[0]


def test_cli_invalid_scenario_exits_2(tmp_path, capsys):
    (tmp_path / "bad.yaml").write_text("name: bad\nknown_bug: {jira: HDFS-1}\n")
    assert cli.main(["known-bugs", "--dir", str(tmp_path), "--out", str(tmp_path)]) == 2
    assert "bad.yaml" in capsys.readouterr().err


class FakeRuns:
    """harness.runner's run_unverified and verify_outcomes without clusters or Spark: a run
    "fails" with the length expectation where `fail_on` says, and is interrupted at the
    run numbered `interrupt_at`."""

    def __init__(self, fail_on, interrupt_at=None):
        self.fail_on, self.interrupt_at = fail_on, interrupt_at
        self.calls = []

    def run_unverified(self, scenario, backend, results_dir, seed, keep, progress, system,
                       hadoop_version):
        import types
        self.calls.append((scenario.known_bug.jira, system, hadoop_version, results_dir))
        release = hadoop_version or "minihdfs"
        status = "interrupted" if len(self.calls) == self.interrupt_at else "completed"
        return types.SimpleNamespace(status=status, scenario=scenario.name,
                                     run_dir=f"{results_dir}/run{len(self.calls)}",
                                     fails=(scenario.known_bug.jira, release) in self.fail_on)

    def verify_outcomes(self, outcomes, progress=None):
        from harness.reconcile.verdict import Verdict
        return [Verdict.from_json({
            "scenario": o.scenario, "passed": not o.fails, "checks": [],
            "expect": [{"what": "/data/f1 len == 1 (got 2)", "status": "fail"}] if o.fails else []},
            run_dir=o.run_dir) for o in outcomes]


@pytest.fixture
def fake_runs(monkeypatch):
    import harness.runner
    monkeypatch.setattr(kbr, "check_runnable", lambda tasks: None)

    def install(fake):
        monkeypatch.setattr(harness.runner, "run_unverified", fake.run_unverified)
        monkeypatch.setattr(harness.runner, "verify_outcomes", fake.verify_outcomes)
        return fake
    return install


def test_run_known_bugs_groups_the_runs_into_cells(fake_runs, tmp_path, capsys):
    fake = fake_runs(FakeRuns({("HDFS-99999", "3.3.6")}))
    said = []
    code = kbr.run_known_bugs(str(CORPUS), str(tmp_path), None, ["HDFS-99999"], repeat=2,
                              progress=said.append)
    assert code == 0
    assert [(j, s, v, Path(d).name) for j, s, v, d in fake.calls] == [
        ("HDFS-99999", "hadoop", "3.3.6", "hadoop-3.3.6"),
        ("HDFS-99999", "hadoop", "3.3.6", "hadoop-3.3.6"),
        ("HDFS-99999", "hadoop", "3.4.2", "hadoop-3.4.2"),
        ("HDFS-99999", "hadoop", "3.4.2", "hadoop-3.4.2"),
        ("HDFS-99999", "minihdfs", None, "minihdfs")]
    assert said[:2] == ["[1/5] HDFS-99999 on hadoop 3.3.6, run 1 of 2",
                        "[2/5] HDFS-99999 on hadoop 3.3.6, run 2 of 2"]
    assert "[5/5] HDFS-99999 on minihdfs, run 1 of 1" in said
    out = capsys.readouterr().out
    assert "known bugs: 1 JIRA, 3 of 3 cells as declared" in out
    assert (tmp_path / "known-bugs.html").is_file() and (tmp_path / "known-bugs.parquet").is_file()


def test_run_known_bugs_exits_1_when_a_cell_is_not_as_declared(fake_runs, tmp_path, capsys):
    fake_runs(FakeRuns({("HDFS-99999", "3.3.6"), ("HDFS-99999", "minihdfs")}))
    assert kbr.run_known_bugs(str(CORPUS), str(tmp_path), ["3.3.6"], ["HDFS-99999"]) == 1
    out = capsys.readouterr().out
    assert "NO: 1 of 1 runs failed on the mini-HDFS" in out
    assert "3.4.2" not in out.split("JIRA ")[-1]          # --versions left 3.4.2 out


def test_an_interrupted_plan_still_writes_the_matrix(fake_runs, tmp_path, capsys):
    fake_runs(FakeRuns({("HDFS-99999", "3.3.6")}, interrupt_at=2))
    with pytest.raises(KeyboardInterrupt):
        kbr.run_known_bugs(str(CORPUS), str(tmp_path), None, ["HDFS-99999"], repeat=2)
    out = capsys.readouterr().out
    assert "interrupted after 2 of 2 runs" not in out
    assert "not run: interrupted after 0 of 2 runs" in out       # 3.4.2 never ran
    assert (tmp_path / "known-bugs.parquet").is_file()
