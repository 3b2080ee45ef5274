"""`make run` and tools/setup.sh as a new user meets them, with the real Makefile and
script and fakes for the programs they call: the suite report is written whatever the
verdicts, the exit status says whether a scenario failed, and pip's chatter stays off the
terminal unless pip fails."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _script(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/usr/bin/env bash\n" + text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def project(tmp_path):
    """A copy of the Makefile beside a fake setup and a fake hdfs-chaos that logs its
    arguments and exits with $FAKE_RUN_EXIT for `run`."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    _script(tmp_path / "tools" / "setup.sh", 'echo "setup: ready: .venv/bin/hdfs-chaos" >&2\n')
    _script(tmp_path / ".venv" / "bin" / "hdfs-chaos",
            'echo "$*" >> calls.log\n'
            'if [ "$1" = run ]; then echo "FAIL a (results/a-1)"; exit "${FAKE_RUN_EXIT:-0}"; fi\n'
            'echo "1 run: 0 passed, 1 failed; suite report: results/index.html"\n')
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "a.yaml").write_text("name: a\n")
    (tmp_path / "results" / "a-1").mkdir(parents=True)
    return tmp_path


def _make_run(project: Path, run_exit: int) -> subprocess.CompletedProcess:
    env = dict(os.environ, FAKE_RUN_EXIT=str(run_exit))
    env.pop("MAKEFLAGS", None)
    return subprocess.run(["make", "run"], cwd=project, env=env, capture_output=True,
                          text=True, timeout=60)


def test_make_run_writes_the_suite_report_after_a_failed_scenario_and_fails(project):
    done = _make_run(project, 1)
    calls = (project / "calls.log").read_text().splitlines()
    assert calls == ["run scenarios/a.yaml --workers 2 --out results", "report results --out results"]
    assert done.returncode != 0
    assert "Error 1" in done.stderr                       # make names hdfs-chaos run's exit 1
    # only the harness's lines: make echoes no recipe command
    assert done.stdout.splitlines() == ["FAIL a (results/a-1)",
                                        "1 run: 0 passed, 1 failed; suite report: results/index.html"]


def test_make_run_passes_when_every_scenario_passed(project):
    done = _make_run(project, 0)
    assert done.returncode == 0, done.stderr
    assert len((project / "calls.log").read_text().splitlines()) == 2


def test_make_run_writes_no_report_after_bad_input(project):
    done = _make_run(project, 2)
    assert done.returncode != 0 and "Error 2" in done.stderr
    assert (project / "calls.log").read_text().splitlines() == [
        "run scenarios/a.yaml --workers 2 --out results"]


@pytest.fixture
def setup_copy(tmp_path):
    """tools/setup.sh in a folder with a fake .venv/bin/python whose pip prints
    setuptools' warning and exits with $FAKE_PIP_EXIT, and a fake Toxiproxy build."""
    if shutil.which("java") is None:
        _script(tmp_path / "bin" / "java", "exit 0\n")
    (tmp_path / "tools").mkdir()
    shutil.copy(REPO / "tools" / "setup.sh", tmp_path / "tools" / "setup.sh")
    _script(tmp_path / "tools" / "build_toxiproxy.sh", "echo /bin/true\n")
    _script(tmp_path / ".venv" / "bin" / "python",
            'if [ "$1 $2" = "-m pip" ]; then\n'
            '  echo "Please be careful with folders in your working directory" >&2\n'
            '  echo "Successfully installed hdfs-chaos"\n'
            '  exit "${FAKE_PIP_EXIT:-0}"\n'
            'fi\n'
            'exit 0\n')
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    return tmp_path


def _setup(folder: Path, pip_exit: int) -> subprocess.CompletedProcess:
    env = dict(os.environ, FAKE_PIP_EXIT=str(pip_exit),
               PATH=f"{folder / 'bin'}{os.pathsep}{os.environ['PATH']}")
    env.pop("TOXIPROXY_SERVER", None)
    return subprocess.run(["bash", "tools/setup.sh"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=60)


def test_setup_hides_pips_output_when_pip_succeeds(setup_copy):
    done = _setup(setup_copy, 0)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "setup: installing hdfs-chaos and its dependencies into .venv (PySpark is large: the "
        "first time takes a while)",
        "setup: ready: .venv/bin/hdfs-chaos"]


def test_setup_shows_pips_output_when_pip_fails(setup_copy):
    done = _setup(setup_copy, 1)
    assert done.returncode == 1
    assert "Please be careful with folders" in done.stderr
    assert "Successfully installed" in done.stderr
    assert done.stderr.rstrip().endswith("setup: error: pip install failed (see pip's "
                                         "messages above)")
    assert not (setup_copy / ".venv" / ".hdfs-chaos-installed").exists()
