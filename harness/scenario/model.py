"""The scenario as data: plain, printable, comparable dataclasses.

One class per thing a scenario names (ARCHITECTURE.md, "Scenario format"): the cluster,
the workload operations, the faults (one class per kind, registered in faults.kinds with
its YAML fields, its checks and the effect it starts on a run), the triggers that time
them and the `expect:` block. Durations are seconds (float), sizes bytes (int), whatever
units the YAML used. Each field says with `spec(...)` how it is
read from YAML; the loader and the JSON Schema both follow those declarations, so the
format has one definition.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, ClassVar, Union

import yaml

from hdfs_contract.catalogue import EVENTS
from hdfs_contract.config import Config
# the systems under test are the names harness/systems knows when a scenario is read (its
# modules and registrations: the mini-HDFS, Apache Hadoop HDFS, any third system)
from harness.systems import system_names

from .fields import (INVALID, AnyValue, Bool, Context, Duration, Enum, HadoopConfig, Int,
                     ListOf, MapOf, NodeRef, Pair, Rate, Ref, Size, Str, Struct, Text,
                     ValueType, child, did_you_mean, spec, yaml_fields)

# the effects each kind starts (faults/), and the registry of kinds
from faults import disk as disk_effects, process as node_effects
from faults.grudge import complete_grudge, directed
from faults.kinds import KINDS, ExploreVariant, FaultContext, register

CHECK_IDS: tuple[str, ...] = (
    ("I1",) + tuple(f"P{i}" for i in range(1, 8)) + tuple(f"L{i}" for i in range(1, 7))
    + tuple(f"B{i}" for i in range(1, 7)) + ("H1",) + tuple(f"D{i}" for i in range(1, 5)))
"""The checks of spec/CHECKS.md, and H1 (hdfs-chaos's addition, docs/events.md)."""


def _net_effects():
    """faults.network, imported when a network fault is built: it brings the Toxiproxy
    client and its HTTP library, which loading or checking a scenario does not need."""
    from faults import network
    return network


OPERATIONS = ("write", "append", "read", "recover_lease", "truncate")
BACKENDS = ("local", "docker")
OUTCOMES = ("ok", "error")

NAMENODE, DATANODE, CLIENT, HARNESS = "namenode", "datanode", "client", "harness"
ANY_NODE = (NAMENODE, DATANODE, CLIENT)
SERVER = (NAMENODE, DATANODE)

ID_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]*$"
_ID = "an id of letters, digits, - and _ (starting with a letter)"
_PATH = Str(r"^/", "an absolute path such as /data/f1")


# -- triggers ------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class AtTime:
    """Fires `seconds` after the run started (`at: 1.5s`)."""

    seconds: float

    def __str__(self) -> str:
        return f"{self.seconds:g}s"


@dataclasses.dataclass(frozen=True, kw_only=True)
class OnEvent:
    """Fires `delay` after the `nth` event named `event` (from `node`, with fields `where`)."""

    event: str = spec(Enum(sorted(EVENTS), "event"),
                      "an event name of the catalogue (hdfs_contract/catalogue.py)",
                      required="the event name to wait for")
    node: str | None = spec(NodeRef(ANY_NODE + (HARNESS,), "a trigger names a node"),
                            "only events logged by this node", default=None)
    where: dict[str, Any] = spec(MapOf(Str(), AnyValue()),
                                 "only events whose fields have these values",
                                 default_factory=dict)
    nth: int = spec(Int(1), "fire on the n-th matching event (1 = the first)", default=1,
                    example=1)
    delay: float = spec(Duration(), "wait this long after the event", default=0.0, example="0s")
    exact: bool = spec(Bool(), "inject while the process that logged the event waits for it "
                               "(exact injection; local backend; no delay)", default=False)

    def __hash__(self) -> int:  # `where` is a dict; equal triggers still hash alike
        return hash((self.event, self.node, self.nth, self.delay, self.exact))

    def __str__(self) -> str:
        parts = [self.event] + ([f"node={self.node}"] if self.node else [])
        parts += [f"{k}={v}" for k, v in self.where.items()]
        parts += [f"nth={self.nth}"] if self.nth != 1 else []
        parts += [f"delay={self.delay:g}s"] if self.delay else []
        parts += ["exact"] if self.exact else []
        return "on " + " ".join(parts)


@dataclasses.dataclass(frozen=True, kw_only=True)
class AfterFault:
    """Fires `delay` after the fault `after` was injected."""

    after: str = spec(Ref("fault", "a fault id"), "the id of a fault", required=True)
    delay: float = spec(Duration(), "wait this long after that fault", default=0.0, example="0s")

    def __str__(self) -> str:
        return f"after {self.after}" + (f" + {self.delay:g}s" if self.delay else "")


Trigger = Union[AtTime, OnEvent, AfterFault]


class TriggerType(ValueType):
    """`2s`, `{event: ..., node, where, nth, delay}` or `{after: fault-id, delay}`."""

    expected = "a trigger"
    _event = Struct(OnEvent, name="event_trigger")
    _after = Struct(AfterFault, name="after_trigger")

    def parse(self, ctx, node, path):
        if isinstance(node, yaml.ScalarNode):
            seconds = Duration().parse(ctx, node, path)
            if seconds is INVALID:
                return INVALID
            ctx.objects[path] = trigger = AtTime(seconds)
            return trigger
        if not isinstance(node, yaml.MappingNode):
            ctx.error(node, path, "a trigger is a duration (2s), {event: NAME, ...} "
                                  "or {after: FAULT_ID, ...}, not a list")
            return INVALID
        keys = {k.value for k, _ in node.value if isinstance(k, yaml.ScalarNode)}
        if "event" in keys and "after" in keys:
            ctx.error(node, path, "a trigger waits for an event or for a fault, not both")
            return INVALID
        if "event" in keys:
            return self._event.parse(ctx, node, path)
        if "after" in keys:
            return self._after.parse(ctx, node, path)
        hints = [did_you_mean(k, ("event", "after")) for k in sorted(keys)]
        hint = next((h for h in hints if h), "")
        ctx.error(node, path, "a trigger is a duration (2s), {event: NAME, ...} "
                              f"or {{after: FAULT_ID, ...}}{hint}")
        return INVALID

    def schema(self, defs):
        defs.setdefault("trigger", {
            "description": "a duration since the run started, the n-th matching event, "
                           "or a delay after another fault",
            "oneOf": [Duration().schema(defs), self._event.schema(defs),
                      self._after.schema(defs)]})
        return {"$ref": "#/$defs/trigger"}


TRIGGER = TriggerType()


# -- cluster and workload -------------------------------------------------------------------

@dataclasses.dataclass(frozen=True, kw_only=True)
class Cluster:
    """The cluster of the run: DataNodes dn1..dnN, their racks, Hadoop configuration."""

    datanodes: int = spec(Int(1), "number of DataNodes (dn1..dnN)", default=3, example=3)
    racks: dict[str, str] = spec(
        MapOf(NodeRef((DATANODE,), "racks are given for DataNodes"),
              Str(r"^/", "a rack such as /r1"), key_schema={"pattern": r"^dn[1-9][0-9]*$"}),
        "rack of each DataNode, e.g. {dn1: /r1}", default_factory=dict)
    config: dict[str, Any] = spec(HadoopConfig(), "Hadoop keys (spec/MINIHDFS.md) and values, "
                                  "as written", default_factory=dict)
    system: str = spec(Enum(system_names, "system"), "the system under test: minihdfs | hadoop "
                       "(`hdfs-chaos run --system` overrides it)", default="minihdfs",
                       example="minihdfs")
    hadoop_version: str | None = spec(Str(r"^[0-9]+\.[0-9]+\.[0-9]+$", "a release such as 3.4.2"),
                                      "the Apache Hadoop release when system is hadoop "
                                      "(default 3.4.2)", default=None)
    hadoop_agent: bool | None = spec(Bool(), "hadoop only: a Byteman agent in every daemon "
                                     "and workload client JVM writes events the logs lack "
                                     "(events/<node>-agent.jsonl; docs/hadoop.md); default: "
                                     "on where the release has a rule table (3.2-3.4), "
                                     "else off", default=None)

    def __hash__(self) -> int:  # racks and config are dicts
        return hash((self.datanodes, len(self.racks), len(self.config), self.system))

    def hadoop_config(self) -> Config:
        """The parsed configuration (sizes in bytes, durations in seconds)."""
        return Config(self.config)


# Which fields each op needs and accepts, besides id, client, op, path and at.
OP_FIELDS: dict[str, tuple[frozenset, frozenset]] = {
    "write": (frozenset({"size"}), frozenset({"size", "hflush_every", "close"})),
    "append": (frozenset({"size"}), frozenset({"size", "hflush_every", "close", "new_block"})),
    "read": (frozenset(), frozenset()),
    "recover_lease": (frozenset(), frozenset()),
    "truncate": (frozenset({"new_len"}), frozenset({"new_len"})),
}
_OP_OPTIONAL = ("size", "hflush_every", "close", "new_len", "new_block")


def _operation_schema(out: dict, defs: dict) -> None:
    out["allOf"] = [
        {"if": {"properties": {"op": {"const": op}}, "required": ["op"]},
         "then": {**({"required": sorted(needed)} if needed else {}),
                  "not": {"anyOf": [{"required": [f]} for f in _OP_OPTIONAL
                                    if f not in allowed]}}}
        for op, (needed, allowed) in OP_FIELDS.items()]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Operation:
    """One client operation of the workload (`op` on `path` by client `client`)."""

    json_schema_extra: ClassVar = staticmethod(_operation_schema)

    id: str = spec(Str(ID_PATTERN, _ID), "unique id of the operation", required=True)
    client: str = spec(Str(ID_PATTERN, "a client id such as c1"),
                       "the client process (c1, c2, ...) that runs it", required=True)
    op: str = spec(Enum(OPERATIONS, "op"), "write | append | read | recover_lease | truncate",
                   required=True)
    path: str = spec(_PATH, "the file", required=True)
    size: int | None = spec(Size(), "bytes to write or append", default=None)
    hflush_every: int | None = spec(Size(), "hflush after every this many bytes", default=None)
    close: bool = spec(Bool(), "close the stream at the end (false leaves the file open)",
                       default=True, example=True)
    at: Trigger = spec(TRIGGER, "when the operation starts", default=AtTime(0.0), example="0s")
    new_len: int | None = spec(Size(), "truncate: the new length", default=None)
    new_block: bool = spec(Bool(), "append: write into a new block (CreateFlag.NEW_BLOCK) "
                           "instead of filling the partial last block", default=False,
                           example=True)

    @classmethod
    def check(cls, ctx: Context, node, path, values, given):
        op = values.get("op")
        if op not in OP_FIELDS:
            return values
        needed, allowed = OP_FIELDS[op]
        for name in sorted(needed - given):
            ctx.error(node, child(path, name), f"missing required key {name!r} (op {op} needs it)")
        for name in _OP_OPTIONAL:
            if name in given and name not in allowed:
                ctx.error_at(child(path, name), f"not used by op {op}")
        if values.get("hflush_every") == 0:
            ctx.error_at(child(path, "hflush_every"), "must be more than 0 bytes")
        return values


# -- faults ----------------------------------------------------------------------------------

_NODE_OR_POSITION = ("the node, or a DataNode by its place in a client's pipeline, resolved "
                     "when the fault fires: c1.pipeline[0] (first), c1.pipeline[1], "
                     "c1.pipeline[last]")
_DN_OR_POSITION = "the DataNode, or its place in a client's pipeline such as c1.pipeline[1]"

# How the explorer (harness.explore) tries the kinds: each heals by itself after a short
# while (pauses, partitions, cuts) or at the end (kills), so the run can recover.
EXPLORE_PAUSE_FOR = "5s"     # longer than the base scenarios' socket timeout and lease hard limit
EXPLORE_PARTITION_FOR = "3s"
EXPLORE_CUT_BYTES = 700      # a few hundred bytes: mid-header or early in the first packet
EXPLORE_RESTART_DOWN = "1s"
LINK = "link"
"""The explorer's role for a directed link near a point (ExploreVariant.on)."""

@dataclasses.dataclass(frozen=True, kw_only=True)
class Fault:
    """A fault: injected when `at` fires, healed after `duration` or when `heal` fires.

    Each kind is a subclass registered with `@register("name")` (faults.kinds): its
    fields, `check`, and `effect(ctx)`, the faults.base.Fault that acts on the run."""

    kind: ClassVar[str] = ""      # set by @register
    # in effect from inject until healed (a cut link, a stopped node: the cluster may
    # still change under it); False: done once injected
    lasting: ClassVar[bool] = True
    # the target node is gone for good once injected (killed, crashed)
    ends_node: ClassVar[bool] = False
    # the fields that name nodes (a node, links [[a, b]], groups [[a, b], [c]]): where the
    # runner resolves pipeline positions such as c1.pipeline[1]
    node_fields: ClassVar[tuple[str, ...]] = ("target",)
    # how the explorer tries this kind (faults.kinds.ExploreVariant); kinds with a lower
    # explore_order are tried first at each target
    explore: ClassVar[tuple[ExploreVariant, ...]] = ()
    explore_order: ClassVar[int] = 0
    id: str = spec(Str(ID_PATTERN, _ID), "unique id of the fault",
                   required="every fault has an id")
    at: Trigger = spec(TRIGGER, "when to inject the fault",
                       required="when to inject it, e.g. at: 2s")
    duration: float | None = spec(Duration(), "heal this long after injecting", default=None)
    heal: Trigger | None = spec(TRIGGER, "heal when this trigger fires", default=None)

    @classmethod
    def check(cls, ctx: Context, node, path, values, given):
        if "duration" in given and "heal" in given:
            ctx.error_at(child(path, "heal"), "give duration or heal, not both")
        return values

    @property
    def heal_trigger(self) -> Trigger | None:
        """When to heal: `heal`, or `duration` after the injection, or None (the fault
        is healed with all the others when the workload ends)."""
        if self.heal is not None:
            return self.heal
        if self.duration is not None:
            return AfterFault(after=self.id, delay=self.duration)
        return None

    @property
    def targets(self) -> tuple[str, ...]:
        """The nodes this fault acts on (for logs and reports)."""
        return tuple(dict.fromkeys(n for name in self.node_fields
                                   for n in _flat_nodes(getattr(self, name, None))))

    def with_nodes(self, values: dict[str, Any]) -> "Fault":
        """This fault with its node fields set to `values` (pipeline positions resolved to
        nodes); ValueError, one line, when the nodes make the fault meaningless."""
        return dataclasses.replace(self, **values)

    def check_in_scenario(self, ctx: Context, plan, path: str) -> None:
        """Checks that need the other faults, once all are read; `plan` is the loader's
        view of the raw scenario (`faults`: the fault mappings, `fault_ids`, `kinds`:
        id -> kind). Errors go to `ctx`."""

    def effect(self, ctx: FaultContext):
        """The faults.base.Fault that does this fault on the run of `ctx` (not started)."""
        raise NotImplementedError(f"fault kind {self.kind!r} has no effect")

    def inject(self, ctx: FaultContext, resolved=()):
        """Starts this fault on the run: returns the started effect (the run heals it
        later), or None when the fault acted on other faults and holds nothing itself.
        `resolved` are the pipeline positions its target was named by."""
        effect = self.effect(ctx)
        effect.kind = self.kind   # the inject event names the scenario's kind
        effect.resolved = resolved
        effect.inject()
        return effect

    def _common(self, ctx: FaultContext) -> dict[str, Any]:
        return {"log": ctx.log, "fault_id": self.id}

    def _ctl(self, ctx: FaultContext) -> dict[str, Any]:
        return {"control": ctx.control, **self._common(ctx)}


def _flat_nodes(value) -> list[str]:
    """The node names in a node field's value: a name, or (nested) tuples of names."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, (tuple, list)):
        return [n for v in value for n in _flat_nodes(v)]
    return []


_ANY = NodeRef(ANY_NODE, "a link joins two nodes", positions=True)


def _links_schema(out: dict, defs: dict) -> None:
    out["oneOf"] = [{"required": ["links"]}, {"required": ["between"]}]


@dataclasses.dataclass(frozen=True, kw_only=True)
class LinkFault(Fault):
    """A fault on directed links X -> Y (Toxiproxy): `links`, or `between` groups."""

    json_schema_extra: ClassVar = staticmethod(_links_schema)
    node_fields: ClassVar[tuple[str, ...]] = ("links", "between")

    links: tuple[tuple[str, str], ...] = spec(
        ListOf(Pair(_ANY), min_items=1, what="link"),
        "directed links [src, dst] (node ids or pipeline positions such as c1.pipeline.0); "
        "with between, every link across the groups", default=())
    between: tuple[tuple[str, ...], ...] | None = spec(
        ListOf(ListOf(_ANY, min_items=1, what="node"), min_items=2, what="group"),
        "groups of nodes; every link from one group to another, both ways", default=None)

    @classmethod
    def check(cls, ctx, node, path, values, given):
        values = super().check(ctx, node, path, values, given)
        if "links" in given and "between" in given:
            ctx.error_at(child(path, "between"), "give links or between, not both")
        elif "links" not in given and "between" not in given:
            ctx.error(node, path, f"{cls.kind} needs links: [[src, dst], ...] "
                                  "or between: [[group], [group], ...]")
        groups = values.get("between")
        if groups:
            seen: dict[str, int] = {}
            for i, group in enumerate(groups):
                for name in group:
                    if name in seen and seen[name] != i:
                        ctx.error_at(child(path, "between"), f"{name!r} is in two groups")
                    seen[name] = i
            values["links"] = between_links(groups)
        elif "links" in values:
            values["links"] = tuple(dict.fromkeys(values["links"]))
        return values

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(n for link in self.links for n in link))

    def with_nodes(self, values):
        values = dict(values)
        if values.get("between"):
            groups = tuple(tuple(dict.fromkeys(g)) for g in values["between"])
            seen: dict[str, int] = {}
            for i, group in enumerate(groups):
                for n in group:
                    if seen.setdefault(n, i) != i:
                        raise ValueError(f"{n} is in two groups of between; the partition "
                                         "would cut nothing clear")
            values["between"] = groups
        if "links" in values:
            for (src, dst), (a, b) in zip(self.links, values["links"]):
                if a == b:
                    raise ValueError(f"the link {src} -> {dst} resolves to {a} -> {b}, "
                                     "not a link")
            values["links"] = tuple(dict.fromkeys(tuple(link) for link in values["links"]))
        return super().with_nodes(values)

    def _net(self, ctx: FaultContext) -> dict[str, Any]:
        return {"mesh": ctx.mesh, **self._common(ctx)}


def between_links(groups) -> tuple[tuple[str, str], ...]:
    """Every directed link from a node of one group to a node of another group."""
    return tuple((a, b) for i, ga in enumerate(groups) for j, gb in enumerate(groups)
                 if i != j for a in ga for b in gb)


@register("partition")
@dataclasses.dataclass(frozen=True, kw_only=True)
class PartitionFault(LinkFault):
    """Cut links: `blackhole` (timeout toxic: bytes vanish) or `reject` (proxy down)."""

    explore: ClassVar = tuple(ExploreVariant((LINK,), (("duration", EXPLORE_PARTITION_FOR),
                                                       ("mode", mode)))
                              for mode in ("reject", "blackhole"))
    explore_order: ClassVar[int] = 10

    mode: str = spec(Enum(("blackhole", "reject"), "partition mode"),
                     "blackhole: data is dropped silently; reject: connections are refused",
                     default="blackhole", example="blackhole")

    def effect(self, ctx):
        grudge = complete_grudge(self.between) if self.between else directed(self.links)
        return _net_effects().Partition(grudge, self.mode, **self._net(ctx))


@register("latency")
@dataclasses.dataclass(frozen=True, kw_only=True)
class LatencyFault(LinkFault):
    """Delay every byte on the links by `latency` +- `jitter`."""

    latency: float = spec(Duration(), "added delay", required=True)
    jitter: float = spec(Duration(), "random variation of the delay", default=0.0, example="0s")

    def effect(self, ctx):
        return _net_effects().Latency(self.links, self.latency, self.jitter, **self._net(ctx))


@register("bandwidth")
@dataclasses.dataclass(frozen=True, kw_only=True)
class BandwidthFault(LinkFault):
    """Limit the links to `rate` bytes per second."""

    rate: int = spec(Rate(), "bytes per second, e.g. 1MiB", required=True)

    def effect(self, ctx):
        return _net_effects().Bandwidth(self.links, self.rate, **self._net(ctx))


@register("cut_after_bytes")
@dataclasses.dataclass(frozen=True, kw_only=True)
class CutAfterBytesFault(LinkFault):
    """Close the connections on the links once `bytes` have passed (Toxiproxy limit_data)."""

    explore: ClassVar = (ExploreVariant((LINK,), (("bytes", EXPLORE_CUT_BYTES),
                                                  ("duration", EXPLORE_PARTITION_FOR))),)
    explore_order: ClassVar[int] = 20

    bytes: int = spec(Size(), "bytes let through before the cut", required=True)

    def effect(self, ctx):
        return _net_effects().CutAfterBytes(self.links, self.bytes, **self._net(ctx))


@register("reset_peer")
@dataclasses.dataclass(frozen=True, kw_only=True)
class ResetPeerFault(LinkFault):
    """Reset the connections on the links (TCP RST) after `timeout`."""

    timeout: float = spec(Duration(), "time before the reset", default=0.0, example="0s")

    def effect(self, ctx):
        return _net_effects().ResetPeer(self.links, self.timeout, **self._net(ctx))


@register("slicer")
@dataclasses.dataclass(frozen=True, kw_only=True)
class SlicerFault(LinkFault):
    """Slice the data on the links into small pieces, `delay` apart."""

    average_size: int = spec(Size(), "average bytes per slice", required=True)
    size_variation: int = spec(Size(), "variation of the slice size", default=0, example=0)
    delay: float = spec(Duration(), "delay between slices", default=0.0, example="0s")

    @classmethod
    def check(cls, ctx, node, path, values, given):
        values = super().check(ctx, node, path, values, given)
        average, variation = values.get("average_size"), values.get("size_variation", 0)
        if average == 0:
            ctx.error_at(child(path, "average_size"), "must be more than 0 bytes")
        elif average is not None and variation >= average:
            ctx.error_at(child(path, "size_variation"),
                         f"must be smaller than average_size ({average} bytes)")
        return values

    def effect(self, ctx):
        return _net_effects().Slicer(self.links, self.average_size, self.size_variation,
                                  self.delay, **self._net(ctx))


@register("disconnect")
@dataclasses.dataclass(frozen=True, kw_only=True)
class DisconnectFault(Fault):
    """Disconnect a node's container from the run network (docker backend)."""

    node_fields: ClassVar[tuple[str, ...]] = ("target",)

    target: str = spec(NodeRef(ANY_NODE, "disconnect needs a node", positions=True),
                       _NODE_OR_POSITION, required=True)

    def effect(self, ctx):
        if not hasattr(ctx.backend, "disconnect_fault"):
            from harness.backends import BackendError
            raise BackendError(f"fault {self.id}: disconnect needs --backend docker")
        return ctx.backend.disconnect_fault(self.target, **self._common(ctx))


@register("kill")
@dataclasses.dataclass(frozen=True, kw_only=True)
class KillFault(Fault):
    """SIGKILL a node (healing starts it again)."""

    node_fields: ClassVar[tuple[str, ...]] = ("target",)
    explore: ClassVar = (ExploreVariant((DATANODE,)),)
    explore_order: ClassVar[int] = 10

    ends_node: ClassVar[bool] = True

    target: str = spec(NodeRef(ANY_NODE, "kill needs a node", positions=True),
                       _NODE_OR_POSITION, required=True)
    stay_down: bool = spec(Bool(), "a DataNode not started again when the run heals its "
                                   "faults: the NameNode must declare it dead and do "
                                   "without it", default=False)

    @classmethod
    def check(cls, ctx, node, path, values, given):
        values = super().check(ctx, node, path, values, given)
        if values.get("stay_down") is not True:
            return values
        for name in ("duration", "heal"):
            if name in given:
                ctx.error_at(child(path, name), f"a kill with stay_down: true is never "
                                                f"healed; drop {name} or stay_down")
        from .positions import looks_like_position
        target = values.get("target")
        if isinstance(target, str) and not looks_like_position(target):
            # only a DataNode: a client that stays dead is crash_client, and the run's
            # end needs the NameNode (quiescence, final state)
            ctx.refer("node", target, child(path, "target"), node, (DATANODE,),
                      "stay_down needs a DataNode (a client that stays dead is "
                      "crash_client)")
        return values

    def effect(self, ctx):
        return node_effects.Kill(self.target, stay_down=self.stay_down, **self._ctl(ctx))


@register("restart")
@dataclasses.dataclass(frozen=True, kw_only=True)
class RestartFault(Fault):
    """Stop the NameNode or a DataNode, wait `down`, start it again."""

    node_fields: ClassVar[tuple[str, ...]] = ("target",)
    explore: ClassVar = (ExploreVariant((DATANODE, NAMENODE),
                                        (("down", EXPLORE_RESTART_DOWN),)),)
    explore_order: ClassVar[int] = 20

    target: str = spec(NodeRef(SERVER, "restart needs the NameNode or a DataNode",
                               positions=True), _NODE_OR_POSITION, required=True)
    down: float = spec(Duration(), "how long the node stays down", default=0.0, example="0s")

    def effect(self, ctx):
        return node_effects.Restart(self.target, self.down, **self._ctl(ctx))


@register("pause")
@dataclasses.dataclass(frozen=True, kw_only=True)
class PauseFault(Fault):
    """SIGSTOP a node (a long GC pause); healing or a `resume` fault continues it."""

    node_fields: ClassVar[tuple[str, ...]] = ("target",)
    explore: ClassVar = (ExploreVariant((DATANODE, CLIENT), (("duration", EXPLORE_PAUSE_FOR),)),)
    explore_order: ClassVar[int] = 30

    target: str = spec(NodeRef(ANY_NODE, "pause needs a node", positions=True),
                       _NODE_OR_POSITION, required=True)

    def effect(self, ctx):
        return node_effects.Pause(self.target, **self._ctl(ctx))


@register("resume")
@dataclasses.dataclass(frozen=True, kw_only=True)
class ResumeFault(Fault):
    """SIGCONT a node that a `pause` fault stopped."""

    node_fields: ClassVar[tuple[str, ...]] = ("target",)

    lasting: ClassVar[bool] = False

    target: str = spec(NodeRef(ANY_NODE, "resume needs a node", positions=(
        "a resume names the node its pause stopped, not a pipeline position (the pipeline "
        "has changed by then); end that pause with duration: or {kind: heal, fault: ID}")),
        "the node", required=True)

    @classmethod
    def check(cls, ctx, node, path, values, given):
        for name in ("duration", "heal"):
            if name in given:
                ctx.error_at(child(path, name), "a resume is itself a heal; it has no "
                                                f"{name}")
        return values

    def check_in_scenario(self, ctx, plan, path):
        paused = {f.get("target") for f in plan.faults   # a target of the wrong type is
                  if f.get("kind") == PauseFault.kind and isinstance(f.get("target"), str)}
        if self.target not in paused:                      # reported elsewhere
            ctx.error_at(child(path, "target"), f"resume of {self.target!r}, which no pause "
                                                "fault stops")

    def inject(self, ctx, resolved=()):
        # a resume ends the pause of its target: that pause is healed, not left active
        pauses = [fid for fid, f in ctx.active.items()
                  if getattr(f, "kind", "") == PauseFault.kind and f.target == self.target
                  and f.active]
        if not pauses:
            return super().inject(ctx, resolved)
        for fid in pauses:
            ctx.heal_active(fid, fid)
        return None

    def effect(self, ctx):
        return node_effects.Resume(self.target, **self._ctl(ctx))


@register("crash_client")
@dataclasses.dataclass(frozen=True, kw_only=True)
class CrashClientFault(Fault):
    """Kill a client process mid-write: its lease is left to expire and be recovered."""

    node_fields: ClassVar[tuple[str, ...]] = ("target",)
    explore: ClassVar = (ExploreVariant((CLIENT,)),)
    explore_order: ClassVar[int] = 10

    lasting: ClassVar[bool] = False
    ends_node: ClassVar[bool] = True

    target: str = spec(NodeRef((CLIENT,), "crash_client needs a client"),
                       "the client id", required=True)

    def effect(self, ctx):
        return node_effects.CrashClient(self.target, **self._ctl(ctx))


def _replica_schema(out: dict, defs: dict) -> None:
    out["oneOf"] = [{"required": ["block"], "not": {"anyOf": [{"required": ["file"]},
                                                              {"required": ["index"]}]}},
                    {"required": ["file", "index"], "not": {"required": ["block"]}}]


@dataclasses.dataclass(frozen=True, kw_only=True)
class ReplicaFault(Fault):
    """A disk fault on one replica of a DataNode: `block` id, or `file` + block `index`."""

    node_fields: ClassVar[tuple[str, ...]] = ("target",)

    lasting: ClassVar[bool] = False   # permanent: nothing to heal

    json_schema_extra: ClassVar = staticmethod(_replica_schema)

    target: str = spec(NodeRef((DATANODE,), "a disk fault needs a DataNode", positions=True),
                       _DN_OR_POSITION, required=True)
    block: int | None = spec(Int(0), "the block id", default=None)
    file: str | None = spec(Ref("path", "an absolute path such as /data/f1"),
                            "the file whose block to hit (with index)", default=None)
    index: int | None = spec(Int(), "the block's index in the file (-1: the last)",
                             default=None)

    @classmethod
    def check(cls, ctx, node, path, values, given):
        values = super().check(ctx, node, path, values, given)
        if "block" in given and ({"file", "index"} & given):
            ctx.error(node, path, "give block, or file and index, not both")
        elif "block" not in given and "file" not in given:
            ctx.error(node, path, f"{cls.kind} needs block: ID, or file: PATH and index: N")
        elif "file" in given and "index" not in given:
            ctx.error(node, child(path, "index"), "missing required key 'index' "
                                                  "(which block of the file; 0 is the first)")
        elif "index" in given and "file" not in given:
            ctx.error_at(child(path, "index"), "index needs file")
        return values

    def _replica(self, ctx: FaultContext) -> tuple[Any, int]:
        """(the target's storage folder, the block id: given, or asked of the NameNode)."""
        block = self.block if self.block is not None else ctx.block_of(self.file, self.index)
        return ctx.backend.storage_path(self.target), block


@register("corrupt_replica")
@dataclasses.dataclass(frozen=True, kw_only=True)
class CorruptReplicaFault(ReplicaFault):
    """Flip bytes of a replica's data file, so checksums no longer match."""

    target: str = spec(NodeRef((DATANODE,), "corrupt_replica needs a DataNode",
                               positions=True), _DN_OR_POSITION, required=True)

    def effect(self, ctx):
        storage, block = self._replica(ctx)
        return disk_effects.CorruptReplica(storage, block, node=self.target, seed=ctx.seed,
                                           **self._common(ctx))


@register("delete_replica")
@dataclasses.dataclass(frozen=True, kw_only=True)
class DeleteReplicaFault(ReplicaFault):
    """Delete a replica's data and meta files from a DataNode's disk."""

    target: str = spec(NodeRef((DATANODE,), "delete_replica needs a DataNode",
                               positions=True), _DN_OR_POSITION, required=True)

    def effect(self, ctx):
        storage, block = self._replica(ctx)
        return disk_effects.DeleteReplica(storage, block, node=self.target,
                                          **self._common(ctx))


@register("heal")
@dataclasses.dataclass(frozen=True, kw_only=True)
class HealFault(Fault):
    """Heal another fault (`fault`) when `at` fires."""

    lasting: ClassVar[bool] = False
    node_fields: ClassVar[tuple[str, ...]] = ()   # it names a fault, not a node

    fault: str = spec(Ref("fault", "a fault id"), "the id of the fault to heal", required=True)

    @classmethod
    def check(cls, ctx, node, path, values, given):
        for name in ("duration", "heal"):
            if name in given:
                ctx.error_at(child(path, name), f"a heal fault has no {name}")
        return values

    def check_in_scenario(self, ctx, plan, path):
        own = plan.fault_ids[int(path[len("faults["):-1])] if path.startswith("faults[") else None
        if self.fault == own:
            ctx.error_at(child(path, "fault"), "a heal cannot heal itself")
        elif plan.kinds.get(self.fault) == self.kind:
            ctx.error_at(child(path, "fault"), f"{self.fault!r} is itself a heal; name the "
                                               "fault it heals")

    def inject(self, ctx, resolved=()):
        if self.fault in ctx.active:
            ctx.heal_active(self.fault, self.id)
        return None


FAULT_KINDS: dict[str, type[Fault]] = KINDS
"""Every fault kind a scenario may use, by its YAML name: the registry (faults.kinds),
the classes above and any registered later."""


class FaultType(ValueType):
    """A fault mapping: `kind` picks the class, the class reads the rest."""

    expected = "a fault"

    def _struct(self, kind: str) -> Struct:
        return Struct(FAULT_KINDS[kind], extra_keys=("kind",), name=f"fault.{kind}")

    def parse(self, ctx, node, path):
        if not isinstance(node, yaml.MappingNode):
            ctx.error(node, path, "expected a fault {id, kind, at, ...}")
            return INVALID
        kind_nodes = [(k, v) for k, v in node.value
                      if isinstance(k, yaml.ScalarNode) and k.value == "kind"]
        if not kind_nodes:
            ctx.error(node, child(path, "kind"), "missing required key 'kind' (one of "
                                                 f"{', '.join(FAULT_KINDS)})")
            return INVALID
        kind = Enum(FAULT_KINDS, "fault kind").parse(ctx, kind_nodes[0][1], child(path, "kind"))
        ctx.marks.setdefault(child(path, "kind"), kind_nodes[0][1].start_mark)
        if kind is INVALID:
            # Still read the id and trigger, so that they are checked and known.
            Struct(Fault, extra_keys=tuple(k.value for k, _ in node.value
                                           if k.value not in yaml_fields(Fault))
                   ).parse(ctx, node, path)
            return INVALID
        return self._struct(kind).parse(ctx, node, path)

    def schema(self, defs):
        if "fault" not in defs:
            branches = []
            for kind in FAULT_KINDS:
                struct = self._struct(kind)
                defs[struct.name] = struct.object_schema(defs, {"kind": {"const": kind}})
                branches.append({"if": {"properties": {"kind": {"const": kind}},
                                        "required": ["kind"]},
                                 "then": {"$ref": f"#/$defs/{struct.name}"}})
            defs["fault"] = {
                "description": "a fault: id, kind, at (trigger), duration or heal, and the "
                               "fields of its kind",
                "type": "object",
                "required": ["id", "kind", "at"],
                "properties": {"kind": {"enum": list(FAULT_KINDS)}},
                "allOf": branches}
        return {"$ref": "#/$defs/fault"}


# -- expect ------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class CountBound:
    """A bound on a count: `1` (exactly), `>=1`, `<=2`."""

    op: str
    value: int

    def admits(self, count: int) -> bool:
        return {"==": count == self.value, ">=": count >= self.value,
                "<=": count <= self.value}[self.op]

    def __str__(self) -> str:
        return f"{'' if self.op == '==' else self.op}{self.value}"


class BoundType(ValueType):
    expected = "a count: N, \">=N\" or \"<=N\""
    _PATTERN = r"^\s*(>=|<=|==)?\s*([0-9]+)\s*$"

    def parse(self, ctx, node, path):
        value = self.scalar(ctx, node, path)
        if value is INVALID:
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            if value < 0:
                ctx.error(node, path, f"a count cannot be negative ({value})")
                return INVALID
            return CountBound("==", value)
        m = re.match(self._PATTERN, str(value)) if isinstance(value, str) else None
        if not m:
            ctx.error(node, path, f"expected a count such as 1, \">=1\" or \"<=2\", got {value!r}")
            return INVALID
        return CountBound(m.group(1) or "==", int(m.group(2)))

    def schema(self, defs):
        return {"anyOf": [{"type": "integer", "minimum": 0},
                          {"type": "string", "pattern": self._PATTERN}]}


class MinLenType(Size):
    """`hflushed` (at least the last hflush offset) or a size."""

    expected = "hflushed or a size such as 4MiB"

    def parse(self, ctx, node, path):
        if isinstance(node, yaml.ScalarNode) and node.value == "hflushed":
            return "hflushed"
        return super().parse(ctx, node, path)

    def schema(self, defs):
        return {"anyOf": [{"const": "hflushed"}, super().schema(defs)]}


class ChecksType(ValueType):
    """`all` or a list of check ids."""

    expected = "all or a list of check ids"

    def parse(self, ctx, node, path):
        if isinstance(node, yaml.ScalarNode):
            if node.value == "all":
                return "all"
            ctx.error(node, path, f"expected all or a list of check ids such as [P1, L1], "
                                  f"got {node.value!r}")
            return INVALID
        return ListOf(Enum(CHECK_IDS, "check")).parse(ctx, node, path)

    def schema(self, defs):
        return {"anyOf": [{"const": "all"},
                          {"type": "array", "items": {"enum": list(CHECK_IDS)}}]}


@dataclasses.dataclass(frozen=True, kw_only=True)
class FileExpectation:
    """What must hold for one file at the end of the run."""

    closed: bool | None = spec(Bool(), "the file is closed", default=None)
    min_len: int | str | None = spec(MinLenType(), "at least this long (hflushed: at least "
                                     "the greatest hflushed offset)", default=None)
    len: int | None = spec(Size(), "exactly this long", default=None)
    lease_recovered: bool | None = spec(Bool(), "its lease was recovered", default=None)


@dataclasses.dataclass(frozen=True, kw_only=True)
class RecoveryCounts:
    """Bounds on how many recoveries the run saw."""

    pipeline: CountBound | None = spec(BoundType(), "pipeline recoveries", default=None)
    block: CountBound | None = spec(BoundType(), "block recoveries", default=None)
    lease: CountBound | None = spec(BoundType(), "lease recoveries", default=None)
    replacements: CountBound | None = spec(BoundType(), "DataNodes added to pipelines",
                                           default=None)


@dataclasses.dataclass(frozen=True, kw_only=True)
class DataNodeExpectation:
    """What must hold for every DataNode at the end of the run (final_state.json's
    datanode_space, read from each DataNode's JMX on Hadoop)."""

    reserved_for_replicas: int | None = spec(
        Size(), "space reserved for replicas being written, over all its volumes, exactly "
        "this (0: every write released what it reserved)", default=None)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Expect:
    """The verdict the run must reach (compared by harness.reconcile)."""

    checks: str | tuple[str, ...] = spec(ChecksType(), "checks to run: all, or ids from "
                                         "spec/CHECKS.md", default="all", example="all")
    must_fail: tuple[str, ...] = spec(ListOf(Enum(CHECK_IDS, "check")),
                                      "checks that must fail (deliberately broken runs)",
                                      default=())
    files: dict[str, FileExpectation] = spec(
        MapOf(Ref("path", "an absolute path such as /data/f1"), Struct(FileExpectation),
              key_schema={"pattern": "^/"}),
        "per file path", default_factory=dict)
    recoveries: RecoveryCounts = spec(Struct(RecoveryCounts), "recovery counts",
                                      default_factory=RecoveryCounts)
    max_recovery: float | None = spec(Duration(), "no recovery takes longer", default=None)
    datanodes: DataNodeExpectation = spec(Struct(DataNodeExpectation),
                                          "every DataNode at the end of the run",
                                          default_factory=DataNodeExpectation)
    workload: dict[str, str] = spec(MapOf(Ref("workload", "a workload id"),
                                          Enum(OUTCOMES, "outcome")),
                                    "outcome of each workload operation: ok | error",
                                    default_factory=dict)

    @classmethod
    def check(cls, ctx, node, path, values, given):
        checks, must_fail = values.get("checks", "all"), values.get("must_fail", ())
        if checks != "all" and must_fail:
            for name in must_fail:
                if name not in checks:
                    ctx.error_at(child(path, "must_fail"),
                                 f"{name} must fail but is not among the checks run")
        return values

    def __hash__(self) -> int:  # files and workload are dicts
        return hash((self.checks, self.must_fail, self.max_recovery))

    @property
    def check_ids(self) -> tuple[str, ...]:
        """The checks to run, `all` expanded."""
        return CHECK_IDS if self.checks == "all" else tuple(self.checks)


# -- known bugs ------------------------------------------------------------------------------

RELEASE_PATTERN = r"^[0-9]+\.[0-9]+\.[0-9]+$"


@dataclasses.dataclass(frozen=True, kw_only=True)
class KnownBug:
    """A scenario that reproduces a known HDFS bug (`hdfs-chaos known-bugs`): its run fails
    on the releases that have the bug, for the reason the JIRA gives, and passes on the
    releases that fixed it."""

    jira: str = spec(Str(r"^HDFS-[0-9]+$", "a JIRA key such as HDFS-16146"), "the JIRA",
                     required="a known bug names its JIRA")
    bug: str = spec(Text(), "one line: what the bug is", required="say what the bug is")
    affects: tuple[str, ...] = spec(ListOf(Str(RELEASE_PATTERN, "a release such as 3.3.6"),
                                           min_items=1),
                                    "runnable releases that have the bug: the run fails there",
                                    required="name a release that has the bug")
    fixed: tuple[str, ...] = spec(ListOf(Str(RELEASE_PATTERN, "a release such as 3.4.2")),
                                  "runnable releases that do not have it: the run passes "
                                  "there (empty: still open in every release we run)",
                                  default=())
    fixed_in: str = spec(Text(), "where the fix landed, e.g. '3.4.0 (PR 3247)', or 'open'",
                         default="")
    symptom: tuple[str, ...] = spec(
        ListOf(Str(r"^\S.*$", "a check id or the start of an expectation"), min_items=1),
        "what shows the bug on an affected release: check ids (P1) or the start of an "
        "expectation as verdict.json words it ('/data/f1 closed', 'workload w2'); at least "
        "one of them must fail there", required="say which check or expectation shows it")

    @classmethod
    def check(cls, ctx, node, path, values, given):
        both = set(values.get("affects") or ()) & set(values.get("fixed") or ())
        if both:
            ctx.error_at(child(path, "fixed"), f"{sorted(both)} both affected and fixed")
        return values

    def __hash__(self) -> int:
        return hash((self.jira, self.affects, self.fixed))


# -- the scenario ----------------------------------------------------------------------------

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Scenario:
    """A whole chaos run: cluster, workload, faults and the expected verdict."""

    name: str = spec(Str(NAME_PATTERN, "a name of letters, digits, ., - and _"),
                     "unique name (used in run ids)", required="every scenario has a name")
    description: str = spec(Text(), "free text; its first line is shown by hdfs-chaos list",
                            default="")
    seed: int | None = spec(Int(0), "random seed: same seed, same run", default=None)
    timeout: float = spec(Duration(), "the whole run", default=120.0, example="120s")
    cluster: Cluster = spec(Struct(Cluster), "the cluster", default_factory=Cluster)
    workload: tuple[Operation, ...] = spec(ListOf(Struct(Operation)),
                                           "client operations", default=())
    faults: tuple[Fault, ...] = spec(ListOf(FaultType()), "faults to inject", default=())
    expect: Expect = spec(Struct(Expect), "the expected verdict", default_factory=Expect)
    systems: tuple[str, ...] = spec(ListOf(Enum(system_names, "system"), min_items=1),
                                    "the systems this scenario can run on (default: all); "
                                    "leaving one out needs systems_reason",
                                    default_factory=system_names)
    systems_reason: str = spec(Text(), "why the scenario cannot run on the systems it leaves "
                               "out, e.g. a setting the release hard-codes", default="")
    backends: tuple[str, ...] = spec(ListOf(Enum(BACKENDS, "backend"), min_items=1),
                                     "the backends this scenario can run on (default: all); "
                                     "leaving one out needs backends_reason", default=BACKENDS)
    backends_reason: str = spec(Text(), "why the scenario cannot run on the backends it "
                                "leaves out, e.g. exact injection (local only)", default="")
    known_bug: KnownBug | None = spec(Struct(KnownBug), "the known HDFS bug this scenario "
                                      "reproduces (hdfs-chaos known-bugs)", default=None)
    source: str | None = dataclasses.field(default=None, compare=False)
    source_text: str | None = dataclasses.field(default=None, compare=False, repr=False)

    def backend_refusal(self, backend: str) -> str | None:
        """Why this scenario does not run on `backend` (its backends: leaves it out), or None."""
        if backend in self.backends:
            return None
        return (f"does not run on the {backend} backend: "
                f"{self.backends_reason or 'see its backends:'}")

    @classmethod
    def check(cls, ctx, node, path, values, given):
        if values.get("timeout") == 0:
            ctx.error_at("timeout", "must be more than 0s")
        systems = values.get("systems") or system_names()
        if isinstance(systems, (list, tuple)) and set(system_names()) - set(systems) \
                and not values.get("systems_reason"):
            ctx.error_at("systems", "a scenario that leaves out a system says why: "
                         "add systems_reason: ...")
        backends = values.get("backends") or BACKENDS
        if isinstance(backends, (list, tuple)) and set(BACKENDS) - set(backends) \
                and not values.get("backends_reason"):
            ctx.error_at("backends", "a scenario that leaves out a backend says why: "
                         "add backends_reason: ...")
        cluster = values.get("cluster")
        if isinstance(cluster, Cluster) and isinstance(systems, (list, tuple)) \
                and cluster.system not in systems:
            ctx.error_at("cluster.system", f"{cluster.system} is not in systems "
                         f"{list(systems)}")
        if isinstance(cluster, Cluster):
            # what each system refuses, asked of the system: any key refused by a system
            # the scenario declares, and any value its own cluster.system cannot honour
            from harness.systems import get_system
            if isinstance(systems, (list, tuple)):
                for name in systems:   # names the Enum above accepted
                    refused = get_system(name).capabilities().refused_config
                    for key in cluster.config:
                        if key in refused:
                            ctx.error_at("cluster.config", f"{key}: {refused[key]}")
            for issue in get_system(cluster.system, cluster.hadoop_version) \
                    .config_issues(cluster.config,
                                   agent=False if cluster.hadoop_agent is False else None):
                ctx.error_at("cluster.config", issue)
        return values

    def __hash__(self) -> int:
        return hash((self.name, self.seed, self.timeout))

    @property
    def datanode_ids(self) -> tuple[str, ...]:
        return tuple(f"dn{i}" for i in range(1, self.cluster.datanodes + 1))

    @property
    def client_ids(self) -> tuple[str, ...]:
        """The clients, in order of first use in the workload."""
        return tuple(dict.fromkeys(op.client for op in self.workload))

    @property
    def node_ids(self) -> tuple[str, ...]:
        return ("nn",) + self.datanode_ids + self.client_ids

    def fault(self, fault_id: str) -> Fault:
        """The fault with this id (KeyError if there is none)."""
        for fault in self.faults:
            if fault.id == fault_id:
                return fault
        raise KeyError(fault_id)

    def operation(self, op_id: str) -> Operation:
        """The workload operation with this id (KeyError if there is none)."""
        for op in self.workload:
            if op.id == op_id:
                return op
        raise KeyError(op_id)

    def hadoop_config(self) -> Config:
        return self.cluster.hadoop_config()


SCENARIO = Struct(Scenario, name="scenario")
