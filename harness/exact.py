"""Exact injection, the harness side: fires `exact: true` event triggers while the
process that logged the event waits (hdfs_contract.hold), then lets it go on.

`HoldServer` owns, for one run, a unix socket in a short temporary folder and the JSON
file that `MINIHDFS_HOLD` names for the cluster's processes. Each process announces the
events that match a hold of its node; the server counts them with its own
`TriggerMatcher` (the same rules as the trigger engine: name, node, `where`, `nth`,
events before the run's start not counted) and, when one makes a trigger due, calls
`fire(key, firing)` (which injects the fault and returns once it is in place) before it
answers `release`. Every other announcement is released at once. Only the thread that
logged the event waits (hdfs_contract.hold): the announcements of one process are counted in
the order it sent them, and a firing runs on a thread of its own, so another thread of
that process can be announced, held and released meanwhile. A process that dies while
held (the fault was its kill) just closes its connection.

On Hadoop (the agent on) the JVMs announce the raw line of an agent rule instead of a
record; `records_of` (harness/systems/hadoop/agent.py HoldRecords) maps it to the contract
events it stands for, which are matched as above, and `rules_of` names in the spec the
rules each hold listens to (agenthold/AgentHold.java, the JVM side).

A fault whose injection waits for the held process itself (a graceful restart of that
process: SIGTERM, then waiting for it to exit, which it cannot while its log is held)
would deadlock; so the release also goes out `release_after` seconds after injection
began, whichever comes first.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import threading
import time
from typing import Callable, Hashable

from harness.scenario.model import OnEvent
from harness.triggers import Firing, TriggerMatcher
from hdfs_contract.hold import ENV

Fire = Callable[[Hashable, Firing], None]


class HoldServer:
    """The hold channel of one run. `add` every exact trigger, `start()` before the
    cluster starts (`env()` is what its processes need), `arm(start_ts)` once the run's
    clock starts, `stop()` at the end (every waiting process is released)."""

    def __init__(self, fire: Fire, *, timeout: float = 10.0, release_after: float = 1.0,
                 on_release: Callable[[dict], None] | None = None,
                 records_of: Callable[[dict], list[dict]] | None = None,
                 rules_of: Callable[[OnEvent], list[str]] | None = None):
        self.fire = fire
        # a system whose processes announce something else than contract events (the
        # Hadoop agent's raw lines) maps each announcement to its events (none, one or
        # more) with `records_of`, and names in the spec, per hold, the `rules` that can
        # make its event (`rules_of`); the mini-HDFS announces its record itself
        self.records_of = records_of
        self.rules_of = rules_of
        self.timeout = timeout
        self.release_after = release_after
        self.on_release = on_release or (lambda fields: None)
        self.dir = tempfile.mkdtemp(prefix="hc-hold-")
        self.socket_path = os.path.join(self.dir, "hold.sock")
        self.spec_path = os.path.join(self.dir, "holds.json")
        self.triggers: dict[Hashable, OnEvent] = {}
        self.ids: dict[Hashable, str] = {}
        self.matcher: TriggerMatcher | None = None
        self.fired: list[Firing] = []
        self.announced = 0
        self._lock = threading.Lock()
        self._server: socket.socket | None = None
        self._conns: list[socket.socket] = []
        self._stopping = False

    def add(self, key: Hashable, trigger: OnEvent) -> None:
        self.triggers[key] = trigger
        self.ids[key] = f"h{len(self.ids)}"

    def env(self) -> dict[str, str]:
        return {ENV: self.spec_path}

    def start(self) -> "HoldServer":
        holds = [{"id": self.ids[k], "event": t.event, "node": t.node, "where": dict(t.where)}
                 for k, t in self.triggers.items()]
        if self.rules_of is not None:
            for hold, trigger in zip(holds, self.triggers.values()):
                hold["rules"] = list(self.rules_of(trigger))
        with open(self.spec_path, "w") as f:
            json.dump({"socket": self.socket_path, "timeout": self.timeout, "holds": holds}, f)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(self.socket_path)
        server.listen(64)
        self._server = server
        threading.Thread(target=self._accept, name="hold-accept", daemon=True).start()
        return self

    def arm(self, start_ts: float) -> None:
        """The run's clock started: from now on announced events count."""
        with self._lock:
            matcher = TriggerMatcher(start_ts)
            for key, trigger in self.triggers.items():
                matcher.add(key, trigger)
            self.matcher = matcher

    def pending(self) -> list[Hashable]:
        with self._lock:
            return list(self.triggers) if self.matcher is None else self.matcher.pending()

    def stop(self) -> None:
        """Release everything and hold nothing more (processes find the channel closed)."""
        self._stopping = True
        if self._server is not None:
            try:
                self._server.close()
            except OSError:
                pass
        for conn in list(self._conns):
            try:
                conn.shutdown(socket.SHUT_RDWR)
                conn.close()
            except OSError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- the channel ------------------------------------------------------------------------

    def _accept(self) -> None:
        while not self._stopping:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), name="hold-conn",
                             daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        buf = b""
        send_lock = threading.Lock()   # answers to one process may go out from several threads
        with conn:
            while not self._stopping:
                try:
                    data = conn.recv(65536)
                except OSError:
                    return
                if not data:
                    return   # the process ended (a kill while held, or its normal exit)
                buf += data
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    try:
                        message = json.loads(line)
                    except ValueError:
                        continue
                    self._answer(conn, send_lock, message)

    def _answer(self, conn: socket.socket, send_lock: threading.Lock, message: dict) -> None:
        """Counts the announcement (in the order the process sent them) and releases it,
        at once or, when it made triggers due, on a thread of its own once they fired:
        other threads of the same process may be held and released meanwhile."""
        records = self._records(message)
        record = records[-1] if records else {}
        with self._lock:
            self.announced += 1
            due: list[Firing] = []
            if self.matcher is not None and not self._stopping:
                if [k for r in records for k in self.matcher.observe(r)]:
                    due = self.matcher.due(float("inf"))
            done = [self.ids[k] for k in self.triggers
                    if self.matcher is not None and k not in self.matcher.pending()]
        released = threading.Event()
        reply = json.dumps({"seq": message.get("seq"), "release": True, "done": done}).encode() + b"\n"

        def release() -> None:
            with send_lock:
                if released.is_set():
                    return
                released.set()
                try:
                    conn.sendall(reply)
                except OSError:
                    pass   # the process is gone: the fault killed it

        if not due:
            release()
            return
        threading.Thread(target=self._fire_then_release, args=(due, message, record, release,
                                                                released),
                         name="hold-fire", daemon=True).start()

    def _records(self, message: dict) -> list[dict]:
        """The contract events one announcement stands for."""
        if self.records_of is None:
            return [message.get("record") or {}]
        try:
            return list(self.records_of(message))
        except Exception:   # a line the mapper cannot read holds nothing: released at once
            return []

    def _fire_then_release(self, due: list[Firing], message: dict, record: dict,
                           release: Callable[[], None], released: threading.Event) -> None:
        timer = threading.Timer(self.release_after, release)
        timer.daemon = True
        timer.start()
        for firing in due:
            firing.fired_ts = time.time()
            self.fired.append(firing)
            try:
                self.fire(firing.key, firing)
            except Exception:   # the runner records failed injections itself
                pass
        timer.cancel()
        self.on_release({"held_node": message.get("node"), "held_seq": message.get("seq"),
                         "held_event": record.get("event"),
                         "fired": [str(f.key) for f in due],
                         "late": released.is_set()})
        release()
