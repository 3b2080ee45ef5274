"""The pytest plugin (harness.pytest_plugin), run inside pytester with a fake runner."""

from __future__ import annotations

import importlib.metadata
import sys
import types
from pathlib import Path

import pytest

from harness.reconcile.verdict import Verdict

pytest_plugins = ["pytester"]

CORPUS = Path(__file__).resolve().parent.parent / "scenario_corpus"
EXAMPLE = (CORPUS / "valid" / "architecture-example.yaml").read_text()
MINIMAL = "name: {name}\nworkload: [{{id: w1, client: c1, op: read, path: /f}}]\n"


def _plugin_args() -> list[str]:
    """Load the plugin explicitly unless its entry point (pip install -e .) does."""
    installed = any(ep.name == "hdfs_chaos"
                    for ep in importlib.metadata.entry_points(group="pytest11"))
    return [] if installed else ["-p", "harness.pytest_plugin"]


@pytest.fixture
def runner(monkeypatch):
    """A fake harness.runner: verdicts by scenario name, every call recorded."""
    module = types.ModuleType("harness.runner")
    module.calls = []
    module.verdicts = {}
    module.systems = {}          # scenario name -> the system the plugin asked for

    def run_scenario(scenario, backend, results_dir, system=None):
        module.calls.append((scenario.name, backend, results_dir))
        module.systems[scenario.name] = system
        # the verdict as verdict.json holds it, read into its typed view
        return Verdict.from_json(module.verdicts.get(scenario.name, {"passed": True,
                                                                    "checks": []}))

    def run_unverified(scenario, backend, results_dir, system=None):
        # the batched path: an outcome now, its verdict from verify_outcomes
        return types.SimpleNamespace(status="completed", verdict=run_scenario(
            scenario, backend, results_dir, system))

    def verify_outcomes(outcomes, progress=None):
        return [o.verdict for o in outcomes]

    module.run_scenario = run_scenario
    module.run_unverified = run_unverified
    module.verify_outcomes = verify_outcomes
    monkeypatch.setitem(sys.modules, "harness.runner", module)
    return module


@pytest.fixture
def library(pytester):
    folder = pytester.mkdir("scenarios")
    (folder / "crash.yaml").write_text(EXAMPLE)
    (folder / "fine.yml").write_text(MINIMAL.format(name="fine"))
    (folder / "typo.yaml").write_text(
        (CORPUS / "unknown-fault-kind.yaml").read_text())
    other = pytester.mkdir("elsewhere")
    (other / "not-a-scenario.yaml").write_text("just: data\n")
    return folder


FAILED_VERDICT = {
    "scenario": "client-crash-after-hflush", "run_id": "20240101-000000-crash",
    "passed": False,
    "run_dir": "results/20240101-000000-crash",
    "checks": [
        {"id": "P1", "status": "pass", "evidence": []},
        {"id": "L1", "status": "fail",
         "evidence": [{"path": "/data/f1", "holder": "c1", "from": 1.0, "to": 3.5},
                      {"path": "/data/f1", "holder": "c2", "from": 2.0, "to": 4.0}]},
        {"id": "D1", "status": "fail", "evidence": [{"row": i} for i in range(12)]},
    ],
    "exercised": ["P1", "L1", "D1"],
    "expect": [{"what": "/data/f1 closed (got open)", "status": "fail",
                "evidence": [{"t": 5.0, "node": "nn", "brief": "1002 by c2 +5.0s never committed",
                              "what": "recovery 1002 started at +5.0s by c2: never committed"}]},
               {"what": "/data/f1 lease_recovered", "status": "pass"},
               {"what": "L3 expected but nothing exercised it", "status": "fail"}],
}


def test_scenarios_are_collected_as_marked_items(pytester, library, runner):
    result = pytester.runpytest(*_plugin_args(), "--collect-only", "-q", "-m", "scenario")
    result.stdout.fnmatch_lines(["scenarios/crash.yaml::client-crash-after-hflush",
                                 "scenarios/fine.yml::fine",
                                 "scenarios/typo.yaml::typo"])
    assert "not-a-scenario" not in result.stdout.str()
    assert runner.calls == []   # collecting runs nothing


def test_docker_backend_adds_the_docker_marker(pytester, library, runner):
    result = pytester.runpytest(*_plugin_args(), "--collect-only", "-q", "-m", "docker")
    assert "fine" not in result.stdout.str()
    result = pytester.runpytest(*_plugin_args(), "--collect-only", "-q", "-m", "docker",
                                "--backend", "docker")
    result.stdout.fnmatch_lines(["scenarios/fine.yml::fine"])


def test_passing_failing_and_invalid_scenarios(pytester, library, runner):
    runner.verdicts["client-crash-after-hflush"] = FAILED_VERDICT
    result = pytester.runpytest(*_plugin_args(), "--backend", "local", "--out", "out")
    result.assert_outcomes(passed=1, failed=2)
    assert sorted(runner.calls) == [("client-crash-after-hflush", "local", "out"),
                                    ("fine", "local", "out")]
    text = result.stdout.str()
    result.stdout.fnmatch_lines([
        "scenario client-crash-after-hflush failed (run 20240101-000000-crash): failed checks "
        "L1,D1 | unmet: /data/f1 closed (got open); L3 expected but nothing exercised it",
        "*results: results/20240101-000000-crash",
        "*check L1: FAIL",
        '*{"path": "/data/f1", "holder": "c1", "from": 1.0, "to": 3.5}',
        '*{"path": "/data/f1", "holder": "c2", "from": 2.0, "to": 4.0}',
        "*check D1: FAIL",
        "*... and 2 more rows",
        "*expect /data/f1 closed (got open): FAIL",
        "*    recovery 1002 started at +5.0s by c2: never committed",
        "*expect L3 expected but nothing exercised it: FAIL",
        "*exercised: P1, L1, D1",
    ])
    lines = text.splitlines()
    invalid = lines.index("scenario file scenarios/typo.yaml is invalid:")
    assert lines[invalid + 1:invalid + 3] == [
        "  scenarios/typo.yaml:14:11: faults[1].kind: unknown fault kind 'partitoin' "
        "(did you mean 'partition'?)",
        "  scenarios/typo.yaml:18:11: faults[2].kind: unknown fault kind 'halt' "
        "(did you mean 'heal'?)"]
    assert "check P1" not in text                      # passed checks are not noise
    assert "lease_recovered: " not in text
    assert "Traceback" not in text and "def runtest" not in text


def test_results_is_a_deprecated_alias_of_out(pytester, library, runner):
    result = pytester.runpytest(*_plugin_args(), "-k", "fine", "--results", "old")
    result.assert_outcomes(passed=1, deselected=2)
    assert runner.calls == [("fine", "local", "old")]
    result.stdout.fnmatch_lines(["*PytestDeprecationWarning: --results is deprecated and goes "
                                 "in a later release; use --out"])
    runner.calls.clear()
    result = pytester.runpytest(*_plugin_args(), "-k", "fine")
    assert runner.calls == [("fine", "local", "results")]   # the default, no warning
    assert "--results is deprecated" not in result.stdout.str()
    shown = pytester.runpytest(*_plugin_args(), "--help").stdout.str()
    assert "--out=DIR" in shown and "--results" not in shown


def test_must_fail_checks_are_marked_as_expected(pytester, runner):
    folder = pytester.mkdir("scenarios")
    (folder / "broken.yaml").write_text(
        MINIMAL.format(name="broken") + "expect: {must_fail: [P2]}\n")
    runner.verdicts["broken"] = {
        "passed": False,
        "checks": [{"id": "P2", "status": "pass", "evidence": []},
                   {"id": "P3", "status": "fail", "evidence": ["row 1"]}],
        "expect": [{"what": "P2 fails", "status": "fail"}]}
    result = pytester.runpytest(*_plugin_args())
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*scenario broken failed: failed checks P3 | unmet: P2 fails",
                                 "*check P3: FAIL", "*row 1",
                                 "*expect P2 fails: FAIL"])


def test_junit_xml_tells_why_a_scenario_failed(pytester, library, runner):
    """The JUnit XML's failure message is the failure's first line, and the test case's
    properties name the run, its report, the failed checks and each unmet expectation
    with its evidence in short."""
    import xml.etree.ElementTree as ET
    runner.verdicts["client-crash-after-hflush"] = FAILED_VERDICT
    pytester.runpytest(*_plugin_args(), "--junitxml=out.xml")
    root = ET.parse(pytester.path / "out.xml").getroot()
    case = next(c for c in root.iter("testcase") if c.get("name") == "client-crash-after-hflush")
    failure = case.find("failure")
    assert failure.get("message").startswith(
        "scenario client-crash-after-hflush failed (run 20240101-000000-crash): failed checks "
        "L1,D1 | unmet: /data/f1 closed (got open); L3 expected")
    props = [(p.get("name"), p.get("value")) for p in case.iter("property")]
    assert props == [
        ("run_dir", "results/20240101-000000-crash"),
        ("report", "results/20240101-000000-crash/report.html"),
        ("failed_checks", "L1,D1"),
        ("unmet", "/data/f1 closed (got open: 1002 by c2 +5.0s never committed)"),
        ("unmet", "L3 expected but nothing exercised it")]
    fine = next(c for c in root.iter("testcase") if c.get("name") == "fine")
    assert fine.find("properties") is None


def test_a_missing_runner_fails_with_one_line(pytester, monkeypatch):
    monkeypatch.setitem(sys.modules, "harness.runner", None)
    folder = pytester.mkdir("scenarios")
    (folder / "fine.yaml").write_text(MINIMAL.format(name="fine"))
    result = pytester.runpytest(*_plugin_args())
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*cannot run scenarios: harness.runner is not available*"])
    assert "Traceback" not in result.stdout.str()


def test_yaml_outside_a_scenarios_folder_is_not_collected(pytester, runner):
    (pytester.mkdir("data") / "x.yaml").write_text(MINIMAL.format(name="x"))
    result = pytester.runpytest(*_plugin_args(), "--collect-only", "-q")
    assert "x.yaml" not in result.stdout.str()


KNOWN_BUG = ("known_bug: {jira: HDFS-1, bug: a bug, affects: [3.3.6], fixed: [3.4.2], "
             "symptom: [D2]}\n")


def test_known_bug_scenarios_run_on_the_minihdfs(pytester, runner):
    """known-bugs/*.yaml are items too, marked known_bug, run on the mini-HDFS whatever
    their cluster.system says; one whose systems: leaves the mini-HDFS out is skipped."""
    folder = pytester.mkdir("known-bugs")
    (folder / "HDFS-1.yaml").write_text(
        MINIMAL.format(name="kb") + "cluster: {system: hadoop}\n" + KNOWN_BUG)
    (folder / "HDFS-2.yaml").write_text(
        MINIMAL.format(name="kb-hadoop-only") + "cluster: {system: hadoop}\n"
        + "systems: [hadoop]\nsystems_reason: needs a JVM\n" + KNOWN_BUG)
    (folder / "HDFS-3.yaml").write_text(MINIMAL.format(name="kb-fails") + KNOWN_BUG)
    runner.verdicts["kb-fails"] = {"passed": False, "checks": [
        {"id": "D2", "status": "fail", "evidence": ["row 1"]}]}
    result = pytester.runpytest(*_plugin_args(), "--collect-only", "-q", "-m", "known_bug")
    result.stdout.fnmatch_lines(["known-bugs/HDFS-1.yaml::kb",
                                 "known-bugs/HDFS-2.yaml::kb-hadoop-only",
                                 "known-bugs/HDFS-3.yaml::kb-fails"])
    result = pytester.runpytest(*_plugin_args(), "-rs")
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    assert runner.systems == {"kb": "minihdfs", "kb-fails": "minihdfs"}
    result.stdout.fnmatch_lines(["*scenario kb-fails failed: failed checks D2*",
                                 "*kb-hadoop-only does not run on minihdfs: needs a JVM*"])


def test_scenario_workers_run_the_batch_in_a_pool(pytester, library, runner):
    """--scenario-workers N: the batch's runs go to harness.runner's pool (N at a time), all
    verified in one batch; a worker that broke fails its item alone."""
    import concurrent.futures as cf

    import yaml
    pools = []

    def run_pool(workers):
        pools.append(workers)
        return cf.ThreadPoolExecutor(max_workers=workers)

    def run_file(path, backend, results, seed, keep, quiet, system, hadoop_version):
        name = yaml.safe_load(Path(path).read_text())["name"]
        if name == "client-crash-after-hflush":
            raise OSError("the worker died")
        return runner.run_unverified(types.SimpleNamespace(name=name), backend, results,
                                     system)

    runner.run_pool, runner.run_file, runner._stop_workers = run_pool, run_file, lambda p: None
    (library / "other.yaml").write_text(MINIMAL.format(name="other"))
    result = pytester.runpytest(*_plugin_args(), "--out", "out", "--scenario-workers", "2")
    result.assert_outcomes(passed=2, failed=2)
    assert pools == [2]
    assert sorted(runner.calls) == [("fine", "local", "out"), ("other", "local", "out")]
    result.stdout.fnmatch_lines(["*the run's worker broke: OSError: the worker died*"])


def test_scenario_workers_below_one_is_refused_in_one_line(pytester, library, runner):
    result = pytester.runpytest(*_plugin_args(), "--scenario-workers", "0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--scenario-workers 0: give a number of runs at a time, 1 or more*"])
    assert runner.calls == []
