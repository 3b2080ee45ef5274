"""The mutation-testing tool (tools/mutants): every mutant applies to the current tree
and changes it; a snippet that moved fails loudly; the runner classifies runs and
mutants right (on fake verdicts: the real runs are in tests/integration)."""

from __future__ import annotations

import json
import os

import pytest

import minihdfs.cluster
from tools.mutants import BY_NAME, MUTANTS, Mutant, MutantError, apply_mutant, mutated_tree, \
    patch_text
from tools.mutants.apply import REPO_ROOT
from tools.mutants.runner import BASELINE, Job, build_report, classify_mutant, classify_run, \
    plan_jobs, render_markdown

LIBRARY = os.path.join(REPO_ROOT, "scenarios")
KNOWN_BUGS = os.path.join(REPO_ROOT, "known-bugs")


def test_the_catalogue_has_at_least_40_uniquely_named_mutants():
    assert len(MUTANTS) >= 40   # issue 28: one mutant per rule
    assert len(BY_NAME) == len(MUTANTS)
    assert len({(m.file, m.original) for m in MUTANTS}) == len(MUTANTS)


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_every_mutant_applies_to_the_current_tree_and_changes_it(mutant, tmp_path):
    apply_mutant(mutant, str(tmp_path))
    with open(os.path.join(REPO_ROOT, mutant.file), encoding="utf-8") as f:
        original = f.read()
    with open(tmp_path / mutant.file, encoding="utf-8") as f:
        mutated = f.read()
    assert mutated != original
    assert mutant.replacement in mutated and original.count(mutant.original) == 1
    # the rest of the package is an exact copy
    for name in os.listdir(os.path.join(REPO_ROOT, "minihdfs")):
        if name.endswith(".py") and f"minihdfs/{name}" != mutant.file:
            with open(os.path.join(REPO_ROOT, "minihdfs", name), "rb") as a, \
                    open(tmp_path / "minihdfs" / name, "rb") as b:
                assert a.read() == b.read(), name


@pytest.mark.parametrize("mutant", MUTANTS, ids=lambda m: m.name)
def test_every_mutant_names_a_rule_and_scenarios_of_the_library(mutant):
    assert mutant.rule and mutant.seed
    assert mutant.scenarios, "each mutant names the scenarios expected to kill it"
    for name in mutant.scenarios:   # the library, or a known-bug scenario the mini-HDFS runs
        assert any(os.path.exists(os.path.join(folder, f"{name}.yaml"))
                   for folder in (LIBRARY, KNOWN_BUGS)), name


def test_a_snippet_that_moved_or_repeats_fails_loudly():
    m = Mutant("x", "a rule", "seed 000", "minihdfs/x.py", "needle", "pin")
    assert patch_text(m, "hay needle hay") == "hay pin hay"
    with pytest.raises(MutantError, match="not found in minihdfs/x.py"):
        patch_text(m, "hay hay")
    with pytest.raises(MutantError, match="found 2 times"):
        patch_text(m, "needle needle")


def test_a_mutant_outside_the_package_or_that_does_not_parse_is_refused(tmp_path):
    outside = Mutant("x", "r", "s", "harness/runner.py", "import", "imp")
    with pytest.raises(MutantError, match="not in minihdfs/"):
        apply_mutant(outside, str(tmp_path / "a"))
    broken = Mutant("y", "r", "s", "minihdfs/leases.py", "for lease in self.sorted_leases():",
                    "for lease in (:")
    with pytest.raises(SyntaxError):
        apply_mutant(broken, str(tmp_path / "b"))


def test_mutated_tree_points_the_cluster_processes_at_the_copy_and_restores():
    before = minihdfs.cluster.PACKAGE_ROOT
    m = BY_NAME["sync-length-max"]
    with mutated_tree(m) as root:
        assert minihdfs.cluster.PACKAGE_ROOT == root != before
        with open(os.path.join(root, m.file)) as f:
            assert m.replacement in f.read()
    assert minihdfs.cluster.PACKAGE_ROOT == before
    assert not os.path.exists(root)


# -- classification -------------------------------------------------------------------

def _verdict(passed=True, failed=(), unmet=(), run_status=None, error=None, checks=True):
    v = {"passed": passed, "expect": [{"what": u, "status": "fail"} for u in unmet],
         "checks": ([{"id": "D1", "status": "pass"}]
                    + [{"id": c, "status": "fail"} for c in failed]) if checks else []}
    if run_status:
        v["run_status"], v["run_errors"] = run_status, [f"{run_status} happened"]
    if error:
        v["error"] = error
    return v


@pytest.mark.parametrize("verdict,outcome,checks", [
    (_verdict(), "passed", []),
    (_verdict(False, ["B2"]), "failed", ["B2"]),
    (_verdict(False, unmet=["w1: ok"]), "failed", []),
    (_verdict(True, run_status="timeout"), "hang", []),      # a verdict may pass a hung run
    (_verdict(False, ["L2"], run_status="timeout"), "hang", ["L2"]),
    # a fault's event never came although the workload ended: as much a kill as a hang
    (_verdict(False, ["I1"], run_status="unreached"), "hang", ["I1"]),
    (_verdict(False, run_status="error", checks=False), "error", []),
    # the verdict passed, but the harness saw the cluster never settle (stale replicas)
    (_verdict(True, run_status="completed"), "error", []),
    (_verdict(False, run_status="interrupted", checks=False), "interrupted", []),
    (_verdict(False, error="the verifier failed: Py4JError", checks=False), "inconclusive", []),
])
def test_classify_run(verdict, outcome, checks):
    got = classify_run(verdict)
    assert got["outcome"] == outcome
    assert got["checks"] == checks


def _run(scenario, outcome, checks=()):
    return {"scenario": scenario, "outcome": outcome, "checks": list(checks), "unmet": []}


def test_a_mutant_is_killed_by_a_failing_or_hanging_scenario():
    runs = [_run("a", "passed"), _run("b", "failed", ["B2"]), _run("c", "hang")]
    got = classify_mutant(runs, {"a": "passed", "b": "passed", "c": "passed"})
    assert got["status"] == "killed"
    assert [k["scenario"] for k in got["killed_by"]] == ["b", "c"]
    assert got["killed_by"][0]["checks"] == ["B2"]


def test_a_mutant_every_scenario_passes_survives():
    runs = [_run("a", "passed"), _run("b", "passed")]
    assert classify_mutant(runs, {"a": "passed", "b": "passed"})["status"] == "survived"
    assert classify_mutant(runs)["status"] == "survived"


def test_a_kill_by_a_scenario_that_fails_unmutated_too_is_not_credited():
    runs = [_run("a", "passed"), _run("b", "failed", ["L2"])]
    got = classify_mutant(runs, {"a": "passed", "b": "failed"})
    assert got["status"] == "suspect" and got["not_credited"] == ["b"]
    assert classify_mutant(runs)["status"] == "killed"   # without a baseline it counts


def test_interrupted_or_unjudged_runs_leave_a_mutant_incomplete_not_survived():
    assert classify_mutant([_run("a", "passed"), _run("b", "interrupted")])["status"] \
        == "incomplete"
    assert classify_mutant([_run("a", "inconclusive")])["status"] == "incomplete"
    assert classify_mutant([])["status"] == "incomplete"


def test_targeted_plans_run_only_the_named_scenarios_and_the_baseline_their_union():
    files = [os.path.join(LIBRARY, f"{n}.yaml") for n in
             ("block-recovery-different-lengths", "setup-first-bad-link", "replace-never")]
    mutants = [BY_NAME["sync-length-max"], BY_NAME["first-bad-link-marks-first"]]
    jobs = plan_jobs(mutants, files, targeted=True, baseline=True)
    assert [j.name for j in jobs] == [BASELINE, "sync-length-max", "first-bad-link-marks-first"]
    assert jobs[0].scenarios == files[:2]
    assert jobs[1].scenarios == files[:1]
    full = plan_jobs(mutants, files, targeted=False, baseline=False)
    assert [j.scenarios for j in full] == [files, files]


def test_the_report_classifies_against_the_baseline(tmp_path):
    out = str(tmp_path)
    os.makedirs(tmp_path / "jobs")
    records = {
        BASELINE: [_run("s1", "passed"), _run("s2", "failed", ["L2"])],
        "sync-length-max": [_run("s1", "failed", ["B2"]), _run("s2", "failed", ["L2"])],
        "soft-limit-ignored": [_run("s1", "passed"), _run("s2", "failed", ["L2"])],
    }
    for name, runs in records.items():
        with open(tmp_path / "jobs" / f"{name}.json", "w") as f:
            json.dump({"job": name, "runs": runs, "seconds": 12.0, "verify_seconds": 3.0}, f)
    jobs = [Job(n, ["s1", "s2"]) for n in records] + [Job("pipeline-keeps-bad-node", ["s1"])]
    report = build_report(out, jobs, "python -m tools.mutants run", 0.0, 90.0, 1, False)
    status = {m["name"]: m["status"] for m in report["mutants"]}
    assert status == {"sync-length-max": "killed", "soft-limit-ignored": "suspect",
                      "pipeline-keeps-bad-node": "not run"}
    assert report["baseline"]["failing"] == ["s2"]
    assert report["counts"] == {"killed": 1, "suspect": 1, "not run": 1}
    text = render_markdown(report)
    assert "| `sync-length-max` |" in text and "s1 (failed: B2)" in text
