"""Schedules: one or two faults at failure points, each a plain scenario.

`faults_at(point, scenario_nodes)` lists the faults applicable at a point: every variant
(faults.kinds.ExploreVariant) of every registered kind on the DataNodes the point
involves (its own node, its pipeline, upstream and downstream), on the client it
involves, on the NameNode, and on the directed links near the point (client -> first
DataNode, upstream -> node, node -> downstream). The kinds say which variants they have
(today: kill, restart or pause a DataNode; crash or pause a client; restart the
NameNode; partition or cut a link: harness.scenario.model); this module names no kind.

A `Schedule` is the base scenario plus its faults, with exact triggers; `to_yaml` writes
it as a scenario file that `hdfs-chaos run` takes as it is. Its `signature` is what
FATE calls the failure's abstraction: point kind, fault kind and the target's relation
to the point; `ScheduleQueue` hands out schedules whose signature was tried least
first, so a budget covers every kind of failure before it repeats any.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import heapq
import json
from typing import Callable, Iterable

import yaml

from faults.kinds import KINDS, explored_kinds
from harness.scenario.model import CLIENT, DATANODE, LINK, NAMENODE

from .points import FailurePoint


@dataclasses.dataclass(frozen=True)
class FaultChoice:
    """A fault, apart from its trigger: kind, target (a node or a directed link), params."""

    kind: str
    target: str | tuple[str, str]
    relation: str                      # the target's relation to the point (self, upstream, ...)
    params: tuple[tuple[str, object], ...] = ()

    def spec(self, fault_id: str, trigger: dict) -> dict:
        doc: dict = {"id": fault_id, "kind": self.kind}
        # the target goes in the kind's first node field: a node, or one link [[a, b]]
        fields = getattr(KINDS.get(self.kind), "node_fields", None)
        if isinstance(self.target, tuple):
            doc[fields[0] if fields else "links"] = [list(self.target)]
        else:
            doc[fields[0] if fields else "target"] = self.target
        doc.update(dict(self.params))
        doc["at"] = trigger
        return doc

    @property
    def label(self) -> str:
        mode = dict(self.params).get("mode")
        return f"{self.kind}-{mode}" if mode else self.kind

    def to_json(self) -> dict:
        return {"kind": self.kind, "target": list(self.target) if isinstance(self.target, tuple)
                else self.target, "relation": self.relation, "params": dict(self.params)}

    @classmethod
    def from_json(cls, d: dict) -> "FaultChoice":
        t = d["target"]
        return cls(d["kind"], tuple(t) if isinstance(t, list) else t, d["relation"],
                   tuple(sorted(d["params"].items())))


def _relations(point: FailurePoint, datanodes: set[str], clients: set[str]) -> dict[str, str]:
    """node -> its relation to the point, for the nodes the point involves."""
    f = dict(point.fields)
    rel: dict[str, str] = {}
    if point.node in datanodes | clients:
        rel[point.node] = "self"
    for key in ("upstream", "downstream", "primary", "dn", "bad_node", "new_node"):
        v = f.get(key)
        if isinstance(v, str) and v in datanodes | clients and v not in rel:
            rel[v] = key
    pipeline = f.get("pipeline") or ()
    for i, dn in enumerate(pipeline):
        if dn in datanodes and dn not in rel:
            rel[dn] = "first" if i == 0 else ("last" if i == len(pipeline) - 1 else "middle")
    return rel


def faults_at(point: FailurePoint, datanodes: Iterable[str], clients: Iterable[str],
              writers: dict[str, str] | None = None) -> list[FaultChoice]:
    """Every applicable fault at `point`. `writers` maps a path to the client writing it
    (a NameNode point on a file involves that client)."""
    dns, cls = set(datanodes), set(clients)
    rel = _relations(point, dns, cls)
    path = dict(point.where).get("path") or dict(point.fields).get("path")
    if writers and path in writers and writers[path] not in rel:
        rel[writers[path]] = "writer"
    out: list[FaultChoice] = []
    for node, r in sorted(rel.items()):
        role = DATANODE if node in dns else CLIENT
        out += [FaultChoice(kind, node, r, v.params) for kind, v in explored_kinds(role)]
    out += [FaultChoice(kind, "nn", "namenode", v.params) for kind, v in explored_kinds(NAMENODE)]
    for link, r in _links(point, dns, cls, rel):
        out += [FaultChoice(kind, link, r, v.params) for kind, v in explored_kinds(LINK)]
    return out


def _links(point, dns, cls, rel) -> list[tuple[tuple[str, str], str]]:
    f = dict(point.fields)
    links: list[tuple[tuple[str, str], str]] = []
    pipeline = [d for d in (f.get("pipeline") or ()) if d in dns]
    if point.node in cls and pipeline:
        links.append(((point.node, pipeline[0]), "link:client->first"))
    if point.node in dns:
        if f.get("upstream") in dns | cls:
            links.append(((f["upstream"], point.node), "link:upstream->self"))
        if f.get("downstream") in dns:
            links.append(((point.node, f["downstream"]), "link:self->downstream"))
    if point.node == "nn":
        writer = next((n for n, r in rel.items() if r == "writer"), None)
        if writer:
            links.append(((writer, "nn"), "link:writer->nn"))
    return links


@dataclasses.dataclass(frozen=True)
class Step:
    point: FailurePoint
    fault: FaultChoice

    @property
    def signature(self) -> str:
        return f"{self.point.kind}|{self.fault.label}|{self.fault.relation}"

    def to_json(self) -> dict:
        return {"point": self.point.to_json(), "fault": self.fault.to_json()}

    @classmethod
    def from_json(cls, d: dict) -> "Step":
        return cls(FailurePoint.from_json(d["point"]), FaultChoice.from_json(d["fault"]))


@dataclasses.dataclass(frozen=True)
class Schedule:
    """Faults at points (depth = how many), over the base scenario (`scale` of its sizes)."""

    steps: tuple[Step, ...]
    scale: float = 1.0
    parent: str | None = None

    @property
    def depth(self) -> int:
        return len(self.steps)

    @property
    def signature(self) -> str:
        return " + ".join(s.signature for s in self.steps) or "clean"

    @property
    def id(self) -> str:
        doc = json.dumps([[s.point.key(), s.fault.to_json()] for s in self.steps] + [self.scale],
                         sort_keys=True, default=str)
        return hashlib.sha1(doc.encode()).hexdigest()[:10]

    def to_json(self) -> dict:
        return {"steps": [s.to_json() for s in self.steps], "scale": self.scale,
                "parent": self.parent}

    @classmethod
    def from_json(cls, d: dict) -> "Schedule":
        return cls(tuple(Step.from_json(s) for s in d["steps"]), d.get("scale", 1.0),
                   d.get("parent"))


def scenario_doc(base: dict, schedule: Schedule, name: str | None = None,
                 exact: "bool | Callable[[FailurePoint], bool]" = True,
                 system: tuple[str, str | None] | None = None) -> dict:
    """The scenario of `schedule`: the base's cluster and workload (sizes scaled), its
    own faults kept, the schedule's faults added with exact triggers (plain event
    triggers when `exact` is off: a system that cannot hold its processes; `exact` may
    also say it per point: Hadoop holds only at its agent's events), and `expect`
    the checks only (a fault may well make an operation fail: only the specifications
    judge). `system` (name, release) is written into `cluster`, so that the schedule
    runs alone on the system it was explored on."""
    from harness.systems import DEFAULT_SYSTEM
    doc = copy.deepcopy(base)
    if system is not None and system[0] != DEFAULT_SYSTEM:   # the default is not written
        cluster = doc.setdefault("cluster", {})
        cluster["system"] = system[0]
        if system[1]:
            cluster["hadoop_version"] = system[1]
    doc["name"] = name or f"{base['name']}-x{schedule.id}"
    doc["description"] = "explorer schedule: " + (" + ".join(
        f"{s.fault.kind} {s.fault.target} at {s.point.event} of {s.point.node} "
        f"{dict(s.point.where)} #{s.point.nth}" for s in schedule.steps) or "no fault")
    if schedule.scale != 1.0:
        for op in doc.get("workload", []):
            if op.get("size"):
                op["size"] = max(1, int(_bytes(op["size"]) * schedule.scale))
    faults = list(doc.get("faults") or [])
    for i, step in enumerate(schedule.steps, 1):
        at_point = exact(step.point) if callable(exact) else exact
        faults.append(step.fault.spec(f"x{i}", step.point.trigger(at_point)))
    if faults:
        doc["faults"] = faults
    doc["expect"] = {"checks": "all"}
    return doc


def to_yaml(doc: dict) -> str:
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=100)


def _bytes(size) -> int:
    from hdfs_contract.config import parse_size
    return parse_size(size)


class ScheduleQueue:
    """Schedules waiting to run, the least-tried signature first (novel ones before any
    repeat), then the shallower, then the earlier point, then the order of arrival."""

    def __init__(self):
        self._heap: list = []
        self._ids: set[str] = set()
        self.tried: dict[str, int] = {}
        self._n = 0

    def push(self, schedule: Schedule, boost: int = 0) -> bool:
        if schedule.id in self._ids:
            return False
        self._ids.add(schedule.id)
        self._n += 1
        heapq.heappush(self._heap, [self._key(schedule, boost), self._n, schedule, boost])
        return True

    def _key(self, s: Schedule, boost: int) -> tuple:
        first = s.steps[0].point.index if s.steps else 0
        return (self.tried.get(s.signature, 0) + self.tried.get(_last(s), 0), -boost,
                s.depth, first)

    def pop(self) -> Schedule | None:
        while self._heap:
            entry = heapq.heappop(self._heap)
            key, _, s, boost = entry
            fresh = self._key(s, boost)
            if fresh != key:           # its signature was tried meanwhile: re-rank
                entry[0] = fresh
                heapq.heappush(self._heap, entry)
                continue
            self.tried[s.signature] = self.tried.get(s.signature, 0) + 1
            if s.depth > 1:
                self.tried[_last(s)] = self.tried.get(_last(s), 0) + 1
            return s
        return None

    def seen(self, schedule_id: str) -> bool:
        return schedule_id in self._ids

    def __len__(self) -> int:
        return len(self._heap)

    def items(self) -> list[Schedule]:
        return [e[2] for e in sorted(self._heap)]


def _last(s: Schedule) -> str:
    return "last:" + (s.steps[-1].signature if s.steps else "")
