"""The scenario model: YAML in, plain comparable dataclasses out (harness.scenario)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.scenario import (CHECK_IDS, FAULT_KINDS, AfterFault, AtTime, Cluster,
                              CountBound, CrashClientFault, Expect, FileExpectation, OnEvent,
                              Operation, PartitionFault, RecoveryCounts, Scenario,
                              between_links, load_scenario, load_scenario_text)

CORPUS = Path(__file__).resolve().parent.parent / "scenario_corpus"
EXAMPLE = CORPUS / "valid" / "architecture-example.yaml"
MiB = 1024 * 1024


def _architecture_md() -> Path | None:
    """ARCHITECTURE.md, when the design folder is reachable from here."""
    candidates = [os.environ.get("HDFS_CHAOS_DESIGN", "")]
    here = Path(__file__).resolve()
    candidates += [str(p / "shared" / "design") for p in here.parents]
    for folder in candidates:
        path = Path(folder) / "ARCHITECTURE.md" if folder else None
        if path and path.is_file():
            return path
    return None


def test_corpus_example_is_the_architecture_example_verbatim():
    doc = _architecture_md()
    if doc is None:
        pytest.skip("ARCHITECTURE.md not reachable from this checkout")
    text = doc.read_text()
    block = text.split("## Scenario format")[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    assert EXAMPLE.read_text() == block


def test_architecture_example_gives_the_expected_dataclasses():
    expected = Scenario(
        name="client-crash-after-hflush",
        description="free text",
        seed=7,
        timeout=90.0,
        cluster=Cluster(
            datanodes=3,
            racks={"dn1": "/r1", "dn2": "/r2", "dn3": "/r2"},
            config={"dfs.replication": 3, "dfs.blocksize": "1MiB",
                    "dfs.heartbeat.interval": "500ms",
                    "dfs.client.block.write.replace-datanode-on-failure.policy": "DEFAULT",
                    "lease.soft-limit": "2s", "lease.hard-limit": "20s"}),
        workload=(Operation(id="w1", client="c1", op="write", path="/data/f1", size=4 * MiB,
                            hflush_every=MiB, close=True, at=AtTime(0.0)),),
        faults=(
            CrashClientFault(id="crash", target="c1",
                             at=OnEvent(event="client.hflush", node="c1", nth=2)),
            PartitionFault(id="cut", between=(("dn1",), ("dn2", "dn3")),
                           links=(("dn1", "dn2"), ("dn1", "dn3"), ("dn2", "dn1"), ("dn3", "dn1")),
                           mode="blackhole", at=AfterFault(after="crash", delay=0.5),
                           duration=5.0),
        ),
        expect=Expect(checks="all",
                      files={"/data/f1": FileExpectation(closed=True, min_len="hflushed",
                                                         lease_recovered=True)},
                      max_recovery=15.0),
    )
    scenario = load_scenario(EXAMPLE)
    assert scenario == expected
    assert scenario.source == str(EXAMPLE)
    assert scenario.source_text == EXAMPLE.read_text()
    assert scenario.faults[0].kind == "crash_client"
    assert scenario.faults[1].kind == "partition"


def test_defaults_of_a_minimal_scenario():
    scenario = load_scenario_text("name: minimal\nworkload:\n"
                                  "  - {id: w1, client: c1, op: read, path: /f}\n")
    assert scenario.timeout == 120.0
    assert scenario.seed is None
    assert scenario.cluster == Cluster(datanodes=3, racks={}, config={})
    assert scenario.workload[0].at == AtTime(0.0)
    assert scenario.workload[0].close is True
    assert scenario.faults == ()
    assert scenario.expect == Expect()
    assert scenario.expect.checks == "all"
    assert scenario.expect.check_ids == CHECK_IDS
    assert scenario.expect.recoveries == RecoveryCounts()


def test_human_units_become_seconds_and_bytes():
    scenario = load_scenario_text("""
name: units
timeout: 1.5min
workload:
  - {id: w1, client: c1, op: write, path: /f, size: 64KiB, hflush_every: 512, at: 250ms}
  - {id: w2, client: c1, op: truncate, path: /f, new_len: 1k, at: 2}
faults:
  - {id: b, kind: bandwidth, links: [[c1, dn1]], rate: 2MiB/s, at: 1s}
  - {id: s, kind: slicer, links: [[c1, dn1]], average_size: 1KiB, delay: 1ms, at: 1s}
""")
    assert scenario.timeout == 90.0
    assert scenario.workload[0].size == 64 * 1024
    assert scenario.workload[0].hflush_every == 512
    assert scenario.workload[0].at == AtTime(0.25)
    assert scenario.workload[1].new_len == 1024
    assert scenario.workload[1].at == AtTime(2.0)
    assert scenario.faults[0].rate == 2 * MiB
    assert scenario.faults[1].average_size == 1024
    assert scenario.faults[1].delay == pytest.approx(0.001)


def test_append_with_new_block_reaches_the_client_ops_and_only_append_takes_it():
    from harness.runner import _workload_ops
    scenario = load_scenario_text("""
name: new-block
workload:
  - {id: w1, client: c1, op: write, path: /f, size: 1k}
  - {id: w2, client: c1, op: append, path: /f, size: 1k, new_block: true}
  - {id: w3, client: c1, op: append, path: /f, size: 1k}
""")
    assert [op.new_block for op in scenario.workload] == [False, True, False]
    ops = _workload_ops(scenario)["c1"]
    assert ops[1]["new_block"] is True and "new_block" not in ops[2]
    with pytest.raises(Exception, match="new_block: not used by op write"):
        load_scenario_text("""
name: bad
workload: [{id: w1, client: c1, op: write, path: /f, size: 1k, new_block: true}]
""")


def test_between_groups_become_directed_links_both_ways():
    assert between_links([["dn1"], ["dn2", "dn3"]]) == (
        ("dn1", "dn2"), ("dn1", "dn3"), ("dn2", "dn1"), ("dn3", "dn1"))
    assert between_links([["a"], ["b"], ["c"]]) == (
        ("a", "b"), ("a", "c"), ("b", "a"), ("b", "c"), ("c", "a"), ("c", "b"))


def test_links_are_directed_and_kept_in_order_without_repeats():
    scenario = load_scenario_text("""
name: links
workload: [{id: w1, client: c1, op: read, path: /f}]
faults:
  - {id: p, kind: partition, links: [[dn2, dn1], [c1, dn1], [dn2, dn1]], at: 1s}
""")
    fault = scenario.faults[0]
    assert fault.links == (("dn2", "dn1"), ("c1", "dn1"))
    assert fault.between is None
    assert fault.targets == ("dn2", "dn1", "c1")


def test_scenarios_compare_by_content_not_by_source():
    text = EXAMPLE.read_text()
    assert load_scenario_text(text, "a.yaml") == load_scenario_text(text, "b.yaml")
    other = load_scenario_text(text.replace("seed: 7", "seed: 8"))
    assert other != load_scenario_text(text)


def test_scenarios_print_in_domain_terms():
    scenario = load_scenario(EXAMPLE)
    text = repr(scenario)
    assert "CrashClientFault(id='crash'" in text and "PartitionFault(id='cut'" in text
    assert "source_text" not in text
    assert str(scenario.faults[0].at) == "on client.hflush node=c1 nth=2"
    assert str(scenario.faults[1].at) == "after crash + 0.5s"
    assert str(AtTime(1.5)) == "1.5s"


def test_every_fault_kind_of_the_architecture_exists():
    kinds = ("partition latency bandwidth cut_after_bytes reset_peer slicer kill restart "
             "pause resume crash_client corrupt_replica delete_replica heal disconnect").split()
    assert set(FAULT_KINDS) == set(kinds)
    assert all(FAULT_KINDS[k].kind == k for k in kinds)


def test_every_feature_file_loads_with_each_kind_once():
    scenario = load_scenario(CORPUS / "valid" / "every-feature.yaml")
    assert sorted(f.kind for f in scenario.faults) == sorted(FAULT_KINDS)
    assert scenario.client_ids == ("c1", "c2", "c3")
    assert scenario.node_ids == ("nn", "dn1", "dn2", "dn3", "dn4", "c1", "c2", "c3")
    assert scenario.description.splitlines()[0] == "Uses every part of the scenario format once."
    # config keeps what was written; the parsed view uses each key's bare unit (ms here)
    assert scenario.cluster.config["dfs.namenode.heartbeat.recheck-interval"] == 2000
    config = scenario.hadoop_config()
    assert config["dfs.namenode.heartbeat.recheck-interval"] == 2.0
    assert config["dfs.client.block.write.replace-datanode-on-failure.policy"] == "ALWAYS"
    recoveries = scenario.expect.recoveries
    assert recoveries.pipeline == CountBound(">=", 1)
    assert recoveries.block == CountBound("==", 1)
    assert recoveries.lease == CountBound("<=", 2)
    assert scenario.expect.workload == {"w1": "error", "w2": "ok"}
    rot = scenario.fault("rot")
    assert (rot.target, rot.file, rot.index, rot.block) == ("dn2", "/data/f1", -1, None)
    assert scenario.fault("wake").at == AfterFault(after="nap", delay=2.0)
    assert scenario.workload[2].at == OnEvent(event="nn.file.close",
                                              where={"path": "/data/f1"})


def test_count_bounds():
    assert CountBound("==", 1).admits(1) and not CountBound("==", 1).admits(2)
    assert CountBound(">=", 1).admits(3) and not CountBound(">=", 1).admits(0)
    assert CountBound("<=", 2).admits(0) and not CountBound("<=", 2).admits(3)
    assert str(CountBound(">=", 1)) == ">=1" and str(CountBound("==", 4)) == "4"


def test_yaml_anchors_and_merge_keys_may_share_fields():
    scenario = load_scenario_text("""
name: merged
workload:
  - &writer {id: w1, client: c1, op: write, path: /f1, size: 1MiB}
  - <<: *writer
    id: w2
    path: /f2
""")
    assert [(op.id, op.path, op.size) for op in scenario.workload] == [
        ("w1", "/f1", MiB), ("w2", "/f2", MiB)]


def test_config_keeps_values_as_written_and_parses_them_on_demand():
    scenario = load_scenario(EXAMPLE)
    config = scenario.hadoop_config()
    assert config["dfs.blocksize"] == MiB
    assert config["dfs.heartbeat.interval"] == 0.5
    assert config["lease.hard-limit"] == 20.0


def test_model_objects_are_hashable_so_they_can_key_a_plan():
    scenario = load_scenario(CORPUS / "valid" / "every-feature.yaml")
    assert len({scenario, load_scenario(CORPUS / "valid" / "every-feature.yaml")}) == 1
    assert len(set(scenario.faults)) == len(scenario.faults)
    assert hash(OnEvent(event="client.ack", where={"path": "/f"})) == hash(
        OnEvent(event="client.ack", where={"path": "/f"}))


def test_heal_trigger_is_heal_or_duration_after_injection():
    scenario = load_scenario(CORPUS / "valid" / "every-feature.yaml")
    assert scenario.fault("slow").heal_trigger == AfterFault(after="slow", delay=2.0)
    assert scenario.fault("gone").heal_trigger == AtTime(20.0)
    assert scenario.fault("rst").heal_trigger == AfterFault(after="cut", delay=4.0)
    assert scenario.fault("crash").heal_trigger is None


def test_looking_up_faults_and_operations_by_id():
    scenario = load_scenario(EXAMPLE)
    assert scenario.fault("cut").kind == "partition"
    assert scenario.operation("w1").op == "write"
    with pytest.raises(KeyError):
        scenario.fault("nope")
    with pytest.raises(KeyError):
        scenario.operation("nope")
