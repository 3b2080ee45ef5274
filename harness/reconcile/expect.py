"""The scenario's `expect:` block, evaluated against a run's check results, metrics and
final state.

```yaml
expect:
  checks: all                  # or a list of check ids: each must be exercised (all: none)
  must_fail: [P2]              # checks that must FAIL (deliberately broken runs)
  files:
    /data/f1: {closed: true, min_len: hflushed, len: 4MiB, lease_recovered: true}
  recoveries: {pipeline: ">=1", block: 1, lease: ">=1", replacements: 0}
  max_recovery: 15s
  datanodes: {reserved_for_replicas: 0}   # every DataNode, from final_state.json
  workload: {w1: ok, w2: error}
```
The facts it needs per run (final file states, hflushed offsets, recovered paths,
workload outcomes) are gathered in Spark for the paths and operations named, then
judged here on the driver.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from pyspark.sql import functions as F, types as T

from hdfs_contract.config import ConfigError, parse_duration, parse_size
from . import evidence
from .checks import CHECK_IDS
from .verdict import CheckResult
from .load import RunSet
from .verdict import ExpectItem

RECOVERY_METRICS = {"pipeline": "pipeline_recoveries", "block": "block_recoveries",
                    "lease": "lease_recoveries", "replacements": "replacements"}
_COUNT = re.compile(r"^\s*(>=|<=|==|>|<)?\s*(\d+)\s*$")


@dataclasses.dataclass
class RunFacts:
    """What the expect block may ask about one run."""
    files: dict[str, dict]              # path -> {closed, len} from final_state.json
    readback: dict[str, dict]           # path -> {len, crc}
    hflushed: dict[str, int]            # path -> greatest client.hflush offset
    lease_recovered: set[str]           # paths whose lease was recovered
    ops: dict[str, dict]                # op_id -> {ok, error}
    # the protocol events the evidence of the items is built from (evidence.EVENTS), and
    # per path the hflushes of each client ({node, count, offset, ts})
    events: list[dict] = dataclasses.field(default_factory=list)
    hflushes: dict[str, list[dict]] = dataclasses.field(default_factory=dict)
    # dn -> {reserved_for_replicas, ...} (values None: the DataNode did not answer), from
    # final_state.json's datanode_space; None when the final state records none, absent
    # (the default) when the expect asks nothing of DataNodes or there is no final state
    space: dict[str, dict] | None = dataclasses.field(default_factory=dict)
    space_read: bool = False


def _pairs(key: str) -> T.StructType:
    """run_id and `key`, both strings: a schema, not DDL text (through Spark Connect the
    server would parse the text, a request)."""
    return T.StructType([T.StructField("run_id", T.StringType()),
                         T.StructField(key, T.StringType())])


def gather_facts(runs: RunSet) -> dict[str, RunFacts]:
    """The facts of every run, limited to the paths and operations its expect names."""
    spark = runs.spark
    wanted_paths = [(rid, str(p)) for rid, info in runs.runs.items()
                    for p in ((info.expect.get("files") or {}) if isinstance(info.expect.get("files"), dict) else {})]
    wanted_ops = [(rid, str(o)) for rid, info in runs.runs.items()
                  for o in ((info.expect.get("workload") or {}) if isinstance(info.expect.get("workload"), dict) else {})]
    facts = {rid: RunFacts({}, {}, {}, set(), {}) for rid in runs.runs}
    # the evidence of counts and lengths: only for runs whose expect asks for them
    told = [rid for rid, info in runs.runs.items()
            if any(isinstance(info.expect.get(k), dict) and info.expect.get(k)
                   for k in ("recoveries", "files"))]
    # every fact in one query (a Spark job costs a tenth of a second or more to plan and
    # schedule): rows tagged with their kind, the other columns null
    parts = []
    if wanted_paths:
        paths = spark.createDataFrame(wanted_paths, _pairs("path"))
        parts.append(runs.fs_files.join(paths, ["run_id", "path"], "left_semi").select(
            F.lit("file").alias("kind"), "run_id", F.col("path").alias("key"), "closed",
            F.col("len").cast("long").alias("len")))
        parts.append(runs.fs_readback.join(paths, ["run_id", "path"], "left_semi").select(
            F.lit("readback").alias("kind"), "run_id", F.col("path").alias("key"),
            F.col("len").cast("long").alias("len"), F.col("crc").cast("long").alias("crc")))
        # the queries below only where the runs logged their events at all
        names = runs.event_names
        if "client.hflush" in names:
            parts.append(runs.of("client.hflush").join(paths, ["run_id", "path"], "left_semi")
                         .groupBy("run_id", "path", "node")
                         .agg(F.max("offset").cast("long").alias("len"),
                              F.count(F.lit(1)).alias("count"), F.max("ts").alias("ts"))
                         .select(F.lit("hflushed").alias("kind"), "run_id",
                                 F.col("path").alias("key"), "len", "node", "count", "ts"))
        rec = (runs.of("nn.lease.recover").filter(F.col("result").isin("closed", "recovering"))
               .unionByName(runs.of("nn.lease.reassign"))
               .unionByName(runs.of("nn.file.close").filter(
                   F.col("reason").isin("lease_recovery", "block_recovery")))
               .select("run_id", "path").join(paths, ["run_id", "path"], "left_semi").distinct())
        parts.append(rec.select(F.lit("recovered").alias("kind"), "run_id",
                                F.col("path").alias("key")))
    if wanted_ops:
        ops = spark.createDataFrame(wanted_ops, _pairs("op_id"))
        parts.append(runs.of("client.op.end").join(ops, ["run_id", "op_id"], "left_semi")
                     .select(F.lit("op").alias("kind"), "run_id", F.col("op_id").alias("key"),
                             "ok", "error", "ts"))
    wanted_space = [rid for rid, info in runs.runs.items()
                    if isinstance(info.expect.get("datanodes"), dict) and info.expect["datanodes"]]
    if wanted_space:
        parts.append(runs.fs_space.filter(F.col("run_id").isin(wanted_space)).select(
            F.lit("space").alias("kind"), "run_id", F.col("dn").alias("key"),
            "reserved_for_replicas"))
    wanted_events = [n for n in evidence.EVENTS if n in runs.event_names]
    if told and wanted_events:
        parts.append(runs.of(*wanted_events).filter(F.col("run_id").isin(told)).select(
            F.lit("event").alias("kind"), "run_id", *evidence.FIELDS))
    if not parts:
        return facts
    rows = parts[0]
    for df in parts[1:]:
        rows = rows.unionByName(df, allowMissingColumns=True)
    got = [r.asDict() for r in rows.collect()]   # a column no part has is absent
    for r in sorted(got, key=lambda r: (r.get("ts") is not None, r.get("ts") or 0)):
        f, kind, key = facts[r["run_id"]], r["kind"], r.get("key")
        if kind == "file":
            f.files[key] = {"closed": r["closed"], "len": r["len"]}
        elif kind == "readback":
            f.readback[key] = {"len": r["len"], "crc": r["crc"]}
        elif kind == "hflushed":
            f.hflushed[key] = max(f.hflushed.get(key, 0), int(r["len"]))
            f.hflushes.setdefault(key, []).append(
                {"node": r["node"], "count": r["count"], "offset": int(r["len"]), "ts": r["ts"]})
        elif kind == "event":
            f.events.append({k: r.get(k) for k in evidence.FIELDS if r.get(k) is not None})
        elif kind == "recovered":
            f.lease_recovered.add(key)
        elif kind == "space":
            f.space_read = True
            if key is None:
                f.space = None
            elif f.space is not None:
                f.space[key] = {"reserved_for_replicas": r.get("reserved_for_replicas")}
        else:   # the last end of an operation (by time) is its result
            f.ops[key] = {"ok": r["ok"], "error": r["error"]}
    return facts


def _count_ok(spec: Any, value: int) -> bool | None:
    if isinstance(spec, bool):
        return None
    if isinstance(spec, int):
        return value == spec
    m = _COUNT.match(str(spec))
    if not m:
        return None
    op, n = m.group(1) or "==", int(m.group(2))
    return {"==": value == n, ">=": value >= n, "<=": value <= n, ">": value > n,
            "<": value < n}[op]


def required_checks(expect: dict) -> tuple[list[str], list[str], list[dict]]:
    """(ids that must be exercised, must-fail ids, items for ids that are not checks).

    Every check but the must-fail ones must pass or skip, whatever `checks:` says: a
    list names what the scenario exists to exercise, it does not excuse the others (an
    unlisted check that fails still fails the run). `checks: all` requires no exercise."""
    items = []
    spec = expect.get("checks", "all")
    if spec is None or spec == "all":
        listed = []
    elif isinstance(spec, (list, tuple)):
        listed = [str(c) for c in spec]
    else:
        listed = []
        items.append({"what": f"checks: {spec!r} is neither 'all' nor a list", "status": "fail"})
    must_fail = [str(c) for c in (expect.get("must_fail") or [])]
    for cid in listed + must_fail:
        if cid not in CHECK_IDS:
            items.append({"what": f"unknown check id {cid}", "status": "fail"})
    exercise = [c for c in listed if c in CHECK_IDS and c not in must_fail]
    return exercise, [c for c in must_fail if c in CHECK_IDS], items


def exercised(checks: list[CheckResult]) -> list[str]:
    """The ids of the checks that judged something in the run (pass or fail)."""
    return [c.id for c in checks if c.status in ("pass", "fail")]


def evaluate_expect(expect: dict, checks: list[CheckResult], metrics: dict,
                    facts: RunFacts) -> tuple[bool, list[ExpectItem]]:
    """(passed, expect items) for one run: every check but the must-fail ones passed or
    skipped, each check the scenario lists was exercised (a skip of a listed check fails
    the verdict: a pass that proved nothing must not look like one), every must_fail
    check failed, every item of the block holds."""
    exercise, must_fail, items = required_checks(expect)
    status = {c.id: c.status for c in checks}
    checks_ok = all(status.get(c, "skip") in ("pass", "skip")
                    for c in CHECK_IDS if c not in must_fail)
    # a check the system under test cannot judge (observable.apply_skips) is reported
    # as such, not as a scenario that failed to exercise it
    unseen = {c.id: c.reason for c in checks if c.status == "skip" and c.reason}
    for cid in exercise:
        if cid in unseen:
            items.append({"what": f"{cid} expected, {unseen[cid]}",
                          "status": "not_observable"})
        elif status.get(cid, "skip") == "skip":
            items.append({"what": f"{cid} expected but nothing exercised it",
                          "status": "fail"})
    for cid in must_fail:
        if cid in unseen:
            items.append({"what": f"{cid} must fail, {unseen[cid]}",
                          "status": "not_observable"})
            continue
        got = status.get(cid, "skip")
        items.append({"what": f"{cid} must fail (got {got})",
                      "status": "pass" if got == "fail" else "fail"})
    events = evidence.RunEvents(facts.events)
    files = expect.get("files") or {}
    for path, want in (files.items() if isinstance(files, dict) else []):
        found = _file_items(str(path), want if isinstance(want, dict) else {}, facts)
        told = [i for i in found if i.pop("_story", False)]
        # the file's story once: on each item it fails, else on the first
        told = [i for i in told if i["status"] == "fail"] or told[:1]
        if told:
            story = evidence.file_story(events, str(path), facts.hflushes.get(str(path), []),
                                        facts.files.get(str(path)), facts.readback.get(str(path)))
            for item in told:
                _attach(item, story)
        items.extend(found)
    rec = expect.get("recoveries") or {}
    for kind, spec in (rec.items() if isinstance(rec, dict) else []):
        metric = RECOVERY_METRICS.get(kind)
        if metric is None:
            items.append({"what": f"recoveries: unknown kind {kind!r}", "status": "fail"})
            continue
        value = metrics.get(metric, 0)
        ok = _count_ok(spec, value)
        label = "replacements" if kind == "replacements" else f"{kind} recoveries"
        item = {"what": f"{label} {spec} (got {value})", "status": "pass" if ok else "fail"}
        items.append(_attach(item, evidence.COUNTED[kind](events)))
    if expect.get("max_recovery") is not None:
        items.append(_max_recovery_item(expect["max_recovery"], metrics))
    nodes = expect.get("datanodes") or {}
    if isinstance(nodes, dict) and nodes:
        items.extend(_datanode_items(nodes, facts))
    work = expect.get("workload") or {}
    for op_id, want in (work.items() if isinstance(work, dict) else []):
        end = facts.ops.get(str(op_id))
        got = None if end is None else ("ok" if end.get("ok") else "error")
        items.append({"what": f"workload {op_id} {want} (got {got or 'no client.op.end'})",
                      "status": "pass" if got == str(want) else "fail"})
    passed = checks_ok and all(i["status"] in ("pass", "not_observable") for i in items)
    # built as verdict.json's objects (a file's story is attached to some); typed here
    return passed, [ExpectItem.from_json(i) for i in items]


def _attach(item: dict, found: list[dict]) -> dict:
    """The item with its evidence (the events behind it), at most evidence.MAX_ITEMS."""
    shown, more = evidence.capped(found)
    item["evidence"] = shown
    if more:
        item["evidence_more"] = more
    return item


def _max_recovery_item(spec: Any, metrics: dict) -> dict:
    try:
        bound = parse_duration(spec, "expect.max_recovery")
    except ConfigError as exc:
        return {"what": f"max_recovery: {exc}", "status": "fail"}
    lat = metrics.get("recovery_latencies_s") or {}
    values = [v for vs in lat.values() for v in vs]
    if not values:
        return {"what": f"every recovery within {spec} (none measured)", "status": "pass"}
    worst = max(values)
    return {"what": f"every recovery within {spec} (worst {worst:.3f}s)",
            "status": "pass" if worst <= bound else "fail"}


def _file_items(path: str, want: dict, facts: RunFacts) -> list[dict]:
    items = []
    f = facts.files.get(path)
    for key, value in want.items():
        if key == "closed":
            what = f"{path} {'closed' if value else 'open'}"
            got = None if f is None else bool(f.get("closed"))
            ok = got is not None and got == bool(value)
            items.append({"what": what + ("" if ok else f" (got {'missing' if f is None else ('closed' if got else 'open')})"),
                          "status": "pass" if ok else "fail", "_story": True})
        elif key in ("min_len", "len"):
            try:
                if key == "min_len" and str(value).strip().lower() == "hflushed":
                    target = facts.hflushed.get(path, 0)
                    label = f"hflushed ({target})"   # measured: no part of its name
                else:
                    target = parse_size(value, f"expect.files[{path}].{key}")
                    label = str(target)
            except ConfigError as exc:
                items.append({"what": f"{path} {key}: {exc}", "status": "fail"})
                continue
            got = None if f is None else f.get("len")
            op = ">=" if key == "min_len" else "=="
            ok = got is not None and (got >= target if op == ">=" else got == target)
            items.append({"what": f"{path} len {op} {label} (got {'missing' if got is None else got})",
                          "status": "pass" if ok else "fail", "_story": True})
        elif key == "lease_recovered":
            got = path in facts.lease_recovered
            items.append({"what": f"{path} lease {'recovered' if value else 'not recovered'}"
                                  + ("" if got == bool(value) else f" (got {'recovered' if got else 'not recovered'})"),
                          "status": "pass" if got == bool(value) else "fail", "_story": True})
        else:
            items.append({"what": f"{path}: unknown expectation {key!r}", "status": "fail"})
    return items


_SPACE_LABELS = {"reserved_for_replicas": "reserved for replicas"}


def _datanode_items(want: dict, facts: RunFacts) -> list[dict]:
    """One item per DataNode and key of `expect.datanodes`: 'reserved for replicas on dn1
    == 0 (got 1048576)'. A final state that records no DataNode space (the mini-HDFS) or
    a DataNode that did not answer is not observable; a run without a final state fails."""
    items = []
    for key, value in want.items():
        label = _SPACE_LABELS.get(str(key))
        if label is None:
            items.append({"what": f"datanodes: unknown expectation {key!r}", "status": "fail"})
            continue
        try:
            target = parse_size(value, f"expect.datanodes.{key}")
        except ConfigError as exc:
            items.append({"what": f"datanodes {key}: {exc}", "status": "fail"})
            continue
        if not facts.space_read:
            items.append({"what": f"{label} == {target} on every DataNode (got no "
                                  "final_state.json)", "status": "fail"})
        elif facts.space is None:
            items.append({"what": f"{label} == {target} on every DataNode: the system "
                                  "records no DataNode space", "status": "not_observable"})
        else:
            for dn in sorted(facts.space, key=_node_order):
                got = facts.space[dn].get(str(key))
                if got is None:
                    items.append({"what": f"{label} on {dn} == {target}: {dn} did not answer",
                                  "status": "not_observable"})
                else:
                    items.append({"what": f"{label} on {dn} == {target} (got {got})",
                                  "status": "pass" if got == target else "fail"})
    return items


def _node_order(dn: str) -> tuple:
    m = re.match(r"^(\D*)(\d+)$", dn)
    return (m.group(1), int(m.group(2))) if m else (dn, 0)
