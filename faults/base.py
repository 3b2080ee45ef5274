"""The shape every fault shares: data first, then inject() and heal(), both logged.

A fault is built from plain parameters (validated at once, so a bad scenario fails
before any cluster starts); nothing happens until `inject()`. `heal()` undoes what
`inject()` did and is safe to call at any time: before inject, twice, or after the
fault ended by itself. Both log to the harness event log (spec/EVENTS.md):
`harness.fault.inject {fault, kind, target, params[, resolved]}` just before the effect starts (so
anything the fault causes comes after it in time), `harness.fault.heal {fault}` just
after the effect is undone, and `harness.fault.error {fault, kind, error, reason}` if
injecting failed half way (what was done is undone first).
"""

from __future__ import annotations

import itertools
import threading
from typing import Any, ClassVar

from hdfs_contract.events import EventLog


def harness_log(path: str | None = None) -> EventLog:
    """The harness's own event log (`node: harness`, `role: harness`); None writes nowhere."""
    return EventLog(path, "harness", "harness")


_unnamed = itertools.count(1)


class FaultError(RuntimeError):
    """A fault could not be injected (its one-line message says why and what to do)."""


class Fault:
    """Base of every fault: subclasses set `kind` and implement `_apply` and `_undo`.

    `_prepare()` may resolve what the fault acts on (and raise a clear error) before
    anything is logged; `target` and `params` are what the inject event records.
    """

    kind: ClassVar[str] = "fault"
    # ["c1.pipeline[1]=dn3", ...]: the scenario named the target by pipeline position
    resolved: tuple[str, ...] | list[str] = ()

    def __init__(self, *, fault_id: str | None = None, log: EventLog | None = None):
        # Unnamed faults still get distinct ids: toxic names are derived from them.
        self.fault_id = fault_id or f"{self.kind}-{next(_unnamed)}"
        self.log = log if log is not None else harness_log(None)
        self.active = False
        self._lock = threading.RLock()

    # --- what subclasses provide -------------------------------------------------
    @property
    def target(self) -> Any:
        raise NotImplementedError

    @property
    def params(self) -> dict[str, Any]:
        return {}

    def _prepare(self) -> None:
        """Resolve and check what the fault acts on; nothing is logged or changed yet."""

    def _apply(self) -> None:
        raise NotImplementedError

    def _undo(self) -> None:
        raise NotImplementedError

    # --- the two verbs -------------------------------------------------------------
    def inject(self) -> None:
        """Starts the fault; logs harness.fault.inject. Raises FaultError if already active."""
        with self._lock:
            if self.active:
                raise FaultError(f"fault {self.fault_id!r} is already injected; heal it first")
            self._prepare()
            # `resolved`: the pipeline positions the target was named by (harness.pipelines)
            extra = {"resolved": list(self.resolved)} if self.resolved else {}
            self.log.emit("harness.fault.inject", fault=self.fault_id, kind=self.kind,
                          target=self.target, params=self.params, **extra)
            try:
                self._apply()
            except BaseException as exc:
                self.log.emit("harness.fault.error", fault=self.fault_id, kind=self.kind,
                              error=type(exc).__name__, reason=str(exc))
                raise
            self.active = True

    def heal(self) -> bool:
        """Ends the fault if it is active (logs harness.fault.heal); returns whether it was."""
        with self._lock:
            if not self.active:
                return False
            self._undo()
            self.active = False
            self.log.emit("harness.fault.heal", fault=self.fault_id)
            return True

    def _ended_by_itself(self) -> None:
        """For faults that end on their own (a restart whose node is back): logs the heal."""
        with self._lock:
            if self.active:
                self.active = False
                self.log.emit("harness.fault.heal", fault=self.fault_id)

    # --- data ---------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """`{fault, kind, target, params}`: what the inject event will say."""
        return {"fault": self.fault_id, "kind": self.kind, "target": self.target,
                "params": self.params}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        state = " active" if self.active else ""
        return f"<{type(self).__name__} {self.fault_id!r} target={self.target!r} {args}{state}>"

    def __enter__(self) -> "Fault":
        self.inject()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.heal()
