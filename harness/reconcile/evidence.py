"""The events behind an expectation: what a count of recoveries counted, and what decided
a file's length, item by item, for verdict.json's `expect[].evidence`.

`expect.gather_facts` collects a run's few protocol events (recoveries, lease recoveries,
closes, pipeline errors; never the writes and acks) in its one query; this module turns
them into items on the driver, without Spark, so it is tested on plain dicts. Every item
has `t` (seconds since the run's first event, as the report's plots), `node`, `what` (a
sentence for the report) and `brief` (a few words for the terminal's FAIL line and the
JUnit XML), and the fields it was built from.
"""

from __future__ import annotations

from typing import Callable

# every event the items are built from (the protocol's rare events only)
EVENTS = ("harness.run.start", "nn.recovery.start", "nn.recovery.commit", "nn.lease.recover",
          "nn.lease.reassign", "nn.lease.expired", "nn.file.close", "nn.file.create",
          "nn.file.append", "client.pipeline.error", "client.pipeline.recovered",
          "client.pipeline.replace", "client.close", "client.start", "client.stream.open",
          "dn.recovery.sync")
FIELDS = ("ts", "node", "event", "seq", "path", "block", "recovery_id", "primary", "requester",
          "holder", "old_holder", "result", "len", "gs", "old_gs", "decision", "new_node",
          "bad_node", "error", "reason", "stage", "rule", "limit", "policy", "ok", "force",
          "pipeline")
MAX_ITEMS = 20
# the NameNode's own lease holder: a recovery it requested is the lease monitor's
NAMENODE_HOLDERS = ("HDFS_NameNode",)
# a recovery's nn.lease.recover is logged beside its nn.recovery.start (before or after,
# as the system logs it); one further away is another call
CAUSE_WINDOW_S = 1.0
# a recovery that closes the file at once logs nn.file.close just before nn.lease.recover
CLOSE_SLACK_S = 0.05


class RunEvents:
    """The protocol events of one run, sorted by time, with the run's start and a map
    from lease holder names to the client nodes that used them."""

    def __init__(self, events: list[dict]):
        self.events = sorted(events, key=lambda e: (e.get("ts") or 0.0, e.get("seq") or 0))
        starts = [e["ts"] for e in self.events if e.get("event") == "harness.run.start"]
        stamps = [e["ts"] for e in self.events if e.get("ts") is not None]
        self.t0 = min(starts or stamps or [0.0])
        self.nodes_of_holder = {e["holder"]: e["node"] for e in self.events
                                if e.get("event") in ("client.start", "client.stream.open")
                                and e.get("holder") and e.get("node")}

    def of(self, *names: str, path: str | None = None) -> list[dict]:
        return [e for e in self.events if e.get("event") in names
                and (path is None or e.get("path") == path)]

    def t(self, e: dict | None) -> float | None:
        return None if e is None or e.get("ts") is None else round(e["ts"] - self.t0, 3)

    def who(self, holder: str | None) -> str:
        """A lease holder as a reader knows it: its client node, or the lease monitor."""
        if not holder:
            return "?"
        if holder.startswith(NAMENODE_HOLDERS):
            return "lease monitor"
        return self.nodes_of_holder.get(holder, holder)


def _s(t: float | None) -> str:
    return "?" if t is None else f"+{t:.1f}s"


def block_recoveries(ev: RunEvents, path: str | None = None) -> list[dict]:
    """Each block recovery started (nn.recovery.start, one per recovery id): who started
    it, its primary, whether and when it committed and to which length."""
    items, seen = [], set()
    commits = {(e.get("block"), e.get("recovery_id")): e for e in reversed(ev.of("nn.recovery.commit"))}
    syncs = {(e.get("block"), e.get("recovery_id")): e for e in reversed(ev.of("dn.recovery.sync"))}
    recovers = [e for e in ev.of("nn.lease.recover") if e.get("result") in ("recovering", "closed")]
    # a truncate inside a block starts a block recovery of its own (ok false: not done at
    # once; null from a Hadoop log, which does not say)
    recovers += [e for e in ev.of("nn.file.truncate") if e.get("ok") is not True]
    started_blocks: set = set()
    for s in ev.of("nn.recovery.start", path=path):
        key = (s.get("block"), s.get("recovery_id"))
        if key in seen:
            continue
        seen.add(key)
        near = [r for r in recovers if s.get("path") in (None, r.get("path"))
                and abs(r["ts"] - s["ts"]) <= CAUSE_WINDOW_S]
        cause = min(near, key=lambda r: abs(r["ts"] - s["ts"])) if near else None
        if cause is not None and cause["event"] == "nn.file.truncate":
            by = _truncator(ev, cause)
            started_by, by_long = by, f"{by} (truncate to {cause.get('len')} bytes)"
        elif cause is not None:
            by = ev.who(cause.get("requester"))
            how = ("hard limit" if by == "lease monitor"
                   else "recoverLease" if cause.get("force") else "soft limit passed")
            started_by, by_long = by, f"{by} ({how})"
        elif s.get("block") in started_blocks:
            started_by = by_long = "NameNode (the earlier recovery timed out)"
        else:
            started_by = by_long = "unknown (no nn.lease.recover beside it)"
        started_blocks.add(s.get("block"))
        c, sync = commits.get(key), syncs.get(key)
        t, ct = ev.t(s), ev.t(c)
        item = {"t": t, "node": s.get("node"), "recovery_id": s.get("recovery_id"),
                "block": s.get("block"), "path": s.get("path"), "primary": s.get("primary"),
                "started_by": by_long, "ended": c is not None, "committed_t": ct,
                "len": c.get("len") if c else None, "rule": sync.get("rule") if sync else None}
        end = (f"committed at {_s(ct)}, length {item['len']}"
               + (f" ({item['rule']})" if item["rule"] else "")) if c else "never committed"
        item["what"] = (f"recovery {item['recovery_id']} of block {item['block']}"
                        f"{' (' + item['path'] + ')' if item['path'] else ''} started at {_s(t)} "
                        f"by {by_long}, primary {item['primary']}: {end}")
        item["brief"] = (f"{item['recovery_id']} by {started_by} {_s(t)} primary {item['primary']} "
                         + (f"committed {_s(ct)}" if c else "never committed"))
        items.append(item)
    return items


def _truncator(ev: RunEvents, truncate: dict) -> str:
    """The client whose truncate op of that path was the last to start before `truncate`."""
    ops = [e for e in ev.of("client.op.start", path=truncate.get("path"))
           if e.get("op") == "truncate" and e["ts"] <= truncate["ts"]]
    return (ops[-1].get("node") or "?") if ops else "a truncate"


def lease_recoveries(ev: RunEvents, path: str | None = None) -> list[dict]:
    """Each writer's lease recovered or reassigned (what `lease_recoveries` counts): who
    asked, and whether and when the file closed."""
    # when each holder first opened each path itself: the recovering client that a
    # recovery handed the lease to, and that appends afterwards, was not its writer then
    opened: dict[tuple, float] = {}
    for e in ev.of("nn.file.create", "nn.file.append"):
        opened.setdefault((e.get("path"), e.get("holder")), e["ts"])
    first: dict[tuple, dict] = {}
    for e in ev.of("nn.lease.recover", "nn.lease.reassign", path=path):
        if e["event"] == "nn.lease.recover" and e.get("result") == "error":
            continue
        holder = e.get("holder") if e["event"] == "nn.lease.recover" else e.get("old_holder")
        if opened.get((e.get("path"), holder), float("inf")) <= e["ts"]:
            first.setdefault((e.get("path"), holder), e)
    items = []
    for (p, holder), e in first.items():
        recover = next((r for r in ev.of("nn.lease.recover", path=p) if r.get("holder") == holder
                        and r.get("result") != "error" and r["ts"] >= e["ts"]), e)
        by = ev.who(recover.get("requester") if recover["event"] == "nn.lease.recover"
                    else e.get("holder"))
        close = next((c for c in ev.of("nn.file.close", path=p)
                      if c["ts"] >= e["ts"] - CLOSE_SLACK_S), None)
        t, ct = ev.t(e), ev.t(close)
        item = {"t": t, "node": e.get("node"), "path": p, "holder": holder,
                "holder_node": ev.who(holder), "requester": by,
                "result": recover.get("result"), "closed": close is not None,
                "closed_t": ct, "len": close.get("len") if close else None,
                "reason": close.get("reason") if close else None}
        end = (f"file closed at {_s(ct)} ({item['reason']}, length {item['len']})" if close
               else "the file never closed")
        how = {"recovering": "block recovery started", "closed": "closed at once"}.get(
            item["result"], "lease reassigned")
        item["what"] = (f"lease of {item['holder_node']} on {p} recovered at {_s(t)} by {by}"
                        f" ({how}): {end}")
        item["brief"] = (f"{item['holder_node']}'s lease on {p} by {by} {_s(t)}, "
                         + (f"closed {_s(ct)}" if close else "never closed"))
        items.append(item)
    return items


def pipeline_recoveries(ev: RunEvents, path: str | None = None) -> list[dict]:
    """Each client.pipeline.recovered, with the pipeline error that started it."""
    items = []
    errors = ev.of("client.pipeline.error")
    for r in ev.of("client.pipeline.recovered", path=path):
        err = None
        for e in errors:
            if e["ts"] > r["ts"]:
                break
            if e.get("node") == r.get("node") and e.get("block") == r.get("block"):
                err = e
        t = ev.t(r)
        item = {"t": t, "node": r.get("node"), "path": r.get("path"), "block": r.get("block"),
                "old_gs": r.get("old_gs"), "gs": r.get("gs"), "pipeline": r.get("pipeline"),
                "error_t": ev.t(err), "bad_node": err.get("bad_node") if err else None,
                "error": (err.get("reason") or err.get("error")) if err else None}
        cause = (f" after an error at {_s(item['error_t'])}: bad node {item['bad_node']}"
                 f" ({item['error']})") if err else ""
        item["what"] = (f"{item['node']} recovered the pipeline of block {item['block']} at {_s(t)}"
                        f" (GS {item['old_gs']} -> {item['gs']}, now "
                        f"{','.join(item['pipeline'] or [])}){cause}")
        item["brief"] = (f"{item['node']} {_s(t)} block {item['block']}"
                         + (f" bad {item['bad_node']}" if err else ""))
        items.append(item)
    return items


def replacements(ev: RunEvents, path: str | None = None) -> list[dict]:
    """Each DataNode added to a pipeline (client.pipeline.replace, decision added)."""
    items = []
    for r in ev.of("client.pipeline.replace", path=path):
        if r.get("decision") != "added":
            continue
        t = ev.t(r)
        item = {"t": t, "node": r.get("node"), "path": r.get("path"), "block": r.get("block"),
                "new_node": r.get("new_node"), "policy": r.get("policy")}
        item["what"] = (f"{item['node']} added {item['new_node']} to the pipeline of block "
                        f"{item['block']} at {_s(t)} (policy {item['policy']})")
        item["brief"] = f"{item['node']} {_s(t)} added {item['new_node']} to {item['block']}"
        items.append(item)
    return items


COUNTED: dict[str, Callable[[RunEvents], list[dict]]] = {
    "block": block_recoveries, "lease": lease_recoveries, "pipeline": pipeline_recoveries,
    "replacements": replacements}


def file_story(ev: RunEvents, path: str, hflushes: list[dict], final: dict | None,
               readback: dict | None) -> list[dict]:
    """What decided a file's length and state: its hflushes, the clients' closes, its
    lease and block recoveries, the NameNode's close and the final state."""
    items = []
    for h in hflushes:
        t = ev.t({"ts": h.get("ts")})
        items.append({"t": t, "node": h.get("node"), "hflushes": h.get("count"),
                      "offset": h.get("offset"),
                      "what": f"{h.get('node')} hflushed up to offset {h.get('offset')} at "
                              f"{_s(t)} ({h.get('count')} hflush"
                              f"{'' if h.get('count') == 1 else 'es'})",
                      "brief": f"{h.get('node')} hflushed {h.get('offset')} {_s(t)}"})
    for c in ev.of("client.close", path=path):
        t = ev.t(c)
        items.append({"t": t, "node": c.get("node"), "ok": c.get("ok"), "len": c.get("len"),
                      "error": c.get("error"),
                      "what": f"{c.get('node')} closed the file at {_s(t)}: "
                              + (f"ok, length {c.get('len')}" if c.get("ok")
                                 else f"failed ({c.get('error')})"),
                      "brief": f"{c.get('node')} close {_s(t)} "
                               + ("ok" if c.get("ok") else str(c.get("error")))})
    items += lease_recoveries(ev, path) + block_recoveries(ev, path)
    for c in ev.of("nn.file.close", path=path):
        t = ev.t(c)
        items.append({"t": t, "node": c.get("node"), "len": c.get("len"),
                      "reason": c.get("reason"),
                      "what": f"the NameNode closed the file at {_s(t)} ({c.get('reason')}), "
                              f"length {c.get('len')}",
                      "brief": f"closed {_s(t)} len {c.get('len')} ({c.get('reason')})"})
    items.sort(key=lambda i: (i["t"] is None, i["t"] or 0.0))
    if final is not None or readback is not None:
        state = ("missing" if final is None else
                 f"{'closed' if final.get('closed') else 'open'}, length {final.get('len')}")
        back = "" if readback is None else f"; reads back {readback.get('len')} bytes"
        items.append({"t": None, "node": "nn", "final": final, "readback": readback,
                      "what": f"final state: {state}{back}", "brief": f"final {state}"})
    return items


def capped(items: list[dict], limit: int = MAX_ITEMS) -> tuple[list[dict], int]:
    """(the first `limit` items, how many more there were)."""
    return items[:limit], max(0, len(items) - limit)


def brief(item: dict, limit: int = 4, width: int = 200) -> str:
    """The evidence of an expectation item in a few words: '2: a; b' (the first `limit`
    items, cut at `width` characters)."""
    ev = item.get("evidence") or []
    if not ev:
        return ""
    parts = [e.get("brief") or e.get("what") or "" for e in ev[:limit]]
    more = len(ev) - limit + int(item.get("evidence_more") or 0)
    text = "; ".join(parts) + (f"; +{more} more" if more > 0 else "")
    return text if len(text) <= width else text[:width - 1] + "…"


def with_brief(item: dict, limit: int = 4, width: int = 200) -> str:
    """An expectation item's `what` with its evidence inside the closing parenthesis:
    'block recoveries 1 (got 2: 1002 by c2 +0.0s ...; 1003 ...)'."""
    what = str(item.get("what") or "")
    more = brief(item, limit, width)
    if not more:
        return what
    if what.endswith(")"):
        return f"{what[:-1]}: {more})"
    return f"{what} ({more})"
