"""The exploration loop: base run -> failure points -> schedules -> parallel runs ->
batched verification -> findings -> shrinking -> summary. Owns `out/` and its state.

out/
  state.json        everything needed to resume (`--resume`): points, queue, results
  schedules/<id>.yaml   every schedule run, a plain scenario
  runs/             the run folders (events, verdict.json)
  findings/<id>.yaml    one shrunk reproducer per finding signature (+ <id>.json)
  index.html        the summary (report.py)

Each worker is its own process (the runner installs signal handlers and reaps the
processes of dead harnesses by pid, so runs must not share a process); each run's
cluster takes its own free ports. Verification runs in this process, in batches, on
one Spark session, in a thread beside the workers.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import multiprocessing
import os
import sys
import threading
import time
from typing import Callable

import yaml

from .points import FailurePoint, extract_points, read_run_events, run_start_ts
from .schedules import Schedule, ScheduleQueue, Step, faults_at, scenario_doc, to_yaml
from . import shrink as shrinking
from ..reconcile.verdict import Verdict
from .state import ExploreState, StateError

DEPTH2_PER_PARENT = 8
SHRINK_SHARE = 0.25          # of the budget kept for shrinking findings
SHRINK_RUNS = 6              # runs per finding at most
FINDING_OUTCOMES = ("fail", "hung")


class ExploreError(RuntimeError):
    """Bad input or a base scenario that cannot be explored (the message says why)."""


# -- one run, in a worker process -----------------------------------------------------------

# Worker port slices are claimed machine-wide (harness/ports.py): two explorers at once
# (or a mutation study beside an exploration) cut the port range into the same slices by
# worker index, and a run of one lost a port to a run of the other.
from .. import ports
from ..scenario import kind_names


def worker_pool(workers: int, package_root: str | None = None) -> cf.ProcessPoolExecutor:
    """Worker processes for runs, each picking its clusters' ports from its own slice of
    the port range (hdfs_contract.ports), so that two workers never pick the same port. The slice is
    a slot claimed on the machine (ports.claim_port_slot), so concurrent explorers differ too.
    `package_root`: where the workers' cluster processes import the mini-HDFS from (a
    mutant's copy, tools/mutants/apply.py); a module global, so each spawned worker
    sets it itself."""
    ctx = multiprocessing.get_context("spawn")
    return cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_init_worker,
                                  initargs=(ctx.Value("i", 0), workers, package_root))


def _init_worker(counter, workers: int, package_root: str | None = None) -> None:
    from harness.systems.minihdfs import use_package_root
    if package_root:
        use_package_root(package_root)
    ports.init_worker_ports(counter, workers)


def run_schedule(yaml_path: str, results_dir: str) -> dict:
    """Run one schedule file (no verification); what the explorer needs of the run."""
    from harness.runner import run_unverified
    from harness.scenario import load_scenario
    t0 = time.time()
    scenario = load_scenario(yaml_path)
    outcome = run_unverified(scenario, results_dir=results_dir)
    return {"run_dir": outcome.run_dir, "status": outcome.status, "errors": outcome.errors,
            "wall": round(time.time() - t0, 3), "timings": time_split(outcome.run_dir)}


def time_split(run_dir: str) -> dict:
    """How a run's time went: start (cluster up), workload, recovery wait (heal until
    quiescence checks start), quiescence, stop (final state, teardown). Parts of them,
    where the run says: `client_jvm` (the first client's process start to its first
    event, within workload) and, on Hadoop (logs/hadoop-start.json), `format` (a copy
    of the formatted storage, or a JVM) and `daemons` (their JVMs, spawn to all live),
    within start."""
    try:
        with open(os.path.join(run_dir, "events", "harness.jsonl")) as f:
            h = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError):
        return {}
    ts = {e["event"]: e["ts"] for e in reversed(h)}      # first of each
    end = next((e["ts"] for e in reversed(h) if e["event"] == "harness.run.end"), None)
    client_starts = [e["ts"] for e in h if e["event"] == "harness.node.start"
                     and str(e.get("target", "")).startswith("c")]
    q = next((e for e in h if e["event"] == "harness.quiescent"), None)
    if "harness.run.start" not in ts or not client_starts or q is None or end is None:
        return {}
    ops_end = 0.0
    for e in read_run_events(run_dir):
        if e.get("event") == "client.op.end":
            ops_end = max(ops_end, e["ts"])
    q_start = q["ts"] - (q.get("waited") or 0.0)
    work_end = min(max(ops_end, client_starts[0]), q_start)
    out = {"start": round(client_starts[0] - ts["harness.run.start"], 3),
           "workload": round(work_end - client_starts[0], 3),
           "recovery_wait": round(q_start - work_end, 3),
           "quiescence": round(q["waited"] or 0.0, 3),
           "stop": round(end - q["ts"], 3)}
    first = next((e for e in h if e["event"] == "harness.node.start"
                  and str(e.get("target", "")).startswith("c")), None)
    own = [e["ts"] for e in _first_events(run_dir, first["target"])] if first else []
    if own:
        out["client_jvm"] = round(own[0] - first["ts"], 3)
    try:
        from harness.systems.hadoop.cluster import START_TIMINGS
        with open(os.path.join(run_dir, "logs", START_TIMINGS)) as f:
            started = json.load(f)
        out.update({k: started[k] for k in ("format", "daemons") if k in started})
    except (OSError, ValueError, ImportError):
        pass
    return out


def _first_events(run_dir: str, node: str) -> list[dict]:
    """The first event the process `node` logged itself (events/<node>.jsonl)."""
    try:
        with open(os.path.join(run_dir, "events", f"{node}.jsonl")) as f:
            line = f.readline()
        e = json.loads(line)
        return [e] if isinstance(e, dict) and isinstance(e.get("ts"), (int, float)) else []
    except (OSError, ValueError):
        return []


# -- judging a run ----------------------------------------------------------------------------

def classify(result: dict, verdict: "Verdict | None") -> tuple[str, list[str]]:
    """(outcome, failed checks): pass, fail, hung (workload stuck or never quiescent),
    unreached (a fault's point never came: not a finding), error (the harness broke)."""
    errors = result.get("errors") or []
    failed = sorted(verdict.failed_checks) if verdict is not None else []
    text = " ".join(errors)
    if result.get("status") == "unreached":     # the runner saw the point could not come
        return "unreached", failed
    if result.get("status") == "timeout":
        stuck = stuck_operations(result.get("run_dir"))
        if stuck is None:                       # no events to tell: trust the runner's words
            return ("hung" if "unfinished" in text else "unreached"), failed
        return ("hung" if stuck else "unreached"), failed
    if any(e.startswith("no quiescence") for e in errors):
        return "hung", failed
    if result.get("status") == "error" or verdict is None or verdict.error:
        return "error", failed
    if any(e.startswith("fault ") for e in errors):
        return "error", failed
    return ("fail" if failed else "pass"), failed


def run_seed(events: list[dict]) -> int | None:
    """The seed a run ran with (its harness.run.start says it)."""
    return next((e.get("seed") for e in events if e.get("event") == "harness.run.start"), None)


def stuck_operations(run_dir: str | None) -> list[str] | None:
    """The workload operations that started and never ended although their client was
    not killed: a hang. An operation whose own trigger never fired (the fault took away
    the event it waited for), or whose client the fault crashed, is not one."""
    if not run_dir or not os.path.isdir(os.path.join(run_dir, "events")):
        return None
    started: dict[str, str] = {}
    ended: set[str] = set()
    killed: set[str] = set()
    for e in read_run_events(run_dir):
        name = e.get("event")
        if name == "client.op.start":
            started[e.get("op_id")] = e.get("node")
        elif name == "client.op.end":
            ended.add(e.get("op_id"))
        elif name == "harness.node.kill":
            killed.add(e.get("target"))
    return sorted(op for op, client in started.items() if op not in ended and client not in killed)


def finding_signature(outcome: str, failed: list[str], schedule: Schedule) -> str:
    kinds = " + ".join(f"{s.point.kind}/{s.fault.label}" for s in schedule.steps)
    return f"{outcome}:{','.join(failed) or '-'}:{kinds}"


# -- the explorer ----------------------------------------------------------------------------

def default_workers(system, cores: int | None = None) -> int:
    """Runs at once when --workers is not given: the system's runs_per_core (three on
    the mini-HDFS, whose runs mostly wait; one on Hadoop, whose JVMs' starts use their
    core) times this machine's cores."""
    cores = cores or os.cpu_count() or 1
    return max(1, int(cores * system.runs_per_core))


class Explorer:
    def __init__(self, base_path: str, out: str, budget: float, depth: int = 2,
                 workers: int | None = None, resume: bool = False, batch: int | None = None,
                 say: Callable[[str], None] | None = None, status: Callable[[str], None] | None = None,
                 max_schedules: int | None = None, system: str | None = None,
                 hadoop_version: str | None = None, package_root: str | None = None,
                 shrink: bool = True, pool: Callable[[int, str | None], object] | None = None):
        if depth not in (1, 2):
            raise ExploreError(f"--depth {depth}: the explorer goes 1 or 2 faults deep; use 1 or 2")
        if workers is not None and workers < 1:
            raise ExploreError(f"--workers {workers}: use at least 1")
        self.base_path = os.path.abspath(base_path)
        self.out = os.path.abspath(out)
        self.budget, self.depth = budget, depth
        self.say = say or (lambda m: print(m, file=sys.stderr, flush=True))
        self.status = status or _status_line()
        self.max_schedules = max_schedules
        self.resume = resume
        self.package_root = package_root
        self.shrink = shrink
        # what runs the schedules: (workers, package_root) -> an executor whose
        # submit(run_schedule, yaml_path, runs_dir) gives a Future of the run's result
        # (worker_pool; sparkrun.SparkPool on a Spark cluster)
        self.make_pool = pool or worker_pool
        from harness.scenario import load_scenario, ScenarioError
        try:
            self.scenario = load_scenario(self.base_path)
        except ScenarioError as e:
            raise ExploreError(str(e)) from None
        with open(self.base_path) as f:
            self.base_doc = yaml.safe_load(f)
        self._choose_system(system, hadoop_version)
        self.workers = workers or default_workers(self.system)
        # a Spark verification costs about the same for 4 runs as for 8 (warm, 4 Hadoop
        # runs 20 s, 8 runs 18 s): 8 at least; later batches take all that waits
        self.batch = batch or max(8, 2 * self.workers)
        self._lost = self.lost_writers()
        self.queue = ScheduleQueue()
        self.state = ExploreState(base=self.base_path)
        self.points: list[FailurePoint] = []
        self.points_of: dict[str, list[FailurePoint]] = {}   # schedule id -> its run's points
        self._lock = threading.Lock()
        self.elapsed_before = 0.0
        self.t0 = time.time()
        self._base_check: tuple | None = None   # the base run's verification in flight

    # -- the system under test --------------------------------------------------------------

    def _choose_system(self, system: str | None, hadoop_version: str | None) -> None:
        """The system the schedules run on (the command line's, else the base's
        cluster.system). Exact injection needs a process that waits at its event log:
        the mini-HDFS's. Hadoop's JVMs cannot be held, so there the faults get plain event
        triggers that fire when the harness reads the adapted log line, and the
        exploration says so once (`self.note`, the summary)."""
        from harness.systems import DEFAULT_SYSTEM, system_of
        self.system = system_of(self.scenario, system, hadoop_version)
        self.system_label = self.system.label
        self.note = None
        if self.system.name != DEFAULT_SYSTEM:
            issues = self.system.issues(self.scenario)
            if issues:
                raise ExploreError(
                    f"{os.path.relpath(self.base_path)} cannot be explored on "
                    f"{self.system_label}: {'; '.join(issues)} (explore-bases/hadoop-write.yaml "
                    f"is a base that runs on hadoop)")
        # asked with the base's run fields: exact injection may hang on how the system
        # runs it (on Hadoop, the agent in its JVMs)
        self.exact = self.system.capabilities(
            self.system.run_fields(self.scenario)).exact_injection
        if not self.exact:
            self.note = (f"{self.system_label}: no exact injection; faults fire on the "
                         f"adapted log event, ~20 ms late")
        elif hasattr(self.system, "hold_issues"):
            self.note = (f"{self.system_label}: exact injection at the agent's events; "
                         f"faults at events only the logs make fire on the adapted log "
                         f"event, ~20 ms late")
        self._holdable: dict[tuple, bool] = {}

    def exact_at(self, point: FailurePoint) -> bool:
        """Whether a fault at `point` gets an exact trigger: the system can hold its
        processes (`self.exact`) and, where it can hold at some events only (Hadoop: the
        agent's; `hold_issues`), at this one."""
        if not self.exact:
            return False
        check = getattr(self.system, "hold_issues", None)
        if check is None:
            return True
        key = (point.event, point.node, point.where)
        if key not in self._holdable:
            from types import SimpleNamespace
            at = SimpleNamespace(exact=True, event=point.event, where=dict(point.where),
                                 node=point.node)
            self._holdable[key] = not check(SimpleNamespace(
                faults=[SimpleNamespace(id="x1", at=at)]))
        return self._holdable[key]

    def _prepare_system(self) -> None:
        """What the system builds once (Hadoop's jars and workload client), here: two
        workers building the client at once would write the same class files."""
        from harness.systems import SystemError_
        try:
            self.system.prepare()
        except SystemError_ as e:
            raise ExploreError(str(e)) from None

    # -- state ----------------------------------------------------------------------------

    @property
    def state_path(self) -> str:
        return os.path.join(self.out, "state.json")

    def _load_or_init(self) -> None:
        os.makedirs(os.path.join(self.out, "schedules"), exist_ok=True)
        os.makedirs(os.path.join(self.out, "runs"), exist_ok=True)
        if os.path.exists(self.state_path):
            if not self.resume:
                raise ExploreError(f"{self.out} holds an exploration already: add --resume to go "
                                   "on with it, or choose another --out")
            try:
                self.state = ExploreState.read(self.state_path)
            except StateError as e:
                raise ExploreError(f"{e}: use another --out") from None
            if self.state.base != self.base_path:
                raise ExploreError(f"{self.out} explores {self.state.base}, not "
                                   f"{self.base_path}: use another --out")
            if self.state.system != self.system_label:
                raise ExploreError(f"{self.out} explores on {self.state.system}, not "
                                   f"{self.system_label}: use the same --system, or another --out")
            self.points = [FailurePoint.from_json(p) for p in self.state.points]
            self.queue.tried = dict(self.state.tried)
            for item in self.state.queue:
                self.queue.push(Schedule.from_json(item["schedule"]), item.get("boost", 0))
            for sid, r in self.state.results.items():
                self.queue._ids.add(sid)
            for sid, item in self.state.running.items():   # cut short: run again
                self.queue._ids.discard(sid)
                self.queue.push(Schedule.from_json(item))
            self.state.running = {}
            self.elapsed_before = self.state.elapsed
            self._pin_seed((self.state.base_run or {}).get("seed"))
            if (self.state.base_run or {}).get("outcome") == "unverified":
                self._start_base_check({"run_dir": self.state.base_run["run_dir"],
                                        "status": "completed", "errors": []})
            self.say(f"explore: resuming {self.out}: {len(self.state.results)} done, "
                     f"{len(self.queue)} queued")
        else:
            self.state = ExploreState(base=self.base_path, system=self.system_label,
                                      exact=self.exact, note=self.note)

    def save(self) -> None:
        with self._lock:
            self.state.queue = [{"schedule": s.to_json(), "boost": 0} for s in self.queue.items()]
            self.state.tried = self.queue.tried
            self.state.elapsed = self.elapsed()
            self.state.write(self.state_path)

    def elapsed(self) -> float:
        return self.elapsed_before + (time.time() - self.t0)

    # -- schedules ------------------------------------------------------------------------

    def schedule_file(self, schedule: Schedule) -> str:
        path = os.path.join(self.out, "schedules", f"{schedule.id}.yaml")
        if not os.path.exists(path):
            with open(path, "w") as f:
                f.write(to_yaml(self.schedule_doc(schedule)))
        self.state.schedules[schedule.id] = schedule.to_json()
        return path

    def _pin_seed(self, seed: int | None) -> None:
        """Every schedule runs with the base run's seed (the NameNode's placement draws
        from it): a base without a `seed` gets a new one at each run, and a schedule's
        point on a replica the base placed on dn4 might then never come."""
        if seed is not None and self.base_doc.get("seed") is None:
            self.base_doc["seed"] = seed

    def schedule_doc(self, schedule: Schedule, name: str | None = None) -> dict:
        return scenario_doc(self.base_doc, schedule, name=name, exact=self.exact_at,
                            system=(self.system.name, self.system.version))

    def writers(self) -> dict[str, str]:
        return {op.path: op.client for op in self.scenario.workload if op.op in ("write", "append")}

    def clients_done(self, events: list[dict]) -> dict[str, float]:
        """{client: when it ended its last workload op} for each client that logged the end
        (client.op.end) of every op the base gives it: its process exits then, so a fault
        on it (a crash, a pause, its links) at a later point has nothing to act on (a
        pause of a client gone failed the run: "c1 is not running")."""
        ops: dict[str, int] = {}
        for op in self.scenario.workload:
            ops[op.client] = ops.get(op.client, 0) + 1
        ends: dict[str, list[float]] = {}
        for e in events:
            if e.get("event") == "client.op.end" and e.get("node") in ops:
                ends.setdefault(e["node"], []).append(e["ts"])
        return {c: max(ts) for c, ts in ends.items() if len(ts) >= ops[c]}

    def lost_writers(self) -> set[str]:
        """The writers whose crash the run cannot see through: their file's lease hard
        limit (the base's `lease.hard-limit`, else Hadoop's 20 min, which 3.3 cannot
        change) is not shorter than the base's timeout, so the file never closes within
        the run and the schedule ends `hung` whatever the system does."""
        from hdfs_contract.config import Config, ConfigError
        try:
            hard = Config(dict(self.scenario.cluster.config))["lease.hard-limit"]
        except ConfigError:
            return set()
        if hard < self.scenario.timeout:
            return set()
        return set(self.writers().values())

    def _explorable(self, fault) -> bool:
        return not (fault.target in self._lost and fault.kind in kind_names(ends_node=True))

    def last_closes(self, points: list[FailurePoint]) -> set[FailurePoint]:
        """The points of each writer's last close that the system cannot hold at: its
        `client.close` and the NameNode's successful `nn.file.complete` of that file. The
        writer's process exits right after, before a plain trigger (~20 ms late) pauses
        it (Hadoop 3.4.2: "c1 is not running", the run an error)."""
        writers = self.writers()
        last: dict[str, float] = {}
        for p in points:
            if p.event == "client.close" and p.node in writers.values():
                last[p.node] = max(last.get(p.node, p.ts), p.ts)
        out = set()
        for p in points:
            where = dict(p.where)
            client = p.node if p.event == "client.close" else \
                writers.get(where.get("path")) if p.event == "nn.file.complete" and where.get("ok") else None
            if client in last and p.ts <= last[client] and not self.exact_at(p) and \
                    not any(q.event == "client.close" and q.node == client and p.ts < q.ts < last[client]
                            for q in points):
                out.add(p)
        return out

    def depth1(self, points: list[FailurePoint]) -> list[Schedule]:
        out = []
        closing = self.last_closes(points)
        for p in points:
            for fault in faults_at(p, self.scenario.datanode_ids, self.scenario.client_ids,
                                   self.writers()):
                if p in closing and fault.kind == "pause" and fault.target in self.scenario.client_ids:
                    continue   # the writer is gone when the pause comes
                if self._explorable(fault):
                    out.append(Schedule((Step(p, fault),)))
        return out

    def depth2(self, parent: Schedule, run_dir: str) -> list[Schedule]:
        """Second faults at the points of the recovery the parent's fault caused."""
        events = read_run_events(run_dir)
        start = run_start_ts(events)
        inject = next((e["ts"] for e in events if e.get("event") == "harness.fault.inject"
                       and e.get("fault") == "x1"), None)
        if inject is None:
            return []
        first = parent.steps[0]
        gone = first.fault.target if first.fault.kind in kind_names(ends_node=True) else None
        done = self.clients_done(events)
        down = down_spans(events)
        by_sig: dict[str, list[Schedule]] = {}
        for p in extract_points(events, start):
            if p.ts + start <= inject or not p.is_recovery:
                continue
            ended = {c for c, ts in done.items() if ts < p.ts + start}
            # a node the first fault has stopped at this point (a restart's down time)
            # cannot be paused, killed or restarted: such a run ends in an error
            stopped = {n for n, spans in down.items()
                       if any(a <= p.ts + start < b for a, b in spans)}
            for fault in faults_at(p, self.scenario.datanode_ids, self.scenario.client_ids,
                                   self.writers()):
                nodes = set(fault.target) if isinstance(fault.target, tuple) else {fault.target}
                if gone in nodes or nodes & ended or not self._explorable(fault) \
                        or (isinstance(fault.target, str) and fault.target in stopped):
                    continue
                s = Schedule((first, Step(p, fault)), parent=parent.id)
                by_sig.setdefault(s.steps[1].signature, []).append(s)
        picked: list[Schedule] = []
        while len(picked) < DEPTH2_PER_PARENT and any(by_sig.values()):
            for sig in list(by_sig):
                if by_sig[sig] and len(picked) < DEPTH2_PER_PARENT:
                    picked.append(by_sig[sig].pop(0))
        return picked

    # -- the loop -------------------------------------------------------------------------

    def run(self) -> dict:
        self._load_or_init()
        if self.note:
            self.say(f"explore: {self.note}")
        if self._lost:
            self.say(f"explore: no crash of {', '.join(sorted(self._lost))}: the lease hard "
                     f"limit is not shorter than the timeout ({self.scenario.timeout:.0f}s), so "
                     f"the file would not close within the run")
        self._prepare_system()
        self.pool = self.make_pool(self.workers, self.package_root)
        try:
            if not self.points:
                self._record_base()
            self._explore(self.exploring)
            self._shrink_findings(lambda: self.shrink and self.elapsed() < self.budget)
        finally:
            self.save()
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.status("")
            print(file=sys.stderr)
        from .report import write_summary
        summary = write_summary(self)
        self.say(f"explore: {len(self.state.results)} schedules, "
                 f"{len(self.state.findings)} findings; summary {summary}")
        return self.state

    def exploring(self) -> bool:
        """Whether to start more schedules: the last quarter of the budget is kept for
        shrinking once there is a finding to shrink, not before."""
        until = self.budget * (1 - SHRINK_SHARE) if self.state.findings else self.budget
        return self.elapsed() < until

    def _record_base(self) -> None:
        """Run the base once without faults and queue the schedules at its points. Its
        verification goes on in a thread while the first schedules run (a cold Spark
        session takes tens of seconds on a loaded machine); `_judge_base` stops the
        exploration if the verdict is not a pass. A run that did not even complete is
        verified and refused at once."""
        self.say(f"explore: clean run of {os.path.relpath(self.base_path)}")
        [result] = self._run_all([Schedule(())])
        self.state.base_run = {"run_dir": result["run_dir"], "outcome": "unverified",
                               "failed": [], "timings": result.get("timings"),
                               "wall": result.get("wall")}
        if result.get("status") != "completed" or not result.get("run_dir"):
            self._judge_base(result, self._verify([result])[0])
        events = read_run_events(result["run_dir"])
        self.state.base_run["seed"] = run_seed(events)
        self._pin_seed(self.state.base_run["seed"])
        self.points = extract_points(events)
        self.state.points = [p.to_json() for p in self.points]
        schedules = self.depth1(self.points)
        self.state.space = len(schedules)
        for s in schedules:
            self.queue.push(s)
        self.say(f"explore: {len(self.points)} failure points, {len(schedules)} depth-1 "
                 f"schedules (points x faults)")
        self._start_base_check(result)
        self.save()

    def _start_base_check(self, result: dict) -> None:
        holder: list = []
        thread = threading.Thread(target=lambda: holder.append(self._verify([result])[0]),
                                  daemon=True)
        self._base_check = (thread, result, holder)
        thread.start()

    def _check_base(self, wait: bool = False) -> None:
        """Judge the base run once its verdict is in (`wait`: wait for it)."""
        if self._base_check is None:
            return
        thread, result, holder = self._base_check
        if wait:
            thread.join()
        if thread.is_alive():
            return
        self._base_check = None
        self._judge_base(result, holder[0] if holder else None)
        self.save()

    def _judge_base(self, result: dict, verdict: Verdict | None) -> None:
        outcome, failed = classify(result, verdict)
        self.state.base_run.update(outcome=outcome, failed=failed, verify=result.get("verify"))
        if outcome != "pass":
            raise ExploreError(f"the clean run of the base scenario does not pass ({outcome}"
                               f"{': ' + ','.join(failed) if failed else ''}; "
                               f"{result['run_dir']}): fix the base before exploring it")

    def _run_all(self, schedules: list[Schedule]) -> list[dict]:
        """Run schedules on the pool; what each run gave (no verification)."""
        futures = [self.pool.submit(run_schedule, self.schedule_file(s),
                                    os.path.join(self.out, "runs")) for s in schedules]
        results = []
        for f in futures:
            try:
                results.append(f.result())
            except ExploreError:    # what every run lacks (sparkrun.MissingPiece)
                raise
            except Exception as e:
                results.append({"run_dir": None, "status": "error", "errors": [repr(e)]})
        return results

    def _run_and_verify(self, schedules: list[Schedule]) -> list[tuple[dict, Verdict | None]]:
        """Run schedules on the pool and verify them as one batch (used for shrinking;
        exploration overlaps the two)."""
        results = self._run_all(schedules)
        verdicts = self._verify([r for r in results])
        return list(zip(results, verdicts))

    def _verify(self, results: list[dict]) -> list[Verdict | None]:
        dirs = [r["run_dir"] for r in results if r.get("run_dir") and r["status"] != "interrupted"]
        by_dir: dict[str, Verdict] = {}
        if dirs:
            t = time.time()
            try:
                from harness.reconcile.api import verify_runs
                for d, v in zip(dirs, verify_runs(dirs)):
                    by_dir[d] = v
            except Exception as e:   # the verifier broke: every run of the batch says so
                for d in dirs:
                    by_dir[d] = Verdict(scenario=None, passed=False, run_dir=d,
                                        error=f"the verifier failed: {type(e).__name__}: {e}")
            took = time.time() - t
            with self._lock:
                self.state.verify_s += took
                self.state.verified += len(dirs)
            for r in results:       # each run's share of its batch
                if r.get("run_dir") in by_dir:
                    r["verify"] = round(took / len(dirs), 3)
        return [by_dir.get(r.get("run_dir")) for r in results]

    def _explore(self, go_on: Callable[[], bool]) -> None:
        running: dict[cf.Future, Schedule] = {}
        to_verify: list[tuple[Schedule, dict]] = []
        # the base run's verification first: one verification at a time on the session
        verifying: list[threading.Thread] = [self._base_check[0]] if self._base_check else []
        verified: list[tuple[Schedule, dict, Verdict | None]] = []
        last_save = time.time()

        def verify_batch(batch):
            verdicts = self._verify([r for _, r in batch])
            with self._lock:
                verified.extend((s, r, v) for (s, r), v in zip(batch, verdicts))

        already = len(self.state.results)
        launched = [0]

        def limit_reached():   # counts the runs in flight and in verification too
            return self.max_schedules is not None and \
                already + launched[0] >= self.max_schedules

        while True:
            while go_on() and len(running) < self.workers and not limit_reached():
                s = self.queue.pop()
                if s is None:
                    break
                self.state.running[s.id] = s.to_json()
                launched[0] += 1
                running[self.pool.submit(run_schedule, self.schedule_file(s),
                                         os.path.join(self.out, "runs"))] = s
            if running:
                done, _ = cf.wait(list(running), timeout=0.5, return_when=cf.FIRST_COMPLETED)
                for f in done:
                    s = running.pop(f)
                    try:
                        r = f.result()
                    except ExploreError:
                        raise
                    except Exception as e:
                        r = {"run_dir": None, "status": "error", "errors": [repr(e)]}
                    to_verify.append((s, r))
            verifying = [t for t in verifying if t.is_alive()]
            self._check_base()
            # idle: no run going and none to start; a lone worker between two of its runs
            # is not idle (its verification batches would hold one run each)
            idle = not running and (not go_on() or len(self.queue) == 0 or limit_reached())
            if to_verify and not verifying and (len(to_verify) >= self.batch or idle):
                batch, to_verify = to_verify, []
                t = threading.Thread(target=verify_batch, args=(batch,), daemon=True)
                t.start()
                verifying.append(t)
            with self._lock:
                ready, verified[:] = list(verified), []
            for s, r, v in ready:
                self._record(s, r, v)
            self.status(self._progress(len(running) + len(to_verify)))
            if time.time() - last_save > 5:
                self.save()
                last_save = time.time()
            if not running and not to_verify and not verifying and not ready:
                if not go_on() or len(self.queue) == 0 or limit_reached():
                    with self._lock:
                        late = list(verified)
                    if not late:
                        break
            if not running:
                time.sleep(0.2)   # waiting for a verification batch
        self._check_base(wait=True)

    def _progress(self, in_flight: int) -> str:
        done = len(self.state.results)
        rate = done / max(self.elapsed(), 1e-6) * 3600
        return (f"explore: done {done} | running {in_flight} | queued {len(self.queue)} | "
                f"findings {len(self.state.findings)} | {rate:.0f} schedules/h | "
                f"{self.elapsed():.0f}s of {self.budget:.0f}s")

    def _record(self, s: Schedule, r: dict, v: dict | None) -> None:
        outcome, failed = classify(r, v)
        self.state.running.pop(s.id, None)
        entry = {"id": s.id, "depth": s.depth, "signature": s.signature, "outcome": outcome,
                 "failed": failed, "run_dir": r.get("run_dir"), "status": r.get("status"),
                 "errors": r.get("errors"), "timings": r.get("timings"), "wall": r.get("wall"),
                 "verify": r.get("verify"), "parent": s.parent, "at": round(self.elapsed(), 1)}
        self.state.results[s.id] = entry
        if outcome in FINDING_OUTCOMES:
            sig = finding_signature(outcome, failed, s)
            group = self.state.findings.setdefault(sig, {"signature": sig, "members": [],
                                                            "outcome": outcome, "failed": failed})
            group["members"].append(s.id)
            if len(group["members"]) == 1:
                self.say(f"\nexplore: finding {sig} (schedule {s.id})")
        if self.depth == 2 and s.depth == 1 and r.get("run_dir") and outcome != "unreached":
            for child in self.depth2(s, r["run_dir"]):
                self.queue.push(child)

    # -- findings -------------------------------------------------------------------------

    def _shrink_findings(self, go_on: Callable[[], bool]) -> None:
        os.makedirs(os.path.join(self.out, "findings"), exist_ok=True)
        for n, (sig, group) in enumerate(sorted(self.state.findings.items()), 1):
            if group.get("reproducer"):
                continue
            sid = group["members"][0]
            original = Schedule.from_json(self.state.schedules[sid])
            points = self._points_for(original)
            kept: list[str] = []
            smallest = original
            if go_on():
                def still_fails(options):
                    if not go_on():   # the budget is spent: no more rounds
                        return [False] * len(options)
                    results = self._run_and_verify(options)
                    same = []
                    for o, (r, v) in zip(options, results):
                        outcome, failed = classify(r, v)
                        self.state.results.setdefault(o.id, {
                            "id": o.id, "depth": o.depth, "signature": o.signature,
                            "outcome": outcome, "failed": failed, "run_dir": r.get("run_dir"),
                            "status": r.get("status"), "errors": r.get("errors"),
                            "timings": r.get("timings"), "shrink": True,
                            "at": round(self.elapsed(), 1)})
                        same.append(outcome == group["outcome"] and failed == group["failed"])
                    return same
                self.status(f"explore: shrinking finding {n} of {len(self.state.findings)}")
                smallest, kept = shrinking.shrink(original, points, still_fails,
                                                  max_runs=SHRINK_RUNS)
            self._write_finding(group, original, smallest, kept, shrunk=go_on() or bool(kept))
            self.save()

    def _points_for(self, schedule: Schedule) -> list[FailurePoint]:
        if schedule.depth < 2 or not schedule.parent:
            return self.points
        parent = self.state.results.get(schedule.parent, {})
        if parent.get("run_dir"):
            return extract_points(read_run_events(parent["run_dir"]))
        return self.points

    def _write_finding(self, group: dict, original: Schedule, smallest: Schedule,
                       kept: list[str], shrunk: bool) -> None:
        fid = smallest.id
        result = self.state.results.get(fid) or self.state.results[original.id]
        verdict = _read_verdict(result.get("run_dir"))
        evidence = [{"check": c.id, "evidence": (c.evidence or [])[:3]}
                    for c in (verdict.checks if verdict else []) if c.status == "fail"]
        doc = self.schedule_doc(smallest, name=f"finding-{fid}")
        doc["description"] = (
            f"Found by hdfs-chaos explore from {os.path.basename(self.base_path)}: "
            f"{group['signature']}. {doc['description']}. Verdict: {group['outcome']}"
            f"{' (failed checks ' + ', '.join(group['failed']) + ')' if group['failed'] else ''}. "
            f"Shrunk from schedule {original.id}"
            f"{' by: ' + ', '.join(kept) if kept else (' (no smaller schedule failed alike)' if shrunk else ' (not shrunk: budget spent)')}.")
        path = os.path.join(self.out, "findings", f"{fid}.yaml")
        with open(path, "w") as f:
            f.write(to_yaml(doc))
        info = {"id": fid, "signature": group["signature"], "outcome": group["outcome"],
                "failed": group["failed"], "members": group["members"], "original": original.id,
                "shrunk_by": kept, "run_dir": result.get("run_dir"),
                "errors": result.get("errors"), "evidence": evidence,
                "timeline": timeline(result.get("run_dir"))}
        with open(os.path.join(self.out, "findings", f"{fid}.json"), "w") as f:
            json.dump(info, f, indent=1, default=str)
        group["reproducer"] = os.path.relpath(path, self.out)
        group["finding"] = info


def _status_line() -> Callable[[str], None]:
    """A progress line redrawn in place on a terminal; elsewhere (a log, a test) one line
    every 15 s, so that the output stays readable."""
    if sys.stderr.isatty():
        return lambda m: print("\r" + m, end="", file=sys.stderr, flush=True)
    last = [0.0]

    def line(m: str) -> None:
        if m and time.time() - last[0] >= 15:
            last[0] = time.time()
            print(m, file=sys.stderr, flush=True)
    return line


def _read_verdict(run_dir: str | None) -> Verdict | None:
    if not run_dir:
        return None
    try:
        return Verdict.read(run_dir)
    except (OSError, ValueError):   # VerdictError too: a finding does without its evidence
        return None


TIMELINE_EVENTS = ("harness.fault.inject", "harness.fault.heal", "harness.node.kill",
                   "harness.node.start", "harness.node.stop", "harness.hold.release",
                   "client.pipeline.error", "client.pipeline.recovered", "client.stream.error",
                   "client.op.end", "client.recover_lease", "nn.recovery.start",
                   "nn.recovery.commit", "nn.lease.recover", "nn.lease.expired",
                   "nn.block.update_pipeline", "nn.file.complete", "nn.file.close",
                   "dn.recovery.init_replica", "dn.recovery.update_replica", "dn.transfer",
                   "nn.block.abandon", "client.pipeline.abandon")


def timeline(run_dir: str | None, limit: int = 60) -> list[dict]:
    """The events of a run that tell its story (faults and recoveries), with seconds
    since the run started."""
    if not run_dir or not os.path.isdir(run_dir):
        return []
    events = read_run_events(run_dir)
    start = run_start_ts(events)
    out = []
    for e in events:
        if e.get("event") in TIMELINE_EVENTS and e["ts"] >= start:
            detail = {k: v for k, v in e.items() if k not in ("ts", "node", "role", "seq", "event")}
            out.append({"t": round(e["ts"] - start, 3), "node": e.get("node"),
                        "event": e["event"], "detail": json.dumps(detail, default=str)[:160]})
    return out[:limit]


def down_spans(events: list[dict]) -> dict[str, list[tuple[float, float]]]:
    """When each node was down in a run: from the harness's stop or kill of it to its
    next start (to the end of time if none)."""
    spans: dict[str, list[tuple[float, float]]] = {}
    since: dict[str, float] = {}
    for e in sorted((e for e in events if e.get("node") == "harness"
                     and e.get("event") in ("harness.node.stop", "harness.node.kill",
                                            "harness.node.start")),
                    key=lambda e: e["ts"]):
        target = e.get("target")
        if e["event"] == "harness.node.start":
            if target in since:
                spans.setdefault(target, []).append((since.pop(target), e["ts"]))
        else:
            since.setdefault(target, e["ts"])
    for target, ts in since.items():
        spans.setdefault(target, []).append((ts, float("inf")))
    return spans


def explore(base: str, out: str, budget: float, depth: int = 2, workers: int | None = None,
            resume: bool = False, **kw) -> ExploreState:
    return Explorer(base, out, budget, depth, workers, resume, **kw).run()
