"""`hdfs-chaos diff` end to end: one small scenario of the library run on the mini-HDFS
and then on real Apache Hadoop daemons (JVMs), verified by Spark, compared in
diff.html and diff.parquet. No mocks; skipped without Java or the fetched jars."""

from __future__ import annotations

import os
import shutil

import pytest

from harness.systems.hadoop import fetch

pytestmark = [pytest.mark.integration, pytest.mark.hadoop, pytest.mark.spark,
              pytest.mark.timeout(900)]

VERSION = os.environ.get("HDFS_CHAOS_HADOOP_VERSION", fetch.DEFAULT_VERSION)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCENARIO = os.path.join(ROOT, "scenarios", "dn-crash-middle-in-pipeline.yaml")


def test_one_scenario_on_both_systems(tmp_path, capsys):
    if shutil.which("java") is None:
        pytest.skip("no java")
    try:
        fetch.fetch(VERSION)
    except fetch.FetchError as e:
        pytest.skip(str(e))
    import pandas as pd
    from harness.diffrun import run_both
    verdicts = run_both([SCENARIO], results_dir=str(tmp_path), hadoop_version=VERSION)
    assert [v.get("system") for v in verdicts] == ["minihdfs", "hadoop"]
    assert os.path.isdir(tmp_path / "minihdfs") and os.path.isdir(tmp_path / f"hadoop-{VERSION}")
    out = capsys.readouterr().out
    assert "diff: " in out
    html = (tmp_path / "diff.html").read_text()
    assert "dn-crash-middle-in-pipeline" in html and f"hadoop {VERSION}" in html
    t = pd.read_parquet(tmp_path / "diff.parquet")
    assert sorted(t.system) == ["hadoop", "minihdfs"]
    for _, row in t.iterrows():
        # the DataNode kill made each system rebuild the pipeline, and P1 judged it
        assert row["verdict"] in ("PASS", "FAIL"), row["run_status"]
        assert row["pipeline_recoveries"] >= 1, row["system"]
        assert row["check_P1"] in ("pass", "fail")
        assert len(row["pipelines_after_recovery"]) >= 1
    hadoop = t[t.system == "hadoop"].iloc[0]
    assert hadoop["version"] == VERSION
    assert hadoop["check_P3"] == "skip" and "not observable on hadoop" in hadoop["reason_P3"]
