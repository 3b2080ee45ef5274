"""The `hdfs-chaos` command line (ARCHITECTURE.md, "Command line").

    hdfs-chaos validate SCENARIO... exit 0 valid, 2 invalid (one error per line on stderr)
    hdfs-chaos run SCENARIO...      exit 0 all passed, 1 some failed, 2 bad input
                                    (-k PATTERN, --repeat N, --fail-fast, --json,
                                     --workers N)
    hdfs-chaos diff SCENARIO...     each scenario on mini-HDFS and Hadoop, diff.html
    hdfs-chaos verify RUN_DIR...    re-run the checks on recorded runs (same exit codes)
    hdfs-chaos report RUN_DIR...    a suite summary (index.html, checks.parquet)
    hdfs-chaos list                 the scenario library
    hdfs-chaos schema               the JSON Schema of scenarios
    hdfs-chaos image build|ls|rm    the cluster images
    hdfs-chaos cleanup              remove what crashed runs left behind
    hdfs-chaos explore BASE.yaml    explore fault schedules of a base scenario
    hdfs-chaos known-bugs           the known-bug scenarios on the releases they name:
                                    the matrix (exit 0 every cell as declared)

A SCENARIO is a file, a folder of them, or a name that `list` shows. Every command's
output folder is --out DIR.

The commands that start clusters or Spark live in other modules, imported only when
used, so `validate` and `list` stay fast and a missing piece is one clear line. Errors a
user can cause end as `hdfs-chaos: error: ...` and exit code 2, never a traceback (set
HDFS_CHAOS_DEBUG=1 to see one).
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import importlib
import json
import os
import re
import shutil
import sys
import textwrap
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
    _autocomplete(parser)
    args = parser.parse_args(argv)
    if getattr(args, "remote", None):
        if args.remote != "off" and not args.remote.startswith("sc://"):
            parser.error(f"--remote {args.remote!r} is not a Spark Connect URL: use "
                         f"sc://host:port, or off")
        os.environ["HDFS_CHAOS_SPARK_REMOTE"] = args.remote   # child processes too
    if getattr(args, "no_hadoop_agent", False):
        from harness.systems.hadoop import AGENT_ENV
        os.environ[AGENT_ENV] = "off"       # the runs of spawned workers too
    try:
        return args.command(args)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:   # `hdfs-chaos list | head`: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILED
    except ScenarioError as e:
        for issue in e.issues:
            print(issue, file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as e:  # noqa: BLE001 - only the project's own errors are shown as one line
        if os.environ.get("HDFS_CHAOS_DEBUG") or not _is_user_error(e):
            raise
        print(f"{PROG}: error: {_one_line(e)}", file=sys.stderr)
        return EXIT_BAD_INPUT


def _autocomplete(parser: argparse.ArgumentParser) -> None:
    """Shell completion (argcomplete, the `completion` extra): answers the shell's request
    and exits when one is pending, does nothing otherwise or when argcomplete is missing."""
    if "_ARGCOMPLETE" not in os.environ:
        return
    try:
        import argcomplete
    except ImportError:
        return
    argcomplete.autocomplete(parser)


def _is_user_error(exc: BaseException) -> bool:
    """UserError, or an error type defined by the project (FaultError, ConfigError, ...)."""
    if isinstance(exc, (UserError, FileNotFoundError, PermissionError)):
        return True
    module = type(exc).__module__ or ""
    return module.split(".")[0] in _PROJECT_PACKAGES


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text


def version() -> str:
    """The installed package's version (its metadata), as `--version` shows it."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed
    try:
        return installed(PROG)
    except PackageNotFoundError:
        return "unknown (not installed: pip install -e .)"


class _HelpFormatter(argparse.HelpFormatter):
    """Adds "(default: X)" to an option's help unless it says its default already, or has
    none worth showing (None, a flag's False)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (action.option_strings and "default" not in text and text != argparse.SUPPRESS
                and action.default not in (None, False, argparse.SUPPRESS)):
            text += " (default: %(default)s)"
        return text


class _DeprecatedAlias(argparse.Action):
    """An old option name kept for a release: sets the new option's value and says, on
    stderr, which name to use instead."""

    def __init__(self, option_strings, dest, new: str = "", **kwargs):
        self.new = new
        super().__init__(option_strings, dest, help=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"{PROG}: note: {option_string} is deprecated and goes in a later release; "
              f"use {self.new}", file=sys.stderr)
        setattr(namespace, self.dest, values)


def _out_option(p: argparse.ArgumentParser, default: str | None, help: str) -> None:
    """--out DIR, the one name of every command's output folder; --results, its old name
    for run and diff, still works (hidden, with a note)."""
    p.add_argument("--out", default=default, metavar="DIR", help=help)
    p.add_argument("--results", dest="out", metavar="DIR", action=_DeprecatedAlias,
                   new="--out")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, formatter_class=_HelpFormatter,
        description="Chaos tests for HDFS write-path recovery: run YAML scenarios against a "
                    "mini-HDFS and verify what recovery did.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    commands = parser.add_subparsers(dest="name", metavar="COMMAND", required=True)

    def command(name: str, **kwargs) -> argparse.ArgumentParser:
        return commands.add_parser(name, formatter_class=_HelpFormatter,
                                   description=kwargs.get("help"), **kwargs)

    p = command("validate", help="check scenario files (exit 0 valid, 2 invalid)")
    p.add_argument("files", nargs="+", metavar="SCENARIO",
                   help=SCENARIO_ARGS).completer = _complete_scenarios
    p.set_defaults(command=cmd_validate)

    p = command("list", help="the scenario library: name and description of each scenario")
    p.add_argument("--dir", default=None, help="library folder (default: ./scenarios, else "
                                               "the repository's scenarios/)")
    p.set_defaults(command=cmd_list)

    p = command("schema", help="print the JSON Schema of scenarios")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--write", nargs="?", const=str(SCHEMA_PATH), metavar="PATH",
                       help=f"write it to PATH (default: {SCHEMA_PATH.relative_to(REPO_ROOT)})")
    group.add_argument("--check", action="store_true",
                       help="exit 1 if the published schema is out of date")
    p.set_defaults(command=cmd_schema)

    p = command("run", help="run scenarios (exit 0 all passed, 1 some failed, 2 bad input)")
    p.add_argument("files", nargs="+", metavar="SCENARIO",
                   help=SCENARIO_ARGS).completer = _complete_scenarios
    p.add_argument("--backend", choices=("local", "docker"), default="local",
                   help="where the cluster runs: local processes, or Docker containers "
                        "(hdfs-chaos image build first)")
    _out_option(p, "results", "where run folders go")
    p.add_argument("-k", dest="select", action="append", default=None, metavar="PATTERN",
                   help="run only the scenarios whose name (or file name) contains PATTERN, "
                        "or matches it as a glob (*, ?, [..]); repeat for more")
    p.add_argument("--fail-fast", action="store_true",
                   help="stop after the first failed scenario (each is verified as soon as "
                        "it ran; the runs so far keep their verdicts and reports)")
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="run each scenario N times in a row (each run its own folder; the "
                        "same seed unless --seed), to see whether its verdict holds")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="run N scenarios at a time, each cluster on its own ports (progress: "
                        "lasting lines only, each led by its scenario's name); the result "
                        "lines and --json keep the order of the scenarios given")
    p.add_argument("--json", action="store_true",
                   help="one JSON object per scenario on stdout (name, verdict, run_dir, "
                        "failed_checks, unmet_expectations, error, run_status); the "
                        "result lines go to stderr")
    p.add_argument("--seed", type=int, default=None, metavar="N",
                   help="override every scenario's seed")
    p.add_argument("--keep", action="store_true",
                   help="keep the cluster's storage and containers after the run")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--system", type=SystemName("both"), default=None, metavar="SYSTEM",
                   help="the system under test: minihdfs, hadoop or another module of "
                        "harness/systems (default: each scenario's cluster.system, else "
                        "minihdfs); both: as `hdfs-chaos diff`").completer = SystemName("both")
    p.add_argument("--hadoop-version", default=None, metavar="V",
                   help="the Apache Hadoop release for --system hadoop (default 3.4.2; "
                        "implies --system hadoop)")
    _agent_option(p)
    p.set_defaults(command=cmd_run)

    p = command("diff", help="run each scenario on the mini-HDFS and on Apache Hadoop, "
                             "write <out>/diff.html and diff.parquet (exit 0 all runs "
                             "passed, 1 some failed, 2 bad input)")
    p.add_argument("files", nargs="+", metavar="SCENARIO",
                   help=SCENARIO_ARGS).completer = _complete_scenarios
    p.add_argument("--hadoop-version", default=None, metavar="V",
                   help="the Apache Hadoop release (default 3.4.2)")
    _agent_option(p)
    _out_option(p, "results", "where run folders and the diff go")
    p.add_argument("--seed", type=int, default=None, metavar="N",
                   help="override every scenario's seed (the same on both systems)")
    p.add_argument("--keep", action="store_true",
                   help="keep the clusters' storage after the runs")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(command=cmd_diff, backend="local", select=None, fail_fast=False,
                   json=False, repeat=1)

    p = command("verify", help="run the checks again on recorded runs (rewrites their "
                               "verdict.json; exit 0 all passed, 1 some failed)")
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                   help="run folders (results/<run-id>), or a folder of them (results)")
    p.add_argument("--spark-master", default=None, metavar="URL",
                   help="Spark master (default: local mode)")
    p.set_defaults(command=cmd_verify)

    p = command("report", help="a suite summary of runs: index.html and checks.parquet "
                               "(runs without a verdict are verified first)")
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR",
                   help="run folders (results/<run-id>), or a folder of them (results)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="where the suite summary goes (default: the runs' parent folder)")
    p.add_argument("--rewrite-runs", action="store_true",
                   help="also redraw every run's report.html and plots (by default a run's "
                        "folder is left as it is; only a run without report.html gets one)")
    p.set_defaults(command=cmd_report)

    p = command("image", help="build, list or remove the cluster images")
    image = p.add_subparsers(dest="image_command", metavar="ACTION", required=True)
    q = image.add_parser("build", formatter_class=_HelpFormatter,
                         help="build the cluster and Toxiproxy images (skipped when up to date)")
    q.add_argument("--only", choices=("cluster", "toxiproxy"), default=None,
                   help="build only this image (default: both)")
    q.add_argument("--toxiproxy-binary", default=None, metavar="PATH",
                   help="toxiproxy-server to package (default: tools/bin/toxiproxy-server)")
    q.set_defaults(command=cmd_image_build)
    image.add_parser("ls", help="list the project's images").set_defaults(command=cmd_image_ls)
    q = image.add_parser("rm", formatter_class=_HelpFormatter,
                         help="remove stale images (all of them with --all)")
    q.add_argument("--all", action="store_true",
                   help="remove the current images too, not only stale ones")
    q.set_defaults(command=cmd_image_rm)

    p = command("cleanup", help="remove containers, networks and processes left by crashed runs")
    p.set_defaults(command=cmd_cleanup)
    _add_explore(command)
    _add_known_bugs(command)
    _add_spark(command)
    for name in ("run", "diff", "verify", "report", "explore", "known-bugs"):
        _remote_option(commands.choices[name])
    return parser


def _remote_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--remote", default=None, metavar="URL",
                   help="verify through this Spark Connect server (sc://host:port; the run "
                        "folders must be readable there), or `off` for a Spark of this "
                        "process (default: the server of `hdfs-chaos spark up` when it is "
                        "up, else a Spark of this process)")


# -- spark (issue 33; harness/reconcile/connect.py) ---------------------------------------------

def _add_spark(command) -> None:
    p = command("spark", help="a Spark Connect server on loopback, kept up between commands: "
                              "run, verify, report, diff and explore use it while it is up")
    actions = p.add_subparsers(dest="spark_command", metavar="ACTION", required=True)
    q = actions.add_parser("up", formatter_class=_HelpFormatter,
                           help="start the server (nothing to do when it is up)")
    q.add_argument("--port", type=int, default=None, metavar="N",
                   help="its port on 127.0.0.1 (default 15002)")
    q.add_argument("--memory", default=None, metavar="SIZE",
                   help="its JVM heap (default: HDFS_CHAOS_SPARK_MEMORY, else 4g)")
    q.add_argument("--no-warm", dest="warm", action="store_false",
                   help="answer as soon as the server does, without verifying synthetic runs "
                        "through it first (the first verification is then slower)")
    q.set_defaults(command=cmd_spark_up)
    actions.add_parser("down", help="stop the server").set_defaults(command=cmd_spark_down)
    actions.add_parser("status", help="say whether the server is up and where (exit 0 up, "
                                      "1 down)").set_defaults(command=cmd_spark_status)


def cmd_spark_up(args: argparse.Namespace) -> int:
    from harness.reconcile import connect
    port = connect.DEFAULT_PORT if args.port is None else args.port
    if not 0 < port < 65536:
        raise UserError(f"--port {port} is not a TCP port: use 1-65535")
    before = connect.status()
    try:
        server = connect.up(port, args.memory, warm=args.warm)
    except connect.ConnectError as e:
        raise UserError(str(e)) from None
    what = "already up" if before is not None else "up"
    print(f"Spark Connect server {what} at {server.url} (pid {server.pid}, log {server.log})")
    return EXIT_OK


def cmd_spark_down(args: argparse.Namespace) -> int:
    from harness.reconcile import connect
    server = connect.down()
    print("Spark Connect server stopped" if server is not None
          else "no Spark Connect server was up")
    return EXIT_OK


def cmd_spark_status(args: argparse.Namespace) -> int:
    import time as _time
    from harness.reconcile import connect
    server = connect.status()
    if server is None:
        print("down (hdfs-chaos spark up starts it)")
        return EXIT_FAILED
    answers = connect.answers(server.port)
    age = _time.time() - server.started
    print(f"up at {server.url} (pid {server.pid}, {age / 60:.0f} min, pyspark "
          f"{server.pyspark}{'' if answers else ', not answering yet'}; log {server.log})")
    return EXIT_OK


class SystemName:
    """`--system`'s type: a name harness/systems knows when the command line is read (its
    modules and registrations), or one of `extra`; else argparse's one-line error naming
    them all. Also the option's shell completion."""

    def __init__(self, *extra: str):
        self.extra = extra
        self.__name__ = "system"

    def names(self) -> tuple[str, ...]:
        from harness.systems import system_names
        return system_names() + self.extra

    def __call__(self, value: str = "", **kwargs) -> str | list[str]:
        if kwargs:   # argcomplete: value is the prefix typed so far
            return [n for n in self.names() if n.startswith(value)]
        if value in self.names():
            return value
        from harness.systems import unknown_system
        raise argparse.ArgumentTypeError(unknown_system(value, self.extra))


def _complete_scenarios(prefix: str, **kwargs) -> list[str]:
    """Shell completion of a SCENARIO: the library's names, then .yaml files and folders."""
    names = [p.stem for p in _library_files(library_dir()) if p.stem.startswith(prefix)]
    from argcomplete.completers import FilesCompleter   # only ever called by argcomplete
    return names + list(FilesCompleter(("yaml", "yml"))(prefix, **kwargs))


SCENARIO_ARGS = ("scenario files, folders of them, or names from `hdfs-chaos list` "
                 "(client-crash-after-hflush: scenarios/client-crash-after-hflush.yaml)")


# -- explore (issue 19; harness/explore) ---------------------------------------------------------

def _add_explore(command) -> None:
    p = command("explore", help="explore fault schedules at the failure points of a "
                                "base scenario (exit 0 no finding, 1 findings)")
    p.add_argument("base", metavar="BASE.yaml", help="the base scenario (a workload, no faults "
                                                    "needed); explore-bases/ has some")
    p.add_argument("--budget", default="1h", help="how long to explore, e.g. 90s, 30min, 1h")
    p.add_argument("--depth", type=int, default=2, help="faults per schedule at most (1 or 2)")
    p.add_argument("--workers", type=int, default=None,
                   help="runs in parallel (default: 3 a core on the mini-HDFS, 1 a core on "
                        "Hadoop; with --spark-master, the executors' cores)")
    p.add_argument("--out", default="explore", metavar="DIR", help="output folder")
    p.add_argument("--resume", action="store_true", help="go on with the exploration in --out")
    p.add_argument("--max-schedules", type=int, default=None, metavar="N",
                   help="stop exploring after this many schedules (shrinking still runs)")
    p.add_argument("--system", type=SystemName(), default=None, metavar="SYSTEM",
                   help="the system explored (default: the base's cluster.system); where "
                        "it cannot hold its processes at an event (its capabilities say), "
                        "faults fire on the adapted log event, not exactly at it"
                   ).completer = SystemName()
    p.add_argument("--hadoop-version", default=None, metavar="V",
                   help="the Apache Hadoop release for --system hadoop (default 3.4.2; "
                        "implies --system hadoop)")
    p.add_argument("--spark-master", default=None, metavar="URL",
                   help="run the schedules as Spark tasks on this cluster (spark://host:port, "
                        "yarn, k8s://..., local[N]) and verify them there; --out must be a "
                        "folder the executors can write (docs/explorer.md)")
    p.add_argument("--spark-toxiproxy", default=None, metavar="PATH",
                   help="the toxiproxy-server shipped to the executors (default: this "
                        "machine's, as a run finds it)")
    p.add_argument("--spark-python-env", default=None, metavar="ARCHIVE",
                   help="a packed Python environment (venv-pack/conda-pack .tar.gz) the "
                        "executors run the schedules with (default: their own python)")
    _agent_option(p)
    p.set_defaults(command=cmd_explore)


def _agent_option(p) -> None:
    p.add_argument("--no-hadoop-agent", action="store_true",
                   help="no Byteman agent in the Hadoop JVMs, whatever cluster.hadoop_agent "
                        "says (default: on where the release has rules, 3.2-3.4; "
                        "docs/hadoop.md)")


def cmd_explore(args: argparse.Namespace) -> int:
    from hdfs_contract.config import ConfigError, parse_duration
    try:
        budget = parse_duration(args.budget, "--budget")
    except ConfigError as e:
        raise UserError(f"{e} (use e.g. --budget 90s, 30min or 1h)") from None
    if not Path(args.base).is_file():
        raise UserError(f"{args.base}: no such base scenario file")
    system = args.system or ("hadoop" if args.hadoop_version else None)
    if args.hadoop_version:
        from harness.systems.hadoop.fetch import DEFAULT_VERSION, is_release
        if system != "hadoop":
            raise UserError("--hadoop-version goes with --system hadoop: drop one of them")
        if not is_release(args.hadoop_version):
            raise UserError(f"--hadoop-version {args.hadoop_version!r} is not a release "
                            f"number: use e.g. {DEFAULT_VERSION}")
    if args.spark_master and re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", args.out):
        raise UserError(f"--out {args.out}: the explorer keeps its state in a local folder "
                        f"(a shared mount on a cluster), not a URI")
    if args.workers is not None and args.workers < 1:
        raise UserError(f"--workers {args.workers}: use at least 1")
    from harness.explore.engine import ExploreError, explore
    workers, pool = args.workers, None
    try:
        if args.spark_master:
            from harness.explore import sparkrun
            from harness.reconcile.session import SparkStartError
            try:
                spark = sparkrun.start(args.spark_master, args.out, args.spark_toxiproxy,
                                       args.spark_python_env)
            except SparkStartError as e:
                raise UserError(str(e)) from None
            workers = args.workers or sparkrun.executor_slots(spark)
            pool = lambda n, package_root: sparkrun.SparkPool(spark, n)   # noqa: E731
        elif args.spark_toxiproxy or args.spark_python_env:
            raise UserError("--spark-toxiproxy and --spark-python-env go with --spark-master")
        state = explore(args.base, args.out, budget, args.depth, workers, args.resume,
                        max_schedules=args.max_schedules, system=system,
                        hadoop_version=args.hadoop_version, pool=pool)
    except ExploreError as e:
        raise UserError(str(e)) from None
    return 1 if state.findings else 0


# -- known-bugs (issue 30; harness/knownbugs.py) ------------------------------------------------

def _add_known_bugs(command) -> None:
    p = command("known-bugs", help="run each known-bug scenario on the Hadoop releases it "
                                   "names and on the mini-HDFS, print the matrix, write "
                                   "<out>/known-bugs.html and .parquet (exit 0 every cell as "
                                   "declared, 1 not, 2 bad input)")
    p.add_argument("--versions", action="append", default=None, metavar="V,V",
                   help="run only on these Hadoop releases, e.g. 3.3.6,3.4.2 (default: every "
                        "release each scenario names in affects and fixed)")
    p.add_argument("--only", action="append", default=None, metavar="JIRA,JIRA",
                   help="only these JIRAs, e.g. HDFS-16146,HDFS-17299 (default: all)")
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="runs on each Hadoop release (the mini-HDFS runs once)")
    p.add_argument("--dir", default=None, metavar="DIR",
                   help="the folder of known-bug scenarios (default: ./known-bugs, else the "
                        "repository's known-bugs/)")
    _out_option(p, "results", "where run folders and the matrix go")
    p.add_argument("--seed", type=int, default=None, metavar="N",
                   help="override every scenario's seed")
    p.add_argument("--keep", action="store_true", help="keep the clusters' storage after the runs")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    _agent_option(p)
    p.set_defaults(command=cmd_known_bugs)


def known_bugs_dir(explicit: str | None = None) -> str:
    if explicit:
        return explicit
    here = Path("known-bugs")
    return str(here if here.is_dir() else REPO_ROOT / "known-bugs")


def cmd_known_bugs(args: argparse.Namespace) -> int:
    module = _load("harness.knownbugs", "known-bugs")
    from harness.knownbugs import parse_list
    versions = parse_list(args.versions) if args.versions else None
    try:
        return module.run_known_bugs(known_bugs_dir(args.dir), args.out, versions,
                                     parse_list(args.only), args.repeat, args.seed, args.keep,
                                     None if args.quiet else _progress)
    except module.KnownBugsError as e:
        raise UserError(str(e)) from None


# -- scenario files ------------------------------------------------------------------------------

def scenario_files(arguments: Iterable[str]) -> list[str]:
    """The files named, folders expanded to their *.yaml / *.yml files (sorted), and a
    scenario name (as `list` shows it) resolved to its file in the library."""
    files: list[str] = []
    for argument in arguments:
        path = Path(argument)
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml"))
            if not found:
                raise UserError(f"{argument}: no .yaml scenario files in this folder")
            files += [str(p) for p in found]
        elif not path.exists() and _looks_like_a_name(argument):
            files.append(str(_library_file(argument)))
        else:
            files.append(argument)
    return files


def _looks_like_a_name(argument: str) -> bool:
    """A bare scenario name: no folder, no .yaml/.yml ending (a missing file is reported
    as one by the loader)."""
    return os.sep not in argument and "/" not in argument \
        and Path(argument).suffix not in (".yaml", ".yml")


def _library_file(name: str) -> Path:
    """The library file of scenario `name`: NAME.yaml (or .yml), else the file whose
    `name:` is NAME; a one-line error naming the closest names otherwise."""
    folder = library_dir()
    for suffix in (".yaml", ".yml"):
        if (folder / (name + suffix)).is_file():
            return folder / (name + suffix)
    names = {}
    for path in _library_files(folder):
        scenario, _ = check_scenario_file(path)
        names[scenario.name if scenario is not None else path.stem] = path
    if name in names:
        return names[name]
    from harness.scenario.issues import did_you_mean
    raise UserError(f"{name}: no such file, and no scenario of that name in {folder}/"
                    f"{did_you_mean(name, names) or ' (hdfs-chaos list shows them)'}")


def _library_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.y*ml") if p.suffix in (".yaml", ".yml")) \
        if folder.is_dir() else []


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
    files = _library_files(folder)
    if not files:
        print(f"no scenarios in {folder}/ yet", file=sys.stderr)
        return EXIT_OK
    rows = []
    for path in files:
        scenario, issues = check_scenario_file(path)
        if scenario is None:
            rows.append((path.stem, f"(invalid: {len(issues)} problem"
                                    f"{'s' if len(issues) != 1 else ''}; "
                                    f"hdfs-chaos validate {path})", False))
        else:
            rows.append((scenario.name, first_sentence(scenario.description), True))
    width = max(len(name) for name, _, _ in rows)
    columns = shutil.get_terminal_size((100, 24)).columns
    room = max(columns - width - 2, 30)   # a narrow terminal still gets readable lines
    for name, text, wrap in rows:   # the description wrapped, a command kept on its line
        lines = textwrap.wrap(text, room, break_on_hyphens=False, break_long_words=False) \
            if wrap else [text]
        lines = lines or [""]
        print(f"{name:<{width}}  {lines[0]}".rstrip())
        for line in lines[1:]:
            print(f"{'':<{width}}  {line}")
    return EXIT_OK


def first_sentence(description: str) -> str:
    """The description's first sentence, whole: up to the first full stop outside brackets
    that ends a word (not an abbreviation such as e.g.) and is followed by a space, or the
    end of the first paragraph; its line breaks joined."""
    text = " ".join(description.strip().split("\n\n", 1)[0].split())
    depth = 0
    for i, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(depth - 1, 0)
        elif char in ".!?" and depth == 0 and (i + 1 == len(text) or text[i + 1] == " "):
            word = text[:i].rsplit(" ", 1)[-1]
            if "." not in word:   # e.g. / i.e.: the stop inside an abbreviation
                return text[:i + 1]
    return text


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


def _exit_for(outcome: Any) -> int:
    """The exit code for what a runner returned: a list of verdicts (harness.reconcile.
    verdict.Verdict), a bool, or an exit code."""
    if isinstance(outcome, bool):
        return EXIT_OK if outcome else EXIT_FAILED
    if isinstance(outcome, int):
        return outcome
    if outcome is None:
        return EXIT_OK
    return EXIT_OK if all(v.passed for v in outcome) else EXIT_FAILED


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


def cmd_diff(args: argparse.Namespace, files: list[str] | None = None) -> int:
    """Each scenario on both systems, then diff.html (harness/diffrun.py)."""
    if args.backend != "local":
        raise UserError("--system both runs on the local backend only: drop --backend")
    if args.hadoop_version:
        from harness.systems.hadoop.fetch import DEFAULT_VERSION, is_release
        if not is_release(args.hadoop_version):
            raise UserError(f"--hadoop-version {args.hadoop_version!r} is not a release "
                            f"number: use e.g. {DEFAULT_VERSION}")
    run_both = _function("harness.diffrun", "run_both", "diff")
    files = scenario_files(args.files) if files is None else files
    return _exit_for(run_both(files, args.backend, args.out, args.seed, args.keep,
                              None if args.quiet else _progress, args.hadoop_version))


def select(files: list[str], scenarios: dict, patterns: Sequence[str]) -> list[str]:
    """The files whose scenario name (or, for a file that does not load, its file name)
    matches one of `patterns`, case-insensitively: a glob when it has *, ? or [, else a
    substring, as pytest -k's simple form."""
    def matches(name: str, pattern: str) -> bool:
        name, pattern = name.lower(), pattern.lower()
        if any(c in pattern for c in "*?["):
            return fnmatch.fnmatchcase(name, pattern)
        return pattern in name

    chosen = []
    for path in files:
        names = {Path(path).stem}
        if scenarios.get(path) is not None:
            names.add(scenarios[path].name)
        if any(matches(n, p) for n in names for p in patterns):
            chosen.append(path)
    if not chosen:
        shown = " ".join(f"-k {p}" for p in patterns)
        raise UserError(f"{shown}: no scenario matches (of {len(files)} given; "
                        f"hdfs-chaos list shows the names)")
    return chosen


def skip_other_backends(files: list[str], scenarios: dict, backend: str) -> list[str]:
    """The files whose scenario runs on `backend`; each one left out says why (stderr)."""
    kept = []
    for path in files:
        sc = scenarios.get(path)
        refusal = sc.backend_refusal(backend) if sc is not None else None
        if refusal:
            print(f"{sc.name}: skipped, it {refusal}", file=sys.stderr)
            continue
        kept.append(path)
    if files and not kept:
        raise UserError(f"no scenario given runs on the {backend} backend: use --backend local")
    return kept


def cmd_run(args: argparse.Namespace) -> int:
    files = scenario_files(args.files)
    scenarios, issues = validate_files(files)
    if args.select:
        files = select(files, scenarios, args.select)
        issues = [i for i in issues if i.file in files]
        scenarios = {path: sc for path, sc in scenarios.items() if path in files}
    files = skip_other_backends(files, scenarios, args.backend)
    if args.repeat < 1:
        raise UserError(f"--repeat {args.repeat}: give a number of runs, 1 or more")
    if args.workers < 1:
        raise UserError(f"--workers {args.workers}: give a number of runs at a time, 1 or more")
    files = [path for path in files for _ in range(args.repeat)]
    if args.system == "both":
        if args.workers > 1:
            raise UserError("--workers does not work with --system both: drop --workers")
        if args.fail_fast or args.json:
            raise UserError("--fail-fast and --json do not work with --system both: use "
                            "hdfs-chaos diff, whose diff.html compares the systems")
        return cmd_diff(args, files)
    if issues:
        for issue in issues:
            print(issue, file=sys.stderr)
        return EXIT_BAD_INPUT
    system = args.system or ("hadoop" if args.hadoop_version else None)
    if system or args.hadoop_version:
        from harness.systems import system_of
        from harness.systems.hadoop.fetch import DEFAULT_VERSION, is_release
        if args.hadoop_version and not is_release(args.hadoop_version):
            raise UserError(f"--hadoop-version {args.hadoop_version!r} is not a release "
                            f"number: use e.g. {DEFAULT_VERSION}")
        bad = [f"{path}: {issue}" for path, sc in scenarios.items()
               for issue in system_of(sc, system, args.hadoop_version).issues(sc)]
        if bad:
            for line in bad:
                print(line, file=sys.stderr)
            return EXIT_BAD_INPUT
    chosen = {"system": system, "hadoop_version": args.hadoop_version} if system else {}
    progress = None if args.quiet else _progress
    if args.workers > 1 and len(files) > 1:
        return _run_parallel(args, files, progress, chosen)
    run_scenarios = _function("harness.runner", "run_scenarios", "run")
    # --fail-fast runs (and verifies) one scenario at a time, to know a failure at once;
    # otherwise all run first and are verified in one Spark batch, which is far cheaper.
    batches = [[path] for path in files] if args.fail_fast else [files]
    outcomes = []
    for done, batch in enumerate(batches, 1):
        # with --json, stdout holds the JSON lines only: the result lines go to stderr
        with contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext():
            outcome = run_scenarios(batch, args.backend, args.out, args.seed, args.keep,
                                    progress, **chosen)
        outcomes.append(outcome)
        if args.json:
            for verdict in _verdicts(outcome):
                print(json.dumps(scenario_json(verdict)), flush=True)
        if args.fail_fast and _exit_for(outcome) != EXIT_OK and done < len(batches):
            left = len(batches) - done
            print(f"{PROG}: --fail-fast: stopped after a failure; {left} scenario"
                  f"{'s' if left != 1 else ''} not run", file=sys.stderr)
            break
    return max(_exit_for(o) for o in outcomes)


def _run_parallel(args: argparse.Namespace, files: list[str], progress: Any,
                  chosen: dict) -> int:
    """`run --workers N`: harness.runner.run_parallel, then the --json lines and the
    --fail-fast note, in the order of the scenarios given."""
    run_parallel = _function("harness.runner", "run_parallel", "run")
    with contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext():
        verdicts, not_run = run_parallel(files, args.workers, args.backend, args.out, args.seed,
                                         args.keep, progress, fail_fast=args.fail_fast, **chosen)
    if args.json:
        for verdict in verdicts:
            print(json.dumps(scenario_json(verdict)), flush=True)
    if not_run:
        print(f"{PROG}: --fail-fast: stopped after a failure; {not_run} scenario"
              f"{'s' if not_run != 1 else ''} not run", file=sys.stderr)
    return _exit_for(verdicts)


def _verdicts(outcome: Any) -> list:
    """The verdicts in what a runner returned (a list of them; a bool or an exit code
    has none)."""
    if isinstance(outcome, (list, tuple)):
        return list(outcome)
    return []


def scenario_json(verdict: Any) -> dict:
    """What `run --json` prints for one scenario (a harness.reconcile.verdict.Verdict):
    name, verdict (pass or fail), run folder, the checks that failed or broke, the
    expectations not met, and why a run failed without a check failing (an error, a run
    that did not complete)."""
    return {"name": verdict.scenario, "verdict": "pass" if verdict.passed else "fail",
            "run_dir": verdict.run_dir,
            "failed_checks": [c.id for c in verdict.checks if c.status in ("fail", "error")],
            "unmet_expectations": [e.what for e in verdict.unmet],
            "error": verdict.error, "run_status": verdict.run_status or "completed"}


def _run_dirs(arguments: Iterable[str]) -> list[str]:
    """The run folders named: a folder of runs (results/) stands for the runs in it (the
    folders with events/), and the suite report's own plots/ (beside its index.html, which
    `results/*/` also matches) is passed over."""
    arguments = list(arguments)
    missing = [d for d in arguments if not Path(d).is_dir()]
    if missing:
        raise UserError(f"not a run folder: {', '.join(missing)}")
    run_dirs: list[str] = []
    for argument in arguments:
        folder = Path(argument)
        if not (folder / "events").is_dir():
            if folder.name == "plots" and (folder.parent / "index.html").is_file() \
                    and len(arguments) > 1:
                continue
            inner = sorted(p for p in folder.iterdir() if (p / "events").is_dir())
            if inner:
                run_dirs += [str(p) for p in inner]
                continue
        run_dirs.append(argument)
    from harness.rundir import check_run_dirs   # before a JVM starts: one line, exit 2
    problem = check_run_dirs(run_dirs)
    if problem:
        raise UserError(problem)
    return run_dirs


def cmd_verify(args: argparse.Namespace) -> int:
    run_dirs = _run_dirs(args.run_dirs)
    verify_runs = _function("harness.reconcile.api", "verify_runs", "verify")
    verdicts = verify_runs(run_dirs, args.spark_master)
    result_line = _function("harness.runner", "result_line", "verify")
    for run_dir, verdict in zip(run_dirs, verdicts):   # as `run` ends: a line per run
        verdict.run_dir = run_dir
        print(result_line(verdict))
    return _exit_for(verdicts)


def cmd_report(args: argparse.Namespace) -> int:
    run_dirs = _run_dirs(args.run_dirs)
    out = args.out or os.path.commonpath([str(Path(d).resolve().parent) for d in run_dirs])
    build_suite_report = _function("harness.reconcile.api", "build_suite_report", "report")
    index = build_suite_report(run_dirs, out, rewrite_runs=args.rewrite_runs)
    print(suite_summary(run_dirs, index or os.path.join(out, "index.html")))
    return EXIT_OK


def suite_summary(run_dirs: Sequence[str], index: str) -> str:
    """`N runs: X passed, Y failed; suite report: INDEX`, from the runs' verdict.json."""
    from harness.reconcile.verdict import Verdict, VerdictError
    passed = failed = missing = 0
    for run_dir in run_dirs:
        try:
            with open(os.path.join(run_dir, "verdict.json"), encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError):
            missing += 1
            continue
        try:
            ok = Verdict.from_json(data).passed
        except VerdictError:   # not a verdict: it did not pass
            ok = False
        if ok:
            passed += 1
        else:
            failed += 1
    total = len(run_dirs)
    none = f", {missing} without a verdict" if missing else ""
    return (f"{total} run{'s' if total != 1 else ''}: {passed} passed, {failed} failed{none}; "
            f"suite report: {index}")


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
