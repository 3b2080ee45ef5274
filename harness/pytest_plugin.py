"""pytest plugin: every scenario YAML file is a test (`pytest scenarios/`).

Files ending in .yaml or .yml under a folder named `scenarios` are collected as one
`ScenarioItem` each, marked `scenario` (and `docker` with `--backend docker`). So are
those under a folder named `known-bugs` (`hdfs-chaos known-bugs`), marked `known_bug`
too and always run on the mini-HDFS, which must pass them as the release that fixed the
bug does; one whose `systems:` leaves the mini-HDFS out is skipped with its reason. Running
an item runs the scenario through `harness.runner.run_scenario`; the test fails when the
verdict did not pass, and the failure is told in the scenario's terms: which checks
failed with their evidence rows, which expectations were not met with the events behind
them, where the run's results are. An invalid scenario fails with its validation
messages. The JUnit XML (`--junitxml`) gets the same reasons: the failure's message is its
first line (with the failed checks and unmet expectations in short), and the test case's
properties hold `run_dir`, `report`, `failed_checks` and `unmet`.

Verification is batched: the first scenario item of a backend runs every selected
scenario of that backend, then one Spark job verifies all their runs (Spark's start and
per-job costs are paid once, not once a scenario); every item still passes or fails on
its own verdict. `--scenario-workers N` runs N of them at a time (as `hdfs-chaos run
--workers N`); `--verify-each` verifies each run as it ends instead.

Options: `--backend local|docker|all` (default local; `all` runs every scenario on both
backends, the docker runs skipped when no Docker engine answers), `--out DIR`
(default results; `--results DIR`, its old name as in the CLI, still works with a
deprecation warning).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest

from harness.reconcile.verdict import ExpectItem, Verdict
from harness.scenario import Scenario, ScenarioError
from harness.scenario.loader import check_scenario_file

EVIDENCE_ROWS = 10


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hdfs-chaos", "hdfs-chaos scenarios")
    group.addoption("--backend", choices=("local", "docker", "all"), default="local",
                    help="where scenario clusters run: local processes, docker containers, "
                         "or all (both; docker skipped without an engine)")
    group.addoption("--scenario-workers", type=int, default=1, metavar="N",
                    help="scenario runs at a time in a batch, each in a worker process with "
                         "its own ports, as `hdfs-chaos run --workers N` (default 1)")
    group.addoption("--verify-each", action="store_true",
                    help="verify each scenario's run as it ends (default: one Spark batch)")
    group.addoption("--out", default="results", metavar="DIR",
                    help="folder for the run folders of scenarios (default: results)")
    # the old name, as `hdfs-chaos run --results`: hidden, and pytest_configure warns
    group.addoption("--results", dest="results_deprecated", default=None, metavar="DIR",
                    help=argparse.SUPPRESS)


def pytest_configure(config: pytest.Config) -> None:
    workers = config.getoption("scenario_workers", 1)
    if workers is not None and workers < 1:
        raise pytest.UsageError(f"--scenario-workers {workers}: give a number of runs at a "
                                f"time, 1 or more")
    old = config.getoption("results_deprecated", None)
    if old is not None:
        config.option.out = old
        config.issue_config_time_warning(pytest.PytestDeprecationWarning(
            "--results is deprecated and goes in a later release; use --out"), stacklevel=2)
    config.addinivalue_line("markers", "scenario: a scenario of the library run end to end")
    config.addinivalue_line("markers", "docker: needs a Docker engine")
    config.addinivalue_line("markers", "known_bug: a known-bug scenario run on the mini-HDFS")


KNOWN_BUGS_FOLDER = "known-bugs"


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    if file_path.suffix in (".yaml", ".yml"):
        folders = _folders(file_path, parent)
        if "scenarios" in folders or KNOWN_BUGS_FOLDER in folders:
            return ScenarioFile.from_parent(parent, path=file_path)
    return None


def _folders(path: Path, parent: pytest.Collector) -> tuple[str, ...]:
    """The folders of `path` below the rootdir (so that a checkout that itself lives
    under some `scenarios/` does not turn every YAML into a test)."""
    try:
        return path.relative_to(parent.config.rootpath).parts[:-1]
    except ValueError:
        return path.parts[-2:-1]


class ScenarioFile(pytest.File):
    """One scenario file; it holds a single item named after the scenario."""

    def collect(self):
        scenario, issues = check_scenario_file(self.path)
        # Name the file as the user ran pytest, so that messages are short and clickable.
        shown = os.path.relpath(self.path, self.config.invocation_params.dir)
        issues = [dataclasses.replace(issue, file=shown) for issue in issues]
        name = scenario.name if scenario is not None else self.path.stem
        option = self.config.getoption("backend", "local")
        backends = ("local", "docker") if option == "all" else (option,)
        known_bug = KNOWN_BUGS_FOLDER in _folders(self.path, self)
        for backend in backends:
            item = ScenarioItem.from_parent(
                self, name=name if len(backends) == 1 else f"{name}[{backend}]",
                scenario=scenario, issues=issues, backend=backend,
                system="minihdfs" if known_bug else None)
            item.add_marker(pytest.mark.scenario)
            if known_bug:
                item.add_marker(pytest.mark.known_bug)
            if backend == "docker":
                item.add_marker(pytest.mark.docker)
            yield item


class ScenarioInvalid(Exception):
    """The scenario file does not validate."""

    def __init__(self, issues):
        self.issues = issues
        super().__init__("\n".join(str(i) for i in issues))


class ScenarioFailed(Exception):
    """The run's verdict did not pass."""

    def __init__(self, scenario: Scenario, verdict: "Verdict"):
        self.scenario = scenario
        self.verdict = verdict
        super().__init__(f"scenario {scenario.name} failed")


class RunnerMissing(Exception):
    """harness.runner cannot be imported."""


class ScenarioItem(pytest.Item):
    """Runs one scenario and passes when its verdict passes. `system` overrides the
    scenario's cluster.system (a known-bug scenario runs on the mini-HDFS)."""

    def __init__(self, *, scenario: Scenario | None, issues, backend: str = "local",
                 system: str | None = None, **kwargs):
        super().__init__(**kwargs)
        self.backend = backend
        self.system = system
        self.scenario = scenario
        self.issues = issues
        self.verdict: Verdict | None = None

    def runtest(self) -> None:
        if self.scenario is None:
            raise ScenarioInvalid(self.issues)
        if not self.runs_here():
            pytest.skip(f"{self.scenario.name} does not run on {self.system}: "
                        f"{self.scenario.systems_reason or 'see its systems:'}")
        refusal = self.scenario.backend_refusal(self.backend)
        if refusal:
            pytest.skip(f"{self.scenario.name} {refusal}")
        try:
            from harness.runner import run_scenario
        except ImportError as e:
            raise RunnerMissing(f"cannot run scenarios: harness.runner is not available "
                                f"({e})") from None
        if self.backend == "docker" and self.config.getoption("backend") == "all":
            reason = _docker_missing()
            if reason:
                pytest.skip(f"docker backend: {reason}")
        results = self.config.getoption("out", "results")
        if self.config.getoption("verify_each", False):
            self.verdict = run_scenario(self.scenario, backend=self.backend, results_dir=results,
                                        system=self.system)
        else:
            self.verdict = _batch(self.session, self.backend).verdict_of(self)
        if not self.verdict.passed:
            for name, value in failure_properties(self.verdict):
                self.user_properties.append((name, value))
            raise ScenarioFailed(self.scenario, self.verdict)

    def runs_here(self) -> bool:
        """False for a scenario whose systems: leaves out the system this item forces."""
        return self.system is None or self.system in tuple(self.scenario.systems)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ScenarioInvalid):
            shown = os.path.relpath(self.path, self.config.invocation_params.dir)
            return "\n".join([f"scenario file {shown} is invalid:"]
                             + [f"  {issue}" for issue in excinfo.value.issues])
        if isinstance(excinfo.value, ScenarioError):
            return "\n".join(f"  {issue}" for issue in excinfo.value.issues)
        if isinstance(excinfo.value, ScenarioFailed):
            return describe_failure(excinfo.value.scenario, excinfo.value.verdict)
        if isinstance(excinfo.value, RunnerMissing):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"scenario: {self.name}"


class _Batch:
    """The scenario items of one backend: run them all, then verify them in one batch."""

    def __init__(self, session: pytest.Session, backend: str):
        self.session, self.backend = session, backend
        self.verdicts: dict[str, Verdict] = {}

    def verdict_of(self, item: "ScenarioItem") -> Verdict:
        if item.nodeid not in self.verdicts:
            self._run_pending(first=item)
        return self.verdicts[item.nodeid]

    def _run_pending(self, first: "ScenarioItem") -> None:
        from harness.runner import run_unverified, verify_outcomes
        items = [first] + [i for i in self.session.items
                           if isinstance(i, ScenarioItem) and i is not first
                           and i.backend == self.backend and i.scenario is not None
                           and i.runs_here() and i.nodeid not in self.verdicts]
        results = first.config.getoption("out", "results")
        workers = first.config.getoption("scenario_workers", 1)
        if workers > 1 and len(items) > 1:
            ran = self._run_in_pool(items, min(workers, len(items)), results)
        else:
            ran = []
            for item in items:
                ran.append((item, run_unverified(item.scenario, backend=self.backend,
                                                 results_dir=results, system=item.system)))
                if ran[-1][1].status == "interrupted":
                    raise KeyboardInterrupt
        for (item, _), verdict in zip(ran, verify_outcomes([o for _, o in ran])):
            self.verdicts[item.nodeid] = verdict

    def _run_in_pool(self, items: list["ScenarioItem"], workers: int, results: str) -> list:
        """The items' runs `workers` at a time (harness.runner.run_pool: a process each,
        its own port slice); Ctrl-C stops every running run, which heals and cleans up."""
        from harness.runner import _stop_workers, run_file, run_pool
        pool = run_pool(workers)
        try:
            futures = [pool.submit(run_file, str(item.path), self.backend, results, None,
                                   False, True, item.system, None) for item in items]
            ran = []
            for item, future in zip(items, futures):
                try:
                    outcome = future.result()
                except Exception as e:   # the worker broke (not the run): this item fails
                    self.verdicts[item.nodeid] = Verdict(
                        scenario=item.scenario.name, passed=False,
                        error=f"the run's worker broke: {type(e).__name__}: {e}")
                    continue
                if outcome.status == "interrupted":
                    raise KeyboardInterrupt
                ran.append((item, outcome))
            return ran
        except KeyboardInterrupt:
            _stop_workers(pool)
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _batch(session: pytest.Session, backend: str) -> _Batch:
    batches = session.config.stash.setdefault(_BATCHES, {})
    if backend not in batches:
        batches[backend] = _Batch(session, backend)
    return batches[backend]


_BATCHES = pytest.StashKey[dict]()
_DOCKER_STATE: list = []


def _docker_missing() -> str | None:
    """Why docker runs cannot happen here (no engine answers), or None; asked once."""
    if not _DOCKER_STATE:
        try:
            import docker
            docker.from_env(timeout=5).ping()
            _DOCKER_STATE.append(None)
        except Exception as e:
            _DOCKER_STATE.append(f"no Docker engine answers ({type(e).__name__}); "
                                 "run tools/setup_docker.sh as root to start one")
    return _DOCKER_STATE[0]


def _unmet(verdict: Verdict) -> list[ExpectItem]:
    return [e for e in verdict.expect if e.status not in ("pass", "skip", "not_observable")]


def _failed_checks(verdict: Verdict) -> list[str]:
    return [c.id for c in verdict.checks if c.status in ("fail", "error")]


def failure_properties(verdict: Verdict) -> list[tuple[str, str]]:
    """The JUnit XML properties of a failed scenario: where its results and report are,
    the failed checks, and each unmet expectation with its evidence in short."""
    from harness.reconcile.evidence import with_brief
    props = []
    where = verdict.run_dir
    if where:
        props += [("run_dir", str(where)), ("report", os.path.join(str(where), "report.html"))]
    failed = _failed_checks(verdict)
    if failed:
        props.append(("failed_checks", ",".join(failed)))
    for e in _unmet(verdict):
        props.append(("unmet", with_brief(e.to_json())))
    return props


def describe_failure(scenario: Scenario, verdict: Verdict) -> str:
    """The failure of a run in the scenario's terms: failed checks with their evidence,
    unmet expectations with the events behind them, and where the results are. The
    first line says it in short (it is the JUnit XML failure's message)."""
    run_id = verdict.run_id
    failed, unmet = _failed_checks(verdict), _unmet(verdict)
    reasons = [f"failed checks {','.join(failed)}"] if failed else []
    reasons += [f"unmet: {'; '.join(e.what for e in unmet)}"] if unmet else []
    lines = [f"scenario {scenario.name} failed" + (f" (run {run_id})" if run_id else "")
             + (f": {' | '.join(reasons)}" if reasons else "")]
    where = verdict.run_dir
    if where:
        lines.append(f"  results: {where}")
    for check in verdict.checks:
        if check.status not in ("fail", "error"):
            continue
        must_fail = check.id in scenario.expect.must_fail
        lines.append(f"  check {check.id}: {check.status.upper()}"
                     + (" (expected to fail)" if must_fail else ""))
        if check.reason:
            lines.append(f"    {check.reason}")
        evidence = check.evidence or []
        for row in evidence[:EVIDENCE_ROWS]:
            lines.append(f"    {_row(row)}")
        if len(evidence) > EVIDENCE_ROWS:
            lines.append(f"    ... and {len(evidence) - EVIDENCE_ROWS} more rows")
    for expectation in verdict.expect:
        if expectation.status not in ("pass", "skip"):
            lines.append(f"  expect {expectation.what}: {expectation.status.upper()}")
            evidence = expectation.evidence or []
            for item in evidence[:EVIDENCE_ROWS]:
                what = item.get("what") if isinstance(item, dict) else None
                lines.append(f"    {what or _row(item)}")
            more = len(evidence) - EVIDENCE_ROWS + (expectation.evidence_more or 0)
            if more > 0:
                lines.append(f"    ... and {more} more")
    if verdict.exercised is not None:
        # what the run proved at all: a listed check missing here is one that skipped
        lines.append("  exercised: " + (", ".join(verdict.exercised) or "no check"))
    for error in verdict.run_errors or []:
        lines.append(f"  run: {error}")
    if verdict.error:
        lines.append(f"  {verdict.error}")
    if not reasons and len(lines) == 1 + bool(where):
        lines.append("  the verdict did not pass, but names no failed check or expectation")
    return "\n".join(lines)


def _row(row: Any) -> str:
    if isinstance(row, dict):
        return json.dumps(row, default=str, sort_keys=False)
    return str(row)
