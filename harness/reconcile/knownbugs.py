"""The known-bug matrix (`hdfs-chaos known-bugs`): for each JIRA and release, what the
scenario's `known_bug:` declares (fail on an affected release, pass on a fixed one and on
the mini-HDFS, which behaves as the fixed release) against what its runs' verdicts say.
It owns the judgement only; running the scenarios is harness/knownbugs.py's.

A cell is *as declared* when every run on an affected release failed with one of the
JIRA's symptoms among its failures (a failed check id such as P1, or an unmet
expectation whose `what` starts with the symptom's text), and every run on a fixed
release (or the mini-HDFS) passed. A run that failed on an affected release for another
reason only, a run that passed there, and any failed run on a fixed release make the
cell not as declared, and its `why` says which.

`cells()` is a pure function of the verdicts (verdict.Verdict); `format_matrix()`
the terminal's table; `write_matrix()` known-bugs.html and known-bugs.parquet.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Iterable, Sequence

from .verdict import CheckResult, Verdict

MINIHDFS = "minihdfs"
# what a check's status or an expectation's status must be to count as a failure
FAILED_CHECK = ("fail", "error")
MET_EXPECTATION = ("pass", "skip", "not_observable")
EVIDENCE_WIDTH = 240
# evidence fields that say nothing to a reader of the matrix
_NOISE = ("ts", "eid", "run_id", "seq")


@dataclasses.dataclass(frozen=True)
class Failure:
    """One reason a run failed: a check (`kind` check, `key` its id), an unmet expectation
    (`kind` expect, `key` its `what`), or the run itself (`kind` run)."""
    kind: str
    key: str
    evidence: str = ""
    broken: bool = False              # a check that broke (status error) judged nothing

    def text(self, symptom: bool = False) -> str:
        """'check D2: <evidence>', 'unmet: <what>: <evidence>'; a failure that shows the
        JIRA's symptom says so ('check D2 [symptom]: ...')."""
        label = {"check": f"check {self.key}" + (" broke" if self.broken else ""),
                 "expect": f"unmet: {self.key}"}.get(self.kind, self.key)
        label += " [symptom]" if symptom else ""
        return f"{label}: {self.evidence}" if self.evidence else label


@dataclasses.dataclass
class Cell:
    """One JIRA on one release: what is declared and what the runs did."""
    jira: str
    bug: str
    release: str                      # a Hadoop release such as 3.3.6, or "minihdfs"
    expected: str                     # "fail" or "pass"
    open: bool = False                # the JIRA is fixed in no release we run
    fixed_in: str = ""
    symptom: tuple[str, ...] = ()
    runs: int = 0
    failed: int = 0
    matched: int = 0                  # failed runs with a symptom among their failures
    as_declared: bool = False
    why: str = ""                     # what is not as declared ("" when it is)
    failures: list[str] = dataclasses.field(default_factory=list)   # distinct, in run order
    symptoms_seen: list[str] = dataclasses.field(default_factory=list)
    run_dirs: list[str] = dataclasses.field(default_factory=list)
    not_run: str | None = None

    @property
    def system(self) -> str:
        return MINIHDFS if self.release == MINIHDFS else "hadoop"

    @property
    def expected_text(self) -> str:
        return "fail (open)" if self.expected == "fail" and self.open else self.expected

    @property
    def got(self) -> str:
        if self.not_run:
            return "not run"
        text = f"{self.failed} of {self.runs} failed"
        if self.expected == "fail" and self.failed:
            text += f", {self.matched} with the symptom"
        return text


def expected_of(bug: Any, release: str) -> str:
    """"fail" on a release the bug affects, "pass" on a fixed one and on the mini-HDFS."""
    if release == MINIHDFS or release in tuple(bug.fixed):
        return "pass"
    if release in tuple(bug.affects):
        return "fail"
    raise ValueError(f"{bug.jira} names no release {release}")


def failures(verdict: Verdict) -> list[Failure]:
    """Why a run failed, from its verdict: each failed (or broken) check with its
    evidence, each unmet expectation with the events behind it, the run's own error."""
    from .evidence import brief
    out = []
    for c in verdict.checks:
        if c.status in FAILED_CHECK:
            out.append(Failure("check", str(c.id), _check_evidence(c),
                               broken=c.status == "error"))
    for e in verdict.expect:
        if e.status not in MET_EXPECTATION:
            out.append(Failure("expect", str(e.what),
                               brief(e.to_json(), width=EVIDENCE_WIDTH)))
    if verdict.error:
        out.append(Failure("run", f"error: {verdict.error}"))
    if verdict.run_status not in (None, "completed"):
        out.append(Failure("run", f"run {verdict.run_status}: "
                                  + "; ".join(verdict.run_errors or [])))
    return out


def _check_evidence(check: CheckResult) -> str:
    """A failed check's evidence in a line: its reason, else its first rows (the `why`
    a row gives, else its fields), and how many more rows there are."""
    if check.reason:
        return _cut(str(check.reason))
    rows = check.evidence or []
    if isinstance(rows, str):
        return _cut(rows)
    parts = []
    for row in rows[:2]:
        if isinstance(row, dict):
            parts.append(str(row.get("why")) if row.get("why") else
                         ", ".join(f"{k}={v}" for k, v in row.items()
                                   if k not in _NOISE and v is not None))
        else:
            parts.append(str(row))
    more = f" (+{len(rows) - 2} more rows)" if len(rows) > 2 else ""
    return _cut("; ".join(parts)) + more


def _cut(text: str, width: int = EVIDENCE_WIDTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 1] + "…"


def symptoms_in(found: Iterable[Failure], symptom: Sequence[str]) -> list[str]:
    """The symptoms among a run's failures: a failed check whose id is the symptom, or an
    unmet expectation whose `what` starts with it. A broken check (status error) fails
    the run but judged nothing, so it shows no symptom."""
    found = list(found)
    out = []
    for s in symptom:
        if any((f.kind == "check" and f.key == s and not f.broken)
               or (f.kind == "expect" and f.key.startswith(s)) for f in found):
            out.append(s)
    return out


def cell(bug: Any, release: str, verdicts: Sequence[Verdict], not_run: str | None = None) -> Cell:
    """The cell of `bug` (a scenario's KnownBug) on `release` from the verdicts of its runs
    there (none when it did not run: `not_run` says why)."""
    c = Cell(jira=bug.jira, bug=bug.bug, release=release, expected=expected_of(bug, release),
             open=not tuple(bug.fixed), fixed_in=bug.fixed_in, symptom=tuple(bug.symptom),
             runs=len(verdicts), not_run=not_run)
    seen: set[str] = set()
    for v in verdicts:
        if v.run_dir:
            c.run_dirs.append(str(v.run_dir))
        if v.passed:
            continue
        c.failed += 1
        found = _failures_of(v)
        matched = symptoms_in(found, c.symptom) if c.expected == "fail" else []
        c.matched += bool(matched)
        for s in matched:
            if s not in c.symptoms_seen:
                c.symptoms_seen.append(s)
        # the failures that show the symptom first: they are what the cell is about
        flagged = [(f, bool(symptoms_in([f], matched))) for f in found]
        for f, is_symptom in [x for x in flagged if x[1]] + [x for x in flagged if not x[1]]:
            text = f.text(is_symptom)
            if text not in seen:
                seen.add(text)
                c.failures.append(text)
    c.why = _why(c)
    c.as_declared = not c.why
    return c


def _failures_of(verdict: Verdict) -> list[Failure]:
    found = failures(verdict)
    if not found:   # a verdict that did not pass names no reason: say so rather than nothing
        found = [Failure("run", "failed, naming no check or expectation")]
    return found


def _why(c: Cell) -> str:
    """What makes the cell not as declared; "" when it is."""
    if c.not_run:
        return f"not run: {c.not_run}"
    if not c.runs:
        return "no run"
    passed = c.runs - c.failed
    if c.expected == "pass":
        if not c.failed:
            return ""
        where = "the mini-HDFS (it behaves as the fixed release)" if c.release == MINIHDFS \
            else ("a release the bug does not affect" if c.open else "a fixed release")
        return f"{c.failed} of {c.runs} runs failed on {where}"
    reasons = []
    if passed:
        reasons.append(f"{passed} of {c.runs} runs passed: the bug did not show"
                       + (" every time" if c.failed else ""))
    other = c.failed - c.matched
    if other:
        reasons.append(f"{other} of {c.runs} runs failed, but not for the JIRA's reason "
                       f"(symptom {', '.join(c.symptom)} not among their failures)")
    return "; ".join(reasons)


def cells(runs: Iterable[tuple[Any, str, Sequence[dict], str | None]]) -> list[Cell]:
    """The matrix: one cell per (bug, release, verdicts of its runs, why not run or None),
    in the order given."""
    return [cell(bug, release, verdicts, not_run) for bug, release, verdicts, not_run in runs]


def release_order(release: str) -> tuple:
    """Releases by version number, the mini-HDFS last."""
    if release == MINIHDFS:
        return (1, ())
    return (0, tuple(int(p) if p.isdigit() else 0 for p in release.split(".")))


def all_as_declared(matrix: Sequence[Cell]) -> bool:
    return bool(matrix) and all(c.as_declared for c in matrix)


# -- output ------------------------------------------------------------------------------------

def format_matrix(matrix: Sequence[Cell], failures_per_cell: int = 3) -> str:
    """The matrix as the terminal shows it: a line per cell (JIRA, release, expected, got,
    as declared or why not), then the failures of each cell that has some, with their
    evidence; and a last line counting the cells as declared."""
    head = ("JIRA", "release", "expected", "got", "as declared")
    rows = [(c.jira, c.release, c.expected_text, c.got, "yes" if c.as_declared else "NO")
            for c in matrix]
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(4)]
    lines = ["  ".join(f"{v:<{w}}" for v, w in zip(head[:4], widths)) + "  " + head[4]]
    for c, r in zip(matrix, rows):
        lines.append("  ".join(f"{v:<{w}}" for v, w in zip(r[:4], widths)) + "  " + r[4]
                     + ("" if c.as_declared else f": {c.why}"))
        shown = c.failures[:failures_per_cell]
        for f in shown:
            lines.append(f"    {_cut(f, 160)}")
        if len(c.failures) > len(shown):
            lines.append(f"    ... and {len(c.failures) - len(shown)} more (known-bugs.html)")
    ok = sum(c.as_declared for c in matrix)
    jiras = len({c.jira for c in matrix})
    lines.append(f"known bugs: {jiras} JIRA{'s' if jiras != 1 else ''}, {ok} of {len(matrix)} "
                 f"cells as declared")
    return "\n".join(lines)


def table(matrix: Sequence[Cell]):
    """The Parquet table: one row per cell."""
    import pandas as pd
    rows = [{"jira": c.jira, "bug": c.bug, "release": c.release, "system": c.system,
             "expected": c.expected, "open": c.open, "fixed_in": c.fixed_in,
             "symptom": list(c.symptom), "runs": c.runs, "failed": c.failed,
             "symptom_matched": c.matched, "got": c.got, "as_declared": c.as_declared,
             "why": c.why, "failures": list(c.failures), "symptoms_seen": list(c.symptoms_seen),
             "run_dirs": list(c.run_dirs), "not_run_reason": c.not_run} for c in matrix]
    frame = pd.DataFrame(rows, columns=["jira", "bug", "release", "system", "expected", "open",
                                        "fixed_in", "symptom", "runs", "failed",
                                        "symptom_matched", "got", "as_declared", "why",
                                        "failures", "symptoms_seen", "run_dirs",
                                        "not_run_reason"])
    for k in ("runs", "failed", "symptom_matched"):
        frame[k] = frame[k].astype("Int64")
    return frame


def write_matrix(matrix: Sequence[Cell], out_dir: str) -> str:
    """known-bugs.html and known-bugs.parquet in `out_dir`; returns the path of the HTML."""
    from .templating import render
    os.makedirs(out_dir, exist_ok=True)
    table(matrix).to_parquet(os.path.join(out_dir, "known-bugs.parquet"), index=False)
    releases = sorted({c.release for c in matrix}, key=release_order)
    jiras = []
    for jira in dict.fromkeys(c.jira for c in matrix):
        mine = [c for c in matrix if c.jira == jira]
        by_release = {c.release: c for c in mine}
        jiras.append({"jira": jira, "bug": mine[0].bug, "fixed_in": mine[0].fixed_in,
                      "open": mine[0].open, "symptom": mine[0].symptom,
                      "cells": [by_release.get(r) for r in releases],
                      "details": [{"c": c, "reports": _reports(c, out_dir)} for c in mine]})
    path = os.path.join(out_dir, "known-bugs.html")
    with open(path, "w", encoding="utf-8") as f:
        f.write(render("known-bugs.html.j2", jiras=jiras, releases=releases,
                       as_declared=sum(c.as_declared for c in matrix), total=len(matrix)))
    return path


def _reports(c: Cell, out_dir: str) -> list[dict]:
    """Links to the runs' report.html (or their folders), relative to the matrix."""
    out = []
    for d in c.run_dirs:
        report = os.path.join(d, "report.html")
        target = report if os.path.exists(report) else d
        out.append({"name": os.path.basename(d.rstrip("/")),
                    "href": os.path.relpath(target, out_dir)})
    return out

