"""Verdicts: the expect: block, malformed log lines, metrics, the verdict.json shape, and
the run and suite reports."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from cases import CASES, MALFORMED_LINES
from harness.reconcile.checks import CHECK_IDS
from harness.reconcile.verdict import Verdict

pytestmark = pytest.mark.spark


def _items(verdict):
    return {i["what"]: i["status"] for i in verdict["expect"]}


def test_expect_all_met(case_verdicts):
    v = case_verdicts["expect-ok"]
    assert v["passed"] is True, json.dumps(v["expect"], indent=1)
    items = _items(v)
    assert len(items) == 10 and set(items.values()) == {"pass"}, items
    assert "/f len >= hflushed (512) (got 512)" in items
    assert "/f len == 512 (got 512)" in items
    assert "/f lease recovered" in items
    assert "block recoveries 1 (got 1)" in items
    assert "workload w2 ok (got ok)" in items


def test_expect_each_item_can_fail(case_verdicts):
    v = case_verdicts["expect-bad"]
    assert v["passed"] is False
    items = v["expect"]
    assert len(items) == 10
    failed = [i["what"] for i in items if i["status"] == "fail"]
    assert len(failed) == 10, json.dumps(items, indent=1)
    text = "\n".join(failed)
    for fragment in ("/f open", "/f len == 4194304 (got 512)", "/f lease not recovered",
                     "/f len >= 1024 (got 512)", "/missing closed (got missing)",
                     "pipeline recoveries >=1 (got 0)", "block recoveries <=0 (got 1)",
                     "every recovery within 1ms", "workload w2 error (got ok)",
                     "workload w9 ok (got no client.op.end)"):
        assert fragment in text, fragment
    # the checks themselves are fine: only the expectations fail
    assert all(c["status"] in ("pass", "skip") for c in v["checks"])


def test_must_fail_met_makes_a_broken_run_pass(case_verdicts):
    v = case_verdicts["expect-must-fail"]
    b2 = next(c for c in v["checks"] if c["id"] == "B2")
    assert b2["status"] == "fail"
    assert v["passed"] is True, json.dumps(v, indent=1)[:3000]
    assert _items(v) == {"B2 must fail (got fail)": "pass"}


def test_must_fail_unmet_fails_the_run(case_verdicts):
    v = case_verdicts["expect-must-fail-unmet"]
    assert v["passed"] is False
    assert _items(v) == {"P2 must fail (got skip)": "fail"}


def test_an_unlisted_check_that_fails_still_fails_the_run(case_verdicts):
    """A list names what the scenario exists to exercise; it excuses no other check."""
    v = case_verdicts["expect-subset"]
    l1 = next(c for c in v["checks"] if c["id"] == "L1")
    assert l1["status"] == "fail"
    assert v["passed"] is False
    assert _items(v) == {}                 # D1 and D2, the listed ones, were exercised


def test_a_listed_check_that_skips_fails_the_verdict(case_verdicts):
    v = case_verdicts["expect-listed-but-skipped"]
    assert next(c for c in v["checks"] if c["id"] == "P3")["status"] == "skip"
    assert v["passed"] is False
    assert _items(v) == {"P3 expected but nothing exercised it": "fail"}


def test_listed_checks_all_exercised_pass(case_verdicts):
    v = case_verdicts["expect-listed-and-exercised"]
    assert v["passed"] is True, json.dumps(v["expect"], indent=1)
    assert _items(v) == {}
    assert {"I1", "P1", "P2", "P3", "P4", "D1"} <= set(v["exercised"])


def test_a_listed_must_fail_check_that_skips_is_reported_once(case_verdicts):
    v = case_verdicts["expect-listed-must-fail-skips"]
    assert v["passed"] is False
    assert _items(v) == {"P2 must fail (got skip)": "fail"}


def test_damaged_logs_fail_a_verdict_that_does_not_list_i1(case_verdicts):
    v = case_verdicts["expect-listed-torn-log"]
    assert next(c for c in v["checks"] if c["id"] == "I1")["status"] == "fail"
    assert v["passed"] is False


def test_checks_all_lists_what_was_exercised(case_verdicts):
    """With `checks: all` a skip is no failure, but the verdict says what was judged."""
    v = case_verdicts["happy"]
    assert v["passed"] is True
    assert v["exercised"] == ["I1", "L1", "H1", "D1", "D2", "D3", "D4"]
    p = case_verdicts["pipeline-recovery"]["exercised"]
    assert {"P1", "P2", "P3", "P4", "P5"} <= set(p) and "B1" not in p


def test_no_expect_block_requires_every_check(case_verdicts):
    assert case_verdicts["expect-none"]["passed"] is False
    assert case_verdicts["happy"]["passed"] is True


def test_malformed_lines_are_counted_not_fatal(case_verdicts, case_runs):
    v = case_verdicts["malformed"]
    assert v["metrics"]["malformed_lines"] == MALFORMED_LINES
    # counted, and the other checks still run on the rest; but damaged logs fail I1
    assert v["passed"] is False
    i1 = next(c for c in v["checks"] if c["id"] == "I1")
    assert i1["status"] == "fail"
    assert {e["node"] for e in i1["evidence"]} == {"nn", "dn1", "c1"}
    assert [c["id"] for c in v["checks"] if c["status"] == "fail"] == ["I1"]
    summary = case_runs.malformed_summary()["malformed"]
    assert summary["count"] == MALFORMED_LINES
    lines = [s["line"] for s in summary["sample"]]
    assert "this is not json" in lines
    assert {s["log"] for s in summary["sample"]} == {"nn", "dn1", "c1"}
    # the line with a mistyped seq is malformed but still an event
    kept = (case_runs.events.filter("run_id = 'malformed' AND event = 'nn.dn.register' "
                                    "AND dn = 'dn9'").count())
    assert kept == 1
    assert all(case_verdicts[r]["metrics"]["malformed_lines"] == 0
               for r in ("happy", "lease-recovery"))


def test_unknown_fields_are_kept(case_runs):
    from harness.reconcile.load import extra_fields
    row = (extra_fields(case_runs.events)
           .filter("run_id = 'malformed' AND dn = 'dn8'").select("extra").first())
    assert row["extra"] == {"shelf": "/s9", "zone": '{"a":1}'}


def test_metrics(case_verdicts):
    m = case_verdicts["lease-recovery"]["metrics"]
    assert m["block_recoveries"] == 1 and m["lease_recoveries"] == 1
    assert m["pipeline_recoveries"] == 0 and m["replacements"] == 0
    assert m["block_recovery_s"] == pytest.approx(0.528, abs=1e-3)
    assert m["lease_recovery_s"] == pytest.approx(5.032 - 1.3, abs=1e-3)
    assert m["bytes_written"] == 1024
    p = case_verdicts["pipeline-recovery"]["metrics"]
    assert p["pipeline_recoveries"] == 1 and p["replacements"] == 1
    assert p["pipeline_recovery_s"] == pytest.approx(0.17, abs=1e-3)
    assert p["recovery_latencies_s"]["pipeline"] == [pytest.approx(0.17, abs=1e-3)]
    assert p["throughput_mbps"] > 0
    h = case_verdicts["happy"]["metrics"]
    assert h["lease_recovery_s"] is None and h["pipeline_recovery_s"] is None


def test_a_repeated_recover_lease_is_one_lease_recovery(spark, tmp_path):
    """HDFS hands the lease to the client that asked for the recovery (reassignLease);
    its next recoverLease, while the block recovery runs, recovers that lease again and
    Hadoop logs it. One writer's lease was recovered: lease_recoveries is 1, not 2."""
    from builders import C2, lease_recovery
    from harness.reconcile.api import verify_runs
    r = lease_recovery("repeat")
    r.ev(4.9, "nn", "nn.lease.recover", path="/f", holder=C2, requester=None, force=True,
         result="recovering")
    verdict, = [v.to_json() for v in verify_runs([r.write(str(tmp_path))])]
    assert verdict["metrics"]["lease_recoveries"] == 1
    assert verdict["metrics"]["block_recoveries"] == 1


def test_a_recovering_client_that_appends_later_is_one_lease_recovery(spark, tmp_path):
    """The same, then c2 appends to the file the recovery closed (zombie-writer-during-
    append on Hadoop): c2 opened the file only after its lease was recovered, so it was
    no writer then: lease_recoveries is still 1."""
    from builders import C2, lease_recovery
    from harness.reconcile.api import verify_runs
    r = lease_recovery("repeat-append")
    r.ev(4.9, "nn", "nn.lease.recover", path="/f", holder=C2, requester=None, force=True,
         result="recovering")
    r.ev(5.5, "nn", "nn.file.append", path="/f", holder=C2)
    r.ev(5.501, "nn", "nn.lease.add", holder=C2, path="/f")
    verdict, = [v.to_json() for v in verify_runs([r.write(str(tmp_path))])]
    assert verdict["metrics"]["lease_recoveries"] == 1


def _schema():
    import jsonschema

    from harness.reconcile.verdict import schema
    return jsonschema.Draft202012Validator(schema())


def test_every_case_verdict_validates_against_the_schema(case_verdicts):
    """Every verdict of the verifier's cases (each check passing, failing, skipping and
    breaking, each kind of expect item) is what verdict.schema.json describes, and reads
    back as itself."""
    validator = _schema()
    for rid, v in case_verdicts.items():
        errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(v)]
        assert not errors, (rid, errors[:5])
        assert json.dumps(Verdict.from_json(v).to_json()) == json.dumps(v), rid


def test_verdict_json_shape(spark, case_dirs, tmp_path):
    from harness.reconcile.api import verify_runs
    dirs = []
    for rid in ("happy", "P2-not-replaced"):
        dst = tmp_path / rid
        shutil.copytree(case_dirs[rid], dst)
        dirs.append(str(dst))
    verdicts = [v.to_json() for v in verify_runs(dirs)]
    assert [v["run_id"] for v in verdicts] == ["happy", "P2-not-replaced"]
    for d, v in zip(dirs, verdicts):
        on_disk = json.load(open(os.path.join(d, "verdict.json")))
        assert on_disk == json.loads(json.dumps(v))
        _schema().validate(on_disk)
        assert list(on_disk) == ["scenario", "run_id", "system", "system_version", "passed",
                                 "checks", "exercised", "expect", "metrics"]
        assert (on_disk["system"], on_disk["system_version"]) == ("minihdfs", None)
        assert on_disk["exercised"] == [c["id"] for c in on_disk["checks"]
                                        if c["status"] in ("pass", "fail")]
        assert [c["id"] for c in on_disk["checks"]] == CHECK_IDS
        assert all(set(c) == {"id", "status", "evidence"} for c in on_disk["checks"])
        assert all(c["status"] in ("pass", "fail", "skip") for c in on_disk["checks"])
        for name in ("lease_recovery_s", "pipeline_recovery_s", "block_recovery_s",
                     "pipeline_recoveries", "block_recoveries", "lease_recoveries",
                     "replacements", "bytes_written", "throughput_mbps"):
            assert name in on_disk["metrics"]
    assert verdicts[0]["passed"] is True and verdicts[1]["passed"] is False
    p2 = next(c for c in verdicts[1]["checks"] if c["id"] == "P2")
    assert p2["status"] == "fail" and p2["evidence"][0]["decision"] == "not_needed"


def test_run_report(case_dirs, case_verdicts, tmp_path):
    from harness.reconcile.api import build_run_report, write_verdict
    for rid in ("pipeline-recovery", "lease-recovery", "malformed", "L1-no-leases"):
        d = tmp_path / rid
        shutil.copytree(case_dirs[rid], d)
        write_verdict(str(d), Verdict.from_json(case_verdicts[rid]))
        path = build_run_report(str(d))
        assert path == str(d / "report.html")
        text = open(path).read()
        for png in ("timeline", "pipelines", "recovery_lengths"):
            f = d / "plots" / f"{png}.png"
            assert f.stat().st_size > 1000, f
            assert f"plots/{png}.png" in text
        assert rid in text
    assert "this is not json" in open(tmp_path / "malformed" / "report.html").read()


def test_suite_report(case_dirs, case_verdicts, tmp_path):
    import pandas as pd
    from harness.reconcile.api import build_suite_report, write_verdict
    dirs = []
    for rid in ("happy", "pipeline-recovery", "lease-recovery", "P1-same-gs"):
        d = tmp_path / "runs" / rid
        shutil.copytree(case_dirs[rid], d)
        write_verdict(str(d), Verdict.from_json(case_verdicts[rid]))
        if (d / "report.html").exists():
            (d / "report.html").unlink()
        dirs.append(str(d))
    out = tmp_path / "suite"
    index = build_suite_report(dirs, str(out))
    assert index == str(out / "index.html")
    for d in dirs:      # `hdfs-chaos report` (re)builds each run's report.html too
        assert os.path.getsize(os.path.join(d, "report.html")) > 1000
    html = open(index).read()
    assert "P1-same-gs" in html and "1/1 fail" in html
    table = pd.read_parquet(out / "checks.parquet")
    assert len(table) == 4 * len(CHECK_IDS)
    assert set(table.columns) >= {"run_id", "scenario", "check", "status"}
    row = table[(table.run_id == "P1-same-gs") & (table.check == "P1")].iloc[0]
    assert row.status == "fail"
    assert (out / "plots" / "latency_pipeline.png").stat().st_size > 1000
    assert (out / "plots" / "latency_block.png").stat().st_size > 1000


def test_one_session_per_process(spark):
    from harness.reconcile.session import get_spark
    assert get_spark() is spark
    assert get_spark("local[2]") is spark
    with pytest.raises(RuntimeError, match="already runs"):
        get_spark("spark://elsewhere:7077")


def test_cases_are_all_built():
    assert "malformed" in CASES and "expect-ok" in CASES


def test_session_conf_is_restored(spark):
    from harness.reconcile.session import SMALL_QUERIES, session_conf
    before = spark.conf.get("spark.sql.codegen.wholeStage")
    with session_conf(spark, SMALL_QUERIES):
        assert spark.conf.get("spark.sql.codegen.wholeStage") == "false"
        assert spark.conf.get("spark.sql.codegen.factoryMode") == "NO_CODEGEN"
    assert spark.conf.get("spark.sql.codegen.wholeStage") == before
    assert spark.conf.get("spark.sql.codegen.factoryMode", None) in (None, "FALLBACK")


def test_local_mode_checks_shuffle_into_one_partition(spark, case_runs):
    """In local mode the protocol events are one partition and the checks shuffle into
    one: a single partition needs no exchange before a join, window or aggregate."""
    from harness.reconcile.session import SMALL_QUERIES, small_queries
    assert spark.sparkContext.master.startswith("local")
    conf = small_queries(spark)
    assert conf["spark.sql.shuffle.partitions"] == "1"
    assert {k: v for k, v in conf.items() if k != "spark.sql.shuffle.partitions"} == \
        {k: v for k, v in SMALL_QUERIES.items() if k != "spark.sql.shuffle.partitions"}
    assert case_runs.rare_lines.rdd.getNumPartitions() == 1


def test_verification_leaves_the_session_as_it_was(spark, case_runs):
    from harness.reconcile.api import verify_loaded
    before = spark.conf.get("spark.sql.codegen.wholeStage")
    verify_loaded(case_runs)
    assert spark.conf.get("spark.sql.codegen.wholeStage") == before


def test_extra_spark_settings_from_the_environment(monkeypatch):
    from harness.reconcile.session import _builder
    monkeypatch.setenv("HDFS_CHAOS_SPARK_CONF",
                       "spark.sql.shuffle.partitions=3; spark.sql.ansi.enabled=false")
    opts = _builder("local[2]")._options
    assert opts["spark.sql.shuffle.partitions"] == "3"
    assert opts["spark.sql.ansi.enabled"] == "false"
    monkeypatch.setenv("HDFS_CHAOS_SPARK_CONF", "spark.sql.shuffle.partitions")
    with pytest.raises(RuntimeError, match="is not KEY=VALUE"):
        _builder("local[2]")


def test_a_bulk_table_that_cannot_be_built_fails_only_its_checks(case_runs, monkeypatch):
    from harness.reconcile.api import verify_loaded
    from harness.reconcile.checks import data

    def broken(runs):
        raise RuntimeError("no layout today")
    monkeypatch.setattr(data, "content_layout", broken)
    verdicts = [v.to_json() for v in verify_loaded(case_runs)]
    assert len(verdicts) == len(case_runs.runs)
    for v in verdicts:
        status = {c["id"]: c["status"] for c in v["checks"]}
        assert status["D2"] == "error"
        assert status["L1"] != "error" and status["P1"] != "error"


def _counts_agree(m: dict) -> None:
    for kind in ("pipeline", "lease", "block"):
        assert (len(m["recovery_latencies_s"][kind]) + len(m["unmeasured_recoveries"][kind])
                == m[f"{kind}_recoveries"]), (kind, m)


def test_metric_counts_and_lists_agree(case_verdicts):
    """Every count of recoveries has as many items: a latency, or an unmeasured entry
    saying why there is none; every metric names its unit."""
    for rid, v in case_verdicts.items():
        m = v["metrics"]
        _counts_agree(m)
        assert set(m) - {"units"} <= set(m["units"]), rid
        if m["lease_recoveries"]:
            assert m["lease_recovery_s"] is not None or m["unmeasured_recoveries"]["lease"], rid


def test_unfinished_block_recovery_and_recover_lease_without_a_crash(spark, tmp_path):
    """c2's recoverLease fences a writer that did not crash (no kill, no crash fault):
    the lease recovery is measured from the recoverLease to the close. A second recovery
    of the block that never commits is counted, listed as unmeasured, and named with its
    primary and cause in the unmet expectation's evidence."""
    from builders import C2, PIPE, lease_recovery
    from harness.reconcile.api import verify_runs
    r = lease_recovery("unfinished", expect={"recoveries": {"block": 1, "lease": 1},
                                             "files": {"/f": {"closed": True, "len": 1024}}})
    r.drop("harness.node.kill").drop("harness.fault.inject")
    r.ev(5.8, "nn", "nn.lease.recover", path="/f", holder=C2, requester=C2, force=True,
         result="recovering")
    r.ev(5.801, "nn", "nn.recovery.start", path="/f", block=1001, gs=1002, recovery_id=1003,
         primary="dn2", pipeline=PIPE)
    verdict, = [v.to_json() for v in verify_runs([r.write(str(tmp_path))])]
    m = verdict["metrics"]
    _counts_agree(m)
    assert m["block_recoveries"] == 2 and m["recovery_latencies_s"]["block"] == [
        pytest.approx(0.528, abs=1e-3)]
    assert [(u["recovery_id"], u["why"]) for u in m["unmeasured_recoveries"]["block"]] == [
        (1003, "never committed")]
    assert m["lease_recoveries"] == 1
    assert m["lease_recovery_s"] == pytest.approx(5.032 - 4.5, abs=1e-3)
    item = next(i for i in verdict["expect"] if i["what"].startswith("block recoveries"))
    assert item["status"] == "fail"
    assert [(e["recovery_id"], e["primary"], e["started_by"], e["ended"])
            for e in item["evidence"]] == [(1002, "dn1", "c2 (soft limit passed)", True),
                                            (1003, "dn2", "c2 (recoverLease)", False)]
    lease = next(i for i in verdict["expect"] if i["what"].startswith("lease recoveries"))
    assert lease["status"] == "pass" and len(lease["evidence"]) == 1
    # the length: the hflush, the recovery that chose 512 bytes, the close, the final state
    closed, length = (i for i in verdict["expect"] if i["what"].startswith("/f "))
    assert length["status"] == "fail" and "evidence" not in closed
    story = [e["what"] for e in length["evidence"]]
    assert story[0].startswith("c1 hflushed up to offset 512 at +1.") \
        and story[0].endswith("(1 hflush)")
    assert any("recovery 1002" in w and "length 512 (min_rbw)" in w for w in story)
    assert "the NameNode closed the file at +5.0s (block_recovery), length 512" in story
    assert story[-1] == "final state: closed, length 512; reads back 512 bytes"
