"""Command line of the mutation testing: `python -m tools.mutants {list,check,run,report}`."""

from __future__ import annotations

import argparse
import glob
import os
import shlex
import sys
import tempfile

from .apply import REPO_ROOT, MutantError, apply_mutant
from .catalogue import MUTANTS


def _scenario_files(patterns: list[str]) -> list[str]:
    files: list[str] = []
    for pattern in patterns:
        if os.path.isdir(pattern):
            pattern = os.path.join(pattern, "*.yaml")
        found = sorted(glob.glob(pattern)) or sorted(glob.glob(os.path.join(REPO_ROOT, pattern)))
        if not found:
            raise SystemExit(f"mutants: no scenario matches {pattern!r}; give YAML files or "
                             "globs, e.g. --scenarios 'scenarios/dn-crash-*.yaml'")
        files += [os.path.abspath(f) for f in found if os.path.abspath(f) not in files]
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.mutants", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="the mutants: name, file, rule")
    sub.add_parser("check", help="apply every mutant to a copy of this tree (exit 1 if one fails)")
    run = sub.add_parser("run", help="run the scenario library against the mutants")
    run.add_argument("--mutants", help="comma-separated names (default: all)")
    run.add_argument("--scenarios", nargs="+", default=["scenarios/*.yaml"],
                     help="scenario files or globs (default: the whole library)")
    run.add_argument("--targeted", action="store_true",
                     help="each mutant runs only the scenarios its catalogue entry names")
    run.add_argument("--every-scenario", action="store_true",
                     help="each mutant runs every scenario, verified in one batch at the end "
                          "(which scenarios and checks kill it); by default each mutant runs "
                          "the scenarios its catalogue entry names first, its runs verified "
                          "as they come, and stops at its first killing run")
    run.add_argument("--max-verify-batch", type=int, default=None, metavar="N",
                     help="first-kill mode verifies a mutant's runs in batches that double "
                          "from 1 run up to N (default 8; 1: each run right after it)")
    run.add_argument("--workers", type=int, default=1,
                     help="mutants run at once, each with its own clusters (default 1: "
                          "a 2-core machine runs one cluster well)")
    run.add_argument("--out", default=os.path.join("results", "mutants"),
                     help="output folder (default results/mutants)")
    run.add_argument("--no-baseline", action="store_true",
                     help="skip the run of the unmutated tree (then a scenario that fails "
                          "anyway counts as a kill)")
    rep = sub.add_parser("report", help="rebuild report.md/json of an output folder "
                                        "(also of a run still going or interrupted)")
    rep.add_argument("--out", default=os.path.join("results", "mutants"))
    worker = sub.add_parser("worker", help=argparse.SUPPRESS)
    worker.add_argument("--out", required=True)
    worker.add_argument("--index", type=int, default=0)
    args = parser.parse_args(argv)

    if args.cmd == "list":
        for m in MUTANTS:
            print(f"{m.name:32} {m.file:24} {m.rule}")
        return 0
    if args.cmd == "check":
        bad = 0
        for m in MUTANTS:
            with tempfile.TemporaryDirectory() as d:
                try:
                    apply_mutant(m, d)
                    print(f"ok   {m.name}")
                except (MutantError, SyntaxError) as e:
                    bad += 1
                    print(f"FAIL {e}")
        return 1 if bad else 0
    from .runner import DEFAULT_MAX_BATCH, EVERY_SCENARIO, FIRST_KILL, Runner, plan_jobs, \
        rebuild_report, select_mutants, worker_main
    if args.cmd == "report":
        if not os.path.exists(os.path.join(args.out, "plan.json")):
            raise SystemExit(f"mutants: {args.out} holds no mutation run (no plan.json); "
                             "give the --out of a `run`")
        rebuild_report(os.path.abspath(args.out))
        print(open(os.path.join(os.path.abspath(args.out), "report.md")).read())
        return 0
    if args.cmd == "worker":
        return worker_main(os.path.abspath(args.out), args.index)
    if args.workers < 1:
        raise SystemExit("mutants: --workers must be at least 1")
    if args.max_verify_batch is not None and args.max_verify_batch < 1:
        raise SystemExit("mutants: --max-verify-batch must be at least 1")
    mutants = select_mutants([n.strip() for n in args.mutants.split(",")] if args.mutants else None)
    for m in mutants:   # fail before anything starts, not mid-run
        with tempfile.TemporaryDirectory() as d:
            try:
                apply_mutant(m, d)
            except MutantError as e:
                raise SystemExit(f"mutants: {e}")
    files = _scenario_files(args.scenarios)
    from harness.scenario import ScenarioError, validate_files
    _, issues = validate_files(files)
    if issues:
        raise SystemExit(f"mutants: invalid scenarios:\n{ScenarioError(issues)}")
    mode = EVERY_SCENARIO if args.every_scenario else FIRST_KILL
    jobs = plan_jobs(mutants, files, args.targeted, not args.no_baseline, mode == FIRST_KILL)
    if not jobs:
        raise SystemExit("mutants: nothing to run (no mutant names any of these scenarios)")
    command = "python -m tools.mutants " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    report = Runner(jobs, os.path.abspath(args.out), args.workers, command, mode,
                    args.max_verify_batch or DEFAULT_MAX_BATCH).run()
    print(open(os.path.join(os.path.abspath(args.out), "report.md")).read())
    return 130 if report["interrupted"] else 0


def run_cli() -> int:
    """main(), with bad input (a SystemExit carrying a message) as one line and exit 2,
    the project's code for bad input."""
    try:
        return main()
    except SystemExit as e:
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(run_cli())
