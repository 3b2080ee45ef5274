"""verdict.json and its typed view (harness/reconcile/verdict.py): the JSON keeps its keys
and their order, from_json(to_json(v)) == v, and every verdict the runner writes
validates against harness/schema/verdict.schema.json, which a broken one does not."""

from __future__ import annotations

import copy
import json
import os

import jsonschema
import pytest

from harness.reconcile.verdict import (SCHEMA_PATH, CheckResult, ExpectItem, Verdict,
                                       VerdictError, schema)
from harness.runner import RunOutcome, result_line

# what the verifier writes (api.verify_runs), in its key order
VERIFIED = {
    "scenario": "dn-crash", "run_id": "dn-crash-20261126-s1", "system": "minihdfs",
    "system_version": None, "passed": False,
    "checks": [{"id": "I1", "status": "pass", "evidence": []},
               {"id": "P1", "status": "fail", "evidence": [{"why": "no recovery", "node": "c1"}]},
               {"id": "P3", "status": "skip", "evidence": [],
                "reason": "not observable on hadoop 3.4.2: needs dn.replica.state",
                "unobserved_status": "pass"},
               {"id": "B6", "status": "error", "evidence": [{"why": "AnalysisException"}]}],
    "exercised": ["I1", "P1"],
    "expect": [{"what": "/f closed", "status": "pass",
                "evidence": [{"t": 1.0, "node": "nn", "what": "closed", "brief": "closed"}],
                "evidence_more": 3},
               {"what": "pipeline recoveries >=1 (got 0)", "status": "fail", "evidence": []},
               {"what": "P4 expected, not observable", "status": "not_observable"}],
    "metrics": {"pipeline_recoveries": 0, "block_recoveries": 1, "lease_recoveries": 1,
                "replacements": 0, "malformed_lines": 0,
                "recovery_latencies_s": {"pipeline": [], "lease": [5.4], "block": [0.1]}},
}


@pytest.fixture(scope="module")
def validator():
    doc = schema()
    jsonschema.Draft202012Validator.check_schema(doc)
    return jsonschema.Draft202012Validator(doc)


def test_the_schema_ships_with_the_package():
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    with open(os.path.join(root, "pyproject.toml")) as f:
        assert '"schema/*.json"' in f.read()
    assert os.path.dirname(SCHEMA_PATH) == os.path.join(
        os.path.abspath(os.path.join(root, "harness")), "schema")


def test_round_trip_keeps_keys_order_and_values():
    v = Verdict.from_json(VERIFIED)
    assert isinstance(v.checks[0], CheckResult) and isinstance(v.expect[0], ExpectItem)
    assert v.passed is False and v.failed_checks == ["P1"]
    assert [e.what for e in v.unmet] == ["pipeline recoveries >=1 (got 0)"]
    assert json.dumps(v.to_json()) == json.dumps(VERIFIED)     # same keys, same order
    assert Verdict.from_json(v.to_json()) == v
    assert Verdict.from_json(json.loads(v.dumps(indent=1))) == v


def test_unknown_keys_are_kept_after_the_known_ones():
    data = {**copy.deepcopy(VERIFIED), "written_by": "a later version"}
    data["checks"][0]["violations"] = 2
    v = Verdict.from_json(data)
    assert v.extra == {"written_by": "a later version"}
    assert v.checks[0].extra == {"violations": 2}
    assert json.dumps(v.to_json()) == json.dumps(data)


def test_optional_keys_are_absent_not_null():
    v = Verdict(scenario="s", run_id="r", passed=True, metrics={})
    assert list(v.to_json()) == ["scenario", "run_id", "passed", "checks", "expect", "metrics"]
    v.add_warning("report: boom")
    assert v.to_json()["warnings"] == ["report: boom"]


def test_run_dir_is_never_written(tmp_path):
    v = Verdict.from_json(VERIFIED, run_dir=str(tmp_path))
    v.write(str(tmp_path))
    on_disk = json.loads((tmp_path / "verdict.json").read_text())
    assert "run_dir" not in on_disk and on_disk == VERIFIED
    back = Verdict.read(str(tmp_path))
    assert back == v and back.run_dir == str(tmp_path)
    assert Verdict.read(str(tmp_path / "missing")) is None


@pytest.mark.parametrize("bad, message", [
    ([], "a verdict is list"),
    ({"scenario": "s"}, "without 'passed'"),
    ({"passed": True, "checks": [{"status": "pass"}]}, "a check without id"),
    ({"passed": True, "expect": [{"what": "x"}]}, "an expect item without what or status"),
    ({"passed": True, "checks": {"I1": "pass"}}, "must be lists"),
])
def test_what_is_not_a_verdict_says_so_in_a_line(bad, message):
    with pytest.raises(VerdictError, match=message):
        Verdict.from_json(bad)


def _finished(tmp_path, status, errors, verdict=None, error=None):
    run_dir = tmp_path / f"run-{status}"
    run_dir.mkdir()
    outcome = RunOutcome("s", run_dir.name, str(run_dir), status, errors)
    v = outcome.finish(verdict if verdict is not None else outcome.verdict_without_checks(error))
    return v, json.loads((run_dir / "verdict.json").read_text())


def test_every_verdict_the_runner_writes_validates(tmp_path, validator):
    written = [
        _finished(tmp_path, "completed", [], Verdict.from_json(VERIFIED)),
        _finished(tmp_path, "timeout", ["the workload did not finish"],
                  Verdict.from_json(VERIFIED)),
        _finished(tmp_path, "interrupted", ["SIGTERM"], error="the run was interrupted"),
        _finished(tmp_path, "error", ["BackendError: x"],
                  error="the verifier is not available: no pyspark"),
    ]
    for v, on_disk in written:
        validator.validate(on_disk)
        assert Verdict.from_json(on_disk) == v      # the file is the typed verdict
        assert "run_dir" not in on_disk and v.run_dir
    interrupted = written[2][1]
    assert list(interrupted) == ["scenario", "run_id", "passed", "checks", "expect", "metrics",
                                 "error", "run_status", "run_errors"]
    assert interrupted["passed"] is False and written[1][1]["run_status"] == "timeout"


def test_the_runner_writes_what_it_always_wrote(tmp_path):
    """verdict.json as RunOutcome.finish wrote it before the types: indent 1, no newline."""
    v, _ = _finished(tmp_path, "timeout", ["a"], Verdict.from_json(VERIFIED))
    text = (tmp_path / "run-timeout" / "verdict.json").read_text()
    assert text == json.dumps({**VERIFIED, "run_status": "timeout", "run_errors": ["a"]},
                              indent=1)
    assert result_line(v).startswith("FAIL dn-crash (")


@pytest.mark.parametrize("breakage", [
    lambda d: d.update(passed="yes"),
    lambda d: d.pop("run_id"),
    lambda d: d.pop("checks"),
    lambda d: d.update(surprise=1),
    lambda d: d["checks"][1].update(status="failed"),
    lambda d: d["checks"][0].pop("id"),
    lambda d: d["expect"][0].update(status="met"),
    lambda d: d["expect"][0].update(evidence_more=0),
    lambda d: d.pop("system_version"),
    lambda d: d.update(run_status="completed"),           # run_errors goes with it
    lambda d: d["metrics"].update(recovery_latencies_s={"block": ["slow"]}),
])
def test_a_broken_verdict_fails_the_schema(validator, breakage):
    data = copy.deepcopy(VERIFIED)
    validator.validate(data)
    breakage(data)
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(data)
