"""The checks a Hadoop release cannot judge (harness/systems/hadoop/logmap.py OBSERVABLE)
skip with their reason on a Hadoop run, in verdict.json, the run report and the suite
index; a scenario's `expect.checks` naming one of them is reported as not observable,
not failed. The run folders are the real Hadoop 3.4.2 `lease` fixture (data/hadoop-3.4.2)
with the system told the three ways a run folder can tell it: the runner's
`harness.run.start` fields, the scenario's cluster block, and neither (the mini-HDFS).
"""

from __future__ import annotations

import json
import os
import shutil

import pytest
import yaml

from harness.systems.hadoop import logmap

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "hadoop-3.4.2", "lease")
NOT_OBSERVABLE = sorted(c for c, why in logmap.OBSERVABLE.items() if why)
EXPECT = {"checks": ["B1", "B2", "P3", "B6"]}


def _run_dir(root, name: str, scenario: dict, start_fields: dict | None = None) -> str:
    dst = os.path.join(str(root), name)
    shutil.copytree(DATA, dst)
    with open(os.path.join(dst, "scenario.yaml"), "w") as f:
        yaml.safe_dump(dict(scenario, name=name), f)
    if start_fields:
        path = os.path.join(dst, "events", "harness.jsonl")
        events = [json.loads(line) for line in open(path)]
        for e in events:
            if e["event"] == "harness.run.start":
                e.update(start_fields)
        with open(path, "w") as f:
            f.writelines(json.dumps(e) + "\n" for e in events)
    return dst


@pytest.fixture(scope="module")
def verdicts(spark, tmp_path_factory):
    from harness.reconcile.api import verify_loaded
    from harness.reconcile.load import load_runs
    root = tmp_path_factory.mktemp("hadoop-skips")
    dirs = {
        # the runner's record: --system hadoop --hadoop-version 3.3.6 on the command line
        "logged": _run_dir(root, "logged", {"expect": EXPECT},
                           {"system": "hadoop", "system_version": "3.3.6"}),
        # a folder without it: the scenario's own cluster block
        "yaml": _run_dir(root, "yaml", {"expect": EXPECT,
                                        "cluster": {"system": "hadoop", "hadoop_version": "3.4.2"}}),
        # the same events said to come from the mini-HDFS: nothing is excused
        "mini": _run_dir(root, "mini", {"expect": EXPECT}),
    }
    runs = load_runs(list(dirs.values()), spark)
    try:
        out = {v.run_id: v.to_json() for v in verify_loaded(runs)}
    finally:
        runs.close()
    return out, dirs


def _checks(v):
    return {c["id"]: c for c in v["checks"]}


@pytest.mark.spark
def test_unobservable_checks_skip_with_the_release_reason(verdicts):
    out, _ = verdicts
    for rid, release in (("logged", "3.3.6"), ("yaml", "3.4.2")):
        v = out[rid]
        assert (v["system"], v["system_version"]) == ("hadoop", release)
        checks = _checks(v)
        for cid in NOT_OBSERVABLE:
            assert checks[cid]["status"] == "skip", (rid, cid)
            assert checks[cid]["reason"] == f"not observable on hadoop {release}: " \
                + logmap.OBSERVABLE[cid], (rid, cid)
            assert cid not in v["exercised"]
        # the observable ones are judged as before
        assert checks["B1"]["status"] == "pass" and "reason" not in checks["B1"]
        assert checks["B2"]["status"] == "pass"


@pytest.mark.spark
def test_listed_unobservable_check_is_reported_not_failed(verdicts):
    out, _ = verdicts
    for rid in ("logged", "yaml"):
        items = {i["what"].split(" ")[0]: i for i in out[rid]["expect"]}
        assert items["P3"]["status"] == "not_observable"
        assert "not observable on hadoop" in items["P3"]["what"]
        assert items["B6"]["status"] == "not_observable"
        # (the fixture's final state is empty, so D1/L4 fail the verdict on their own)
        assert all(i["status"] in ("pass", "not_observable") for i in out[rid]["expect"])


def test_not_observable_item_does_not_fail_the_verdict():
    from harness.reconcile.checks import CHECK_IDS
    from harness.reconcile.verdict import CheckResult
    from harness.reconcile.expect import RunFacts, evaluate_expect
    from harness.reconcile.observable import apply_skips
    facts = RunFacts({}, {}, {}, set(), {})
    judged = [CheckResult(c, "pass" if c == "B1" else "skip", []) for c in CHECK_IDS]
    # P3 judged on events the release never writes says fail: not a finding on Hadoop
    judged = [CheckResult(c.id, "fail", [{"why": "x"}]) if c.id == "P3" else c for c in judged]
    checks = apply_skips(judged, "hadoop", "3.4.2")
    p3 = {c.id: c for c in checks}["P3"]
    assert (p3.status, p3.unobserved_status) == ("skip", "fail")
    assert p3.to_json()["reason"] == logmap.skip_reason("P3", "3.4.2")
    passed, items = evaluate_expect({"checks": ["B1", "P3"], "must_fail": ["B6"]}, checks,
                                    {}, facts)
    assert passed, items
    assert [i.status for i in items] == ["not_observable", "not_observable"]
    # the same on the mini-HDFS: P3 fails, B6 was not exercised
    passed, items = evaluate_expect({"checks": ["B1", "B6"]},
                                    apply_skips(judged, "minihdfs", None), {}, facts)
    assert not passed


@pytest.mark.spark
def test_minihdfs_run_excuses_nothing(verdicts):
    out, _ = verdicts
    v = out["mini"]
    assert v["system"] == "minihdfs"
    assert not any(c.get("reason") for c in v["checks"])
    # P3 and B6 found nothing to judge in these events: on the mini-HDFS that is a
    # scenario that failed to exercise what it lists
    items = {i["what"].split(" ")[0]: i for i in v["expect"]}
    assert items["P3"]["status"] == "fail" and "nothing exercised" in items["P3"]["what"]
    assert v["passed"] is False


@pytest.mark.spark
def test_reason_shown_in_run_report_and_suite_index(verdicts, tmp_path):
    import pandas as pd
    from harness.reconcile.report import render_run_html
    from harness.reconcile.suite import write_suite_report
    from harness.reconcile.verdict import Verdict
    out, dirs = verdicts
    v = Verdict.from_json(out["yaml"])
    html = render_run_html(v, dirs["yaml"])
    reason = logmap.skip_reason("P3", "3.4.2")
    assert reason in html
    assert "system under test: hadoop 3.4.2" in html
    index = write_suite_report([v, Verdict.from_json(out["mini"])], str(tmp_path), {})
    text = open(index).read()
    assert "not observable" in text and reason in text
    table = pd.read_parquet(os.path.join(str(tmp_path), "checks.parquet"))
    row = table[(table.run_id == "yaml") & (table.check == "P3")].iloc[0]
    assert row["status"] == "skip" and row["reason"] == reason
    assert table[table.run_id == "mini"]["reason"].isna().all()
