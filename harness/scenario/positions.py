"""Pipeline positions: a fault's DataNode named by its place in a client's write pipeline.

Faults usually name DataNodes by id (`dn2`). Which DataNode is *first*, *in the middle*
or *last* of a pipeline is the NameNode's choice, though: the mini-HDFS places replicas
by the scenario's seed, Apache Hadoop at random. A scenario that means "the middle node
of c1's pipeline" says so with a position reference, resolved when the fault fires:

    c1.pipeline[0]      the first DataNode of c1's latest pipeline (also c1.pipeline[first])
    c1.pipeline[1]      the second one
    c1.pipeline[last]   the last one, whatever the pipeline's length

Inside a YAML flow list (`links: [[c1, c1.pipeline[0]]]`) the brackets end the list, so
there write the same reference with a dot, `c1.pipeline.0` / `c1.pipeline.last`, or quote
it. Every form reads to the canonical `CLIENT.pipeline[INDEX]` text (`first` is `[0]`).

This module owns the syntax only; `harness.pipelines` resolves a position against the
events of a run, `harness.scenario.loader` checks it against the scenario.
"""

from __future__ import annotations

import dataclasses
import re

_CLIENT = r"[A-Za-z][A-Za-z0-9_-]*"
_FORM = re.compile(rf"^(?P<client>{_CLIENT})\.pipeline(?:\[(?P<b>[^\[\]]*)\]|\.(?P<d>[^.\[\]]*))$")
KEYWORDS = ("first", "last")
SYNTAX = "CLIENT.pipeline[N] (N = 0, 1, ... or first, last), e.g. c1.pipeline[1]"


class PositionSyntaxError(ValueError):
    """A value that is meant as a pipeline position but is not one (message: one line)."""


@dataclasses.dataclass(frozen=True)
class PipelinePosition:
    """Position `index` (an int from 0, or `last`) of client `client`'s latest pipeline."""

    client: str
    index: int | str

    def __str__(self) -> str:
        return f"{self.client}.pipeline[{self.index}]"

    def pick(self, pipeline: list[str]) -> str | None:
        """The DataNode at this position of `pipeline`, or None if it is too short."""
        if not pipeline:
            return None
        i = len(pipeline) - 1 if self.index == "last" else self.index
        return pipeline[i] if i < len(pipeline) else None


def looks_like_position(value: str) -> bool:
    """Whether `value` is meant as a position: node ids have no `.` and no `[`."""
    return "." in value or "[" in value


def parse_position(value: str) -> PipelinePosition:
    """`c1.pipeline[1]`, `c1.pipeline.last`, ... -> PipelinePosition (PositionSyntaxError)."""
    m = _FORM.match(value.strip())
    if not m:
        hint = ""
        if re.match(rf"^{_CLIENT}\.pip", value) and ".pipeline" not in value:
            hint = " (the word is pipeline)"
        raise PositionSyntaxError(f"{value!r} is not a node id nor a pipeline position{hint}; "
                                  f"write a node id such as dn1, or {SYNTAX}")
    raw = (m.group("b") if m.group("b") is not None else m.group("d")).strip()
    if raw in KEYWORDS:
        return PipelinePosition(m.group("client"), 0 if raw == "first" else "last")
    if re.fullmatch(r"[0-9]+", raw):
        return PipelinePosition(m.group("client"), int(raw))
    if re.fullmatch(r"-[0-9]+", raw):
        raise PositionSyntaxError(f"{value!r}: a pipeline position counts from 0 at the first "
                                  "DataNode; for the last one write "
                                  f"{m.group('client')}.pipeline[last]")
    raise PositionSyntaxError(f"{value!r}: the position {raw!r} is not 0, 1, ..., first or "
                              f"last; write {SYNTAX}")


def canonical(value: str) -> str:
    """The canonical text of a position reference (`c1.pipeline.1` -> `c1.pipeline[1]`)."""
    return str(parse_position(value))
