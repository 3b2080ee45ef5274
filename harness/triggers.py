"""The trigger engine: decides when each fault (or workload operation) starts.

A scenario times its faults with triggers (harness.scenario): `AtTime` (seconds since
the run started), `OnEvent` (the n-th event of the live logs with a given name, node
and fields, plus a delay) and `AfterFault` (a delay after another fault was injected).
Two parts:

- `TriggerMatcher`, pure: it is fed events and fault notifications, and says which
  triggers are due at a given instant. No files, no threads, no clock of its own.
- `TriggerEngine`: a thread that tails the run's event logs (a directory of *.jsonl
  files that several processes append to; files appear during the run; a last line may
  be incomplete), feeds the matcher every ~20 ms and calls `on_fire(key, firing)` when
  a trigger is due. Each `Firing` records when the matched event happened and how late
  the engine fired, which the runner logs as `harness.trigger {fault, event_ts, lag}`.

`python -m harness.triggers` measures the lag against a separate process appending
to a log.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import statistics
import threading
import time
from pathlib import Path
from typing import Any, Callable, Hashable, Iterable

from harness.scenario.model import AfterFault, AtTime, OnEvent, Trigger

log = logging.getLogger(__name__)

_MISSING = object()


@dataclasses.dataclass
class Firing:
    """One trigger that fired: what it waited for, and when it fired.

    `event_ts` is when the awaited thing happened (the matched event's `ts`, the
    injection time of the fault of an `after:`, or start + seconds for a time trigger);
    `due_ts` is `event_ts` + the trigger's delay; `fired_ts` is when the engine called
    back. `lag` = fired_ts - due_ts: how late the engine was (for a trigger without a
    delay, the time from the event to the firing).
    """

    key: Hashable
    trigger: Trigger
    event_ts: float
    due_ts: float
    event: dict | None = None
    fired_ts: float | None = None

    @property
    def lag(self) -> float | None:
        return None if self.fired_ts is None else self.fired_ts - self.due_ts

    def log_fields(self) -> dict[str, Any]:
        """The fields of the `harness.trigger` event the runner logs."""
        return {"fault": self.key, "event_ts": round(self.event_ts, 6),
                "lag": None if self.lag is None else round(self.lag, 6),
                "trigger": str(self.trigger)}


def event_matches(trigger: OnEvent, event: dict) -> bool:
    """Whether `event` is one `trigger` counts: same name, node (if given), `where` fields."""
    if event.get("event") != trigger.event:
        return False
    if trigger.node is not None and event.get("node") != trigger.node:
        return False
    return all(event.get(name, _MISSING) == value for name, value in trigger.where.items())


class TriggerMatcher:
    """Which triggers are due, given the events seen and the faults injected so far.

    Pure bookkeeping: `observe` each event (in time order), `notify_fired` each fault as
    it is injected, and ask `due(now)` for the firings whose time has come; each key fires
    at most once. Events older than `start_ts` belong to the cluster's start, not to the
    run, and are not counted.
    """

    def __init__(self, start_ts: float):
        self.start_ts = start_ts
        self._triggers: dict[Hashable, Trigger] = {}
        self._counts: dict[Hashable, int] = {}
        self._scheduled: dict[Hashable, Firing] = {}
        self._fired_keys: set[Hashable] = set()
        self._injected: dict[str, float] = {}

    def add(self, key: Hashable, trigger: Trigger) -> None:
        """Watch `trigger` for `key` (a fault id, or any key the caller likes)."""
        if key in self._triggers:
            raise ValueError(f"trigger key {key!r} added twice")
        self._triggers[key] = trigger
        if isinstance(trigger, AtTime):
            at = self.start_ts + trigger.seconds
            self._scheduled[key] = Firing(key, trigger, event_ts=at, due_ts=at)
        elif isinstance(trigger, OnEvent):
            self._counts[key] = 0
        elif isinstance(trigger, AfterFault):
            if trigger.after in self._injected:
                self._schedule_after(key, trigger, self._injected[trigger.after])
        else:
            raise TypeError(f"not a trigger: {trigger!r}")

    def observe(self, event: dict) -> list[Hashable]:
        """Count `event` for every event trigger it matches; returns the keys it scheduled."""
        ts = event.get("ts")
        if not isinstance(ts, (int, float)) or ts < self.start_ts:
            return []
        scheduled = []
        for key, trigger in self._triggers.items():
            if (not isinstance(trigger, OnEvent) or key in self._scheduled
                    or key in self._fired_keys or not event_matches(trigger, event)):
                continue
            self._counts[key] += 1
            if self._counts[key] == trigger.nth:
                self._scheduled[key] = Firing(key, trigger, event_ts=float(ts),
                                              due_ts=float(ts) + trigger.delay, event=event)
                scheduled.append(key)
        return scheduled

    def notify_fired(self, fault_id: str, ts: float) -> None:
        """Fault `fault_id` was injected at `ts`: start the clocks of its `after:` triggers."""
        if fault_id in self._injected:
            return
        self._injected[fault_id] = ts
        for key, trigger in self._triggers.items():
            if isinstance(trigger, AfterFault) and trigger.after == fault_id:
                self._schedule_after(key, trigger, ts)

    def _schedule_after(self, key: Hashable, trigger: AfterFault, ts: float) -> None:
        if key not in self._scheduled and key not in self._fired_keys:
            self._scheduled[key] = Firing(key, trigger, event_ts=ts, due_ts=ts + trigger.delay)

    def due(self, now: float) -> list[Firing]:
        """The firings due at `now`, earliest first, each marked fired at `now`."""
        ready = sorted((f for f in self._scheduled.values() if f.due_ts <= now),
                       key=lambda f: f.due_ts)
        for firing in ready:
            del self._scheduled[firing.key]
            self._fired_keys.add(firing.key)
            firing.fired_ts = now
        return ready

    def next_due(self) -> float | None:
        """When the next scheduled firing is due (None: nothing scheduled yet)."""
        return min((f.due_ts for f in self._scheduled.values()), default=None)

    def count(self, key: Hashable) -> int:
        """How many matching events an event trigger has seen."""
        return self._counts.get(key, 0)

    def pending(self) -> list[Hashable]:
        """Keys that have not fired (yet)."""
        return [k for k in self._triggers if k not in self._fired_keys]


class LogTailer:
    """Reads what was appended to the *.jsonl files of some directories since last time.

    Files may appear at any time. A last line without its newline is kept until the rest
    arrives. A line that does not parse (a writer killed mid-line on a filesystem that
    tore the write) is skipped, but a complete event glued after its remains is kept.
    """

    def __init__(self, directories: Iterable[str | os.PathLike]):
        self.directories = [Path(d) for d in directories]
        self._files: dict[Path, tuple[Any, int, bytes]] = {}   # handle, inode, partial line
        self.bad_lines = 0

    def read_new(self) -> list[dict]:
        events: list[dict] = []
        for path in self._paths():
            events.extend(self._read(path))
        return events

    def _paths(self) -> list[Path]:
        found = []
        for directory in self.directories:
            try:
                with os.scandir(directory) as entries:
                    found += [Path(e.path) for e in entries
                              if e.name.endswith(".jsonl") and e.is_file()]
            except FileNotFoundError:
                continue
        return sorted(found)

    def _read(self, path: Path) -> list[dict]:
        handle, inode, partial = self._files.get(path, (None, None, b""))
        try:
            current = os.stat(path).st_ino
            if handle is not None and current != inode:   # replaced: start over
                handle.close()
                handle, partial = None, b""
            if handle is None:
                handle, inode = open(path, "rb", buffering=0), current
            if os.fstat(handle.fileno()).st_size < handle.tell():   # truncated
                handle.seek(0)
                partial = b""
            data = handle.read() or b""
        except OSError:
            return []
        lines = (partial + data).split(b"\n")
        self._files[path] = (handle, inode, lines.pop())
        return [e for e in (self._parse(line) for line in lines if line.strip()) if e]

    def _parse(self, line: bytes) -> dict | None:
        try:
            event = json.loads(line)
        except ValueError:
            glued = line.rfind(b'{"ts"')
            event = self._parse(line[glued:]) if glued > 0 else None
            if event is None:
                self.bad_lines += 1
            return event
        return event if isinstance(event, dict) else None

    def close(self) -> None:
        for handle, _, _ in self._files.values():
            handle.close()
        self._files.clear()


OnFire = Callable[[Hashable, Firing], None]


class TriggerEngine:
    """Tails the live event logs of a run and calls `on_fire(key, firing)` when a trigger
    is due.

    Add every trigger before `start()` (an event trigger added later only counts events
    read after it). Call `notify_fired(fault_id)` when a fault has been injected, so that
    its `after:` triggers start their clocks. `on_fire` runs on the engine's thread:
    keep it short or hand the work to another thread, since the engine does not read
    logs while it runs. Its exceptions are kept in `errors`, not raised.
    """

    def __init__(self, events_dir: str | os.PathLike | Iterable[str | os.PathLike],
                 start_ts: float, on_fire: OnFire, *, poll_interval: float = 0.02,
                 clock: Callable[[], float] = time.time):
        dirs = [events_dir] if isinstance(events_dir, (str, os.PathLike)) else list(events_dir)
        self.tailer = LogTailer(dirs)
        self.matcher = TriggerMatcher(start_ts)
        self.on_fire = on_fire
        self.poll_interval = poll_interval
        self.clock = clock
        self.fired: list[Firing] = []
        self.errors: list[BaseException] = []
        self._lock = threading.RLock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, key: Hashable, trigger: Trigger) -> None:
        with self._lock:
            self.matcher.add(key, trigger)
        self._wake.set()

    def notify_fired(self, fault_id: str, ts: float | None = None) -> None:
        """Fault `fault_id` was injected at `ts` (default: now)."""
        with self._lock:
            self.matcher.notify_fired(fault_id, self.clock() if ts is None else ts)
        self._wake.set()

    def pending(self) -> list[Hashable]:
        with self._lock:
            return self.matcher.pending()

    def poll_once(self) -> list[Firing]:
        """Read what the logs gained, then fire what is due; returns the firings."""
        events = self.tailer.read_new()
        events.sort(key=lambda e: e.get("ts") if isinstance(e.get("ts"), (int, float)) else 0)
        with self._lock:
            for event in events:
                self.matcher.observe(event)
            due = self.matcher.due(self.clock())
        for firing in due:
            firing.fired_ts = self.clock()
            self.fired.append(firing)
            try:
                self.on_fire(firing.key, firing)
            except Exception as exc:  # the runner decides what a failed injection means
                log.exception("trigger callback for %r failed", firing.key)
                self.errors.append(exc)
        return due

    def start(self) -> "TriggerEngine":
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="trigger-engine", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.tailer.close()

    def __enter__(self) -> "TriggerEngine":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.poll_once()
            with self._lock:
                next_due = self.matcher.next_due()
            wait = self.poll_interval
            if next_due is not None:
                wait = max(0.0, min(wait, next_due - self.clock()))
            self._wake.wait(wait)
            self._wake.clear()


# -- measurement ------------------------------------------------------------------------------

_WRITER = r"""
import random, sys, time
from hdfs_contract.events import EventLog
directory, count, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
random.seed(seed)
logs = [EventLog(f"{directory}/c1.jsonl", "c1", "client")]
for i in range(count):
    if i == count // 2:  # a second process's log appears mid-run
        logs.append(EventLog(f"{directory}/dn1.jsonl", "dn1", "datanode"))
    time.sleep(random.uniform(0.005, 0.05))
    log = logs[i % len(logs)]
    log.emit("client.hflush", path="/lag", offset=i) if log.node == "c1" else \
        log.emit("dn.replica.state", block=1, gs=i, len=i, state="RBW")
"""


def measure_lag(count: int = 200, poll_interval: float = 0.02, seed: int = 1) -> dict:
    """Fire a trigger on each of `count` events appended by a separate process; returns
    the lag statistics in milliseconds (from each event's `ts` to its callback)."""
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        done = threading.Event()
        lags: list[float] = []

        def on_fire(key, firing):
            lags.append(firing.lag)
            if len(lags) == count:
                done.set()

        engine = TriggerEngine(directory, time.time(), on_fire, poll_interval=poll_interval)
        # The writer logs event i to c1 (i < count/2), then alternately to c1 and dn1.
        half = count // 2
        dn1_events = [i for i in range(half, count) if i % 2 == 1]
        c1_events = [i for i in range(count) if i not in dn1_events]
        for nth, i in enumerate(c1_events, 1):
            engine.add(("c1", i), OnEvent(event="client.hflush", node="c1", nth=nth))
        for i in dn1_events:
            engine.add(("dn1", i), OnEvent(event="dn.replica.state", where={"gs": i}))
        engine.start()
        root = str(Path(__file__).resolve().parent.parent)
        env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
        subprocess.run([sys.executable, "-c", _WRITER, directory, str(count), str(seed)],
                       check=True, env=env)
        done.wait(30)
        engine.stop()
    ms = sorted(lag * 1000 for lag in lags)
    return {"events": count, "fired": len(ms), "poll_ms": poll_interval * 1000,
            "min_ms": ms[0], "median_ms": statistics.median(ms),
            "p95_ms": ms[int(0.95 * (len(ms) - 1))], "max_ms": ms[-1]}


if __name__ == "__main__":
    result = measure_lag()
    print("trigger lag over {events} events appended by another process "
          "(poll every {poll_ms:.0f} ms): fired {fired}, min {min_ms:.1f} ms, "
          "median {median_ms:.1f} ms, p95 {p95_ms:.1f} ms, max {max_ms:.1f} ms".format(**result))
