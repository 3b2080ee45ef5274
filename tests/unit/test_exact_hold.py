"""Exact injection: the event log's hold hook (hdfs_contract.hold) with the harness's hold
channel (harness.exact), in one process with threads standing in for a node's threads.

The properties: with no MINIHDFS_HOLD nothing holds; a matching event is written, then
the thread that logged it waits until the fire callback returned and the release went
out, while the process's other threads log on (several may be held at once, each
released on its own; a held thread keeps the locks it holds); only the n-th match fires
(earlier ones are released at once); a release that never comes ends in
`<role>.hold.timeout`."""

from __future__ import annotations

import json
import threading
import time

import pytest

from harness.exact import HoldServer
from harness.scenario import OnEvent
from hdfs_contract.events import EventLog
from hdfs_contract.hold import ENV

WAIT = 30.0


def lines(path) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture
def server_factory(monkeypatch):
    servers = []

    def make(triggers: dict, fire, **kw) -> HoldServer:
        server = HoldServer(fire, **kw)
        for key, trigger in triggers.items():
            server.add(key, trigger)
        server.start()
        server.arm(0.0)
        monkeypatch.setenv(ENV, server.spec_path)
        servers.append(server)
        return server
    yield make
    for s in servers:
        s.stop()


def test_without_the_env_var_the_log_holds_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    log = EventLog(str(tmp_path / "dn2.jsonl"), "dn2", "datanode")
    assert log._hold is None
    log.emit("dn.pipeline.setup", block=1)
    assert [e["event"] for e in lines(tmp_path / "dn2.jsonl")] == ["dn.pipeline.setup"]


def test_a_node_with_no_hold_of_its_own_and_the_harness_hold_nothing(tmp_path, server_factory):
    server_factory({"k": OnEvent(event="dn.pipeline.setup", node="dn2", exact=True)},
                   lambda key, firing: None)
    assert EventLog(str(tmp_path / "dn1.jsonl"), "dn1", "datanode")._hold is None
    assert EventLog(str(tmp_path / "h.jsonl"), "harness", "harness")._hold is None
    assert EventLog(str(tmp_path / "dn2.jsonl"), "dn2", "datanode")._hold is not None


def test_only_the_held_thread_waits_until_the_fault_is_in_and_released(tmp_path, server_factory):
    path = tmp_path / "dn2.jsonl"
    seen_during_fire: list[list[str]] = []
    holder_back_during_fire: list[bool] = []
    other_done = threading.Event()
    holder_done = threading.Event()
    fired = threading.Event()

    def fire(key, firing):
        # the other thread logs while the holder waits: the hold stops one thread only
        other_done.wait(5.0)
        seen_during_fire.append([e["event"] for e in lines(path)])
        holder_back_during_fire.append(holder_done.is_set())
        fired.set()

    server = server_factory({"k": OnEvent(event="dn.pipeline.setup", node="dn2", nth=2,
                                          where={"block": 7}, exact=True)}, fire)
    log = EventLog(str(path), "dn2", "datanode")
    log.emit("dn.pipeline.setup", block=7)     # 1st match: released at once, no fire
    log.emit("dn.pipeline.setup", block=8)     # other block: not even announced
    assert not fired.is_set()

    def hold():
        log.emit("dn.pipeline.setup", block=7)
        holder_done.set()

    def other():
        log.emit("dn.replica.state", block=9)
        other_done.set()

    holder = threading.Thread(target=hold)
    holder.start()
    time.sleep(0.1)                            # the holder is now waiting for the harness
    assert not holder_done.is_set()
    threading.Thread(target=other).start()
    holder.join(WAIT)
    assert fired.is_set() and holder_done.is_set()
    assert seen_during_fire == [["dn.pipeline.setup"] * 3 + ["dn.replica.state"]]
    assert holder_back_during_fire == [False]  # the held thread went on only after the fire
    assert [e["seq"] for e in lines(path)] == [0, 1, 2, 3]
    assert [f.event["seq"] for f in server.fired] == [2]
    assert server.pending() == []
    # the trigger is done: later matches are not announced any more
    before = server.announced
    log.emit("dn.pipeline.setup", block=7)
    assert server.announced == before


def test_two_threads_held_at_once_each_get_their_own_release(tmp_path, server_factory):
    path = tmp_path / "nn.jsonl"
    both_held = threading.Barrier(2, timeout=5.0)
    fired: list[str] = []

    def fire(key, firing):
        both_held.wait()      # each fire waits until the other thread is held too
        fired.append(key)

    server_factory({"a": OnEvent(event="nn.block.allocate", node="nn", exact=True),
                    "b": OnEvent(event="nn.lease.expired", node="nn", exact=True)}, fire,
                   release_after=WAIT)
    log = EventLog(str(path), "nn", "namenode")
    threads = [threading.Thread(target=log.emit, args=("nn.block.allocate",), kwargs={"block": 1}),
               threading.Thread(target=log.emit, args=("nn.lease.expired",), kwargs={"holder": "c"})]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT)
    assert sorted(fired) == ["a", "b"]
    assert not any(t.is_alive() for t in threads)
    assert {e["event"] for e in lines(path)} == {"nn.block.allocate", "nn.lease.expired"}


def test_a_held_thread_keeps_its_locks_and_threads_without_them_go_on(tmp_path, server_factory):
    """A NameNode handler held inside the namesystem lock keeps it: whoever needs the
    lock waits, the threads that do not need it log on."""
    path = tmp_path / "nn.jsonl"
    namesystem = threading.RLock()
    observed: dict[str, bool] = {}
    free_done = threading.Event()

    def fire(key, firing):
        free_done.wait(5.0)
        observed["free thread logged"] = free_done.is_set()
        observed["lock free"] = namesystem.acquire(timeout=0.2)

    server_factory({"k": OnEvent(event="nn.recovery.start", node="nn", exact=True)}, fire)
    log = EventLog(str(path), "nn", "namenode")

    def handler():
        with namesystem:
            log.emit("nn.recovery.start", block=3)

    def free():
        log.emit("nn.dn.stale", dn="dn1")
        free_done.set()

    held = threading.Thread(target=handler)
    held.start()
    time.sleep(0.1)
    threading.Thread(target=free).start()
    held.join(WAIT)
    assert observed == {"free thread logged": True, "lock free": False}


def test_events_before_the_run_started_do_not_count(tmp_path, server_factory):
    calls = []
    server = server_factory({"k": OnEvent(event="client.hflush", node="c1", exact=True)},
                            lambda key, firing: calls.append(key))
    server.arm(time.time() + 3600)            # the run starts in an hour
    log = EventLog(str(tmp_path / "c1.jsonl"), "c1", "client")
    log.emit("client.hflush", path="/f")
    assert calls == [] and server.announced == 1


def test_a_release_that_never_comes_ends_in_a_hold_timeout_line(tmp_path, server_factory):
    gate = threading.Event()
    server_factory({"k": OnEvent(event="client.hflush", node="c1", exact=True)},
                   lambda key, firing: gate.wait(WAIT), timeout=0.5, release_after=WAIT)
    path = tmp_path / "c1.jsonl"
    log = EventLog(str(path), "c1", "client")
    start = time.monotonic()
    log.emit("client.hflush", path="/f")
    assert 0.4 < time.monotonic() - start < WAIT
    gate.set()
    events = lines(path)
    assert [e["event"] for e in events] == ["client.hflush", "client.hold.timeout"]
    assert events[1]["held_seq"] == 0 and events[1]["seq"] == 1


def test_a_harness_that_went_away_stops_the_holding(tmp_path, server_factory):
    server = server_factory({"k": OnEvent(event="client.hflush", node="c1", exact=True)},
                            lambda key, firing: None)
    log = EventLog(str(tmp_path / "c1.jsonl"), "c1", "client")
    server.stop()
    log.emit("client.hflush", path="/f")
    assert log._hold.disabled
