"""A failed run explains itself: the events behind an expectation (reconcile.evidence),
the "Why it failed" and "Run it again" parts of report.html, the terminal's FAIL line and
the JUnit properties, from hand-made run folders and verdicts (no Spark)."""

from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("jinja2")

from harness.reconcile import evidence  # noqa: E402
from harness.reconcile.report import render_run_html, why_it_failed  # noqa: E402
from harness.reconcile.verdict import Verdict  # noqa: E402

T0 = 1_700_000_000.0
C1, C2 = "DFSClient_c1_1", "DFSClient_c2_2"
BLOCK = 1073741825


def ev(t, node, event, **fields):
    return {"ts": T0 + t, "node": node, "event": event, **fields}


def fencing_events():
    """The issue's run: c2's recoverLease at +5.0 s starts recovery 1002 (primary dn3),
    which never commits; its retry at +6.0 s starts 1003 (primary dn2), committed at
    +6.6 s; the file closes at +6.7 s."""
    return [
        ev(0.0, "harness", "harness.run.start", scenario="recover-lease-fencing", seed=17),
        ev(1.0, "c1", "client.start", holder=C1),
        ev(1.1, "c1", "client.stream.open", path="/data/f1", holder=C1),
        ev(1.1, "nn", "nn.file.create", path="/data/f1", holder=C1),
        ev(4.9, "c2", "client.start", holder=C2),
        ev(5.0, "nn", "nn.lease.reassign", path="/data/f1", old_holder=C1, holder=C2),
        ev(5.0005, "nn", "nn.recovery.start", path="/data/f1", block=BLOCK, recovery_id=1002,
           primary="dn3", gs=1001),
        ev(5.001, "nn", "nn.lease.recover", path="/data/f1", holder=C1, requester=C2,
           force=True, result="recovering"),
        ev(6.0, "nn", "nn.recovery.start", path="/data/f1", block=BLOCK, recovery_id=1003,
           primary="dn2", gs=1001),
        ev(6.0005, "nn", "nn.lease.recover", path="/data/f1", holder=C2, requester=C2,
           force=True, result="recovering"),
        ev(6.5, "dn2", "dn.recovery.sync", block=BLOCK, recovery_id=1003, rule="min_rbw",
           len=786432),
        ev(6.6, "nn", "nn.recovery.commit", block=BLOCK, recovery_id=1003, len=786432, gs=1003),
        ev(6.7, "nn", "nn.file.close", path="/data/f1", len=786432, reason="block_recovery"),
    ]


def test_block_recovery_items_name_cause_primary_and_commit():
    items = evidence.block_recoveries(evidence.RunEvents(fencing_events()))
    assert [(i["recovery_id"], i["primary"], i["started_by"], i["ended"], i["committed_t"])
            for i in items] == [(1002, "dn3", "c2 (recoverLease)", False, None),
                                (1003, "dn2", "c2 (recoverLease)", True, 6.6)]
    assert items[0]["t"] == 5.0 and items[1]["t"] == 6.0
    assert items[0]["brief"] == "1002 by c2 +5.0s primary dn3 never committed"
    assert items[1]["brief"] == "1003 by c2 +6.0s primary dn2 committed +6.6s"
    assert "length 786432 (min_rbw)" in items[1]["what"]


def test_a_truncate_recovery_is_credited_to_the_truncate_not_the_recover_lease_after_it():
    """truncate-then-recover-lease: c1's truncate inside a block starts recovery 1002;
    c2's recoverLease 50 ms later starts 1003. Each has its own cause."""
    events = [
        ev(0.0, "harness", "harness.run.start", scenario="truncate-then-recover-lease", seed=3),
        ev(1.0, "c1", "client.start", holder=C1),
        ev(1.9, "c2", "client.start", holder=C2),
        ev(2.0, "c1", "client.op.start", op_id="w1", op="truncate", path="/data/t"),
        ev(2.01, "nn", "nn.file.truncate", path="/data/t", len=1049576, ok=False),
        ev(2.0102, "nn", "nn.recovery.start", path="/data/t", block=BLOCK, recovery_id=1002,
           primary="dn1"),
        ev(2.0598, "nn", "nn.recovery.start", path="/data/t", block=BLOCK, recovery_id=1003,
           primary="dn2"),
        ev(2.06, "nn", "nn.lease.recover", path="/data/t", holder=C1, requester=C2,
           force=True, result="recovering")]
    items = evidence.block_recoveries(evidence.RunEvents(events))
    assert [i["started_by"] for i in items] == [
        "c1 (truncate to 1049576 bytes)", "c2 (recoverLease)"]


def test_lease_monitor_and_retry_causes():
    events = fencing_events()[:6] + [
        ev(5.0005, "nn", "nn.recovery.start", path="/data/f1", block=BLOCK, recovery_id=1002,
           primary="dn3"),
        ev(5.001, "nn", "nn.lease.recover", path="/data/f1", holder=C1,
           requester="HDFS_NameNode", force=False, result="recovering"),
        ev(40.0, "nn", "nn.recovery.start", path="/data/f1", block=BLOCK, recovery_id=1004,
           primary="dn1")]
    items = evidence.block_recoveries(evidence.RunEvents(events))
    assert [i["started_by"] for i in items] == [
        "lease monitor (hard limit)", "NameNode (the earlier recovery timed out)"]


def test_lease_recovery_items_say_whether_the_file_closed():
    items = evidence.lease_recoveries(evidence.RunEvents(fencing_events()))
    # c2's own lease, recovered again by its retry, is not a writer's: one item
    assert len(items) == 1
    i = items[0]
    assert (i["holder_node"], i["requester"], i["closed"], i["closed_t"]) == ("c1", "c2", True, 6.7)
    unclosed = evidence.lease_recoveries(evidence.RunEvents(fencing_events()[:-1]))
    assert unclosed[0]["closed"] is False and "never closed" in unclosed[0]["brief"]


def test_a_recovering_client_that_appends_afterwards_is_not_a_second_recovery():
    """zombie-writer-during-append on Hadoop: c2 recovers c1's lease, its retry recovers
    the lease it was handed, then c2 appends to the closed file: c2 was no writer of the
    file when its lease was recovered, so one lease recovery, not two."""
    events = fencing_events() + [
        ev(7.0, "nn", "nn.file.append", path="/data/f1", holder=C2)]
    items = evidence.lease_recoveries(evidence.RunEvents(events))
    assert [i["holder_node"] for i in items] == ["c1"]


def test_with_brief_puts_the_items_inside_the_parenthesis_and_cuts_long_lists():
    item = {"what": "block recoveries 1 (got 2)", "status": "fail",
            "evidence": evidence.block_recoveries(evidence.RunEvents(fencing_events()))}
    assert evidence.with_brief(item) == (
        "block recoveries 1 (got 2: 1002 by c2 +5.0s primary dn3 never committed; "
        "1003 by c2 +6.0s primary dn2 committed +6.6s)")
    many = {"what": "x", "evidence": [{"brief": f"item {n}"} for n in range(9)],
            "evidence_more": 3}
    assert evidence.with_brief(many) == "x (item 0; item 1; item 2; item 3; +8 more)"
    long = {"what": "x", "evidence": [{"brief": "y" * 500}]}
    assert len(evidence.with_brief(long)) < 210


def _failed_run(tmp_path):
    """A run folder and its verdict: every check passes, `block recoveries 1` is unmet."""
    run = tmp_path / "recover-lease-fencing-20261126-s17"
    (run / "events").mkdir(parents=True)
    (run / "logs").mkdir()
    harness = [
        ev(0.0, "harness", "harness.run.start", scenario="recover-lease-fencing", seed=17,
           backend="local", system="minihdfs", system_version=None),
        ev(0.7, "harness", "harness.trigger", action="inject", fault="pace", lag=0.0008,
           trigger="0s"),
        ev(0.71, "harness", "harness.fault.inject", fault="pace", kind="bandwidth",
           target=["c1->dn1", "c1->dn2"], params={"rate": 1048576}),
        ev(2.5, "harness", "harness.fault.heal", fault="pace"),
        ev(9.0, "harness", "harness.run.end", status="completed")]
    (run / "events" / "harness.jsonl").write_text("".join(json.dumps(e) + "\n" for e in harness))
    (run / "events" / "nn.jsonl").write_text("".join(json.dumps(e) + "\n" for e in fencing_events()))
    (run / "logs" / "toxiproxy.log").write_text("started\n")
    (run / "scenario.yaml").write_text("name: recover-lease-fencing\n"
                                       "description: recoverLease fences a live writer\n")
    items = evidence.block_recoveries(evidence.RunEvents(fencing_events()))
    verdict = Verdict.from_json({
        "scenario": "recover-lease-fencing", "run_id": run.name, "passed": False,
        "checks": [{"id": "L1", "status": "pass", "evidence": []},
                   {"id": "B1", "status": "skip", "evidence": []}],
        "exercised": ["L1"],
        "expect": [{"what": "lease recoveries 1 (got 1)", "status": "pass", "evidence": []},
                   {"what": "block recoveries 1 (got 2)", "status": "fail", "evidence": items}],
        "metrics": {"block_recoveries": 2, "units": {"block_recoveries": "count"}},
    })
    return str(run), verdict


def _section(html, start, end):
    return html[html.index(start):html.index(end, html.index(start))]


def test_report_of_a_failed_run_says_why_first(tmp_path):
    run, verdict = _failed_run(tmp_path)
    html = render_run_html(verdict, run)
    why = _section(html, 'id="why"', 'id="exercised"')
    assert "expected block recoveries 1 (got 2)" in why
    assert ("recovery 1002 of block 1073741825 (/data/f1) started at +5.0s by c2 "
            "(recoverLease), primary dn3: never committed") in why
    assert "recovery 1003 of block 1073741825 (/data/f1) started at +6.0s" in why
    assert "committed at +6.6s, length 786432 (min_rbw)" in why
    assert "lease recoveries" not in why            # a met expectation is no reason
    # it stands before everything else the page shows
    assert html.index('id="why"') < html.index('id="exercised"') < html.index("Timeline")


def test_report_says_how_to_run_it_again(tmp_path):
    run, verdict = _failed_run(tmp_path)
    html = render_run_html(verdict, run)
    again = _section(html, 'id="again"', "<h2>Timeline")
    assert "recoverLease fences a live writer" in again
    assert f"hdfs-chaos run {run}/scenario.yaml --seed 17 --backend local --out {tmp_path}" in again
    assert '<a href="events/nn.jsonl">nn.jsonl</a>' in again
    assert '<a href="logs/toxiproxy.log">toxiproxy.log</a>' in again
    assert "ran 9.0 s" in again
    row = next(r for r in again.split("<tr") if ">pace<" in r)
    assert "bandwidth" in row and "c1-&gt;dn1, c1-&gt;dn2" in row and "+0.710 s" in row
    assert "0.001 s" in row and "+2.500 s" in row      # lag, healed


def test_a_passed_run_has_no_why_section(tmp_path):
    run, verdict = _failed_run(tmp_path)
    verdict.passed = True
    assert why_it_failed(verdict, []) == []
    assert 'id="why"' not in render_run_html(verdict, run)


def test_fail_line_carries_the_evidence_in_one_line():
    from harness.runner import result_line
    items = evidence.block_recoveries(evidence.RunEvents(fencing_events()))
    line = result_line(Verdict.from_json(
        {"scenario": "recover-lease-fencing", "passed": False, "checks": [],
         "expect": [{"what": "block recoveries 1 (got 2)", "status": "fail", "evidence": items}],
         "run_status": "timeout", "run_errors": ["a\nb"]}, run_dir=os.getcwd()))
    assert "\n" not in line
    assert line.startswith("FAIL recover-lease-fencing (.) — unmet: block recoveries 1 (got 2: "
                           "1002 by c2 +5.0s primary dn3 never committed; 1003 by c2 +6.0s "
                           "primary dn2 committed +6.6s)")


def test_processes_that_printed_nothing_leave_no_log(tmp_path):
    from harness.backends.local import remove_empty_logs
    (tmp_path / "nn.out").write_text("")
    (tmp_path / "c1.out").write_text("Traceback ...\n")
    (tmp_path / "toxiproxy.log").write_text("")
    remove_empty_logs(str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ["c1.out"]
    remove_empty_logs(str(tmp_path / "missing"))   # no folder: nothing to do


def test_timeline_draws_every_block_recovery_an_unfinished_one_open():
    from harness.reconcile.report import _recovery_spans
    spans = _recovery_spans(fencing_events())
    block = [(round(a - T0, 3), None if b is None else round(b - T0, 3), label)
             for _, a, b, label, _ in spans if label.startswith("block recovery")]
    assert block == [(6.0, 6.6, f"block recovery {BLOCK} (1003) len 786432"),
                     (5.0, None, f"block recovery {BLOCK} (1002) never committed")]


def test_report_of_a_hand_made_failed_run_draws_its_plots(tmp_path):
    from harness.reconcile.report import write_run_report
    run, verdict = _failed_run(tmp_path)
    path = write_run_report(run, verdict)
    assert os.path.getsize(os.path.join(run, "plots", "timeline.png")) > 0
    assert 'id="why"' in open(path, encoding="utf-8").read()


def test_timeline_legend_names_the_node_markers(tmp_path, monkeypatch):
    """A started node's green triangle is not a lease event: the legend says what the
    markers of kills and starts are."""
    import matplotlib.figure
    from harness.reconcile.report import plot_timeline
    labels = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda fig, *a, **k: labels.extend(
        t.get_text() for t in fig.axes[0].get_legend().get_texts()))
    events = fencing_events() + [ev(1.0, "harness", "harness.node.kill", target="dn1"),
                                 ev(2.0, "harness", "harness.node.start", target="dn1")]
    plot_timeline(sorted(events, key=lambda e: e["ts"]), [], str(tmp_path / "t.png"), T0)
    assert {"node killed/stopped", "node started/resumed"} <= set(labels), labels
