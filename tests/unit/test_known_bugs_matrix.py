"""The known-bug matrix (harness/reconcile/knownbugs.py) on hand-made verdicts: what a
cell says for each way the runs can go on an affected, a fixed and an open release, and
the terminal, HTML and Parquet forms of the matrix."""

from __future__ import annotations

import pytest

from harness.reconcile import knownbugs as kb
from harness.reconcile.verdict import Verdict
from harness.scenario.model import KnownBug

V = Verdict.from_json   # a verdict from its verdict.json form

BUG = KnownBug(jira="HDFS-16146", bug="no replacement DataNode in the close stage",
               affects=("3.2.4", "3.3.6"), fixed=("3.4.2",), fixed_in="3.4.0 (PR 3247)",
               symptom=("D2", "/data/f1 closed"))
OPEN = KnownBug(jira="HDFS-17430", bug="recovery keeps a stale DataNode",
                affects=("3.4.2",), fixed=(), symptom=("/data/f1 closed",))


def passed(run_dir: str = "r") -> Verdict:
    return V({"passed": True, "run_dir": run_dir,
            "checks": [{"id": "D2", "status": "pass", "evidence": []}],
            "expect": [{"what": "/data/f1 closed", "status": "pass"}]})


def failed(checks=(), unmet=(), run_dir: str = "r", **extra) -> Verdict:
    """A failed verdict: checks `checks` failed (with one evidence row each), expectations
    `unmet` not met (with one evidence item each)."""
    return V({"passed": False, "run_dir": run_dir,
            "checks": [{"id": c, "status": "fail",
                        "evidence": [{"ts": 1.0, "node": "c1", "why": f"{c} saw it"}]}
                       for c in checks] + [{"id": "I1", "status": "pass", "evidence": []}],
            "expect": [{"what": u, "status": "fail",
                        "evidence": [{"what": "final state: open", "brief": "final open"}]}
                       for u in unmet], **extra})


def test_affected_release_failing_with_the_symptom_is_as_declared():
    c = kb.cell(BUG, "3.3.6", [failed(checks=["D2"]), failed(unmet=["/data/f1 closed"])])
    assert (c.expected, c.runs, c.failed, c.matched) == ("fail", 2, 2, 2)
    assert c.as_declared and c.why == ""
    assert c.got == "2 of 2 failed, 2 with the symptom"
    assert c.symptoms_seen == ["D2", "/data/f1 closed"]
    # the failing check and expectation, each with its evidence, marked as the symptom
    assert c.failures == ["check D2 [symptom]: D2 saw it",
                          "unmet: /data/f1 closed [symptom]: final open"]


def test_affected_release_failing_for_another_reason_is_not_as_declared():
    c = kb.cell(BUG, "3.2.4", [failed(checks=["D2"]), failed(checks=["B3"])])
    assert not c.as_declared
    assert (c.failed, c.matched) == (2, 1)
    assert "1 of 2 runs failed, but not for the JIRA's reason" in c.why
    assert "D2, /data/f1 closed not among their failures" in c.why
    assert "check B3: B3 saw it" in c.failures


def test_the_failures_that_show_the_symptom_come_first():
    c = kb.cell(BUG, "3.3.6", [failed(checks=["I1x", "D2"])])
    assert c.failures == ["check D2 [symptom]: D2 saw it", "check I1x: I1x saw it"]
    # on a fixed release nothing is a symptom: the failures keep their order
    c = kb.cell(BUG, "3.4.2", [failed(checks=["I1x", "D2"])])
    assert c.failures == ["check I1x: I1x saw it", "check D2: D2 saw it"]


def test_symptom_is_a_failed_check_id_or_the_start_of_an_unmet_expectation():
    found = kb.failures(failed(checks=["D20"], unmet=["/data/f1 closed (got open)"]))
    assert kb.symptoms_in(found, ["D2"]) == []              # an id is matched whole
    assert kb.symptoms_in(found, ["/data/f1 closed"]) == ["/data/f1 closed"]
    assert kb.symptoms_in(found, ["/data/f1 len"]) == []
    # a met expectation is no symptom, whatever its text
    ok = V({"passed": False, "expect": [{"what": "/data/f1 closed", "status": "pass"}]})
    assert kb.symptoms_in(kb.failures(ok), ["/data/f1 closed"]) == []


def test_a_broken_check_fails_the_run_but_shows_no_symptom():
    v = V({"passed": False, "checks": [{"id": "D2", "status": "error", "evidence": [],
                                        "reason": None}]})
    c = kb.cell(BUG, "3.3.6", [v])
    assert not c.as_declared and c.matched == 0
    assert c.failures == ["check D2 broke"]


def test_a_run_error_is_a_failure_without_the_symptom():
    v = failed(run_status="error", run_errors=["BackendError: the NameNode did not start"])
    c = kb.cell(BUG, "3.3.6", [v])
    assert not c.as_declared and "not for the JIRA's reason" in c.why
    assert c.failures == ["run error: BackendError: the NameNode did not start"]


def test_a_failed_verdict_naming_no_reason_says_so():
    c = kb.cell(BUG, "3.4.2", [V({"passed": False})])
    assert c.failures == ["failed, naming no check or expectation"]


def test_fixed_release_that_fails_is_not_as_declared():
    c = kb.cell(BUG, "3.4.2", [passed(), failed(checks=["D2"])])
    assert c.expected == "pass" and not c.as_declared
    assert c.why == "1 of 2 runs failed on a fixed release"
    assert c.got == "1 of 2 failed"          # no symptom count where a pass is expected
    assert c.symptoms_seen == []


def test_fixed_release_that_passes_is_as_declared():
    c = kb.cell(BUG, "3.4.2", [passed("a"), passed("b")])
    assert c.as_declared and c.got == "0 of 2 failed" and c.failures == []
    assert c.run_dirs == ["a", "b"]


def test_flaky_four_of_five_on_an_affected_release_is_not_as_declared():
    runs = [failed(checks=["D2"]) for _ in range(4)] + [passed()]
    c = kb.cell(BUG, "3.3.6", runs)
    assert not c.as_declared
    assert c.got == "4 of 5 failed, 4 with the symptom"
    assert c.why == "1 of 5 runs passed: the bug did not show every time"


def test_affected_release_where_the_bug_never_shows():
    c = kb.cell(BUG, "3.3.6", [passed()] * 3)
    assert not c.as_declared and c.why == "3 of 3 runs passed: the bug did not show"


def test_minihdfs_must_pass_as_the_fixed_release():
    c = kb.cell(BUG, kb.MINIHDFS, [failed(checks=["D2"])])
    assert c.expected == "pass" and c.system == "minihdfs" and not c.as_declared
    assert "the mini-HDFS (it behaves as the fixed release)" in c.why
    assert kb.cell(BUG, kb.MINIHDFS, [passed()]).as_declared


def test_open_bug_expects_a_failure_and_says_open():
    c = kb.cell(OPEN, "3.4.2", [failed(unmet=["/data/f1 closed"])])
    assert c.open and c.expected == "fail" and c.expected_text == "fail (open)"
    assert c.as_declared
    assert kb.cell(OPEN, kb.MINIHDFS, [passed()]).expected_text == "pass"


def test_a_cell_without_runs_is_not_as_declared():
    c = kb.cell(BUG, "3.3.6", [], not_run="interrupted after 0 of 5 runs")
    assert not c.as_declared and c.got == "not run"
    assert c.why == "not run: interrupted after 0 of 5 runs"
    assert not kb.cell(BUG, "3.3.6", []).as_declared


def test_a_release_the_bug_does_not_name_is_refused():
    with pytest.raises(ValueError, match="names no release 3.3.4"):
        kb.cell(BUG, "3.3.4", [passed()])


def test_the_matrix_is_as_declared_only_when_every_cell_is():
    good = kb.cells([(BUG, "3.3.6", [failed(checks=["D2"])], None),
                     (BUG, "3.4.2", [passed()], None)])
    assert kb.all_as_declared(good)
    assert not kb.all_as_declared(good + kb.cells([(BUG, "3.2.4", [passed()], None)]))
    assert not kb.all_as_declared([])


def test_format_matrix_shows_each_cell_its_failures_and_a_count():
    matrix = kb.cells([(BUG, "3.3.6", [failed(checks=["D2"])], None),
                       (BUG, "3.4.2", [failed(checks=["B3"])], None),
                       (BUG, kb.MINIHDFS, [passed()], None)])
    text = kb.format_matrix(matrix)
    lines = text.splitlines()
    assert lines[0].split() == ["JIRA", "release", "expected", "got", "as", "declared"]
    assert lines[1].split()[:3] == ["HDFS-16146", "3.3.6", "fail"] and lines[1].endswith("yes")
    assert "check D2 [symptom]: D2 saw it" in lines[2]
    assert "NO: 1 of 1 runs failed on a fixed release" in lines[3]
    assert "check B3: B3 saw it" in lines[4]
    assert lines[-1] == "known bugs: 1 JIRA, 2 of 3 cells as declared"


def test_release_order_puts_versions_in_numeric_order_and_minihdfs_last():
    releases = ["3.10.0", kb.MINIHDFS, "3.4.2", "3.2.4"]
    assert sorted(releases, key=kb.release_order) == ["3.2.4", "3.4.2", "3.10.0", kb.MINIHDFS]


def test_write_matrix_writes_html_and_parquet(tmp_path):
    import pandas as pd
    run = tmp_path / "hadoop-3.3.6" / "run1"
    run.mkdir(parents=True)
    (run / "report.html").write_text("<html></html>")
    matrix = kb.cells([(BUG, "3.3.6", [failed(checks=["D2"], run_dir=str(run))], None),
                       (BUG, "3.4.2", [failed(unmet=["/data/f1 closed <b>"])], None),
                       (OPEN, "3.4.2", [passed()], None)])
    html_path = kb.write_matrix(matrix, str(tmp_path))
    html = open(html_path, encoding="utf-8").read()
    assert "1 of 3 cells as declared" in html
    assert 'href="hadoop-3.3.6/run1/report.html"' in html
    assert "/data/f1 closed &lt;b&gt;" in html            # evidence is escaped
    assert "fail (open)" in html and "3 of 3 runs passed" not in html
    t = pd.read_parquet(tmp_path / "known-bugs.parquet")
    assert list(t.jira) == ["HDFS-16146", "HDFS-16146", "HDFS-17430"]
    assert list(t.as_declared) == [True, False, False]
    row = t.iloc[0]
    assert row["expected"] == "fail" and row["runs"] == 1 and row["symptom_matched"] == 1
    assert list(row["failures"]) == ["check D2 [symptom]: D2 saw it"]
    assert list(row["symptoms_seen"]) == ["D2"]
    assert t.iloc[2]["why"] == "1 of 1 runs passed: the bug did not show"
