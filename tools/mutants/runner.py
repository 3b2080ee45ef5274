"""The mutation-testing runner: every mutant of the catalogue is applied to a scratch
copy of the mini-HDFS, the scenario library runs against it on the local backend, the
verifier judges the runs, and each mutant is reported killed (a scenario failed its
verdict, hung past its timeout, or could not run) or survived.

Two modes (plan.json's "mode"):
    first-kill       (default) the unmutated tree runs every scenario first; each mutant
                     then runs the scenarios its catalogue entry names first, then the
                     rest, verified as they come (run_job), and stops at its first run
                     that kills it (a scenario that fails unmutated kills nothing)
    every-scenario   (--every-scenario) each mutant runs every scenario, verified in one
                     batch at the end: all the scenarios and checks that kill it

Layout of the output folder (`--out`, default results/mutants):
    plan.json                  what the workers run (mode, jobs, scenarios per job)
    claims/<job>               a worker took that job (jobs are claimed, not assigned)
    jobs/<job>.json            one job's raw runs (written by its worker; in first-kill
                               mode after every run, "complete" once the job ended)
    jobs/<job>.failed          the job itself broke (the error)
    runs/<job>/<run-id>/       the run folders (events, final state, verdict.json)
    logs/worker-<i>.log        each worker's output (Spark's included)
    report.json, report.md     the classification of every mutant

Each worker is a process of its own (`python -m tools.mutants worker`) with one Spark
session for all of its jobs (started by its first verification, then kept warm). The
parent only schedules, relays progress and classifies.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass

from harness.reconcile.verdict import Verdict

from .apply import REPO_ROOT, mutated_tree
from .catalogue import BY_NAME, MUTANTS, Mutant

BASELINE = "unmutated"             # the job that runs the library on the unmutated tree
KILLING = ("failed", "hang", "error")   # run outcomes that kill a mutant
FIRST_KILL, EVERY_SCENARIO = "first-kill", "every-scenario"   # the modes of a run
DEFAULT_MAX_BATCH = 8   # first-kill verification batches double from 1 run up to this


# -- classification (pure: tested on fake verdicts) --------------------------------------

def classify_run(verdict: Verdict) -> dict:
    """What one scenario run says about the tree it ran on.

    outcome: passed | failed (verdict failed: checks or expect) | hang (workload past
    the scenario's timeout) | error (the run itself broke: a node did not start, or the
    cluster never became quiescent, e.g. stale replicas never deleted; the verdict may
    pass such a run, the harness's run_errors say it) | interrupted | inconclusive (the
    verifier could not judge it)."""
    checks = verdict.failed_checks
    unmet = [e.what for e in verdict.unmet]
    run_status = verdict.run_status or "completed"
    if run_status == "interrupted":
        outcome = "interrupted"
    elif run_status in ("timeout", "unreached"):   # unreached: a fault's event never came
        outcome = "hang"
    elif run_status == "error" or verdict.run_errors:
        outcome = "error"
    elif verdict.error and not verdict.checks:
        outcome = "inconclusive"   # "the verifier failed: ...": says nothing about the tree
    elif verdict.passed:
        outcome = "passed"
    else:
        outcome = "failed"
    return {"outcome": outcome, "checks": checks, "unmet": unmet,
            "errors": list(verdict.run_errors or []) + (
                [verdict.error] if verdict.error else [])}


def credited(run: dict, baseline: dict[str, str] | None) -> bool:
    """Whether a run kills its mutant: a killing outcome of a scenario the unmutated
    tree passed (of any scenario when no baseline ran)."""
    return run["outcome"] in KILLING and (baseline is None
                                          or baseline.get(run["scenario"]) == "passed")


def classify_mutant(runs: list[dict], baseline: dict[str, str] | None = None,
                    complete: bool = True) -> dict:
    """A mutant's status from its runs ({scenario, outcome, checks, ...} each).

    killed: a scenario that kills it passes on the unmutated tree (or no baseline ran);
    incomplete: nothing killed it and its job did not finish (interrupted), or some runs
    were interrupted or not judged;
    suspect: only scenarios that also fail unmutated "kill" it, which proves nothing;
    survived: every scenario passed."""
    killers = [r for r in runs if r["outcome"] in KILLING]
    credible = [r for r in killers if credited(r, baseline)]
    if credible:
        status = "killed"
    elif not complete:
        status = "incomplete"
    elif killers:
        status = "suspect"
    elif any(r["outcome"] in ("interrupted", "inconclusive") for r in runs) or not runs:
        status = "incomplete"
    else:
        status = "survived"
    return {"status": status,
            "killed_by": [{k: r.get(k, []) for k in ("scenario", "outcome", "checks", "unmet",
                                                     "errors")} for r in credible],
            "not_credited": [r["scenario"] for r in killers if r not in credible]}


# -- the worker ----------------------------------------------------------------------------

@dataclass
class Job:
    name: str                      # a mutant's name, or BASELINE
    scenarios: list[str]           # scenario files

    @property
    def mutant(self) -> Mutant | None:
        return None if self.name == BASELINE else BY_NAME[self.name]


def _say(message: str) -> None:
    print(message, flush=True)


def _claim(out: str, name: str) -> bool:
    os.makedirs(os.path.join(out, "claims"), exist_ok=True)
    try:
        os.close(os.open(os.path.join(out, "claims", name), os.O_CREAT | os.O_EXCL))
        return True
    except FileExistsError:
        return False


def _verify(outcomes) -> list[Verdict]:
    """Verify a job's runs in one Spark batch (no HTML reports: the mutation report is
    the product); like harness.runner.verify_outcomes otherwise."""
    from harness.reconcile.api import verify_runs
    pending = [o for o in outcomes if o.status != "interrupted"]
    verdicts = {o.run_id: o.verdict_without_checks("the run was interrupted")
                for o in outcomes if o.status == "interrupted"}
    if pending:
        try:
            for o, v in zip(pending, verify_runs([o.run_dir for o in pending])):
                verdicts[o.run_id] = v
        except Exception as e:   # the verifier broke: no run of this job is judged
            for o in pending:
                verdicts[o.run_id] = o.verdict_without_checks(
                    f"the verifier failed: {type(e).__name__}: {e}")
    return [o.finish(verdicts[o.run_id]) for o in outcomes]


def _write_record(out: str, name: str, record: dict) -> None:
    os.makedirs(os.path.join(out, "jobs"), exist_ok=True)
    tmp = os.path.join(out, "jobs", f"{name}.json.tmp")
    with open(tmp, "w") as f:
        json.dump(record, f, indent=1)
    os.replace(tmp, os.path.join(out, "jobs", f"{name}.json"))


def _kill_text(run: dict) -> str:
    return f"{run['scenario']}({run['outcome']}" + (
        ":" + ",".join(run["checks"]) if run["checks"] else "") + ")"


UNVERIFIED = ("not verified yet: the run kills by itself (hung or broke); the worker "
              "verifies such runs together once its jobs are done")


def _kills_by_status(outcome) -> bool:
    """A run classify_run calls hang or error whatever its verdict says."""
    return outcome.status in ("timeout", "error") or bool(outcome.errors)


def run_job(job: Job, out: str, tag: str = "", first_kill: bool = False,
            baseline: dict[str, str] | None = None, max_batch: int = DEFAULT_MAX_BATCH,
            deferred: list | None = None) -> dict:
    """Run one job's scenarios against its tree, verify them, write jobs/<name>.json.

    first_kill: the runs are verified as they come, in batches that double from one run
    up to `max_batch` (the worker's Spark session stays warm between them; a batch costs
    little more than one run's verification), and the job stops at the first run that
    kills the mutant (`credited` against `baseline`: a scenario that fails unmutated
    kills nothing and does not stop it). A run that hangs or breaks kills whatever its
    verdict: it stops the job unverified and joins `deferred`, which the worker verifies
    in one batch at the end (for its checks). The record is rewritten after every batch,
    so a report rebuilt meanwhile shows the job so far. Otherwise every scenario runs,
    and the runs are verified in one batch."""
    from harness.runner import run_unverified
    from harness.scenario import load_scenario

    results_dir = os.path.join(out, "runs", job.name)
    os.makedirs(results_dir, exist_ok=True)
    scratch = os.path.join(out, "scratch")
    os.makedirs(scratch, exist_ok=True)
    t0 = time.monotonic()
    runs: list[dict] = []
    pending, seconds = [], {}
    verify_seconds = 0.0
    interrupted = False
    batch = 1

    def add(outcome, verdict: Verdict) -> None:
        runs.append({"scenario": outcome.scenario, "run_dir": outcome.run_dir,
                     "seconds": seconds[outcome.run_id], **classify_run(verdict)})

    def judge(outcomes) -> None:
        nonlocal verify_seconds
        if not outcomes:
            return
        t = time.monotonic()
        for o, v in zip(outcomes, _verify(outcomes)):
            add(o, v)
        verify_seconds += time.monotonic() - t
        if first_kill:
            _say(f"{tag}{job.name}: verified {len(outcomes)} run(s) in "
                 f"{time.monotonic() - t:.0f}s: " + " ".join(
                     _kill_text(r) + (" (fails unmutated too: no kill)"
                                      if r["outcome"] in KILLING and not credited(r, baseline)
                                      else "") for r in runs[-len(outcomes):]))

    def killer() -> dict | None:
        return next((r for r in runs if credited(r, baseline)), None)

    def record(complete: bool) -> dict:
        k = killer()
        rec = {"job": job.name, "runs": runs, "complete": complete,
               "scenarios": len(job.scenarios),
               "killed_at": runs.index(k) + 1 if k else None,
               "run_seconds": round(time.monotonic() - t0 - verify_seconds, 1),
               "verify_seconds": round(verify_seconds, 1),
               "seconds": round(time.monotonic() - t0, 1)}
        _write_record(out, job.name, rec)
        return rec

    with mutated_tree(job.mutant, parent_dir=scratch):
        for i, path in enumerate(job.scenarios, 1):
            scenario = load_scenario(path)
            t = time.monotonic()
            outcome = run_unverified(scenario, "local", results_dir=results_dir)
            seconds[outcome.run_id] = round(time.monotonic() - t, 1)
            line = (f"{tag}{job.name}: {i}/{len(job.scenarios)} {scenario.name}: run "
                    f"{outcome.status} ({seconds[outcome.run_id]:.0f}s)")
            if outcome.status == "interrupted":
                _say(line)
                interrupted = True
                break
            if first_kill and _kills_by_status(outcome) and credited(
                    {"scenario": outcome.scenario, "outcome": "error"}, baseline):
                _say(line + ": kills without its verdict")
                judge(pending)   # the runs before it first: one of them may kill already
                pending = []
                add(outcome, outcome.finish(outcome.verdict_without_checks(UNVERIFIED)))
                if deferred is not None:
                    deferred.append(outcome)
                break
            pending.append(outcome)
            _say(line)
            if first_kill and len(pending) >= batch:
                judge(pending)
                pending = []
                batch = min(2 * batch, max_batch)
                if killer():
                    break
                record(complete=False)
    if interrupted:   # stop now: a Spark batch would hold Ctrl-C up for a minute
        raise KeyboardInterrupt
    if pending:
        if not first_kill:
            _say(f"{tag}{job.name}: verifying {len(pending)} runs")
        judge(pending)
    rec = record(complete=True)
    k = killer()
    if first_kill and job.name != BASELINE:
        summary = (f"killed by {_kill_text(k)} at {rec['killed_at']}/{len(job.scenarios)}"
                   if k else f"not killed by any of {len(runs)} scenarios")
    else:
        killers = [_kill_text(r) for r in runs if r["outcome"] in KILLING]
        summary = "failing: " + " ".join(killers) if killers else "every scenario passed"
    _say(f"{tag}{job.name}: done in {rec['seconds']:.0f}s — {summary}")
    return rec


def verify_deferred(out: str, outcomes: list, tag: str = "") -> None:
    """Verify in one batch the runs that killed unverified (their verdict.json replaced;
    their outcome stays, classify_run judges a hung or broken run by its status) and
    update the job records with their checks."""
    if not outcomes:
        return
    t = time.monotonic()
    _say(f"{tag}verifying the {len(outcomes)} run(s) that killed by hanging or breaking "
         "(for their checks)")
    verdicts = {v.run_dir: v for v in _verify(outcomes)}
    for name in sorted({os.path.basename(os.path.dirname(o.run_dir)) for o in outcomes}):
        path = os.path.join(out, "jobs", f"{name}.json")
        with open(path) as f:
            rec = json.load(f)
        for run in rec["runs"]:
            if run["run_dir"] in verdicts:
                run.update(classify_run(verdicts[run["run_dir"]]))
        _write_record(out, name, rec)
    _say(f"{tag}verified them in {time.monotonic() - t:.0f}s")


def _baseline_outcomes(out: str, plan: dict, poll: float = 2.0) -> dict[str, str] | None:
    """The unmutated tree's outcome of each scenario, once its job is complete (another
    worker may still be running it: wait); None when the plan has no baseline or its job
    failed (then every killing run counts, as with --no-baseline)."""
    if not any(j["name"] == BASELINE for j in plan["jobs"]):
        return None
    waiting = False
    while True:
        rec = _load_job(out, BASELINE)
        if rec is not None and rec.get("complete", True):
            return {r["scenario"]: r["outcome"] for r in rec["runs"]}
        if os.path.exists(os.path.join(out, "jobs", f"{BASELINE}.failed")):
            return None
        if not waiting:
            _say("waiting for the unmutated tree's runs (a scenario that fails there kills "
                 "nothing)")
            waiting = True
        time.sleep(poll)


def worker_main(out: str, index: int) -> int:
    """A worker: claim jobs of plan.json one at a time until none is left."""
    def on_term(signum, frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)
    signal.signal(signal.SIGTERM, on_term)
    with open(os.path.join(out, "plan.json")) as f:
        plan = json.load(f)
    first_kill = plan.get("mode") == FIRST_KILL
    tag = f"[w{index}] "
    deferred: list = []
    try:
        for spec in plan["jobs"]:
            if not _claim(out, spec["name"]):
                continue
            job = Job(spec["name"], spec["scenarios"])
            baseline = (_baseline_outcomes(out, plan)
                        if first_kill and job.name != BASELINE else None)
            try:
                run_job(job, out, tag=tag, first_kill=first_kill and job.name != BASELINE,
                        baseline=baseline, max_batch=plan.get("max_batch", DEFAULT_MAX_BATCH),
                        deferred=deferred)
            except Exception as e:   # this job broke (not a run of it): the next ones go on
                traceback.print_exc()
                _say(f"{tag}{job.name}: the job failed: {type(e).__name__}: {e}")
                os.makedirs(os.path.join(out, "jobs"), exist_ok=True)
                with open(os.path.join(out, "jobs", f"{job.name}.failed"), "w") as f:
                    f.write(f"{type(e).__name__}: {e}\n")
        verify_deferred(out, deferred, tag)
    except KeyboardInterrupt:
        _say(f"[w{index}] interrupted")
        return 130
    return 0


# -- the parent ----------------------------------------------------------------------------

def scenario_order(mutant: Mutant, scenarios: list[str]) -> list[str]:
    """`scenarios` with those the mutant's catalogue entry names first (in the entry's
    order), then the rest in their given order: in first-kill mode its likely killers
    run before the others."""
    by_name = {os.path.splitext(os.path.basename(p))[0]: p for p in scenarios}
    named = [by_name[s] for s in mutant.scenarios if s in by_name]
    return named + [p for p in scenarios if p not in named]


def plan_jobs(mutants: list[Mutant], scenarios: list[str], targeted: bool,
              baseline: bool, first_kill: bool = False) -> list[Job]:
    """The jobs: the baseline first (when asked), then one per mutant. With `targeted`,
    a mutant runs only the scenarios its catalogue entry names (those of `scenarios`),
    and the baseline runs their union. With `first_kill`, each mutant's scenarios are
    in scenario_order (the baseline's stay in the given order)."""
    by_name = {os.path.splitext(os.path.basename(p))[0]: p for p in scenarios}
    jobs = []
    for m in mutants:
        if targeted:
            files = [by_name[s] for s in m.scenarios if s in by_name]
        else:
            files = scenario_order(m, scenarios) if first_kill else list(scenarios)
        if files:
            jobs.append(Job(m.name, files))
    if baseline:
        used = sorted({f for j in jobs for f in j.scenarios}, key=scenarios.index)
        jobs.insert(0, Job(BASELINE, used))
    return jobs


class Runner:
    """Starts the workers, relays their progress, stops them on Ctrl-C, writes the report."""

    def __init__(self, jobs: list[Job], out: str, workers: int, command: str,
                 mode: str = EVERY_SCENARIO, max_batch: int = DEFAULT_MAX_BATCH):
        self.jobs, self.out, self.workers, self.command = jobs, out, workers, command
        self.mode, self.max_batch = mode, max_batch
        self.procs: list[subprocess.Popen] = []

    def run(self) -> dict:
        if os.path.exists(os.path.join(self.out, "plan.json")):
            raise SystemExit(f"{self.out} holds an earlier mutation run; choose another --out "
                             "or remove it")
        os.makedirs(self.out, exist_ok=True)
        with open(os.path.join(self.out, "plan.json"), "w") as f:
            json.dump({"command": self.command, "mode": self.mode,
                       "max_batch": self.max_batch,
                       "jobs": [{"name": j.name, "scenarios": j.scenarios} for j in self.jobs]},
                      f, indent=1)
        t0 = time.time()
        _say(f"mutants: {len(self.jobs)} jobs, "
             + ("up to " if self.mode == FIRST_KILL else "")
             + f"{sum(len(j.scenarios) for j in self.jobs)} scenario runs ({self.mode}), "
             f"{self.workers} worker(s); output in {self.out}")
        # SIGINT too: a shell that starts us in the background ignores it for us
        previous = {sig: signal.signal(sig, lambda s, f: _raise_interrupt())
                    for sig in (signal.SIGTERM, signal.SIGINT)}
        interrupted = False
        try:
            self._start_workers()
            self._wait()
        except KeyboardInterrupt:
            interrupted = True
            _say("interrupted: stopping the workers (each tears its cluster down)")
            self._stop_workers()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self._stop_workers()
            shutil.rmtree(os.path.join(self.out, "scratch"), ignore_errors=True)
        report = build_report(self.out, self.jobs, self.command, t0, time.time(),
                              self.workers, interrupted, self.mode)
        write_report(self.out, report)
        return report

    def _start_workers(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = REPO_ROOT + os.pathsep + env.get("PYTHONPATH", "")
        os.makedirs(os.path.join(self.out, "logs"), exist_ok=True)
        for i in range(min(self.workers, len(self.jobs))):
            log = open(os.path.join(self.out, "logs", f"worker-{i}.log"), "ab")
            proc = subprocess.Popen(
                [sys.executable, "-m", "tools.mutants", "worker", "--out", self.out,
                 "--index", str(i)],
                stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, env=env,
                cwd=REPO_ROOT, start_new_session=True)   # Ctrl-C reaches us only: we stop them
            log.close()
            self.procs.append(proc)
            threading.Thread(target=self._relay, args=(proc, i), daemon=True).start()

    def _relay(self, proc: subprocess.Popen, index: int) -> None:
        with open(os.path.join(self.out, "logs", f"worker-{index}.log"), "ab") as log:
            for line in proc.stdout:
                log.write(line)
                log.flush()
                sys.stdout.write(line.decode(errors="replace"))
                sys.stdout.flush()

    def _wait(self) -> None:
        while any(p.poll() is None for p in self.procs):
            time.sleep(0.5)

    def _stop_workers(self, grace: float = 60.0) -> None:
        live = [p for p in self.procs if p.poll() is None]
        for p in live:
            try:
                os.kill(p.pid, signal.SIGTERM)   # the run in progress tears its cluster down
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace
        for p in live:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)   # the worker and Spark's JVM
                except ProcessLookupError:
                    pass
                p.wait()
            # what the dead worker's runs left (the local backend recorded them under
            # its pid), and only that
            from harness.backends.local import reap_local
            reap_local(harness_pid=p.pid)


def _raise_interrupt():
    raise KeyboardInterrupt


# -- the report ----------------------------------------------------------------------------

def _load_job(out: str, name: str) -> dict | None:
    """A job's record; each run reclassified from its verdict.json where that is still
    there (so a report rebuilt later follows the current classification)."""
    try:
        with open(os.path.join(out, "jobs", f"{name}.json")) as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None
    for run in record["runs"]:
        try:
            verdict = Verdict.read(run["run_dir"])
        except (OSError, ValueError, KeyError, TypeError):   # VerdictError is a ValueError
            continue
        if verdict is not None:
            run.update(classify_run(verdict))
    return record


def rebuild_report(out: str) -> dict:
    """The report of an output folder again, from plan.json and the jobs finished so far
    (`python -m tools.mutants report --out DIR`, also while a run is still going)."""
    with open(os.path.join(out, "plan.json")) as f:
        plan = json.load(f)
    jobs = [Job(j["name"], j["scenarios"]) for j in plan["jobs"]]
    started = os.path.getmtime(os.path.join(out, "plan.json"))
    done = [os.path.getmtime(os.path.join(out, "jobs", n)) for n in os.listdir(
        os.path.join(out, "jobs"))] if os.path.isdir(os.path.join(out, "jobs")) else []
    report = build_report(out, jobs, plan.get("command", "?"), started,
                          max(done, default=started), 1, False,
                          plan.get("mode", EVERY_SCENARIO))   # older plans ran every scenario
    write_report(out, report)
    return report


def build_report(out: str, jobs: list[Job], command: str, t0: float, t1: float,
                 workers: int, interrupted: bool, mode: str = EVERY_SCENARIO) -> dict:
    records = {j.name: _load_job(out, j.name) for j in jobs}
    base = records.get(BASELINE)
    baseline = ({r["scenario"]: r["outcome"] for r in base["runs"]} if base else None)
    mutants = []
    for j in jobs:
        if j.name == BASELINE:
            continue
        m, rec = BY_NAME[j.name], records[j.name]
        entry = {"name": m.name, "rule": m.rule, "seed": m.seed, "file": m.file,
                 "expected_killers": list(m.scenarios), "scenarios": len(j.scenarios)}
        if rec is None:
            entry.update(status="not run", killed_by=[], not_credited=[], runs=[], seconds=None)
            try:
                with open(os.path.join(out, "jobs", f"{j.name}.failed")) as f:
                    entry["error"] = f.read().strip()
            except OSError:
                pass
        else:
            entry.update(classify_mutant(rec["runs"], baseline, rec.get("complete", True)))
            entry.update(runs=rec["runs"], seconds=rec["seconds"],
                         verify_seconds=rec["verify_seconds"])
            if entry["status"] == "survived" and m.equivalent:
                entry["status"] = "equivalent"   # the catalogue says why no run can kill it
        entry["ran"] = len(entry["runs"])
        mutants.append(entry)
    counts: dict[str, int] = {}
    for e in mutants:
        counts[e["status"]] = counts.get(e["status"], 0) + 1
    return {"command": command, "mode": mode, "workers": workers, "interrupted": interrupted,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0)),
            "seconds": round(t1 - t0, 1), "counts": counts,
            "baseline": ({"runs": base["runs"], "seconds": base["seconds"],
                          "failing": sorted(s for s, o in baseline.items() if o != "passed")}
                         if base else None),
            "mutants": mutants}


def _killers_text(entry: dict) -> str:
    parts = []
    for k in entry["killed_by"]:
        why = ",".join(k["checks"]) or "; ".join(k["unmet"])[:60] or "; ".join(k["errors"])[:80]
        parts.append(f"{k['scenario']} ({k['outcome']}{': ' + why if why else ''})")
    return "<br>".join(parts) or "—"


MODE_TEXT = {FIRST_KILL: "**first kill**: each mutant stops at its first killing run, its "
                        "catalogue's scenarios first; a survivor ran every scenario",
             EVERY_SCENARIO: "**every scenario**: each mutant ran every scenario"}


def render_markdown(report: dict) -> str:
    counts = report["counts"]
    others = {k: v for k, v in sorted(counts.items())
              if k not in ("killed", "survived", "equivalent")}
    lines = ["# Mutation testing of the mini-HDFS", "",
             f"`{report['command']}` — {report['seconds'] / 60:.1f} min wall, "
             f"{report['workers']} worker(s), started {report['started']}"
             + (" (**interrupted**)" if report["interrupted"] else ""), "",
             "Mode: " + MODE_TEXT.get(report.get("mode", EVERY_SCENARIO), "?"), "",
             f"Mutants: {len(report['mutants'])}: killed {counts.get('killed', 0)}, "
             f"survived {counts.get('survived', 0)}, equivalent {counts.get('equivalent', 0)}"
             + "".join(f", {k} {v}" for k, v in others.items())
             + f"; {sum(e['ran'] for e in report['mutants'])} mutant runs", ""]
    if report["baseline"]:
        failing = report["baseline"]["failing"]
        lines += [f"Unmutated tree: {len(report['baseline']['runs'])} runs in "
                  f"{report['baseline']['seconds']:.0f}s; failing there (their kills are not "
                  f"credited): {', '.join(failing) or 'none'}", ""]
    lines += ["| mutant | rule | file | status | killed by (scenario: failed checks) | "
              "scenarios run | time |", "|---|---|---|---|---|---|---|"]
    for e in report["mutants"]:
        t = f"{e['seconds']:.0f}s" if e.get("seconds") is not None else "—"
        killers = _killers_text(e) if e["killed_by"] else (e.get("error") or "—")
        lines.append(f"| `{e['name']}` | {e['rule']} | `{e['file']}` | **{e['status']}** | "
                     f"{killers} | {e['ran']} of {e['scenarios']} | {t} |")
    return "\n".join(lines) + "\n"


def write_report(out: str, report: dict) -> None:
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(render_markdown(report))


def select_mutants(names: list[str] | None) -> list[Mutant]:
    if not names:
        return list(MUTANTS)
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        import difflib
        close = difflib.get_close_matches(unknown[0], list(BY_NAME), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise SystemExit(f"mutants: unknown mutant {unknown[0]!r}{hint}; "
                         "`python -m tools.mutants list` shows the catalogue")
    return [BY_NAME[n] for n in names]
