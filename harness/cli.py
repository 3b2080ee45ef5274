"""The `hdfs-chaos` command line (ARCHITECTURE.md, "Command line").

    hdfs-chaos validate FILE...     exit 0 valid, 2 invalid (one error per line on stderr)
    hdfs-chaos run FILE...          exit 0 all passed, 1 some failed, 2 bad input
    hdfs-chaos diff FILE...         each scenario on mini-HDFS and Hadoop, diff.html
    hdfs-chaos verify RUN_DIR...    re-run the checks on recorded runs (same exit codes)
    hdfs-chaos report RUN_DIR...    (re)build report.html and a suite summary
    hdfs-chaos list                 the scenario library
    hdfs-chaos schema               the JSON Schema of scenarios
    hdfs-chaos image build|ls|rm    the cluster images
    hdfs-chaos cleanup              remove what crashed runs left behind

The commands that start clusters or Spark live in other modules, imported only when
used, so `validate` and `list` stay fast and a missing piece is one clear line. Errors a
user can cause end as `hdfs-chaos: error: ...` and exit code 2, never a traceback (set
HDFS_CHAOS_DEBUG=1 to see one).
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from harness.scenario import ScenarioError, validate_files
from harness.scenario.loader import check_scenario_file
from harness.scenario.schema import SCHEMA_PATH, schema_is_current, schema_text, write_schema

PROG = "hdfs-chaos"
EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
_PROJECT_PACKAGES = ("harness", "faults", "minihdfs", "cluster_image")
REPO_ROOT = Path(__file__).resolve().parent.parent


class UserError(Exception):
    """Something the user can fix (a missing file, a missing optional piece)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.command(args)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except ScenarioError as e:
        for issue in e.issues:
            print(issue, file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as e:  # noqa: BLE001 - only the project's own errors are shown as one line
        if os.environ.get("HDFS_CHAOS_DEBUG") or not _is_user_error(e):
            raise
        print(f"{PROG}: error: {_one_line(e)}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _is_user_error(exc: BaseException) -> bool:
    """UserError, or an error type defined by the project (FaultError, ConfigError, ...)."""
    if isinstance(exc, (UserError, FileNotFoundError, PermissionError)):
        return True
    module = type(exc).__module__ or ""
    return module.split(".")[0] in _PROJECT_PACKAGES


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Chaos tests for HDFS write-path recovery: run YAML "
                               "scenarios against a mini-HDFS and verify what recovery did.")
    commands = parser.add_subparsers(dest="name", metavar="COMMAND", required=True)

    p = commands.add_parser("validate", help="check scenario files (exit 0 valid, 2 invalid)")
    p.add_argument("files", nargs="+", metavar="FILE", help="scenario files or folders")
    p.set_defaults(command=cmd_validate)

    p = commands.add_parser("list", help="the scenario library")
    p.add_argument("--dir", default=None, help="library folder (default: ./scenarios, else "
                                               "the repository's scenarios/)")
    p.set_defaults(command=cmd_list)

    p = commands.add_parser("schema", help="print the JSON Schema of scenarios")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--write", nargs="?", const=str(SCHEMA_PATH), metavar="PATH",
                       help=f"write it to PATH (default: {SCHEMA_PATH.relative_to(REPO_ROOT)})")
    group.add_argument("--check", action="store_true",
                       help="exit 1 if the published schema is out of date")
    p.set_defaults(command=cmd_schema)

    p = commands.add_parser("run", help="run scenarios (exit 0 all passed, 1 some failed, "
                                        "2 bad input)")
    p.add_argument("files", nargs="+", metavar="FILE", help="scenario files or folders")
    p.add_argument("--backend", choices=("local", "docker"), default="local")
    p.add_argument("--results", default="results", metavar="DIR",
                   help="where run folders go (default: results)")
    p.add_argument("--seed", type=int, default=None, metavar="N",
                   help="override every scenario's seed")
    p.add_argument("--keep", action="store_true",
                   help="keep the cluster's storage and containers after the run")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--system", choices=("minihdfs", "hadoop", "both"), default=None,
                   help="the system under test (default: each scenario's cluster.system, "
                        "else minihdfs); both: as `hdfs-chaos diff`")
    p.add_argument("--hadoop-version", default=None, metavar="V",
                   help="the Apache Hadoop release for --system hadoop (default 3.4.2; "
                        "implies --system hadoop)")
    p.set_defaults(command=cmd_run)

    p = commands.add_parser("diff", help="run each scenario on the mini-HDFS and on Apache "
                                         "Hadoop, write <results>/diff.html and diff.parquet "
                                         "(exit 0 all runs passed, 1 some failed, 2 bad input)")
    p.add_argument("files", nargs="+", metavar="FILE", help="scenario files or folders")
    p.add_argument("--hadoop-version", default=None, metavar="V",
                   help="the Apache Hadoop release (default 3.4.2)")
    p.add_argument("--results", default="results", metavar="DIR",
                   help="where run folders and the diff go (default: results)")
    p.add_argument("--seed", type=int, default=None, metavar="N",
                   help="override every scenario's seed (the same on both systems)")
    p.add_argument("--keep", action="store_true",
                   help="keep the clusters' storage after the runs")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(command=cmd_diff, backend="local")

    p = commands.add_parser("verify", help="run the checks again on recorded runs")
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    p.add_argument("--spark-master", default=None, metavar="URL",
                   help="Spark master (default: local mode)")
    p.set_defaults(command=cmd_verify)

    p = commands.add_parser("report", help="(re)build report.html and a suite summary")
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="where the suite summary goes (default: the runs' parent folder)")
    p.set_defaults(command=cmd_report)

    p = commands.add_parser("image", help="build, list or remove the cluster images")
    image = p.add_subparsers(dest="image_command", metavar="ACTION", required=True)
    q = image.add_parser("build", help="build the cluster and Toxiproxy images (skipped "
                                       "when up to date)")
    q.add_argument("--only", choices=("cluster", "toxiproxy"), default=None)
    q.add_argument("--toxiproxy-binary", default=None, metavar="PATH",
                   help="toxiproxy-server to package (default: tools/bin/toxiproxy-server)")
    q.set_defaults(command=cmd_image_build)
    image.add_parser("ls", help="list the project's images").set_defaults(command=cmd_image_ls)
    q = image.add_parser("rm", help="remove stale images (all of them with --all)")
    q.add_argument("--all", action="store_true")
    q.set_defaults(command=cmd_image_rm)

    p = commands.add_parser("cleanup", help="remove containers, networks and processes "
                                            "left by crashed runs")
    p.set_defaults(command=cmd_cleanup)
    _add_explore(commands)
    return parser


# -- explore (issue 19; harness/explore) ---------------------------------------------------------

def _add_explore(commands) -> None:
    p = commands.add_parser("explore", help="explore fault schedules at the failure points of a "
                                            "base scenario (exit 0 no finding, 1 findings)")
    p.add_argument("base", metavar="BASE.yaml", help="the base scenario (a workload, no faults "
                                                    "needed); explore-bases/ has some")
    p.add_argument("--budget", default="1h", help="how long to explore, e.g. 90s, 30min, 1h")
    p.add_argument("--depth", type=int, default=2, help="faults per schedule at most (1 or 2)")
    p.add_argument("--workers", type=int, default=2, help="runs in parallel")
    p.add_argument("--out", default="explore", help="output folder (default: explore/)")
    p.add_argument("--resume", action="store_true", help="go on with the exploration in --out")
    p.add_argument("--max-schedules", type=int, default=None,
                   help="stop exploring after this many schedules (shrinking still runs)")
    p.add_argument("--system", choices=("minihdfs", "hadoop"), default=None,
                   help="the system explored (default: the base's cluster.system); on hadoop "
                        "faults fire on the adapted log event, not exactly at it")
    p.add_argument("--hadoop-version", default=None, metavar="V",
                   help="the Apache Hadoop release for --system hadoop (default 3.4.2; "
                        "implies --system hadoop)")
    p.set_defaults(command=cmd_explore)


def cmd_explore(args: argparse.Namespace) -> int:
    from minihdfs.config import ConfigError, parse_duration
    try:
        budget = parse_duration(args.budget, "--budget")
    except ConfigError as e:
        raise UserError(f"{e} (use e.g. --budget 90s, 30min or 1h)") from None
    if not Path(args.base).is_file():
        raise UserError(f"{args.base}: no such base scenario file")
    system = args.system or ("hadoop" if args.hadoop_version else None)
    if args.hadoop_version:
        from harness.systems.hadoop.fetch import _VERSION_RE, DEFAULT_VERSION
        if system != "hadoop":
            raise UserError("--hadoop-version goes with --system hadoop: drop one of them")
        if not _VERSION_RE.match(args.hadoop_version):
            raise UserError(f"--hadoop-version {args.hadoop_version!r} is not a release "
                            f"number: use e.g. {DEFAULT_VERSION}")
    from harness.explore.engine import ExploreError, explore
    try:
        state = explore(args.base, args.out, budget, args.depth, args.workers, args.resume,
                        max_schedules=args.max_schedules, system=system,
                        hadoop_version=args.hadoop_version)
    except ExploreError as e:
        raise UserError(str(e)) from None
    return 1 if state.get("findings") else 0


# -- scenario files ------------------------------------------------------------------------------

def scenario_files(arguments: Iterable[str]) -> list[str]:
    """The files named, folders expanded to their *.yaml / *.yml files (sorted)."""
    files: list[str] = []
    for argument in arguments:
        path = Path(argument)
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml"))
            if not found:
                raise UserError(f"{argument}: no .yaml scenario files in this folder")
            files += [str(p) for p in found]
        else:
            files.append(argument)
    return files


def cmd_validate(args: argparse.Namespace) -> int:
    files = scenario_files(args.files)
    scenarios, issues = validate_files(files)
    for issue in issues:
        print(issue, file=sys.stderr)
    for path, scenario in scenarios.items():
        if not any(i.file == path for i in issues):
            print(f"{path}: ok ({scenario.name})")
    return EXIT_BAD_INPUT if issues else EXIT_OK


def library_dir(explicit: str | None = None) -> Path:
    if explicit:
        return Path(explicit)
    here = Path("scenarios")
    return here if here.is_dir() else REPO_ROOT / "scenarios"


def cmd_list(args: argparse.Namespace) -> int:
    folder = library_dir(args.dir)
    files = sorted(p for p in folder.glob("*.y*ml") if p.suffix in (".yaml", ".yml")) \
        if folder.is_dir() else []
    if not files:
        print(f"no scenarios in {folder}/ yet", file=sys.stderr)
        return EXIT_OK
    rows = []
    for path in files:
        scenario, issues = check_scenario_file(path)
        if scenario is None:
            rows.append((path.stem, f"(invalid: {len(issues)} problem"
                                    f"{'s' if len(issues) != 1 else ''}; "
                                    f"hdfs-chaos validate {path})"))
        else:
            first = next((line.strip() for line in scenario.description.splitlines()
                          if line.strip()), "")
            rows.append((scenario.name, first))
    width = max(len(name) for name, _ in rows)
    for name, text in rows:
        print(f"{name:<{width}}  {text}".rstrip())
    return EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    if args.check:
        if schema_is_current():
            return EXIT_OK
        print(f"{PROG}: {SCHEMA_PATH} is out of date; run: {PROG} schema --write",
              file=sys.stderr)
        return EXIT_FAILED
    if args.write:
        print(f"wrote {write_schema(args.write)}", file=sys.stderr)
        return EXIT_OK
    sys.stdout.write(schema_text())
    return EXIT_OK


# -- commands implemented elsewhere --------------------------------------------------------------

def _load(module: str, what: str) -> Any:
    """Import `module` for command `what`, or fail with one line saying what is missing."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name and (module == e.name or module.startswith(e.name + ".")):
            raise UserError(f"'{what}' is not available: module {module} is missing "
                            "from this installation") from None
        raise UserError(f"'{what}' needs the Python package {e.name!r}, which is not "
                        f"installed (pip install -e .)") from None


def _function(module: str, name: str, what: str) -> Callable:
    function = getattr(_load(module, what), name, None)
    if function is None:
        raise UserError(f"'{what}' is not available: {module}.{name} does not exist yet")
    return function


def _passed(verdict: Any) -> bool:
    if isinstance(verdict, dict):
        return bool(verdict.get("passed"))
    return bool(getattr(verdict, "passed", verdict))


def _exit_for(outcome: Any) -> int:
    """The exit code for what a runner returned: verdicts, a bool, or an exit code."""
    if isinstance(outcome, bool):
        return EXIT_OK if outcome else EXIT_FAILED
    if isinstance(outcome, int):
        return outcome
    if outcome is None:
        return EXIT_OK
    if isinstance(outcome, dict) and "passed" in outcome:
        outcome = [outcome]
    elif isinstance(outcome, dict):
        outcome = list(outcome.values())
    verdicts = list(outcome)
    return EXIT_OK if all(_passed(v) for v in verdicts) else EXIT_FAILED


class _Progress:
    """Progress on stderr: lasting lines (a fault fired, a phase began), and a status
    line (phase, faults fired, bytes written) that a terminal redraws in place and a
    log gets at most every few seconds."""

    def __init__(self, stream=None, every: float = 5.0):
        self._stream = stream
        self.every = every
        self._last = 0.0
        self._drawn = False

    @property
    def stream(self):
        return self._stream or sys.stderr   # looked up each time: stderr may be redirected

    @property
    def tty(self) -> bool:
        return self.stream.isatty()

    def __call__(self, message: str) -> None:
        self._clear()
        print(message, file=self.stream, flush=True)

    def transient(self, message: str) -> None:
        import time
        if self.tty:
            width = shutil.get_terminal_size((100, 20)).columns - 1
            self.stream.write("\r\033[K" + message[:width])
            self.stream.flush()
            self._drawn = True
        elif time.monotonic() - self._last >= self.every:
            self._last = time.monotonic()
            print(message, file=self.stream, flush=True)

    def _clear(self) -> None:
        if self._drawn:
            self.stream.write("\r\033[K")
            self._drawn = False


_progress = _Progress()


def cmd_diff(args: argparse.Namespace) -> int:
    """Each scenario on both systems, then diff.html (harness/diffrun.py)."""
    if args.backend != "local":
        raise UserError("--system both runs on the local backend only: drop --backend")
    if args.hadoop_version:
        from harness.systems.hadoop.fetch import _VERSION_RE, DEFAULT_VERSION
        if not _VERSION_RE.match(args.hadoop_version):
            raise UserError(f"--hadoop-version {args.hadoop_version!r} is not a release "
                            f"number: use e.g. {DEFAULT_VERSION}")
    run_both = _function("harness.diffrun", "run_both", "diff")
    return _exit_for(run_both(scenario_files(args.files), args.backend, args.results,
                              args.seed, args.keep, None if args.quiet else _progress,
                              args.hadoop_version))


def cmd_run(args: argparse.Namespace) -> int:
    if args.system == "both":
        return cmd_diff(args)
    files = scenario_files(args.files)
    scenarios, issues = validate_files(files)
    if issues:
        for issue in issues:
            print(issue, file=sys.stderr)
        return EXIT_BAD_INPUT
    system = args.system or ("hadoop" if args.hadoop_version else None)
    if system or args.hadoop_version:
        from harness.systems import system_of
        from harness.systems.hadoop.fetch import _VERSION_RE, DEFAULT_VERSION
        if args.hadoop_version and not _VERSION_RE.match(args.hadoop_version):
            raise UserError(f"--hadoop-version {args.hadoop_version!r} is not a release "
                            f"number: use e.g. {DEFAULT_VERSION}")
        bad = [f"{path}: {issue}" for path, sc in scenarios.items()
               for issue in system_of(sc, system, args.hadoop_version).issues(sc)]
        if bad:
            for line in bad:
                print(line, file=sys.stderr)
            return EXIT_BAD_INPUT
    run_scenarios = _function("harness.runner", "run_scenarios", "run")
    chosen = {"system": system, "hadoop_version": args.hadoop_version} if system else {}
    outcome = run_scenarios(files, args.backend, args.results, args.seed, args.keep,
                            None if args.quiet else _progress, **chosen)
    return _exit_for(outcome)


def _run_dirs(arguments: Iterable[str]) -> list[str]:
    missing = [d for d in arguments if not Path(d).is_dir()]
    if missing:
        raise UserError(f"not a run folder: {', '.join(missing)}")
    from harness.rundir import check_run_dirs   # before a JVM starts: one line, exit 2
    problem = check_run_dirs(list(arguments))
    if problem:
        raise UserError(problem)
    return list(arguments)


def cmd_verify(args: argparse.Namespace) -> int:
    run_dirs = _run_dirs(args.run_dirs)
    verify_runs = _function("harness.reconcile.api", "verify_runs", "verify")
    verdicts = verify_runs(run_dirs, args.spark_master)
    result_line = _function("harness.runner", "result_line", "verify")
    for run_dir, verdict in zip(run_dirs, verdicts):   # as `run` ends: a line per run
        print(result_line({"run_dir": run_dir, **verdict}))
    return _exit_for(verdicts)


def cmd_report(args: argparse.Namespace) -> int:
    run_dirs = _run_dirs(args.run_dirs)
    out = args.out or os.path.commonpath([str(Path(d).resolve().parent) for d in run_dirs])
    build_suite_report = _function("harness.reconcile.api", "build_suite_report", "report")
    result = build_suite_report(run_dirs, out)
    if result is not None:
        print(result)
    return EXIT_OK


def cmd_image_build(args: argparse.Namespace) -> int:
    if args.only in (None, "cluster"):
        print(_function("harness.images", "build_image", "image build")(progress=_progress))
    if args.only in (None, "toxiproxy"):
        build = _function("harness.images", "build_toxiproxy_image", "image build")
        print(build(args.toxiproxy_binary, progress=_progress))
    return EXIT_OK


def cmd_image_ls(args: argparse.Namespace) -> int:
    images = _function("harness.images", "list_images", "image ls")()
    if not images:
        print("no hdfs-chaos images", file=sys.stderr)
    for image in images:
        tags = ", ".join(image.get("tags") or []) or image.get("id", "?")
        mark = "current" if image.get("current") else "stale"
        print(f"{image.get('kind', '?'):<10} {tags:<40} {image.get('size_mb', '?'):>8} MB  {mark}")
    return EXIT_OK


def cmd_image_rm(args: argparse.Namespace) -> int:
    removed = _function("harness.images", "remove_images", "image rm")(all=args.all,
                                                                        progress=_progress)
    if not removed:
        print("nothing to remove", file=sys.stderr)
    return EXIT_OK


def cmd_cleanup(args: argparse.Namespace) -> int:
    cleanup_all = _function("harness.backends", "cleanup_all", "cleanup")
    result = cleanup_all()
    if result:
        print(result if isinstance(result, str) else f"removed {result}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
