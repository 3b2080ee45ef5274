"""The Hadoop system's pure parts: the scenario's keys rendered per release, what a
release cannot honour, the 127.1.x.y numbering, and the fetch's refusals."""

import os

import pytest

from harness.systems.hadoop import conf, fetch
from harness.systems.hadoop.mesh import link_host, node_numbers


def test_human_units_become_what_hadoop_parses():
    keys = conf.hadoop_keys({"dfs.blocksize": "1MiB", "dfs.heartbeat.interval": "300ms",
                             "dfs.namenode.heartbeat.recheck-interval": "5s",
                             "dfs.client.socket-timeout": "3s",
                             "dfs.client.block.write.replace-datanode-on-failure.best-effort": True,
                             "dfs.namenode.redundancy.interval.seconds": "1s",
                             "dfs.namenode.startup.delay.block.deletion.sec": "1min"},
                            "3.4.2")
    assert keys["dfs.blocksize"] == "1048576"
    assert keys["dfs.heartbeat.interval"] == "300ms"      # seconds key, sub-second value
    assert keys["dfs.namenode.heartbeat.recheck-interval"] == "5000"
    assert keys["dfs.client.socket-timeout"] == "3000"
    assert keys["dfs.client.block.write.replace-datanode-on-failure.best-effort"] == "true"
    assert keys["dfs.namenode.redundancy.interval.seconds"] == "1"
    assert keys["dfs.namenode.startup.delay.block.deletion.sec"] == "60"   # getLong


def test_hard_limit_maps_to_the_34_key_and_the_soft_limit_is_never_written():
    new = conf.hadoop_keys({"lease.hard-limit": "5s", "lease.soft-limit": "2s"}, "3.4.2")
    assert new == {"dfs.namenode.lease-hard-limit-sec": "5"}
    assert conf.hadoop_keys({"lease.hard-limit": "5s"}, "3.3.6") == {}


def test_keys_the_minihdfs_does_not_know_pass_through():
    assert conf.hadoop_keys({"dfs.namenode.reconstruction.pending.timeout-sec": 5},
                            "3.4.2") == {"dfs.namenode.reconstruction.pending.timeout-sec": "5"}


def test_a_release_that_hard_codes_a_limit_says_so_in_one_line():
    assert conf.config_issues({"lease.soft-limit": "60s", "lease.hard-limit": "5s"}, "3.4.2") == []
    [soft] = conf.config_issues({"lease.soft-limit": "2s"}, "3.4.2")
    assert "hard-codes the soft limit" in soft and "systems: [minihdfs]" in soft
    [hard] = conf.config_issues({"lease.hard-limit": "5s"}, "3.3.6")
    assert "3.3.6" in hard and "--hadoop-version" in hard and "\n" not in hard
    assert conf.config_issues({"lease.hard-limit": "20min"}, "3.2.4") == []


def test_the_agent_sets_the_limits_the_configuration_cannot():
    """With the agent every limit is honoured; it is asked to set them only where the
    release's configuration cannot (a soft limit other than 60 s, a hard limit before 3.4)."""
    both = {"lease.soft-limit": "2s", "lease.hard-limit": "5s"}
    assert conf.config_issues(both, "3.3.6", agent=True) == []
    assert conf.agent_lease_periods(both, "3.4.2") == (2.0, 5.0)
    assert conf.agent_lease_periods({"lease.soft-limit": "1s"}, "3.4.2") == (1.0, 1200.0)
    assert conf.agent_lease_periods({"lease.hard-limit": "5s"}, "3.3.6") == (60.0, 5.0)
    assert conf.agent_lease_periods({"lease.hard-limit": "5s"}, "3.4.2") is None   # the key
    assert conf.agent_lease_periods({"lease.soft-limit": "60s"}, "3.2.4") is None
    assert conf.agent_lease_periods({}, "3.2.4") is None


def test_node_numbers_and_link_addresses():
    nums = node_numbers(["nn", "dn1", "dn2", "dn12"], ["c1", "writer"])
    assert nums == {"nn": 0, "dn1": 1, "dn2": 2, "dn12": 12, "c1": 200, "writer": 201}
    assert link_host(nums, "dn2", "nn") == "127.1.2.0"
    assert link_host(nums, "writer", "dn12") == "127.1.201.12"
    with pytest.raises(ValueError, match="expected nn or dn1"):
        node_numbers(["nn", "datanode1"], [])


def test_log4j_uses_the_agreed_layout_and_the_given_debug_loggers(tmp_path):
    path = tmp_path / "log4j.properties"
    conf.write_log4j(str(path), "/x/dn1.log", ["org.apache.hadoop.hdfs.server.datanode.DataNode"])
    text = path.read_text()
    assert "ConversionPattern=%d{ISO8601} %p [%t] %c{1}/%C{1}: %m%n" in text
    assert "log4j.logger.org.apache.hadoop.hdfs.server.datanode.DataNode=DEBUG" in text
    assert "log4j.appender.F.Append=true" in text


def test_fetch_refuses_a_non_release_and_a_missing_maven(tmp_path, monkeypatch):
    with pytest.raises(fetch.FetchError, match="not a release number"):
        fetch.fetch("latest")
    monkeypatch.setenv("HDFS_CHAOS_HADOOP_CACHE", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(fetch.FetchError, match="sudo apt-get install"):
        fetch.fetch("3.4.2")
    assert fetch.main(["3.4.2"]) == 2
    assert not os.path.exists(tmp_path / "3.4.2" / "lib")


def test_the_system_comes_from_the_command_line_else_the_scenario():
    from harness.scenario.loader import check_scenario_text
    from harness.systems import SystemError_, get_system, system_of
    sc, issues = check_scenario_text(
        "name: s\ncluster: {system: hadoop, hadoop_version: 3.3.6}\n"
        "workload: [{id: w1, client: c1, op: write, path: /f, size: 1MiB}]\n", "s.yaml")
    assert issues == []
    assert (system_of(sc).name, system_of(sc).version) == ("hadoop", "3.3.6")
    assert system_of(sc, "minihdfs").name == "minihdfs"
    assert system_of(sc, None, "3.2.4").version == "3.2.4"
    with pytest.raises(SystemError_, match="use one of minihdfs, hadoop"):
        get_system("cassandra")


def test_hadoop_refuses_what_it_cannot_run():
    from harness.scenario.loader import check_scenario_text
    from harness.systems import get_system
    sc, _ = check_scenario_text(
        "name: s\nsystems: [minihdfs]\nsystems_reason: needs a 2s soft limit\n"
        "cluster: {racks: {dn1: /r1}, hadoop_agent: false, config: {lease.hard-limit: 90s}}\n"
        "workload: [{id: w1, client: c1, op: write, path: /f, size: 1MiB}]\n", "s.yaml")
    issues = get_system("hadoop", "3.3.6").issues(sc)
    assert any("hard-codes the hard limit" in i for i in issues)   # no agent to set it
    assert any("needs a 2s soft limit" in i for i in issues)
    assert any("cluster.racks" in i for i in issues)
    assert get_system("minihdfs").issues(sc) == []


def test_each_daemon_log_gets_a_log_adapter_with_the_agreed_arguments(tmp_path, monkeypatch):
    """HADOOP-SHARED.md: LogAdapter(raw_log, node, role, release, events_out, hosts),
    start() per process, stop() at the end (a stand-in records the calls)."""
    import sys
    import types

    from harness.systems import RunContext, get_system
    from harness.systems.hadoop.cluster import HadoopCluster
    made = []

    class LogAdapter:
        def __init__(self, **kw):
            self.kw, self.started, self.stopped = kw, False, False
            made.append(self)

        def start(self):
            self.started = True

        def stop(self):
            self.stopped = True

    monkeypatch.setitem(sys.modules, "harness.systems.hadoop.adapter",
                        types.SimpleNamespace(LogAdapter=LogAdapter))
    cluster = HadoopCluster(str(tmp_path / "c"), "3.4.2", 2)
    backend = RunContext(scenario=None, seed=1, run_dir=str(tmp_path / "run"),
                         work_dir=cluster.dir, host_routes=dict, storage_path=str,
                         cluster=cluster)
    sut = get_system("hadoop", "3.4.2")
    sut.start_event_sources(backend)
    assert sorted((a.kw["node"], a.kw["role"]) for a in made) == [
        ("dn1", "datanode"), ("dn2", "datanode"), ("nn", "namenode")]
    dn1 = next(a for a in made if a.kw["node"] == "dn1")
    assert dn1.kw["raw_log"] == backend.cluster.nodes["dn1"]["log"]
    assert dn1.kw["events_out"] == str(tmp_path / "run" / "events" / "dn1.jsonl")
    assert dn1.kw["release"] == "3.4.2"
    xfer = backend.cluster.nodes["dn1"]["xfer"]
    assert dn1.kw["hosts"][xfer] == "dn1"
    assert dn1.kw["hosts"]["dn1.hdfs:" + xfer.rpartition(":")[2]] == "dn1"
    assert all(a.started for a in made)
    sut.stop_event_sources(backend)
    assert all(a.stopped for a in made)


def test_a_failed_re_replication_is_retried_within_a_run_as_on_the_minihdfs():
    # Hadoop's 300 s default outlasts a run: a target killed a second earlier (still alive
    # to the NameNode) left the block under-replicated to the end (scenarios/README.md)
    assert conf.BASE["dfs.namenode.reconstruction.pending.timeout-sec"] == "10"
    # a scenario's own value still wins (cluster.py: {**BASE, **hadoop_keys(...)})
    assert {**conf.BASE, **conf.hadoop_keys(
        {"dfs.namenode.reconstruction.pending.timeout-sec": 30}, "3.4.2")}[
        "dfs.namenode.reconstruction.pending.timeout-sec"] == "30"
