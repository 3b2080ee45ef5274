"""The explorer's HTML summary (out/index.html): the space (failure points x faults) and
how much of it ran, schedules per hour and how one schedule's time splits, outcomes by
signature, and the findings with their evidence and a timeline each."""

from __future__ import annotations

import html
import json
import os
import statistics
from collections import Counter

from .state import ExploreState


def _e(x) -> str:
    return html.escape(str(x))


def summary_numbers(state: ExploreState) -> dict:
    results = list(state.results.values())
    explored = [r for r in results if not r.get("shrink")]
    d1 = [r for r in explored if r.get("depth") == 1]
    elapsed = max(state.elapsed, 1e-6)
    split: dict[str, float] = {}
    timed = [r["timings"] for r in results if r.get("timings")]
    # format and daemons are parts of start (Hadoop), client_jvm of workload
    for key in ("start", "format", "daemons", "workload", "client_jvm", "recovery_wait",
                "quiescence", "stop"):
        vals = [t[key] for t in timed if key in t]
        if vals:
            split[key] = round(statistics.median(vals), 2)
    walls = [r["wall"] for r in results if isinstance(r.get("wall"), (int, float))]
    if walls:
        split["run (wall)"] = round(statistics.median(walls), 2)
    if state.verified:
        split["verify (per run, batched)"] = round(state.verify_s / state.verified, 2)
    return {"schedules": len(results), "explored": len(explored), "depth1": len(d1),
            "depth2": len(explored) - len(d1), "space_depth1": state.space,
            "coverage_depth1": round(len(d1) / state.space, 3) if state.space else 0.0,
            "elapsed_s": round(elapsed, 1), "per_hour": round(len(results) / elapsed * 3600, 1),
            "verified_per_hour": round(state.verified / elapsed * 3600, 1),
            "outcomes": dict(Counter(r["outcome"] for r in results)),
            "findings": len(state.findings), "median_split_s": split,
            "points": len(state.points)}


def write_summary(explorer) -> str:
    state = explorer.state
    n = summary_numbers(state)
    with open(os.path.join(explorer.out, "summary.json"), "w") as f:
        json.dump(n, f, indent=1)
    rows = []
    by_sig = Counter(r["signature"].split(" + ")[0] for r in state.results.values()
                     if not r.get("shrink"))
    for sig, count in sorted(by_sig.items()):
        rows.append(f"<tr><td>{_e(sig)}</td><td>{count}</td></tr>")
    findings = []
    for sig, g in sorted(state.findings.items()):
        info = g.get("finding") or {}
        ev = "".join(f"<li><b>{_e(c['check'])}</b>: <code>{_e(json.dumps(c['evidence'], default=str)[:600])}</code></li>"
                     for c in info.get("evidence", []))
        errs = "".join(f"<li>{_e(x)}</li>" for x in (info.get("errors") or []))
        tl = "".join(f"<tr><td>{t['t']:.3f}</td><td>{_e(t['node'])}</td><td>{_e(t['event'])}</td>"
                     f"<td><code>{_e(t['detail'])}</code></td></tr>" for t in info.get("timeline", []))
        findings.append(
            f"<h3>{_e(sig)}</h3><p>{len(g['members'])} schedule(s); reproducer "
            f"<a href='{_e(g.get('reproducer', ''))}'>{_e(g.get('reproducer', 'not written'))}</a>"
            f"{' shrunk by ' + _e(', '.join(info.get('shrunk_by', []))) if info.get('shrunk_by') else ''}; "
            f"run <code>{_e(info.get('run_dir'))}</code></p>"
            f"<ul>{ev}{errs}</ul><details><summary>timeline</summary><table>"
            f"<tr><th>t (s)</th><th>node</th><th>event</th><th>detail</th></tr>{tl}</table></details>")
    split = "".join(f"<tr><td>{_e(k)}</td><td>{v}</td></tr>" for k, v in n["median_split_s"].items())
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>hdfs-chaos explore</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:2px 6px;font-size:90%}}code{{font-size:85%}}</style></head><body>
<h1>Exploration of {_e(os.path.basename(state.base))} on {_e(state.system)}</h1>
{f"<p><b>{_e(state.note)}</b></p>" if state.note else ''}
<p>{n['points']} failure points; depth-1 space (points x applicable faults) {n['space_depth1']},
of which {n['depth1']} ran ({n['coverage_depth1'] * 100:.1f}%); {n['depth2']} depth-2 schedules;
{n['schedules']} runs in all in {n['elapsed_s']:.0f}s: <b>{n['per_hour']:.0f} schedules/hour</b>.
Outcomes: {_e(n['outcomes'])}.</p>
<h2>Time of one schedule (median, seconds)</h2><table>{split}</table>
<h2>Findings ({n['findings']})</h2>{''.join(findings) or '<p>none</p>'}
<h2>Signatures tried (first fault)</h2><table><tr><th>point kind | fault | relation</th><th>runs</th></tr>{''.join(rows)}</table>
</body></html>"""
    path = os.path.join(explorer.out, "index.html")
    with open(path, "w") as f:
        f.write(page)
    return path
