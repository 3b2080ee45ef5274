"""The trigger engine: the pure matcher, the log tailer, and the engine on real files.

No assertion depends on how fast the machine is: threads are waited for with generous
timeouts, and the lag measurement only prints its numbers.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from harness.scenario import AfterFault, AtTime, OnEvent
from harness.triggers import (Firing, LogTailer, TriggerEngine, TriggerMatcher, event_matches,
                              measure_lag)
from hdfs_contract.events import EventLog

START = 1000.0
WAIT = 30.0   # generous: only reached when something is broken


def ev(event, ts, node="c1", **fields):
    return {"ts": ts, "node": node, "event": event, **fields}


# -- matching ----------------------------------------------------------------------------------

def test_event_matches_name_node_and_where_fields():
    trigger = OnEvent(event="client.hflush", node="c1", where={"path": "/f"})
    assert event_matches(trigger, ev("client.hflush", 1, path="/f", offset=3))
    assert not event_matches(trigger, ev("client.hflush", 1, node="c2", path="/f"))
    assert not event_matches(trigger, ev("client.hflush", 1, path="/g"))
    assert not event_matches(trigger, ev("client.hflush", 1))          # field missing
    assert not event_matches(trigger, ev("client.ack", 1, path="/f"))
    assert event_matches(OnEvent(event="client.ack"), ev("client.ack", 1, node="c7"))
    assert event_matches(OnEvent(event="dn.pipeline.setup", where={"pipeline": ["dn1", "dn2"]}),
                         ev("dn.pipeline.setup", 1, pipeline=["dn1", "dn2"]))


def test_time_trigger_is_due_at_start_plus_seconds():
    matcher = TriggerMatcher(START)
    matcher.add("k", AtTime(1.5))
    assert matcher.next_due() == START + 1.5
    assert matcher.due(START + 1.4) == []
    [firing] = matcher.due(START + 1.6)
    assert (firing.key, firing.event_ts, firing.due_ts, firing.fired_ts) == (
        "k", START + 1.5, START + 1.5, START + 1.6)
    assert firing.lag == pytest.approx(0.1)
    assert matcher.due(START + 100) == []   # a key fires once


def test_event_trigger_fires_on_the_nth_match_plus_delay():
    matcher = TriggerMatcher(START)
    matcher.add("crash", OnEvent(event="client.hflush", node="c1", nth=2, delay=0.5))
    matcher.observe(ev("client.hflush", START + 1))
    matcher.observe(ev("client.hflush", START + 1.5, node="c2"))   # other node: not counted
    matcher.observe(ev("client.ack", START + 1.7))                  # other event
    assert matcher.count("crash") == 1
    assert matcher.next_due() is None
    second = ev("client.hflush", START + 2, offset=2)
    assert matcher.observe(second) == ["crash"]
    assert matcher.next_due() == START + 2.5
    assert matcher.due(START + 2.4) == []
    [firing] = matcher.due(START + 2.5)
    assert firing.event is second and firing.event_ts == START + 2
    assert firing.log_fields() == {"fault": "crash", "event_ts": START + 2, "lag": 0.0,
                                   "trigger": "on client.hflush node=c1 nth=2 delay=0.5s"}
    matcher.observe(ev("client.hflush", START + 3))
    assert matcher.due(START + 10) == []


def test_events_before_the_run_started_are_not_counted():
    matcher = TriggerMatcher(START)
    matcher.add("k", OnEvent(event="nn.dn.register"))
    matcher.observe(ev("nn.dn.register", START - 5, node="nn"))   # cluster start-up
    matcher.observe({"event": "nn.dn.register", "node": "nn"})    # no ts at all
    assert matcher.due(START + 10) == []
    matcher.observe(ev("nn.dn.register", START + 5, node="nn"))
    assert [f.key for f in matcher.due(START + 5)] == ["k"]


def test_after_triggers_start_when_the_fault_is_notified():
    matcher = TriggerMatcher(START)
    matcher.add("cut", AfterFault(after="crash", delay=0.5))
    matcher.add("never", AfterFault(after="other"))
    assert matcher.due(START + 100) == []
    matcher.notify_fired("crash", START + 3)
    matcher.notify_fired("crash", START + 9)   # a second notification changes nothing
    [firing] = matcher.due(START + 3.5)
    assert (firing.key, firing.event_ts, firing.due_ts) == ("cut", START + 3, START + 3.5)
    assert matcher.pending() == ["never"]


def test_after_trigger_added_after_its_fault_fired_is_scheduled_at_once():
    matcher = TriggerMatcher(START)
    matcher.notify_fired("crash", START + 1)
    matcher.add("cut", AfterFault(after="crash", delay=1))
    assert matcher.next_due() == START + 2


def test_due_firings_come_earliest_first():
    matcher = TriggerMatcher(START)
    matcher.add("late", AtTime(2))
    matcher.add("early", AtTime(1))
    matcher.add("event", OnEvent(event="client.ack"))
    matcher.observe(ev("client.ack", START + 1.5))
    assert [f.key for f in matcher.due(START + 3)] == ["early", "event", "late"]


def test_keys_are_unique_and_triggers_typed():
    matcher = TriggerMatcher(START)
    matcher.add("k", AtTime(1))
    with pytest.raises(ValueError):
        matcher.add("k", AtTime(2))
    with pytest.raises(TypeError):
        matcher.add("x", "1s")


# -- tailing -------------------------------------------------------------------------------------

def _line(record) -> bytes:
    return (json.dumps(record) + "\n").encode()


def test_tailer_keeps_a_partial_last_line_until_it_is_complete(tmp_path):
    path = tmp_path / "c1.jsonl"
    tailer = LogTailer([tmp_path])
    first, second = _line(ev("client.ack", 1)), _line(ev("client.hflush", 2))
    path.write_bytes(first + second[:10])
    assert [e["event"] for e in tailer.read_new()] == ["client.ack"]
    assert tailer.read_new() == []
    with open(path, "ab") as f:
        f.write(second[10:])
    assert [e["event"] for e in tailer.read_new()] == ["client.hflush"]
    tailer.close()


def test_tailer_finds_files_that_appear_later_and_a_folder_created_later(tmp_path):
    folder = tmp_path / "events"
    tailer = LogTailer([folder])
    assert tailer.read_new() == []
    folder.mkdir()
    (folder / "nn.jsonl").write_bytes(_line(ev("nn.start", 1, node="nn")))
    (folder / "notes.txt").write_text("not a log\n")
    assert [e["node"] for e in tailer.read_new()] == ["nn"]
    (folder / "dn1.jsonl").write_bytes(_line(ev("dn.start", 2, node="dn1")))
    with open(folder / "nn.jsonl", "ab") as f:
        f.write(_line(ev("nn.dn.register", 3, node="nn")))
    assert sorted(e["event"] for e in tailer.read_new()) == ["dn.start", "nn.dn.register"]
    tailer.close()


def test_tailer_skips_a_torn_line_but_keeps_the_event_glued_after_it(tmp_path):
    path = tmp_path / "dn1.jsonl"
    whole = _line(ev("dn.start", 5, node="dn1"))
    path.write_bytes(b'{"ts": 4, "node": "dn1", "ev' + whole + b"garbage\n")
    tailer = LogTailer([tmp_path])
    assert [e["event"] for e in tailer.read_new()] == ["dn.start"]
    assert tailer.bad_lines == 1
    tailer.close()


def test_tailer_starts_over_when_a_file_is_replaced_or_truncated(tmp_path):
    path = tmp_path / "c1.jsonl"
    path.write_bytes(_line(ev("client.ack", 1)) + _line(ev("client.ack", 2)))
    tailer = LogTailer([tmp_path])
    assert len(tailer.read_new()) == 2
    path.write_bytes(_line(ev("client.close", 3)))    # truncated in place
    assert [e["event"] for e in tailer.read_new()] == ["client.close"]
    replacement = tmp_path / "new.tmp"
    replacement.write_bytes(_line(ev("client.start", 4)))
    replacement.replace(path)                          # a new file under the same name
    assert [e["event"] for e in tailer.read_new()] == ["client.start"]
    tailer.close()


# -- the engine ----------------------------------------------------------------------------------

class FakeClock:
    def __init__(self, now):
        self.now = now

    def __call__(self):
        return self.now


def test_engine_polls_files_and_fires_in_time_order_without_threads(tmp_path):
    clock = FakeClock(START)
    fired: list[tuple[str, Firing]] = []
    engine = TriggerEngine(tmp_path, START, lambda key, f: fired.append((key, f)), clock=clock)
    engine.add("at-2s", AtTime(2))
    engine.add("second-ack", OnEvent(event="client.ack", nth=2))
    # two processes; the later file holds the earlier event: nth follows ts, not file order
    (tmp_path / "c2.jsonl").write_bytes(_line(ev("client.ack", START + 0.2, node="c2")))
    (tmp_path / "c1.jsonl").write_bytes(_line(ev("client.ack", START + 0.1)))
    clock.now = START + 0.3
    assert [f.key for f in engine.poll_once()] == ["second-ack"]
    assert fired[0][1].event["node"] == "c2"
    assert fired[0][1].lag == pytest.approx(0.1)
    clock.now = START + 2.0
    assert [f.key for f in engine.poll_once()] == ["at-2s"]
    assert engine.pending() == []
    assert [f.key for f in engine.fired] == ["second-ack", "at-2s"]
    engine.stop()


def test_engine_keeps_callback_errors_and_goes_on(tmp_path):
    clock = FakeClock(START + 5)

    def on_fire(key, firing):
        if key == "bad":
            raise RuntimeError("injection failed")

    engine = TriggerEngine(tmp_path, START, on_fire, clock=clock)
    engine.add("bad", AtTime(1))
    engine.add("good", AtTime(2))
    assert [f.key for f in engine.poll_once()] == ["bad", "good"]
    assert [str(e) for e in engine.errors] == ["injection failed"]
    engine.stop()


def test_engine_thread_fires_on_events_appended_by_a_writer(tmp_path):
    """A real EventLog appends while the engine thread tails; an `after:` trigger follows
    the notification the callback gives, as the runner would."""
    done = threading.Event()
    fired: list[Firing] = []
    log = EventLog(str(tmp_path / "c1.jsonl"), "c1", "client")
    start = log.emit("client.start", holder="c1")["ts"]

    def on_fire(key, firing):
        fired.append(firing)
        if key == "crash":
            engine.notify_fired("crash")
        if key == "cut":
            done.set()

    engine = TriggerEngine(tmp_path, start, on_fire)
    engine.add("crash", OnEvent(event="client.hflush", node="c1", nth=3))
    engine.add("cut", AfterFault(after="crash", delay=0.05))
    with engine:
        for offset in range(5):
            log.emit("client.hflush", path="/f", offset=offset)
        assert done.wait(WAIT), f"not fired; pending {engine.pending()}"
    log.close()
    assert [f.key for f in fired] == ["crash", "cut"]
    assert fired[0].event["offset"] == 2
    assert fired[1].event_ts >= fired[0].fired_ts
    assert all(f.lag is not None and f.lag >= 0 for f in fired)
    assert engine.errors == []


def test_engine_thread_fires_time_triggers_with_no_log_at_all(tmp_path):
    done = threading.Event()
    engine = TriggerEngine(tmp_path / "missing", time.time(), lambda k, f: done.set())
    engine.add("soon", AtTime(0.01))
    with engine:
        assert done.wait(WAIT)


def test_trigger_lag_measurement_reports_numbers(capsys):
    result = measure_lag(count=40)
    assert result["fired"] == result["events"] == 40
    with capsys.disabled():
        print("\ntrigger lag (40 events from another process, poll 20 ms): "
              "min {min_ms:.1f} ms, median {median_ms:.1f} ms, p95 {p95_ms:.1f} ms, "
              "max {max_ms:.1f} ms".format(**result))
