"""The side-by-side comparison of one scenario run on the mini-HDFS and on Apache Hadoop
HDFS (`hdfs-chaos diff`, `run --system both`): what each system's run folder says, and
where the two differ. It owns the comparison only; running the scenarios is
harness/diffrun.py's.

Per scenario and system, from the run's verdict.json, final_state.json and events:
the verdict, each check's status (and the skip reason of a check the release cannot
observe), files closed, final lengths, the numbers of pipeline, lease and block
recoveries and of replacements, the pipeline after each pipeline recovery (the
`client.pipeline.recovered` events, in order) and the recovery latencies. Writes
diff.html (templates/diff.html.j2) with every difference highlighted, and diff.parquet
(pandas + pyarrow, as checks.parquet), one row per (scenario, system).

A check counts as a difference only when both systems judged it (a skip for lack of
observability on one side is shown, not counted); latencies are shown, never counted
(two systems' timings always differ); a count or a length is.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

from .verdict import Verdict, VerdictError

COUNTS = ("pipeline_recoveries", "lease_recoveries", "block_recoveries", "replacements")
LATENCY_KINDS = ("pipeline", "lease", "block")


@dataclasses.dataclass
class SystemResult:
    """One system's run of one scenario (or why there is none)."""
    system: str
    version: str | None = None
    run_id: str | None = None
    run_dir: str | None = None
    not_run: str | None = None            # why the scenario did not run on this system
    passed: bool | None = None
    run_status: str | None = None
    error: str | None = None
    checks: dict[str, str] = dataclasses.field(default_factory=dict)
    reasons: dict[str, str] = dataclasses.field(default_factory=dict)
    files_closed: int | None = None
    files_total: int | None = None
    lengths: dict[str, int | None] = dataclasses.field(default_factory=dict)
    counts: dict[str, int | None] = dataclasses.field(default_factory=dict)
    pipelines: list[list[str]] = dataclasses.field(default_factory=list)
    latencies: dict[str, list[float]] = dataclasses.field(default_factory=dict)

    @property
    def verdict(self) -> str:
        if self.not_run:
            return "not run"
        if self.passed is None:
            return "no verdict"
        return "PASS" if self.passed else "FAIL"


def _read_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _recovered_pipelines(run_dir: str) -> list[list[str]]:
    """The pipeline of every client.pipeline.recovered of the run, in time order."""
    found = []
    events = os.path.join(run_dir, "events")
    try:
        names = sorted(os.listdir(events))
    except OSError:
        return []
    for name in names:
        if not name.endswith(".jsonl"):
            continue
        with open(os.path.join(events, name), encoding="utf-8", errors="replace") as f:
            for line in f:
                # most lines are writes and acks: only parse the few that can match
                if "client.pipeline.recovered" not in line:
                    continue
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                if ev.get("event") == "client.pipeline.recovered":
                    found.append((ev.get("ts") or 0, [str(n) for n in ev.get("pipeline") or []]))
    return [p for _, p in sorted(found, key=lambda x: x[0])]


def load_result(run_dir: str, system: str | None = None) -> SystemResult:
    """What `run_dir` (a run folder with verdict.json) says; `system` if the verdict
    does not name it (a verdict written before it did: the mini-HDFS)."""
    data = _read_json(os.path.join(run_dir, "verdict.json")) or {}
    try:
        verdict = Verdict.from_json(data) if data else None
    except VerdictError as e:   # not a verdict: the side says so, as it does of none
        verdict, broken = None, f"verdict.json: {e}"
    else:
        broken = "no verdict.json"
    res = SystemResult(system=(verdict and verdict.system) or system or "minihdfs",
                       version=verdict.system_version if verdict else None,
                       run_id=(verdict and verdict.run_id) or os.path.basename(run_dir.rstrip("/")),
                       run_dir=run_dir)
    if verdict is None:
        res.error = broken
        return res
    res.passed = bool(verdict.passed)
    res.run_status = verdict.run_status
    res.error = verdict.error or ("; ".join(verdict.run_errors or []) or None)
    for c in verdict.checks:
        res.checks[c.id] = c.status
        if c.reason:
            res.reasons[c.id] = c.reason
    metrics = verdict.metrics or {}
    res.counts = {k: metrics.get(k) for k in COUNTS}
    lat = metrics.get("recovery_latencies_s") or {}
    res.latencies = {k: [float(x) for x in lat.get(k) or []] for k in LATENCY_KINDS}
    final = _read_json(os.path.join(run_dir, "final_state.json"))
    if isinstance(final, dict):
        files = [f for f in final.get("files") or [] if isinstance(f, dict)]
        res.files_total = len(files)
        res.files_closed = sum(1 for f in files if f.get("closed"))
        res.lengths = {str(f.get("path")): f.get("len") for f in files}
    res.pipelines = _recovered_pipelines(run_dir)
    return res


def not_run(system: str, reason: str, version: str | None = None) -> SystemResult:
    return SystemResult(system=system, version=version, not_run=reason)


def differences(a: SystemResult, b: SystemResult) -> dict[str, str]:
    """{field: "mini-HDFS value vs Hadoop value"} of everything the two runs disagree
    on; empty when either did not run. Field names: verdict, check:<id>, files_closed,
    length:<path>, <count>, pipelines."""
    if a.not_run or b.not_run:
        return {}
    out: dict[str, str] = {}

    def differ(name, x, y):
        if x != y:
            out[name] = f"{_show(x)} vs {_show(y)}"

    differ("verdict", a.verdict, b.verdict)
    for cid in sorted(set(a.checks) | set(b.checks), key=_check_order):
        if cid in a.reasons or cid in b.reasons:
            continue   # one side could not judge it: shown, not a difference
        differ(f"check:{cid}", a.checks.get(cid), b.checks.get(cid))
    differ("files_closed", a.files_closed, b.files_closed)
    for path in sorted(set(a.lengths) | set(b.lengths)):
        differ(f"length:{path}", a.lengths.get(path), b.lengths.get(path))
    for k in COUNTS:
        differ(k, a.counts.get(k), b.counts.get(k))
    differ("pipelines", a.pipelines, b.pipelines)
    return out


def _check_order(cid: str) -> int:
    from .checks import CHECK_IDS
    return CHECK_IDS.index(cid) if cid in CHECK_IDS else len(CHECK_IDS)


def _show(x) -> str:
    if x is None:
        return "—"
    if isinstance(x, list):
        return " | ".join("[" + ",".join(p) + "]" if isinstance(p, list) else str(p) for p in x) or "none"
    return str(x)


@dataclasses.dataclass
class ScenarioDiff:
    scenario: str
    results: dict[str, SystemResult]      # system -> its result
    diffs: dict[str, str]


def compare(scenario: str, mini: SystemResult, hadoop: SystemResult) -> ScenarioDiff:
    return ScenarioDiff(scenario, {"minihdfs": mini, "hadoop": hadoop}, differences(mini, hadoop))


def table(diffs: list[ScenarioDiff]):
    """The Parquet table: one row per (scenario, system)."""
    import pandas as pd
    from .checks import CHECK_IDS
    rows = []
    for d in diffs:
        for system, r in d.results.items():   # the systems compared, in compare()'s order
            row = {"scenario": d.scenario, "system": system, "version": r.version,
                   "run_id": r.run_id, "verdict": r.verdict, "not_run_reason": r.not_run,
                   "run_status": r.run_status, "files_closed": r.files_closed,
                   "files_total": r.files_total,
                   "final_lengths": json.dumps(r.lengths, sort_keys=True),
                   "pipelines_after_recovery": r.pipelines,
                   "differences": sorted(d.diffs)}
            row.update({k: r.counts.get(k) for k in COUNTS})
            row.update({f"{k}_latencies_s": r.latencies.get(k, []) for k in LATENCY_KINDS})
            row.update({f"check_{c}": r.checks.get(c) for c in CHECK_IDS})
            row.update({f"reason_{c}": r.reasons.get(c) for c in CHECK_IDS})
            rows.append(row)
    frame = pd.DataFrame(rows)
    for k in COUNTS + ("files_closed", "files_total"):
        if k in frame:
            frame[k] = frame[k].astype("Int64")
    return frame


def write_diff(diffs: list[ScenarioDiff], out_dir: str) -> str:
    """diff.html and diff.parquet in `out_dir`; returns the path of diff.html."""
    from .checks import CHECK_IDS
    from .templating import render
    os.makedirs(out_dir, exist_ok=True)
    table(diffs).to_parquet(os.path.join(out_dir, "diff.parquet"), index=False)
    scen = []
    for d in diffs:
        sides = []
        for system, r in d.results.items():   # the systems compared, in compare()'s order
            link = None
            if r.run_dir and os.path.exists(os.path.join(r.run_dir, "report.html")):
                link = os.path.relpath(os.path.join(r.run_dir, "report.html"), out_dir)
            sides.append({"r": r, "link": link,
                          "label": system + (f" {r.version}" if r.version else "")})
        scen.append({"name": d.scenario, "sides": sides, "diffs": d.diffs,
                     "differ": bool(d.diffs)})
    path = os.path.join(out_dir, "diff.html")
    with open(path, "w", encoding="utf-8") as f:
        f.write(render("diff.html.j2", scenarios=scen, check_ids=CHECK_IDS,
                       counts=COUNTS, kinds=LATENCY_KINDS, show=_show,
                       differing=sum(1 for d in diffs if d.diffs)))
    return path
