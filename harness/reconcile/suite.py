"""The summary of many runs: which check passed, failed or skipped in which scenario, and
how long recoveries took. Writes, in one folder:

- index.html (templates/index.html.j2): a table of scenarios x checks (cells "2/3 pass",
  coloured by the worst outcome) with the checks each scenario's runs exercised, the
  list of runs with links to their reports and their exercised checks, and the plots;
- checks.parquet: the checks table, one row per (run, check): run_id, scenario, passed,
  check, status, exercised, evidence_rows, reason (why a skip: not observable);
- plots/latency_<kind>.png: recovery-latency distributions per scenario (pipeline,
  lease, block).
"""

from __future__ import annotations

import os
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from .checks import CHECK_IDS  # noqa: E402
from .templating import exercised, render  # noqa: E402
from .verdict import Verdict  # noqa: E402

KINDS = ("pipeline", "lease", "block")


def checks_table(verdicts: list[Verdict]) -> pd.DataFrame:
    rows = []
    for v in verdicts:
        done = set(exercised(v))
        for c in v.checks:
            rows.append({"run_id": v.run_id, "scenario": v.scenario,
                         "passed": bool(v.passed), "check": c.id,
                         "status": c.status, "exercised": c.id in done,
                         "evidence_rows": len(c.evidence or []),
                         "reason": c.reason})
    return pd.DataFrame(rows, columns=["run_id", "scenario", "passed", "check", "status",
                                       "exercised", "evidence_rows", "reason"])


def write_suite_report(verdicts: list[Verdict], out_dir: str, run_dirs: dict | None = None) -> str:
    """Write index.html, checks.parquet and plots/ in `out_dir`; returns index.html."""
    os.makedirs(os.path.join(out_dir, "plots"), exist_ok=True)
    table = checks_table(verdicts)
    table.to_parquet(os.path.join(out_dir, "checks.parquet"), index=False)
    plots = [p for p in (_latency_plot(verdicts, k, out_dir) for k in KINDS) if p]
    path = os.path.join(out_dir, "index.html")
    with open(path, "w", encoding="utf-8") as f:
        f.write(_render(verdicts, table, plots, out_dir, run_dirs or {}))
    return path


def _latency_plot(verdicts: list[Verdict], kind: str, out_dir: str) -> str | None:
    by_scenario: dict[str, list[float]] = defaultdict(list)
    for v in verdicts:
        lat = ((v.metrics or {}).get("recovery_latencies_s") or {}).get(kind) or []
        by_scenario[v.scenario or "?"].extend(float(x) for x in lat)
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


def _cell(statuses: list[str]) -> tuple[str, str]:
    n = len(statuses)
    if "error" in statuses:
        return "error", f"{statuses.count('error')}/{n} error"
    if "fail" in statuses:
        return "fail", f"{statuses.count('fail')}/{n} fail"
    if "pass" in statuses:
        return "pass", f"{statuses.count('pass')}/{n} pass"
    return "skip", "skip"


def _check_ids(table: pd.DataFrame) -> list[str]:
    """The checks of this verifier, then any other id the verdicts name (a verdict
    written by another version), so that no check's outcome goes unshown."""
    other = sorted({str(c) for c in table["check"].dropna()} - set(CHECK_IDS))
    return list(CHECK_IDS) + other


def _render(verdicts, table: pd.DataFrame, plots, out_dir, run_dirs) -> str:
    check_ids = _check_ids(table)
    order = {c: i for i, c in enumerate(check_ids)}
    done = {id(v): exercised(v) for v in verdicts}
    scenarios = []
    # every scenario of the verdicts: a run without checks (interrupted) still counts
    for scenario in dict.fromkeys(v.scenario for v in verdicts):
        group = table.loc[table["scenario"] == scenario]
        own = [v for v in verdicts if v.scenario == scenario]
        runs = len(own)
        cells = []
        for c in check_ids:
            sel = group.loc[group["check"] == c]
            st = sel["status"].tolist()
            cls, text = _cell(st) if st else ("skip", "")
            # a Hadoop release that cannot expose the check's inputs says why
            why = sorted({str(r) for r in sel["reason"].dropna()})
            cells.append({"cls": cls, "text": "not observable" if why and cls == "skip" else text,
                          "title": "; ".join(why)})
        # per check, how many of the scenario's runs exercised it
        counts: dict[str, int] = defaultdict(int)
        for v in own:
            for c in set(done[id(v)]):
                counts[c] += 1
        scenarios.append({
            "name": str(scenario), "runs": runs, "cells": cells,
            "passed": sum(1 for v in own if v.passed),
            "exercised": [{"id": c, "runs": counts[c]}
                          for c in sorted(counts, key=lambda c: order.get(c, len(order)))]})
    # failures first (the rows a reader came for), then by name
    scenarios.sort(key=lambda s: (s["passed"] == s["runs"], s["name"]))
    rows = []
    for v in verdicts:
        rid = v.run_id
        rdir = run_dirs.get(rid)
        link = None
        if rdir and os.path.exists(os.path.join(rdir, "report.html")):
            link = os.path.relpath(os.path.join(rdir, "report.html"), out_dir)
        rows.append({"run_id": str(rid), "link": link, "scenario": str(v.scenario),
                     "passed": bool(v.passed), "exercised": done[id(v)],
                     "checks": len(v.checks),
                     "failed": [c.id for c in v.checks if c.status in ("fail", "error")],
                     "unmet": [str(e.what) for e in v.unmet],
                     "error": v.error})
    rows.sort(key=lambda r: r["passed"])   # failed runs first, else in the order given
    reasons = [{"check": c, "reason": r, "scenarios": sorted({str(x) for x in g["scenario"]})}
               for (c, r), g in table.dropna(subset=["reason"]).groupby(["check", "reason"])]
    return render("index.html.j2", runs_total=len(verdicts), reasons=reasons,
                  runs_passed=sum(1 for v in verdicts if v.passed),
                  check_ids=check_ids, scenarios=scenarios, plots=plots, runs=rows)
