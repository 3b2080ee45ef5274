"""The Hadoop agent's wiring: on by default where the release has rules (3.2-3.4), off on
2.x, `cluster.hadoop_agent: false` or --no-hadoop-agent turn it off; the agent gives every
daemon and workload client JVM (not the harness's own) `-javaagent:<byteman>=script:
<generated .btm>` and its agent file; a missing jar is a one-line error naming the fix;
the agent's lines are followed into events/<node>-agent.jsonl; an agent log without an
event is dropped (check I1 would call it empty)."""

from __future__ import annotations

import json
import os
import sys
import types

import pytest

from harness.systems.hadoop import agent, fetch
from harness.systems.hadoop.cluster import AGENT_OUT_PROPERTY, HadoopCluster


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HDFS_CHAOS_HADOOP_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _fake_jar(cache) -> str:
    jar = fetch.agent_jar()
    jar.parent.mkdir(parents=True, exist_ok=True)
    jar.write_bytes(b"PK")
    return str(jar)


def test_off_by_default(tmp_path, cache):
    c = HadoopCluster(str(tmp_path / "c"), "3.4.2", 1)
    assert c.agent_flag is None
    cmd = c.java_command("nn", "Main")
    assert not any(a.startswith(("-javaagent", "-Xbootclasspath")) or AGENT_OUT_PROPERTY in a
                   for a in cmd)


def test_on_every_cluster_and_client_jvm_but_the_harness_own(tmp_path, cache):
    jar = _fake_jar(cache)
    c = HadoopCluster(str(tmp_path / "c"), "3.4.2", 2, agent=True)
    btm = os.path.join(c.dir, "conf", "agent.btm")
    assert c.agent_flag == f"-javaagent:{jar}=script:{btm}"
    assert open(btm).read() == agent.script("3.4.2")
    c.add_client("c1")
    c.add_client("harness")
    for node in ("nn", "dn1", "dn2", "c1"):
        cmd = c.java_command(node, "Main")
        assert c.agent_flag in cmd, node
        out = os.path.join(c.logs_dir, f"{node}.agent")
        assert f"-D{AGENT_OUT_PROPERTY}={out}" in cmd
        assert cmd.index(c.agent_flag) < cmd.index("-cp")     # a JVM option, not an argument
        # Byteman's classes from the boot class path (not verified), before the agent starts
        assert cmd.index(f"-Xbootclasspath/a:{jar}") < cmd.index(c.agent_flag), node
    harness = c.java_command("harness", "Main")
    assert not any(a.startswith(("-javaagent", "-Xbootclasspath")) for a in harness)
    assert AGENT_OUT_PROPERTY == agent.OUT_PROPERTY


def test_the_script_sets_the_lease_limits_the_configuration_cannot(tmp_path, cache):
    _fake_jar(cache)
    c = HadoopCluster(str(tmp_path / "c"), "3.3.6", 1, {"lease.soft-limit": "1s",
                                                      "lease.hard-limit": "3s"}, agent=True)
    text = open(os.path.join(c.dir, "conf", "agent.btm")).read()
    assert text == agent.script("3.3.6", leases=(1.0, 3.0))
    assert "dfs.namenode.lease-hard-limit-sec" not in c.props     # no such key before 3.4
    plain = HadoopCluster(str(tmp_path / "p"), "3.4.2", 1, {"lease.hard-limit": "3s"}, agent=True)
    assert open(os.path.join(plain.dir, "conf", "agent.btm")).read() == agent.script("3.4.2")
    assert plain.props["dfs.namenode.lease-hard-limit-sec"] == "3"


def test_a_missing_jar_is_one_line_naming_the_fix(tmp_path, cache):
    with pytest.raises(fetch.FetchError) as e:
        HadoopCluster(str(tmp_path / "c"), "3.4.2", 1, agent=True)
    msg = str(e.value)
    assert "\n" not in msg and "tools/setup.sh --hadoop" in msg and "byteman-" in msg


def test_fetch_agent_refuses_without_maven(tmp_path, cache, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(fetch.FetchError, match="sudo apt-get install"):
        fetch.fetch_agent()
    assert not fetch.agent_jar().exists()


def test_fetch_agent_keeps_a_cached_jar(tmp_path, cache, monkeypatch):
    jar = _fake_jar(cache)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))     # no mvn needed: already there
    assert str(fetch.fetch_agent()) == jar


@pytest.fixture
def adapters(monkeypatch):
    """The keyword arguments of every LogAdapter the Hadoop system makes (none started)."""
    made = []

    class LogAdapter:
        def __init__(self, **kw):
            made.append(kw)

        def start(self):
            pass

        def stop(self):
            pass

    monkeypatch.setitem(sys.modules, "harness.systems.hadoop.adapter",
                        types.SimpleNamespace(LogAdapter=LogAdapter))
    return made


def _context(cluster, run_dir):
    """A RunContext with what the event sources read (the cluster, the run folder)."""
    from harness.systems import RunContext
    return RunContext(scenario=None, seed=1, run_dir=run_dir, work_dir=cluster.dir,
                      host_routes=dict, storage_path=str, cluster=cluster)


def test_event_sources_follow_each_agent_file(tmp_path, cache, adapters):
    from harness.systems import get_system
    _fake_jar(cache)
    c = HadoopCluster(str(tmp_path / "c"), "3.4.2", 1, agent=True)
    backend = _context(c, str(tmp_path / "run"))
    sut = get_system("hadoop", "3.4.2")
    sut.start_event_sources(backend)
    agents = {kw["node"]: kw for kw in adapters if "mapper" in kw}
    logs = {kw["node"]: kw for kw in adapters if "mapper" not in kw}
    assert sorted(agents) == ["dn1", "nn"]
    assert agents["nn"]["raw_log"] == c.nodes["nn"]["agent_out"]
    assert agents["nn"]["events_out"] == str(tmp_path / "run" / "events" / "nn-agent.jsonl")
    assert isinstance(agents["nn"]["mapper"], agent.AgentMapper)
    # the log adapter leaves to the agent what the agent reports
    assert logs["nn"]["drop"] == agent.REPLACES["namenode"]
    sut.stop_event_sources(backend)


def test_event_sources_without_the_agent_drop_nothing(tmp_path, cache, adapters):
    from harness.systems import get_system
    backend = _context(HadoopCluster(str(tmp_path / "c"), "3.4.2", 1), str(tmp_path / "run"))
    get_system("hadoop", "3.4.2").start_event_sources(backend)
    assert len(adapters) == 2 and all(kw["drop"] == frozenset() for kw in adapters)


def test_empty_agent_logs_are_dropped(tmp_path):
    from harness.systems.hadoop import drop_empty_client_logs
    ev = tmp_path / "events"
    ev.mkdir()
    (ev / "dn1-agent.jsonl").write_text("")
    (ev / "nn-agent.jsonl").write_text('{"seq":0}\n')
    (ev / "dn2.jsonl").write_text("")        # a process's own log is never dropped
    drop_empty_client_logs(str(ev))
    assert sorted(os.listdir(ev)) == ["dn2.jsonl", "nn-agent.jsonl"]


def test_scenario_option_and_an_unsupported_release():
    from harness.scenario.loader import check_scenario_text
    from harness.systems import get_system
    text = ("name: a\ncluster: {system: hadoop, hadoop_agent: true}\n"
            "workload: [{id: w1, op: write, client: c1, path: /a, size: 1}]\n")
    sc, issues = check_scenario_text(text)
    assert issues == [] and sc.cluster.hadoop_agent is True
    assert check_scenario_text(text.replace(", hadoop_agent: true", ""))[0].cluster \
        .hadoop_agent is None       # the default: the system decides (agent_on)
    assert check_scenario_text(text.replace("true}", "yes please}"))[1]
    assert not [i for i in get_system("hadoop", "3.4.2").issues(sc) if "agent" in i]
    issues = get_system("hadoop", "2.9.0").issues(sc)
    assert any(i.startswith("cluster.hadoop_agent: the hadoop agent has no rules for 2.9.0")
               for i in issues)


def test_the_agent_makes_its_checks_observable():
    from harness.systems.hadoop import logmap
    for check in ("P2", "P3", "P7", "L2", "B6", "H1"):
        assert logmap.skip_reason(check, "3.4.2").startswith("not observable on hadoop 3.4.2")
        assert logmap.skip_reason(check, "3.4.2", agent=True) is None
    # with the agent on 3.4.2 no check of CHECKS.md (+ H1) is left unobservable
    assert not [c for c in logmap.OBSERVABLE if logmap.skip_reason(c, "3.4.2", agent=True)]
    events = {r.event for r in agent.TABLE_3_4}
    assert {"client.pipeline.replace", "nn.lease.recover", "dn.replica.state",
            "nn.block.state", "client.pipeline.error", "dn.pipeline.setup"} <= events


def test_the_log_keeps_what_the_agent_does_not_replace():
    """One source per fact: with the agent on, the client's log adapter leaves out its
    client.pipeline.replace and a new block's failed setup (the agent's setup_failed), and
    keeps the errors of a running pipeline, which the agent does not report."""
    drop = agent.REPLACES["client"]
    setup = {"event": "client.pipeline.error", "stage": "PIPELINE_SETUP_CREATE"}
    assert agent.replaced(drop, setup)
    assert agent.replaced(drop, {"event": "client.pipeline.replace", "decision": "added"})
    assert not agent.replaced(drop, dict(setup, stage="DATA_STREAMING"))
    assert not agent.replaced(drop, {"event": "client.pipeline.recovered"})
    assert not agent.replaced(frozenset(), setup)


def test_the_run_records_whether_the_agent_was_on(tmp_path, monkeypatch):
    """harness.run.start carries `hadoop_agent` on a Hadoop run (the verifier reads it to
    judge the checks the agent feeds); nothing is added on the mini-HDFS."""
    from harness.runner import Run
    from harness.scenario.loader import check_scenario_text
    from harness.systems import get_system
    text = ("name: a\ncluster: {system: hadoop, hadoop_agent: true}\n"
            "workload: [{id: w1, op: write, client: c1, path: /a, size: 1}]\n")
    sc, _ = check_scenario_text(text)
    assert get_system("hadoop", "3.4.2").run_fields(sc) == {"hadoop_agent": True}
    off, _ = check_scenario_text(text.replace("hadoop_agent: true", "hadoop_agent: false"))
    assert get_system("hadoop", "3.4.2").run_fields(off) == {"hadoop_agent": False}
    assert get_system("minihdfs").run_fields(sc) == {}
    # the runner writes them into its first event (the run is stopped before it touches
    # any process or port)
    import harness.runner as runner_mod

    def stop():
        raise runner_mod.RunError("stop here")
    monkeypatch.setattr(runner_mod, "cleanup", lambda backend: stop())
    monkeypatch.setattr(runner_mod.ports, "claim_run_ports", lambda: None)
    monkeypatch.setattr(Run, "_teardown", lambda self: None)
    run = Run(sc, "local", str(tmp_path / "out"), 1, False, None,
              system=get_system("hadoop", "3.4.2"))
    run.execute()
    lines = [json.loads(l) for l in open(os.path.join(run.events_dir, "harness.jsonl"))]
    start = next(e for e in lines if e["event"] == "harness.run.start")
    assert (start["system"], start["hadoop_agent"]) == ("hadoop", True)


_PLAIN = ("name: a\ncluster: {system: hadoop}\n"
          "workload: [{id: w1, op: write, client: c1, path: /a, size: 1}]\n")


@pytest.mark.parametrize("release, on", [("3.4.2", True), ("3.3.6", True), ("3.2.4", True),
                                         ("2.9.0", False), ("2.10.2", False)])
def test_the_agent_is_on_by_default_where_the_release_has_rules(release, on, monkeypatch):
    """No `hadoop_agent` in the scenario: on where agent.table_for has a table, silently off
    on 2.x; run_fields records what the run gets, and capabilities follow it."""
    from harness.scenario.loader import check_scenario_text
    from harness.systems import get_system
    monkeypatch.delenv("HDFS_CHAOS_HADOOP_AGENT", raising=False)
    sc, issues = check_scenario_text(_PLAIN)
    assert issues == []
    h = get_system("hadoop", release)
    assert h.agent_on(sc) is on
    assert h.run_fields(sc) == {"hadoop_agent": on}
    assert not [i for i in h.issues(sc) if "agent" in i]      # 2.x: no error either
    assert h.capabilities(h.run_fields(sc)).exact_injection is on
    assert ("P2" in h.capabilities(h.run_fields(sc)).unobservable) is (not on)


def test_false_or_the_cli_flag_turns_the_agent_off(monkeypatch):
    from harness.cli import main
    from harness.scenario.loader import check_scenario_text
    from harness.systems import get_system
    from harness.systems.hadoop import AGENT_ENV
    monkeypatch.delenv(AGENT_ENV, raising=False)
    h = get_system("hadoop", "3.4.2")
    off, _ = check_scenario_text(_PLAIN.replace("hadoop}", "hadoop, hadoop_agent: false}"))
    assert h.run_fields(off) == {"hadoop_agent": False}
    on, _ = check_scenario_text(_PLAIN.replace("hadoop}", "hadoop, hadoop_agent: true}"))
    # --no-hadoop-agent (the environment, for spawned workers too) wins over the scenario
    # and over an explicit true, which then asks nothing of the release either
    monkeypatch.setattr("harness.cli.cmd_validate", lambda args: 0)
    assert main(["validate", "x.yaml"]) == 0 and AGENT_ENV not in os.environ
    seen = {}

    def run(args):
        seen["env"] = os.environ.get(AGENT_ENV)
        return 0
    monkeypatch.setattr("harness.cli.cmd_run", run)
    assert main(["run", "--no-hadoop-agent", "x.yaml"]) == 0
    assert seen["env"] == "off"
    assert h.run_fields(on) == {"hadoop_agent": False}
    assert h.run_fields(check_scenario_text(_PLAIN)[0]) == {"hadoop_agent": False}
    assert get_system("hadoop", "2.9.0").issues(on) == []
    for command in (["diff", "x.yaml"], ["explore", "b.yaml"], ["known-bugs"]):
        from harness.cli import build_parser
        assert build_parser().parse_args(command + ["--no-hadoop-agent"]).no_hadoop_agent


def test_an_exact_trigger_the_agent_cannot_hold(monkeypatch):
    """Asked for (`hadoop_agent: true`), an exact trigger on a log-only event is an error;
    on by default, it fires as an ordinary event trigger (can_hold says which)."""
    from harness.scenario.loader import check_scenario_text
    from harness.systems import get_system
    monkeypatch.delenv("HDFS_CHAOS_HADOOP_AGENT", raising=False)
    text = _PLAIN + ("faults: [{id: f, kind: pause, target: dn1, duration: 1s,\n"
                     "          at: {event: client.hflush, exact: true}}]\n")
    sc, issues = check_scenario_text(text)
    assert issues == []
    h = get_system("hadoop", "3.4.2")
    assert h.issues(sc) == [] and h.agent_on(sc)
    assert not h.can_hold(sc.faults[0].at)
    asked, _ = check_scenario_text(text.replace("hadoop}", "hadoop, hadoop_agent: true}"))
    assert [i for i in h.issues(asked) if i.startswith("fault f: exact: true on client.hflush")]


def test_the_runner_holds_what_the_agent_can_hold_and_triggers_the_rest(tmp_path, monkeypatch):
    """On by default with an exact trigger on a log-only event: the hold channel takes the
    holdable fault, the trigger engine the other (it fires on the adapted log event)."""
    import harness.runner as runner_mod
    from harness.runner import Run
    from harness.scenario.loader import check_scenario_text
    from harness.systems import get_system
    monkeypatch.delenv("HDFS_CHAOS_HADOOP_AGENT", raising=False)
    text = _PLAIN + ("faults:\n"
                     "  - {id: held, kind: kill, target: dn2,\n"
                     "     at: {event: dn.pipeline.setup, node: dn2, exact: true}}\n"
                     "  - {id: logged, kind: pause, target: dn1, duration: 1s,\n"
                     "     at: {event: client.hflush, exact: true}}\n")
    sc, issues = check_scenario_text(text)
    assert issues == []
    said = []
    run = Run(sc, "local", str(tmp_path / "out"), 1, False, said.append,
              system=get_system("hadoop", "3.4.2"))
    run._start_holds()
    try:
        assert run.holds is not None and run.held == {"held"}
        assert any("cannot hold client.hflush" in line for line in said)
        added = []

        class Engine:
            def __init__(self, *a):
                pass

            def add(self, key, trigger):
                added.append(key)

            def start(self):
                raise RuntimeError("stop here")
        monkeypatch.setattr(runner_mod, "TriggerEngine", Engine)
        with pytest.raises(RuntimeError, match="stop here"):
            run._drive()
        assert ("inject", "logged") in added and ("inject", "held") not in added
    finally:
        run._stop_holds()
