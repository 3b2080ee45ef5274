"""The registry of fault kinds (faults.kinds): a kind is one registered class, and the
loader, the JSON Schema and the runner take it from there, with no other file edited."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from faults import disk, network, process
from faults.base import Fault as Effect
from faults.grudge import Grudge
from faults.kinds import KINDS, FaultContext, kind_names, register, unregister
from harness.scenario import ScenarioError, load_scenario_text, scenario_json_schema
from harness.scenario.fields import Enum, NodeRef, spec
from harness.scenario.model import ANY_NODE, Fault

BASE = """name: t
seed: 7
cluster: {datanodes: 4}
workload:
  - {id: w1, client: c1, op: write, path: /f, size: 1MiB}
faults:
"""


class Marker(Effect):
    """A test effect: records what it was asked to do."""

    kind = "marker"   # the inject event names the scenario kind, mark, instead

    def __init__(self, node, colour, done, **kw):
        super().__init__(**kw)
        self.node, self.colour, self.done = node, colour, done

    @property
    def target(self):
        return self.node

    @property
    def params(self):
        return {"colour": self.colour}

    def _apply(self):
        self.done.append(("mark", self.node, self.colour))

    def _undo(self):
        self.done.append(("unmark", self.node))


@pytest.fixture
def mark_kind():
    """A kind defined here and nowhere else: `mark`, on a node or a pipeline position."""
    done: list = []

    @register("mark")
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Mark(Fault):
        """Mark a node with a colour."""

        target: str = spec(NodeRef(ANY_NODE, "mark needs a node", positions=True),
                           "the node or its pipeline position", required=True)
        colour: str = spec(Enum(("red", "blue"), "colour"), "the colour", default="red",
                           example="red")

        def effect(self, ctx):
            return Marker(self.target, self.colour, done, log=ctx.log, fault_id=self.id)

    Mark.done = done
    yield Mark
    unregister("mark")


def test_a_kind_is_unknown_until_registered():
    with pytest.raises(ScenarioError, match="mark"):
        load_scenario_text(BASE + "  - {id: m1, kind: mark, target: dn1, at: 1s}\n")


def test_the_loader_reads_and_validates_a_registered_kind(mark_kind):
    sc = load_scenario_text(BASE + "  - {id: m1, kind: mark, target: dn1, colour: blue, "
                                   "at: 1s, duration: 2s}\n")
    fault = sc.fault("m1")
    assert type(fault) is mark_kind and (fault.target, fault.colour) == ("dn1", "blue")
    assert hash(fault) == hash(dataclasses.replace(fault))   # data stays hashable
    with pytest.raises(ScenarioError, match="colour"):
        load_scenario_text(BASE + "  - {id: m1, kind: mark, target: dn1, colour: green, "
                                  "at: 1s}\n")
    with pytest.raises(ScenarioError, match="shade"):
        load_scenario_text(BASE + "  - {id: m1, kind: mark, target: dn1, shade: 1, at: 1s}\n")


def test_the_schema_has_a_registered_kind_and_loses_it_when_unregistered(mark_kind):
    schema = scenario_json_schema()
    assert "mark" in schema["$defs"]["fault"]["properties"]["kind"]["enum"]
    assert schema["$defs"]["fault.mark"]["properties"]["colour"]["enum"] == ["red", "blue"]
    unregister("mark")
    assert "mark" not in scenario_json_schema()["$defs"]["fault"]["properties"]["kind"]["enum"]


def test_a_name_is_registered_once():
    with pytest.raises(ValueError, match="already registered"):
        @register("kill")
        class Other:
            pass
    assert KINDS["kill"].__name__ == "KillFault"


class _Engine:
    def __init__(self):
        self.fired = []

    def notify_fired(self, fault_id):
        self.fired.append(fault_id)


class _Backend:
    mesh = control = None


def _run(tmp_path, scenario):
    """A Run with only what _inject and _act_on use (no cluster)."""
    from harness.runner import Run
    from harness.systems import SystemUnderTest
    from hdfs_contract.events import EventLog
    run = Run.__new__(Run)
    run.scenario, run.seed, run.say = scenario, scenario.seed, lambda msg: None
    run.events_dir, run.pipelines = str(tmp_path), None
    run.system, run.backend, run.engine = SystemUnderTest(), _Backend(), _Engine()
    run.log = EventLog(str(tmp_path / "harness.jsonl"), "harness", "harness")
    run.active, run.fired, run.errors = {}, [], []
    return run


def test_the_runner_injects_and_heals_a_registered_kind(tmp_path, mark_kind):
    sc = load_scenario_text(BASE + "  - {id: m1, kind: mark, target: c1.pipeline.1, "
                                   "colour: blue, at: {event: client.ack, node: c1}}\n")
    with open(tmp_path / "c1.jsonl", "w") as f:
        f.write(json.dumps({"event": "client.pipeline.setup", "node": "c1", "ts": 1.0,
                            "block": 7, "pipeline": ["dn4", "dn2", "dn1"]}) + "\n")
    run = _run(tmp_path, sc)
    run._inject("m1")
    assert mark_kind.done == [("mark", "dn2", "blue")]     # the position resolved first
    assert run.fired == run.engine.fired == ["m1"] and run.active["m1"].active
    assert run.errors == []
    run._act_on(("heal", "m1"), object())
    assert mark_kind.done[-1] == ("unmark", "dn2")
    run.log.close()
    run.pipelines.close()
    events = [json.loads(line) for line in (tmp_path / "harness.jsonl").read_text().splitlines()]
    inject = next(e for e in events if e["event"] == "harness.fault.inject")
    assert (inject["kind"], inject["target"], inject["params"], inject["resolved"]) == (
        "mark", "dn2", {"colour": "blue"}, ["c1.pipeline[1]=dn2"])
    assert any(e["event"] == "harness.fault.heal" and e["fault"] == "m1" for e in events)


def test_kind_flags_name_the_kinds_for_the_explorer_and_the_checks():
    assert kind_names(ends_node=True) == {"kill", "crash_client"}
    assert kind_names(lasting=False) == {"crash_client", "corrupt_replica", "delete_replica",
                                         "heal", "resume"}


# -- the built-in kinds build the effects the runner built before ----------------------------

class _Storage:
    def storage_path(self, node):
        return f"/data/{node}"


def _effect(fault_yaml: str, **ctx):
    sc = load_scenario_text(BASE + fault_yaml)
    return sc.faults[0].effect(FaultContext(log=None, **ctx))


def test_built_in_kinds_build_their_effects():
    p = _effect("  - {id: p, kind: partition, between: [[dn1], [dn2, dn3]], mode: reject, "
                "at: 1s}\n", mesh="MESH")
    assert type(p) is network.Partition and (p.mode, p.mesh, p.fault_id) == ("reject", "MESH", "p")
    assert p.grudge == Grudge({"dn1": ["dn2", "dn3"], "dn2": ["dn1"], "dn3": ["dn1"]})
    d = _effect("  - {id: p, kind: partition, links: [[c1, dn2]], at: 1s}\n")
    assert d.grudge == Grudge({"c1": ["dn2"]}) and d.mode == "blackhole"
    s = _effect("  - {id: s, kind: slicer, links: [[c1, dn1]], average_size: 100, "
                "size_variation: 10, delay: 1ms, at: 1s}\n")
    assert type(s) is network.Slicer and (s.average_size, s.size_variation, s.delay) == (
        100, 10, 0.001)
    c = _effect("  - {id: c, kind: cut_after_bytes, links: [[c1, dn1]], bytes: 64KiB, "
                "at: 1s}\n")
    assert type(c) is network.CutAfterBytes and c.nbytes == 65536
    k = _effect("  - {id: k, kind: kill, target: dn2, stay_down: true, at: 1s}\n",
                control="CTL")
    assert type(k) is process.Kill and (k.node, k.stay_down, k.control) == ("dn2", True, "CTL")
    r = _effect("  - {id: r, kind: restart, target: nn, down: 2s, at: 1s}\n")
    assert type(r) is process.Restart and (r.node, r.down) == ("nn", 2.0)
    x = _effect("  - {id: x, kind: corrupt_replica, target: dn3, file: /f, index: 0, "
                "at: 1s}\n", backend=_Storage(), seed=11,
                block_of=lambda path, index: {("/f", 0): 1073741825}[(path, index)])
    assert type(x) is disk.CorruptReplica and (x.block_id, x.seed, str(x.storage), x.node) == (
        1073741825, 11, "/data/dn3", "dn3")
    y = _effect("  - {id: y, kind: delete_replica, target: dn3, block: 5, at: 1s}\n",
                backend=_Storage())
    assert type(y) is disk.DeleteReplica and (y.block_id, str(y.storage)) == (5, "/data/dn3")


def test_disconnect_needs_a_backend_that_can(tmp_path):
    from harness.backends import BackendError
    with pytest.raises(BackendError, match="fault d: disconnect needs --backend docker"):
        _effect("  - {id: d, kind: disconnect, target: dn1, at: 1s}\n", backend=_Storage())


def test_heal_and_resume_end_other_faults_and_hold_nothing(tmp_path):
    sc = load_scenario_text(BASE + "  - {id: pz, kind: pause, target: dn1, at: 1s}\n"
                                   "  - {id: rs, kind: resume, target: dn1, at: 2s}\n"
                                   "  - {id: h, kind: heal, fault: pz, at: 3s}\n")
    healed = []
    paused = process.Pause("dn1", fault_id="pz")
    paused.active = True
    ctx = FaultContext(log=None, active={"pz": paused},
                     heal_active=lambda fid, by: healed.append((fid, by)))
    assert sc.fault("rs").inject(ctx) is None and healed == [("pz", "pz")]
    assert sc.fault("h").inject(ctx) is None and healed[-1] == ("pz", "h")
    ctx.active = {}
    assert sc.fault("h").inject(ctx) is None and len(healed) == 2


def test_a_heal_fault_heals_a_registered_kind_through_the_runner(tmp_path, mark_kind):
    sc = load_scenario_text(BASE + "  - {id: m1, kind: mark, target: dn1, at: 1s}\n"
                                   "  - {id: h1, kind: heal, fault: m1, at: 2s}\n")
    run = _run(tmp_path, sc)
    run._inject("m1")
    run._inject("h1")
    assert mark_kind.done == [("mark", "dn1", "red"), ("unmark", "dn1")]
    assert run.fired == ["m1", "h1"] and list(run.active) == ["m1"] and run.errors == []
    assert not run.active["m1"].active
    run.log.close()
    # a heal logs no harness.fault.inject: the checks and metrics count every inject as a
    # fault of its own, with no filter on kind heal
    events = [json.loads(line) for line in (tmp_path / "harness.jsonl").read_text().splitlines()]
    assert [e["fault"] for e in events if e["event"] == "harness.fault.inject"] == ["m1"]
