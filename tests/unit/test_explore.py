"""The explorer's pure parts: failure points from a run's events, the faults applicable
at a point, schedules as scenarios (valid ones), the novelty-first queue, shrinking, and
how a run is judged. Hand-written events; no cluster."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from harness.explore import shrink as shrinking
from harness.explore.engine import classify, finding_signature, time_split
from harness.explore.points import FailurePoint, extract_points, run_start_ts
from harness.explore.schedules import (FaultChoice, Schedule, ScheduleQueue, Step, faults_at,
                                       scenario_doc, to_yaml)
from harness.scenario import load_scenario_text
from harness.reconcile.verdict import Verdict

B1, B2 = 1073741825, 1073741826


def ev(ts, node, event, **fields):
    role = {"nn": "namenode", "harness": "harness"}.get(node) or (
        "datanode" if node.startswith("dn") else "client")
    return {"ts": ts, "node": node, "role": role, "event": event, **fields}


RUN = [
    ev(0.5, "dn1", "dn.register", nn="nn"),                          # before the run's start
    ev(1.0, "harness", "harness.node.start", target="nn"),
    ev(1.1, "nn", "nn.file.create", path="/f", holder="h"),
    ev(1.2, "nn", "nn.block.allocate", path="/f", block=B1, gs=1, pipeline=["dn1", "dn2", "dn3"]),
    ev(1.3, "dn1", "dn.pipeline.setup", block=B1, gs=1, stage="PIPELINE_SETUP_CREATE",
       pipeline=["dn1", "dn2", "dn3"], upstream="c1", downstream="dn2"),
    ev(1.31, "dn2", "dn.pipeline.setup", block=B1, gs=1, stage="PIPELINE_SETUP_CREATE",
       pipeline=["dn2", "dn3"], upstream="dn1", downstream="dn3"),
    *[ev(1.4 + i / 100, "c1", "client.ack", block=B1, seqno=i) for i in range(7)],
    ev(1.5, "c1", "client.hflush", path="/f", offset=100),
    ev(1.6, "nn", "nn.block.allocate", path="/f", block=B2, gs=2, pipeline=["dn3", "dn1", "dn2"]),
    ev(1.7, "dn2", "dn.pipeline.setup", block=B2, gs=2, stage="PIPELINE_SETUP_CREATE",
       pipeline=["dn2"], upstream="dn1", downstream=None),
    ev(1.8, "c1", "client.hflush", path="/f", offset=200),
    ev(1.9, "dn2", "dn.recovery.init_replica", block=B2, recovery_id=5),
    ev(2.0, "nn", "nn.file.complete", path="/f", ok=True),
]

SCENARIO = """\
name: base
seed: 3
timeout: 30s
cluster:
  datanodes: 3
  config: {dfs.blocksize: 64KiB}
workload:
  - {id: w1, client: c1, op: write, path: /f, size: 128KiB, hflush_every: 32KiB}
expect:
  checks: all
  files: {/f: {closed: true}}
"""


def points():
    return extract_points(RUN)


# -- points ---------------------------------------------------------------------------------

def test_points_are_protocol_events_of_the_run_with_their_occurrence():
    ps = points()
    assert run_start_ts(RUN) == 1.0
    assert all(p.event != "dn.register" for p in ps)         # not a point, and before start
    setups = [p for p in ps if p.event == "dn.pipeline.setup" and p.node == "dn2"]
    assert [(dict(p.where), p.nth) for p in setups] == [
        ({"block": B1, "stage": "PIPELINE_SETUP_CREATE"}, 1),
        ({"block": B2, "stage": "PIPELINE_SETUP_CREATE"}, 1)]
    hflushes = [p for p in ps if p.event == "client.hflush"]
    assert [(dict(p.where), p.nth) for p in hflushes] == [({"path": "/f"}, 1), ({"path": "/f"}, 2)]
    assert [p.index for p in ps] == list(range(len(ps)))
    assert ps[0].ts == pytest.approx(0.1)


def test_acks_are_sampled_first_middle_last_of_each_block():
    acks = [p.nth for p in points() if p.event == "client.ack"]
    assert acks == [1, 4, 7]


def test_a_point_is_an_exact_trigger_that_the_scenario_loader_accepts():
    p = next(p for p in points() if p.event == "dn.pipeline.setup" and p.node == "dn2")
    assert p.trigger() == {"event": "dn.pipeline.setup", "node": "dn2",
                           "where": {"block": B1, "stage": "PIPELINE_SETUP_CREATE"},
                           "exact": True}
    assert p.kind == "dn.pipeline.setup:PIPELINE_SETUP_CREATE"
    assert FailurePoint.from_json(json.loads(json.dumps(p.to_json()))) == p


def test_recovery_points_are_told_apart():
    kinds = {p.event: p.is_recovery for p in points()}
    assert kinds["dn.recovery.init_replica"] and not kinds["nn.file.create"]


# -- faults and schedules -------------------------------------------------------------------

def test_faults_at_a_datanode_setup_cover_its_pipeline_neighbours_and_links():
    p = next(p for p in points() if p.event == "dn.pipeline.setup" and p.node == "dn2")
    choices = faults_at(p, ["dn1", "dn2", "dn3"], ["c1"])
    kinds = {(c.kind, c.target, c.relation) for c in choices}
    assert ("kill", "dn2", "self") in kinds
    assert ("kill", "dn1", "upstream") in kinds and ("pause", "dn3", "downstream") in kinds
    assert ("restart", "nn", "namenode") in kinds
    links = {(c.label, c.target) for c in choices if isinstance(c.target, tuple)}
    assert links == {(k, link) for k in ("partition-reject", "partition-blackhole",
                                         "cut_after_bytes")
                     for link in (("dn1", "dn2"), ("dn2", "dn3"))}
    assert not any(c.kind == "crash_client" for c in choices)   # no client at this point


def test_faults_at_a_namenode_point_reach_the_writer_of_its_file():
    p = next(p for p in points() if p.event == "nn.file.create")
    choices = faults_at(p, ["dn1", "dn2", "dn3"], ["c1"], writers={"/f": "c1"})
    assert {(c.kind, c.target) for c in choices} >= {("crash_client", "c1"), ("pause", "c1"),
                                                     ("restart", "nn")}
    assert any(c.target == ("c1", "nn") for c in choices)


def test_every_schedule_is_a_valid_plain_scenario():
    base = yaml.safe_load(SCENARIO)
    ps = points()
    count = 0
    for p in ps:
        for fault in faults_at(p, ["dn1", "dn2", "dn3"], ["c1"], {"/f": "c1"}):
            s = Schedule((Step(p, fault),))
            doc = scenario_doc(base, s)
            scenario = load_scenario_text(to_yaml(doc), f"{s.id}.yaml")   # raises if invalid
            assert scenario.faults[-1].at.exact
            assert doc["expect"] == {"checks": "all"}
            count += 1
    assert count > 50
    two = Schedule((Step(ps[1], FaultChoice("kill", "dn1", "first")),
                    Step(ps[-2], FaultChoice("restart", "dn2", "self", (("down", "1s"),)))),
                   scale=0.5)
    doc = scenario_doc(base, two)
    sc = load_scenario_text(to_yaml(doc), "two.yaml")
    assert [f.id for f in sc.faults] == ["x1", "x2"] and sc.workload[0].size == 64 * 1024


def test_schedule_ids_are_stable_and_differ_by_fault_point_and_scale():
    p = points()
    a = Schedule((Step(p[1], FaultChoice("kill", "dn1", "first")),))
    assert a.id == Schedule((Step(p[1], FaultChoice("kill", "dn1", "first")),)).id
    assert a.id != Schedule((Step(p[2], FaultChoice("kill", "dn1", "first")),)).id
    assert a.id != Schedule((Step(p[1], FaultChoice("kill", "dn2", "first")),)).id
    assert a.id != Schedule(a.steps, scale=0.5).id
    assert Schedule.from_json(json.loads(json.dumps(a.to_json()))) == a


# -- prioritisation -------------------------------------------------------------------------

def test_the_queue_hands_out_novel_signatures_before_any_repeat():
    ps = [p for p in points() if p.event == "client.ack"]       # three points of one kind
    kill = FaultChoice("kill", "dn1", "first")
    pause = FaultChoice("pause", "dn1", "first", (("duration", "4s"),))
    q = ScheduleQueue()
    for p in ps:
        q.push(Schedule((Step(p, kill),)))
    q.push(Schedule((Step(ps[-1], pause),)))       # the latest point, queued last
    order = [q.pop() for _ in range(4)]
    sigs = [s.steps[0].fault.kind for s in order]
    assert sigs == ["kill", "pause", "kill", "kill"]   # the novel kind before any repeat
    assert q.pop() is None
    # within a signature, the earlier point first
    kills = [s.steps[0].point.index for s in order if s.steps[0].fault.kind == "kill"]
    assert kills == sorted(kills)


def test_the_queue_prefers_a_novel_depth_two_schedule_to_a_repeated_depth_one():
    ps = points()
    acks = [p for p in ps if p.event == "client.ack"]
    kill = FaultChoice("kill", "dn1", "first")
    q = ScheduleQueue()
    first = Schedule((Step(acks[0], kill),))
    q.push(first)
    assert q.pop() == first
    repeat = Schedule((Step(acks[1], kill),))      # same point kind and fault as `first`
    q.push(repeat)
    deep = Schedule((Step(acks[0], kill),
                     Step(ps[-2], FaultChoice("kill", "dn2", "self"))), parent=first.id)
    q.push(deep)
    assert q.pop() == deep
    assert q.pop() == repeat
    assert not q.push(repeat)                      # a schedule is queued once


# -- shrinking ------------------------------------------------------------------------------

def test_shrinking_drops_a_fault_moves_to_the_earliest_point_and_halves_the_workload():
    ps = points()
    hflush2 = next(p for p in ps if p.event == "client.hflush" and p.nth == 2)
    crash = FaultChoice("crash_client", "c1", "self")
    noise = FaultChoice("restart", "nn", "namenode", (("down", "1s"),))
    original = Schedule((Step(hflush2, crash), Step(ps[-1], noise)))
    runs: list[list[Schedule]] = []

    def still_fails(options):          # the bug: a client crash at any hflush, any size
        runs.append(options)
        return [any(s.fault.kind == "crash_client" and s.point.event == "client.hflush"
                    for s in o.steps) for o in options]

    smallest, kept = shrinking.shrink(original, ps, still_fails, max_runs=20)
    assert kept == ["drop a fault", "earlier point", "smaller workload", "smaller workload"]
    assert [s.fault.kind for s in smallest.steps] == ["crash_client"]
    assert smallest.steps[0].point.nth == 1 and smallest.scale == 0.25


def test_shrinking_keeps_the_schedule_when_nothing_smaller_fails_and_respects_its_budget():
    ps = points()
    s = Schedule((Step(ps[3], FaultChoice("kill", "dn2", "self")),))
    calls = []
    smallest, kept = shrinking.shrink(s, ps, lambda opts: calls.append(opts) or [False] * len(opts),
                                      max_runs=2)
    assert smallest == s and kept == [] and sum(len(c) for c in calls) <= 2


# -- judging a run --------------------------------------------------------------------------

@pytest.mark.parametrize("result, verdict, expected", [
    ({"status": "completed", "errors": []}, {"checks": [{"id": "P1", "status": "pass"}]},
     ("pass", [])),
    ({"status": "completed", "errors": []}, {"checks": [{"id": "L2", "status": "fail"},
                                                         {"id": "B1", "status": "fail"}]},
     ("fail", ["B1", "L2"])),
    ({"status": "timeout", "errors": ["the workload did not finish within the scenario timeout "
                                      "(30s); pending: op w1 unfinished"]}, {"checks": []},
     ("hung", [])),
    ({"status": "timeout", "errors": ["the workload did not finish within the scenario timeout "
                                      "(30s); pending: inject x2"]}, {"checks": []},
     ("unreached", [])),
    ({"status": "unreached", "errors": ["the workload ended and the cluster settled before "
                                        "the events the faults wait for came; pending: "
                                        "inject x2"]}, {"checks": [{"id": "I1", "status": "fail"}]},
     ("unreached", ["I1"])),
    ({"status": "completed", "errors": ["no quiescence: /f is still open (lease h)"]},
     {"checks": []}, ("hung", [])),
    ({"status": "error", "errors": ["OSError: x"]}, None, ("error", [])),
])
def test_a_run_is_judged_by_its_checks_and_how_it_ended(result, verdict, expected):
    typed = None if verdict is None else Verdict.from_json({"passed": False, **verdict})
    assert classify(result, typed) == expected


def _run_dir(tmp_path, events):
    (tmp_path / "events").mkdir()
    for node in {e["node"] for e in events}:
        (tmp_path / "events" / f"{node}.jsonl").write_text(
            "".join(json.dumps(e) + "\n" for e in events if e["node"] == node))
    return str(tmp_path)


NO_CHECKS = Verdict(scenario="s", passed=False)
TIMEOUT = {"status": "timeout", "errors": ["the workload did not finish within the scenario "
                                           "timeout (30s); pending: op w2, op w2 unfinished"]}


def test_a_timeout_with_an_operation_stuck_in_a_live_client_is_a_hang(tmp_path):
    run = _run_dir(tmp_path, [ev(1.0, "c1", "client.op.start", op_id="w1"),
                              ev(1.1, "c1", "client.op.end", op_id="w1"),
                              ev(1.2, "c2", "client.op.start", op_id="w2")])
    assert classify({**TIMEOUT, "run_dir": run}, NO_CHECKS) == ("hung", [])


def test_a_timeout_whose_operation_never_started_or_lost_its_client_is_no_hang(tmp_path):
    # w2 waited for an event the fault took away; w1's client was crashed by the fault
    run = _run_dir(tmp_path, [ev(1.0, "c1", "client.op.start", op_id="w1"),
                              ev(1.1, "harness", "harness.node.kill", target="c1")])
    assert classify({**TIMEOUT, "run_dir": run}, NO_CHECKS) == ("unreached", [])


def test_a_finding_signature_names_outcome_checks_point_kind_and_fault_kind():
    p = next(p for p in points() if p.event == "client.hflush")
    s = Schedule((Step(p, FaultChoice("partition", ("c1", "dn1"), "link",
                                      (("mode", "reject"),))),))
    assert finding_signature("fail", ["L2"], s) == "fail:L2:client.hflush/partition-reject"


def test_time_split_reads_the_phases_of_a_run(tmp_path):
    (tmp_path / "events").mkdir()
    h = [ev(0.0, "harness", "harness.run.start"), ev(1.0, "harness", "harness.node.start",
                                                     target="nn"),
         ev(1.1, "harness", "harness.node.start", target="c1"),
         ev(3.0, "harness", "harness.quiescent", waited=1.5),
         ev(3.5, "harness", "harness.run.end")]
    (tmp_path / "events" / "harness.jsonl").write_text("".join(json.dumps(e) + "\n" for e in h))
    (tmp_path / "events" / "c1.jsonl").write_text(json.dumps(
        ev(1.3, "c1", "client.op.end", op_id="w1")) + "\n")
    # client_jvm: c1's first own event 0.2 s after the harness started it
    assert time_split(str(tmp_path)) == {"start": 1.1, "workload": 0.2, "recovery_wait": 0.2,
                                         "quiescence": 1.5, "stop": 0.5, "client_jvm": 0.2}
    # a Hadoop run says how its start went: the format (a copy) and the daemons' JVMs
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "hadoop-start.json").write_text(json.dumps(
        {"format": 0.01, "format_copied": True, "daemons": 0.9}))
    split = time_split(str(tmp_path))
    assert (split["format"], split["daemons"], split["start"]) == (0.01, 0.9, 1.1)


def test_each_worker_draws_ports_from_its_own_slice(monkeypatch, tmp_path):
    import multiprocessing

    from harness import ports
    from harness.explore.engine import _init_worker
    from hdfs_contract import ports as contract_ports
    monkeypatch.setattr(ports, "PORT_SLOTS_DIR", str(tmp_path))
    counter = multiprocessing.get_context("spawn").Value("i", 0)
    slices = []
    for _ in range(2):
        monkeypatch.setattr(contract_ports.ALLOCATOR, "range", (20000, 32000))
        _init_worker(counter, 2)
        slices.append(contract_ports.port_range())
        assert contract_ports.free_port() in range(*contract_ports.port_range())
    # one process here: its second claim takes the next slot (and lets the first go)
    assert slices == [(20000, 21500), (21500, 23000)]


def test_every_slot_taken_falls_back_to_the_explorers_own_slices(monkeypatch, tmp_path):
    import fcntl
    import multiprocessing

    from harness import ports
    from harness.explore import engine
    from hdfs_contract import ports as contract_ports
    monkeypatch.setattr(ports, "PORT_SLOTS_DIR", str(tmp_path))
    monkeypatch.setattr(ports, "PORT_SLOTS", 1)
    held = open(tmp_path / "slot-0.lock", "w")     # another process's slot, as far as
    try:                                            # flock can tell (another open file)
        fcntl.flock(held, fcntl.LOCK_EX)
        monkeypatch.setattr(contract_ports.ALLOCATOR, "range", (20000, 32000))
        counter = multiprocessing.get_context("spawn").Value("i", 1)
        engine._init_worker(counter, 2)
        assert contract_ports.port_range() == (26000, 32000)
    finally:
        held.close()


def _hold_a_slot(directory, got):
    import time

    from harness import ports
    got.put(ports.claim_port_slot(directory=directory))
    time.sleep(60)     # killed by the test


def test_concurrent_explorers_claim_different_slots_until_one_exits(tmp_path):
    """Two processes (two explorers' workers) never share a slot; a slot whose holder
    exited is free again, also when it died without cleaning up."""
    import multiprocessing

    from harness import ports
    ctx = multiprocessing.get_context("spawn")
    got = ctx.Queue()
    procs = [ctx.Process(target=_hold_a_slot, args=(str(tmp_path), got)) for _ in range(2)]
    try:
        for p in procs:
            p.start()
        slots = sorted(got.get(timeout=60) for _ in procs)
        assert slots == [0, 1]
        procs[0].kill()           # no cleanup: the kernel drops the lock with the process
        procs[0].join(30)
        mine = ports.claim_port_slot(directory=str(tmp_path))
        assert mine in slots and mine != ports.claim_port_slot(slots=0,
                                                                 directory=str(tmp_path))
    finally:
        for p in procs:
            p.kill()
            p.join(30)


def _depth2_targets(tmp_path, parent: Schedule):
    """A function of a run's events (written as a run folder's events/) to the targets of
    the second faults the explorer of SCENARIO gives `parent` after that run."""
    from harness.explore.engine import Explorer
    base = tmp_path / "base.yaml"
    base.write_text(SCENARIO)
    x = Explorer(str(base), str(tmp_path / "out"), 60)
    run = tmp_path / "run"
    (run / "events").mkdir(parents=True)

    def targets_with(events):
        for old in (run / "events").iterdir():
            old.unlink()
        for node in {e["node"] for e in events}:
            with open(run / "events" / f"{node}.jsonl", "w") as f:
                f.writelines(json.dumps(e) + "\n" for e in events if e["node"] == node)
        return {s.steps[1].fault.target for s in x.depth2(parent, str(run))}
    return targets_with


def test_depth_two_leaves_out_faults_on_a_client_that_had_ended_its_work(tmp_path):
    """A second fault at a recovery point that comes after the writer ended its last op
    (lease recovery of a file its client gave up on) cannot crash or pause that client:
    its process is gone (such a pause failed the run: "c1 is not running")."""
    recovery = ev(5.0, "nn", "nn.recovery.start", path="/f", block=B1, gs=1, recovery_id=7,
                  primary="dn1", pipeline=["dn1", "dn2"])
    events = [ev(1.0, "harness", "harness.node.start", target="nn"),
              ev(1.1, "nn", "nn.file.create", path="/f", holder="h"),
              ev(2.0, "harness", "harness.fault.inject", fault="x1", kind="partition"),
              ev(2.5, "c1", "client.op.end", op_id="w1", op="write", path="/f", ok=False),
              recovery]
    first = Step(next(p for p in points() if p.event == "nn.file.create"),
                 FaultChoice("partition", ("c1", "nn"), "link:writer->nn",
                             (("duration", 3.0), ("mode", "reject"))))
    targets_with = _depth2_targets(tmp_path, Schedule((first,)))
    targets = targets_with(events)
    assert targets and "dn1" in targets
    assert not {t for t in targets if t == "c1" or (isinstance(t, tuple) and "c1" in t)}
    # the same recovery while c1 still works on: the client is a target again
    targets = targets_with([e for e in events if e["event"] != "client.op.end"])
    assert "c1" in targets


def test_depth2_spares_a_node_the_first_fault_has_down_at_the_point(tmp_path):
    """A second fault at a point inside the first fault's restart of dn2 (its down
    time) cannot pause, kill or restart dn2: dn2 is not running then, and such a run
    ended in an error ("dn2 is not running"). Once dn2 is back, it is a target again."""
    from harness.explore.engine import down_spans
    recovery = ev(2.5, "nn", "nn.recovery.start", path="/f", block=B1, gs=1, recovery_id=7,
                  primary="dn1", pipeline=["dn1", "dn2"])
    events = [ev(1.0, "harness", "harness.node.start", target="nn"),
              ev(1.1, "nn", "nn.file.create", path="/f", holder="h"),
              ev(2.0, "harness", "harness.fault.inject", fault="x1", kind="restart"),
              ev(2.0, "harness", "harness.node.stop", target="dn2"),
              recovery,
              ev(3.0, "harness", "harness.node.start", target="dn2")]
    first = Step(next(p for p in points() if p.event == "nn.file.create"),
                 FaultChoice("restart", "dn2", "other", (("down", 1.0),)))
    targets_with = _depth2_targets(tmp_path, Schedule((first,)))
    assert down_spans(events) == {"dn2": [(2.0, 3.0)]}
    during = targets_with(events)
    assert "dn1" in during and "dn2" not in during
    back = targets_with([e for e in events if e is not recovery] + [dict(recovery, ts=3.5)])
    assert "dn2" in back
    # a node stopped and never started again is down to the end
    assert down_spans([ev(1.0, "harness", "harness.node.kill", target="dn3")]) == \
        {"dn3": [(1.0, float("inf"))]}


# -- kinds from the registry ----------------------------------------------------------------

@pytest.fixture
def nudge_kind():
    """A kind registered here alone, explored on DataNodes and clients (field `node`)."""
    import dataclasses
    from typing import ClassVar

    from faults.kinds import ExploreVariant, register, unregister
    from harness.scenario.fields import Duration, NodeRef, spec
    from harness.scenario.model import ANY_NODE, Fault as ScenarioFault

    @register("nudge")
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class NudgeFault(ScenarioFault):
        """Nudge a node."""

        node_fields: ClassVar[tuple[str, ...]] = ("node",)
        explore: ClassVar = (ExploreVariant(("datanode", "client"), (("gap", "2s"),)),)
        explore_order: ClassVar[int] = 25          # after restart, before pause
        node: str = spec(NodeRef(ANY_NODE, "nudge needs a node"), "the node", required=True)
        gap: float = spec(Duration(), "the gap", default=0.0, example="0s")

    yield NudgeFault
    unregister("nudge")


def test_a_registered_kind_with_explore_variants_is_explored_in_its_order(nudge_kind):
    p = next(p for p in points() if p.event == "dn.pipeline.setup" and p.node == "dn2")
    choices = faults_at(p, ["dn1", "dn2", "dn3"], ["c1"])
    on_dn2 = [c.kind for c in choices if c.target == "dn2"]
    assert on_dn2 == ["kill", "restart", "nudge", "pause"]
    nudge = next(c for c in choices if c.kind == "nudge" and c.target == "dn2")
    assert (nudge.relation, nudge.params) == ("self", (("gap", "2s"),))
    assert not any(c.kind == "nudge" for c in choices if c.target == "nn"
                   or isinstance(c.target, tuple))
    doc = scenario_doc(yaml.safe_load(SCENARIO), Schedule((Step(p, nudge),)))
    assert doc["faults"][-1] == {"id": "x1", "kind": "nudge", "node": "dn2", "gap": "2s",
                                 "at": p.trigger()}
    scenario = load_scenario_text(to_yaml(doc))
    assert isinstance(scenario.fault("x1"), nudge_kind) and scenario.fault("x1").gap == 2.0


def test_each_run_records_its_share_of_the_verification_batch(tmp_path, monkeypatch):
    import time as _time

    from harness.explore.engine import Explorer
    from harness.explore.report import summary_numbers
    from harness.reconcile import api
    from harness.reconcile.verdict import Verdict

    def verify_runs(dirs):
        _time.sleep(0.2)
        return [Verdict(scenario=None, passed=True, run_dir=d) for d in dirs]

    monkeypatch.setattr(api, "verify_runs", verify_runs)
    base = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "explore-bases", "write-3-blocks.yaml")
    x = Explorer(base, str(tmp_path / "out"), 60)
    results = [{"run_dir": f"/r{i}", "status": "completed"} for i in range(2)]
    x._verify(results)
    assert all(0.1 <= r["verify"] <= 1.0 for r in results)
    assert x.state.verified == 2
    x.state.elapsed = 3600.0
    assert summary_numbers(x.state)["verified_per_hour"] == 2.0
