"""The mutation-testing tool (tools/mutants): every mutant applies to the current tree
and changes it; a snippet that moved fails loudly; the runner classifies runs and
mutants right (on fake verdicts: the real runs are in tests/integration)."""

from __future__ import annotations

import json
import os

import pytest

import minihdfs.cluster
from harness.reconcile.verdict import Verdict
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
        # the copy's processes import the contract from the copy too
        assert os.path.isfile(os.path.join(root, "hdfs_contract", "events.py"))
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
    return Verdict.from_json(v)


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


# -- first-kill mode (the default): ordering, stopping, the baseline's failures -----------

def test_first_kill_plans_put_the_scenarios_a_mutant_names_first():
    files = [os.path.join(LIBRARY, f"{n}.yaml") for n in
             ("block-recovery-different-lengths", "replace-never", "setup-first-bad-link",
              "dn-crash-first-in-pipeline")]
    m = BY_NAME["dn-ignores-invalidate"]   # names dn-crash-first-in-pipeline, dn-restart-...
    jobs = plan_jobs([m, BY_NAME["first-bad-link-marks-first"]], files, targeted=False,
                     baseline=True, first_kill=True)
    assert jobs[0].name == BASELINE and jobs[0].scenarios == files   # library order
    # named ones first (one not in the selection is skipped), then the rest in order
    assert jobs[1].scenarios == [files[3], files[0], files[1], files[2]]
    assert jobs[2].scenarios == [files[2], files[0], files[1], files[3]]
    # every-scenario mode keeps the library's order for every mutant
    assert [j.scenarios for j in plan_jobs([m], files, False, False)] == [files]


class _FakeLibrary:
    """run_unverified, load_scenario and verify_runs for run_job/worker_main: a scenario's
    verdict per tree from `fails` ({job: {scenario: [failed checks]}}); `calls` records
    what ran and what was verified, in order."""

    def __init__(self, monkeypatch, fails: dict, statuses: dict | None = None):
        import contextlib
        import harness.reconcile.api
        import harness.runner
        import harness.scenario
        from harness.runner import RunOutcome
        from tools.mutants import runner
        self.fails, self.calls = fails, []

        class Scenario:
            def __init__(self, path):
                self.name = os.path.splitext(os.path.basename(path))[0]

        def run_unverified(scenario, backend, results_dir):
            assert backend == "local"
            job = os.path.basename(results_dir)
            run_dir = os.path.join(results_dir, scenario.name)
            os.makedirs(run_dir)
            self.calls.append(("run", job, scenario.name))
            status = (statuses or {}).get(scenario.name, "completed")
            return RunOutcome(scenario.name, scenario.name, run_dir, status, [])

        def verify_runs(run_dirs):
            self.calls.append(("verify", [os.path.basename(d) for d in run_dirs]))
            out = []
            for d in run_dirs:
                job, name = d.split(os.sep)[-2:]
                failed = self.fails.get(job, {}).get(name)
                out.append(_verdict(failed is None, failed or []))
            return out

        monkeypatch.setattr(harness.runner, "run_unverified", run_unverified)
        monkeypatch.setattr(harness.scenario, "load_scenario", Scenario)
        monkeypatch.setattr(harness.reconcile.api, "verify_runs", verify_runs)
        monkeypatch.setattr(runner, "mutated_tree",
                            lambda mutant, parent_dir: contextlib.nullcontext(parent_dir))


def _job_record(out, name):
    with open(os.path.join(out, "jobs", f"{name}.json")) as f:
        return json.load(f)


def test_first_kill_verifies_each_run_at_once_and_stops_at_the_first_kill(monkeypatch,
                                                                            tmp_path):
    from tools.mutants.runner import run_job
    lib = _FakeLibrary(monkeypatch, {"sync-length-max": {"b": ["B2"], "c": ["L2"]}})
    rec = run_job(Job("sync-length-max", ["a.yaml", "b.yaml", "c.yaml", "d.yaml"]),
                  str(tmp_path), first_kill=True, baseline={s: "passed" for s in "abcd"},
                  max_batch=1)
    assert lib.calls == [("run", "sync-length-max", "a"), ("verify", ["a"]),
                         ("run", "sync-length-max", "b"), ("verify", ["b"])]
    assert [r["scenario"] for r in rec["runs"]] == ["a", "b"]
    assert rec["complete"] and rec["killed_at"] == 2 and rec["scenarios"] == 4
    assert _job_record(str(tmp_path), "sync-length-max") == rec
    got = classify_mutant(rec["runs"], {s: "passed" for s in "abcd"}, rec["complete"])
    assert got["status"] == "killed" and got["killed_by"][0]["checks"] == ["B2"]


def test_first_kill_batches_double_and_stop_at_the_batch_holding_the_first_kill(
        monkeypatch, tmp_path):
    from tools.mutants.runner import run_job
    lib = _FakeLibrary(monkeypatch, {"sync-length-max": {"f": ["B2"]}})
    files = [f"{c}.yaml" for c in "abcdefghijklmnopq"]
    rec = run_job(Job("sync-length-max", files), str(tmp_path), first_kill=True,
                  baseline=None, max_batch=4)
    assert [c[1] for c in lib.calls if c[0] == "verify"] \
        == [["a"], ["b", "c"], ["d", "e", "f", "g"]]
    assert len(rec["runs"]) == 7 and rec["killed_at"] == 6 and rec["complete"]
    lib = _FakeLibrary(monkeypatch, {})   # a survivor: 1, 2, then batches of max_batch
    rec = run_job(Job("soft-limit-ignored", files), str(tmp_path), first_kill=True,
                  baseline=None, max_batch=4)
    assert [len(c[1]) for c in lib.calls if c[0] == "verify"] == [1, 2, 4, 4, 4, 2]
    assert len(rec["runs"]) == 17 and rec["killed_at"] is None


def test_a_hung_run_stops_the_job_unverified_and_the_worker_verifies_it_at_the_end(
        monkeypatch, tmp_path):
    from tools.mutants.runner import run_job, verify_deferred
    lib = _FakeLibrary(monkeypatch, {"sync-length-max": {"c": ["P1"]}},
                       statuses={"c": "timeout"})
    out, deferred = str(tmp_path), []
    rec = run_job(Job("sync-length-max", ["a.yaml", "b.yaml", "c.yaml", "d.yaml"]), out,
                  first_kill=True, baseline={s: "passed" for s in "abcd"}, deferred=deferred)
    # b (pending in its batch) is verified before c, which kills without Spark
    assert lib.calls == [("run", "sync-length-max", "a"), ("verify", ["a"]),
                         ("run", "sync-length-max", "b"), ("run", "sync-length-max", "c"),
                         ("verify", ["b"])]
    assert rec["killed_at"] == 3 and rec["runs"][2]["outcome"] == "hang"
    assert rec["runs"][2]["checks"] == [] and [o.scenario for o in deferred] == ["c"]
    verify_deferred(out, deferred)
    assert lib.calls[-1] == ("verify", ["c"])
    run = _job_record(out, "sync-length-max")["runs"][2]
    assert run["outcome"] == "hang" and run["checks"] == ["P1"]


def test_every_scenario_mode_runs_them_all_and_verifies_once(monkeypatch, tmp_path):
    from tools.mutants.runner import run_job
    lib = _FakeLibrary(monkeypatch, {"sync-length-max": {"b": ["B2"], "c": ["L2"]}})
    rec = run_job(Job("sync-length-max", ["a.yaml", "b.yaml", "c.yaml"]), str(tmp_path))
    assert [c[0] for c in lib.calls] == ["run", "run", "run", "verify"]
    assert [r["outcome"] for r in rec["runs"]] == ["passed", "failed", "failed"]


def test_a_scenario_failing_unmutated_neither_stops_a_mutant_nor_kills_it(monkeypatch,
                                                                         tmp_path):
    """The whole flow of a worker: the baseline first, then the mutant, whose failing run
    of b (failing unmutated too) goes on to c, the credited kill."""
    import signal
    from tools.mutants.runner import FIRST_KILL, build_report, worker_main
    lib = _FakeLibrary(monkeypatch, {BASELINE: {"b": ["L2"]},
                                     "sync-length-max": {"b": ["L2"], "c": ["B2"]},
                                     "soft-limit-ignored": {"b": ["L2"]}})
    out = str(tmp_path)
    files = ["a.yaml", "b.yaml", "c.yaml", "d.yaml"]
    jobs = [Job(BASELINE, files), Job("sync-length-max", files),
            Job("soft-limit-ignored", files)]
    with open(os.path.join(out, "plan.json"), "w") as f:
        json.dump({"command": "x", "mode": FIRST_KILL,
                   "jobs": [{"name": j.name, "scenarios": j.scenarios} for j in jobs]}, f)
    previous = signal.getsignal(signal.SIGTERM)
    try:
        assert worker_main(out, 0) == 0
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert [c[2] for c in lib.calls if c[0] == "run" and c[1] == "sync-length-max"] \
        == ["a", "b", "c"]
    assert [c[2] for c in lib.calls if c[0] == "run" and c[1] == "soft-limit-ignored"] \
        == ["a", "b", "c", "d"]   # ran every scenario: b's failure is the baseline's
    report = build_report(out, jobs, "x", 0.0, 60.0, 1, False, FIRST_KILL)
    by = {m["name"]: m for m in report["mutants"]}
    assert by["sync-length-max"]["status"] == "killed"
    assert [k["scenario"] for k in by["sync-length-max"]["killed_by"]] == ["c"]
    assert by["sync-length-max"]["not_credited"] == ["b"] and by["sync-length-max"]["ran"] == 3
    assert by["soft-limit-ignored"]["status"] == "suspect" and by["soft-limit-ignored"]["ran"] == 4


def test_a_mutant_waits_for_the_baseline_another_worker_runs(tmp_path):
    import threading
    from tools.mutants.runner import _baseline_outcomes
    out = str(tmp_path)
    plan = {"jobs": [{"name": BASELINE, "scenarios": ["a"]}, {"name": "m", "scenarios": ["a"]}]}
    assert _baseline_outcomes(out, {"jobs": plan["jobs"][1:]}) is None   # --no-baseline
    os.makedirs(tmp_path / "jobs")
    with open(tmp_path / "jobs" / f"{BASELINE}.json", "w") as f:   # still running
        json.dump({"job": BASELINE, "runs": [], "complete": False, "seconds": 1,
                   "verify_seconds": 0}, f)

    def finish():
        with open(tmp_path / "jobs" / f"{BASELINE}.json", "w") as f:
            json.dump({"job": BASELINE, "runs": [_run("a", "failed", ["L2"])],
                       "complete": True, "seconds": 1, "verify_seconds": 0}, f)
    threading.Timer(0.2, finish).start()
    assert _baseline_outcomes(out, plan, poll=0.02) == {"a": "failed"}
    os.remove(tmp_path / "jobs" / f"{BASELINE}.json")
    (tmp_path / "jobs" / f"{BASELINE}.failed").write_text("RuntimeError: x\n")
    assert _baseline_outcomes(out, plan, poll=0.02) is None   # it broke: as --no-baseline


def test_an_interrupted_first_kill_job_keeps_its_runs_and_is_incomplete(monkeypatch,
                                                                        tmp_path):
    from tools.mutants.runner import rebuild_report, run_job
    _FakeLibrary(monkeypatch, {}, statuses={"c": "interrupted"})
    out = str(tmp_path)
    files = ["a.yaml", "b.yaml", "c.yaml"]
    with open(os.path.join(out, "plan.json"), "w") as f:
        json.dump({"command": "x", "mode": "first-kill",
                   "jobs": [{"name": "sync-length-max", "scenarios": files}]}, f)
    with pytest.raises(KeyboardInterrupt):
        run_job(Job("sync-length-max", files), out, first_kill=True, baseline=None)
    rec = _job_record(out, "sync-length-max")   # a verified; b was waiting for its batch
    assert [r["scenario"] for r in rec["runs"]] == ["a"] and not rec["complete"]
    report = rebuild_report(out)   # `report --out DIR` of an interrupted run
    assert report["mutants"][0]["status"] == "incomplete"   # not "survived": c never ran
    with open(os.path.join(out, "report.md")) as f:
        assert "| 1 of 3 |" in f.read()


def test_the_report_head_gives_the_mode_and_totals_and_an_equivalent_survivor(tmp_path,
                                                                               monkeypatch):
    import dataclasses
    from tools.mutants.runner import FIRST_KILL
    # no mutant of today's catalogue is equivalent: give one a reason for the report
    monkeypatch.setitem(BY_NAME, "stale-replica-kept", dataclasses.replace(
        BY_NAME["stale-replica-kept"], equivalent="no run can tell it apart"))
    os.makedirs(tmp_path / "jobs")
    records = {"sync-length-max": [_run("s1", "failed", ["B2"])],
               "stale-replica-kept": [_run("s1", "passed"), _run("s2", "passed")],
               "soft-limit-ignored": [_run("s1", "passed"), _run("s2", "passed")]}
    for name, runs in records.items():
        with open(tmp_path / "jobs" / f"{name}.json", "w") as f:
            json.dump({"job": name, "runs": runs, "complete": True, "seconds": 5.0,
                       "verify_seconds": 1.0}, f)
    jobs = [Job(n, ["s1", "s2"]) for n in records]
    assert BY_NAME["stale-replica-kept"].equivalent   # the catalogue says why
    report = build_report(str(tmp_path), jobs, "python -m tools.mutants run", 0.0, 600.0, 1,
                          False, FIRST_KILL)
    assert report["counts"] == {"killed": 1, "equivalent": 1, "survived": 1}
    text = render_markdown(report)
    assert "Mode: **first kill**" in text
    assert "Mutants: 3: killed 1, survived 1, equivalent 1; 5 mutant runs" in text
    assert "10.0 min wall" in text
    assert "| **killed** | s1 (failed: B2) | 1 of 2 | 5s |" in text
    assert "| **equivalent** | — | 2 of 2 |" in text
