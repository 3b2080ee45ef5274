"""A fault addressed by pipeline position on real Apache Hadoop daemons: Hadoop's
NameNode places the block at random, and `c1.pipeline[1]` must still kill the node the
DFSClient streams to second. The library's dn-crash-middle-in-pipeline runs once on
--system hadoop (no Spark: the run's events are the evidence); skipped without Java or
the fetched jars."""

from __future__ import annotations

import os

import pytest

from harness.runner import run_unverified
from harness.scenario import load_scenario
from harness.systems.hadoop import fetch
from tests import hadoop_support as hs
from tests.integration.test_pipeline_positions import _events, pipeline_at_fault

pytestmark = [pytest.mark.integration, pytest.mark.hadoop, pytest.mark.timeout(300)]

VERSION = os.environ.get("HDFS_CHAOS_HADOOP_VERSION", fetch.DEFAULT_VERSION)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIBRARY = os.path.join(ROOT, "scenarios", "dn-crash-middle-in-pipeline.yaml")


def test_c1_pipeline_1_is_the_second_node_of_hadoops_pipeline(tmp_path):
    hs.fetched_or_skip(VERSION)
    outcome = run_unverified(load_scenario(LIBRARY), results_dir=str(tmp_path), system="hadoop", hadoop_version=VERSION)
    assert outcome.status == "completed", outcome.errors
    events = _events(outcome.run_dir)
    inject, pipeline = pipeline_at_fault(events, "crash-middle")
    # the pipeline as the DFSClient's own log lines gave it (source: hadoop-log)
    assert all(e.get("source") == "hadoop-log" for e in events
               if e["event"] == "client.pipeline.setup")
    assert inject["target"] == pipeline[1]
    assert inject["resolved"] == [f"c1.pipeline[1]={pipeline[1]}"]
    # Hadoop's DataStreamer blamed that node, at index 1, and rebuilt without it
    error = next(e for e in events if e["event"] == "client.pipeline.error"
                 and e["ts"] > inject["ts"])
    assert (error["error_index"], error["bad_node"]) == (1, pipeline[1])
    recovered = next(e for e in events if e["event"] == "client.pipeline.recovered"
                     and e["ts"] >= error["ts"])
    assert recovered["pipeline"] == [pipeline[0], pipeline[2]]
