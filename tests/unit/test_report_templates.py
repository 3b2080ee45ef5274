"""The HTML reports' templates (harness/reconcile/templates), rendered from hand-written
verdicts without Spark: exercised and skipped checks, fail and error statuses, the
expect items, I1's evidence, and escaping of what the logs contain."""

from __future__ import annotations

import json
import os
from html.parser import HTMLParser

import pytest

pytest.importorskip("jinja2")

from harness.reconcile.checks import CHECK_IDS  # noqa: E402
from harness.reconcile.report import render_run_html  # noqa: E402
from harness.reconcile.suite import checks_table, write_suite_report  # noqa: E402
from harness.reconcile.templating import environment, exercised  # noqa: E402
from harness.reconcile.verdict import Verdict  # noqa: E402


def _check(cid, status, *evidence):
    return {"id": cid, "status": status, "evidence": list(evidence)}


def verdict(run_id="r1", scenario="pipeline-replace", with_exercised=True, **extra):
    v = {
        "scenario": scenario, "run_id": run_id, "passed": False,
        "checks": [
            _check("I1", "fail", {"why": "dn2 started (harness.node.start) but left no log",
                                  "node": "dn2", "missing": "events/dn2.jsonl"},
                   {"why": "seq gap in c1's log", "node": "c1", "after": 41, "next": 57}),
            _check("P1", "pass"),
            _check("P3", "skip"),
            _check("P7", "skip"),
            _check("B6", "error", {"why": "AnalysisException: <column> not found"}),
            _check("D2", "fail", {"why": "bytes differ at offset 4096 of <root>/a&b",
                                  "path": "/x<y>", "expected": "<crc 1>"}),
        ],
        "expect": [{"what": "P3 expected but nothing exercised it", "status": "fail"},
                   {"what": "/f closed", "status": "pass"}],
        "metrics": {"bytes_written": 4096, "recovery_latencies_s": {"pipeline": [0.5]},
                    "note": "<b>not bold</b>"},
    }
    if with_exercised:
        v["exercised"] = ["I1", "P1", "D2"]
    v.update(extra)
    return Verdict.from_json(v)


class _Page(HTMLParser):
    """Each table row as "cell | cell | ..." (a cell's text with its whitespace
    collapsed), and every tag seen (to see that no injected tag exists)."""

    def __init__(self):
        super().__init__()
        self.rows, self.tags, self._row = [], [], None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "tr":
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._row.append("")

    def handle_endtag(self, tag):
        if tag == "tr" and self._row is not None:
            self.rows.append(" | ".join(" ".join(c.split()) for c in self._row))
            self._row = None

    def handle_data(self, data):
        if self._row:
            self._row[-1] += data


def _page(text):
    p = _Page()
    p.feed(text)
    return p


def test_autoescape_is_on_for_every_template():
    env = environment()
    assert env.autoescape is True
    for name in ("report.html.j2", "index.html.j2"):
        assert env.get_template(name).render  # they load from the package


def test_run_report_shows_exercised_skipped_failed_and_errored(tmp_path):
    html = render_run_html(verdict(), str(tmp_path))
    rows = _page(html).rows
    assert "exercised (3 of 6) | I1, P1, D2 | found cases to judge: a pass here proved something" \
        in rows
    assert any(r.startswith("skipped (2) | P3, P7") for r in rows), rows
    assert any(r.startswith("failed (2) | I1, D2") for r in rows), rows
    assert any(r.startswith("error (1) | B6") for r in rows), rows
    # the checks table says per check whether it was exercised
    cells = {r.split(" | ")[0]: r.split(" | ")[2:4] for r in rows}
    assert cells["P1"] == ["pass", "yes"] and cells["I1"] == ["fail", "yes"], cells
    assert cells["P3"] == ["skip", "no"] and cells["B6"] == ["error", "no"], cells
    assert "P3 expected but nothing exercised it | fail | " in rows
    assert "<tr class=\"fail\"><td>P3 expected but nothing exercised it</td>" in html


def test_run_report_shows_i1_evidence(tmp_path):
    html = render_run_html(verdict(), str(tmp_path))
    assert "dn2 started (harness.node.start) but left no log" in html
    assert "events/dn2.jsonl" in html and "seq gap in c1&#39;s log" in html
    assert "<summary>2 rows</summary>" in html


def test_run_report_escapes_what_the_logs_contain(tmp_path):
    html = render_run_html(verdict(), str(tmp_path))
    page = _page(html)
    assert "<column>" not in html and "&lt;column&gt;" in html
    assert "&lt;root&gt;/a&amp;b" in html and "/x&lt;y&gt;" in html
    assert "&lt;b&gt;not bold&lt;/b&gt;" in html
    assert "b" not in page.tags and "column" not in page.tags and "y" not in page.tags


def test_run_report_without_an_exercised_list_derives_it(tmp_path):
    v = verdict(with_exercised=False)
    assert exercised(v) == ["I1", "P1", "D2"]      # pass or fail; not skip, not error
    rows = _page(render_run_html(v, str(tmp_path))).rows
    assert any(r.startswith("exercised (3 of 6) | I1, P1, D2") for r in rows), rows


def test_run_report_of_a_run_that_did_not_complete(tmp_path):
    v = verdict(checks=[], expect=[], metrics={}, error="the run was interrupted",
                run_status="interrupted", run_errors=["SIGTERM"], exercised=[])
    text = render_run_html(v, str(tmp_path))
    assert "FAILED" in text and "the run was interrupted" in text
    assert "run interrupted: SIGTERM" in text
    assert "exercised (0 of 0)" in text and "Expectations" not in text


def test_run_report_samples_malformed_lines(tmp_path):
    os.makedirs(tmp_path / "events")
    (tmp_path / "events" / "dn1.jsonl").write_text(
        '{"ts": 1.0, "node": "dn1", "event": "dn.start", "seq": 0}\n<torn line\n')
    v = verdict(metrics={"malformed_lines": 1})
    html = render_run_html(v, str(tmp_path))
    assert "Malformed log lines: 1" in html and "dn1.jsonl: &lt;torn line" in html


def test_suite_index_shows_exercised_checks_per_scenario_and_run(tmp_path):
    runs = tmp_path / "runs"
    a = verdict("r1", passed=True)
    b = verdict("r2", exercised=["I1", "D2"])          # P1 exercised in one run of two
    c = verdict("r3", scenario="<script>alert(1)</script>", with_exercised=False)
    os.makedirs(runs / "r1")
    (runs / "r1" / "report.html").write_text("x")
    index = write_suite_report([a, b, c], str(tmp_path / "suite"), {"r1": str(runs / "r1")})
    html = open(index).read()
    page = _page(html)
    assert "script" not in page.tags and "&lt;script&gt;" in html
    rows = page.rows
    head = next(r for r in rows if r.startswith("scenario | runs | passed"))
    # the verifier's checks, then any other id the verdicts hold, then the exercised list
    others = sorted({"I1", "P7", "B6"} - set(CHECK_IDS))
    assert head.split(" | ")[3:] == CHECK_IDS + others + ["exercised"], head
    order = CHECK_IDS + others
    row = next(r for r in rows if r.startswith("pipeline-replace |")).split(" | ")
    assert row[1:3] == ["2", "1/2"], row
    cells = dict(zip(order, row[3:]))
    assert cells["P1"] == "2/2 pass" and cells["P3"] == "skip" and cells["B6"] == "2/2 error"
    assert cells["I1"] == "2/2 fail" and cells["D2"] == "2/2 fail", cells
    want = sorted(["I1", "P1", "D2"], key=order.index)
    shown = [f"{c} (1/2)" if c == "P1" else c for c in want]
    assert row[-1] == f"3/{len(order)}: " + ", ".join(shown), row
    unmet = "unmet: P3 expected but nothing exercised it"
    assert f"r1 | pipeline-replace | pass | 3/6: I1, P1, D2 | I1, B6, D2; {unmet}" in rows, rows
    assert f"r2 | pipeline-replace | fail | 2/6: I1, D2 | I1, B6, D2; {unmet}" in rows, rows
    assert '<a href="../runs/r1/report.html">r1</a>' in html
    table = checks_table([a, b])
    assert table.loc[(table.run_id == "r2") & (table.check == "P1"), "exercised"].item() is False
    assert table.loc[(table.run_id == "r1") & (table.check == "P1"), "exercised"].item() is True


def test_templates_ship_with_the_package():
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "pyproject.toml")) as f:
        text = f.read()
    assert "reconcile/templates/*.html.j2" in text and '"jinja2' in text
    here = os.path.join(os.path.dirname(__file__), "..", "..", "harness", "reconcile",
                        "templates")
    assert sorted(n for n in os.listdir(here) if n.endswith(".j2")) == \
        ["diff.html.j2", "index.html.j2", "known-bugs.html.j2", "report.html.j2"]
    json.dumps(verdict().to_json())    # the sample is what verdict.json holds


def test_suite_index_lists_failures_first_with_words_and_unmet_expectations(tmp_path):
    good = verdict("r1", scenario="a-good", passed=True, checks=[_check("P1", "pass")],
                   expect=[{"what": "/f closed", "status": "pass"}], with_exercised=False)
    bad = verdict("r2", scenario="b-bad", checks=[_check("P1", "pass")], with_exercised=False,
                  expect=[{"what": "/data/f1 length 1 MiB, got 0", "status": "fail"}])
    broken = verdict("r3", scenario="c-broken", checks=[], expect=[], with_exercised=False,
                     error="the run was interrupted")
    html = open(write_suite_report([good, bad, broken], str(tmp_path))).read()
    rows = _page(html).rows
    scenario_rows = [r.split(" | ")[0] for r in rows
                     if r.split(" | ")[0] in ("a-good", "b-bad", "c-broken")]
    assert scenario_rows[:3] == ["b-bad", "c-broken", "a-good"]        # failures first
    runs = [r for r in rows if r.startswith(("r1 |", "r2 |", "r3 |"))]
    assert runs == [
        "r2 | b-bad | fail | 1/1: P1 | unmet: /data/f1 length 1 MiB, got 0",
        "r3 | c-broken | fail | 0/0: | the run was interrupted",
        "r1 | a-good | pass | 1/1: P1 | "], runs
    assert "True" not in html and "False" not in html
    assert "3 runs, 1 passed, 2 failed" in html


def test_report_leaves_the_runs_reports_alone_unless_asked(tmp_path):
    pytest.importorskip("pyspark")
    from harness.reconcile.api import build_suite_report
    runs = []
    for rid, has_report in (("r1", True), ("r2", False)):
        folder = tmp_path / rid
        os.makedirs(folder / "events")
        (folder / "events" / "nn.jsonl").write_text("")
        with open(folder / "verdict.json", "w") as f:
            json.dump(verdict(rid, checks=[_check("P1", "pass")], passed=True).to_json(), f)
        if has_report:
            (folder / "report.html").write_text("kept")
        runs.append(str(folder))
    build_suite_report(runs, str(tmp_path / "suite"))
    assert (tmp_path / "r1" / "report.html").read_text() == "kept"
    assert "r2" in (tmp_path / "r2" / "report.html").read_text()   # a missing one is written
    build_suite_report(runs, str(tmp_path / "suite"), rewrite_runs=True)
    assert "r1" in (tmp_path / "r1" / "report.html").read_text()
