"""The explorer's state (`out/state.json`): everything `--resume` needs to go on with an
exploration. `to_json()` writes the keys in the order they have always been written;
`from_json()` reads what earlier versions wrote too (a key they did not write takes its
empty default: an exploration before Hadoop had no `system`, and was on the mini-HDFS).
Keys this version does not know are kept in `extra` and written back.

The entries of `results`, `findings` and `base_run` stay JSON objects: they are what
findings/*.json and the summary show, written as they are."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any


class StateError(ValueError):
    """A state.json that is not an explorer's state (one line: what is wrong)."""


@dataclasses.dataclass
class ExploreState:
    base: str                                   # the base scenario's absolute path
    system: str = "minihdfs"                    # "minihdfs" or "hadoop <version>"
    exact: bool = True                          # exact injection (the mini-HDFS only)
    note: str | None = None                     # what the exploration says once (Hadoop)
    points: list[dict] = dataclasses.field(default_factory=list)      # FailurePoint JSON
    results: dict[str, dict] = dataclasses.field(default_factory=dict)  # schedule id -> result
    schedules: dict[str, dict] = dataclasses.field(default_factory=dict)  # id -> Schedule JSON
    queue: list[dict] = dataclasses.field(default_factory=list)  # {schedule, boost}, in order
    tried: dict[str, Any] = dataclasses.field(default_factory=dict)   # ScheduleQueue.tried
    running: dict[str, dict] = dataclasses.field(default_factory=dict)  # cut short: run again
    findings: dict[str, dict] = dataclasses.field(default_factory=dict)  # signature -> group
    elapsed: float = 0.0                        # seconds spent, over every session
    space: int = 0                              # depth-1 schedules there are
    verify_s: float = 0.0                       # seconds verifying, and runs verified
    verified: int = 0
    base_run: dict | None = None                # the clean run of the base (absent before)
    extra: dict = dataclasses.field(default_factory=dict)

    _ORDER = ("base", "system", "exact", "note", "points", "results", "schedules", "queue",
              "tried", "running", "findings", "elapsed", "space", "verify_s", "verified",
              "base_run")

    def to_json(self) -> dict:
        out = {k: getattr(self, k) for k in self._ORDER}
        if self.base_run is None:
            del out["base_run"]
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls, data: Any) -> "ExploreState":
        if not isinstance(data, dict):
            raise StateError(f"the state is {type(data).__name__}, not a JSON object")
        data = dict(data)
        if not isinstance(data.get("base"), str):
            raise StateError("the state names no base scenario")
        for key, kind in (("points", list), ("queue", list), ("results", dict),
                          ("schedules", dict), ("tried", dict), ("running", dict),
                          ("findings", dict)):
            if key in data and not isinstance(data[key], kind):
                raise StateError(f"the state's {key} is {type(data[key]).__name__}, "
                                 f"not a {kind.__name__}")
        kw = {k: data.pop(k) for k in cls._ORDER if k in data}
        return cls(**kw, extra=data)

    @classmethod
    def read(cls, path: str) -> "ExploreState":
        with open(path, encoding="utf-8") as f:
            try:
                data = json.load(f)
            except ValueError as e:
                raise StateError(f"{path}: not JSON: {e}") from None
        try:
            return cls.from_json(data)
        except StateError as e:
            raise StateError(f"{path}: {e}") from None

    def write(self, path: str) -> None:
        """Write `path` atomically (a crash mid-write leaves the previous state)."""
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(self.to_json(), f, default=str)
        os.replace(tmp, path)
