"""`backends:` — a scenario that cannot run on a backend says so, and is skipped there."""

import pytest

from harness.scenario import ScenarioError, load_scenario_text
from harness.runner import backend_issues

BASE = """name: b
workload:
  - {id: w1, client: c1, op: write, path: /f, size: 1KiB}
"""


def test_default_is_every_backend():
    sc = load_scenario_text(BASE)
    assert sc.backends == ("local", "docker") and backend_issues(sc, "docker") == []


def test_leaving_a_backend_out_needs_a_reason():
    with pytest.raises(ScenarioError, match="backends_reason"):
        load_scenario_text(BASE + "backends: [local]\n")


def test_a_left_out_backend_is_refused_with_the_reason():
    sc = load_scenario_text(BASE + "backends: [local]\nbackends_reason: exact injection\n")
    assert backend_issues(sc, "local") == []
    assert backend_issues(sc, "docker") == [
        "scenario b does not run on the docker backend: exact injection"]


def test_run_skips_it_and_says_why(tmp_path, capsys):
    from harness.cli import UserError, skip_other_backends
    only_local = load_scenario_text(BASE + "backends: [local]\nbackends_reason: exact\n")
    both = load_scenario_text(BASE.replace("name: b", "name: c"))
    files = {"a.yaml": only_local, "c.yaml": both}
    assert skip_other_backends(list(files), files, "docker") == ["c.yaml"]
    assert "b: skipped, it does not run on the docker backend: exact" in capsys.readouterr().err
    with pytest.raises(UserError, match="no scenario given runs on the docker backend"):
        skip_other_backends(["a.yaml"], files, "docker")
