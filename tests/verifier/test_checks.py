"""Every check of spec/CHECKS.md against hand-written logs: it passes on a sound log,
fails on each log that violates it (with evidence), and skips when nothing exercised it."""

from __future__ import annotations

import json

import pytest

from builders import T0
from cases import EXPECTED
from harness.reconcile.checks import CHECK_IDS

pytestmark = pytest.mark.spark


def _status(verdicts, run_id, check):
    v = verdicts[run_id]
    return next(c for c in v["checks"] if c["id"] == check)


@pytest.mark.parametrize("run_id,check,status", EXPECTED,
                         ids=[f"{c}-{s}-{r}" for r, c, s in EXPECTED])
def test_check_outcome(case_verdicts, run_id, check, status):
    result = _status(case_verdicts, run_id, check)
    assert result["status"] == status, json.dumps(result, indent=1)
    if status == "fail":
        ev = result["evidence"]
        assert ev, "a failing check must give evidence"
        assert all("why" in e for e in ev)
        assert any("event" in e for e in ev)
    else:
        assert result["evidence"] == []


def test_p6_evidence_names_the_first_success_and_its_time(case_verdicts):
    ev = _status(case_verdicts, "P6-lies-op-end-first", "P6")["evidence"]
    assert ev and ev[0]["why"].startswith("client.op.end reported success"), ev
    assert ev[0]["success_ts"] == pytest.approx(T0 + 1.35), ev


# I1 judges every run (there is always a folder to look at): it cannot skip
NEVER_SKIP = {"I1"}


def test_every_check_has_pass_fail_and_skip_cases():
    seen = {(c, s) for _, c, s in EXPECTED}
    for check in CHECK_IDS:
        for status in ("pass", "fail", "skip"):
            if status == "skip" and check in NEVER_SKIP:
                continue
            assert (check, status) in seen, f"{check} has no {status} case"


def test_i1_never_skips(case_verdicts):
    assert all(_status(case_verdicts, rid, "I1")["status"] != "skip" for rid in case_verdicts)


def test_no_check_crashes(case_verdicts):
    errors = [(rid, c["id"], c["evidence"]) for rid, v in case_verdicts.items()
              for c in v["checks"] if c["status"] == "error"]
    assert not errors, errors


def test_sound_stories_pass_everything(case_verdicts):
    for rid in ("happy", "pipeline-recovery", "lease-recovery"):
        bad = [(c["id"], c["evidence"]) for c in case_verdicts[rid]["checks"]
               if c["status"] not in ("pass", "skip")]
        assert not bad, f"{rid}: {bad}"


def test_evidence_is_readable(case_verdicts):
    ev = _status(case_verdicts, "P1-bad-node-kept", "P1")["evidence"][0]
    assert ev["event"] == "client.pipeline.error"
    assert ev["node"] == "c1"
    assert ev["block"] == 1001 and ev["bad_node"] == "dn2"
    assert ev["recovered_pipeline"] == ["dn1", "dn2", "dn4"]
    assert isinstance(ev["ts"], float) and ev["t"] == pytest.approx(1.6, abs=1e-3)
    assert "dn2" in ev["why"]


def test_l1_evidence_names_both_holders(case_verdicts):
    ev = _status(case_verdicts, "L1-two-writers", "L1")["evidence"][0]
    assert ev["holder"] == "DFSClient_c2_200"
    assert ev["other_holder"] == "DFSClient_c1_100"


def test_b2_evidence_gives_expected_length(case_verdicts):
    ev = _status(case_verdicts, "B2-max-length", "B2")["evidence"][0]
    assert ev["exp_rule"] == "min_rbw" and ev["exp_len"] == 512 and ev["len"] == 1024


def _why(verdicts, run_id, check):
    return " | ".join(e["why"] for e in _status(verdicts, run_id, check)["evidence"])


# each new failing case fails for its own reason, named in the evidence
REASONS = [
    ("I1-no-events", "I1", "no event logs"),
    ("I1-process-left-no-log", "I1", "dn4 was started by the harness but left no log"),
    ("I1-seq-gap", "I1", "events/dn1.jsonl: its seqs 0..3 are not each once (lines lost, "
                         "repeated or torn inside the log): missing 1 (1 in all)"),
    ("I1-seq-not-from-zero", "I1", "events/dn2.jsonl: its first seq is 1, not 0"),
    ("I1-seq-repeated", "I1", "events/c1.jsonl: its seqs 0..10 are not each once (lines "
                              "lost, repeated or torn inside the log): repeated 10 (x2) "
                              "(1 extra line(s))"),
    ("I1-seq-lost-and-repeated", "I1", "events/nn.jsonl: its seqs 0..15 are not each once "
     "(lines lost, repeated or torn inside the log): missing 1, 5..6 (3 in all); "
     "repeated 2 (x2), 3 (x2), 7 (x2) (3 extra line(s))"),
    ("I1-seq-repeated-thrice-gaps-elsewhere", "I1", "events/c1.jsonl: its seqs 0..10 are "
     "not each once (lines lost, repeated or torn inside the log): missing 1, 6, 9 "
     "(3 in all); repeated 3 (x3), 10 (x2) (3 extra line(s))"),
    ("I1-seq-two-gaps-four-repeats", "I1", "events/nn.jsonl: its seqs 0..15 are not each "
     "once (lines lost, repeated or torn inside the log): missing 1..2, 9..10 (4 in all); "
     "repeated 0 (x2), 4 (x2), 7 (x2), 11 (x2) (4 extra line(s))"),
    ("I1-malformed-line", "I1", "events/dn3.jsonl: 1 malformed line"),
    ("I1-no-final-state", "I1", "final_state.json is missing"),
    ("I1-run-timed-out", "I1", "status timeout"),
    ("I1-no-run-end", "I1", "no harness.run.end"),
    ("I1-not-quiescent", "I1", "the cluster never settled: stale replicas of blk 1000"),
    ("P1-failed-close-without-recovery", "P1", "no client.pipeline.recovered"),
    ("P1-write-after-error-without-recovery", "P1", "no client.pipeline.recovered"),
    ("P1-null-gs", "P1", "names no GS"),
    ("P1-null-bad-node", "P1", "names no bad node"),
    ("P2-new-block-after-acks-not-added", "P2", "requires a replacement, decision was "
                                                "not_needed"),
    ("P2-nothing-written-but-added", "P2", "nothing written yet (stage PIPELINE_SETUP_CREATE, "
                                           "no packet acked, not an append): Hadoop adds no "
                                           "node, decision was added"),
    ("P2-create-stage-without-seqno", "P2", "stage PIPELINE_SETUP_CREATE without "
                                            "last_acked_seqno"),
    ("P3-member-without-replica", "P3", "dn4 is in the new pipeline but never held"),
    ("P7-blames-the-answerer", "P7", "the client blamed dn2, but the DataNodes' setup names dn3"),
    ("P7-could-not-connect-blames-other", "P7", "dn1 never logged the setup"),
    ("P7-not-excluded", "P7", "the next addBlock excluded [], not dn3"),
    ("P7-placed-again", "P7", "placed on dn3 again"),
    ("P7-abandoned-after-recovery-placed-again", "P7", "the next block 1001 was placed on dn4 "
                                                       "again"),
    ("L5-old-addblock", "L5", "accepted nn.block.allocate from DFSClient_c1_100"),
    ("L5-old-update-pipeline", "L5", "accepted nn.block.update_pipeline from DFSClient_c1_100"),
    ("L5-old-abandon", "L5", "accepted nn.block.abandon from DFSClient_c1_100"),
    ("B2-wrong-participants", "B2", "participants [dn1,dn2,dn3], but the answers that qualify "
                                    "for finalized are [dn1,dn3]"),
    ("B2-participant-missing", "B2", "participants [dn1,dn2], but"),
    ("B3-commit-gs-not-recovery-id", "B3", "the commit set GS 1003, not the recovery id 1002"),
    ("B4-no-replica-committed", "B4", "every replica is empty, yet the rule was min_rbw"),
    ("H1-complete-without-reports", "H1", "COMPLETE with 0 FINALIZED replica(s)"),
    ("H1-two-needed", "H1", "below dfs.namenode.replication.min 2"),
    ("B6-back-as-rbw", "B6", "came back as RBW, not RWR"),
    ("B6-never-logged", "B6", "never logged it as RWR"),
    ("B6-rejoins-as-rbw", "B6", "rejoined a pipeline as RBW"),
    ("B6-answers-as-rbw", "B6", "answered block recovery 1003 as RBW"),
    ("D1-truncated-then-lost", "D1", "final length 100 is below the hflushed offset 256"),
    ("D1-renamed-then-lost", "D1", "final length 256 is below the hflushed offset 512"),
    ("D1-truncated-renamed-then-lost", "D1", "final length 200 is below the hflushed offset 256"),
]


@pytest.mark.parametrize("run_id,check,fragment", REASONS, ids=[r for r, _, _ in REASONS])
def test_fails_for_the_right_reason(case_verdicts, run_id, check, fragment):
    assert _status(case_verdicts, run_id, check)["status"] == "fail"
    assert fragment in _why(case_verdicts, run_id, check)


def test_a_killed_process_may_end_its_log_early(case_verdicts):
    """dn2 was SIGKILLed mid-run in the pipeline story; only the torn logs fail I1."""
    assert _status(case_verdicts, "I1-killed-log-ends-early", "I1")["status"] == "pass"
    ev = _status(case_verdicts, "I1-seq-gap", "I1")["evidence"]
    assert [e["node"] for e in ev] == ["dn1"]


@pytest.mark.parametrize("run_id,node", [("I1-seq-lost-and-repeated", "nn"),
                                         ("I1-seq-repeated-thrice-gaps-elsewhere", "c1"),
                                         ("I1-seq-two-gaps-four-repeats", "nn")])
def test_i1_names_the_torn_log_alone(case_verdicts, run_id, node):
    """Lines lost and others repeated, the count, ends and sums kept: only that log fails,
    and its evidence gives the seqs as fields too."""
    ev = _status(case_verdicts, run_id, "I1")["evidence"]
    assert [e["node"] for e in ev] == [node]
    assert ev[0]["seq_missing"] and ev[0]["seq_repeated"]


@pytest.mark.parametrize("run_id,reason", [
    ("D2-cut-mid-write-wrong-byte", "differs from the CRC"),
    ("D2-cut-mid-write-no-generator", "names no content generator"),
    ("D2-two-writers-wrong-append", "differs from the CRC"),
    ("D2-truncate-wrong-content", "differs from the CRC"),
    ("D2-readback-error", "read-back failed (IOException"),
    ("D2-writes-without-stream", "lack `stream`"),
    ("D2-corrupt", "differs from the CRC"),
    ("D2-unwritten-tail", "writers wrote only up to offset 1024"),
])
def test_d2_evidence_names_why(case_verdicts, run_id, reason):
    """Each D2 failure fails for its own reason (not for a byte it could not check)."""
    ev = _status(case_verdicts, run_id, "D2")["evidence"]
    assert len(ev) == 1 and ev[0]["path"] == "/f"
    assert reason in ev[0]["why"], ev[0]["why"]


# -- checks left unplanned for want of their starting events (checks.Check.needs) ---------

def test_a_check_without_its_starting_events_skips(case_runs, case_verdicts):
    """A check's `needs` is sound: in every case whose events do not meet it, the check
    run in full skips (neither exercised nor failing), so leaving it unplanned there
    changes no verdict. The cases cover every check's pass and fail stories, which use
    the events of many other checks."""
    from harness.reconcile.checks import CHECKS, possible_checks
    # all cases together meet every `needs`: case_verdicts hold every check run in full
    assert possible_checks(case_runs, CHECKS) == {c.id for c in CHECKS}
    ungated = {c.id for c in CHECKS if not c.needs}
    by_run = possible_checks(case_runs, CHECKS, by_run=True)
    judged, wrong = 0, []
    for rid, verdict in case_verdicts.items():
        possible = by_run.get(rid, ungated)
        for c in verdict["checks"]:
            if c["id"] in possible:
                continue
            judged += 1
            status = c.get("unobserved_status") or c["status"]
            if status != "skip":
                wrong.append((rid, c["id"], status))
    assert not wrong, f"checks that need events these runs lack still judged them: {wrong}"
    assert judged > 500, judged     # most cases lack most checks' starting events


def test_unplanned_checks_give_the_same_results(spark, case_dirs):
    """run_checks with the gate gives what it gives without, on runs that leave most
    checks without their starting events (the one-run case the gate exists for)."""
    from harness.reconcile.checks import CHECKS, possible_checks, run_checks
    from harness.reconcile.load import load_runs
    from harness.reconcile.session import session_conf, small_queries
    runs = load_runs([case_dirs["happy"], case_dirs["lease-recovery"]], spark)
    try:
        possible = possible_checks(runs, CHECKS)
        assert "P1" not in possible and len(possible) < len(CHECKS) - 3, possible
        with session_conf(spark, small_queries(spark)):
            gated = run_checks(runs)
            full = run_checks(runs, gate=False)
    finally:
        runs.close()
    as_list = lambda res: {rid: [(c.id, c.status, c.evidence) for c in cs]  # noqa: E731
                           for rid, cs in res.items()}
    assert as_list(gated) == as_list(full)
    assert [c.id for c in gated["happy"]] == [c.id for c in CHECKS]
