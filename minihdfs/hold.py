"""Exact injection, the process side: an event log that stops at chosen events until the
harness says "go on".

The harness (harness.exact) asks for it by setting `MINIHDFS_HOLD` in a process's
environment to a JSON file:

    {"socket": "/tmp/hc-x/hold.sock", "timeout": 10.0,
     "holds": [{"id": "k1", "event": "dn.pipeline.setup", "node": "dn2", "where": {...}}]}

After each line this process writes that matches a hold of its node (name, node,
`where` fields), the writer sends `{"node", "seq", "record"}` to the socket and waits for
`{"release": true, "done": [ids]}` while it still holds the log's lock: no other thread
of the process logs anything meanwhile, so a fault the harness injects before answering
lands before the process's next event. `done` names holds the harness needs no more
(their trigger fired); their events are not announced again. A kill while held simply
ends the process. If no answer comes within `timeout` seconds, the process logs
`<role>.hold.timeout` and goes on; if the harness cannot be reached, holding stops.

Without `MINIHDFS_HOLD` (or with no hold for this node) nothing here runs: the event log
checks one attribute per line.
"""

from __future__ import annotations

import json
import os
import socket
from typing import Any, Callable

ENV = "MINIHDFS_HOLD"
_MISSING = object()


class Hold:
    """The holds of one node, and its connection to the harness (opened on first use)."""

    def __init__(self, node: str, socket_path: str, holds: list[dict], timeout: float = 10.0):
        self.node = node
        self.socket_path = socket_path
        self.holds = [h for h in holds if h.get("node") in (None, node)]
        self.events = {h["event"] for h in self.holds}
        self.timeout = timeout
        self.done: set[str] = set()
        self.disabled = False
        self._sock: socket.socket | None = None
        self._buf = b""

    @classmethod
    def from_env(cls, node: str) -> "Hold | None":
        """The holds the environment asks of `node`, or None (the common case)."""
        path = os.environ.get(ENV)
        if not path:
            return None
        try:
            with open(path) as f:
                spec = json.load(f)
        except (OSError, ValueError):
            return None
        hold = cls(node, spec["socket"], spec.get("holds", []), float(spec.get("timeout", 10.0)))
        return hold if hold.holds else None

    def wanted(self, record: dict) -> bool:
        """Whether `record` matches a hold that is not done."""
        if self.disabled or record.get("event") not in self.events:
            return False
        for h in self.holds:
            if h["id"] in self.done or h["event"] != record["event"]:
                continue
            if all(record.get(k, _MISSING) == v for k, v in (h.get("where") or {}).items()):
                return True
        return False

    def check(self, record: dict, write: Callable[[dict], None], role_prefix: str) -> None:
        """Called with the log's lock held, right after `record` was written: waits for
        the harness's release if the record matches a hold. `write` logs a timeout line."""
        if not self.wanted(record):
            return
        try:
            answer = self._ask({"node": self.node, "seq": record.get("seq"), "record": record})
        except socket.timeout:
            write({"event": f"{role_prefix}.hold.timeout", "held_event": record.get("event"),
                   "held_seq": record.get("seq"), "timeout": self.timeout})
            return
        except (OSError, ValueError):
            self.disabled = True   # no harness to answer: the process runs freely
            self.close()
            return
        self.done.update(answer.get("done", []))

    def _ask(self, message: dict) -> dict[str, Any]:
        if self._sock is None:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(self.timeout)
            s.connect(self.socket_path)
            self._sock = s
        self._sock.sendall(json.dumps(message, separators=(",", ":"), default=str).encode() + b"\n")
        while True:   # skip late answers to holds that timed out before
            answer = self._read_answer()
            if answer.get("seq") == message["seq"]:
                return answer

    def _read_answer(self) -> dict[str, Any]:
        while b"\n" not in self._buf:
            data = self._sock.recv(65536)
            if not data:
                raise OSError("the harness closed the hold channel")
            self._buf += data
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
            self._sock = None
