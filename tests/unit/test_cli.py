"""The hdfs-chaos command line: exit codes, one-line errors, commands wired to their
modules (the modules that start clusters are replaced by fakes here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from harness import cli
from harness.reconcile.verdict import Verdict
from harness.scenario.schema import schema_text

CORPUS = Path(__file__).resolve().parent.parent / "scenario_corpus"
EXAMPLE = CORPUS / "valid" / "architecture-example.yaml"
BROKEN = CORPUS / "unknown-fault-kind.yaml"
REPO = Path(__file__).resolve().parents[2]



def V(data: dict, run_dir: str | None = None) -> Verdict:
    """A verdict as a runner returns it, from its verdict.json form."""
    return Verdict.from_json(data, run_dir)

def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def fake_module(monkeypatch, name, **functions):
    module = types.ModuleType(name)
    for key, value in functions.items():
        setattr(module, key, value)
    monkeypatch.setitem(sys.modules, name, module)
    return module


class FaultError(RuntimeError):
    """Stands for an error type of the project (its module name is set below)."""


FaultError.__module__ = "faults.base"


# -- validate ---------------------------------------------------------------------------------

def test_validate_a_valid_file_exits_0(capsys):
    code, out, err = run(capsys, "validate", str(EXAMPLE))
    assert code == 0
    assert out == f"{EXAMPLE}: ok (client-crash-after-hflush)\n"
    assert err == ""


def test_validate_an_invalid_file_exits_2_with_one_error_per_line(capsys):
    code, out, err = run(capsys, "validate", str(BROKEN))
    assert code == 2
    assert err.splitlines() == [
        f"{BROKEN}:14:11: faults[1].kind: unknown fault kind 'partitoin' (did you mean 'partition'?)",
        f"{BROKEN}:18:11: faults[2].kind: unknown fault kind 'halt' (did you mean 'heal'?)"]


def test_validate_several_files_and_folders(capsys, tmp_path):
    code, out, err = run(capsys, "validate", str(CORPUS / "valid"), str(BROKEN))
    assert code == 2
    assert len(out.splitlines()) == len(list((CORPUS / "valid").glob("*.yaml")))
    assert all(line.startswith(str(BROKEN)) for line in err.splitlines())


def test_validate_a_missing_file_or_empty_folder(capsys, tmp_path):
    code, _, err = run(capsys, "validate", str(tmp_path / "nope.yaml"))
    assert (code, err) == (2, f"{tmp_path / 'nope.yaml'}: cannot read: No such file or directory\n")
    code, _, err = run(capsys, "validate", str(tmp_path))
    assert (code, err) == (2, f"hdfs-chaos: error: {tmp_path}: no .yaml scenario files in "
                              "this folder\n")


def test_validate_refuses_two_scenarios_with_one_name(capsys, tmp_path):
    copy = tmp_path / "copy.yaml"
    copy.write_text(EXAMPLE.read_text())
    code, _, err = run(capsys, "validate", str(EXAMPLE), str(copy))
    assert code == 2
    assert err == (f"{copy}:1:1: name: scenario name 'client-crash-after-hflush' is already "
                   f"used by {EXAMPLE}\n")


def test_bad_flags_exit_2_with_a_usage_line(capsys):
    with pytest.raises(SystemExit) as caught:
        cli.main(["run", "--backend", "vm", str(EXAMPLE)])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'vm'" in err and "Traceback" not in err
    with pytest.raises(SystemExit) as caught:
        cli.main([])
    assert caught.value.code == 2


def test_the_console_script_never_shows_a_traceback_for_user_errors(tmp_path):
    for argv, code in ([["validate", str(BROKEN)], 2], [["--nope"], 2],
                       [["validate", str(tmp_path / "x.yaml")], 2], [["validate", str(EXAMPLE)], 0]):
        done = subprocess.run([sys.executable, "-m", "harness.cli", *argv], cwd=REPO,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == code, done.stderr
        assert "Traceback" not in done.stderr


# -- list and schema -------------------------------------------------------------------------------

def test_list_shows_name_and_first_description_line(capsys, tmp_path):
    (tmp_path / "b.yaml").write_text((CORPUS / "valid" / "every-feature.yaml").read_text())
    (tmp_path / "a.yaml").write_text(EXAMPLE.read_text())
    (tmp_path / "broken.yml").write_text(BROKEN.read_text())
    code, out, _ = run(capsys, "list", "--dir", str(tmp_path))
    assert code == 0
    assert out.splitlines() == [
        "client-crash-after-hflush  free text",
        "every-feature              Uses every part of the scenario format once.",
        f"broken                     (invalid: 2 problems; hdfs-chaos validate {tmp_path / 'broken.yml'})",
    ]


def test_list_of_an_empty_library(capsys, tmp_path):
    code, out, err = run(capsys, "list", "--dir", str(tmp_path / "scenarios"))
    assert (code, out) == (0, "")
    assert "no scenarios" in err


def test_schema_prints_writes_and_checks(capsys, tmp_path):
    code, out, _ = run(capsys, "schema")
    assert code == 0 and out == schema_text()
    assert json.loads(out)["title"] == "hdfs-chaos scenario"
    target = tmp_path / "s.json"
    code, _, _ = run(capsys, "schema", "--write", str(target))
    assert code == 0 and target.read_text() == schema_text()
    code, _, _ = run(capsys, "schema", "--check")
    assert code == 0


# -- run, verify, report: wired to the runner and the reconciler ------------------------------------

def test_run_validates_first_and_exits_2_without_running(capsys, monkeypatch):
    calls = []
    fake_module(monkeypatch, "harness.runner", run_scenarios=lambda *a: calls.append(a))
    code, _, err = run(capsys, "run", str(BROKEN))
    assert code == 2 and calls == []
    assert "unknown fault kind 'partitoin'" in err


@pytest.mark.parametrize("verdicts, code", [
    ([V({"passed": True}), V({"passed": True})], 0),
    ([V({"passed": True}), V({"passed": False})], 1),
    ([V({"passed": False})], 1),
    (True, 0), (False, 1), (2, 2),
])
def test_run_exit_code_follows_the_verdicts(capsys, monkeypatch, verdicts, code):
    calls = []

    def run_scenarios(files, backend, results_dir, seed, keep, progress):
        calls.append((files, backend, results_dir, seed, keep))
        progress("running")
        return verdicts

    fake_module(monkeypatch, "harness.runner", run_scenarios=run_scenarios)
    got, _, err = run(capsys, "run", str(EXAMPLE), "--backend", "docker", "--out", "out",
                      "--seed", "3", "--keep")
    assert got == code
    assert calls == [([str(EXAMPLE)], "docker", "out", 3, True)]
    assert "running" in err


def test_run_passes_defaults_and_quiet_means_no_progress(capsys, monkeypatch):
    calls = []
    fake_module(monkeypatch, "harness.runner",
                run_scenarios=lambda *args: calls.append(args) or [V({"passed": True})])
    assert run(capsys, "run", "--quiet", str(EXAMPLE))[0] == 0
    assert calls == [([str(EXAMPLE)], "local", "results", None, False, None)]


def test_a_missing_runner_is_one_clean_line(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "harness.runner", None)   # import fails
    code, _, err = run(capsys, "run", str(EXAMPLE))
    assert code == 2
    assert err == ("hdfs-chaos: error: 'run' is not available: module harness.runner is "
                   "missing from this installation\n")


def test_project_errors_are_one_line_and_bugs_are_not_hidden(capsys, monkeypatch):
    def fails(*args):
        raise FaultError("docker engine not reachable:\n  start it with: systemctl start docker")

    fake_module(monkeypatch, "harness.runner", run_scenarios=fails)
    code, _, err = run(capsys, "run", str(EXAMPLE))
    assert code == 2
    assert err == ("hdfs-chaos: error: docker engine not reachable: start it with: "
                   "systemctl start docker\n")

    def bug(*args):
        raise ZeroDivisionError("a bug")

    fake_module(monkeypatch, "harness.runner", run_scenarios=bug)
    with pytest.raises(ZeroDivisionError):
        cli.main(["run", str(EXAMPLE)])


def test_interrupt_exits_130(capsys, monkeypatch):
    def interrupted(*args):
        raise KeyboardInterrupt

    fake_module(monkeypatch, "harness.runner", run_scenarios=interrupted)
    code, _, err = run(capsys, "run", str(EXAMPLE))
    assert (code, err) == (130, "hdfs-chaos: interrupted\n")


def test_verify_and_report_call_the_reconciler(capsys, monkeypatch, tmp_path):
    runs = [tmp_path / "r1", tmp_path / "r2"]
    for folder in runs:   # the shape a run leaves (harness/rundir.py checks it first)
        (folder / "events").mkdir(parents=True)
        (folder / "events" / "nn.jsonl").write_text("")
        (folder / "scenario.yaml").write_text(EXAMPLE.read_text())
    calls = []
    fake_module(monkeypatch, "harness.reconcile.api",
                verify_runs=lambda dirs, master: calls.append(("verify", dirs, master))
                or [V({"passed": True, "scenario": "s1"}),
                    V({"passed": False, "scenario": "s2",
                       "checks": [{"id": "D2", "status": "fail"}]})],
                build_suite_report=lambda dirs, out, rewrite_runs: calls.append(
                    ("report", dirs, out, rewrite_runs)) or str(Path(out) / "index.html"))
    code, out, _ = run(capsys, "verify", *map(str, runs), "--spark-master", "spark://m:7077")
    assert code == 1
    assert out.splitlines() == [f"PASS s1 ({os.path.relpath(runs[0])})",
                                f"FAIL s2 ({os.path.relpath(runs[1])}) — failed checks D2"]
    (runs[0] / "verdict.json").write_text(json.dumps({"passed": True}))
    (runs[1] / "verdict.json").write_text(json.dumps({"passed": False}))
    code, out, _ = run(capsys, "report", *map(str, runs))
    assert code == 0
    assert out == f"2 runs: 1 passed, 1 failed; suite report: {tmp_path / 'index.html'}\n"
    assert calls == [("verify", [str(r) for r in runs], "spark://m:7077"),
                     ("report", [str(r) for r in runs], str(tmp_path), False)]


def test_verify_of_a_folder_that_does_not_exist(capsys, tmp_path):
    code, _, err = run(capsys, "verify", str(tmp_path / "gone"))
    assert code == 2 and err == f"hdfs-chaos: error: not a run folder: {tmp_path / 'gone'}\n"


def test_image_and_cleanup_call_their_modules(capsys, monkeypatch):
    calls = []
    fake_module(monkeypatch, "harness.images",
                build_image=lambda progress: calls.append("build") or "hdfs-chaos/minihdfs:1",
                build_toxiproxy_image=lambda binary, progress: calls.append(("tp", binary))
                or "hdfs-chaos/toxiproxy:2",
                list_images=lambda: [{"kind": "cluster", "tags": ["hdfs-chaos/minihdfs:1"],
                                      "size_mb": 163.5, "current": True}],
                remove_images=lambda all, progress: calls.append(("rm", all)) or [])
    fake_module(monkeypatch, "harness.backends",
                cleanup_all=lambda: calls.append("cleanup") or "removed 2 containers")
    code, out, _ = run(capsys, "image", "build")
    assert code == 0 and out.split() == ["hdfs-chaos/minihdfs:1", "hdfs-chaos/toxiproxy:2"]
    code, out, _ = run(capsys, "image", "ls")
    assert code == 0 and "hdfs-chaos/minihdfs:1" in out and "current" in out
    assert run(capsys, "image", "rm", "--all")[0] == 0
    code, out, _ = run(capsys, "cleanup")
    assert (code, out) == (0, "removed 2 containers\n")
    assert calls == ["build", ("tp", None), ("rm", True), "cleanup"]


def test_a_function_missing_from_an_existing_module(capsys, monkeypatch):
    fake_module(monkeypatch, "harness.backends")
    code, _, err = run(capsys, "cleanup")
    assert code == 2
    assert err == ("hdfs-chaos: error: 'cleanup' is not available: "
                   "harness.backends.cleanup_all does not exist yet\n")


@pytest.mark.parametrize("argv, message", [
    (["explore", "missing.yaml"], "missing.yaml: no such base scenario file"),
    (["explore", "explore-bases/append.yaml", "--budget", "soon"], "--budget 90s, 30min or 1h"),
    (["explore", "explore-bases/append.yaml", "--depth", "3"], "use 1 or 2"),
])
def test_explore_bad_arguments_exit_2_with_one_line(capsys, monkeypatch, argv, message):
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_explore_refuses_an_out_folder_of_another_exploration_without_resume(capsys, tmp_path,
                                                                             monkeypatch):
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    (tmp_path / "state.json").write_text("{}")
    assert cli.main(["explore", "explore-bases/append.yaml", "--out", str(tmp_path)]) == 2
    assert "add --resume" in capsys.readouterr().err


# -- issue 29: the command line of a well-kept test tool ---------------------------------------

def _subparsers(parser):
    """(name, parser) of every command and subcommand."""
    import argparse
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield name, sub
                for inner, deeper in _subparsers(sub):
                    yield f"{name} {inner}", deeper


def test_version_comes_from_the_package_metadata(capsys):
    from importlib.metadata import version
    with pytest.raises(SystemExit) as caught:
        cli.main(["--version"])
    assert caught.value.code == 0
    assert capsys.readouterr().out == f"hdfs-chaos {version('hdfs-chaos')}\n"


def test_every_option_has_help_and_every_default_is_shown():
    import argparse
    parser = cli.build_parser()
    commands = dict(_subparsers(parser))
    assert {"run", "diff", "report", "explore", "image build", "image rm"} <= set(commands)
    for name, sub in commands.items():
        text = " ".join(sub.format_help().split())
        for action in sub._actions:
            if not action.option_strings or action.help == argparse.SUPPRESS:
                continue
            assert action.help, f"{name} {action.option_strings[0]} has no help"
            if action.default not in (None, False, argparse.SUPPRESS):
                assert f"default: {action.default}" in text or "(default" in action.help, \
                    f"{name} {action.option_strings[0]}: default {action.default!r} not shown"
    explore = " ".join(commands["explore"].format_help().split())
    assert "--budget BUDGET how long to explore, e.g. 90s, 30min, 1h (default: 1h)" in explore
    run_help = " ".join(commands["run"].format_help().split())
    assert "(default: local)" in run_help and "(default: results)" in run_help
    assert "where the cluster runs" in run_help
    assert "build only this image" in commands["image build"].format_help()
    assert "remove the current images too" in commands["image rm"].format_help()


def test_out_names_the_output_folder_and_results_is_a_hidden_alias(capsys, monkeypatch):
    calls = []
    fake_module(monkeypatch, "harness.runner",
                run_scenarios=lambda files, backend, out, *rest: calls.append(out) or [])
    code, _, err = run(capsys, "run", str(EXAMPLE), "--out", "o1", "--quiet")
    assert code == 0 and err == ""
    code, _, err = run(capsys, "run", str(EXAMPLE), "--results", "o2", "--quiet")
    assert code == 0 and calls == ["o1", "o2"]
    assert err == ("hdfs-chaos: note: --results is deprecated and goes in a later release; "
                   "use --out\n")
    for name in ("run", "diff"):
        text = dict(_subparsers(cli.build_parser()))[name].format_help()
        assert "--out DIR" in text and "--results" not in text


def test_a_scenario_name_from_list_is_accepted_for_its_file(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)     # ./scenarios is the library
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "client-crash-after-hflush.yaml").write_text(EXAMPLE.read_text())
    (tmp_path / "scenarios" / "other-file.yaml").write_text(
        (CORPUS / "valid" / "every-feature.yaml").read_text())
    library = Path("scenarios")
    code, out, _ = run(capsys, "validate", "client-crash-after-hflush", "every-feature")
    assert code == 0
    assert out.splitlines() == [
        f"{library / 'client-crash-after-hflush.yaml'}: ok (client-crash-after-hflush)",
        f"{library / 'other-file.yaml'}: ok (every-feature)"]   # found by its name: field
    calls = []
    fake_module(monkeypatch, "harness.runner",
                run_scenarios=lambda files, *rest: calls.append(files) or [V({"passed": True})])
    assert run(capsys, "run", "client-crash-after-hflush", "--quiet")[0] == 0
    assert calls == [[str(library / "client-crash-after-hflush.yaml")]]
    code, _, err = run(capsys, "run", "client-crash-after-hflsh")
    assert code == 2 and err == ("hdfs-chaos: error: client-crash-after-hflsh: no such file, and "
                                 "no scenario of that name in scenarios/ (did you mean "
                                 "'client-crash-after-hflush'?)\n")
    code, _, err = run(capsys, "validate", "missing.yaml")   # a file name stays a file name
    assert (code, err) == (2, "missing.yaml: cannot read: No such file or directory\n")


def test_list_shows_the_first_sentence_whole_and_wraps_it(capsys, monkeypatch, tmp_path):
    text = EXAMPLE.read_text().replace("description: free text", "description: |\n"
        "  A writer dies (e.g. by SIGKILL, as in seed 000: the lease. stays) right after\n"
        "  its third hflush, holding an open block. Then the hard limit recovers it.")
    assert text != EXAMPLE.read_text()
    (tmp_path / "a.yaml").write_text(text)
    monkeypatch.setenv("COLUMNS", "64")
    code, out, _ = run(capsys, "list", "--dir", str(tmp_path))
    assert code == 0
    assert out.splitlines() == [
        "client-crash-after-hflush  A writer dies (e.g. by SIGKILL, as in",
        "                           seed 000: the lease. stays) right",
        "                           after its third hflush, holding an",
        "                           open block."]
    assert cli.first_sentence("Uses e.g. tabs. More.") == "Uses e.g. tabs."
    assert cli.first_sentence("No stop at all") == "No stop at all"


def test_list_into_a_closed_pipe_is_quiet(tmp_path):
    done = subprocess.run(f"{sys.executable} -m harness.cli list | head -1", shell=True,
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert len(done.stdout.splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr


def _library(tmp_path, *names):
    """Copies of the example scenario under other names; returns their paths."""
    paths = []
    for name in names:
        path = tmp_path / f"{name}.yaml"
        path.write_text(EXAMPLE.read_text().replace("name: client-crash-after-hflush",
                                                    f"name: {name}"))
        paths.append(str(path))
    return paths


def test_run_k_selects_scenarios_by_substring_or_glob(capsys, monkeypatch, tmp_path):
    paths = _library(tmp_path, "dn-crash-first", "dn-crash-last", "client-crash")
    calls = []
    fake_module(monkeypatch, "harness.runner",
                run_scenarios=lambda files, *rest: calls.append(files) or [V({"passed": True})])
    assert run(capsys, "run", str(tmp_path), "-k", "DN-CRASH", "--quiet")[0] == 0
    assert run(capsys, "run", str(tmp_path), "-k", "*-last", "-k", "client*", "--quiet")[0] == 0
    assert calls == [paths[:2], [paths[2], paths[1]]]   # folder order: sorted
    code, _, err = run(capsys, "run", str(tmp_path), "-k", "nothing")
    assert code == 2 and err == ("hdfs-chaos: error: -k nothing: no scenario matches (of 3 "
                                 "given; hdfs-chaos list shows the names)\n")
    (tmp_path / "zz-broken.yaml").write_text(BROKEN.read_text())   # not selected: not an error
    assert run(capsys, "run", str(tmp_path), "-k", "client", "--quiet")[0] == 0
    assert calls[-1] == [paths[2]]


def test_run_fail_fast_stops_after_the_first_failed_scenario(capsys, monkeypatch, tmp_path):
    paths = _library(tmp_path, "a", "b", "c")
    calls = []

    def run_scenarios(files, *rest):
        calls.append(files)
        return [V({"scenario": Path(f).stem, "passed": f != paths[1]}) for f in files]

    fake_module(monkeypatch, "harness.runner", run_scenarios=run_scenarios)
    code, _, err = run(capsys, "run", str(tmp_path), "--fail-fast", "--quiet")
    assert code == 1 and calls == [[paths[0]], [paths[1]]]     # one at a time, c never ran
    assert err == "hdfs-chaos: --fail-fast: stopped after a failure; 1 scenario not run\n"
    calls.clear()
    assert run(capsys, "run", str(tmp_path), "--quiet")[0] == 1
    assert calls == [paths]                                     # without it: one batch


def test_run_json_prints_one_object_per_scenario_and_the_lines_on_stderr(capsys, monkeypatch,
                                                                         tmp_path):
    paths = _library(tmp_path, "good", "bad")
    verdicts = [V(v) for v in [
        {"scenario": "good", "passed": True, "run_dir": "results/good-1", "checks":
         [{"id": "P1", "status": "pass"}], "expect": [{"what": "/f closed", "status": "pass"}]},
        {"scenario": "bad", "passed": False, "run_dir": "results/bad-1", "checks":
         [{"id": "P1", "status": "fail"}, {"id": "B6", "status": "error"},
          {"id": "L1", "status": "pass"}],
         "expect": [{"what": "/f closed", "status": "fail"}], "run_status": "error",
         "error": "the verifier failed"}]]

    def run_scenarios(files, *rest):
        print("PASS good (results/good-1)")     # what the real runner prints
        return verdicts

    fake_module(monkeypatch, "harness.runner", run_scenarios=run_scenarios)
    code, out, err = run(capsys, "run", *paths, "--json", "--quiet")
    assert code == 1
    assert [json.loads(line) for line in out.splitlines()] == [
        {"name": "good", "verdict": "pass", "run_dir": "results/good-1", "failed_checks": [],
         "unmet_expectations": [], "error": None, "run_status": "completed"},
        {"name": "bad", "verdict": "fail", "run_dir": "results/bad-1",
         "failed_checks": ["P1", "B6"], "unmet_expectations": ["/f closed"],
         "error": "the verifier failed", "run_status": "error"}]
    assert err == "PASS good (results/good-1)\n"


def test_report_passes_rewrite_runs_when_asked(capsys, monkeypatch, tmp_path):
    run_dir = tmp_path / "r1"
    (run_dir / "events").mkdir(parents=True)
    (run_dir / "events" / "nn.jsonl").write_text("")
    (run_dir / "scenario.yaml").write_text(EXAMPLE.read_text())
    calls = []
    fake_module(monkeypatch, "harness.reconcile.api",
                build_suite_report=lambda dirs, out, rewrite_runs: calls.append(rewrite_runs)
                or str(Path(out) / "index.html"))
    code, out, _ = run(capsys, "report", str(run_dir), "--out", str(tmp_path / "s"),
                       "--rewrite-runs")
    assert code == 0 and calls == [True]
    assert out == (f"1 run: 0 passed, 0 failed, 1 without a verdict; suite report: "
                   f"{tmp_path / 's' / 'index.html'}\n")


@pytest.mark.parametrize("line, completions", [
    ("hdfs-chaos run --fail", ["--fail-fast"]),
    ("hdfs-chaos validate client-crash-a", ["client-crash-after-hflush"]),   # a library name
])
def test_shell_completion_with_argcomplete(tmp_path, line, completions):
    pytest.importorskip("argcomplete")
    answer = tmp_path / "completions"
    env = dict(os.environ, _ARGCOMPLETE="1", COMP_LINE=line, COMP_POINT=str(len(line)),
               _ARGCOMPLETE_IFS="\n", _ARGCOMPLETE_STDOUT_FILENAME=str(answer),
               PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-m", "harness.cli"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert answer.read_text().split() == completions


def test_completion_is_an_optional_dependency():
    text = (REPO / "pyproject.toml").read_text()
    assert 'completion = ["argcomplete' in text


def test_report_takes_a_folder_of_runs_and_passes_over_its_own_plots(capsys, monkeypatch,
                                                                      tmp_path):
    runs = [tmp_path / "r1", tmp_path / "r2"]
    for folder in runs:
        (folder / "events").mkdir(parents=True)
        (folder / "events" / "nn.jsonl").write_text("")
        (folder / "scenario.yaml").write_text(EXAMPLE.read_text())
        (folder / "verdict.json").write_text(json.dumps({"passed": True}))
    (tmp_path / "plots").mkdir()                    # what an earlier report left
    (tmp_path / "index.html").write_text("")
    calls = []
    fake_module(monkeypatch, "harness.reconcile.api",
                build_suite_report=lambda dirs, out, rewrite_runs: calls.append((dirs, out))
                or str(Path(out) / "index.html"))
    assert run(capsys, "report", str(tmp_path))[0] == 0
    assert run(capsys, "report", *(str(p) for p in sorted(tmp_path.iterdir()) if p.is_dir()))[0] == 0
    assert calls == [([str(r) for r in runs], str(tmp_path))] * 2
    code, _, err = run(capsys, "report", str(tmp_path / "plots"))   # named alone: an error
    assert code == 2 and "not the folder of a run" in err


def test_run_repeat_runs_each_scenario_n_times_in_a_row(capsys, monkeypatch, tmp_path):
    paths = _library(tmp_path, "a", "b")
    calls = []
    fake_module(monkeypatch, "harness.runner",
                run_scenarios=lambda files, *rest: calls.append(files)
                or [V({"passed": True}) for _ in files])
    assert run(capsys, "run", str(tmp_path), "--repeat", "3", "--quiet")[0] == 0
    assert calls == [[paths[0]] * 3 + [paths[1]] * 3]
    code, _, err = run(capsys, "run", str(tmp_path), "--repeat", "0")
    assert code == 2 and err == "hdfs-chaos: error: --repeat 0: give a number of runs, 1 or more\n"


# -- run --workers N --------------------------------------------------------------------------

def test_run_workers_option_parsing(capsys, monkeypatch, tmp_path):
    paths = _library(tmp_path, "a", "b")
    calls = []
    fake_module(monkeypatch, "harness.runner",
                run_scenarios=lambda files, *rest: calls.append(("serial", files)) or [],
                run_parallel=lambda files, workers, *rest, **kw:
                    calls.append(("parallel", files, workers, kw["fail_fast"])) or ([], 0))
    for bad in ("0", "-1"):
        code, _, err = run(capsys, "run", str(tmp_path), "--workers", bad)
        assert (code, err) == (2, f"hdfs-chaos: error: --workers {bad}: give a number of runs "
                                  "at a time, 1 or more\n")
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", str(tmp_path), "--workers", "two"])
    assert exit_.value.code == 2 and "--workers: invalid int value: 'two'" in capsys.readouterr().err
    code, _, err = run(capsys, "run", str(tmp_path), "--workers", "2", "--system", "both")
    assert code == 2 and "--workers does not work with --system both" in err
    assert calls == []
    run(capsys, "run", str(tmp_path), "--quiet")                      # default: 1, as before
    run(capsys, "run", paths[0], "--workers", "3", "--quiet")         # one scenario: as before
    run(capsys, "run", str(tmp_path), "--workers", "2", "--fail-fast", "--quiet")
    assert calls == [("serial", paths), ("serial", [paths[0]]), ("parallel", paths, 2, True)]


def _fake_outcome(path, tmp, status="completed"):
    from harness.runner import RunOutcome
    name = Path(path).stem
    run_dir = tmp / f"run-{name}"
    run_dir.mkdir(exist_ok=True)
    return RunOutcome(name, run_dir.name, str(run_dir), status, [])


def _fake_parallel_runner(monkeypatch, tmp_path, seconds, failing=()):
    """runner.run_parallel with its runs and verifier replaced: a run of NAME sleeps
    seconds[NAME]; a verdict fails for the names in `failing`. Threads stand for the
    worker processes. Returns the record: runs started, verify batches, peak overlap."""
    import concurrent.futures as cf
    import threading
    import time
    from harness import runner
    record = {"started": [], "verified": [], "running": 0, "peak": 0}
    lock = threading.Lock()

    def fake_run(path, *rest):
        with lock:
            record["started"].append(Path(path).stem)
            record["running"] += 1
            record["peak"] = max(record["peak"], record["running"])
        time.sleep(seconds[Path(path).stem])
        with lock:
            record["running"] -= 1
        return _fake_outcome(path, tmp_path)

    def fake_verify(outcomes, progress=None):
        record["verified"].append([o.scenario for o in outcomes])
        return [V({"scenario": o.scenario, "checks": [], "expect": [],
                   "passed": o.scenario not in failing}, o.run_dir) for o in outcomes]

    monkeypatch.setattr(runner, "run_file", fake_run)
    monkeypatch.setattr(runner, "verify_outcomes", fake_verify)
    monkeypatch.setattr(runner, "run_pool", lambda workers: cf.ThreadPoolExecutor(workers))
    monkeypatch.setattr(runner, "result_line",
                        lambda v: f"{'PASS' if v.passed else 'FAIL'} {v.scenario}")
    return record


def test_run_workers_results_in_the_order_given_whatever_order_they_finished(
        capsys, monkeypatch, tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    _library(lib, "a", "b", "c")
    # a is slowest: b and c finish first
    record = _fake_parallel_runner(monkeypatch, tmp_path, {"a": 0.6, "b": 0.05, "c": 0.1},
                                   failing={"b"})
    code, out, err = run(capsys, "run", str(lib), "--workers", "2", "--json")
    assert code == 1
    assert [json.loads(line)["name"] for line in out.splitlines()] == ["a", "b", "c"]
    assert [json.loads(line)["verdict"] for line in out.splitlines()] == ["pass", "fail", "pass"]
    assert [line for line in err.splitlines() if line[:4] in ("PASS", "FAIL")] == \
        ["PASS a", "FAIL b", "PASS c"]
    done = [line.split(":")[0] for line in err.splitlines() if ": run completed" in line]
    assert done == ["b", "c", "a"]                        # the order they finished in
    assert record["peak"] == 2                            # two at a time, never three
    assert record["verified"] == [["a", "b", "c"]]        # one batch, in the order given


def test_run_workers_fail_fast_lets_the_running_finish_and_starts_no_more(
        capsys, monkeypatch, tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    _library(lib, "a", "b", "c", "d")
    record = _fake_parallel_runner(monkeypatch, tmp_path,
                                   {"a": 0.6, "b": 0.05, "c": 0.05, "d": 0.05}, failing={"b"})
    code, out, err = run(capsys, "run", str(lib), "--workers", "2", "--fail-fast")
    assert code == 1
    assert record["started"] == ["a", "b"]                # c and d never launched
    assert record["verified"] == [["b"], ["a"]]           # each verified as it finished
    assert out.splitlines() == ["PASS a", "FAIL b"]          # in the order given
    assert "hdfs-chaos: --fail-fast: stopped after a failure; 2 scenarios not run" in err


# A run in a real worker process, for the Ctrl-C test: it waits for SIGINT as a Run does
# (its own handler while it runs), and leaves a mark when it started and when it stopped.
def _run_until_interrupted(path, backend, results_dir, *rest):
    import signal
    import time
    from harness.runner import RunOutcome
    name = Path(path).stem
    run_dir = Path(results_dir) / name
    run_dir.mkdir(parents=True)
    stopped = []
    previous = signal.signal(signal.SIGINT, lambda *a: stopped.append(True))
    (run_dir / "started").write_text("")
    deadline = time.time() + 30
    while not stopped and time.time() < deadline:
        time.sleep(0.05)
    signal.signal(signal.SIGINT, previous)
    if stopped:
        (run_dir / "stopped").write_text("")
    return RunOutcome(name, name, str(run_dir), "interrupted" if stopped else "completed", [])


@pytest.mark.parametrize("signum", ["SIGINT", "SIGTERM"])
def test_ctrl_c_stops_every_running_run(capsys, tmp_path, signum):
    import os
    import signal
    import threading
    import time
    from harness import runner
    lib = tmp_path / "lib"
    lib.mkdir()
    paths = _library(lib, "a", "b", "c")
    results = tmp_path / "results"

    def press_ctrl_c():
        deadline = time.time() + 60
        while time.time() < deadline and not all(
                (results / n / "started").exists() for n in ("a", "b")):
            time.sleep(0.05)
        os.kill(os.getpid(), getattr(signal, signum))

    threading.Thread(target=press_ctrl_c, daemon=True).start()
    t0 = time.time()
    with pytest.raises(KeyboardInterrupt):
        runner.run_parallel(paths, 2, "local", str(results), run=_run_until_interrupted)
    assert time.time() - t0 < 30                           # not the fakes' own deadline
    assert (results / "a" / "stopped").exists() and (results / "b" / "stopped").exists()
    assert not (results / "c").exists()                    # never started
    out = capsys.readouterr().out
    assert [line.split()[:2] for line in out.splitlines()] == [["FAIL", "a"], ["FAIL", "b"]]
    assert "interrupted" in out


def test_runs_of_one_scenario_in_one_second_get_their_own_folders(monkeypatch, tmp_path):
    # two worker processes name their runs alike within a second; the folder is made, not
    # looked for, so the second never takes the first's (os.path.exists cannot see a folder
    # another process is about to make: here it never sees one)
    from harness import runner
    from harness.scenario import load_scenario
    scenario = load_scenario(str(EXAMPLE))
    monkeypatch.setattr(runner.os.path, "exists", lambda path: False)
    runs = [runner.Run(scenario, "local", str(tmp_path), 7, False, None) for _ in range(3)]
    for r in runs:
        r.log.close()
    assert len({r.run_dir for r in runs}) == 3
    assert [r.run_dir[-2:] for r in runs][1:] == ["-2", "-3"]
