"""Faults as data: parameters, validation, what they ask the mesh or the node control to
do, and the harness events they log. No network, no processes."""

import threading

import pytest

from faults.base import FaultError, harness_log
from faults.disk import CorruptReplica, DeleteReplica
from faults.grudge import complete_grudge, directed, links_between
from faults.network import (Bandwidth, CutAfterBytes, Latency, LinkMesh, Partition,
                            ResetPeer, Slicer)
from faults.process import CrashClient, Kill, NodeControl, Pause, Restart, Resume
from faults.testing import InMemoryToxiproxy
from hdfs_contract.events import read_events

LISTEN = {
    "nn": {"rpc": "127.0.0.1:9000"},
    "dn1": {"rpc": "127.0.0.1:9101", "xfer": "127.0.0.1:9102"},
    "dn2": {"rpc": "127.0.0.1:9201", "xfer": "127.0.0.1:9202"},
    "dn3": {"rpc": "127.0.0.1:9301", "xfer": "127.0.0.1:9302"},
}


@pytest.fixture
def log(tmp_path):
    return harness_log(str(tmp_path / "harness.jsonl"))


@pytest.fixture
def api():
    return InMemoryToxiproxy()


@pytest.fixture
def mesh(api):
    return LinkMesh(api, LISTEN, ["c1"]).create()


def events(log):
    return [(e["event"], {k: v for k, v in e.items()
                          if k not in ("ts", "node", "role", "seq", "event")})
            for e in read_events(log.path)]


def toxics(api, name):
    return {t["name"]: (t["type"], t["stream"], t["attributes"])
            for t in api.proxies_[name]["toxics"]}


# --- network faults --------------------------------------------------------------------

def test_blackhole_partition_adds_timeout_0_on_both_streams_of_every_cut_proxy(api, mesh, log):
    p = Partition(complete_grudge([["dn1"], ["dn2", "dn3", "nn", "c1"]]), mesh=mesh, log=log,
                  fault_id="cut")
    p.inject()
    assert toxics(api, "dn2->dn1.xfer") == {
        "cut.upstream": ("timeout", "upstream", {"timeout": 0}),
        "cut.downstream": ("timeout", "downstream", {"timeout": 0})}
    for name in ("dn1->nn.rpc", "c1->dn1.xfer", "c1->dn1.rpc", "dn1->dn3.rpc"):
        assert set(toxics(api, name)) == {"cut.upstream", "cut.downstream"}
    for name in ("dn2->dn3.xfer", "c1->dn2.xfer", "dn2->nn.rpc"):
        assert toxics(api, name) == {}
    assert p.heal() is True
    assert all(not p_["toxics"] for p_ in api.proxies_.values())
    assert p.heal() is False  # idempotent
    assert events(log) == [
        ("harness.fault.inject", {"fault": "cut", "kind": "partition",
                                  "target": p.grudge.to_json(), "params": {"mode": "blackhole"}}),
        ("harness.fault.heal", {"fault": "cut"})]


def test_reject_partition_disables_only_the_directed_links(api, mesh, log):
    p = Partition(directed([["c1", "dn2"]]), mode="reject", mesh=mesh, log=log)
    p.inject()
    disabled = {n for n, p_ in api.proxies_.items() if not p_["enabled"]}
    assert disabled == {"c1->dn2.xfer", "c1->dn2.rpc"}
    p.heal()
    assert all(p_["enabled"] for p_ in api.proxies_.values())


def test_partition_validation():
    with pytest.raises(ValueError, match="mode"):
        Partition(directed([["a", "b"]]), mode="drop")
    with pytest.raises(ValueError, match="empty"):
        Partition({})
    p = Partition({"dn1": ["dn2"]})
    assert p.grudge == {"dn1": {"dn2"}}
    with pytest.raises(FaultError, match="no mesh"):
        p.inject()


def test_partition_of_links_nobody_dials_is_an_error(mesh, log):
    p = Partition(directed([["nn", "dn1"]]), mesh=mesh, log=log)
    with pytest.raises(FaultError, match="nobody dials"):
        p.inject()
    assert not p.active and events(log) == []


@pytest.mark.parametrize("fault, toxic_type, attributes, streams", [
    (Latency([["c1", "dn1"]], latency=0.3, jitter=0.05), "latency",
     {"latency": 300, "jitter": 50}, {"upstream", "downstream"}),
    (Bandwidth([["c1", "dn1"]], rate=64 * 1024), "bandwidth", {"rate": 66},
     {"upstream", "downstream"}),
    (CutAfterBytes([["c1", "dn1"]], 1000), "limit_data", {"bytes": 1000}, {"upstream"}),
    (ResetPeer([["c1", "dn1"]], timeout=0.25), "reset_peer", {"timeout": 250},
     {"upstream", "downstream"}),
    (Slicer([["c1", "dn1"]], average_size=64, size_variation=16, delay=0.001), "slicer",
     {"average_size": 64, "size_variation": 16, "delay": 1000}, {"upstream", "downstream"}),
    (Latency([["c1", "dn1"]], latency=1, streams="downstream"), "latency",
     {"latency": 1000, "jitter": 0}, {"downstream"}),
])
def test_toxic_faults_translate_to_toxiproxy_units_on_each_service(
        api, mesh, log, fault, toxic_type, attributes, streams):
    fault.mesh, fault.log = mesh, log
    fault.inject()
    for name in ("c1->dn1.xfer", "c1->dn1.rpc"):
        found = toxics(api, name)
        assert {s for _, s, _ in found.values()} == streams
        assert all(t == toxic_type and a == attributes for t, _, a in found.values())
        assert set(found) == {f"{fault.fault_id}.{s}" for s in streams}
    assert toxics(api, "c1->dn2.xfer") == {} and toxics(api, "dn1->dn2.xfer") == {}
    fault.heal()
    assert all(not p["toxics"] for p in api.proxies_.values())
    (inject, params), (heal, _) = events(log)
    assert inject == "harness.fault.inject" and heal == "harness.fault.heal"
    assert params["kind"] == fault.kind and params["target"] == ["c1->dn1"]
    assert set(params["params"]["streams"]) == streams


def test_toxic_fault_params_are_in_harness_units():
    lat = Latency(links_between([["a"], ["b"]]), 0.3, fault_id="slow")
    assert lat.describe() == {"fault": "slow", "kind": "latency", "target": ["a->b", "b->a"],
                              "params": {"latency": 0.3, "jitter": 0.0,
                                         "streams": ["upstream", "downstream"]}}
    assert CutAfterBytes([["a", "b"]], 5).params == {"bytes": 5, "streams": ["upstream"]}
    assert "slow" in repr(lat) and "latency=0.3" in repr(lat)


def test_unnamed_faults_get_distinct_ids():
    a, b = Latency([["a", "b"]], 0.1), Latency([["a", "b"]], 0.1)
    assert a.fault_id != b.fault_id and a.fault_id.startswith("latency-")


@pytest.mark.parametrize("make, message", [
    (lambda: Latency([], 0.1), "no links"),
    (lambda: Latency([["a", "a"]], 0.1), "different"),
    (lambda: Latency([["a", "b"]], -1), "latency"),
    (lambda: Latency([["a", "b"]], "300ms"), "number"),
    (lambda: Latency([["a", "b"]], 0.1, streams=["sideways"]), "streams"),
    (lambda: Bandwidth([["a", "b"]], 0), "rate must be > 0"),
    (lambda: CutAfterBytes([["a", "b"]], -1), "bytes"),
    (lambda: CutAfterBytes([["a", "b"]], 1.5), "integer"),
    (lambda: ResetPeer([["a", "b"]], timeout=-0.1), "timeout"),
    (lambda: Slicer([["a", "b"]], 0), "at least 1"),
    (lambda: Slicer([["a", "b"]], 10, 10), "smaller than average_size"),
])
def test_network_fault_validation(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_inject_twice_is_refused_and_a_failed_inject_logs_an_error(log):
    api = InMemoryToxiproxy(fail_on_toxic=("c1->dn1.xfer", "bad.downstream"))
    mesh = LinkMesh(api, LISTEN, ["c1"]).create()
    bad = Latency([["c1", "dn1"]], 0.1, mesh=mesh, log=log, fault_id="bad")
    with pytest.raises(Exception):
        bad.inject()
    assert not bad.active
    assert all(not p["toxics"] for p in api.proxies_.values())
    assert [e for e, _ in events(log)] == ["harness.fault.inject", "harness.fault.error"]
    ok = Latency([["c1", "dn2"]], 0.1, mesh=mesh, log=log)
    ok.inject()
    with pytest.raises(FaultError, match="already injected"):
        ok.inject()
    ok.heal()


def test_overlapping_reject_partitions_keep_shared_proxies_down(api, mesh, log):
    a = Partition(directed([["dn1", "dn2"]]), mode="reject", mesh=mesh, log=log)
    b = Partition(complete_grudge([["dn1"], ["dn2"]]), mode="reject", mesh=mesh, log=log)
    a.inject()
    b.inject()
    a.heal()
    assert not api.proxies_["dn1->dn2.xfer"]["enabled"]
    b.heal()
    assert api.proxies_["dn1->dn2.xfer"]["enabled"]


# --- node faults ----------------------------------------------------------------------

class RecordingControl:
    """A NodeControl that records what it was asked to do."""

    def __init__(self):
        self.calls = []
        self.started = threading.Event()

    def kill(self, node):
        self.calls.append(("kill", node))

    def stop(self, node):
        self.calls.append(("stop", node))

    def start(self, node):
        self.calls.append(("start", node))
        self.started.set()

    def pause(self, node):
        self.calls.append(("pause", node))

    def resume(self, node):
        self.calls.append(("resume", node))


def test_recording_control_is_a_node_control():
    assert isinstance(RecordingControl(), NodeControl)


@pytest.mark.parametrize("cls, inject_calls, heal_calls", [
    (Kill, ["kill"], ["start"]),
    (CrashClient, ["kill"], []),
    (Pause, ["pause"], ["resume"]),
    (Resume, ["resume"], []),
])
def test_node_faults_act_and_log(cls, inject_calls, heal_calls, log):
    control = RecordingControl()
    fault = cls("dn2", control=control, log=log, fault_id="f")
    fault.inject()
    assert control.calls == [(c, "dn2") for c in inject_calls]
    fault.heal()
    assert control.calls == [(c, "dn2") for c in inject_calls + heal_calls]
    assert events(log) == (
        [("harness.fault.inject", {"fault": "f", "kind": cls.kind, "target": "dn2",
                                   "params": {}})]
        + [(f"harness.node.{c}", {"target": "dn2"}) for c in inject_calls]
        + [(f"harness.node.{c}", {"target": "dn2"}) for c in heal_calls]
        + [("harness.fault.heal", {"fault": "f"})])


def test_kill_with_stay_down_is_never_started_again(log):
    control = RecordingControl()
    fault = Kill("dn3", stay_down=True, control=control, log=log, fault_id="lost")
    fault.inject()
    assert fault.heal() is True
    assert control.calls == [("kill", "dn3")]     # no start: the DataNode stays dead
    assert [e for e, _ in events(log)] == ["harness.fault.inject", "harness.node.kill",
                                           "harness.fault.heal"]
    assert events(log)[0][1]["params"] == {"stay_down": True}


def test_restart_comes_back_by_itself_after_down(log):
    control = RecordingControl()
    r = Restart("dn1", down=0.05, control=control, log=log, fault_id="r")
    r.inject()
    assert r.wait(5) and control.started.is_set()
    assert control.calls == [("stop", "dn1"), ("start", "dn1")]
    assert r.heal() is False  # healed itself
    assert [e for e, _ in events(log)] == ["harness.fault.inject", "harness.node.stop",
                                           "harness.node.start", "harness.fault.heal"]
    assert events(log)[0][1]["params"] == {"down": 0.05, "graceful": True}


def test_restart_healed_early_starts_the_node_once(log):
    control = RecordingControl()
    r = Restart("dn1", down=60, graceful=False, control=control, log=log)
    r.inject()
    assert r.heal() is True
    assert control.calls == [("kill", "dn1"), ("start", "dn1")]
    assert [e for e, _ in events(log)].count("harness.fault.heal") == 1


def test_node_fault_validation():
    with pytest.raises(ValueError, match="down"):
        Restart("dn1", down=-1)
    with pytest.raises(ValueError, match="node id"):
        Kill("")
    with pytest.raises(FaultError, match="no node control"):
        Kill("dn1").inject()


# --- disk faults (validation; effects are in tests/integration/test_faults_disk.py) ----

def test_disk_fault_validation(tmp_path):
    with pytest.raises(ValueError, match="block id"):
        CorruptReplica(tmp_path, "blk_1")
    with pytest.raises(ValueError, match="nbytes"):
        CorruptReplica(tmp_path, 1, nbytes=0)
    with pytest.raises(FaultError, match="not a DataNode storage folder"):
        DeleteReplica(tmp_path, 1).inject()
    (tmp_path / "current" / "finalized").mkdir(parents=True)
    with pytest.raises(FaultError, match="dn3 has no replica of block 7"):
        DeleteReplica(tmp_path, 7, node="dn3").inject()


def test_replicas_are_found_in_hadoops_block_pool_layout(tmp_path):
    from faults.disk import find_replicas
    pool = tmp_path / "current" / "BP-1-127.0.0.1-1" / "current"
    fin = pool / "finalized" / "subdir0" / "subdir0"
    fin.mkdir(parents=True)
    (fin / "blk_1073741825").write_bytes(b"x" * 10)
    (fin / "blk_1073741825_1001.meta").write_bytes(b"m")
    (fin / "blk_1073741825_1003.meta").write_bytes(b"m")
    (pool / "rbw").mkdir()
    (pool / "rbw" / "blk_1073741826").write_bytes(b"y")
    (pool / "rbw" / "blk_1073741826_1002.meta").write_bytes(b"m")
    [r] = find_replicas(tmp_path, 1073741825)
    assert (r.state_dir, r.gs, r.data) == ("finalized", 1003, fin / "blk_1073741825")
    assert [(r.state_dir, r.gs) for r in find_replicas(tmp_path, 1073741826)] == [("rbw", 1002)]
    c = CorruptReplica(tmp_path, 1073741825, node="dn2", seed=1)
    c.inject()
    assert (fin / "blk_1073741825").read_bytes() != b"x" * 10
