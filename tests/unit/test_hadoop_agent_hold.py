"""Exact injection on Hadoop, the JVM side (harness/systems/hadoop/agenthold/AgentHold.java)
with the harness side (harness.exact.HoldServer reading agent lines), in a tiny JVM: the
Byteman agent with one rule through the hold helper on a probe class whose threads log
their steps to a file.

The properties: the thread whose rule fed a hold waits until the fault was fired and
the release went out, while another thread of the JVM goes on; only the n-th match
fires; no answer in time writes a hold_timeout line (mapped to `<role>.hold.timeout`) and
the thread goes on; no harness to reach, or no spec: nothing waits; a rule the spec does
not name never talks to the socket. And the harness side: which events are holdable per
release, and the one-line refusal of an exact trigger on an event only the logs make."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
import time

import pytest

from harness.exact import HoldServer
from harness.scenario import OnEvent
from harness.systems.hadoop import agent, fetch
from hdfs_contract.hold import ENV

PROBE = r"""
import java.io.FileWriter;
import java.io.IOException;

public class HoldProbe {
    static String steps;

    static synchronized void note(String s) {
        try (FileWriter w = new FileWriter(steps, true)) {
            w.write(s + "\n");
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }

    // the failure point: the agent's rule fires at its exit
    static void point(String rule, String what) {
        note(what + ":point");
    }

    static void other(String what) {
        note(what);
    }

    public static void main(String[] args) throws Exception {
        steps = args[0];
        // args[1..]: "<thread>:<rule>" each a thread that reaches the point, then steps on;
        // thread "o" instead notes 30 steps, 50 ms apart, while the others may be held
        Thread[] ts = new Thread[args.length - 1];
        for (int i = 1; i < args.length; i++) {
            final String[] p = args[i].split(":");
            ts[i - 1] = new Thread(() -> {
                if (p[0].equals("o")) {
                    for (int k = 0; k < 30; k++) {
                        other("o" + k);
                        try { Thread.sleep(50); } catch (InterruptedException e) { return; }
                    }
                    return;
                }
                point(p[1], p[0]);
                note(p[0] + ":after");
            }, "probe-" + p[0]);
            ts[i - 1].start();
            ts[i - 1].join(p[0].equals("o") ? 1 : 0);
        }
        for (Thread t : ts) {
            t.join();
        }
        note("end");
    }
}
"""

RULE = """RULE probe {rule}
CLASS HoldProbe
METHOD point
HELPER hdfschaos.AgentHold
AT EXIT
IF $1.equals("{rule}")
DO emit("{rule}", "{rule}" + "\\t" + java.time.Instant.now() + "\\t" + Thread.currentThread().getId() + "\\t" + Thread.currentThread().getName() + "\\t" + $2)
ENDRULE
"""


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    jar = fetch.agent_jar()
    if shutil.which("javac") is None:
        pytest.skip("needs javac (a JDK 17)")
    if not jar.is_file():
        pytest.skip(f"needs the Byteman jar {jar}: python -m harness.systems.hadoop.fetch")
    d = tmp_path_factory.mktemp("probe")
    (d / "HoldProbe.java").write_text(PROBE)
    subprocess.run(["javac", "-nowarn", "-d", str(d), str(d / "HoldProbe.java")], check=True)
    return {"jar": str(jar), "classes": str(d), "helper": agent.hold_helper_dir(str(jar))}


def run_probe(probe, tmp_path, threads: list[str], hold_spec: str | None,
              rules=("replica_created", "file_close"), node="dn2", timeout=60.0):
    """Starts the probe JVM; returns (process, steps file, agent file)."""
    btm = tmp_path / "probe.btm"
    btm.write_text("\n".join(RULE.format(rule=r) for r in rules))
    steps, out = tmp_path / "steps", tmp_path / "agent.out"
    env = {k: v for k, v in os.environ.items() if k != ENV}
    if hold_spec:
        env[ENV] = hold_spec
    cmd = ["java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
           agent.boot_flag(probe["jar"]),     # as the cluster starts its JVMs
           f"-javaagent:{probe['jar']}=script:{btm}", f"-Dhdfs-chaos.agent.out={out}",
           f"-Dhdfs-chaos-node={node}", "-cp",
           os.pathsep.join([probe["classes"], probe["helper"]]), "HoldProbe", str(steps),
           *threads]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return proc, steps, out


def read(path) -> list[str]:
    try:
        with open(path) as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


def finish(proc, timeout=60.0) -> str:
    out, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, out.decode()
    return out.decode()


def records_of(message: dict) -> list[dict]:
    """The test's mapping of a probe line: its rule is the event, its last field `what`."""
    parts = message["agent"].split("\t")
    return [{"ts": time.time(), "event": parts[0], "node": message["node"], "what": parts[4]}]


@pytest.fixture
def server():
    made = []

    def make(triggers: dict, fire, **kw) -> HoldServer:
        s = HoldServer(fire, records_of=records_of, rules_of=lambda t: [t.event], **kw)
        for key, trigger in triggers.items():
            s.add(key, trigger)
        s.start()
        s.arm(0.0)
        made.append(s)
        return s
    yield make
    for s in made:
        s.stop()


def test_the_held_thread_waits_for_the_fault_while_the_others_go_on(probe, tmp_path, server):
    seen: list[list[str]] = []
    steps_path = tmp_path / "steps"

    def fire(key, firing):
        # the other thread steps on while the held one waits at its point
        deadline = time.time() + 20
        while time.time() < deadline and sum(s.startswith("o") for s in read(steps_path)) < 5:
            time.sleep(0.05)
        seen.append(read(steps_path))

    s = server({"k": OnEvent(event="replica_created", node="dn2", exact=True)}, fire,
               release_after=20.0)
    proc, steps, out = run_probe(probe, tmp_path, ["o:-", "a:replica_created"], s.spec_path)
    finish(proc)
    assert [f.key for f in s.fired] == ["k"]
    during = seen[0]
    assert "a:point" in during and "a:after" not in during          # held at its point
    assert sum(x.startswith("o") for x in during) >= 5               # the other went on
    after = read(steps)
    assert after.index("a:point") < after.index("a:after")
    # the line was written before the hold, by the helper, as the plain rules write it
    assert [ln.split("\t")[0] for ln in read(out)] == ["replica_created"]


def test_only_the_nth_match_fires_and_a_done_hold_is_not_announced_again(probe, tmp_path, server):
    fired_at: list[str] = []
    s = server({"k": OnEvent(event="replica_created", node="dn2", nth=2, exact=True)},
               lambda key, firing: fired_at.append(firing.event["what"]))
    threads = ["a:replica_created", "b:replica_created", "c:replica_created",
               "d:replica_created"]
    proc, steps, out = run_probe(probe, tmp_path, threads, s.spec_path)
    finish(proc)
    assert fired_at == ["b"]
    # a, b announced; once b's answer said `done`, c and d never talked to the socket
    assert s.announced == 2
    assert len(read(out)) == 4


def test_a_rule_the_spec_does_not_name_never_talks_to_the_socket(probe, tmp_path, server):
    s = server({"k": OnEvent(event="replica_created", node="dn2", exact=True)},
               lambda key, firing: None)
    proc, steps, out = run_probe(probe, tmp_path, ["a:file_close", "b:file_close"], s.spec_path)
    finish(proc)
    assert s.announced == 0 and s.fired == []
    assert len(read(out)) == 2


def test_a_hold_of_another_node_holds_nothing_here(probe, tmp_path, server):
    s = server({"k": OnEvent(event="replica_created", node="dn1", exact=True)},
               lambda key, firing: None)
    proc, steps, out = run_probe(probe, tmp_path, ["a:replica_created"], s.spec_path)
    finish(proc)
    assert s.announced == 0


def test_no_answer_in_time_writes_hold_timeout_and_the_thread_goes_on(probe, tmp_path):
    # a harness that reads the announcement and never answers
    d = tmp_path / "h"
    d.mkdir()
    sock_path = str(d / "s.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(sock_path)
    srv.listen(4)
    got: list[bytes] = []
    conns = []

    def accept():
        c, _ = srv.accept()
        conns.append(c)
        got.append(c.recv(65536))
    threading.Thread(target=accept, daemon=True).start()
    spec = d / "holds.json"
    spec.write_text(json.dumps({"socket": sock_path, "timeout": 0.5, "holds": [
        {"id": "h0", "event": "dn.replica.state", "node": "dn2", "where": {},
         "rules": ["replica_created"]}]}))
    proc, steps, out = run_probe(probe, tmp_path, ["a:replica_created"], str(spec))
    finish(proc)
    srv.close()
    message = json.loads(got[0])
    assert message["node"] == "dn2" and message["seq"] == 1
    assert message["agent"].split("\t")[0] == "replica_created"
    lines = read(out)
    assert [ln.split("\t")[0] for ln in lines] == ["replica_created", "hold_timeout"]
    assert read(steps)[-2:] == ["a:after", "end"]
    # the mapper turns the helper's line into the contract's <role>.hold.timeout
    ev = agent.AgentMapper("datanode", "3.4.2").feed(lines[1])
    assert [(e["event"], e["held_event"], e["held_seq"], e["timeout"]) for e in ev] == \
        [("dn.hold.timeout", "dn.replica.state", 1, 0.5)]


def test_a_harness_that_cannot_be_reached_holds_nothing(probe, tmp_path):
    spec = tmp_path / "holds.json"
    spec.write_text(json.dumps({"socket": str(tmp_path / "nobody.sock"), "timeout": 30,
                                "holds": [{"id": "h0", "event": "x", "node": None,
                                           "rules": ["replica_created"]}]}))
    t = time.monotonic()
    proc, steps, out = run_probe(probe, tmp_path, ["a:replica_created", "b:replica_created"],
                                 str(spec))
    finish(proc)
    assert time.monotonic() - t < 25       # nobody waited for the 30 s timeout
    assert "hold_timeout" not in "".join(read(out))
    assert read(steps)[-1] == "end"


def test_a_closed_channel_lets_every_waiting_thread_go(probe, tmp_path, server):
    entered = threading.Event()

    def fire(key, firing):
        entered.set()
        time.sleep(30)      # never returns in time: the channel closes under it

    s = server({"k": OnEvent(event="replica_created", node="dn2", exact=True)}, fire,
               timeout=60.0, release_after=60.0)
    proc, steps, out = run_probe(probe, tmp_path, ["a:replica_created"], s.spec_path)
    assert entered.wait(30)
    assert "a:after" not in read(steps)
    s.stop()
    finish(proc, timeout=20)
    assert read(steps)[-2:] == ["a:after", "end"]
    assert "hold_timeout" not in "".join(read(out))


def test_without_the_spec_nothing_is_held(probe, tmp_path):
    proc, steps, out = run_probe(probe, tmp_path, ["a:replica_created"], None)
    finish(proc)
    assert [ln.split("\t")[0] for ln in read(out)] == ["replica_created"]


# -- the harness side: what can be held, and how an announced line is matched ---------------

T = "2099-01-01T00:00:00.000001Z"     # after any run's start

# the events an exact trigger can hold at, per release line (each a rule of the agent)
HOLDABLE = {"client.pipeline.error", "client.pipeline.replace", "dn.pipeline.setup",
            "dn.replica.state", "nn.block.state", "nn.file.close", "nn.file.truncate",
            "nn.lease.recover", "nn.replica.reported"}


@pytest.mark.parametrize("release", ["3.4.2", "3.3.6", "3.2.4"])
def test_the_holdable_events_per_release(release):
    assert set(agent.holdable(release)) == HOLDABLE


@pytest.mark.parametrize("event,where,node,msg", [
    ("nn.block.allocate", {}, "nn", "nn.block.allocate comes from the logs"),
    ("client.hflush", {}, "c1", "client.hflush comes from the logs"),
    ("dn.replica.state", {}, "dn2", "give where {reason: one of create"),
    ("dn.replica.state", {"reason": "write"}, "dn2", "the logs make dn.replica.state too"),
    ("nn.block.state", {"state": "COMMITTED"}, "nn", "{state: one of COMPLETE}"),
    ("nn.lease.recover", {}, "dn1", "in the namenode only"),
    ("client.stream.error", {}, "c1", "the workload client makes it too"),
])
def test_an_exact_trigger_the_agent_cannot_hold_is_refused_in_one_line(event, where, node, msg):
    with pytest.raises(ValueError) as e:
        agent.hold_rules("3.4.2", event, where, node)
    assert msg in str(e.value) and "\n" not in str(e.value)


def test_the_truncate_line_says_whether_a_recovery_was_started():
    m = agent.AgentMapper("namenode", "3.4.2")
    ev, = m.feed(f"truncate\t{T}\t9\tIPC Server handler 3\t/data/t\t1049576\tfalse")
    assert {k: ev[k] for k in ("event", "path", "len", "ok", "source")} == {
        "event": "nn.file.truncate", "path": "/data/t", "len": 1049576, "ok": False,
        "source": "hadoop-agent"}
    assert "nn.file.truncate" in agent.REPLACES["namenode"]


def test_hold_rules_name_only_the_rules_that_make_the_event():
    assert agent.hold_rules("3.4.2", "dn.replica.state", {"reason": "create"}, "dn2") == \
        ["replica_created"]
    assert agent.hold_rules("3.4.2", "dn.replica.state", {"reason": "restart"}, None) == \
        ["replica_loaded"]
    # a call in parts: the exit that makes the event and the parts before it
    assert agent.hold_rules("3.4.2", "nn.lease.recover", {"force": True}, "nn") == sorted(
        ["recover_lease_entry", "recover_lease_released", "recover_lease_exit",
         "recover_lease_error"])
    assert agent.hold_rules("3.4.2", "client.pipeline.error",
                            {"stage": "PIPELINE_SETUP_CREATE"}, "c1") == ["setup_failed"]


def test_the_script_sends_only_the_held_rules_through_the_helper():
    text = agent.script("3.4.2", {"replica_created"})
    block = text.split("RULE hdfs-chaos replica_created\n", 1)[1].split("ENDRULE", 1)[0]
    assert f"HELPER {agent.HOLD_HELPER}\n" in block
    assert 'DO emit("replica_created", "replica_created" + "\\t"' in block
    other = text.split("RULE hdfs-chaos block_complete\n", 1)[1].split("ENDRULE", 1)[0]
    assert "HELPER" not in other and "traceln" in other
    assert agent.script("3.4.2") == agent.script("3.4.2", frozenset())
    assert "HELPER" not in agent.script("3.4.2")


@pytest.mark.parametrize("release", ["3.4.2", "3.3.6", "3.2.4"])
def test_byteman_type_checks_the_held_rules_through_the_helper(release):
    lib = fetch.lib_dir(release)
    if not lib.is_dir() or not fetch.agent_jar().is_file() or shutil.which("javac") is None:
        pytest.skip(f"needs the hadoop {release} jars, the Byteman jar and a JDK")
    every = frozenset(n for names in agent.holdable(release).values() for n in names)
    assert agent.check_script(release, os.path.join(str(lib), "*"), str(fetch.agent_jar()),
                              every) == []


class _Cluster:
    nodes = {"dn2": {"role": "datanode"}, "nn": {"role": "namenode"}}

    def address_map(self):
        return {}


def test_hold_records_map_an_announced_line_to_its_contract_event_with_its_node():
    records = agent.HoldRecords("3.4.2", lambda: _Cluster())
    ev, = records({"node": "dn2", "seq": 1, "agent":
                   f"replica_created\t{T}\t7\tDataXceiver\t1073741826\t1001\t0\tRBW\tcreate"})
    assert (ev["event"], ev["node"], ev["block"], ev["reason"]) == \
        ("dn.replica.state", "dn2", 1073741826, "create")
    # an entry part makes no event yet; its exit, on the same thread, does
    assert records({"node": "nn", "seq": 1, "agent": f"recover_lease_entry\t{T}\t3\th\t"
                    "RECOVER_LEASE\t/f\tDFSClient_B\ttrue\tDFSClient_A"}) == []
    ev, = records({"node": "nn", "seq": 2, "agent": f"recover_lease_exit\t{T}\t3\th\tfalse"})
    assert (ev["event"], ev["node"], ev["result"], ev["holder"]) == \
        ("nn.lease.recover", "nn", "recovering", "DFSClient_A")
    assert records({"node": "nn", "seq": 3, "agent": "garbage"}) == []


def test_the_server_matches_mapped_lines_on_where_and_nth_and_releases_the_rest():
    """HoldServer with the Hadoop mapping: the announcements of dn2 whose contract event
    matches (reason create, the 2nd block) fire; the others are released at once."""
    fired = []
    s = HoldServer(lambda key, firing: fired.append(firing.event["block"]),
                   records_of=agent.HoldRecords("3.4.2", lambda: _Cluster()),
                   rules_of=lambda t: agent.hold_rules("3.4.2", t.event, dict(t.where), t.node))
    s.add("k", OnEvent(event="dn.replica.state", node="dn2", where={"reason": "create"},
                       nth=2, exact=True))
    s.start()
    s.arm(0.0)
    try:
        with open(s.spec_path) as f:
            assert json.load(f)["holds"][0]["rules"] == ["replica_created"]
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(s.socket_path)
        c.settimeout(10)
        answers = []
        for seq, (rule, block, reason) in enumerate(
                [("replica_recover_rbw", 1, "recover_rbw"), ("replica_created", 2, "create"),
                 ("replica_created", 3, "create"), ("replica_created", 4, "create")], 1):
            line = f"{rule}\t{T}\t7\tx\t{block}\t1001\t0\tRBW\t{reason}"
            c.sendall(json.dumps({"node": "dn2", "seq": seq, "agent": line}).encode() + b"\n")
            answers.append(json.loads(c.makefile().readline()))
        c.close()
    finally:
        s.stop()
    assert fired == [3]
    assert [a["seq"] for a in answers] == [1, 2, 3, 4]
    assert [a["done"] for a in answers] == [[], [], ["h0"], ["h0"]]


def test_the_mini_hdfs_announcement_is_read_as_before():
    """Without records_of, the announced record itself is matched (the mini-HDFS path)."""
    fired = []
    s = HoldServer(lambda key, firing: fired.append(firing.event["x"]))
    s.add("k", OnEvent(event="dn.pipeline.setup", node="dn2", exact=True))
    s.start()
    s.arm(0.0)
    try:
        with open(s.spec_path) as f:
            assert "rules" not in json.load(f)["holds"][0]
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(s.socket_path)
        c.settimeout(10)
        c.sendall(json.dumps({"node": "dn2", "seq": 5, "record": {
            "ts": time.time(), "event": "dn.pipeline.setup", "node": "dn2", "x": 1}}).encode()
            + b"\n")
        assert json.loads(c.makefile().readline())["seq"] == 5
        c.close()
    finally:
        s.stop()
    assert fired == [1]


def test_hadoop_can_hold_with_the_agent_only_and_refuses_log_only_exact_triggers():
    from harness.scenario import load_scenario_text
    from harness.systems.hadoop import Hadoop
    h = Hadoop("3.4.2")
    assert h.capabilities({"hadoop_agent": True}).exact_injection
    assert not h.capabilities({"hadoop_agent": False}).exact_injection
    assert not h.capabilities().exact_injection
    text = """
name: t
cluster: {datanodes: 3, hadoop_agent: true}
workload:
  - {id: w1, op: write, client: c1, path: /f, size: 1KiB}
faults:
  - id: k
    kind: kill
    target: dn2
    at: {event: %s, node: %s, exact: true}
"""
    ok = load_scenario_text(text % ("dn.pipeline.setup", "dn2"))
    assert h.hold_issues(ok) == []
    bad = load_scenario_text(text % ("client.hflush", "c1"))
    issue, = h.hold_issues(bad)
    assert issue.startswith("fault k: exact: true on client.hflush: on hadoop only")
    assert issue in h.issues(bad)


def test_a_stream_the_client_gives_up_is_a_stream_error():
    """DFSOutputStream.abort (the renewer gave up the client's files): the workload's
    writer may never call the stream again, so the agent tells it."""
    m = agent.AgentMapper("client", "3.4.2")
    ev, = m.feed(f"stream_abort\t{T}\t31\tLeaseRenewer:root@localhost:4100\t/data/f1\t60")
    assert {k: ev[k] for k in ("event", "path", "error", "reason", "source")} == {
        "event": "client.stream.error", "path": "/data/f1", "error": "IOException",
        "reason": "Lease timeout of 60 seconds expired.", "source": "hadoop-agent"}
    assert "stream_abort" in agent.script("3.4.2")
