"""The seam to the system under test (harness/systems): the harness asks a system what
it can do (`Capabilities`) and never compares its name; a system gets a `RunContext`,
not the backend; a third system is one new module (here: one class registered by the
test) that the runner runs or refuses by its capabilities alone."""

from __future__ import annotations

import ast
import json
import os
import pathlib

import pytest

import harness.runner as runner_mod
from harness.runner import Run
from harness.scenario.loader import check_scenario_text
from harness.systems import (Capabilities, RunContext, SystemError_, SystemUnderTest, get_system,
                             register, unregister)

HARNESS = pathlib.Path(__file__).resolve().parents[2] / "harness"
NAMES = {"minihdfs", "hadoop"}

# Comparisons that choose WHICH system to run from names the user gave (the diff's two
# sides, the known-bugs matrix of Hadoop releases, --hadoop-version implying hadoop, the
# default left out of a reproduce command): names, not behaviour; every other decision
# asks the system's capabilities.
CHOOSES_BY_NAME = {
    ("cli.py", "system != 'hadoop'"),
    ("diffrun.py", "system == 'hadoop'"),
    ("knownbugs.py", "t.system == 'hadoop'"),
    ("knownbugs.py", "task.system == 'hadoop'"),
    ("knownbugs.py", "task.system == 'minihdfs'"),
    ("reconcile/report.py", "system != 'minihdfs'"),
}

SCENARIO = """
name: seam
cluster: {datanodes: 1, config: {dfs.replication: 1}}
workload:
  - {id: w1, client: c1, op: write, path: /f, size: 1KiB}
faults:
  - {id: f1, kind: pause, target: c1,
     at: {event: client.ack, node: c1, where: {path: /f, seqno: 0}, exact: true},
     heal: 1s}
"""


def _scenario():
    sc, issues = check_scenario_text(SCENARIO, "seam.yaml")
    assert issues == []
    return sc


def _name_comparisons() -> list[tuple[str, str]]:
    """(file under harness/, expression) of every comparison of a system name literal
    outside harness/systems/."""
    found = []
    for path in sorted(HARNESS.rglob("*.py")):
        rel = path.relative_to(HARNESS).as_posix()
        if rel.startswith("systems/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Compare):
                continue
            operands = [node.left, *node.comparators]
            if any(isinstance(x, ast.Constant) and x.value in NAMES for x in operands):
                found.append((rel, ast.unparse(node)))
    return found


def test_no_code_outside_the_systems_compares_a_system_name():
    decisions = [c for c in _name_comparisons() if c not in CHOOSES_BY_NAME]
    assert decisions == [], "ask the system's capabilities instead: " + repr(decisions)


def test_the_scan_finds_a_name_comparison():
    # the scan itself must see the form it forbids
    tree = ast.parse('if self.system.name != "minihdfs":\n    pass\n')
    [cmp] = [n for n in ast.walk(tree) if isinstance(n, ast.Compare)]
    assert any(isinstance(x, ast.Constant) and x.value in NAMES
               for x in [cmp.left, *cmp.comparators])


def test_the_verifier_and_the_scenario_model_do_not_import_hadoop():
    for folder in ("reconcile", "scenario"):
        for path in (HARNESS / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module:
                    assert not node.module.startswith("harness.systems.hadoop"), path
                if isinstance(node, ast.Import):
                    assert not any(a.name.startswith("harness.systems.hadoop")
                                   for a in node.names), path


def test_the_two_systems_declare_what_they_can_do():
    mini, hadoop = get_system("minihdfs").capabilities(), get_system("hadoop", "3.4.2").capabilities()
    assert mini.exact_injection and mini.backends == {"local", "docker"}
    assert not mini.unobservable
    assert not hadoop.exact_injection and hadoop.backends == {"local"}
    assert hadoop.unobservable["P3"].startswith("not observable on hadoop 3.4.2: ")
    # the agent makes its checks observable
    with_agent = get_system("hadoop", "3.4.2").capabilities({"hadoop_agent": True})
    assert "P3" not in with_agent.unobservable
    assert hadoop.backend_refusal("hadoop", "docker") == "--system hadoop needs --backend local"
    assert mini.backend_refusal("minihdfs", "docker") is None


def test_the_verifier_skips_what_the_system_says_it_cannot_observe():
    from harness.reconcile.observable import skip_reason
    assert skip_reason("P3", "hadoop", "3.4.2") == \
        get_system("hadoop", "3.4.2").capabilities().unobservable["P3"]
    assert skip_reason("P3", "minihdfs", None) is None
    assert skip_reason("P3", "no-such-system", None) is None   # an old or foreign run folder


def test_a_key_the_mini_hdfs_refuses_is_an_error_of_a_scenario_that_runs_on_it():
    refused = get_system("minihdfs").capabilities().refused_config
    key = next(iter(refused))
    text = ("name: s\ncluster: {config: {%s: 1s}}\n"
            "workload: [{id: w1, client: c1, op: write, path: /f, size: 1KiB}]\n" % key)
    _, issues = check_scenario_text(text, "s.yaml")
    assert any(f"{key}: {refused[key]}" in str(i) for i in issues), issues


# -- a third system: one class, registered --------------------------------------------

class OwnJars(SystemUnderTest):
    """A Hadoop build from a user's own jars, as far as the harness sees it: no holds,
    local only, one check it cannot observe, one key it refuses."""

    name = "ownjars"

    def capabilities(self, run_fields=None) -> Capabilities:
        return Capabilities(exact_injection=False, backends=frozenset({"local"}),
                            unobservable={"B6": "my build logs no replica states"},
                            refused_config={"lease.soft-limit": "my build hard-codes it"})


@pytest.fixture
def ownjars():
    register("ownjars", OwnJars)
    yield
    unregister("ownjars")


@pytest.fixture
def no_processes(monkeypatch):
    """A Run whose execute() starts nothing: no reaping, no ports, a backend that only
    records that it was made."""
    made = []

    class Backend:
        def __init__(self, *args, **kw):
            made.append(kw)
            raise runner_mod.RunError("a backend was made")

    monkeypatch.setattr(runner_mod, "cleanup", lambda backend: [])
    monkeypatch.setattr(runner_mod.ports, "claim_run_ports", lambda: None)
    monkeypatch.setattr(runner_mod, "get_backend", lambda name: Backend)
    monkeypatch.setattr(Run, "_teardown", lambda self: None)
    return made


def test_get_system_returns_a_registered_system(ownjars):
    sut = get_system("ownjars", "3.9.9")
    assert isinstance(sut, OwnJars) and sut.version == "3.9.9" and sut.label == "ownjars 3.9.9"
    unregister("ownjars")
    with pytest.raises(SystemError_, match="unknown system 'ownjars'"):
        get_system("ownjars")


def test_the_runner_refuses_a_backend_the_system_does_not_run_on(ownjars, no_processes, tmp_path):
    sc = _scenario()
    run = Run(sc, "docker", str(tmp_path), 1, False, None, system=get_system("ownjars"))
    run.execute()
    assert run.status == "error" and no_processes == []
    assert run.errors == ["RunError: --system ownjars needs --backend local"]
    start = json.loads(open(os.path.join(run.events_dir, "harness.jsonl")).readline())
    assert (start["system"], start["backend"]) == ("ownjars", "docker")


def test_the_runner_gives_the_backend_the_system_it_runs_on(ownjars, no_processes, tmp_path):
    sc = _scenario()
    run = Run(sc, "local", str(tmp_path), 1, False, None, system=get_system("ownjars"))
    run.execute()
    assert [type(kw["system"]) for kw in no_processes] == [OwnJars]


def test_exact_injection_is_the_systems_capability(ownjars, tmp_path):
    sc = _scenario()
    said: list[str] = []
    run = Run(sc, "local", str(tmp_path), 1, False, said.append, system=get_system("ownjars"))
    run._start_holds()
    assert run.holds is None and any("exact injection needs" in m for m in said)

    class HeldJars(OwnJars):
        def capabilities(self, run_fields=None) -> Capabilities:
            return Capabilities(exact_injection=True, backends=frozenset({"local"}))

    held = Run(sc, "local", str(tmp_path), 1, False, said.append, system=HeldJars())
    held._start_holds()
    try:
        assert held.holds is not None
    finally:
        held._stop_holds()


def test_the_verifier_asks_a_third_system_what_it_cannot_observe(ownjars):
    from harness.reconcile.verdict import CheckResult
    from harness.reconcile.observable import apply_skips
    checks = [CheckResult("B6", "fail", [], violations=1), CheckResult("B2", "pass", [])]
    out = {c.id: c for c in apply_skips(checks, "ownjars", None)}
    assert out["B6"].status == "skip" and out["B6"].reason == "my build logs no replica states"
    assert out["B2"].status == "pass"


def test_the_docker_backend_refuses_a_system_that_does_not_run_there(ownjars, tmp_path):
    from harness.backends import BackendError
    from harness.backends.docker import DockerBackend
    from hdfs_contract.events import EventLog
    sc = _scenario()
    log = EventLog(None, "harness", "harness")
    with pytest.raises(BackendError, match="--system ownjars needs --backend local"):
        DockerBackend(sc, "r", str(tmp_path), log, 1, system=get_system("ownjars"))


def test_a_system_sees_the_run_through_its_context(tmp_path):
    """The backend builds the context from the seven things a system used of it."""
    from harness.backends.local import LocalBackend
    from hdfs_contract.events import EventLog
    sc = _scenario()
    b = LocalBackend(sc, "r", str(tmp_path), EventLog(None, "harness", "harness"), 7)
    ctx = b.context()
    assert isinstance(ctx, RunContext)
    assert (ctx.scenario, ctx.seed, ctx.run_dir, ctx.work_dir, ctx.cluster) == \
        (sc, 7, str(tmp_path), os.path.join(str(tmp_path), "work"), None)
    assert ctx.events_dir == os.path.join(str(tmp_path), "events")
    assert ctx.host_routes == b.host_routes and ctx.storage_path == b.storage_path


# -- a third system: one module, chosen by name in a scenario and on the command line ----

THIRD_MODULE = '''
from harness.systems import Capabilities, SystemUnderTest


class TmpJars(SystemUnderTest):
    """A system from a module nobody registered: found in harness/systems by its name."""

    name = "tmpjars"

    def capabilities(self, run_fields=None):
        return Capabilities(backends=frozenset({"local"}))

    def issues(self, scenario):
        return [f"tmpjars cannot run {scenario.name}: no jars in this test"]


SYSTEM = TmpJars
'''


@pytest.fixture
def tmpjars(tmp_path, monkeypatch):
    """harness/systems/tmpjars.py, as a user would add it (here: a folder of the package's
    __path__, so the tree is not touched)."""
    import sys
    import harness.systems as systems
    folder = tmp_path / "systems"
    folder.mkdir()
    (folder / "tmpjars.py").write_text(THIRD_MODULE)
    monkeypatch.setattr(systems, "__path__", [*systems.__path__, str(folder)])
    yield "tmpjars"
    sys.modules.pop("harness.systems.tmpjars", None)


def _third_system_scenario(systems_line: str, system: str = "tmpjars") -> str:
    return (f"name: third\n{systems_line}\n"
            f"cluster: {{datanodes: 1, config: {{dfs.replication: 1}}, system: {system}}}\n"
            "workload: [{id: w1, client: c1, op: write, path: /f, size: 1KiB}]\n")


def test_a_module_of_harness_systems_is_a_system_name(tmpjars):
    from harness.systems import system_names
    assert system_names() == ("minihdfs", "hadoop", "tmpjars")
    assert type(get_system("tmpjars")).__name__ == "TmpJars"


def test_the_two_systems_of_the_tree_are_the_names_in_todays_order():
    from harness.systems import system_names
    assert system_names() == ("minihdfs", "hadoop")


def test_a_scenario_runs_on_a_third_system_module(tmpjars):
    sc, issues = check_scenario_text(_third_system_scenario("systems: [minihdfs, hadoop, tmpjars]"),
                                     "third.yaml")
    assert issues == [] and sc.cluster.system == "tmpjars"
    assert tuple(sc.systems) == ("minihdfs", "hadoop", "tmpjars")
    # `systems:` left out: every system, the third included
    sc, issues = check_scenario_text(_third_system_scenario(""), "third.yaml")
    assert issues == [] and "tmpjars" in tuple(sc.systems)
    # leaving the third out needs a reason, as leaving out any system does
    _, issues = check_scenario_text(_third_system_scenario("systems: [minihdfs, hadoop]",
                                                           "minihdfs"), "third.yaml")
    assert [str(i) for i in issues if "systems_reason" in str(i)], issues


def test_an_unknown_system_in_a_scenario_names_the_known_ones(tmpjars):
    _, issues = check_scenario_text(_third_system_scenario("systems: [minihdfs, nosuch]"),
                                    "third.yaml")
    [line] = [str(i) for i in issues if "nosuch" in str(i)]
    assert "\n" not in line and "unknown system 'nosuch'" in line
    assert "minihdfs, hadoop, tmpjars" in line


def test_the_command_line_chooses_a_third_system_module(tmpjars, tmp_path, capsys):
    from harness.cli import build_parser, main
    args = build_parser().parse_args(["run", "--system", "tmpjars", "s.yaml"])
    assert args.system == "tmpjars"
    assert build_parser().parse_args(["explore", "b.yaml", "--system", "tmpjars"]).system \
        == "tmpjars"
    # hdfs-chaos run asks the chosen system what it cannot run, before anything starts
    path = tmp_path / "third.yaml"
    path.write_text(_third_system_scenario(""))
    assert main(["run", "--system", "tmpjars", str(path), "--out", str(tmp_path / "out")]) == 2
    assert "tmpjars cannot run third: no jars in this test" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_command_line_refuses_an_unknown_system_in_one_line(tmpjars, capsys):
    from harness.cli import build_parser
    with pytest.raises(SystemExit) as caught:
        build_parser().parse_args(["run", "--system", "nosuch", "s.yaml"])
    assert caught.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last == ("hdfs-chaos run: error: argument --system: unknown system 'nosuch': "
                    "use one of minihdfs, hadoop, tmpjars, both")


def test_a_registered_system_is_a_name_on_the_command_line(ownjars):
    from harness.cli import build_parser
    from harness.systems import system_names
    assert system_names()[-1] == "ownjars"
    assert build_parser().parse_args(["run", "--system", "ownjars", "s.yaml"]).system == "ownjars"
