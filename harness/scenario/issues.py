"""What is wrong with a scenario file, said so that a person can fix it.

Every problem becomes one `Issue` that names the file, the line and column (1-based),
the field (`faults[1].kind`) and what is wrong, printed as
`FILE:LINE:COL: faults[1].kind: unknown fault kind 'partitoin' (did you mean 'partition'?)`.
A file's issues are all collected before `ScenarioError` is raised, so one run of
`hdfs-chaos validate` shows every mistake at once.
"""

from __future__ import annotations

import dataclasses
import difflib
from typing import Iterable


@dataclasses.dataclass(frozen=True, order=True)
class Issue:
    """One problem of a scenario file, at a position (1-based line and column)."""

    file: str
    line: int
    col: int
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.field}: " if self.field else ""
        position = f"{self.line}:{self.col}:" if self.line else ""
        return f"{self.file}:{position} {where}{self.message}"


class ScenarioError(ValueError):
    """A scenario that cannot run; `issues` holds every problem found in it."""

    def __init__(self, issues: Iterable[Issue]):
        self.issues = sorted(issues)
        super().__init__("\n".join(str(i) for i in self.issues))


def did_you_mean(name: object, options: Iterable[str]) -> str:
    """` (did you mean 'x'?)` when a close option exists, else ``."""
    close = difflib.get_close_matches(str(name), sorted(set(options)), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
