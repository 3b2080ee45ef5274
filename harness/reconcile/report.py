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

The plots are drawn from the run's own log files, read here directly (one run is
bounded; the checks themselves never do this). The page is templates/report.html.j2; it
references the PNGs relatively, so the folder can be moved or served as it is.
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from .templating import check_title, exercised, render  # noqa: E402

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
    for k, (node, a, b, label, color) in enumerate(spans):
        if node in y:
            lift = 0.22 * (k % 2)
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
        Patch(color="#aaaaaa", label="writes/acks/renewals")]
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
    """(node, start, end, label, color) for each recovery seen in the events."""
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
            rec_start[(e.get("block"), e.get("recovery_id"))] = e
        elif ev == "nn.recovery.commit":
            s = rec_start.pop((e.get("block"), e.get("recovery_id")), None)
            if s is not None:
                spans.append(("nn", s["ts"], e["ts"], f"block recovery {e.get('block')} len {e.get('len')}", "#9467bd"))
        elif ev == "nn.lease.recover" and e.get("result") in ("recovering", "closed"):
            lease_rec.setdefault(e.get("path"), e["ts"])
        elif ev == "nn.file.close" and e.get("path") in lease_rec:
            spans.append(("nn", lease_rec.pop(e.get("path")), e["ts"], f"lease recovery {e.get('path')}", "#2ca02c"))
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


def write_run_report(run_dir: str, verdict: dict) -> str:
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


def render_run_html(verdict: dict, run_dir: str) -> str:
    """report.html's text (templates/report.html.j2) for `verdict` of the run in
    `run_dir` (whose logs give the sample of malformed lines)."""
    done = set(exercised(verdict))
    checks = [{"id": c.get("id"), "title": check_title(c.get("id")), "status": c.get("status"),
               "exercised": c.get("id") in done, "violations": c.get("violations"),
               "reason": c.get("reason"),
               "evidence": [{"why": e.get("why", ""),
                             "rest": {k: v for k, v in e.items() if k != "why"}}
                            for e in c.get("evidence") or []]}
              for c in verdict.get("checks", [])]
    summary = {
        "exercised": [c["id"] for c in checks if c["exercised"]]
        + sorted(done - {c["id"] for c in checks}),
        "skipped": [c["id"] for c in checks if c["status"] == "skip" and not c["exercised"]],
        "failed": [c["id"] for c in checks if c["status"] == "fail"],
        "errors": [c["id"] for c in checks if c["status"] == "error"],
    }
    m = verdict.get("metrics") or {}
    bad = _malformed_sample(run_dir) if m.get("malformed_lines") else []
    return render("report.html.j2", verdict=verdict, checks=checks, summary=summary,
                  expect=verdict.get("expect") or [], metrics=m,
                  malformed={"count": m.get("malformed_lines", len(bad)), "lines": bad})


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
