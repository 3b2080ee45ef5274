"""The live log adapter: follows one Hadoop process's log4j file and writes the contract
events (spec/EVENTS.md) that logmap makes of its lines, as JSON lines, while the run goes.

One `LogAdapter` per Hadoop process (NameNode, DataNode, or a workload client JVM's
DFSClient log). A thread polls the raw file every `poll` seconds and maps each complete
line; each event is one line written with one `os.write` on a file opened with
O_APPEND, so the harness's LogTailer (and so the trigger engine) sees it at once and the
verifier reads the same file after the run. `seq` counts the adapted events of the node
from 0 (an events file that already has lines -- an adapter restarted on the same
output -- goes on after them, as hdfs_contract.events.EventLog does).

The raw file may not exist yet (the JVM has not started), may grow (appends), may be
appended to by a restarted process (log4j's FileAppender with Append=true: the same
file goes on), truncated (Append=false: read again from its start) or replaced (a new
inode: read the new file from its start). `stop()` reads what is left, maps a last line
even without its newline (the process was killed mid-line), and closes.
"""

from __future__ import annotations

import json
import os
import threading
import time

from harness.waits import wait_until

from .agent import replaced
from .logmap import DEFAULT_RELEASE, LogMapper


class LogAdapter:
    def __init__(self, raw_log: str, node: str, role: str, release: str = DEFAULT_RELEASE,
                 events_out: str | None = None, hosts: dict[str, str] | None = None,
                 poll: float = 0.02, mapper=None, drop: frozenset = frozenset()):
        if events_out is None:
            raise ValueError("LogAdapter needs events_out: the JSON-lines file to write events to")
        self.raw_log, self.node, self.role = raw_log, node, role
        self.events_out = events_out
        # another mapper with LogMapper's feed/flush/held/release_older (agent.AgentMapper)
        self.mapper = mapper if mapper is not None else LogMapper(role, release, hosts)
        self.drop = drop            # events another source (the agent) provides instead
        self.poll = poll
        self.lines_read = 0
        self.events_written = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._handle = None
        self._inode = None
        self._partial = b""
        os.makedirs(os.path.dirname(os.path.abspath(events_out)) or ".", exist_ok=True)
        self._fd = os.open(events_out, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        with open(events_out, "rb") as f:
            self._seq = sum(1 for _ in f)

    # -- life --------------------------------------------------------------------------

    def start(self) -> "LogAdapter":
        self._thread = threading.Thread(target=self._run, name=f"log-adapter-{self.node}",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Drain what the file holds now (a last line without newline included) and close."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        with self._lock:
            self._read_new(final=True)
            for event in self.mapper.flush():
                self._write(event)
            if self._handle is not None:
                self._handle.close()
                self._handle = None
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def catch_up(self) -> None:
        """Map and write, now, every complete line the log holds (the thread does the
        same every `poll` seconds)."""
        with self._lock:
            if self._fd is None:
                return
            try:
                self._read_new(final=False)
            except Exception as e:      # as in _run: recorded, never raised into a run
                self.errors.append(f"{type(e).__name__}: {e}")

    def __enter__(self) -> "LogAdapter":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                try:
                    got = self._read_new(final=False)
                except Exception as e:      # a bug must not stop the run's events silently
                    self.errors.append(f"{type(e).__name__}: {e}")
                    got = False
            if not got:
                if self.mapper.held:     # a request line whose call logged nothing more
                    with self._lock:
                        for event in self.mapper.release_older(time.time()):
                            self._write(event)
                self._stop.wait(self.poll)

    # -- following the file ------------------------------------------------------------

    def _read_new(self, final: bool) -> bool:
        """Map what was appended since last time; True if anything was read."""
        try:
            st = os.stat(self.raw_log)
        except FileNotFoundError:
            return False
        if self._handle is not None and st.st_ino != self._inode:   # replaced: a new file
            self._handle.close()
            self._handle = None
        if self._handle is None:
            self._handle = open(self.raw_log, "rb", buffering=0)
            self._inode = st.st_ino
            self._partial = b""
        if os.fstat(self._handle.fileno()).st_size < self._handle.tell():   # truncated
            self._handle.seek(0)
            self._partial = b""
        data = self._handle.read()
        if not data and not (final and self._partial):
            return False
        lines = (self._partial + (data or b"")).split(b"\n")
        self._partial = lines.pop()
        if final and self._partial:
            lines.append(self._partial)
            self._partial = b""
        for raw in lines:
            self.lines_read += 1
            for event in self.mapper.feed(raw.decode("utf-8", "replace")):
                self._write(event)
        return True

    def _write(self, event: dict) -> None:
        if self.drop and replaced(self.drop, event):
            return
        fields = dict(event)
        record = {"ts": fields.pop("ts"), "node": self.node, "role": self.role, "seq": self._seq,
                  "event": fields.pop("event")}
        record.update(fields)
        os.write(self._fd, (json.dumps(record, separators=(",", ":"), default=str) + "\n").encode())
        self._seq += 1
        self.events_written += 1


def adapt_file(raw_log: str, node: str, role: str, events_out: str,
               release: str = DEFAULT_RELEASE, hosts: dict[str, str] | None = None) -> int:
    """Map a whole log after the fact (no thread); returns the number of events written."""
    a = LogAdapter(raw_log, node, role, release, events_out, hosts)
    a.stop()
    return a.events_written


def wait_for_lines(adapter: LogAdapter, n: int, timeout: float = 10.0) -> bool:
    """True once the adapter has read `n` lines (for tests and start-up checks)."""
    return wait_until(lambda: adapter.lines_read >= n, timeout, 0.005)
