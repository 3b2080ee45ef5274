"""A DataNode's space at the end of a run: read from Hadoop's JMX into final_state.json
(harness/systems/hadoop/state.py datanode_space), asked for by `expect.datanodes`
(harness/scenario/model.py DataNodeExpectation) and judged per DataNode
(harness/reconcile/expect.py)."""

from __future__ import annotations

import json

import pytest

from harness.reconcile.expect import RunFacts, evaluate_expect
from harness.scenario import load_scenario_text
from harness.scenario.loader import check_scenario_text
from harness.systems.hadoop import state
from hdfs_contract.errors import ClusterError


def _volume(reserved_for_replicas=0, free=1000, used=10, reserved=0):
    return {"usedSpace": used, "freeSpace": free, "reservedSpace": reserved,
            "reservedSpaceForReplicas": reserved_for_replicas, "numBlocks": 1,
            "storageType": "DISK"}


def test_volume_space_sums_the_volumes():
    info = json.dumps({"/a/current": _volume(1048576, 500, 7, 3),
                       "/b/current": _volume(2048, 600, 8, 4)})
    assert state.volume_space(info) == {"reserved_for_replicas": 1050624, "free": 1100,
                                        "used": 15, "reserved": 7, "volumes": 2}


@pytest.mark.parametrize("text", ["[]", json.dumps({"/a": {"usedSpace": 1}}),
                                  json.dumps({"/a": "x"})])
def test_volume_space_refuses_what_is_not_volume_info(text):
    with pytest.raises(ClusterError):
        state.volume_space(text)


class _Cluster:
    """datanodes() and jmx() of a HadoopCluster: dn1 answers, dn2 is down."""

    def datanodes(self):
        return ["dn1", "dn2"]

    def jmx(self, node, query, timeout=2.0):
        assert query == "Hadoop:service=DataNode,name=DataNodeInfo"
        if node == "dn2":
            raise ConnectionRefusedError(111, "Connection refused")
        return {"VolumeInfo": json.dumps({"/a/current": _volume(4096)})}


def test_datanode_space_reads_each_datanode_and_null_for_one_down():
    got = state.datanode_space(_Cluster(), pause=0)
    assert got["dn1"]["reserved_for_replicas"] == 4096
    assert got["dn2"] is None


class _SlowCluster(_Cluster):
    """dn1's HTTP server times out twice before it answers (a loaded machine)."""

    def __init__(self):
        self.calls = 0

    def datanodes(self):
        return ["dn1"]

    def jmx(self, node, query, timeout=2.0):
        self.calls += 1
        if self.calls <= 2:
            raise TimeoutError("timed out")
        return super().jmx(node, query, timeout)


def test_datanode_space_asks_again_a_datanode_that_timed_out():
    cluster = _SlowCluster()
    got = state.datanode_space(cluster, pause=0)
    assert got["dn1"]["reserved_for_replicas"] == 4096 and cluster.calls == 3


def _facts(space, read=True):
    facts = RunFacts({}, {}, {}, set(), {})
    facts.space, facts.space_read = space, read
    return facts


def _items(want, facts):
    passed, items = evaluate_expect({"datanodes": want}, [], {}, facts)
    return passed, [(i.what, i.status) for i in items]


def test_reserved_space_left_on_a_datanode_fails_the_run():
    passed, items = _items({"reserved_for_replicas": 0},
                           _facts({"dn2": {"reserved_for_replicas": 1048576},
                                   "dn10": {"reserved_for_replicas": 0},
                                   "dn1": {"reserved_for_replicas": 0}}))
    assert not passed
    assert items == [("reserved for replicas on dn1 == 0 (got 0)", "pass"),
                     ("reserved for replicas on dn2 == 0 (got 1048576)", "fail"),
                     ("reserved for replicas on dn10 == 0 (got 0)", "pass")]


def test_reserved_space_released_everywhere_passes():
    passed, items = _items({"reserved_for_replicas": "0"},
                           _facts({"dn1": {"reserved_for_replicas": 0}}))
    assert passed and items == [("reserved for replicas on dn1 == 0 (got 0)", "pass")]


def test_a_size_with_units_is_compared_in_bytes():
    passed, _ = _items({"reserved_for_replicas": "1MiB"},
                       _facts({"dn1": {"reserved_for_replicas": 1048576}}))
    assert passed


def test_no_space_recorded_is_not_observable_and_no_final_state_fails():
    passed, items = _items({"reserved_for_replicas": 0}, _facts(None))
    assert passed and items[0][1] == "not_observable"
    assert "records no DataNode space" in items[0][0]
    passed, items = _items({"reserved_for_replicas": 0}, _facts({}, read=False))
    assert not passed and "no final_state.json" in items[0][0]


def test_a_datanode_that_did_not_answer_is_not_observable():
    passed, items = _items({"reserved_for_replicas": 0},
                           _facts({"dn1": {"reserved_for_replicas": None}}))
    assert passed and items == [("reserved for replicas on dn1 == 0: dn1 did not answer",
                                 "not_observable")]


def test_unknown_key_fails():
    passed, items = _items({"free": 0}, _facts({"dn1": {"reserved_for_replicas": 0}}))
    assert not passed and items == [("datanodes: unknown expectation 'free'", "fail")]


SCENARIO = """\
name: t
workload:
  - {id: w1, client: c1, op: write, path: /data/f1, size: 1KiB}
expect:
  datanodes: {DN}
"""


def test_the_schema_reads_expect_datanodes():
    sc = load_scenario_text(SCENARIO.replace("{DN}", "{reserved_for_replicas: 0}"))
    assert sc.expect.datanodes.reserved_for_replicas == 0
    sc = load_scenario_text(SCENARIO.replace("{DN}", "{reserved_for_replicas: 1MiB}"))
    assert sc.expect.datanodes.reserved_for_replicas == 1048576


@pytest.mark.parametrize("value, message", [
    ("{reserved: 0}", "reserved"),
    ("{reserved_for_replicas: lots}", "size"),
])
def test_the_schema_refuses_bad_datanode_expectations(value, message):
    scenario, issues = check_scenario_text(SCENARIO.replace("{DN}", value))
    assert scenario is None and issues
    assert any(message in str(i) and "expect.datanodes" in str(i) for i in issues), issues
