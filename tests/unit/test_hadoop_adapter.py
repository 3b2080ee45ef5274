"""The live log adapter (harness/systems/hadoop/adapter.py) on real files and a real
thread, read back by the harness's own LogTailer (the trigger engine's reader): events
appear while the raw log grows, with seq from 0, across a restarted process appending to
the same file, a truncated or replaced file, a torn last line; and the lag from a line
written to its event readable by LogTailer is measured."""

from __future__ import annotations

import json
import os
import statistics
import time

from harness.systems.hadoop.adapter import LogAdapter, adapt_file
from harness.triggers import LogTailer
from tests.unit.test_hadoop_logmap import (HOSTS, NN_ALLOCATE, NN_COMMIT, NN_COMMIT_OK, NN_EXPIRED,
                                           NN_FSYNC, NN_RECOVER_LEASE, NN_RELEASE)


def append(path, *lines, end="\n"):
    with open(path, "a") as f:
        f.write("\n".join(lines) + end)
        f.flush()


def wait_events(tailer, got, n, timeout=10.0):
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        got += tailer.read_new()
        time.sleep(0.005)
    return got


def test_follows_a_growing_file_and_the_tailer_sees_each_event(tmp_path):
    raw, out = tmp_path / "nn.log", tmp_path / "events" / "nn.jsonl"
    a = LogAdapter(str(raw), "nn", "namenode", "3.4.2", str(out), HOSTS).start()
    tailer = LogTailer([tmp_path / "events"])
    got: list[dict] = []
    try:
        time.sleep(0.05)                       # the file does not exist yet
        append(raw, NN_FSYNC)
        wait_events(tailer, got, 1)
        append(raw, "2026-11-23 19:10:44,300 INFO [main] Foo: nothing to map", NN_ALLOCATE)
        wait_events(tailer, got, 2)
    finally:
        a.stop()
        tailer.close()
    assert [e["event"] for e in got] == ["nn.file.fsync", "nn.block.allocate"]
    assert [e["seq"] for e in got] == [0, 1]
    assert {(e["node"], e["role"], e["source"]) for e in got} == {("nn", "namenode", "hadoop-log")}
    assert list(got[0])[:5] == ["ts", "node", "role", "seq", "event"]
    assert got[1]["pipeline"] == ["dn3", "dn1", "dn2"]
    assert a.errors == []


def test_restart_truncation_replacement_and_a_torn_line(tmp_path):
    raw, out = tmp_path / "nn.log", tmp_path / "nn.jsonl"
    a = LogAdapter(str(raw), "nn", "namenode", "3.4.2", str(out), HOSTS, poll=0.01).start()
    try:
        append(raw, NN_EXPIRED)
        # a restarted NameNode appends to the same file (log4j Append=true)
        append(raw, NN_RECOVER_LEASE)
        deadline = time.monotonic() + 10
        while a.events_written < 2 and time.monotonic() < deadline:
            time.sleep(0.005)
        # half a line: nothing yet
        half = len(NN_RELEASE) // 2
        append(raw, NN_RELEASE[:half], end="")
        time.sleep(0.1)
        assert a.events_written == 2
        append(raw, NN_RELEASE[half:])
        while a.events_written < 5 and time.monotonic() < deadline:
            time.sleep(0.005)
        assert a.events_written == 5      # recovery.start, gs_bump, lease.reassign
        # truncated (Append=false): read again from the start
        with open(raw, "w") as f:
            f.write(NN_FSYNC + "\n")
        while a.events_written < 6 and time.monotonic() < deadline:
            time.sleep(0.005)
        # replaced by a new file (a new inode)
        os.rename(raw, tmp_path / "old.log")
        append(tmp_path / "new.log", NN_ALLOCATE)
        os.rename(tmp_path / "new.log", raw)
        while a.events_written < 7 and time.monotonic() < deadline:
            time.sleep(0.005)
        # a process killed mid-line: the last line, without its newline, is drained by stop
        append(raw, NN_COMMIT, NN_COMMIT_OK, end="")
    finally:
        a.stop()
    events = [json.loads(line) for line in open(out)]
    assert [e["event"] for e in events] == [
        "nn.lease.expired", "nn.lease.recover", "nn.recovery.start", "nn.block.gs_bump",
        "nn.lease.reassign", "nn.file.fsync", "nn.block.allocate", "nn.recovery.commit",
        "nn.block.state", "nn.file.close", "nn.lease.remove"]
    assert [e["seq"] for e in events] == list(range(11))


def test_seq_goes_on_after_an_existing_events_file(tmp_path):
    raw, out = tmp_path / "nn.log", tmp_path / "nn.jsonl"
    append(raw, NN_FSYNC, NN_ALLOCATE)
    assert adapt_file(str(raw), "nn", "namenode", str(out), hosts=HOSTS) == 2
    append(raw, NN_EXPIRED)
    # a second adapter on the same output (the harness restarted it) reads the raw file
    # from its start again, but numbers on after the lines already written
    LogAdapter(str(raw), "nn", "namenode", "3.4.2", str(out), HOSTS).stop()
    events = [json.loads(line) for line in open(out)]
    assert [e["seq"] for e in events] == list(range(5))


def test_lag_from_line_written_to_event_read(tmp_path):
    """Each line written at a known moment; the lag is until LogTailer returns its event.
    Printed so the run shows it (pytest -s); bounded loosely for a loaded machine."""
    raw, out = tmp_path / "nn.log", tmp_path / "events" / "nn.jsonl"
    a = LogAdapter(str(raw), "nn", "namenode", "3.4.2", str(out), HOSTS).start()
    tailer = LogTailer([tmp_path / "events"])
    lags = []
    try:
        for i in range(40):
            line = NN_FSYNC.replace("/t/p3", f"/t/lag{i}")
            written = time.monotonic()
            append(raw, line)
            got: list[dict] = []
            while not got and time.monotonic() - written < 10:
                got = tailer.read_new()
                if not got:
                    time.sleep(0.001)
            assert got and got[0]["path"] == f"/t/lag{i}"
            lags.append(time.monotonic() - written)
    finally:
        a.stop()
        tailer.close()
    p50, worst = statistics.median(lags), max(lags)
    print(f"\nlog line -> event read by LogTailer: median {p50 * 1000:.1f} ms, "
          f"max {worst * 1000:.1f} ms over {len(lags)} lines (poll {a.poll * 1000:.0f} ms)")
    assert p50 < 0.25 and worst < 2.0


def test_catch_up_writes_what_the_log_holds_now_between_polls(tmp_path):
    """A fault resolving c1.pipeline[0] first has every adapter map its log as it is:
    with a poll far in the future, the event is there right after catch_up()."""
    raw, out = tmp_path / "nn.log", tmp_path / "events" / "nn.jsonl"
    append(raw, "2026-11-23 19:10:44,300 INFO [main] Foo: nothing to map")
    a = LogAdapter(str(raw), "nn", "namenode", "3.4.2", str(out), HOSTS, poll=3600).start()
    try:
        assert _wait(lambda: a.lines_read == 1)     # the thread's first read, then a long wait
        append(raw, NN_ALLOCATE)
        assert out.read_text() == ""
        a.catch_up()
        [event] = [json.loads(line) for line in out.read_text().splitlines()]
        assert event["event"] == "nn.block.allocate" and event["seq"] == 0
    finally:
        a.stop()
    assert a.errors == []


def _wait(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.005)
    return condition()
