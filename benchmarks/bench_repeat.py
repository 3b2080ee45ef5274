"""The same schedule, the same verdict? Runs each scenario N times (its own seed every
time), verifies all runs in one Spark batch, and reports, check by check, whether the
verdicts agree (issue 20).

    python benchmarks/bench_repeat.py scenarios/dn-crash-*.yaml --times 3
    python benchmarks/bench_repeat.py scenarios/*.yaml --times 10 --out results/repeat

Per scenario: how many runs passed, and for every check the statuses it got (pass,
fail, skip) across the runs; a check agrees when every run gave it the same status.
Also the expectations (`expect:` lines) the same way. Writes `repeat.md` and
`repeat.json` in `--out`, prints the table, and exits 1 when any check disagrees.
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from harness.reconcile.verdict import Verdict  # noqa: E402
from harness.runner import run_unverified, verify_outcomes  # noqa: E402
from harness.scenario import validate_files  # noqa: E402


def agreement(verdicts: list[Verdict]) -> dict:
    """{passed, runs, checks: {id: Counter of statuses}, expect: {what: Counter},
    disagree: [ids]} of one scenario's verdicts."""
    checks: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    expect: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for v in verdicts:
        for c in v.checks:
            checks[c.id][c.status] += 1
        for e in v.expect:
            # "every recovery within 15s (worst 0.066s)": the measurement is no part of
            # which expectation it is
            expect[re.sub(r"\s*\([^)]*\)", "", e.what)][e.status] += 1
        if not v.checks:
            checks["(no checks: " + str(v.error or v.run_status) + ")"]["none"] += 1
    runs = len(verdicts)
    disagree = [k for k, c in checks.items() if len(c) > 1 or sum(c.values()) != runs]
    disagree += [f"expect {k}" for k, c in expect.items()
                 if len(c) > 1 or sum(c.values()) != runs]
    return {"runs": runs, "passed": sum(1 for v in verdicts if v.passed),
            "checks": {k: dict(c) for k, c in sorted(checks.items())},
            "expect": {k: dict(c) for k, c in sorted(expect.items())},
            "disagree": disagree}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("scenarios", nargs="*", help="scenario files or globs")
    p.add_argument("--times", type=int, default=10, help="runs per scenario (default 10)")
    p.add_argument("--backend", default="local")
    p.add_argument("--out", default="results/repeat", help="results and report folder")
    p.add_argument("--report-only", action="store_true",
                   help="run nothing: report on the verdict.json files already in --out")
    args = p.parse_args(argv)
    if args.report_only:
        by_name: dict[str, list[Verdict]] = collections.defaultdict(list)
        for path in sorted(glob.glob(os.path.join(args.out, "*", "verdict.json"))):
            v = Verdict.read(os.path.dirname(path))
            by_name[v.scenario or "?"].append(v)
        return write_report(by_name, args, 0.0, 0.0)
    if not args.scenarios:
        p.error("name the scenarios to repeat (files or globs), or give --report-only")
    files = sorted({f for pattern in args.scenarios for f in (glob.glob(pattern) or [pattern])})
    scenarios, issues = validate_files(files)
    if issues:
        for issue in issues:
            print(issue, file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    outcomes: dict[str, list] = {}
    started = time.monotonic()
    for path in files:
        for i in range(args.times):
            t0 = time.monotonic()
            o = run_unverified(scenarios[path], args.backend, args.out)
            outcomes.setdefault(scenarios[path].name, []).append(o)
            print(f"{scenarios[path].name} run {i + 1}/{args.times}: {o.status} "
                  f"({time.monotonic() - t0:.1f}s)", flush=True)
            if o.status == "interrupted":     # Ctrl-C stops the study, not just one run
                print(f"interrupted: the runs so far are in {args.out}", file=sys.stderr)
                return 130
    run_time = time.monotonic() - started
    flat = [o for runs in outcomes.values() for o in runs]
    t0 = time.monotonic()
    verdicts = verify_outcomes(flat)
    verify_time = time.monotonic() - t0
    by_name: dict[str, list[Verdict]] = collections.defaultdict(list)
    for o, v in zip(flat, verdicts):
        by_name[o.scenario].append(v)
    return write_report(by_name, args, run_time, verify_time)


def write_report(by_name: dict[str, list[Verdict]], args, run_time: float,
                 verify_time: float) -> int:
    report = {name: agreement(vs) for name, vs in by_name.items()}
    total = sum(len(r["checks"]) + len(r["expect"]) for r in report.values())
    bad = sum(len(r["disagree"]) for r in report.values())
    times = sorted({r["runs"] for r in report.values()})
    lines = [f"# Verdict agreement: {'/'.join(map(str, times))} runs per scenario "
             f"({args.backend})", "",
             f"runs {run_time:.0f} s, verification {verify_time:.0f} s; "
             f"{total - bad} of {total} checks and expectations agree across runs", "",
             "| scenario | runs | passed | checks agreeing | disagreeing (statuses) |",
             "|---|---|---|---|---|"]
    for name, r in report.items():
        n = len(r["checks"]) + len(r["expect"])
        detail = "; ".join(
            f"{k}: {r['checks'].get(k) or r['expect'].get(k[len('expect '):])}"
            for k in r["disagree"]) or "-"
        lines.append(f"| {name} | {r['runs']} | {r['passed']} | {n - len(r['disagree'])}/{n} "
                     f"| {detail} |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out, "repeat.md"), "w") as f:
        f.write(text)
    with open(os.path.join(args.out, "repeat.json"), "w") as f:
        json.dump({"times": times, "backend": args.backend, "run_seconds": run_time,
                   "verify_seconds": verify_time, "scenarios": report}, f, indent=1)
    print(text)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
