"""The summary of many runs: which check passed, failed or skipped in which scenario, and
how long recoveries took. Writes, in one folder:

- index.html: a table of scenarios x checks (cells "2/3 pass", coloured by the worst
  outcome), the list of runs with links to their reports, and the plots;
- checks.parquet: the checks table, one row per (run, check): run_id, scenario, passed,
  check, status, evidence_rows;
- plots/latency_<kind>.png: recovery-latency distributions per scenario (pipeline,
  lease, block).
"""

from __future__ import annotations

import html
import os
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from .checks import CHECK_IDS

KINDS = ("pipeline", "lease", "block")


def checks_table(verdicts: list[dict]) -> pd.DataFrame:
    rows = []
    for v in verdicts:
        for c in v.get("checks", []):
            rows.append({"run_id": v.get("run_id"), "scenario": v.get("scenario"),
                         "passed": bool(v.get("passed")), "check": c.get("id"),
                         "status": c.get("status"), "evidence_rows": len(c.get("evidence") or [])})
    return pd.DataFrame(rows, columns=["run_id", "scenario", "passed", "check", "status",
                                       "evidence_rows"])


def write_suite_report(verdicts: list[dict], out_dir: str, run_dirs: dict | None = None) -> str:
    """Write index.html, checks.parquet and plots/ in `out_dir`; returns index.html."""
    os.makedirs(os.path.join(out_dir, "plots"), exist_ok=True)
    table = checks_table(verdicts)
    table.to_parquet(os.path.join(out_dir, "checks.parquet"), index=False)
    plots = [p for p in (_latency_plot(verdicts, k, out_dir) for k in KINDS) if p]
    path = os.path.join(out_dir, "index.html")
    with open(path, "w", encoding="utf-8") as f:
        f.write(_render(verdicts, table, plots, out_dir, run_dirs or {}))
    return path


def _latency_plot(verdicts: list[dict], kind: str, out_dir: str) -> str | None:
    by_scenario: dict[str, list[float]] = defaultdict(list)
    for v in verdicts:
        lat = ((v.get("metrics") or {}).get("recovery_latencies_s") or {}).get(kind) or []
        by_scenario[v.get("scenario") or "?"].extend(float(x) for x in lat)
    by_scenario = {k: vs for k, vs in by_scenario.items() if vs}
    if not by_scenario:
        return None
    names = sorted(by_scenario)
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.45 * len(names)))
    data = [by_scenario[n] for n in names]
    try:
        ax.boxplot(data, orientation="horizontal", showfliers=False)
    except TypeError:  # matplotlib < 3.10
        ax.boxplot(data, vert=False, showfliers=False)
    for i, n in enumerate(names, start=1):
        ys = [i] * len(by_scenario[n])
        ax.scatter(by_scenario[n], ys, s=12, alpha=0.6, color="#1f77b4", zorder=3)
    ax.set_yticks(range(1, len(names) + 1))
    ax.set_yticklabels(names, fontsize=8)
    ax.set_xlabel("seconds")
    ax.set_title(f"{kind} recovery latency per scenario")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    rel = f"plots/latency_{kind}.png"
    fig.savefig(os.path.join(out_dir, rel), dpi=110)
    plt.close(fig)
    return rel


CSS = """
body{font-family:system-ui,sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;font-size:12px} td,th{border:1px solid #ddd;padding:3px 6px;text-align:center}
td.name{text-align:left} .pass{background:#e3f6e3} .fail{background:#fbe1e1} .skip{background:#f1f1f1;color:#888}
.error{background:#ffe9c2} img{max-width:100%}
"""


def _cell(statuses: list[str]) -> tuple[str, str]:
    n = len(statuses)
    if "error" in statuses:
        return "error", f"{statuses.count('error')}/{n} error"
    if "fail" in statuses:
        return "fail", f"{statuses.count('fail')}/{n} fail"
    if "pass" in statuses:
        return "pass", f"{statuses.count('pass')}/{n} pass"
    return "skip", "skip"


def _render(verdicts, table: pd.DataFrame, plots, out_dir, run_dirs) -> str:
    e = html.escape
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>hdfs-chaos suite</title>"
             f"<style>{CSS}</style></head><body><h1>hdfs-chaos: {len(verdicts)} runs, "
             f"{sum(1 for v in verdicts if v.get('passed'))} passed</h1>"]
    parts.append("<h2>Checks per scenario</h2><table><tr><th>scenario</th><th>runs</th><th>passed</th>"
                 + "".join(f"<th>{c}</th>" for c in CHECK_IDS) + "</tr>")
    for scenario, group in sorted(table.groupby("scenario"), key=lambda g: str(g[0])):
        runs = group["run_id"].nunique()
        passed = group.drop_duplicates("run_id")["passed"].sum()
        cells = []
        for c in CHECK_IDS:
            st = group.loc[group["check"] == c, "status"].tolist()
            cls, text = _cell(st) if st else ("skip", "")
            cells.append(f"<td class='{cls}'>{e(text)}</td>")
        parts.append(f"<tr><td class='name'>{e(str(scenario))}</td><td>{runs}</td>"
                     f"<td class='{'pass' if passed == runs else 'fail'}'>{passed}/{runs}</td>"
                     + "".join(cells) + "</tr>")
    parts.append("</table>")
    for p in plots:
        parts.append(f"<h2>{e(os.path.basename(p))}</h2><img src='{e(p)}'>")
    parts.append("<h2>Runs</h2><table><tr><th>run</th><th>scenario</th><th>passed</th><th>failed checks</th></tr>")
    for v in verdicts:
        rid = v.get("run_id")
        link = e(str(rid))
        rdir = run_dirs.get(rid)
        if rdir and os.path.exists(os.path.join(rdir, "report.html")):
            rel = os.path.relpath(os.path.join(rdir, "report.html"), out_dir)
            link = f"<a href='{e(rel)}'>{link}</a>"
        failed = ", ".join(c["id"] for c in v.get("checks", []) if c.get("status") in ("fail", "error"))
        parts.append(f"<tr><td class='name'>{link}</td><td class='name'>{e(str(v.get('scenario')))}</td>"
                     f"<td class='{'pass' if v.get('passed') else 'fail'}'>{v.get('passed')}</td>"
                     f"<td class='name'>{e(failed)}</td></tr>")
    parts.append("</table></body></html>")
    return "".join(parts)
