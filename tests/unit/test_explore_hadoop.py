"""The explorer on Apache Hadoop (`hdfs-chaos explore --system hadoop`), its pure parts:
failure points from adapted Hadoop events, schedules with plain event triggers (no exact
injection: Hadoop's JVMs cannot be held at an event) that run alone on Hadoop, the
one-line refusal of a base Hadoop cannot run, and the note in the summary. No cluster."""

from __future__ import annotations

import os

import pytest
import yaml

from harness.explore.engine import Explorer, ExploreError, default_workers
from harness.explore.points import extract_points
from harness.explore.report import write_summary
from harness.explore.schedules import Schedule, Step, faults_at, scenario_doc, to_yaml
from harness.scenario import load_scenario_text

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HADOOP_BASE = os.path.join(ROOT, "explore-bases", "hadoop-write.yaml")
MINI_BASE = os.path.join(ROOT, "explore-bases", "write-3-blocks.yaml")
B1, B2 = 1073741825, 1073741826
NOTE = "hadoop 3.4.2: no exact injection; faults fire on the adapted log event, ~20 ms late"


def ev(ts, node, event, **fields):
    role = {"nn": "namenode", "harness": "harness"}.get(node) or (
        "datanode" if node.startswith("dn") else "client")
    return {"ts": ts, "node": node, "role": role, "event": event, "source": "hadoop-log",
            **fields}


# what a clean Hadoop run's adapted logs look like (field names of logmap.py)
HADOOP_RUN = [
    ev(0.4, "nn", "nn.dn.register", dn="dn1"),                       # before the run's start
    {"ts": 1.0, "node": "harness", "role": "harness", "event": "harness.node.start",
     "target": "nn"},
    ev(1.1, "nn", "nn.file.create", path="/data/f1", holder="DFSClient_c1"),
    ev(1.2, "nn", "nn.block.allocate", path="/data/f1", block=B1, gs=1001,
       pipeline=["dn3", "dn1", "dn2"]),
    ev(1.3, "c1", "client.pipeline.setup", path="/data/f1", block=B1, gs=1001,
       stage="PIPELINE_SETUP_CREATE", pipeline=["dn3", "dn1", "dn2"]),
    ev(1.31, "dn3", "dn.pipeline.receive", block=B1, gs=1001, upstream="c1"),
    ev(1.32, "dn1", "dn.pipeline.receive", block=B1, gs=1001, upstream="dn3"),
    ev(1.33, "dn2", "dn.pipeline.receive", block=B1, gs=1001, upstream="dn1"),
    *[ev(1.4 + i / 100, "c1", "client.ack", path="/data/f1", block=B1, seqno=i)
      for i in range(4)],
    ev(1.5, "c1", "client.hflush", path="/data/f1", offset=32768),
    ev(1.55, "nn", "nn.file.fsync", path="/data/f1"),
    ev(1.6, "nn", "nn.block.allocate", path="/data/f1", block=B2, gs=1002,
       pipeline=["dn1", "dn2", "dn3"]),
    ev(1.7, "dn2", "dn.pipeline.receive", block=B2, gs=1002, upstream="dn1"),
    ev(2.0, "nn", "nn.file.complete", path="/data/f1"),
]


def hadoop_points():
    return extract_points(HADOOP_RUN)


def test_failure_points_come_from_the_adapted_hadoop_events():
    ps = hadoop_points()
    kinds = [(p.event, p.node) for p in ps]
    assert ("nn.dn.register", "nn") not in kinds                    # before the run started
    receive = [p for p in ps if p.event == "dn.pipeline.receive"]
    # the DataNode's "Receiving <block>" line is its pipeline-setup point, per block
    assert [(p.node, dict(p.where)) for p in receive] == [
        ("dn3", {"block": B1}), ("dn1", {"block": B1}), ("dn2", {"block": B1}),
        ("dn2", {"block": B2})]
    assert dict(receive[1].fields)["upstream"] == "dn3"
    acks = [p.nth for p in ps if p.event == "client.ack"]
    # first and middle: the last of one Hadoop run may not come in the next
    assert acks == [1, 2]


def test_schedules_on_hadoop_use_plain_event_triggers_and_name_the_system():
    with open(HADOOP_BASE) as f:
        base = yaml.safe_load(f)
    count = 0
    for p in hadoop_points():
        for fault in faults_at(p, ["dn1", "dn2", "dn3"], ["c1"], {"/data/f1": "c1"}):
            s = Schedule((Step(p, fault),))
            doc = scenario_doc(base, s, exact=False, system=("hadoop", "3.4.2"))
            sc = load_scenario_text(to_yaml(doc), f"{s.id}.yaml")    # raises if invalid
            at = sc.faults[-1].at
            assert at.exact is False and at.delay == 0.0
            assert (at.event, at.node, at.nth) == (p.event, p.node, p.nth)
            assert dict(at.where) == dict(p.where)
            assert sc.cluster.system == "hadoop" and sc.cluster.hadoop_version == "3.4.2"
            count += 1
    assert count > 40
    # the mini-HDFS's schedules keep their exact triggers and name no system
    p = hadoop_points()[3]
    doc = scenario_doc(base, Schedule((Step(p, faults_at(p, ["dn1", "dn2", "dn3"], ["c1"])[0]),)))
    assert doc["faults"][-1]["at"]["exact"] is True and "system" not in doc["cluster"]


def mini_base_no_agent(tmp_path) -> str:
    """explore-bases/write-3-blocks.yaml without the agent: its 1 s soft limit is one
    only the agent can set on Hadoop."""
    with open(MINI_BASE) as f:
        doc = yaml.safe_load(f)
    doc["cluster"]["hadoop_agent"] = False
    path = tmp_path / "write-3-blocks-no-agent.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_a_base_hadoop_cannot_run_is_refused_in_one_line(tmp_path):
    with pytest.raises(ExploreError) as e:
        Explorer(mini_base_no_agent(tmp_path), str(tmp_path / "out"), 60, system="hadoop")
    msg = str(e.value)
    assert "\n" not in msg
    assert "cannot be explored on hadoop 3.4.2" in msg and "lease.soft-limit" in msg
    assert "explore-bases/hadoop-write.yaml" in msg
    assert not os.path.exists(tmp_path / "out")


def no_agent_base(tmp_path) -> str:
    """explore-bases/hadoop-write.yaml without the agent: no exact injection on Hadoop."""
    with open(HADOOP_BASE) as f:
        doc = yaml.safe_load(f)
    doc["cluster"]["hadoop_agent"] = False      # the agent is on by default on 3.x
    del doc["cluster"]["config"]["lease.soft-limit"]   # only the agent can set it
    path = tmp_path / "hadoop-write-no-agent.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_the_explorer_on_hadoop_says_it_has_no_exact_injection(tmp_path):
    said = []
    base = no_agent_base(tmp_path)
    x = Explorer(base, str(tmp_path / "out"), 60, system="hadoop", hadoop_version="3.4.2",
                 say=said.append)
    assert x.exact is False and x.note == NOTE
    p = hadoop_points()[1]
    doc = x.schedule_doc(Schedule((Step(p, faults_at(p, ["dn1", "dn2", "dn3"], ["c1"])[0]),)))
    assert "exact" not in doc["faults"][-1]["at"] and doc["cluster"]["system"] == "hadoop"
    # the same base on the mini-HDFS: exact, no note
    m = Explorer(base, str(tmp_path / "m"), 60)
    assert m.exact is True and m.note is None
    # the summary carries the note
    x._load_or_init()
    assert x.state.system == "hadoop 3.4.2" and x.state.note == NOTE
    page = open(write_summary(x)).read()
    assert NOTE in page and "on hadoop 3.4.2" in page


def test_workers_default_to_three_a_core_on_the_mini_hdfs_and_one_on_hadoop(tmp_path):
    from harness.systems import get_system
    mini, hadoop = get_system("minihdfs"), get_system("hadoop")
    assert default_workers(mini, cores=2) == 6 and default_workers(mini, cores=1) == 3
    assert default_workers(hadoop, cores=2) == 2 and default_workers(hadoop, cores=1) == 1
    base = no_agent_base(tmp_path)
    cores = os.cpu_count() or 1
    h = Explorer(base, str(tmp_path / "h"), 60, system="hadoop", hadoop_version="3.4.2",
                 say=lambda m: None)
    m = Explorer(base, str(tmp_path / "m"), 60)
    assert (h.workers, m.workers) == (cores, 3 * cores)
    assert m.batch == max(8, 2 * m.workers)
    assert Explorer(base, str(tmp_path / "w"), 60, workers=1).workers == 1


def test_resume_refuses_another_system(tmp_path):
    out = str(tmp_path / "out")
    x = Explorer(HADOOP_BASE, out, 60, system="hadoop")
    x._load_or_init()
    x.save()
    with pytest.raises(ExploreError, match="explores on hadoop 3.4.2, not minihdfs"):
        Explorer(HADOOP_BASE, out, 60, resume=True)._load_or_init()


def test_an_exact_trigger_on_hadoop_fires_as_an_event_trigger(tmp_path):
    """No hold channel on Hadoop (nothing there would announce an event: the fault would
    never fire); the run says so and the trigger engine takes the trigger."""
    from harness.runner import Run
    from harness.systems import get_system
    with open(no_agent_base(tmp_path)) as f:
        base = yaml.safe_load(f)
    p = hadoop_points()[1]
    doc = scenario_doc(base, Schedule((Step(p, faults_at(p, ["dn1", "dn2", "dn3"], ["c1"])[0]),)))
    sc = load_scenario_text(to_yaml(doc), "exact.yaml")
    assert sc.faults[-1].at.exact
    said: list[str] = []
    run = Run(sc, "local", str(tmp_path), None, False, said.append, system=get_system("hadoop"))
    run._start_holds()
    assert run.holds is None
    assert any("exact injection needs the mini-HDFS" in m for m in said), said
    mini = Run(sc, "local", str(tmp_path), None, False, said.append,
               system=get_system("minihdfs"))
    mini._start_holds()
    try:
        assert mini.holds is not None
    finally:
        mini._stop_holds()


def test_with_the_agent_faults_at_the_agents_events_are_exact_the_others_not(tmp_path):
    """Hadoop's capability says exact with the agent on (asked with the base's run
    fields); it holds only at the agent's events, so a fault at a point of the logs gets
    a plain trigger, and every schedule is one Hadoop runs. A base the system cannot run
    is still refused."""
    from harness.explore.points import read_run_events
    from harness.systems.hadoop import Hadoop
    x = Explorer(HADOOP_BASE, str(tmp_path / "out"), 60, system="hadoop",
                 hadoop_version="3.4.2")
    assert x.exact is True and "exact injection at the agent's events" in x.note
    real = os.path.join(ROOT, "tests", "unit", "data", "hadoop-3.4.2-explore-write")
    exact, plain = set(), set()
    for p in extract_points(read_run_events(real)):
        s = Schedule((Step(p, faults_at(p, ["dn1", "dn2", "dn3"], ["c1"])[0]),))
        doc = x.schedule_doc(s)
        assert doc["cluster"]["system"] == "hadoop" and doc["cluster"]["hadoop_agent"] is True
        sc = load_scenario_text(to_yaml(doc), f"{s.id}.yaml")
        assert Hadoop("3.4.2").issues(sc) == [], (p.event, dict(p.where))
        (exact if sc.faults[-1].at.exact else plain).add(p.kind)
    assert {"dn.pipeline.setup:PIPELINE_SETUP_CREATE", "dn.replica.state:RBW"} <= exact
    assert {"nn.block.allocate", "client.pipeline.setup", "client.hflush",
            "dn.replica.state:FINALIZED", "client.ack"} <= plain
    x._load_or_init()
    assert x.state.exact is True and x.state.system == "hadoop 3.4.2"
    with pytest.raises(ExploreError, match="cannot be explored on hadoop 3.4.2"):
        Explorer(mini_base_no_agent(tmp_path), str(tmp_path / "m"), 60, system="hadoop")


def test_a_writer_whose_lease_outlives_the_run_is_not_crashed(tmp_path):
    """Without a lease.hard-limit key a 3.3 NameNode keeps its hard-coded 20 min: a crash
    of c1 would only show the timeout. The library's bases set 5 s through the agent."""
    with open(os.path.join(ROOT, "explore-bases", "hadoop-append.yaml")) as f:
        doc = yaml.safe_load(f)
    for key in ("lease.soft-limit", "lease.hard-limit"):
        del doc["cluster"]["config"][key]
    append = tmp_path / "append-20min.yaml"
    append.write_text(yaml.safe_dump(doc))
    said = []
    x = Explorer(str(append), str(tmp_path / "a"), 60, system="hadoop",
                 hadoop_version="3.3.6", say=said.append)
    assert x.lost_writers() == {"c1"}
    faults = [s.steps[0].fault for s in x.depth1(hadoop_points())]
    assert not [f for f in faults if f.target == "c1" and f.kind == "crash_client"]
    assert [f for f in faults if f.target == "c1" and f.kind == "pause"]   # a pause ends
    for base in (HADOOP_BASE, os.path.join(ROOT, "explore-bases", "hadoop-append.yaml")):
        w = Explorer(base, str(tmp_path / os.path.basename(base)), 60, system="hadoop",
                     hadoop_version="3.3.6")
        assert w.lost_writers() == set()
        assert [s for s in w.depth1(hadoop_points()) if s.steps[0].fault.kind == "crash_client"]


def test_a_findings_reproducer_runs_on_the_same_hadoop(tmp_path):
    """The shrunk scenario of a finding keeps the base's `systems:`, and names the system,
    its release and the agent in `cluster`, so that `hdfs-chaos run` replays it there."""
    with open(os.path.join(ROOT, "explore-bases", "hadoop-append.yaml")) as f:
        doc = yaml.safe_load(f)
    doc["systems"] = ["minihdfs", "hadoop"]
    base = tmp_path / "base.yaml"
    base.write_text(yaml.safe_dump(doc))
    x = Explorer(str(base), str(tmp_path / "out"), 60, system="hadoop", hadoop_version="3.3.6")
    x._load_or_init()
    p = next(p for p in hadoop_points() if p.event == "client.hflush")
    s = Schedule((Step(p, faults_at(p, ["dn1", "dn2", "dn3"], ["c1"])[0]),))
    x.schedule_file(s)
    x.state.results[s.id] = {"id": s.id, "run_dir": None, "outcome": "fail"}
    group = {"signature": "fail:P3:x", "members": [s.id], "outcome": "fail", "failed": ["P3"]}
    os.makedirs(tmp_path / "out" / "findings")
    x._write_finding(group, s, s, [], shrunk=True)
    sc = load_scenario_text((tmp_path / "out" / group["reproducer"]).read_text(), "f.yaml")
    assert sc.cluster.system == "hadoop" and sc.cluster.hadoop_version == "3.3.6"
    assert sc.cluster.hadoop_agent is True and tuple(sc.systems) == ("minihdfs", "hadoop")


def test_the_writer_is_not_paused_at_its_last_close_where_the_trigger_is_plain(tmp_path):
    """Hadoop's client JVM exits right after its last close: a pause at `client.close` or
    at the successful `nn.file.complete` (log events, plain triggers) came when c1 was
    gone, and the run ended in error ("c1 is not running", 27 Nov 2026). A crash there is
    kept (a kill of a gone process is nothing), and so is the pause at earlier points."""
    from harness.explore.points import read_run_events
    real = os.path.join(ROOT, "tests", "unit", "data", "hadoop-3.4.2-explore-write")
    points = extract_points(read_run_events(real))
    x = Explorer(HADOOP_BASE, str(tmp_path / "out"), 60, system="hadoop",
                 hadoop_version="3.4.2")
    steps = [s.steps[0] for s in x.depth1(points)]
    pauses = {(st.point.event, dict(st.point.where).get("ok")) for st in steps
              if st.fault.kind == "pause" and st.fault.target == "c1"}
    assert ("client.close", None) not in pauses and ("nn.file.complete", True) not in pauses
    assert ("nn.block.allocate", None) in pauses
    crashes = {st.point.event for st in steps if st.fault.kind == "crash_client"}
    assert {"client.close", "nn.file.complete"} <= crashes
