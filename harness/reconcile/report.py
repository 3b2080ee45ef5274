"""report.html of one run: the verdict, the metrics and plots a person would rather look
at than read.

- plots/timeline.png: one lane per node; protocol events as marks, write/ack traffic as
  a density strip, faults shaded from harness.fault.inject to harness.fault.heal, node
  kills, and recovery spans (pipeline error -> recovered, block recovery start -> commit,
  lease recovery -> file closed);
- plots/pipelines.png: for each block, which DataNodes were in its pipeline over time
  and the GS of each generation;
- plots/recovery_lengths.png: the replica lengths each DataNode answered in every block
  recovery (dn.recovery.sync), by original state, with the length chosen.

The page opens with "Why it failed" (each failed check with its evidence rows, each unmet
expectation with the events behind it, from verdict.json) and what it takes to run the
scenario again (description, seed, system, backend, duration, the faults as they fired,
the command, links to every log). The plots and the fault schedule are drawn from the
run's own log files, read here directly (one run is bounded; the checks themselves never
do this). The page is templates/report.html.j2; it references the PNGs and logs
relatively, so the folder can be moved or served as it is.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import shlex
from collections import defaultdict

import matplotlib
import yaml

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from .templating import check_title, exercised, render  # noqa: E402
from .verdict import Verdict  # noqa: E402

WHY_ROWS = 10   # evidence rows of a failed check shown in "Why it failed"

BULK = {"client.write", "client.ack", "client.lease.renew", "nn.lease.renew",
        "dn.block_report", "client.read"}
FAMILY_COLORS = [
    ("harness.fault", "#d62728"), ("harness.node", "#8c564b"), ("harness", "#7f7f7f"),
    ("client.pipeline", "#ff7f0e"), ("dn.pipeline", "#ff7f0e"), ("dn.transfer", "#ff7f0e"),
    ("nn.recovery", "#9467bd"), ("dn.recovery", "#9467bd"), ("nn.lease", "#2ca02c"),
    ("client.lease", "#2ca02c"), ("client.recover_lease", "#2ca02c"), ("client", "#1f77b4"),
    ("nn.block", "#17becf"), ("nn.replica", "#17becf"), ("dn", "#17becf"), ("nn", "#bcbd22"),
]
LEGEND = [("fault injected/healed", "#d62728"), ("node kill/start/pause", "#8c564b"),
          ("other harness", "#7f7f7f"), ("pipeline", "#ff7f0e"), ("block recovery", "#9467bd"),
          ("lease", "#2ca02c"), ("client", "#1f77b4"), ("block / replica", "#17becf"),
          ("other namenode", "#bcbd22")]
STATE_COLORS = {"FINALIZED": "#2ca02c", "RBW": "#1f77b4", "RWR": "#ff7f0e", "RUR": "#9467bd"}
MAX_MARKS = 20000
_EVENT = re.compile(rb'"event"\s*:\s*"([^"]+)"')
_TS = re.compile(rb'"ts"\s*:\s*([0-9.eE+-]+)')
_NODE = re.compile(rb'"node"\s*:\s*"([^"]+)"')


def _color(event: str) -> str:
    for prefix, color in FAMILY_COLORS:
        if event.startswith(prefix):
            return color
    return "#333333"


def read_run_events(run_dir: str):
    """(events, bulk) of one run: protocol events as dicts (bounded by MAX_MARKS), and the
    (ts, node) of bulk traffic (writes, acks, renewals), read without full JSON parsing."""
    events, bulk = [], []
    ev_dir = os.path.join(run_dir, "events")
    for name in sorted(os.listdir(ev_dir)) if os.path.isdir(ev_dir) else []:
        if not name.endswith(".jsonl"):
            continue
        with open(os.path.join(ev_dir, name), "rb") as f:
            for line in f:
                m = _EVENT.search(line)
                if m and m.group(1).decode() in BULK:
                    t, n = _TS.search(line), _NODE.search(line)
                    if t and n:
                        try:
                            bulk.append((float(t.group(1)), n.group(1).decode()))
                        except ValueError:
                            pass
                    continue
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if isinstance(rec, dict) and isinstance(rec.get("ts"), (int, float)) \
                        and rec.get("node") and rec.get("event"):
                    events.append(rec)
    events.sort(key=lambda r: (r["ts"], r.get("seq", 0)))
    if len(events) > MAX_MARKS:
        keep = [e for e in events if not e["event"].startswith(("dn.replica.state", "nn.replica"))]
        events = keep[:MAX_MARKS]
    return events, bulk


def _lane_order(nodes) -> list[str]:
    def key(n):
        m = re.match(r"([a-z]+)(\d*)$", n)
        kind = {"harness": 0, "nn": 1, "dn": 2, "c": 3}.get(m.group(1) if m else n, 4)
        return (kind, int(m.group(2)) if m and m.group(2) else 0, n)
    return sorted(set(nodes), key=key)


def plot_timeline(events, bulk, path: str, t0: float) -> None:
    lanes = _lane_order([e["node"] for e in events] + [n for _, n in bulk]
                        + [e.get("target") for e in events
                           if e["event"].startswith("harness.node") and e.get("target")])
    y = {n: i for i, n in enumerate(lanes)}
    fig, ax = plt.subplots(figsize=(13, 1.2 + 0.55 * max(len(lanes), 3)))
    # faults: shaded from inject to heal (or to the end)
    end = max([e["ts"] for e in events] + [b[0] for b in bulk] + [t0]) - t0
    injected, shown = {}, 0
    for e in events:
        if e["event"] == "harness.fault.inject":
            injected[e.get("fault")] = e
        elif e["event"] == "harness.fault.heal" and e.get("fault") in injected:
            inj = injected.pop(e.get("fault"))
            _fault_span(ax, inj, inj["ts"] - t0, e["ts"] - t0, shown)
            shown += 1
    for inj in injected.values():
        _fault_span(ax, inj, inj["ts"] - t0, end, shown)
        shown += 1
    # bulk traffic: one thin strip per lane
    by_node = defaultdict(list)
    for ts, n in bulk:
        by_node[n].append(ts - t0)
    for n, xs in by_node.items():
        ax.scatter(xs, [y[n] - 0.3] * len(xs), s=4, marker="|", color="#aaaaaa", alpha=0.5,
                   linewidths=0.6)
    # recovery spans
    spans = _recovery_spans(events)
    free: dict[str, list[float]] = defaultdict(list)   # per lane: where each level is free
    room = 0.25 * max(end, 1.0)                         # a label's width, roughly
    for node, a, b, label, color in sorted(spans, key=lambda sp: sp[1]):
        if node in y:
            # the first level of the lane free from this span's start (its label included)
            x0, x1 = (a - t0 - room, end) if b is None else (a - t0, b - t0 + room)
            levels = free[node]
            level = next((i for i, f in enumerate(levels) if f <= x0), len(levels))
            if level == len(levels):
                levels.append(x1)
            levels[level] = x1
            lift = 0.2 * (level % 4)
            if b is None:   # never ended: an open (hollow) bar to the end of the run
                ax.plot([a - t0, end], [y[node] + 0.2 + lift] * 2, color=color, lw=4,
                        alpha=0.7, ls=(0, (2, 1.5)), solid_capstyle="butt")
                ax.plot([a - t0], [y[node] + 0.2 + lift], marker="|", ms=9, color=color)
                ax.text(a - t0, y[node] + 0.2 + lift, label + " ", fontsize=7, color=color,
                        va="center", ha="right")
                continue
            ax.plot([a - t0, b - t0], [y[node] + 0.2 + lift] * 2, color=color, lw=4, alpha=0.7,
                    solid_capstyle="butt")
            ax.text(b - t0, y[node] + 0.2 + lift, " " + label, fontsize=7, color=color,
                    va="center")
    # protocol events
    xs, ys, cs = [], [], []
    for e in events:
        if e["node"] in y:
            xs.append(e["ts"] - t0)
            ys.append(y[e["node"]])
            cs.append(_color(e["event"]))
    ax.scatter(xs, ys, s=14, c=cs, marker="o", edgecolors="none", zorder=3)
    for e in events:
        if e["event"] in ("harness.node.kill", "harness.node.stop") and e.get("target") in y:
            ax.scatter([e["ts"] - t0], [y[e["target"]]], marker="X", s=90, color="#d62728", zorder=4)
        if e["event"] in ("harness.node.start", "harness.node.resume") and e.get("target") in y:
            ax.scatter([e["ts"] - t0], [y[e["target"]]], marker="^", s=60, color="#2ca02c", zorder=4)
    ax.set_yticks(range(len(lanes)))
    ax.set_yticklabels(lanes)
    ax.set_ylim(-1.5, len(lanes) - 0.2)
    ax.invert_yaxis()
    ax.set_xlabel("seconds since the run started")
    ax.grid(axis="x", alpha=0.3)
    handles = [Patch(color=c, label=p) for p, c in LEGEND] + [
        Patch(color="#d62728", alpha=0.15, label="fault active"),
        Patch(color="#aaaaaa", label="writes/acks/renewals")] + [
        # the node markers, which the colours above would not tell apart (green is lease)
        Line2D([], [], linestyle="none", marker="X", ms=8, color="#d62728",
               label="node killed/stopped"),
        Line2D([], [], linestyle="none", marker="^", ms=7, color="#2ca02c",
               label="node started/resumed")]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    ax.set_title("Timeline: one lane per node")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _fault_span(ax, inj, a, b, i):
    ax.axvspan(a, b, color="#d62728", alpha=0.10, zorder=0)
    target = inj.get("target") or ""
    if isinstance(target, list):
        target = ",".join(map(str, target))
    if isinstance(inj.get("resolved"), list) and inj["resolved"]:   # named by pipeline position
        target = ",".join(map(str, inj["resolved"]))
    ax.text(a, -1.35 + 0.3 * (i % 3), f"{inj.get('fault')} ({inj.get('kind')} {str(target)[:30]})",
            fontsize=7, color="#d62728", va="center")


def _recovery_spans(events):
    """(node, start, end, label, color) for each recovery seen in the events; end None:
    it never ended (a block recovery never committed, a file never closed)."""
    spans = []
    open_err = {}
    rec_start = {}
    lease_rec = {}
    for e in events:
        ev = e["event"]
        if ev == "client.pipeline.error":
            open_err.setdefault((e["node"], e.get("block")), e["ts"])
        elif ev == "client.pipeline.recovered":
            a = open_err.pop((e["node"], e.get("block")), None)
            if a is not None:
                spans.append((e["node"], a, e["ts"], f"pipeline GS {e.get('old_gs')}->{e.get('gs')}", "#ff7f0e"))
        elif ev == "nn.recovery.start":
            rec_start.setdefault((e.get("block"), e.get("recovery_id")), e)
        elif ev == "nn.recovery.commit":
            s = rec_start.pop((e.get("block"), e.get("recovery_id")), None)
            if s is not None:
                spans.append(("nn", s["ts"], e["ts"], f"block recovery {e.get('block')} ({e.get('recovery_id')}) len {e.get('len')}", "#9467bd"))
        # result closed: the NameNode closed the file at once (nn.file.close came first)
        elif ev == "nn.lease.recover" and e.get("result") == "recovering":
            lease_rec.setdefault(e.get("path"), e["ts"])
        elif ev == "nn.file.close" and e.get("path") in lease_rec:
            spans.append(("nn", lease_rec.pop(e.get("path")), e["ts"], f"lease recovery {e.get('path')}", "#2ca02c"))
    for (block, rid), s in rec_start.items():
        spans.append(("nn", s["ts"], None, f"block recovery {block} ({rid}) never committed",
                      "#9467bd"))
    for path, a in lease_rec.items():
        spans.append(("nn", a, None, f"lease recovery {path}: file never closed", "#2ca02c"))
    return spans


def plot_pipelines(events, path: str, t0: float, max_blocks: int = 6) -> None:
    pipe_events = ("nn.block.allocate", "client.pipeline.setup", "client.pipeline.recovered",
                   "nn.block.update_pipeline", "nn.recovery.commit")
    per_block = defaultdict(list)
    last_ts = defaultdict(float)
    for e in events:
        b = e.get("block")
        if b is None:
            continue
        last_ts[b] = max(last_ts[b], e["ts"])
        if e["event"] in pipe_events and isinstance(e.get("pipeline"), list):
            gs = e.get("gs") if e["event"] != "nn.recovery.commit" else e.get("gs") or e.get("recovery_id")
            per_block[b].append((e["ts"], tuple(e["pipeline"]), gs, e["event"]))
    # blocks whose pipeline changed first, then the others
    ranked = sorted(per_block, key=lambda b: (-len({p for _, p, _, _ in per_block[b]}), b))[:max_blocks]
    n = max(len(ranked), 1)
    fig, axes = plt.subplots(n, 1, figsize=(12, 1.0 + 1.6 * n), squeeze=False)
    if not ranked:
        axes[0][0].text(0.5, 0.5, "no block pipelines in this run", ha="center", va="center")
        axes[0][0].axis("off")
    for ax, b in zip([a[0] for a in axes], sorted(ranked)):
        changes = []
        for ts, pipe, gs, ev in sorted(per_block[b]):
            if not changes or changes[-1][1] != pipe or changes[-1][2] != gs:
                changes.append((ts, pipe, gs, ev))
        dns = _lane_order({d for _, p, _, _ in changes for d in p})
        y = {d: i for i, d in enumerate(dns)}
        for i, (ts, pipe, gs, ev) in enumerate(changes):
            end = changes[i + 1][0] if i + 1 < len(changes) else max(last_ts[b], ts + 0.01)
            for pos, d in enumerate(pipe):
                ax.plot([ts - t0, end - t0], [y[d], y[d]], lw=6, alpha=0.75,
                        color=plt.cm.tab10(i % 10), solid_capstyle="butt")
            ax.axvline(ts - t0, color="#999999", lw=0.6, ls=":")
            ax.text(ts - t0, -0.6, f"GS {gs}", fontsize=7, va="bottom")
        ax.set_yticks(range(len(dns)))
        ax.set_yticklabels(dns)
        ax.set_ylim(-0.8, len(dns) - 0.4)
        ax.invert_yaxis()
        ax.set_title(f"block {b}: pipeline membership and generation stamp", fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    axes[-1][0].set_xlabel("seconds since the run started")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_recovery_lengths(events, path: str, max_syncs: int = 8) -> None:
    syncs = [e for e in events if e["event"] == "dn.recovery.sync"
             and isinstance(e.get("answers"), list)][:max_syncs]
    fig, ax = plt.subplots(figsize=(max(6, 2.2 * max(len(syncs), 1) + 2), 4))
    if not syncs:
        ax.text(0.5, 0.5, "no block recovery (dn.recovery.sync) in this run", ha="center", va="center")
        ax.axis("off")
    x = 0
    ticks, labels = [], []
    for s in syncs:
        answers = [a for a in s["answers"] if isinstance(a, dict)]
        start = x
        for a in answers:
            ax.bar(x, a.get("len") or 0, color=STATE_COLORS.get(a.get("state"), "#7f7f7f"), width=0.8)
            ax.text(x, (a.get("len") or 0), f"{a.get('dn')}\n{a.get('len')}", ha="center",
                    va="bottom", fontsize=7)
            x += 1
        if s.get("len") is not None and answers:
            ax.hlines(s["len"], start - 0.45, x - 0.55, colors="#d62728", linestyles="--")
            ax.text(x - 0.55, s["len"], f" {s.get('rule')} -> {s['len']}", color="#d62728",
                    fontsize=8, va="center")
        ticks.append((start + x - 1) / 2)
        labels.append(f"block {s.get('block')}\nrecovery {s.get('recovery_id')}")
        x += 1.5
    if syncs:
        top = max([a.get("len") or 0 for s in syncs for a in s["answers"] if isinstance(a, dict)]
                  + [1])
        ax.set_ylim(0, top * 1.25)
        ax.set_xticks(ticks)
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_ylabel("replica length (bytes)")
        ax.legend(handles=[Patch(color=c, label=s) for s, c in STATE_COLORS.items()], fontsize=8,
                  loc="upper left", ncol=4)
        ax.set_title("Replica lengths answered in block recovery (dashed: length chosen)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_run_report(run_dir: str, verdict: Verdict) -> str:
    """Draw the plots and write report.html in `run_dir`; returns its path."""
    plots = os.path.join(run_dir, "plots")
    os.makedirs(plots, exist_ok=True)
    events, bulk = read_run_events(run_dir)
    t0 = min([e["ts"] for e in events] + [b[0] for b in bulk]) if (events or bulk) else 0.0
    plot_timeline(events, bulk, os.path.join(plots, "timeline.png"), t0)
    plot_pipelines(events, os.path.join(plots, "pipelines.png"), t0)
    plot_recovery_lengths(events, os.path.join(plots, "recovery_lengths.png"))
    out = os.path.join(run_dir, "report.html")
    with open(out, "w", encoding="utf-8") as f:
        f.write(render_run_html(verdict, run_dir))
    return out


def render_run_html(verdict: Verdict, run_dir: str) -> str:
    """report.html's text (templates/report.html.j2) for `verdict` of the run in
    `run_dir` (whose logs give the sample of malformed lines)."""
    done = set(exercised(verdict))
    checks = [{"id": c.id, "title": check_title(c.id), "status": c.status,
               "exercised": c.id in done, "violations": c.extra.get("violations"),
               "reason": c.reason,
               "evidence": [{"why": e.get("why", ""),
                             "rest": {k: v for k, v in e.items() if k != "why"}}
                            for e in c.evidence or []]}
              for c in verdict.checks]
    summary = {
        "exercised": [c["id"] for c in checks if c["exercised"]]
        + sorted(done - {c["id"] for c in checks}),
        "skipped": [c["id"] for c in checks if c["status"] == "skip" and not c["exercised"]],
        "failed": [c["id"] for c in checks if c["status"] == "fail"],
        "errors": [c["id"] for c in checks if c["status"] == "error"],
    }
    m = verdict.metrics or {}
    bad = _malformed_sample(run_dir) if m.get("malformed_lines") else []
    return render("report.html.j2", verdict=verdict, checks=checks, summary=summary,
                  expect=[e.to_json() for e in verdict.expect], metrics=m,
                  malformed={"count": m.get("malformed_lines", len(bad)), "lines": bad},
                  why=why_it_failed(verdict, checks), run=run_summary(run_dir, verdict))


def why_it_failed(verdict: Verdict, checks: list[dict]) -> list[dict]:
    """The reasons of a failed run, most direct first: the run's own errors, each failed
    or broken check with its evidence rows, each unmet expectation with its evidence
    items. Each reason: {kind, title, detail, rows: [{why, rest}], more}."""
    if verdict.passed:
        return []
    out = []
    if verdict.error:
        out.append({"kind": "run", "title": verdict.error, "detail": "", "rows": [], "more": 0})
    if verdict.run_status and verdict.run_status != "completed" or verdict.run_errors:
        out.append({"kind": "run", "title": f"run {verdict.run_status or 'errors'}",
                    "detail": "; ".join(verdict.run_errors or []), "rows": [], "more": 0})
    for c in checks:
        if c["status"] not in ("fail", "error"):
            continue
        rows = c["evidence"][:WHY_ROWS]
        total = max(c.get("violations") or 0, len(c["evidence"]))
        out.append({"kind": "check", "title": f"{c['id']} {c['status']}: {c['title']}",
                    "detail": c.get("reason") or "", "rows": rows, "more": total - len(rows)})
    for i in verdict.expect:
        if i.status not in ("fail", "error"):
            continue
        # an evidence item's sentence says what its fields hold
        rows = [{"why": e.get("what") or e.get("brief") or "", "rest": {}}
                for e in i.evidence or []]
        out.append({"kind": "expect", "title": f"expected {i.what}",
                    "detail": "" if rows or i.evidence is None else "no events behind it",
                    "rows": rows, "more": int(i.evidence_more or 0)})
    return out


def run_summary(run_dir: str, verdict: Verdict) -> dict:
    """What it takes to run the scenario again, and where everything of the run is:
    {description, seed, system, release, backend, started, duration_s, status, faults,
    command, event_logs, process_logs}, read from scenario.yaml and the harness's log."""
    harness = _read_jsonl(os.path.join(run_dir, "events", "harness.jsonl"))
    start = next((e for e in harness if e.get("event") == "harness.run.start"), {})
    end = next((e for e in harness if e.get("event") == "harness.run.end"), {})
    t0 = start.get("ts")
    description = ""
    try:
        with open(os.path.join(run_dir, "scenario.yaml"), encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        if isinstance(doc, dict):
            description = str(doc.get("description") or "").strip()
    except (OSError, UnicodeDecodeError, yaml.YAMLError):   # the report does without it
        pass
    system = start.get("system") or verdict.system or "minihdfs"
    release = start.get("system_version") or verdict.system_version
    seed = start.get("seed")
    backend = start.get("backend") or "local"
    scenario_file = os.path.join(os.path.abspath(run_dir), "scenario.yaml")
    cmd = ["hdfs-chaos", "run", scenario_file]
    if seed is not None:
        cmd += ["--seed", str(seed)]
    cmd += ["--backend", backend, "--out", os.path.dirname(os.path.abspath(run_dir))]
    if system != "minihdfs":
        cmd += ["--system", system] + (["--hadoop-version", str(release)] if release else [])
    return {
        "description": description, "seed": seed, "system": system, "release": release,
        "backend": backend,
        "started": (datetime.datetime.fromtimestamp(t0, datetime.timezone.utc)
                    .strftime("%Y-%m-%d %H:%M:%S UTC") if t0 else None),
        "duration_s": round(end["ts"] - t0, 1) if t0 and end.get("ts") else None,
        "status": end.get("status"),
        "faults": fault_schedule(harness, t0),
        "command": shlex.join(cmd),
        "event_logs": _files(run_dir, "events"),
        "process_logs": _files(run_dir, "logs"),
    }


def fault_schedule(harness: list[dict], t0: float | None) -> list[dict]:
    """The faults as they fired: {fault, kind, trigger, t, lag_s, targets, params,
    healed_t, error}, in firing order; t relative to the run's start."""
    def rel(ts):
        return round(ts - t0, 3) if ts is not None and t0 is not None else None
    out, by_id, trigger = [], {}, {}
    for e in harness:
        ev, fid = e.get("event"), e.get("fault")
        if ev == "harness.trigger" and e.get("action") == "inject":
            trigger[fid] = e
        elif ev in ("harness.fault.inject", "harness.fault.error"):
            if ev == "harness.fault.error" and e.get("kind") == "heal":
                if fid in by_id:
                    by_id[fid]["error"] = e.get("reason")
                continue
            trig = trigger.pop(fid, {})
            target = e.get("resolved") or e.get("target")
            item = {"fault": fid, "kind": e.get("kind"), "trigger": trig.get("trigger"),
                    "t": rel(e.get("ts")), "lag_s": trig.get("lag"),
                    "targets": ", ".join(map(str, target)) if isinstance(target, list)
                    else target, "params": e.get("params"), "healed_t": None,
                    "error": e.get("reason") if ev == "harness.fault.error" else None}
            out.append(item)
            by_id[fid] = item
        elif ev == "harness.fault.heal" and fid in by_id and by_id[fid]["healed_t"] is None:
            by_id[fid]["healed_t"] = rel(e.get("ts"))
    return out


def _read_jsonl(path: str) -> list[dict]:
    out = []
    try:
        with open(path, "rb") as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if isinstance(rec, dict):
                    out.append(rec)
    except OSError:
        pass
    return out


def _files(run_dir: str, sub: str) -> list[dict]:
    """{name, href, bytes} of every file in run_dir/sub (hrefs relative to the report)."""
    folder = os.path.join(run_dir, sub)
    names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
    return [{"name": n, "href": f"{sub}/{n}", "bytes": os.path.getsize(os.path.join(folder, n))}
            for n in names if os.path.isfile(os.path.join(folder, n))]


def _malformed_sample(run_dir: str, limit: int = 20) -> list[tuple[str, str]]:
    out = []
    ev_dir = os.path.join(run_dir, "events")
    for name in sorted(os.listdir(ev_dir)) if os.path.isdir(ev_dir) else []:
        with open(os.path.join(ev_dir, name), "rb") as f:
            for line in f:
                try:
                    rec = json.loads(line)
                    ok = isinstance(rec, dict) and rec.get("event") and rec.get("node") \
                        and isinstance(rec.get("ts"), (int, float))
                except ValueError:
                    ok = False
                if not ok:
                    out.append((name, line.decode("utf-8", "replace").rstrip()[:300]))
                    if len(out) >= limit:
                        return out
    return out
