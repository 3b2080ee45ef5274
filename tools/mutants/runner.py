"""The mutation-testing runner: every mutant of the catalogue is applied to a scratch
copy of the mini-HDFS, the scenario library runs against it on the local backend, the
verifier judges the runs, and each mutant is reported killed (a scenario failed its
verdict, hung past its timeout, or could not run) or survived.

Layout of the output folder (`--out`, default results/mutants):
    plan.json                  what the workers run (jobs, scenarios per job)
    claims/<job>               a worker took that job (jobs are claimed, not assigned)
    jobs/<job>.json            one job's raw runs (written by its worker)
    runs/<job>/<run-id>/       the run folders (events, final state, verdict.json)
    logs/worker-<i>.log        each worker's output (Spark's included)
    report.json, report.md     the classification of every mutant

Each worker is a process of its own (`python -m tools.mutants worker`) with one Spark
session for all of its jobs: it runs a job's scenarios, then verifies them in one
batch. The parent only schedules, relays progress and classifies.
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
from dataclasses import dataclass

from .apply import REPO_ROOT, mutated_tree
from .catalogue import BY_NAME, MUTANTS, Mutant

BASELINE = "unmutated"             # the job that runs the library on the unmutated tree
KILLING = ("failed", "hang", "error")   # run outcomes that kill a mutant


# -- classification (pure: tested on fake verdicts) --------------------------------------

def classify_run(verdict: dict) -> dict:
    """What one scenario run says about the tree it ran on.

    outcome: passed | failed (verdict failed: checks or expect) | hang (workload past
    the scenario's timeout) | error (the run itself broke: a node did not start, or the
    cluster never became quiescent, e.g. stale replicas never deleted; the verdict may
    pass such a run, the harness's run_errors say it) | interrupted | inconclusive (the
    verifier could not judge it)."""
    checks = [c["id"] for c in verdict.get("checks", []) if c.get("status") == "fail"]
    unmet = [e.get("what", "?") for e in verdict.get("expect", []) if e.get("status") == "fail"]
    run_status = verdict.get("run_status", "completed")
    if run_status == "interrupted":
        outcome = "interrupted"
    elif run_status in ("timeout", "unreached"):   # unreached: a fault's event never came
        outcome = "hang"
    elif run_status == "error" or verdict.get("run_errors"):
        outcome = "error"
    elif verdict.get("error") and not verdict.get("checks"):
        outcome = "inconclusive"   # "the verifier failed: ...": says nothing about the tree
    elif verdict.get("passed"):
        outcome = "passed"
    else:
        outcome = "failed"
    return {"outcome": outcome, "checks": checks, "unmet": unmet,
            "errors": list(verdict.get("run_errors", [])) + (
                [verdict["error"]] if verdict.get("error") else [])}


def classify_mutant(runs: list[dict], baseline: dict[str, str] | None = None) -> dict:
    """A mutant's status from its runs ({scenario, outcome, checks, ...} each).

    killed: a scenario that kills it passes on the unmutated tree (or no baseline ran);
    suspect: only scenarios that also fail unmutated "kill" it, which proves nothing;
    incomplete: nothing killed it but some runs were interrupted or not judged;
    survived: every scenario passed."""
    killers = [r for r in runs if r["outcome"] in KILLING]
    if baseline is not None:
        credible = [r for r in killers if baseline.get(r["scenario"]) == "passed"]
    else:
        credible = killers
    if credible:
        status = "killed"
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


def _verify(outcomes) -> list[dict]:
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


def run_job(job: Job, out: str, tag: str = "") -> dict:
    """Run one job's scenarios against its tree, verify them, write jobs/<name>.json."""
    from harness.runner import run_scenario
    from harness.scenario import load_scenario

    results_dir = os.path.join(out, "runs", job.name)
    os.makedirs(results_dir, exist_ok=True)
    scratch = os.path.join(out, "scratch")
    os.makedirs(scratch, exist_ok=True)
    t0 = time.monotonic()
    outcomes, seconds = [], {}
    interrupted = False
    with mutated_tree(job.mutant, parent_dir=scratch):
        for i, path in enumerate(job.scenarios, 1):
            scenario = load_scenario(path)
            t = time.monotonic()
            outcome = run_scenario(scenario, "local", results_dir=results_dir, verify=False)
            seconds[outcome.run_id] = round(time.monotonic() - t, 1)
            outcomes.append(outcome)
            _say(f"{tag}{job.name}: {i}/{len(job.scenarios)} {scenario.name}: run "
                 f"{outcome.status} ({seconds[outcome.run_id]:.0f}s)")
            if outcome.status == "interrupted":
                interrupted = True
                break
    if interrupted:   # stop now: a Spark batch would hold Ctrl-C up for a minute
        raise KeyboardInterrupt
    t_verify = time.monotonic()
    _say(f"{tag}{job.name}: verifying {len(outcomes)} runs")
    verdicts = _verify(outcomes)
    runs = []
    for o, v in zip(outcomes, verdicts):
        runs.append({"scenario": o.scenario, "run_dir": o.run_dir,
                     "seconds": seconds[o.run_id], **classify_run(v)})
    record = {"job": job.name, "runs": runs,
              "run_seconds": round(t_verify - t0, 1),
              "verify_seconds": round(time.monotonic() - t_verify, 1),
              "seconds": round(time.monotonic() - t0, 1)}
    os.makedirs(os.path.join(out, "jobs"), exist_ok=True)
    tmp = os.path.join(out, "jobs", f"{job.name}.json.tmp")
    with open(tmp, "w") as f:
        json.dump(record, f, indent=1)
    os.replace(tmp, os.path.join(out, "jobs", f"{job.name}.json"))
    killers = [f"{r['scenario']}({r['outcome']}{':' + ','.join(r['checks']) if r['checks'] else ''})"
               for r in runs if r["outcome"] in KILLING]
    _say(f"{tag}{job.name}: done in {record['seconds']:.0f}s — "
         + ("failing: " + " ".join(killers) if killers else "every scenario passed"))
    return record


def worker_main(out: str, index: int) -> int:
    """A worker: claim jobs of plan.json one at a time until none is left."""
    def on_term(signum, frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)
    signal.signal(signal.SIGTERM, on_term)
    with open(os.path.join(out, "plan.json")) as f:
        plan = json.load(f)
    try:
        for spec in plan["jobs"]:
            if _claim(out, spec["name"]):
                run_job(Job(spec["name"], spec["scenarios"]), out, tag=f"[w{index}] ")
    except KeyboardInterrupt:
        _say(f"[w{index}] interrupted")
        return 130
    return 0


# -- the parent ----------------------------------------------------------------------------

def plan_jobs(mutants: list[Mutant], scenarios: list[str], targeted: bool,
              baseline: bool) -> list[Job]:
    """The jobs: the baseline first (when asked), then one per mutant. With `targeted`,
    a mutant runs only the scenarios its catalogue entry names (those of `scenarios`),
    and the baseline runs their union."""
    by_name = {os.path.splitext(os.path.basename(p))[0]: p for p in scenarios}
    jobs = []
    for m in mutants:
        files = [by_name[s] for s in m.scenarios if s in by_name] if targeted else list(scenarios)
        if files:
            jobs.append(Job(m.name, files))
    if baseline:
        used = sorted({f for j in jobs for f in j.scenarios}, key=scenarios.index)
        jobs.insert(0, Job(BASELINE, used))
    return jobs


class Runner:
    """Starts the workers, relays their progress, stops them on Ctrl-C, writes the report."""

    def __init__(self, jobs: list[Job], out: str, workers: int, command: str):
        self.jobs, self.out, self.workers, self.command = jobs, out, workers, command
        self.procs: list[subprocess.Popen] = []

    def run(self) -> dict:
        if os.path.exists(os.path.join(self.out, "plan.json")):
            raise SystemExit(f"{self.out} holds an earlier mutation run; choose another --out "
                             "or remove it")
        os.makedirs(self.out, exist_ok=True)
        with open(os.path.join(self.out, "plan.json"), "w") as f:
            json.dump({"command": self.command,
                       "jobs": [{"name": j.name, "scenarios": j.scenarios} for j in self.jobs]},
                      f, indent=1)
        t0 = time.time()
        _say(f"mutants: {len(self.jobs)} jobs, "
             f"{sum(len(j.scenarios) for j in self.jobs)} scenario runs, "
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
                              self.workers, interrupted)
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
            with open(os.path.join(run["run_dir"], "verdict.json")) as f:
                run.update(classify_run(json.load(f)))
        except (OSError, ValueError, KeyError):
            pass
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
                          max(done, default=started), 1, False)
    write_report(out, report)
    return report


def build_report(out: str, jobs: list[Job], command: str, t0: float, t1: float,
                 workers: int, interrupted: bool) -> dict:
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
        else:
            entry.update(classify_mutant(rec["runs"], baseline))
            entry.update(runs=rec["runs"], seconds=rec["seconds"],
                         verify_seconds=rec["verify_seconds"])
        mutants.append(entry)
    counts: dict[str, int] = {}
    for e in mutants:
        counts[e["status"]] = counts.get(e["status"], 0) + 1
    return {"command": command, "workers": workers, "interrupted": interrupted,
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


def render_markdown(report: dict) -> str:
    lines = ["# Mutation testing of the mini-HDFS", "",
             f"`{report['command']}` — {report['seconds'] / 60:.1f} min wall, "
             f"{report['workers']} worker(s), started {report['started']}"
             + (" (**interrupted**)" if report["interrupted"] else ""), "",
             "Counts: " + ", ".join(f"{k} {v}" for k, v in sorted(report["counts"].items())), ""]
    if report["baseline"]:
        failing = report["baseline"]["failing"]
        lines += [f"Unmutated tree: {len(report['baseline']['runs'])} runs in "
                  f"{report['baseline']['seconds']:.0f}s; failing there (their kills are not "
                  f"credited): {', '.join(failing) or 'none'}", ""]
    lines += ["| mutant | rule | file | status | killed by (scenario: failed checks) | time |",
              "|---|---|---|---|---|---|"]
    for e in report["mutants"]:
        t = f"{e['seconds']:.0f}s" if e.get("seconds") is not None else "—"
        lines.append(f"| `{e['name']}` | {e['rule']} | `{e['file']}` | **{e['status']}** | "
                     f"{_killers_text(e)} | {t} |")
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
