"""Failure points: the protocol events of a run at which a fault can be injected exactly.

A point names an event as an exact trigger can wait for it: event name, node, `where`
fields that pick it out (the block, the file, the pipeline stage, a replica state) and
`nth`, its occurrence among the events of that node with those fields, counted from the
start of the run (as the trigger matcher counts). Block ids are stable between runs of
the same scenario (the NameNode hands them out in order), so a point recorded in one
run is found again in the next as long as the run is the same up to it.

Only events a recovery can hinge on are points; `client.ack`, one per packet, is
sampled (the first, the middle and the last of each block).

On Hadoop the events come from two sources: the log adapter (`source: hadoop-log`) and,
with `cluster.hadoop_agent`, the Byteman agent (`hadoop-agent`). `hadoop_view` makes
them points as the mini-HDFS's are: where the agent reports a step the log reports too,
the agent's event is the point (its fields name nodes, its time is the JVM's clock);
an agent event's `upstream` (the writer's DFSClient name) becomes the pipeline's node
before it (the client for the first); the log's socket addresses are no node. Events
whose timing a trigger cannot trust are no points (`_untrusted`).
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
from typing import Iterable

# event -> the fields that pick one out (those present in the event are used)
POINT_EVENTS: dict[str, tuple[str, ...]] = {
    "nn.file.create": ("path",),
    "nn.file.append": ("path",),
    "nn.block.allocate": ("path",),
    "nn.block.update_pipeline": ("block",),
    "nn.file.complete": ("path",),
    "nn.lease.recover": ("path",),
    "nn.recovery.start": ("block",),
    "nn.recovery.commit": ("block",),
    "client.pipeline.setup": ("block",),
    "client.ack": ("block",),
    "client.hflush": ("path",),
    "client.pipeline.error": ("block",),
    "client.pipeline.recovered": ("block",),
    "client.close": ("path",),
    "client.recover_lease": ("path",),
    "dn.pipeline.setup": ("block", "stage"),
    # Hadoop's DataNode logs "Receiving <block> src: .. dest: .." where the mini-HDFS
    # logs dn.pipeline.setup (its stage is only at DEBUG, which is not raised)
    "dn.pipeline.receive": ("block",),
    "dn.replica.state": ("block", "state"),
    "dn.recovery.init_replica": ("block",),
    "dn.recovery.sync": ("block",),
    "dn.recovery.update_replica": ("block",),
    "dn.transfer": ("block",),
}

# points of a recovery: where a second fault (depth 2) goes
RECOVERY_EVENTS = frozenset({
    "nn.block.update_pipeline", "nn.lease.recover", "nn.recovery.start", "nn.recovery.commit",
    "client.pipeline.error", "client.pipeline.recovered", "client.recover_lease",
    "dn.recovery.init_replica", "dn.recovery.sync", "dn.recovery.update_replica",
    "dn.transfer",
})
RECOVERY_STAGES = ("PIPELINE_SETUP_STREAMING_RECOVERY", "PIPELINE_SETUP_APPEND_RECOVERY",
                   "PIPELINE_CLOSE_RECOVERY", "TRANSFER_RBW", "TRANSFER_FINALIZED")

ACK_SAMPLES = 3

AGENT_SOURCE = "hadoop-agent"
ADAPTED_SOURCES = ("hadoop-log", AGENT_SOURCE)
# a log event -> the agent's event of the same step (same node and block): with the
# agent on, the DataNode's "Receiving <block>" line gives way to its dn.pipeline.setup
# (the connect-ack it answers), which names the stage and the downstream node
AGENT_PREFERRED = {"dn.pipeline.receive": "dn.pipeline.setup"}
# Hadoop's NameNode answers complete() false until the last block's replicas are
# reported, then true: how many false answers come first depends on timing, so the
# answer picks the call out (the true one is the same call in every run)
ADAPTED_WHERE = {"nn.file.complete": ("path", "ok"),
                 # the agent's and the log's variants of one event name apart (the reason,
                 # the stage): a hold at the agent's counts only its own (agent.HOLD_PINS)
                 "dn.replica.state": ("block", "state", "reason"),
                 "client.pipeline.error": ("block", "stage")}
# log events the adapter holds back until the NameNode's handler thread logs its next
# line (logmap.LogMapper.hold: a refused create logs the request line too), up to a
# second: they carry the request line's time but reach the harness after the steps that
# follow it, so a trigger at them would fire there (the agent has no rule for them yet)
HELD_LOG_EVENTS = frozenset({"nn.file.create", "nn.file.append"})


@dataclasses.dataclass(frozen=True)
class FailurePoint:
    """One place in a run: the `nth` event `event` of `node` with fields `where`."""

    event: str
    node: str
    where: tuple[tuple[str, object], ...]
    nth: int
    index: int = 0          # order in the run (0 = first point)
    ts: float = 0.0         # when it happened in the run it was recorded from
    fields: tuple[tuple[str, object], ...] = ()   # more of the event: pipeline, upstream...

    @property
    def kind(self) -> str:
        """What kind of point this is, for signatures: the event, and its stage if any."""
        w = dict(self.where)
        extra = w.get("stage") or w.get("state")
        return f"{self.event}:{extra}" if extra else self.event

    @property
    def is_recovery(self) -> bool:
        return self.event in RECOVERY_EVENTS or dict(self.where).get("stage") in RECOVERY_STAGES

    def trigger(self, exact: bool = True) -> dict:
        """The trigger that waits for this point (scenario YAML): exact where the system
        can hold its processes at an event (the mini-HDFS), else a plain event trigger
        that fires when the harness sees the event (on Hadoop: the adapted log line)."""
        t = {"event": self.event, "node": self.node}
        if self.where:
            t["where"] = dict(self.where)
        if self.nth != 1:
            t["nth"] = self.nth
        if exact:
            t["exact"] = True
        return t

    def key(self) -> tuple:
        return (self.event, self.node, self.where, self.nth)

    def to_json(self) -> dict:
        return {"event": self.event, "node": self.node, "where": dict(self.where),
                "nth": self.nth, "index": self.index, "ts": self.ts, "fields": dict(self.fields)}

    @classmethod
    def from_json(cls, doc: dict) -> "FailurePoint":
        return cls(doc["event"], doc["node"], tuple(sorted(doc["where"].items())), doc["nth"],
                   doc.get("index", 0), doc.get("ts", 0.0),
                   tuple(sorted((k, _freeze(v)) for k, v in doc.get("fields", {}).items())))


def _freeze(v):
    return tuple(v) if isinstance(v, list) else v


def read_run_events(run_dir: str) -> list[dict]:
    """Every event of a run (all nodes), in time order."""
    events = []
    for path in sorted(glob.glob(os.path.join(run_dir, "events", "*.jsonl"))):
        with open(path, "rb") as f:
            for line in f:
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                if isinstance(e, dict) and isinstance(e.get("ts"), (int, float)):
                    events.append(e)
    events.sort(key=lambda e: (e["ts"], e.get("node", ""), e.get("seq", 0)))
    return events


def run_start_ts(events: Iterable[dict]) -> float:
    """When the run's clock started: the harness logs `harness.node.start` for the
    cluster's nodes just before (the trigger matcher counts events from then on)."""
    starts = [e["ts"] for e in events if e.get("event") == "harness.node.start"
              and e.get("node") == "harness"]
    return starts[0] if starts else 0.0


def hadoop_view(events: list[dict]) -> list[dict]:
    """The events of a Hadoop run as points see them (the module's docstring): a log
    event the agent also reports is left out, an agent event's writer and upstream are
    named as nodes. Events of other sources are returned as they are."""
    if not any(e.get("source") in ADAPTED_SOURCES for e in events):
        return events
    agent_steps = {(e.get("event"), e.get("node"), e.get("block")) for e in events
                   if e.get("source") == AGENT_SOURCE}
    holders = {e["holder"]: e["node"] for e in events
               if e.get("event") == "client.start" and e.get("holder")}
    nodes = {e.get("node") for e in events} - {None, "harness"}
    pipeline_of: dict = {}          # block -> its pipeline, as last allocated / set up
    out = []
    for e in events:
        name, source = e.get("event"), e.get("source")
        if name in ("nn.block.allocate", "nn.block.update_pipeline", "client.pipeline.setup") \
                and e.get("pipeline") and e.get("block") is not None:
            pipeline_of[e["block"]] = list(e["pipeline"])
        if source == "hadoop-log" and name in AGENT_PREFERRED and \
                (AGENT_PREFERRED[name], e.get("node"), e.get("block")) in agent_steps:
            continue
        if source not in ADAPTED_SOURCES:
            out.append(e)
            continue
        e = dict(e)
        if e.get("upstream") is not None and e["upstream"] not in nodes:
            e["upstream"] = holders.get(e["upstream"])        # a DFSClient name, or a socket
        if source == AGENT_SOURCE and name == "dn.pipeline.setup":
            pipeline = e.get("pipeline") or pipeline_of.get(e.get("block"))
            if pipeline and e.get("node") in pipeline:
                e["pipeline"] = pipeline
                i = pipeline.index(e["node"])
                if i > 0:
                    e["upstream"] = pipeline[i - 1]
        out.append(e)
    return out


def _untrusted(e: dict) -> bool:
    """An event a trigger cannot wait for at its time: one the log adapter makes from
    another line than the step's (`inferred`), one it holds back (HELD_LOG_EVENTS), and
    one of the harness's own. The agent's joined events (the entry and exit of
    one call, e.g. nn.lease.recover) are kept: they carry the entry's time and reach the
    harness at the exit, as the log's line of the same call does, so a fault at them
    fires after the call, in every run alike."""
    return bool(e.get("inferred")) or e.get("role") == "harness" or \
        (e.get("source") == "hadoop-log" and e.get("event") in HELD_LOG_EVENTS)


def extract_points(events: list[dict], start_ts: float | None = None) -> list[FailurePoint]:
    """The failure points of a run, in the order they happened."""
    if start_ts is None:
        start_ts = run_start_ts(events)
    events = hadoop_view(events)
    counts: dict[tuple, int] = {}
    found: list[tuple[dict, tuple, int]] = []
    for e in events:
        name = e.get("event")
        if name not in POINT_EVENTS or e["ts"] < start_ts or _untrusted(e):
            continue
        adapted = e.get("source") in ADAPTED_SOURCES
        keys = ADAPTED_WHERE.get(name, POINT_EVENTS[name]) if adapted else POINT_EVENTS[name]
        where = tuple((f, _freeze(e[f])) for f in keys if e.get(f) is not None)
        group = (name, e.get("node"), where)
        counts[group] = counts.get(group, 0) + 1
        found.append((e, group, counts[group]))
    points = []
    for e, group, nth in found:
        if group[0] == "client.ack" and not _sampled(nth, counts[group],
                                                     e.get("source") in ADAPTED_SOURCES):
            continue
        fields = tuple(sorted((k, _freeze(e[k])) for k in
                              ("pipeline", "upstream", "downstream", "primary", "dn", "bad_node",
                               "path", "new_node") if e.get(k) is not None))
        points.append(FailurePoint(group[0], group[1], group[2], nth, len(points),
                                   round(e["ts"] - start_ts, 6), fields))
    return points


def _sampled(nth: int, total: int, adapted: bool = False) -> bool:
    """The first, the middle and the last ack of a block. Not the last on Hadoop: its
    client acks as many packets as its hflushes and timing cut (3 or 4 for one block of
    the same run), so the last of one run may never come in the next."""
    if ACK_SAMPLES != 3:
        return True
    return nth in ({1, (total + 1) // 2} if adapted else {1, (total + 1) // 2, total})
