"""`hdfs-chaos diff` end to end: one small scenario of the library run on the mini-HDFS
and then on real Apache Hadoop daemons (JVMs), verified by Spark, compared in
diff.html and diff.parquet. No mocks; skipped without Java or the fetched jars."""

from __future__ import annotations

import os

import pytest

from tests import hadoop_support as hs

from harness.systems.hadoop import fetch

pytestmark = [pytest.mark.integration, pytest.mark.hadoop, pytest.mark.spark,
              pytest.mark.timeout(900)]

VERSION = os.environ.get("HDFS_CHAOS_HADOOP_VERSION", fetch.DEFAULT_VERSION)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# recoverLease mid-block: nothing in it depends on where the NameNode places the block
# (Hadoop's placement does not follow the scenario's seed) nor on the soft limit, so the
# library's file runs on both systems as it is
SCENARIO = os.path.join(ROOT, "scenarios", "recover-lease-mid-block.yaml")


def test_one_scenario_on_both_systems(tmp_path, capsys):
    hs.fetched_or_skip(VERSION)
    import pandas as pd
    from harness.diffrun import run_both
    results = tmp_path / "results"
    verdicts = run_both([SCENARIO], results_dir=str(results), hadoop_version=VERSION)
    assert [v.system for v in verdicts] == ["minihdfs", "hadoop"]
    assert os.path.isdir(results / "minihdfs") and os.path.isdir(results / f"hadoop-{VERSION}")
    out = capsys.readouterr().out
    assert "diff: " in out
    html = (results / "diff.html").read_text()
    assert "recover-lease-mid-block" in html and f"hadoop {VERSION}" in html
    t = pd.read_parquet(results / "diff.parquet")
    assert sorted(t.system) == ["hadoop", "minihdfs"]
    for _, row in t.iterrows():
        # the second client's recoverLease made each system recover the block
        assert row["verdict"] in ("PASS", "FAIL"), row["run_status"]
        assert row["lease_recoveries"] >= 1 and row["block_recoveries"] >= 1, row["system"]
        assert row["check_B1"] in ("pass", "fail") and row["check_B2"] in ("pass", "fail")
        assert row["files_closed"] == 1
        assert len(row["block_latencies_s"]) == 1
    hadoop = t[t.system == "hadoop"].iloc[0]
    assert hadoop["version"] == VERSION
    # the agent is on by default (the release has rules): H1, which needs its events, is
    # judged instead of skipped as not observable; the others it feeds may skip when the
    # run does not exercise them (no replacement, no pipeline recovery), but not as not
    # observable
    assert hadoop["check_H1"] in ("pass", "fail")
    for check in ("P2", "P3", "P7", "L2", "B6"):
        assert "not observable" not in str(hadoop[f"reason_{check}"]), check
