"""Reading scenario files: YAML with positions, every field checked, every name resolved.

Two passes over one file. The first reads the YAML node tree (yaml.compose keeps line and
column of every value) into the model of `model.py`, field by field. The second resolves
what only the whole file can tell: node ids against the cluster and the clients of the
workload, pipeline positions (`c1.pipeline[1]`) against the writing clients and
dfs.replication, fault ids, duplicate ids, events against the catalogue's roles, a `resume`
without a `pause`, dfs.replication against the number of DataNodes, triggers beyond the
timeout, `after:` chains that wait for each other. All problems of a file are collected;
`ScenarioError` carries them all.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any, Iterable

import yaml

from hdfs_contract.config import KEYS, ConfigError, parse_duration

from .fields import INVALID, Context, Reference, child, item, read
from .issues import Issue, ScenarioError, did_you_mean
from .positions import parse_position
from .model import (CLIENT, DATANODE, HARNESS, NAMENODE, SCENARIO, AfterFault, AtTime,
                    Fault, OnEvent, Scenario)

_ROLE_PHRASE = {NAMENODE: "the NameNode", DATANODE: "a DataNode", CLIENT: "a client",
                HARNESS: "the harness"}
_LOGGED_BY = {NAMENODE: "the NameNode", DATANODE: "DataNodes", CLIENT: "clients",
              HARNESS: "the harness"}
_EVENT_ROLE = {"nn": NAMENODE, "dn": DATANODE, "client": CLIENT, "harness": HARNESS}
_DATANODE_ID = re.compile(r"^dn[1-9][0-9]*$")


def load_scenario(path: str | os.PathLike) -> Scenario:
    """Read and validate a scenario file; raises ScenarioError with every problem found."""
    scenario, issues = check_scenario_file(path)
    if issues:
        raise ScenarioError(issues)
    return scenario


def load_scenario_text(text: str, filename: str = "<scenario>") -> Scenario:
    """Read and validate scenario YAML given as text (`filename` names it in messages)."""
    scenario, issues = check_scenario_text(text, filename)
    if issues:
        raise ScenarioError(issues)
    return scenario


def check_scenario_file(path: str | os.PathLike) -> tuple[Scenario | None, list[Issue]]:
    """(the scenario or None, every problem of the file, sorted by position)."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            data = f.read()
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        return None, [Issue(name, line, col, "", f"not UTF-8 text ({e.reason} at byte "
                                                 f"{e.start}): save the file as UTF-8")]
    except OSError as e:
        return None, [Issue(name, 0, 0, "", f"cannot read: {e.strerror or e}")]
    return check_scenario_text(text, name)


def check_scenario_text(text: str, filename: str = "<scenario>"
                        ) -> tuple[Scenario | None, list[Issue]]:
    """Like check_scenario_file, for YAML text."""
    scenario, ctx = _read(text, filename)
    issues = sorted(set(ctx.issues))
    return (None if issues else scenario), issues


def validate_files(paths: Iterable[str | os.PathLike]) -> tuple[dict[str, Scenario], list[Issue]]:
    """Check several files: each one alone, and that no two scenarios share a name."""
    scenarios: dict[str, Scenario] = {}
    issues: list[Issue] = []
    first_by_name: dict[str, str] = {}
    for path in paths:
        scenario, found = check_scenario_file(path)
        issues += found
        if scenario is None:
            continue
        name = os.fspath(path)
        earlier = first_by_name.setdefault(scenario.name, name)
        if earlier != name:
            line = _line_of_key(scenario.source_text or "", "name")
            issues.append(Issue(name, line, 1, "name", f"scenario name {scenario.name!r} is "
                                                       f"already used by {earlier}"))
            continue
        scenarios[name] = scenario
    return scenarios, issues


def _line_of_key(text: str, key: str) -> int:
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith(f"{key}:"):
            return number
    return 1


def _read(text: str, filename: str) -> tuple[Scenario | None, Context]:
    ctx = Context(filename)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as e:
        mark, message = yaml_problem(e, text)
        ctx.error(mark, "", message)
        return None, ctx
    except yaml.YAMLError as e:
        ctx.error(None, "", f"invalid YAML: {e}")
        return None, ctx
    if root is None:
        ctx.error(None, "", "empty file: a scenario needs at least a name and a workload")
        return None, ctx
    ctx.marks[""] = root.start_mark
    scenario = read(ctx, SCENARIO, root, "")
    if isinstance(root, yaml.MappingNode):
        _resolve(ctx, _plain(ctx, root))
    if scenario is INVALID:
        return None, ctx
    return _with_source(scenario, filename, text), ctx


def yaml_problem(e: yaml.MarkedYAMLError, text: str) -> tuple[Any, str]:
    """(where, what to check there) for a YAML syntax error: the parser's problem said as
    the mistake a person makes (an indentation, an unquoted ': ', an unclosed bracket or
    quote), else the parser's own words."""
    mark = e.problem_mark or e.context_mark
    problem, context = str(e.problem or ""), str(e.context or "")
    lines = text.splitlines()
    line = lines[mark.line] if mark is not None and mark.line < len(lines) else ""
    before = line[:mark.column] if mark is not None else ""
    opened = f" on line {e.context_mark.line + 1}" if e.context_mark is not None else ""
    found = re.match(r"expected <block end>, but found '?(.*?)'?$", problem)
    if found:
        if before.strip():   # text after a complete value, on the same line
            return mark, ("unexpected text after a value: a value that goes on after a "
                          "quoted string or a [...] / {...} must be quoted whole")
        if found.group(1) == "-":
            return mark, ("bad indentation: a list item where the mapping above expects "
                          "a key (check that a list is indented under its key)")
        if found.group(1) == "?":
            return mark, ("bad indentation: a key where the list above expects items "
                          "(check that the key lines up with the keys of its mapping)")
        return mark, ("bad indentation: this line does not line up with the lines above it "
                      "(check that the keys of one mapping line up, and the - of one list)")
    if problem == "mapping values are not allowed here":
        if re.search(r":(\s|$)", before):
            return mark, ("a second ': ' on one line: a value that contains ': ' must be "
                          "quoted (e.g. 'a: b')")
        key = yaml.Mark(mark.name, mark.index, mark.line, len(line) - len(line.lstrip()),
                        None, None)   # the key's own column, not its colon's
        return key, ("bad indentation: this key is indented deeper than the keys above it "
                     "(check that the keys of one mapping line up)")
    if "found character '\\t'" in problem:
        return mark, "a tab: YAML indents with spaces only (replace the tab with spaces)"
    char = re.match(r"found character '(.)' that cannot start any token", problem)
    if char:
        return mark, (f"a value cannot start with {char.group(1)!r}: quote the whole value "
                      f"(e.g. \"{char.group(1)}...\")")
    flow = re.match(r"expected ',' or '([\]}])', but got '?(.*?)'?$", problem)
    if flow:
        bracket = "{" if flow.group(1) == "}" else "["
        return mark, (f"the {bracket} opened{opened} is not closed (check for a missing "
                      f"'{flow.group(1)}' or ','){_flow_position_hint(e, text)}")
    if context == "while scanning a quoted scalar":
        return e.context_mark, ("a quoted string that is never closed (check for its "
                                "closing quote)")
    if problem == "could not find expected ':'":
        return e.context_mark or mark, ("a line without ':' inside a mapping (check that it "
                                        "is `key: value`, or indent a value that goes on "
                                        "from the line above)")
    alias = re.match(r"found undefined alias '(.*)'", problem)
    if alias:
        return mark, (f"*{alias.group(1)} names no anchor: define &{alias.group(1)} before "
                      "it is used")
    anchor = re.match(r"found duplicate anchor '(.*)'", context)
    if anchor:
        return mark, f"anchor &{anchor.group(1)} is defined twice (first{opened})"
    if problem == "but found another document":
        return mark, ("a second YAML document (---): a scenario file holds one scenario "
                      "(remove the --- line)")
    where = f" ({context}{opened})" if context and e.context_mark is not mark else ""
    return mark, f"invalid YAML: {problem}{where}"


def _flow_position_hint(e: yaml.MarkedYAMLError, text: str) -> str:
    """In a flow list `[...]`, `c1.pipeline[0]` ends the list at its `[`: say how to write it."""
    mark = e.problem_mark
    if mark is None or "got '['" not in str(e.problem):
        return ""
    lines = text.splitlines()
    if mark.line >= len(lines) or ".pipeline[" not in lines[mark.line]:
        return ""
    return ("; inside [...] write a pipeline position as c1.pipeline.0 (or quote it: "
            "'c1.pipeline[0]')")


def _with_source(scenario: Scenario, filename: str, text: str) -> Scenario:
    return dataclasses.replace(scenario, source=filename, source_text=text)


def _plain(ctx: Context, root: yaml.Node) -> dict:
    """The document as plain values, for the cross checks (which tolerate any shape)."""
    try:
        value = ctx.value(root)
    except (yaml.YAMLError, RecursionError):   # RecursionError: a self-referencing alias
        return {}
    return value if isinstance(value, dict) else {}


def _list_of_dicts(value: Any) -> list[dict]:
    return [v if isinstance(v, dict) else {} for v in value] if isinstance(value, list) else []


class _Plan:
    """What the raw document declares, read leniently so that one bad field does not
    hide (or fake) problems elsewhere."""

    def __init__(self, doc: dict):
        cluster = doc.get("cluster") if isinstance(doc.get("cluster"), dict) else {}
        count = cluster.get("datanodes", 3)
        self.datanodes: int | None = (count if isinstance(count, int)
                                      and not isinstance(count, bool) and count >= 1 else None)
        self.config = cluster.get("config") if isinstance(cluster.get("config"), dict) else {}
        self.workload = _list_of_dicts(doc.get("workload"))
        self.faults = _list_of_dicts(doc.get("faults"))
        self.clients = list(dict.fromkeys(
            c for c in (w.get("client") for w in self.workload)
            if isinstance(c, str) and not _is_server_name(c)))
        self.fault_ids = [f.get("id") for f in self.faults]
        self.timing_checked: set[int] = set()
        self.kinds = {f.get("id"): f.get("kind") for f in self.faults if isinstance(f.get("id"), str)}
        self.paths = {w.get("path") for w in self.workload if isinstance(w.get("path"), str)}
        self.workload_ids = [w.get("id") for w in self.workload]
        try:
            self.timeout: float | None = parse_duration(doc.get("timeout", "120s"))
        except ConfigError:
            self.timeout = None

    def replication(self) -> int | None:
        """dfs.replication as configured (None if its value is itself wrong)."""
        key = "dfs.replication"
        try:
            return KEYS[key].parse(self.config.get(key, KEYS[key].default), key)
        except ConfigError:
            return None

    def role(self, node_id: str) -> str | None:
        if node_id == "nn":
            return NAMENODE
        if node_id == "harness":
            return HARNESS
        if _DATANODE_ID.match(node_id) and (self.datanodes is None
                                            or int(node_id[2:]) <= self.datanodes):
            return DATANODE
        if node_id in self.clients:
            return CLIENT
        return None

    def describe_nodes(self) -> str:
        count = self.datanodes or 0
        dns = f"dn1..dn{count}" if count > 2 else ", ".join(f"dn{i}" for i in range(1, count + 1))
        clients = self.clients
        return (f"nn, {dns} and clients {', '.join(clients)}" if clients
                else f"nn and {dns}; no clients (clients are the workload's client ids)")

    def known_nodes(self) -> list[str]:
        return ["nn"] + [f"dn{i}" for i in range(1, (self.datanodes or 0) + 1)] + self.clients


def _resolve(ctx: Context, doc: dict) -> None:
    plan = _Plan(doc)
    for ref in ctx.references:
        _check_reference(ctx, plan, ref)
    _check_duplicates(ctx, "workload", plan.workload_ids)
    _check_duplicates(ctx, "faults", plan.fault_ids)
    _check_client_ids(ctx, plan)
    _check_replication(ctx, plan)
    for path, obj in list(ctx.objects.items()):
        if isinstance(obj, OnEvent):
            _check_event_node(ctx, plan, path, obj)
            _check_exact(ctx, plan, path, obj)
        if isinstance(obj, (AtTime, OnEvent, AfterFault)):
            _check_within_timeout(ctx, plan, path, obj)
        if isinstance(obj, Fault):
            obj.check_in_scenario(ctx, plan, path)   # what its kind checks across faults
    _check_after_chains(ctx, plan)


def _is_server_name(node_id: str) -> bool:
    return node_id in ("nn", HARNESS) or bool(_DATANODE_ID.match(node_id))


def _check_reference(ctx: Context, plan: _Plan, ref: Reference) -> None:
    if ref.what == "node":
        role = plan.role(ref.value)
        if role is None:
            if _DATANODE_ID.match(ref.value):
                if plan.datanodes is not None:  # else the count is itself wrong, and said so
                    ctx.error(ref.mark, ref.path, f"unknown node {ref.value!r}; the cluster has "
                                                  f"{plan.datanodes} DataNodes "
                                                  f"({plan.describe_nodes()})")
                return
            hint = did_you_mean(ref.value, plan.known_nodes())
            ctx.error(ref.mark, ref.path, f"unknown node {ref.value!r}{hint}; "
                                          f"this scenario has {plan.describe_nodes()}")
        elif role not in ref.roles:
            ctx.error(ref.mark, ref.path, f"{ref.needs}, but {ref.value!r} is "
                                          f"{_ROLE_PHRASE[role]}")
    elif ref.what == "position":
        _check_position(ctx, plan, ref)
    elif ref.what == "fault":
        ids = list(dict.fromkeys(i for i in plan.fault_ids if isinstance(i, str)))
        if ref.value not in ids:
            listing = f" (faults: {', '.join(ids)})" if ids else " (there are no faults)"
            ctx.error(ref.mark, ref.path, f"unknown fault {ref.value!r}"
                                          f"{did_you_mean(ref.value, ids) or listing}")
    elif ref.what == "workload":
        ids = list(dict.fromkeys(i for i in plan.workload_ids if isinstance(i, str)))
        if ref.value not in ids:
            listing = f" (operations: {', '.join(ids)})" if ids else ""
            ctx.error(ref.mark, ref.path, f"unknown workload operation {ref.value!r}"
                                          f"{did_you_mean(ref.value, ids) or listing}")
    elif ref.what == "path":
        if ref.value not in plan.paths:
            ctx.error(ref.mark, ref.path, f"no workload operation uses the file {ref.value!r}"
                                          f"{did_you_mean(ref.value, plan.paths)}")


def _check_position(ctx: Context, plan: _Plan, ref: Reference) -> None:
    """A pipeline position (harness.scenario.positions): its client writes, its index fits
    a pipeline of dfs.replication DataNodes, and its fault cannot fire before the client
    has a pipeline."""
    position = parse_position(ref.value)
    client = position.client
    if client not in plan.clients:
        if plan.role(client) is not None:
            ctx.error(ref.mark, ref.path, f"{ref.value}: {client!r} is not a client; a "
                                          "position names a place in a client's pipeline")
        else:
            listing = (f"clients: {', '.join(plan.clients)}" if plan.clients
                       else "the workload has no clients")
            ctx.error(ref.mark, ref.path, f"{ref.value}: unknown client {client!r}"
                                          f"{did_you_mean(client, plan.clients) or f' ({listing})'}")
        return
    writes = [(i, w) for i, w in enumerate(plan.workload)
              if w.get("client") == client and w.get("op") in ("write", "append")]
    if not writes:
        ctx.error(ref.mark, ref.path, f"{ref.value}: {client} never writes or appends, so it "
                                      "has no pipeline; name a client that writes")
        return
    replication = plan.replication()
    if isinstance(position.index, int) and replication is not None \
            and position.index >= replication:
        ctx.error(ref.mark, ref.path, f"{ref.value}: a pipeline has at most dfs.replication = "
                                      f"{replication} DataNodes (positions 0..{replication - 1}); "
                                      f"use an index below {replication} or {client}.pipeline[last]")
    m = re.match(r"^faults\[([0-9]+)\]", ref.path)
    if not m:
        return
    if int(m.group(1)) in plan.timing_checked:   # once per fault, not per reference
        return
    plan.timing_checked.add(int(m.group(1)))
    fires = _earliest_time(ctx, plan, int(m.group(1)), set())
    starts = [_start_time(ctx, i) for i, _ in writes]
    if fires is None or None in starts:
        return   # an event decides; the run says so if the pipeline is not there yet
    first_write = min(starts)
    if fires <= first_write:
        ctx.error(ref.mark, ref.path,
                  f"{ref.value}: the fault fires at {fires:g}s, before {client} can have a "
                  f"pipeline (its first write starts at {first_write:g}s); fire it on an "
                  f"event of the write, e.g. at: {{event: client.pipeline.setup, node: {client}}}")


def _start_time(ctx: Context, op_index: int) -> float | None:
    trigger = ctx.objects.get(child(item("workload", op_index), "at"), AtTime(0.0))
    return trigger.seconds if isinstance(trigger, AtTime) else None


def _earliest_time(ctx: Context, plan: _Plan, fault_index: int, seen: set) -> float | None:
    """When the fault's `at` fires, if a time decides it (a time, or `after:` a fault that a
    time decides), else None."""
    trigger = ctx.objects.get(child(item("faults", fault_index), "at"))
    if isinstance(trigger, AtTime):
        return trigger.seconds
    if isinstance(trigger, AfterFault) and fault_index not in seen:
        seen.add(fault_index)
        ids = plan.fault_ids
        if trigger.after in ids:
            before = _earliest_time(ctx, plan, ids.index(trigger.after), seen)
            return None if before is None else before + trigger.delay
    return None


def _check_duplicates(ctx: Context, section: str, ids: list) -> None:
    first: dict[str, int] = {}
    for i, value in enumerate(ids):
        if not isinstance(value, str):
            continue
        if value in first:
            mark = ctx.mark_of(child(item(section, first[value]), "id"))
            line = f" (first used on line {mark.line + 1})" if mark is not None else ""
            ctx.error_at(child(item(section, i), "id"), f"duplicate id {value!r}{line}")
        else:
            first[value] = i


def _check_client_ids(ctx: Context, plan: _Plan) -> None:
    for i, op in enumerate(plan.workload):
        client = op.get("client")
        if isinstance(client, str) and _is_server_name(client):
            ctx.error_at(child(item("workload", i), "client"),
                         f"{client!r} names a server, not a client; use a client id such as c1")


def _check_replication(ctx: Context, plan: _Plan) -> None:
    if plan.datanodes is None:
        return
    key = "dfs.replication"
    try:
        replication = KEYS[key].parse(plan.config.get(key, KEYS[key].default), key)
    except ConfigError:
        return  # already reported where the value is
    if replication > plan.datanodes:
        if key in plan.config:
            ctx.error_at(child("cluster.config", key),
                         f"replication {replication} needs at least {replication} DataNodes, "
                         f"the cluster has {plan.datanodes}")
        else:
            ctx.error_at("cluster.datanodes",
                         f"{plan.datanodes} DataNodes cannot hold the default dfs.replication "
                         f"{replication}; set cluster.config.dfs.replication")


def _check_event_node(ctx: Context, plan: _Plan, path: str, trigger: OnEvent) -> None:
    expected = _EVENT_ROLE.get(trigger.event.split(".", 1)[0])
    role = plan.role(trigger.node) if trigger.node else None
    if expected and role and role != expected:
        ctx.error_at(child(path, "node"), f"{trigger.event} is logged by {_LOGGED_BY[expected]}, "
                                          f"but {trigger.node!r} is {_ROLE_PHRASE[role]}")


def _check_exact(ctx: Context, plan: _Plan, path: str, trigger: OnEvent) -> None:
    """An exact trigger fires while its event's process waits: it cannot also wait a delay,
    and only faults are held for (a workload operation starts from a gate, not a hold)."""
    if not trigger.exact:
        return
    if trigger.delay:
        ctx.error_at(child(path, "delay"), "an exact trigger fires at its event; drop `delay` "
                                           "or `exact: true`")
    if not path.startswith("faults[") or not path.endswith(".at"):
        ctx.error_at(child(path, "exact"), "only a fault's `at` can be exact; drop "
                                           "`exact: true` here")


def _check_within_timeout(ctx: Context, plan: _Plan, path: str, trigger: Any) -> None:
    if not plan.timeout:
        return
    earliest = trigger.seconds if isinstance(trigger, AtTime) else trigger.delay
    if earliest > plan.timeout:
        ctx.error_at(path, f"{earliest:g}s is past the scenario timeout ({plan.timeout:g}s); "
                           "it would never fire")


def _check_after_chains(ctx: Context, plan: _Plan) -> None:
    """A fault whose `at` waits (through `after:`) for itself never fires."""
    waits: dict[str, tuple[str, str]] = {}
    for i, fault_id in enumerate(plan.fault_ids):
        trigger = ctx.objects.get(child(item("faults", i), "at"))
        if isinstance(fault_id, str) and isinstance(trigger, AfterFault):
            waits.setdefault(fault_id, (trigger.after, child(item("faults", i), "at")))
    reported: set[str] = set()
    for start in waits:
        chain, current = [start], start
        while current in waits:
            current = waits[current][0]
            if current == start:
                if not reported & set(chain):
                    reported.update(chain)
                    loop = " -> ".join(chain + [start])
                    message = ("a fault cannot wait for itself" if len(chain) == 1
                               else f"these faults wait for each other and never fire: {loop}")
                    ctx.error_at(child(waits[start][1], "after"), message)
                break
            if current in chain:
                break
            chain.append(current)
