"""`hdfs-chaos known-bugs`: every known-bug scenario (known-bugs/*.yaml, each with its
`known_bug:` metadata) run on every Hadoop release it names in `affects` and `fixed`,
N times each, and once on the mini-HDFS unless its `systems:` leaves the mini-HDFS out;
all runs verified in one Spark batch, then judged into the matrix
(harness/reconcile/knownbugs.py), printed and written to <out>/known-bugs.html and
<out>/known-bugs.parquet.

Run folders go where `hdfs-chaos diff` puts them: <out>/hadoop-<release>/<run-id> and
<out>/minihdfs/<run-id>. Everything that would stop a run (an invalid scenario, one
without `known_bug:`, a release not fetched yet, a setting a release refuses) is found
before the first cluster starts, and is bad input.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from pathlib import Path
from typing import Callable, Sequence

from harness.reconcile.knownbugs import MINIHDFS, release_order
from harness.scenario import Scenario, ScenarioError, validate_files
from harness.scenario.model import RELEASE_PATTERN

_RELEASE = re.compile(RELEASE_PATTERN)


class KnownBugsError(Exception):
    """Bad input to `known-bugs` (the message is one line naming the fix)."""


@dataclasses.dataclass(frozen=True)
class Task:
    """One run of the plan: a known-bug scenario on one release (or the mini-HDFS)."""
    path: str
    scenario: Scenario
    release: str                     # a Hadoop release, or "minihdfs"
    repeat: int                      # 1..N

    @property
    def system(self) -> str:
        return MINIHDFS if self.release == MINIHDFS else "hadoop"

    @property
    def folder(self) -> str:
        return MINIHDFS if self.release == MINIHDFS else f"hadoop-{self.release}"


def parse_list(values: Sequence[str] | None) -> list[str]:
    """`--versions 3.3.6,3.4.2` (or the option repeated) as a list, in the order given."""
    out: list[str] = []
    for value in values or ():
        out += [v.strip() for v in value.split(",") if v.strip()]
    return list(dict.fromkeys(out))


def load_known_bugs(folder: str, only: Sequence[str] = ()) -> list[tuple[str, Scenario]]:
    """The known-bug scenarios of `folder` (its *.yaml / *.yml), sorted by file name;
    with `only`, those of the JIRAs named. Raises ScenarioError for invalid files and
    KnownBugsError for a scenario without `known_bug:`, a JIRA declared twice, or an
    `only` that names no JIRA of the folder."""
    path = Path(folder)
    if not path.is_dir():
        raise KnownBugsError(f"{folder}: no such folder of known-bug scenarios (give --dir)")
    files = sorted(str(p) for p in path.iterdir() if p.suffix in (".yaml", ".yml"))
    if not files:
        raise KnownBugsError(f"{folder}: no .yaml known-bug scenarios in this folder")
    scenarios, issues = validate_files(files)
    if issues:
        raise ScenarioError(issues)
    found: list[tuple[str, Scenario]] = []
    by_jira: dict[str, str] = {}
    for f in files:
        sc = scenarios[f]
        if sc.known_bug is None:
            raise KnownBugsError(f"{f}: no known_bug: section (jira, bug, affects, fixed, "
                                 "symptom); every scenario of a known-bugs folder has one")
        jira = sc.known_bug.jira
        if jira in by_jira:
            raise KnownBugsError(f"{f}: {jira} is declared by {by_jira[jira]} already; "
                                 "one scenario per JIRA")
        by_jira[jira] = f
        found.append((f, sc))
    if only:
        unknown = [j for j in only if j not in by_jira]
        if unknown:
            raise KnownBugsError(f"--only {','.join(unknown)}: no such JIRA in {folder} "
                                 f"(there: {', '.join(sorted(by_jira))})")
        found = [(f, sc) for f, sc in found if sc.known_bug.jira in only]
    return found


def releases_of(sc: Scenario, versions: Sequence[str] | None) -> list[str]:
    """The releases a known-bug scenario runs on: its affected and fixed Hadoop releases
    (those of `versions` only, when given) by version, then the mini-HDFS unless its
    `systems:` leaves it out."""
    bug = sc.known_bug
    hadoop = [r for r in list(bug.affects) + list(bug.fixed)
              if versions is None or r in versions]
    out = sorted(dict.fromkeys(hadoop), key=release_order)
    if MINIHDFS in tuple(sc.systems):
        out.append(MINIHDFS)
    return out


def plan(bugs: Sequence[tuple[str, Scenario]], versions: Sequence[str] | None,
         repeat: int) -> list[Task]:
    """Every run, JIRA by JIRA, release by release: N on each Hadoop release, one on the
    mini-HDFS (its runs are deterministic: one says whether it behaves as the fix)."""
    tasks = []
    for path, sc in bugs:
        for release in releases_of(sc, versions):
            n = 1 if release == MINIHDFS else repeat
            tasks += [Task(path, sc, release, i) for i in range(1, n + 1)]
    return tasks


def check_versions(versions: Sequence[str]) -> None:
    bad = [v for v in versions if not _RELEASE.match(v)]
    if bad:
        raise KnownBugsError(f"--versions {','.join(bad)}: not a release number; give e.g. "
                             "--versions 3.2.4,3.3.6,3.4.2")


def check_runnable(tasks: Sequence[Task], fetched: Callable[[str], bool] | None = None,
                   issues_of: Callable[[Scenario, str], list[str]] | None = None) -> None:
    """Refuse a plan that cannot run whole: a release whose jars are not fetched (one
    line naming `tools/setup.sh --hadoop X`), or a scenario a release it names cannot run."""
    from harness.systems import get_system
    from harness.systems.hadoop import fetch
    fetched = fetched or fetch.is_fetched
    issues_of = issues_of or (lambda sc, release: get_system("hadoop", release).issues(sc))
    releases = sorted({t.release for t in tasks if t.system == "hadoop"}, key=release_order)
    missing = [r for r in releases if not fetched(r)]
    if missing:
        fix = " ".join(f"--hadoop {r}" for r in missing)
        them = "it" if len(missing) == 1 else "them"
        raise KnownBugsError(f"Hadoop {', '.join(missing)} not fetched yet: run tools/setup.sh "
                             f"{fix} (or leave {them} out with --versions)")
    problems = []
    for path, release in dict.fromkeys((t.path, t.release) for t in tasks
                                       if t.system == "hadoop"):
        sc = next(t.scenario for t in tasks if t.path == path)
        problems += [f"{path}: on hadoop {release}: {i}" for i in issues_of(sc, release)]
    if problems:
        raise KnownBugsError(" | ".join(problems))


def run_known_bugs(folder: str, out: str = "results", versions: Sequence[str] | None = None,
                   only: Sequence[str] = (), repeat: int = 1, seed: int | None = None,
                   keep: bool = False, progress=None) -> int:
    """Run the plan, verify every run in one Spark batch, print the result lines and the
    matrix, write known-bugs.html and .parquet; returns 0 when every cell is as declared,
    1 otherwise (KnownBugsError and ScenarioError: bad input, before anything ran)."""
    from harness.reconcile.knownbugs import all_as_declared, cells, format_matrix, write_matrix
    from harness.runner import result_line, run_unverified, verify_outcomes
    if repeat < 1:
        raise KnownBugsError(f"--repeat {repeat}: give a number of runs, 1 or more")
    if versions is not None:
        check_versions(versions)
    bugs = load_known_bugs(folder, only)
    named = {r for _, sc in bugs for r in list(sc.known_bug.affects) + list(sc.known_bug.fixed)}
    for v in versions or ():
        if v not in named:   # not an error: another folder or --only may name it
            print(f"known-bugs: note: no known bug chosen names release {v}", file=sys.stderr)
    tasks = plan(bugs, versions, repeat)
    if not tasks:
        raise KnownBugsError(f"nothing to run: no known bug of {folder} names "
                             f"{', '.join(versions or ())}, and none runs on the mini-HDFS")
    check_runnable(tasks)
    say = progress or (lambda message: None)
    outcomes: list[tuple[Task, object]] = []
    interrupted = False
    for number, task in enumerate(tasks, 1):
        n = repeat if task.system == "hadoop" else 1
        system = task.release if task.system == "minihdfs" else f"hadoop {task.release}"
        say(f"[{number}/{len(tasks)}] {task.scenario.known_bug.jira} on {system}, "
            f"run {task.repeat} of {n}")
        outcome = run_unverified(task.scenario, "local", os.path.join(out, task.folder), seed,
                                 keep, progress, system=task.system,
                                 hadoop_version=task.release if task.system == "hadoop" else None)
        outcomes.append((task, outcome))
        if outcome.status == "interrupted":
            interrupted = True
            break
    verdicts = verify_outcomes([o for _, o in outcomes], progress)
    for v in verdicts:
        print(result_line(v), flush=True)
    by_cell: dict[tuple[str, str], list] = {}
    for (task, _), verdict in zip(outcomes, verdicts):
        by_cell.setdefault((task.path, task.release), []).append(verdict)
    entries = []
    for path, sc in bugs:
        for release in releases_of(sc, versions):
            got = by_cell.get((path, release), [])
            n = 1 if release == MINIHDFS else repeat
            entries.append((sc.known_bug, release, got, None if len(got) == n else
                            f"interrupted after {len(got)} of {n} runs"))
    matrix = cells(entries)
    print(format_matrix(matrix), flush=True)
    html = write_matrix(matrix, out)
    print(f"known-bugs: {os.path.relpath(html)} and known-bugs.parquet", flush=True)
    if interrupted:
        raise KeyboardInterrupt
    return 0 if all_as_declared(matrix) else 1
