"""Faults addressed by pipeline position (`c1.pipeline[1]`): the syntax, the loader's
checks, the resolution against a client's latest pipeline, and the injection event."""

from __future__ import annotations

import json

import pytest

from faults.base import Fault, harness_log
from harness.pipelines import (LivePipelines, PipelineTracker, PositionError, has_positions,
                               resolve_fault)
from harness.scenario import check_scenario_text, load_scenario_text
from harness.scenario.positions import (PipelinePosition, PositionSyntaxError, canonical,
                                        parse_position)

# -- syntax -------------------------------------------------------------------------------


@pytest.mark.parametrize("text, client, index", [
    ("c1.pipeline[0]", "c1", 0), ("c1.pipeline[1]", "c1", 1), ("c1.pipeline.2", "c1", 2),
    ("c1.pipeline[first]", "c1", 0), ("c1.pipeline.first", "c1", 0),
    ("c1.pipeline[last]", "c1", "last"), ("writer-2.pipeline.last", "writer-2", "last"),
])
def test_position_forms(text, client, index):
    assert parse_position(text) == PipelinePosition(client, index)


def test_every_form_reads_to_one_canonical_text():
    assert {canonical(t) for t in ("c1.pipeline[1]", "c1.pipeline.1", " c1.pipeline[ 1 ]")} \
        == {"c1.pipeline[1]"}
    assert canonical("c1.pipeline.first") == "c1.pipeline[0]"
    assert canonical("c1.pipeline.last") == "c1.pipeline[last]"


@pytest.mark.parametrize("text, says", [
    ("c1.pipline[1]", "the word is pipeline"),
    ("c1.pipeline[-1]", "write c1.pipeline[last]"),
    ("c1.pipeline[middle]", "is not 0, 1, ..., first or last"),
    ("c1.pipeline", "not a node id nor a pipeline position"),
    ("c1.pipeline[1].x", "not a node id nor a pipeline position"),
])
def test_bad_positions_say_what_to_write(text, says):
    with pytest.raises(PositionSyntaxError) as e:
        parse_position(text)
    assert says in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("pipeline, position, node", [
    (["dn3", "dn1", "dn4"], PipelinePosition("c1", 0), "dn3"),
    (["dn3", "dn1", "dn4"], PipelinePosition("c1", 1), "dn1"),
    (["dn3", "dn1", "dn4"], PipelinePosition("c1", "last"), "dn4"),
    (["dn3", "dn1"], PipelinePosition("c1", "last"), "dn1"),
    (["dn3", "dn1"], PipelinePosition("c1", 2), None),
    ([], PipelinePosition("c1", "last"), None),
])
def test_pick(pipeline, position, node):
    assert position.pick(pipeline) == node


# -- the loader ---------------------------------------------------------------------------

BASE = """name: t
seed: 1
cluster: {datanodes: 4, config: {dfs.replication: 3}}
workload:
  - {id: w1, client: c1, op: write, path: /f, size: 1MiB}
  - {id: r1, client: c2, op: read, path: /f, at: 5s}
faults:
"""


def issues_of(faults: str) -> list[str]:
    _, issues = check_scenario_text(BASE + faults)
    return [f"{i.field}: {i.message}" for i in issues]


def test_positions_in_target_links_and_between_load_canonical():
    sc = load_scenario_text(BASE + """\
  - id: k
    kind: kill
    target: c1.pipeline[1]
    at: {event: client.ack, node: c1, nth: 5}
  - {id: p, kind: partition, links: [[c1, c1.pipeline.0], [c1.pipeline.0, c1.pipeline.last]],
     at: {event: client.hflush, node: c1}}
  - {id: q, kind: partition, between: [[c1], [c1.pipeline.first]], at: {after: k, delay: 1s}}
  - {id: r, kind: restart, target: c1.pipeline.last, at: {after: k, delay: 2s}}
  - {id: x, kind: corrupt_replica, target: c1.pipeline.0, file: /f, index: 0, at: 9s}
""")
    assert sc.fault("k").target == "c1.pipeline[1]"
    assert sc.fault("p").links == (("c1", "c1.pipeline[0]"), ("c1.pipeline[0]", "c1.pipeline[last]"))
    assert sc.fault("q").between == (("c1",), ("c1.pipeline[0]",))
    assert sc.fault("r").target == "c1.pipeline[last]"
    assert sc.fault("x").target == "c1.pipeline[0]"


@pytest.mark.parametrize("fault, message", [
    ("{id: k, kind: kill, target: c3.pipeline.1, at: 1s}",
     "faults[0].target: c3.pipeline[1]: unknown client 'c3' (clients: c1, c2)"),
    ("{id: k, kind: kill, target: c11.pipeline.1, at: 1s}",
     "unknown client 'c11' (did you mean 'c1'?)"),
    ("{id: k, kind: kill, target: nn.pipeline.1, at: 1s}",
     "nn.pipeline[1]: 'nn' is not a client"),
    ("{id: k, kind: kill, target: c2.pipeline.1, at: 1s}",
     "c2.pipeline[1]: c2 never writes or appends, so it has no pipeline"),
    ("{id: k, kind: kill, target: c1.pipeline.3, at: 1s}",
     "c1.pipeline[3]: a pipeline has at most dfs.replication = 3 DataNodes (positions 0..2); "
     "use an index below 3 or c1.pipeline[last]"),
    ("{id: k, kind: kill, target: c1.pipeline.last, at: 0s}",
     "c1.pipeline[last]: the fault fires at 0s, before c1 can have a pipeline (its first "
     "write starts at 0s); fire it on an event of the write, e.g. at: {event: "
     "client.pipeline.setup, node: c1}"),
    ("{id: k, kind: kill, target: c1.pipline.1, at: 1s}", "(the word is pipeline)"),
    ("{id: k, kind: crash_client, target: c1.pipeline.1, at: 1s}",
     "is a pipeline position, which only a fault's target, links or between may name"),
    ("{id: k, kind: kill, target: c1.pipeline.0, at: {event: client.ack, node: c1.pipeline.0}}",
     "is a pipeline position, which only a fault's target, links or between may name"),
])
def test_loader_refuses_with_one_line(fault, message):
    found = issues_of(f"  - {fault}\n")
    assert len(found) == 1, found
    assert message in found[0] and "\n" not in found[0]


def test_a_fault_after_a_time_fault_is_timed_through_the_chain():
    pace = "  - {id: p, kind: bandwidth, links: [[c1, dn1]], rate: 1MiB, at: 0s}\n"
    assert any("fires at 0s, before c1 can have a pipeline" in m for m in issues_of(
        pace + "  - {id: k, kind: kill, target: c1.pipeline.1, at: {after: p}}\n"))
    assert issues_of(pace + "  - {id: k, kind: kill, target: c1.pipeline.1, "
                            "at: {after: p, delay: 1s}}\n") == []


def test_a_time_before_a_late_write_is_refused():
    text = BASE.replace("size: 1MiB}", "size: 1MiB, at: 3s}")
    _, issues = check_scenario_text(text + "  - {id: k, kind: kill, target: c1.pipeline.1, at: 2s}\n")
    assert [i.message for i in issues] == [
        "c1.pipeline[1]: the fault fires at 2s, before c1 can have a pipeline (its first write "
        "starts at 3s); fire it on an event of the write, e.g. at: {event: "
        "client.pipeline.setup, node: c1}"]


def test_timing_is_said_once_per_fault():
    found = issues_of("  - {id: p, kind: partition, links: [[c1.pipeline.0, c1.pipeline.1]], "
                      "at: 0s}\n")
    assert len(found) == 1 and "fires at 0s" in found[0]


def test_resume_by_position_is_refused_with_the_fix():
    found = issues_of("  - {id: p, kind: pause, target: c1.pipeline.1, at: 1s}\n"
                      "  - {id: r, kind: resume, target: c1.pipeline.1, at: 2s}\n")
    assert found == ["faults[1].target: a resume names the node its pause stopped, not a "
                     "pipeline position (the pipeline has changed by then); end that pause "
                     "with duration: or {kind: heal, fault: ID}"]


def test_a_link_from_a_position_to_itself_is_refused():
    found = issues_of("  - {id: p, kind: partition, links: [[c1.pipeline.1, c1.pipeline[1]]], "
                      "at: 1s}\n".replace("c1.pipeline[1]", "'c1.pipeline[1]'"))
    assert found == ["faults[0].links[0]: a link joins two different nodes, got "
                     "[c1.pipeline[1], c1.pipeline[1]]"]


def test_brackets_in_a_flow_list_get_a_hint():
    _, issues = check_scenario_text(
        BASE + "  - {id: p, kind: partition, links: [[c1, c1.pipeline[0]]], at: 1s}\n")
    assert len(issues) == 1
    assert "inside [...] write a pipeline position as c1.pipeline.0" in issues[0].message


# -- resolution -----------------------------------------------------------------------------

def ev(name, node, ts, pipeline, **kw):
    return {"event": name, "node": node, "ts": ts, "pipeline": pipeline, "block": 7, **kw}


def test_the_latest_pipeline_of_that_client_wins():
    t = PipelineTracker()
    t.observe_all([
        ev("client.pipeline.setup", "c1", 1.0, ["dn3", "dn1", "dn4"]),
        ev("client.pipeline.setup", "c2", 3.0, ["dn2", "dn4", "dn1"]),
        ev("nn.block.allocate", "nn", 4.0, ["dn2", "dn3", "dn4"]),
    ])
    assert t.resolve(PipelinePosition("c1", 1)) == "dn1"
    assert t.resolve(PipelinePosition("c2", 1)) == "dn4"
    t.observe(ev("client.pipeline.recovered", "c1", 2.0, ["dn3", "dn4"]))
    assert t.resolve(PipelinePosition("c1", 1)) == "dn4"
    assert t.resolve(PipelinePosition("c1", "last")) == "dn4"
    t.observe(ev("client.pipeline.setup", "c1", 1.5, ["dn2", "dn2", "dn2"]))  # older: ignored
    assert t.resolve(PipelinePosition("c1", 0)) == "dn3"


def test_an_allocation_for_the_client_is_its_pipeline_before_the_setup():
    # a fault triggered on nn.block.allocate acts on the links of the setup to come
    t = PipelineTracker()
    t.observe({"event": "client.stream.open", "node": "c1", "ts": 0.5, "path": "/f",
               "holder": "DFSClient_c1"})
    t.observe({"event": "client.stream.open", "node": "c2", "ts": 0.6, "path": "/g",
               "holder": "DFSClient_c2"})
    t.observe(ev("nn.block.allocate", "nn", 1.0, ["dn2", "dn4", "dn1"], path="/f",
                 holder="DFSClient_c1"))
    assert t.resolve(PipelinePosition("c1", 1)) == "dn4"
    # no holder named (a log line without it): the path's opener
    t.observe(ev("nn.block.allocate", "nn", 2.0, ["dn3", "dn1", "dn2"], path="/g", holder=None))
    assert t.resolve(PipelinePosition("c2", "last")) == "dn2"
    # the setup that follows (or a newer allocation after it failed) wins as before
    t.observe(ev("client.pipeline.setup", "c1", 1.1, ["dn2", "dn4", "dn1"]))
    t.observe(ev("nn.block.allocate", "nn", 3.0, ["dn1", "dn3", "dn2"], path="/f",
                 holder="DFSClient_c1"))
    assert t.resolve(PipelinePosition("c1", 0)) == "dn1"
    # an allocation for a holder and path no client opened names no client
    t.observe(ev("nn.block.allocate", "nn", 4.0, ["dn4", "dn4", "dn4"], path="/h",
                 holder="other"))
    assert t.resolve(PipelinePosition("c1", 0)) == "dn1"


def test_no_pipeline_yet_is_an_error_not_a_no_op():
    with pytest.raises(PositionError, match=r"c1.pipeline\[1\] cannot be resolved: c1 has set "
                                            r"up no pipeline yet"):
        PipelineTracker().resolve(PipelinePosition("c1", 1))


def test_a_position_beyond_the_pipeline_is_an_error():
    t = PipelineTracker()
    t.observe(ev("client.pipeline.recovered", "c1", 2.0, ["dn3", "dn4"]))
    with pytest.raises(PositionError, match=r"c1's pipeline is \[dn3, dn4\] "
                                            r"\(client.pipeline.recovered of block 7\), it has "
                                            r"no position 2"):
        t.resolve(PipelinePosition("c1", 2))


def _tracker(pipeline):
    t = PipelineTracker()
    t.observe(ev("client.pipeline.setup", "c1", 1.0, pipeline))
    return t


def test_resolve_fault_replaces_target_links_and_groups():
    sc = load_scenario_text(BASE + """\
  - {id: k, kind: kill, target: c1.pipeline.1, at: {event: client.ack, node: c1}}
  - {id: p, kind: latency, links: [[c1.pipeline.0, c1.pipeline.1], [dn2, c1.pipeline.last]],
     latency: 1s, at: {event: client.ack, node: c1}}
  - {id: q, kind: partition, between: [[c1], [c1.pipeline.0]], at: {event: client.ack, node: c1}}
  - {id: n, kind: kill, target: dn1, at: 3s}
""")
    t = _tracker(["dn3", "dn1", "dn4"])
    kill, texts = resolve_fault(sc.fault("k"), t)
    assert (kill.target, texts) == ("dn1", ["c1.pipeline[1]=dn1"])
    lat, texts = resolve_fault(sc.fault("p"), t)
    assert lat.links == (("dn3", "dn1"), ("dn2", "dn4"))
    assert texts == ["c1.pipeline[0]=dn3", "c1.pipeline[1]=dn1", "c1.pipeline[last]=dn4"]
    part, texts = resolve_fault(sc.fault("q"), t)
    assert part.between == (("c1",), ("dn3",)) and part.links == (("c1", "dn3"), ("dn3", "c1"))
    assert texts == ["c1.pipeline[0]=dn3"]
    plain = sc.fault("n")
    assert not has_positions(plain) and resolve_fault(plain, t) == (plain, [])


def test_a_link_that_resolves_to_one_node_is_an_error():
    sc = load_scenario_text(BASE + "  - {id: p, kind: latency, links: [[dn3, c1.pipeline.0]], "
                                   "latency: 1s, at: 2s}\n")
    with pytest.raises(PositionError, match=r"the link dn3 -> c1.pipeline\[0\] resolves to "
                                            r"dn3 -> dn3"):
        resolve_fault(sc.fault("p"), _tracker(["dn3", "dn1", "dn4"]))


def test_groups_that_resolve_to_one_node_in_two_groups_are_an_error():
    sc = load_scenario_text(BASE + "  - {id: q, kind: partition, between: [[dn3], "
                                   "[c1.pipeline.0]], at: 2s}\n")
    with pytest.raises(PositionError, match=r"fault q: dn3 is in two groups of between.*"
                                            r"\(c1.pipeline\[0\] = dn3\)"):
        resolve_fault(sc.fault("q"), _tracker(["dn3", "dn1", "dn4"]))


@pytest.fixture
def tag_kind():
    """A kind registered here alone, whose nodes are in fields named `node` and `peers`."""
    import dataclasses
    from typing import ClassVar

    from faults.kinds import register, unregister
    from harness.scenario.fields import ListOf, NodeRef, spec
    from harness.scenario.model import ANY_NODE, Fault as ScenarioFault

    @register("tag")
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class TagFault(ScenarioFault):
        """Tag a node, and tell its peers."""

        node_fields: ClassVar[tuple[str, ...]] = ("node", "peers")
        node: str = spec(NodeRef(ANY_NODE, "tag needs a node", positions=True),
                         "the node or its pipeline position", required=True)
        peers: tuple[str, ...] = spec(ListOf(NodeRef(ANY_NODE, "peers are nodes",
                                                     positions=True)), "the peers", default=())

    yield TagFault
    unregister("tag")


def test_positions_are_resolved_in_the_node_fields_a_kind_declares(tag_kind):
    sc = load_scenario_text(BASE + "  - {id: g, kind: tag, node: c1.pipeline.1, "
                                   "peers: [dn2, c1.pipeline.last], at: 2s}\n")
    fault = sc.fault("g")
    assert has_positions(fault)
    tagged, texts = resolve_fault(fault, _tracker(["dn3", "dn1", "dn4"]))
    assert type(tagged) is tag_kind and (tagged.node, tagged.peers) == ("dn1", ("dn2", "dn4"))
    assert texts == ["c1.pipeline[1]=dn1", "c1.pipeline[last]=dn4"]
    assert tagged.targets == ("dn1", "dn2", "dn4")
    with pytest.raises(PositionError, match="c1 has set up no pipeline"):
        resolve_fault(fault, PipelineTracker())


def test_live_pipelines_read_the_run_logs_as_they_grow(tmp_path):
    live = LivePipelines(tmp_path)
    with pytest.raises(PositionError):
        live.refresh().resolve(PipelinePosition("c1", 0))
    with open(tmp_path / "c1.jsonl", "w") as f:
        f.write(json.dumps(ev("client.pipeline.setup", "c1", 1.0, ["dn2", "dn1", "dn3"])) + "\n")
        f.flush()
        assert live.refresh().resolve(PipelinePosition("c1", 0)) == "dn2"
        # a second log of the same client (Hadoop: c1-dfsclient.jsonl) with a newer pipeline
        with open(tmp_path / "c1-dfsclient.jsonl", "w") as g:
            g.write(json.dumps(ev("client.pipeline.recovered", "c1", 2.0, ["dn1", "dn3"])) + "\n")
        assert live.refresh().resolve(PipelinePosition("c1", 0)) == "dn1"
    live.close()


# -- the injection event ----------------------------------------------------------------------

class _Nothing(Fault):
    kind = "nothing"

    @property
    def target(self):
        return "dn3"

    def _apply(self):
        pass

    def _undo(self):
        pass


def test_the_inject_event_records_the_resolution(tmp_path):
    path = tmp_path / "harness.jsonl"
    log = harness_log(str(path))
    plain, named = _Nothing(fault_id="a", log=log), _Nothing(fault_id="b", log=log)
    named.resolved = ["c1.pipeline[1]=dn3"]
    plain.inject()
    named.inject()
    log.close()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert "resolved" not in lines[0]
    assert lines[1]["target"] == "dn3" and lines[1]["resolved"] == ["c1.pipeline[1]=dn3"]


# -- the runner ----------------------------------------------------------------------------------

def test_an_unresolvable_position_stops_the_run_with_its_reason(tmp_path):
    from harness.runner import Run, RunError
    from hdfs_contract.events import EventLog
    sc = load_scenario_text(BASE + "  - {id: k, kind: kill, target: c1.pipeline.1, "
                                   "at: {event: client.ack, node: c1}}\n")
    from harness.systems import SystemUnderTest
    run = Run.__new__(Run)          # only what _resolve_positions uses
    run.events_dir, run.pipelines = str(tmp_path), None
    run.system = SystemUnderTest()
    run.log = EventLog(str(tmp_path / "harness.jsonl"), "harness", "harness")
    with pytest.raises(RunError, match=r"fault k: c1.pipeline\[1\] cannot be resolved: c1 has "
                                       r"set up no pipeline yet"):
        run._resolve_positions(sc.fault("k"))
    errors = [json.loads(line) for line in (tmp_path / "harness.jsonl").read_text().splitlines()]
    assert [(e["event"], e["fault"], e["error"]) for e in errors] == [
        ("harness.fault.error", "k", "PositionError")]
    # once c1 logged its pipeline, the same fault resolves
    with open(tmp_path / "c1.jsonl", "w") as f:
        f.write(json.dumps(ev("client.pipeline.setup", "c1", 1.0, ["dn4", "dn2", "dn1"])) + "\n")
    spec, texts = run._resolve_positions(sc.fault("k"))
    assert (spec.target, texts) == ("dn2", ["c1.pipeline[1]=dn2"])
    run.pipelines.close()
    run.log.close()


def test_a_position_is_resolved_after_the_system_caught_up_its_events(tmp_path):
    """The client's recovery, logged but not yet adapted into events/ when the fault
    fires, is what the position resolves against (Hadoop's adapters poll their logs)."""
    from harness.runner import Run
    from harness.systems import SystemUnderTest
    from hdfs_contract.events import EventLog
    sc = load_scenario_text(BASE + "  - {id: k, kind: kill, target: c1.pipeline.0, "
                                   "at: {event: client.ack, node: c1}}\n")
    client_log = EventLog(str(tmp_path / "c1.jsonl"), "c1", "client")
    client_log.emit("client.pipeline.setup", path="/f", block=1, gs=1, stage="PIPELINE_SETUP_CREATE",
                    pipeline=["dn1", "dn2", "dn3"])

    class Adapted(SystemUnderTest):
        def catch_up_events(self):      # the recovery line reaches events/ only now
            client_log.emit("client.pipeline.recovered", path="/f", block=1, old_gs=1, gs=2,
                            pipeline=["dn2", "dn3"])

    run = Run.__new__(Run)
    run.events_dir, run.pipelines, run.system = str(tmp_path), None, Adapted()
    run.log = EventLog(str(tmp_path / "harness.jsonl"), "harness", "harness")
    spec, resolved = run._resolve_positions(sc.fault("k"))
    assert spec.target == "dn2" and resolved == ["c1.pipeline[0]=dn2"]
