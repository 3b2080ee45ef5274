"""The NameNode's storage is formatted by a JVM once per release and configuration, and
copied from there for every later cluster: a format is a JVM start per run. No JVM: the
format's `subprocess.run` is replaced by one that writes what a format writes."""

from __future__ import annotations

import os
import subprocess

from harness.systems.hadoop import cluster as cluster_mod
from harness.systems.hadoop.cluster import HadoopCluster



def test_a_second_cluster_copies_the_formatted_storage_instead_of_formatting(tmp_path,
                                                                             monkeypatch):
    monkeypatch.setenv("HDFS_CHAOS_HADOOP_CACHE", str(tmp_path / "cache"))
    calls = []
    clusters = []

    def run(cmd, **kw):
        # what `NameNode -format` leaves in the storage of the cluster it runs for
        calls.append(cmd)
        storage = clusters[-1].nodes["nn"]["storage"]
        os.makedirs(os.path.join(storage, "current"), exist_ok=True)
        for name, text in (("VERSION", "clusterID=CID-1\n"), ("seen_txid", "0\n"),
                           ("fsimage_0000000000000000000", "image")):
            with open(os.path.join(storage, "current", name), "w") as f:
                f.write(text)
        with open(os.path.join(storage, "in_use.lock"), "w") as f:
            f.write("1@vm")
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(cluster_mod.subprocess, "run", run)
    config = {"dfs.replication": 3, "dfs.blocksize": "64KiB"}
    for n in range(2):
        c = HadoopCluster(str(tmp_path / f"c{n}"), "3.4.2", 3, config)
        c.agent_flag = "-javaagent:/x/byteman.jar=script:/x/agent.btm"
        clusters.append(c)
        c.write_conf("nn")               # as start() does first
        c.format()
    assert len(calls) == 1                                   # one JVM, for the first
    assert "-format" in calls[0]
    assert not any(a.startswith("-javaagent") for a in calls[0])   # no agent in a format
    second = os.path.join(clusters[1].nodes["nn"]["storage"], "current")
    assert sorted(os.listdir(second)) == ["VERSION", "fsimage_0000000000000000000",
                                          "seen_txid"]
    assert open(os.path.join(second, "VERSION")).read() == "clusterID=CID-1\n"
    # another configuration is formatted on its own
    c = HadoopCluster(str(tmp_path / "c2"), "3.4.2", 3, {**config, "dfs.replication": 2})
    clusters.append(c)
    c.write_conf("nn")
    c.format()
    assert len(calls) == 2
    assert clusters[0].format_template() != c.format_template()
    assert clusters[0].format_template().startswith(str(tmp_path / "cache" / "3.4.2"))
