"""With the Hadoop agent on (harness.run.start `hadoop_agent: true`, or the scenario's
`cluster.hadoop_agent` for a folder logged before that field), the checks its events feed
(logmap.AGENT_OBSERVES: P2, P3, P7, L2, B6, H1) are judged on a Hadoop run: they pass on
true logs and fail on broken ones, from events in the agent's own logs
(events/<node>-agent.jsonl, `source: hadoop-agent`); without the agent they skip as not
observable. The runs are the hand-written stories of builders.py, their facts moved to
the agent's logs where the agent is the one source of them on Hadoop."""

from __future__ import annotations

import json
import os

import pytest

from harness.systems.hadoop import logmap

import builders as b

AGENT = "hadoop-agent"
JUDGED = {"repl": ["P2", "P3", "H1"], "lease": ["L2"], "restart": ["B6"], "setup": ["P7"]}


def _agent(r: b.Run, event: str, **match) -> b.Run:
    """The events named `event` (with these fields) come from the agent."""
    return r.edit(event, match, source=AGENT)


def hadoop_dir(r: b.Run, root: str, agent: bool | None, in_yaml: bool = False) -> str:
    """Write `r` as a Hadoop 3.4.2 run: the agent's events in <node>-agent.jsonl (each log
    with its own seq), the system in harness.run.start (`hadoop_agent` unless None) or,
    with `in_yaml`, in the scenario's cluster block only."""
    if in_yaml:
        r.scenario["cluster"].update(system="hadoop", hadoop_version="3.4.2",
                                     hadoop_agent=bool(agent))
    d = r.write(root)
    ev_dir = os.path.join(d, "events")
    for name in sorted(os.listdir(ev_dir)):
        recs = [json.loads(l) for l in open(os.path.join(ev_dir, name))]
        if name == "harness.jsonl" and not in_yaml:
            for e in recs:
                if e["event"] == "harness.run.start":
                    e.update(system="hadoop", system_version="3.4.2")
                    if agent is not None:
                        e["hadoop_agent"] = agent
        own = [e for e in recs if e.get("source") != AGENT]
        moved = [e for e in recs if e.get("source") == AGENT]
        for out, evs in ((name, own), (name.replace(".jsonl", "-agent.jsonl"), moved)):
            if evs:
                with open(os.path.join(ev_dir, out), "w") as f:
                    f.writelines(json.dumps(dict(e, seq=i)) + "\n" for i, e in enumerate(evs))
    return d


def repl(run_id: str, bad: bool = False) -> b.Run:
    """P2, P3, H1: dn2 lost, dn4 added (agent: the replacement and its inputs, each
    replica's RBW at the new GS, the block's COMPLETE)."""
    r = b.pipeline_recovery(run_id)
    _agent(r, "client.pipeline.replace")
    r.edit("dn.replica.state", {"state": "RBW"}, source=AGENT, reason="recover_rbw")
    _agent(r, "nn.block.state", state="COMPLETE")
    if bad:
        r.edit("client.pipeline.replace", {}, decision="not_needed", new_node=None)
        r.edit("dn.replica.state", {"state": "RBW", "gs": 1002}, len=256)
        r.drop("nn.replica.reported")
    return r


def lease(run_id: str, bad: bool = False) -> b.Run:
    """L2: c2 asks for c1's file (agent: requester, force=false), refused before the soft
    limit, taken over after it; the broken log has the early attempt take it over."""
    r = b.lease_recovery(run_id)
    _agent(r, "nn.lease.recover")
    if bad:
        r.edit("nn.lease.recover", {"result": "error"}, result="recovering", error=None)
    return r


def restart(run_id: str, bad: bool = False) -> b.Run:
    """B6: dn1 killed under an open file, its RBW replica loaded back as RWR (agent:
    replica_loaded); the broken log loads it as RBW with no shutdown for restart."""
    r = b.Run(run_id)
    b.start(r)
    b.open_create(r, 1.0)
    b.write(r, 1.1, 0, 512)
    r.edit("dn.replica.state", {"state": "RBW"}, source=AGENT, reason="create")
    r.ev(1.5, "harness", "harness.node.kill", target="dn1")
    r.ev(2.0, "harness", "harness.node.start", target="dn1")
    r.ev(2.0, "dn1", "dn.start", replicas=1)
    r.ev(2.01, "dn1", "dn.replica.state", block=1001, gs=1001, len=512,
         state="RBW" if bad else "RWR", reason="restart_saved" if bad else "restart",
         source=AGENT)
    b.end(r, 3.0)
    return r


def setup(run_id: str, bad: bool = False) -> b.Run:
    """P7: dn1 could not reach dn2 (agent: dn1's connect-ack, firstBadLink dn2; the
    client's failed setup blaming dn2), the next block leaves dn2 out."""
    r = b.Run(run_id)
    b.start(r)
    r.ev(1.0, "harness", "harness.node.start", target="c1")
    r.ev(1.0, "c1", "client.start", holder=b.C1)
    r.ev(1.01, "nn", "nn.file.create", path="/f", holder=b.C1)
    r.ev(1.02, "nn", "nn.block.allocate", path="/f", block=1001, gs=1001, pipeline=b.PIPE,
         holder=b.C1, excluded=[])
    r.ev(1.03, "dn1", "dn.pipeline.setup", block=1001, gs=1001, stage="PIPELINE_SETUP_CREATE",
         pipeline=None, upstream=b.C1, downstream="dn2", status="ERROR", first_bad_link="dn2",
         source=AGENT)
    r.ev(1.04, "c1", "client.pipeline.error", path="/f", block=1001, gs=1001,
         stage="PIPELINE_SETUP_CREATE", pipeline=b.PIPE, error_index=2 if bad else 1,
         bad_node="dn3" if bad else "dn2", acked=None, source=AGENT)
    r.ev(1.05, "nn", "nn.block.abandon", path="/f", block=1001, holder=b.C1)
    r.ev(1.06, "nn", "nn.block.allocate", path="/f", block=1002, gs=1002,
         pipeline=["dn1", "dn3", "dn4"] if not bad else ["dn1", "dn2", "dn4"], holder=b.C1,
         excluded=["dn3"] if bad else ["dn2"])
    b.end(r, 3.0)
    return r


STORIES = {"repl": repl, "lease": lease, "restart": restart, "setup": setup}


def closing_commit(run_id: str, gap: float) -> b.Run:
    """H1 and a closing commitBlockSynchronization (a real 3.4.2 run of
    recover-lease-fencing): the NameNode completes the block inside the call (agent:
    block_complete) and logs the commit's success line when the call returns, 3 ms later;
    no replica of the recovery's GS was reported yet. `gap`: how long after the COMPLETE
    the commit is logged."""
    r = b.lease_recovery(run_id)
    r.drop("nn.replica.reported")
    commit = next(json.loads(l) for l in r.lines["nn"] if '"nn.recovery.commit"' in l)
    r.edit("nn.block.state", {"state": "COMPLETE"}, ts=round(commit["ts"] - gap, 6),
           source=AGENT)
    return r


@pytest.fixture(scope="module")
def verdicts(spark, tmp_path_factory):
    from harness.reconcile.api import verify_loaded
    from harness.reconcile.load import load_runs
    root = str(tmp_path_factory.mktemp("hadoop-agent"))
    dirs = []
    for name, story in STORIES.items():
        dirs.append(hadoop_dir(story(f"{name}-agent"), root, True))
        dirs.append(hadoop_dir(story(f"{name}-bad", bad=True), root, True))
        dirs.append(hadoop_dir(story(f"{name}-noagent"), root, False))
    dirs.append(hadoop_dir(closing_commit("commit-returned", 0.0034), root, True))
    dirs.append(hadoop_dir(closing_commit("commit-later", 1.0), root, True))
    # a folder logged before harness.run.start said: the scenario's cluster block
    dirs.append(hadoop_dir(repl("repl-yaml"), root, True, in_yaml=True))
    runs = load_runs(dirs, spark)
    try:
        return {v.run_id: v.to_json() for v in verify_loaded(runs)}
    finally:
        runs.close()


def _checks(v: dict) -> dict:
    return {c["id"]: c for c in v["checks"]}


@pytest.mark.spark
@pytest.mark.parametrize("story", sorted(STORIES))
def test_agent_checks_pass_on_true_agent_events(verdicts, story):
    v = verdicts[f"{story}-agent"]
    assert (v["system"], v["system_version"]) == ("hadoop", "3.4.2")
    checks = _checks(v)
    for cid in JUDGED[story]:
        assert checks[cid]["status"] == "pass", (cid, checks[cid])
        assert "reason" not in checks[cid] and cid in v["exercised"]


@pytest.mark.spark
@pytest.mark.parametrize("story", sorted(STORIES))
def test_agent_checks_fail_on_broken_agent_events(verdicts, story):
    checks = _checks(verdicts[f"{story}-bad"])
    for cid in JUDGED[story]:
        assert checks[cid]["status"] == "fail", (cid, checks[cid])
        assert checks[cid]["evidence"], cid


@pytest.mark.spark
@pytest.mark.parametrize("story", sorted(STORIES))
def test_without_the_agent_they_skip_as_not_observable(verdicts, story):
    checks = _checks(verdicts[f"{story}-noagent"])
    for cid in JUDGED[story]:
        assert checks[cid]["status"] == "skip"
        assert checks[cid]["reason"] == logmap.skip_reason(cid, "3.4.2"), cid


@pytest.mark.spark
def test_agent_read_from_the_scenario_of_an_older_folder(verdicts):
    checks = _checks(verdicts["repl-yaml"])
    assert [checks[c]["status"] for c in JUDGED["repl"]] == ["pass", "pass", "pass"]


def test_run_info_reads_the_agent(tmp_path):
    from harness.reconcile.observable import run_info
    d = tmp_path / "r"
    (d / "events").mkdir(parents=True)
    start = {"event": "harness.run.start", "system": "hadoop", "system_version": "3.3.6"}
    (d / "events" / "harness.jsonl").write_text(json.dumps(dict(start, hadoop_agent=True)))
    assert run_info(str(d)) == ("hadoop", "3.3.6", True)
    (d / "events" / "harness.jsonl").write_text(json.dumps(dict(start, hadoop_agent=False)))
    # the run's own record wins over its scenario
    assert run_info(str(d), {"cluster": {"hadoop_agent": True}}) == ("hadoop", "3.3.6", False)
    (d / "events" / "harness.jsonl").write_text(json.dumps(start))
    assert run_info(str(d), {"cluster": {"hadoop_agent": True}}) == ("hadoop", "3.3.6", True)
    assert run_info(str(d)) == ("hadoop", "3.3.6", False)
    assert run_info(str(tmp_path / "none")) == ("minihdfs", None, False)


@pytest.mark.spark
def test_complete_inside_a_closing_commit_is_not_judged(verdicts):
    """The commit's line follows its COMPLETE by 3 ms: the block was completed by that
    commit (forcibly, as Hadoop does), not on its replicas; a COMPLETE a second before
    any commit, with no replica reported, is a violation."""
    assert _checks(verdicts["commit-returned"])["H1"]["status"] == "pass"
    h1 = _checks(verdicts["commit-later"])["H1"]
    assert h1["status"] == "fail" and "0 FINALIZED replica" in h1["evidence"][0]["why"]
