"""Resolving pipeline positions (`c1.pipeline[1]`) to DataNode ids while a run goes on.

A fault may name a DataNode by its place in a client's pipeline (harness.scenario.positions).
The runner resolves it when the fault fires, against the client's *latest* pipeline: the
`pipeline` of the newest `client.pipeline.setup` or `client.pipeline.recovered` event that
client logged (spec/EVENTS.md; on Apache Hadoop the log adapter writes both from the
DFSClient's DataStreamer lines), or of the NameNode's `nn.block.allocate` of a block for
that client (its holder, else its path, as the client's `client.stream.open` named them):
the pipeline it is about to set up, so a fault triggered on the allocation can act on
the links of that setup. Any file, any block: the pipeline the client streams to now, or
streamed to last. A rebuilt pipeline replaces the one it recovered, so a second
fault on `c1.pipeline[1]` after a recovery names the node now second.

- `PipelineTracker`: pure bookkeeping, fed events, answers `resolve(position)`.
- `LivePipelines`: the tracker over the run's live `events/*.jsonl` (its own tailer, so
  a resolution sees every line written up to the moment the fault fires).
- `resolve_fault(spec, tracker)`: the scenario's fault with every position replaced by
  the DataNode id, and the `c1.pipeline[1]=dn3` texts the injection event records. The
  positions are looked for in the fields the fault's kind names nodes in (`node_fields`).

A position that cannot be resolved (no pipeline yet, index beyond its length, a link
whose two ends become the same node) raises `PositionError`: the run stops with that
error, it never silently acts on no node or on the wrong one.
"""

from __future__ import annotations

import os
from typing import Any, Iterable

from faults.base import FaultError
from harness.scenario.positions import PipelinePosition, looks_like_position, parse_position

PIPELINE_EVENTS = ("client.pipeline.setup", "client.pipeline.recovered")
ALLOCATE = "nn.block.allocate"      # logged by the NameNode: whose block by holder or path
OPEN = "client.stream.open"         # a client's holder name and the path it writes


class PositionError(FaultError):
    """A pipeline position could not be resolved when its fault fired (one line)."""


class PipelineTracker:
    """The latest pipeline of each client, from its own pipeline events and the NameNode's
    allocations of blocks for it."""

    def __init__(self) -> None:
        self._latest: dict[str, tuple[float, dict]] = {}
        self._holders: dict[str, str] = {}    # holder -> client (client.stream.open)
        self._paths: dict[str, str] = {}      # path -> the client that opened it last

    def observe(self, event: dict) -> None:
        name = event.get("event")
        if name == OPEN:
            self._learn_client(event)
            return
        if name == ALLOCATE:
            client = self._client_of(event)
        elif name in PIPELINE_EVENTS:
            client = event.get("node")
        else:
            return
        pipeline, ts = event.get("pipeline"), event.get("ts")
        if not isinstance(client, str) or not isinstance(pipeline, list) \
                or not isinstance(ts, (int, float)):
            return
        seen = self._latest.get(client)
        if seen is None or ts >= seen[0]:   # equal ts: the later line wins
            self._latest[client] = (float(ts), event)

    def _learn_client(self, event: dict) -> None:
        client, holder, path = event.get("node"), event.get("holder"), event.get("path")
        if not isinstance(client, str):
            return
        if isinstance(holder, str):
            self._holders[holder] = client
        if isinstance(path, str):
            self._paths[path] = client

    def _client_of(self, allocate: dict) -> str | None:
        """The client an allocated block is for: its holder's, else its path's opener."""
        holder, path = allocate.get("holder"), allocate.get("path")
        if isinstance(holder, str) and holder in self._holders:
            return self._holders[holder]
        return self._paths.get(path) if isinstance(path, str) else None

    def observe_all(self, events: Iterable[dict]) -> None:
        for event in events:
            self.observe(event)

    def latest(self, client: str) -> dict | None:
        """The newest pipeline event of `client`, or None if it has had no pipeline."""
        seen = self._latest.get(client)
        return None if seen is None else seen[1]

    def resolve(self, position: PipelinePosition) -> str:
        """The DataNode id at `position` now; PositionError if there is none."""
        event = self.latest(position.client)
        if event is None:
            raise PositionError(f"{position} cannot be resolved: {position.client} has set up no "
                                "pipeline yet (no client.pipeline.setup); trigger the fault on "
                                f"an event of {position.client}'s write")
        pipeline = [str(n) for n in event["pipeline"]]
        node = position.pick(pipeline)
        if node is None:
            raise PositionError(f"{position} cannot be resolved: {position.client}'s pipeline "
                                f"is {_show(pipeline)} ({event.get('event')} of block "
                                f"{event.get('block')}), it has no position {position.index}")
        return node


class LivePipelines(PipelineTracker):
    """A PipelineTracker over the live event logs of a run (`refresh()` reads what is new)."""

    def __init__(self, events_dir: str | os.PathLike):
        super().__init__()
        from harness.triggers import LogTailer
        self._tailer = LogTailer([events_dir])

    def refresh(self) -> "LivePipelines":
        events = self._tailer.read_new()
        events.sort(key=lambda e: e.get("ts") if isinstance(e.get("ts"), (int, float)) else 0)
        self.observe_all(events)
        return self

    def close(self) -> None:
        self._tailer.close()


def has_positions(spec: Any) -> bool:
    """Whether the scenario fault `spec` names a node by pipeline position."""
    return any(looks_like_position(n) for n in _names(spec))


def resolve_fault(spec: Any, tracker: PipelineTracker) -> tuple[Any, list[str]]:
    """(the fault with each position replaced by its DataNode id, ["c1.pipeline[1]=dn3", ...]).
    A fault without positions comes back unchanged with an empty list."""
    if not has_positions(spec):
        return spec, []
    resolved: dict[str, str] = {}

    def node(name: str) -> str:
        if not looks_like_position(name):
            return name
        if name not in resolved:
            resolved[name] = tracker.resolve(parse_position(name))
        return resolved[name]

    def walk(value: Any) -> Any:     # a name, or (nested) tuples of names
        if isinstance(value, str):
            return node(value)
        if isinstance(value, (tuple, list)):
            return tuple(walk(v) for v in value)
        return value

    changes = {name: walk(getattr(spec, name)) for name in _node_fields(spec)
               if getattr(spec, name, None)}
    texts = [f"{k}={v}" for k, v in resolved.items()]
    try:
        return spec.with_nodes(changes), texts
    except ValueError as e:           # the kind's word on nodes that make no sense
        raise PositionError(f"fault {spec.id}: {e} ({_pairs(resolved)})") from None


def _node_fields(spec: Any) -> tuple[str, ...]:
    return tuple(getattr(spec, "node_fields", ()))


def _names(spec: Any) -> list[str]:
    names: list[str] = []

    def add(value: Any) -> None:
        if isinstance(value, str):
            names.append(value)
        elif isinstance(value, (tuple, list)):
            for v in value:
                add(v)

    for name in _node_fields(spec):
        add(getattr(spec, name, None))
    return names


def _show(pipeline: list[str]) -> str:
    return "[" + ", ".join(pipeline) + "]"


def _pairs(resolved: dict[str, str]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in resolved.items())
