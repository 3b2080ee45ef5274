"""The docker backend end to end: scenarios run in containers, node faults through the
Docker API, the disconnect fault, and nothing left behind, by a normal run or a killed one.

Every test here needs a Docker engine and is skipped (with the backend's own one-line
reason) only when none answers. The runs skip the verifier: these tests check what the
backend does (events, final state, containers), and the verifier has tests of its own.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from harness.backends import BackendError, cleanup_all
from harness.backends import docker as backend
from harness.runner import run_scenario
from harness.scenario import load_scenario_text
from hdfs_contract.events import EventLog, read_events
from minihdfs.rpc import RpcClient

pytestmark = pytest.mark.docker

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAST = textwrap.dedent("""\
    dfs.blocksize: 1MiB
    dfs.heartbeat.interval: 300ms
    dfs.namenode.heartbeat.recheck-interval: 2s
    dfs.namenode.stale.datanode.interval: 1500ms
    dfs.client.block.write.replace-datanode-on-failure.best-effort: true
    dfs.namenode.lease-recheck-interval-ms: 200ms
    dfs.namenode.redundancy.interval.seconds: 500ms
    dfs.client.socket-timeout: 3s
    lease.soft-limit: 2s
    lease.hard-limit: 6s
""")


# The writer's links at 2 MiB/s: a 3 MiB write lasts over a second, so a fault fired
# on its first hflushes lands while it writes (unslowed it ends in ~0.2 s).
SLOW_WRITER = """\
- id: slow-writer
  kind: bandwidth
  links: [[c1, dn1], [c1, dn2], [c1, dn3]]
  rate: 2MiB
  at: 0s
"""


def scenario_text(name: str, faults: str, size: str = "3MiB", datanodes: int = 3,
                  timeout: str = "90s", workload_at: str = "0s") -> str:
    return (f"name: {name}\nseed: 11\ntimeout: {timeout}\ncluster:\n  datanodes: {datanodes}\n"
            f"  config:\n    dfs.replication: {min(3, datanodes)}\n{textwrap.indent(FAST, '    ')}"
            f"workload:\n  - {{id: w1, client: c1, op: write, path: /data/f1, size: {size}, "
            f"hflush_every: 256KiB, at: {workload_at}}}\n"
            f"faults:\n{textwrap.indent(textwrap.dedent(faults), '  ')}")


# --- fixtures and helpers ----------------------------------------------------------------

@pytest.fixture(scope="module")
def engine():
    """The Docker engine; the module is skipped (only) when none answers."""
    try:
        client = backend.engine()
    except BackendError as e:
        pytest.skip(str(e))
    yield client
    client.close()


@pytest.fixture
def no_verifier(monkeypatch):
    """The runner takes its "verifier not available" path: no Spark in these tests."""
    monkeypatch.setitem(sys.modules, "harness.reconcile.api", None)


def leftovers(client, run_id: str) -> list[str]:
    """Every container, network and volume labelled with `run_id`."""
    mine = {"label": [f"{backend.PROJECT_LABEL}={backend.PROJECT}",
                      f"{backend.RUN_LABEL}={run_id}"]}
    return ([f"container {c.id[:12]}" for c in client.containers.list(all=True, filters=mine)]
            + [f"network {n.name}" for n in client.networks.list(filters=mine)]
            + [f"volume {v.name}" for v in client.volumes.list(filters=mine)])


def run(scenario, tmp_path) -> tuple[dict, str]:
    verdict = run_scenario(scenario, backend="docker", results_dir=str(tmp_path / "results"))
    return verdict, verdict.run_dir


def events_of(run_dir: str, node: str, name: str | None = None, **where) -> list[dict]:
    return [e for e in read_events(os.path.join(run_dir, "events", f"{node}.jsonl"))
            if (name is None or e["event"] == name)
            and all(e.get(k) == v for k, v in where.items())]


def assert_ran_in_containers(verdict, run_dir: str, datanodes: int = 3) -> None:
    """Every node logged to results/<run-id>/events, on the harness's clock, and the run
    itself completed (the verifier may be unavailable; `passed` is not looked at)."""
    assert (verdict.run_status or "completed") == "completed", verdict.run_errors
    nodes = ["harness", "nn", "c1"] + [f"dn{i}" for i in range(1, datanodes + 1)]
    assert sorted(os.listdir(os.path.join(run_dir, "events"))) == sorted(f"{n}.jsonl" for n in nodes)
    start = events_of(run_dir, "harness", "harness.run.start")[0]
    end = events_of(run_dir, "harness", "harness.run.end")[0]
    assert start["backend"] == "docker"
    for node in nodes[1:]:
        stamps = [e["ts"] for e in events_of(run_dir, node)]
        assert stamps, f"{node} logged nothing"
        # the containers share the host's clock: their events fall inside the run
        assert start["ts"] <= min(stamps) and max(stamps) <= end["ts"], node
    for name in os.listdir(os.path.join(run_dir, "logs")):   # no empty output file
        assert os.path.getsize(os.path.join(run_dir, "logs", name)) > 0, name
    assert not os.path.exists(os.path.join(run_dir, "work"))


def assert_closed_and_agreeing(run_dir: str, path: str = "/data/f1", min_len: int = 0) -> dict:
    """final_state.json: the file closed, every replica the NameNode lists agreeing with
    the block (length, generation stamp, checksum), and the file reads back whole."""
    with open(os.path.join(run_dir, "final_state.json")) as f:
        state = json.load(f)
    entry = next(f for f in state["files"] if f["path"] == path)
    assert entry["closed"] is True and entry["holder"] is None
    assert entry["len"] >= min_len and entry["len"] == sum(b["len"] for b in entry["blocks"])
    for block in entry["blocks"]:
        assert block["state"] == "COMPLETE"
        assert len(block["locations"]) == 3, block
        replicas = [r for dn in block["locations"] for r in state["datanodes"][dn]
                    if r["block"] == block["block"]]
        assert len(replicas) == 3, (block, replicas)
        assert {(r["len"], r["gs"], r["state"]) for r in replicas} == \
            {(block["len"], block["gs"], "FINALIZED")}, replicas
        assert len({r["crc"] for r in replicas}) == 1, replicas
    assert state["readback"][path]["len"] == entry["len"]
    return entry


# --- scenarios end to end ------------------------------------------------------------------

def test_client_crash_after_hflush_runs_in_containers_and_leaves_nothing(engine, no_verifier,
                                                                        tmp_path):
    verdict, run_dir = run(os.path.join(ROOT, "scenarios", "client-crash-after-hflush.yaml"),
                           tmp_path)
    assert "verifier" in (verdict.error or "verifier")   # verdict present, whatever it says
    assert_ran_in_containers(verdict, run_dir)
    hflushed = max(e["offset"] for e in events_of(run_dir, "c1", "client.hflush"))
    entry = assert_closed_and_agreeing(run_dir, min_len=hflushed)
    assert events_of(run_dir, "harness", "harness.node.kill", target="c1")
    assert events_of(run_dir, "nn", "nn.lease.recover") or events_of(run_dir, "nn", "nn.recovery.start")
    assert entry["len"] >= 2 * 512 * 1024   # the two hflushes of 512 KiB survived
    assert leftovers(engine, verdict.run_id) == []


def test_datanode_kill_and_restart_keeps_its_volume(engine, no_verifier, tmp_path):
    scenario = load_scenario_text(scenario_text("docker-datanode-kill", SLOW_WRITER + textwrap.dedent("""\
        - id: kill-dn2
          kind: kill
          target: dn2
          at: {event: client.hflush, node: c1, nth: 2}
          duration: 2s
    """)))
    verdict, run_dir = run(scenario, tmp_path)
    assert_ran_in_containers(verdict, run_dir)
    assert_closed_and_agreeing(run_dir, min_len=3 * 2**20)
    killed = events_of(run_dir, "harness", "harness.node.kill", target="dn2")
    started = events_of(run_dir, "harness", "harness.node.start", target="dn2")
    # the start with the cluster (logged for I1), then the one after the kill
    assert len(killed) == 1 and len(started) == 2
    assert started[0]["ts"] < killed[0]["ts"] < started[1]["ts"]
    starts = events_of(run_dir, "dn2", "dn.start")
    assert len(starts) == 2, starts
    # SIGKILL: no graceful dn.stop in between; the second start found its replicas on
    # the volume it was given again
    assert not [e for e in events_of(run_dir, "dn2", "dn.stop")
                if starts[0]["ts"] < e["ts"] < starts[1]["ts"]]
    assert starts[1]["replicas"] >= 1
    inject = events_of(run_dir, "harness", "harness.fault.inject", fault="kill-dn2")[0]
    assert events_of(run_dir, "c1", "client.pipeline.error", bad_node="dn2")[0]["ts"] > inject["ts"]
    assert leftovers(engine, verdict.run_id) == []


def test_disconnect_and_pause_faults_take_effect(engine, no_verifier, tmp_path):
    # dn1 leaves the network mid-write; once the writer has recovered its pipeline
    # without dn1, dn3 (still in it) is frozen
    scenario = load_scenario_text(scenario_text("docker-disconnect-pause", SLOW_WRITER + textwrap.dedent("""\
        - id: cut-dn1
          kind: disconnect
          target: dn1
          at: {event: client.hflush, node: c1, nth: 1}
          duration: 5s
        - id: freeze-dn3
          kind: pause
          target: dn3
          at: {event: client.pipeline.recovered, node: c1, nth: 1}
          duration: 4s
    """), size="4MiB"))
    verdict, run_dir = run(scenario, tmp_path)
    assert_ran_in_containers(verdict, run_dir)
    assert_closed_and_agreeing(run_dir, min_len=4 * 2**20)
    harness = events_of(run_dir, "harness")

    def window(fault: str, start_event: str, end_event: str, target: str) -> tuple[float, float]:
        inject = [e for e in harness if e["event"] == "harness.fault.inject" and e["fault"] == fault]
        begin = [e for e in harness if e["event"] == start_event and e["target"] == target]
        end = [e for e in harness if e["event"] == end_event and e["target"] == target]
        assert inject and begin and end, (fault, [e["event"] for e in harness])
        return begin[0]["ts"], end[0]["ts"]

    cut_from, cut_to = window("cut-dn1", "harness.node.disconnect", "harness.node.reconnect", "dn1")
    assert cut_to - cut_from >= 4.5
    # detached from the network: the NameNode hears no heartbeat and marks dn1 stale; the
    # writer's pipeline (all three DataNodes) breaks at dn1
    assert [e for e in events_of(run_dir, "nn", "nn.dn.stale", dn="dn1")
            if cut_from < e["ts"] <= cut_to + 1.0]
    assert [e for e in events_of(run_dir, "c1", "client.pipeline.error", bad_node="dn1")
            if cut_from < e["ts"] <= cut_to + 1.0]

    frozen_from, frozen_to = window("freeze-dn3", "harness.node.pause", "harness.node.resume", "dn3")
    assert frozen_to - frozen_from >= 2.5   # the writer waits out its socket timeout (3 s)
    # frozen (docker pause): dn3 writes not one event while paused, goes stale, and the
    # writer's pipeline breaks at dn3
    # (the harness logs pause and resume once the engine has done them: hence the margins)
    assert not [e for e in events_of(run_dir, "dn3") if frozen_from < e["ts"] < frozen_to - 0.2]
    assert [e for e in events_of(run_dir, "nn", "nn.dn.stale", dn="dn3")
            if frozen_from < e["ts"] <= frozen_to + 1.0]
    assert [e for e in events_of(run_dir, "c1", "client.pipeline.error", bad_node="dn3")
            if frozen_from < e["ts"] <= frozen_to + 1.0]
    assert leftovers(engine, verdict.run_id) == []


# --- node faults through the Docker API, one by one -----------------------------------------

@pytest.fixture
def cluster(engine, tmp_path):
    """A started docker backend of 2 DataNodes (stopped at the end, whatever happens)."""
    scenario = load_scenario_text(scenario_text("docker-verbs", "[]\n", datanodes=2))
    run_dir = tmp_path / "docker-verbs-run"
    os.makedirs(run_dir / "events")
    log = EventLog(str(run_dir / "events" / "harness.jsonl"), "harness", "harness")
    b = backend.DockerBackend(scenario, f"docker-verbs-{os.getpid()}", str(run_dir), log, 3)
    try:
        b.start()
        yield b
    finally:
        b.stop()
        log.close()
        assert leftovers(engine, b.run_id) == []


def answers(b, node: str, timeout: float = 1.0) -> bool:
    rpc = RpcClient(b.host_routes()[node]["rpc"], timeout, timeout)
    try:
        rpc.call("getReplicas")
        return True
    except (OSError, EOFError):
        return False
    finally:
        rpc.close()


def test_every_object_is_labelled_and_unprivileged(engine, cluster):
    labels = {backend.PROJECT_LABEL: "hdfs-chaos", backend.RUN_LABEL: cluster.run_id}
    mine = {"label": [f"{k}={v}" for k, v in labels.items()]}
    containers = engine.containers.list(all=True, filters=mine)
    assert sorted(c.labels[backend.NODE_LABEL] for c in containers) == \
        ["dn1", "dn2", "nn", "toxiproxy"]
    for c in containers:
        assert c.attrs["HostConfig"]["Privileged"] is False
        assert not c.attrs["HostConfig"].get("CapAdd")
    networks = engine.networks.list(filters=mine)
    assert len(networks) == 1 and networks[0].attrs["Internal"] is True
    subnet = networks[0].attrs["IPAM"]["Config"][0]["Subnet"]
    assert str(cluster.subnet) == subnet
    others = [n for n in engine.networks.list() if n.id != networks[0].id]
    assert not any(cfg.get("Subnet") == subnet for n in others
                   for cfg in (n.attrs.get("IPAM") or {}).get("Config") or [])
    volumes = engine.volumes.list(filters=mine)
    assert sorted(v.name for v in volumes) == sorted(
        cluster.plans[n].volume for n in ("nn", "dn1", "dn2"))
    # the harness reaches every node at its container address
    assert all(answers(cluster, dn) for dn in ("dn1", "dn2"))


def test_pause_resume_disconnect_reconnect(engine, cluster):
    cluster.control.pause("dn1")
    frozen = cluster.container("dn1")
    frozen.reload()
    assert frozen.status == "paused"
    assert not answers(cluster, "dn1")
    cluster.control.pause("dn1")     # pausing a paused node, like SIGSTOP twice, is fine
    cluster.control.resume("dn1")
    assert answers(cluster, "dn1", timeout=5.0)
    cluster.control.resume("dn1")    # and so is resuming a running one (SIGCONT)

    fault = cluster.disconnect_fault("dn2", fault_id="cut")
    fault.inject()
    c = cluster.container("dn2")
    c.reload()
    assert cluster.network.name not in c.attrs["NetworkSettings"]["Networks"]
    assert not answers(cluster, "dn2")
    fault.heal()
    c.reload()
    assert c.attrs["NetworkSettings"]["Networks"][cluster.network.name]["IPAddress"] == \
        cluster.plans["dn2"].ip
    assert answers(cluster, "dn2", timeout=5.0)


def test_kill_stop_start_keep_address_and_volume(engine, cluster):
    storage = cluster.storage_path("dn1")
    marker = os.path.join(storage, "marker-of-the-test")
    with open(marker, "w") as f:   # the volume's host path is writable (disk faults)
        f.write("kept")
    c = cluster.container("dn1")
    cluster.control.kill("dn1")
    c.reload()
    assert c.status == "exited" and c.attrs["State"]["ExitCode"] == 137
    cluster.control.start("dn1")
    c.reload()
    assert c.status == "running"
    assert c.attrs["NetworkSettings"]["Networks"][cluster.network.name]["IPAddress"] == \
        cluster.plans["dn1"].ip
    assert answers(cluster, "dn1", timeout=5.0)
    assert open(os.path.join(cluster.storage_path("dn1"), "marker-of-the-test")).read() == "kept"
    events = os.path.join(cluster.events_dir, "dn1.jsonl")
    assert [e["event"] for e in read_events(events)].count("dn.stop") == 0   # killed: no stop
    cluster.control.stop("dn1")
    c.reload()
    assert c.status == "exited" and c.attrs["State"]["ExitCode"] == 0
    assert [e["event"] for e in read_events(events)].count("dn.stop") == 1   # graceful
    cluster.control.start("dn1")
    assert answers(cluster, "dn1", timeout=5.0)
    assert [e["event"] for e in read_events(events)].count("dn.start") == 3


def test_a_failed_start_leaves_nothing(engine, tmp_path):
    scenario = load_scenario_text(scenario_text("docker-bad-image", "[]\n", datanodes=1))
    run_dir = tmp_path / "run"
    os.makedirs(run_dir / "events")
    b = backend.DockerBackend(scenario, f"docker-bad-image-{os.getpid()}", str(run_dir),
                              EventLog(None, "harness", "harness"), 1,
                              image="hdfs-chaos/no-such-image:0")
    with pytest.raises(BackendError, match="docker: cannot start container .*no-such-image"):
        try:
            b.start()
        finally:
            b.stop()
    assert leftovers(engine, b.run_id) == []


def test_an_image_that_cannot_be_built_is_one_clear_line(engine, tmp_path, monkeypatch):
    from harness import images

    def cannot_build(*args, **kw):
        raise images.ImageError("mmdebstrap is not installed: run tools/setup_docker.sh (as root)")
    monkeypatch.setattr(images, "build_image", cannot_build)
    scenario = load_scenario_text(scenario_text("docker-no-image", "[]\n", datanodes=1))
    b = backend.DockerBackend(scenario, f"docker-no-image-{os.getpid()}", str(tmp_path),
                              EventLog(None, "harness", "harness"), 1)
    with pytest.raises(BackendError) as info:
        try:
            b.start()
        finally:
            b.stop()
    assert str(info.value) == ("the cluster image cannot be built: mmdebstrap is not installed: "
                               "run tools/setup_docker.sh (as root)")
    assert leftovers(engine, b.run_id) == []


# --- a killed harness -------------------------------------------------------------------------

def test_what_a_killed_harness_left_is_reaped_by_the_next_run(engine, tmp_path):
    # the workload waits a minute: the run is surely in progress when it is killed
    path = tmp_path / "docker-killed.yaml"
    path.write_text(scenario_text("docker-killed", "[]\n", timeout="120s", workload_at="60s"))
    results = tmp_path / "results"
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from harness.runner import run_scenario; "
            "run_scenario(sys.argv[2], backend='docker', results_dir=sys.argv[3])")
    # without its reaper (which would remove everything at once, tests/docker/
    # test_leak_census_docker.py): what is left must then go with the next cleanup
    harness = subprocess.Popen([sys.executable, "-c", code, ROOT, str(path), str(results)],
                               cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env=dict(os.environ, HDFS_CHAOS_REAPER="0"))
    identity = None
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and harness.poll() is None:
            theirs = [c for c in engine.containers.list(
                filters={"label": [f"{backend.PROJECT_LABEL}={backend.PROJECT}",
                                   backend.RUN_LABEL]})
                if c.labels.get(backend.HARNESS_LABEL, "").split(":")[1:2] == [str(harness.pid)]]
            if len(theirs) >= 5:   # toxiproxy, nn, dn1-3 (and c1 once the cluster is up)
                identity = theirs[0].labels[backend.HARNESS_LABEL]
                run_id = theirs[0].labels[backend.RUN_LABEL]
                break
            time.sleep(0.1)
    finally:
        harness.send_signal(signal.SIGKILL)
        harness.wait()
    assert identity is not None, harness.stderr.read().decode()[-2000:]
    left = leftovers(engine, run_id)
    assert len([x for x in left if x.startswith("container")]) >= 5, left
    assert len([x for x in left if x.startswith("network")]) == 1, left
    assert len([x for x in left if x.startswith("volume")]) == 4, left
    work = os.path.join(results, run_id, "work")
    assert os.path.isdir(work)
    removed = cleanup_all()
    assert any(run_id in r for r in removed), removed
    assert leftovers(engine, run_id) == []
    assert not os.path.exists(work)
    # what the killed run wrote is results, and stays
    assert os.path.exists(os.path.join(results, run_id, "events", "harness.jsonl"))


def test_the_reaper_leaves_live_and_foreign_objects_alone(engine, cluster):
    # our cluster is live: a cleanup while it runs must not touch it
    before = leftovers(engine, cluster.run_id)
    cleanup_all()
    assert sorted(leftovers(engine, cluster.run_id)) == sorted(before)
    assert answers(cluster, "dn1")
    # objects with our project label but no run of ours (the image tests' ones) stay too
    foreign = engine.volumes.create(f"hdfs-chaos-foreign-{os.getpid()}",
                                    labels={backend.PROJECT_LABEL: backend.PROJECT})
    try:
        cleanup_all()
        assert engine.volumes.get(foreign.name)
    finally:
        foreign.remove(force=True)
