"""Exact injection, the process side: an event log that stops the thread that logged a
chosen event until the harness says "go on".

The harness (harness.exact) asks for it by setting `MINIHDFS_HOLD` in a process's
environment to a JSON file:

    {"socket": "/tmp/hc-x/hold.sock", "timeout": 10.0,
     "holds": [{"id": "k1", "event": "dn.pipeline.setup", "node": "dn2", "where": {...}}]}

When a thread logs a line that matches a hold of its node (name, node, `where` fields),
the line is written first (one `os.write`, in the file before anything else happens);
then, still under the log's lock, `{"node", "seq", "record"}` goes to the socket, so the
harness sees the announcements in the log's order (`nth` counts them in that order).
The log's lock is then released and only the logging thread waits for
`{"seq", "release": true, "done": [ids]}`. `done` names holds the harness needs no more
(their trigger fired); their events are not announced again.

What a hold stops, and what it does not:
- The held thread does nothing after its line until the release: a fault the harness
  injects before answering lands before that thread's next step (its next line, RPC
  reply, packet, state change).
- Every other thread of the process goes on, logging included: the hold does not
  change what the rest of the process does, so its lines may come between the held
  line and the fault. Several threads may be held at once; each waits for its own
  answer (a reader thread hands the answers out by `seq`).
- The held thread keeps what it holds. A NameNode handler logs inside the namesystem
  lock, so while it is held the other handlers and monitors that need that lock wait
  for it, as they would behind a slow handler; threads that do not need it (other
  DataNode xceivers, a client's streamer and responder) run on. Agent-based injectors
  stop a thread the same way at their injection point (Failify's blocking events block
  the threads that reached a stack trace, the others make progress); a harness that
  wants the whole process stopped injects a pause.

A kill while held simply ends the process. If no answer comes within `timeout`
seconds, the held thread logs `<role>.hold.timeout` and goes on (a late answer is
dropped); if the harness cannot be reached or closes the channel, holding stops and
every waiting thread goes on.

Without `MINIHDFS_HOLD` (or with no hold for this node) nothing here runs: the event log
checks one attribute per line.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from typing import Any, Callable

ENV = "MINIHDFS_HOLD"
_MISSING = object()


class _Waiter:
    """One held line: its seq, and the harness's answer once it came (None: no answer
    will come, the channel is gone)."""

    def __init__(self, seq: int, event: str):
        self.seq, self.event_name = seq, event
        self.answer: dict[str, Any] | None = None
        self.event = threading.Event()


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
        self._lock = threading.Lock()          # the connection, `done` and the waiters
        self._waiting: dict[int, _Waiter] = {}

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

    def announce(self, record: dict) -> _Waiter | None:
        """Called with the log's lock held, right after `record` was written: sends it to
        the harness if it matches a hold. Returns what `wait` needs, or None (nothing to
        wait for: no match, or no harness to answer)."""
        if not self.wanted(record):
            return None
        message = json.dumps({"node": self.node, "seq": record.get("seq"), "record": record},
                             separators=(",", ":"), default=str).encode() + b"\n"
        with self._lock:
            waiter = _Waiter(record.get("seq"), record.get("event"))
            try:
                sock = self._connect()
                self._waiting[waiter.seq] = waiter
                sock.sendall(message)
            except OSError:
                self._waiting.pop(waiter.seq, None)
                self._give_up()   # no harness to answer: the process runs freely
                return None
        return waiter

    def wait(self, waiter: _Waiter, write: Callable[[dict], None], role_prefix: str) -> None:
        """Called without the log's lock: the calling thread waits for the harness's
        answer to its line. `write` logs the timeout line if none comes in time."""
        if waiter.event.wait(self.timeout):
            return
        with self._lock:
            if self._waiting.get(waiter.seq) is waiter:
                del self._waiting[waiter.seq]
        if waiter.event.is_set():   # the answer came while the timeout was noted
            return
        write({"event": f"{role_prefix}.hold.timeout", "held_event": waiter.event_name,
               "held_seq": waiter.seq, "timeout": self.timeout})

    def _connect(self) -> socket.socket:
        """The channel (with `_lock` held); the first call connects and starts the reader."""
        if self._sock is None:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(self.timeout)
            try:
                s.connect(self.socket_path)
            except OSError:
                s.close()
                raise
            s.settimeout(None)   # the reader blocks; each held thread has its own timeout
            self._sock = s
            threading.Thread(target=self._read_answers, args=(s,), daemon=True,
                             name="hold-reader").start()
        return self._sock

    def _read_answers(self, sock: socket.socket) -> None:
        """Hands each answer to the thread waiting for its seq; an answer nobody waits for
        any more (its hold timed out) is dropped. Ends when the channel closes."""
        buf = b""
        while True:
            try:
                data = sock.recv(65536)
            except OSError:
                data = b""
            if not data:
                with self._lock:
                    if self._sock is sock:
                        self._give_up()
                return
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                try:
                    answer = json.loads(line)
                except ValueError:
                    continue
                with self._lock:
                    self.done.update(answer.get("done", []))
                    waiter = self._waiting.pop(answer.get("seq"), None)
                if waiter is not None:
                    waiter.answer = answer
                    waiter.event.set()

    def _give_up(self) -> None:
        """(with `_lock` held) Stop holding: close the channel, let every waiter go."""
        self.disabled = True
        self._close_socket()
        for waiter in self._waiting.values():
            waiter.event.set()
        self._waiting.clear()

    def _close_socket(self) -> None:
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                self._sock.close()
            except OSError:
                pass
            self._sock = None

    def close(self) -> None:
        with self._lock:
            self._close_socket()
            for waiter in self._waiting.values():
                waiter.event.set()
            self._waiting.clear()

