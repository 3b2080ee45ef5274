"""Every check of spec/CHECKS.md against hand-written logs: it passes on a sound log,
fails on each log that violates it (with evidence), and skips when nothing exercised it."""

from __future__ import annotations

import json

import pytest

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


def test_every_check_has_pass_fail_and_skip_cases():
    seen = {(c, s) for _, c, s in EXPECTED}
    for check in CHECK_IDS:
        for status in ("pass", "fail", "skip"):
            assert (check, status) in seen, f"{check} has no {status} case"


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
