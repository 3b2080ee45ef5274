"""The event log: one JSON object per line, per process, as spec/EVENTS.md defines.

Each line is written with a single `os.write` on a file opened with O_APPEND, so a
SIGKILL never loses a line that `emit` returned from, and a reader tailing the file
never sees half a line from a live writer.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any


class EventLog:
    """Writes the events of one process (`node`, `role`) to `path` (or nowhere if None)."""

    def __init__(self, path: str | None, node: str, role: str):
        self.node, self.role = node, role
        self._seq = 0
        self._lock = threading.Lock()
        self._fd = None
        self.path = path
        if path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            self._seq = _count_lines(path)
        # exact injection (hdfs_contract.hold): None unless the harness asked this node to hold
        self._hold = _hold_from_env(node, role)

    def emit(self, event: str, **fields: Any) -> dict:
        """Log `event` with `fields`; returns the record written. A line that exact
        injection holds (hdfs_contract.hold) is written and announced under the lock; only
        then, with the lock released, does this thread wait: other threads log on."""
        held = None
        with self._lock:
            record = {"ts": round(time.time(), 6), "node": self.node, "role": self.role,
                      "seq": self._seq, "event": event}
            record.update(fields)
            self._seq += 1
            self._write(record)
            if self._hold is not None:
                held = self._hold.announce(record)
        if held is not None:
            self._hold.wait(held, self._write_extra, self.role_prefix)
        return record

    def _write(self, record: dict) -> None:
        if self._fd is not None:
            line = json.dumps(record, separators=(",", ":"), default=str) + "\n"
            os.write(self._fd, line.encode())

    def _write_extra(self, fields: dict) -> None:
        """Logs a line of the hold itself (`<role>.hold.timeout`), never held."""
        with self._lock:
            record = {"ts": round(time.time(), 6), "node": self.node, "role": self.role,
                      "seq": self._seq}
            record.update(fields)
            self._seq += 1
            self._write(record)

    @property
    def role_prefix(self) -> str:
        return {"namenode": "nn", "datanode": "dn"}.get(self.role, self.role)

    def close(self) -> None:
        with self._lock:
            if self._hold is not None:
                self._hold.close()
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def _hold_from_env(node: str, role: str):
    # the harness's own logs (and its helper client) never hold: only cluster processes
    if not os.environ.get("MINIHDFS_HOLD") or node == "harness" or role == "harness":
        return None
    from .hold import Hold
    return Hold.from_env(node)


def _count_lines(path: str) -> int:
    """A restarted process goes on with the next seq after the lines already in its log."""
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def read_events(path: str) -> list[dict]:
    """All well-formed events of one log file (a torn last line is skipped)."""
    out = []
    with open(path, "rb") as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out
