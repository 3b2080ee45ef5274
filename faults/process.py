"""Node faults: kill, restart, pause and resume processes, on any cluster backend.

The faults act on a `NodeControl`, which each cluster backend implements (local
processes, Docker containers); they log `harness.node.*` events for what they do to a
node, and `harness.fault.inject`/`heal` for themselves. `LocalProcessControl` is the
plain-process implementation, over `subprocess.Popen` objects and a restart callable.
"""

from __future__ import annotations

import signal
import subprocess
import threading
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from faults.base import Fault, FaultError
from hdfs_contract.events import EventLog


@runtime_checkable
class NodeControl(Protocol):
    """What a cluster backend lets faults do to a node (by id: nn, dn1, c1, ...)."""

    def kill(self, node: str) -> None:
        """Ends the node at once (SIGKILL): no shutdown, unflushed state lost."""

    def stop(self, node: str) -> None:
        """Ends the node gracefully (SIGTERM, then SIGKILL if it does not exit)."""

    def start(self, node: str) -> None:
        """Starts the node again with its storage kept; no-op if it is running."""

    def pause(self, node: str) -> None:
        """Freezes the node (SIGSTOP): sockets stay open, nothing is processed."""

    def resume(self, node: str) -> None:
        """Thaws a paused node (SIGCONT)."""


class LocalProcessControl:
    """NodeControl over local processes: `processes` maps node -> Popen, and `restart`
    is called as `restart(node)` to start a node again, returning its new Popen.

    Signals go to the process itself (not its group): a mini-HDFS node is one process.
    """

    def __init__(self, processes: dict[str, subprocess.Popen] | None = None,
                 restart: Callable[[str], subprocess.Popen] | None = None,
                 stop_timeout: float = 10.0):
        self._processes: dict[str, subprocess.Popen] = dict(processes or {})
        self._restart = restart
        self.stop_timeout = stop_timeout
        self._lock = threading.RLock()

    def add(self, node: str, process: subprocess.Popen) -> None:
        """Registers (or replaces) the process of `node`."""
        with self._lock:
            self._processes[node] = process

    def process(self, node: str) -> subprocess.Popen:
        with self._lock:
            try:
                return self._processes[node]
            except KeyError:
                raise KeyError(f"no process for node {node!r}; known: "
                               f"{sorted(self._processes)}") from None

    def running(self, node: str) -> bool:
        return self.process(node).poll() is None

    def _signal(self, node: str, sig: int) -> subprocess.Popen:
        proc = self.process(node)
        if proc.poll() is None:
            try:
                proc.send_signal(sig)
            except ProcessLookupError:
                pass  # exited between poll and signal
        return proc

    def kill(self, node: str) -> None:
        self._signal(node, signal.SIGKILL).wait()

    def stop(self, node: str) -> None:
        proc = self._signal(node, signal.SIGTERM)
        # A paused process keeps a SIGTERM pending until it runs again.
        self._signal(node, signal.SIGCONT)
        try:
            proc.wait(self.stop_timeout)
        except subprocess.TimeoutExpired:
            self.kill(node)

    def start(self, node: str) -> None:
        with self._lock:
            if node in self._processes and self.running(node):
                return
            if self._restart is None:
                raise FaultError(f"cannot start {node!r} again: this LocalProcessControl "
                                 f"was given no restart callable")
            self._processes[node] = self._restart(node)

    def pause(self, node: str) -> None:
        self._signal(node, signal.SIGSTOP)

    def resume(self, node: str) -> None:
        self._signal(node, signal.SIGCONT)


class NodeFault(Fault):
    """A fault on one node through a NodeControl."""

    def __init__(self, node: str, *, control: NodeControl | None = None,
                 log: EventLog | None = None, fault_id: str | None = None):
        super().__init__(fault_id=fault_id, log=log)
        if not isinstance(node, str) or not node:
            raise ValueError(f"{self.kind}: target must be a node id, got {node!r}")
        self.node = node
        self.control = control

    @property
    def target(self) -> str:
        return self.node

    def _prepare(self) -> None:
        if self.control is None:
            raise FaultError(f"fault {self.fault_id!r} has no node control to act on")

    # each action logs the harness.node event right after it took effect
    def _do(self, action: str) -> None:
        getattr(self.control, action)(self.node)
        self.log.emit(f"harness.node.{action}", target=self.node)


class Kill(NodeFault):
    """Kills the node (SIGKILL). Heal starts it again with its storage kept, so the
    cluster is whole when the run ends; use CrashClient for a client that stays dead.
    With `stay_down` heal does nothing: a DataNode lost for good, which the NameNode
    must declare dead and do without (its queued commands dropped, its blocks
    re-replicated)."""

    kind = "kill"

    def __init__(self, node: str, *, stay_down: bool = False, **kw: Any):
        super().__init__(node, **kw)
        self.stay_down = stay_down

    @property
    def params(self) -> dict[str, Any]:
        return {"stay_down": True} if self.stay_down else {}

    def _apply(self) -> None:
        self._do("kill")

    def _undo(self) -> None:
        if not self.stay_down:
            self._do("start")


class CrashClient(NodeFault):
    """Crashes a client process (SIGKILL) mid-write: its lease is left for the NameNode
    to recover. Heal does nothing: a crashed client does not come back."""

    kind = "crash_client"

    def _apply(self) -> None:
        self._do("kill")

    def _undo(self) -> None:
        pass


class Restart(NodeFault):
    """Stops the node gracefully (SIGTERM; SIGKILL with `graceful=False`) and starts it
    again `down` seconds later, in the background; inject() returns at once. (A crash
    and a later start is also `Kill` healed after a while.)

    The fault heals itself when the node is back (harness.fault.heal is logged then);
    heal() before that cancels the wait and starts the node now.
    """

    kind = "restart"

    def __init__(self, node: str, down: float = 0.0, *, graceful: bool = True, **kw: Any):
        super().__init__(node, **kw)
        if isinstance(down, bool) or not isinstance(down, (int, float)) or down < 0:
            raise ValueError(f"restart: down must be a duration >= 0 seconds, got {down!r}")
        self.down = down
        self.graceful = graceful
        self._timer: threading.Timer | None = None

    @property
    def params(self) -> dict[str, Any]:
        return {"down": self.down, "graceful": self.graceful}

    def _apply(self) -> None:
        self._do("stop" if self.graceful else "kill")
        self._timer = threading.Timer(self.down, self._come_back)
        self._timer.daemon = True
        self._timer.start()

    def _come_back(self) -> None:
        with self._lock:
            if not self.active or self._timer is None:
                return  # healed meanwhile
            self._timer = None
            self._do("start")
        self._ended_by_itself()

    def _undo(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
            self._do("start")

    def wait(self, timeout: float | None = None) -> bool:
        """Waits until the node is back (or the fault healed); returns whether it is."""
        timer = self._timer
        if timer is not None:
            timer.join(timeout)
        return not self.active


class Pause(NodeFault):
    """Freezes the node (SIGSTOP): its sockets stay open but nothing is read, written
    or acked, like a long GC pause. Heal resumes it (SIGCONT)."""

    kind = "pause"

    def _apply(self) -> None:
        self._do("pause")

    def _undo(self) -> None:
        self._do("resume")


class Resume(NodeFault):
    """Resumes a paused node (SIGCONT), for scenarios that pause and resume as two
    faults. Heal does nothing."""

    kind = "resume"

    def _apply(self) -> None:
        self._do("resume")

    def _undo(self) -> None:
        pass
