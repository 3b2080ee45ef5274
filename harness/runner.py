"""The runner: one scenario, one run, one results folder (ARCHITECTURE.md, data flow).

validate -> start Toxiproxy and the cluster (backend) -> start the workload clients ->
fire faults from the trigger engine -> wait for the workload or the timeout -> heal
everything -> wait for quiescence -> final_state.json -> stop and collect everything
-> verify (verdict.json, report.html) in results/<run-id>/.

Whatever happens (an exception, Ctrl-C, SIGTERM), every fault is healed and every
process, proxy and port the run started is released before `run_scenario` returns.
"""

from __future__ import annotations

import concurrent.futures as cf
import datetime
import json
import os
import queue
import random
import signal
import threading
import time
import traceback
from typing import Any, Callable

import tenacity

from faults.base import FaultError
from faults.kinds import FaultContext
from harness import ports
from harness.backends import BackendError, cleanup, get_backend
from harness.reconcile.verdict import VERDICT_FILE, Verdict
from harness.scenario import AtTime, OnEvent, Scenario, ScenarioError, load_scenario
from harness.triggers import LogTailer, TriggerEngine
from harness.systems import SystemUnderTest, system_of
from hdfs_contract.events import EventLog
from hdfs_contract.errors import HdfsError

Progress = Callable[[str], None]


class RunError(RuntimeError):
    """The run could not be carried out (not a failed verdict: a broken run)."""


class Interrupted(BaseException):
    """SIGTERM or SIGINT: stop the run, clean up, report."""


def _workload_ops(scenario: Scenario) -> dict[str, list[dict]]:
    """The JSON ops of each client process; an op with a trigger other than 0s is gated."""
    per_client: dict[str, list[dict]] = {}
    for op in scenario.workload:
        item = {"id": op.id, "op": op.op, "path": op.path, "size": op.size or 0,
                "hflush_every": op.hflush_every, "close": op.close,
                "gated": op.at != AtTime(0.0)}
        if op.new_len is not None:
            item["new_len"] = op.new_len
        if op.new_block:
            item["new_block"] = True
        if op.op == "recover_lease":
            item["timeout"] = max(10.0, scenario.timeout)
        per_client.setdefault(op.client, []).append(item)
    return per_client


# Events a cluster logs on its own timers, with no workload: a fault waiting for one of
# them may still fire after the workload ended and the cluster settled.
TIMER_EVENTS = frozenset({
    "dn.block_report", "nn.replica.reported", "dn.register", "nn.dn.register",
    "nn.dn.stale", "nn.dn.dead", "nn.dn.alive", "nn.safemode.enter",
    "nn.safemode.extension", "nn.safemode.leave", "nn.lease.renew", "client.lease.renew",
    "nn.lease.expired",
})
# A lasting fault in effect (a partition, a stopped or paused node: its kind's `lasting`)
# may change the cluster again on a timer (a node declared stale or dead), so a cluster
# under one has not settled; kinds done once injected (a crash, a corrupt replica) do not.


# Seconds between two quiescence polls at the end of a run. The cluster's state shows a
# command in flight (a pending transfer, a replica not deleted yet, a block under
# recovery), so the confirming poll need not wait for a heartbeat.
QUIESCENCE_POLL_S = 0.2


class Run:
    """The state of one run; `execute()` drives it from start to verdict."""

    def __init__(self, scenario: Scenario, backend: str, results_dir: str, seed: int | None,
                 keep: bool, progress: Progress | None, system: SystemUnderTest | None = None):
        self.scenario = scenario
        self.system = system or system_of(scenario)
        self.seed = seed if seed is not None else (
            scenario.seed if scenario.seed is not None else random.randrange(1 << 31))
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        self.run_id = f"{scenario.name}-{stamp}-s{self.seed}"
        base = os.path.join(results_dir, self.run_id)
        n = 1
        while True:   # made, not just looked for: parallel runs of one scenario never share one
            try:
                os.makedirs(base if n == 1 else f"{base}-{n}")
                break
            except FileExistsError:
                n += 1
        self.run_dir = os.path.abspath(base if n == 1 else f"{base}-{n}")
        self.run_id = os.path.basename(self.run_dir)
        self.backend_name, self.keep = backend, keep
        self.say = progress or (lambda msg: None)
        self.events_dir = os.path.join(self.run_dir, "events")
        os.makedirs(self.events_dir, exist_ok=True)
        self.log = EventLog(os.path.join(self.events_dir, "harness.jsonl"), "harness", "harness")
        self.backend = None
        self.engine: TriggerEngine | None = None
        self.firings: queue.Queue = queue.Queue()
        self.active: dict[str, Any] = {}          # fault id -> faults.* object
        self.fired: list[str] = []
        self.errors: list[str] = []
        self.ops_done: set[str] = set()
        self.bytes_written = 0
        self.start_ts = 0.0
        self.phase = "start"
        self._settle_polls, self._settle_next_poll = 0, 0.0   # _settled_out_of_reach
        self.holds = None                         # harness.exact.HoldServer, if exact triggers
        self.held: set = set()                    # ids of the faults the hold channel fires
        self.pipelines = None                     # harness.pipelines.LivePipelines, if positions

    # -- the run -----------------------------------------------------------------------

    def execute(self) -> dict:
        sc = self.scenario
        with open(os.path.join(self.run_dir, "scenario.yaml"), "w") as f:
            f.write(sc.source_text or "")
        # the system under test is recorded where the verifier reads it (the command
        # line may override the scenario's cluster.system)
        self.log.emit("harness.run.start", scenario=sc.name, seed=self.seed,
                      backend=self.backend_name, run_id=self.run_id,
                      system=self.system.name, system_version=self.system.version,
                      **self.system.run_fields(sc))
        status = "error"
        previous = _install_signal_handlers()
        ports.claim_run_ports()   # this process's own slice of ports, beside other harnesses
        try:
            cleanup(self.backend_name)
            backend_cls = get_backend(self.backend_name)
            kw = {"keep": self.keep, "system": self.system}
            refusal = self.system.capabilities().backend_refusal(self.system.name,
                                                                 self.backend_name)
            if refusal:
                raise RunError(refusal)
            issues = self.system.issues(sc) + backend_issues(sc, self.backend_name)
            if issues:
                raise RunError("; ".join(issues))
            self.backend = backend_cls(sc, self.run_id, self.run_dir, self.log, self.seed,
                                       progress=self._progress, **kw)
            self.phase = "cluster"
            self._start_holds()
            self.backend.start()
            # every process the harness starts is named in its log, so the verifier's I1
            # can tell a process that left no log from one that never ran
            for node in ("nn",) + sc.datanode_ids:
                self.log.emit("harness.node.start", target=node)
            self.start_ts = time.time()
            if self.holds is not None:
                self.holds.arm(self.start_ts)
            status = self._drive()
        except Interrupted:
            status = "interrupted"
            self.errors.append("interrupted")
        except (BackendError, RunError, FaultError, HdfsError, OSError) as e:
            self.errors.append(f"{type(e).__name__}: {e}")
            status = "error"
        except Exception as e:   # a bug or an unforeseen failure: this run fails, not the suite
            self.errors.append(f"{type(e).__name__}: {e} (traceback in logs/harness-error.txt)")
            os.makedirs(os.path.join(self.run_dir, "logs"), exist_ok=True)
            with open(os.path.join(self.run_dir, "logs", "harness-error.txt"), "w") as f:
                traceback.print_exc(file=f)
            status = "error"
        finally:
            self._teardown()
            _restore_signal_handlers(previous)
        self.log.emit("harness.run.end", status=status, errors=self.errors,
                      faults_fired=self.fired, bytes_written=self.bytes_written)
        self.log.close()
        self.status = status
        return self.outcome()

    def _progress(self, message: str, transient: bool = False) -> None:
        text = f"{self.scenario.name}: {message}"
        if transient and hasattr(self.say, "transient"):
            self.say.transient(text)   # a status line the display may redraw in place
        else:
            self.say(text)

    def _drive(self) -> str:
        sc = self.scenario
        engine = self.engine = TriggerEngine(self.events_dir, self.start_ts, self._on_fire)
        for fault in sc.faults:
            # an exact trigger is fired by the hold channel (harness.exact), not the engine
            if fault.id not in self.held:
                engine.add(("inject", fault.id), fault.at)
            if fault.heal_trigger is not None:
                engine.add(("heal", fault.id), fault.heal_trigger)
        for op in sc.workload:
            if op.at != AtTime(0.0):
                engine.add(("op", op.id), op.at)
        engine.start()
        self._inject_at_start()
        self.phase = "workload"
        for client, ops in _workload_ops(sc).items():
            self.backend.start_client(client, ops)
            self.log.emit("harness.node.start", target=client)
        deadline = self.start_ts + sc.timeout
        tailer = LogTailer([self.events_dir])
        last_report = 0.0
        status = "timeout"
        try:
            while time.time() < deadline:
                self._account(tailer.read_new())
                self._handle_firings(timeout=0.05)
                if time.time() - last_report > 1.0:
                    last_report = time.time()
                    self._progress(self._status_line(), transient=True)
                if self._workload_done():
                    if not self._inject_pending():
                        status = "completed"
                        break
                    if self._settled_out_of_reach():
                        status = "unreached"
                        break
        finally:
            self._account(tailer.read_new())
            tailer.close()
        if status == "timeout":
            self.errors.append(f"the workload did not finish within the scenario timeout "
                               f"({sc.timeout:.0f}s); pending: {self._pending_text()}")
        elif status == "unreached":
            self.errors.append(f"the workload ended and the cluster settled before the events "
                               f"the faults wait for came; pending: {self._pending_text()}")
        self._heal_everything()
        self._wait_quiescent(deadline)
        self._write_final_state()
        return status

    # -- workload and triggers ---------------------------------------------------------

    def _account(self, events: list[dict]) -> None:
        for e in events:
            name = e.get("event")
            if name == "client.write":
                self.bytes_written += e.get("len") or 0
            elif name == "client.op.end":
                self.ops_done.add(e.get("op_id"))

    def _workload_done(self) -> bool:
        for op in self.scenario.workload:
            if op.id not in self.ops_done and self.backend.client_running(op.client):
                return False
        return True

    def _inject_pending(self) -> bool:
        held = self.holds.pending() if self.holds is not None else []
        return any(k[0] in ("inject", "op") for k in self.engine.pending() + held) \
            or not self.firings.empty()

    def _settled_out_of_reach(self) -> bool:
        """True when no pending fault or operation can fire any more: the workload is over,
        each waits for a protocol event that only a workload brings about (not a timer's:
        TIMER_EVENTS), no lasting fault is in effect and none is due to heal, and the
        cluster is quiescent on two polls in a row. A run then ends at once as `unreached` instead
        of waiting out the scenario's timeout."""
        now = time.time()
        if now < self._settle_next_poll:
            return False
        self._settle_next_poll = now + self.system.settle_poll_seconds
        pending = self.engine.pending() + (self.holds.pending() if self.holds else [])
        triggers = self._pending_triggers(pending)
        lasting = [fid for fid, f in self.active.items() if getattr(f, "active", True)
                   and self.scenario.fault(fid).lasting]
        # the heal of a fault not injected yet comes after it (`duration`) or undoes
        # nothing: only an injected fault's pending heal may change the cluster again
        heals = [k for k in pending if k[0] == "heal" and (k[1] in self.fired
                                                           or k[1] in self.active)]
        if triggers is None or lasting or heals or not self.firings.empty():
            self._settle_polls = 0
            return False
        try:
            quiet = self.system.not_quiet(self._context()) is None
        except (OSError, EOFError, HdfsError, RuntimeError):
            quiet = False
        self._settle_polls = self._settle_polls + 1 if quiet else 0
        return self._settle_polls >= 2

    def _pending_triggers(self, pending: list) -> list | None:
        """The triggers of the pending faults and operations, or None when one of them may
        still fire by itself (a time, a delay after a fault, a timer's event)."""
        triggers = []
        for key in pending:
            if key[0] == "inject":
                trigger = self.scenario.fault(key[1]).at
            elif key[0] == "op":
                trigger = next(op.at for op in self.scenario.workload if op.id == key[1])
            else:
                continue
            if not isinstance(trigger, OnEvent) or trigger.event in TIMER_EVENTS:
                return None
            triggers.append(trigger)
        return triggers

    def _pending_text(self) -> str:
        held = self.holds.pending() if self.holds is not None else []
        waiting = [f"{k[0]} {k[1]}" for k in self.engine.pending() + held
                   if k[0] in ("inject", "op")]
        ops = [op.id for op in self.scenario.workload if op.id not in self.ops_done]
        return ", ".join(waiting + [f"op {o} unfinished" for o in ops]) or "nothing"

    def _status_line(self) -> str:
        elapsed = time.time() - self.start_ts
        return (f"{self.phase} {elapsed:5.1f}s | faults fired {len(self.fired)}/"
                f"{len(self.scenario.faults)} | written {self.bytes_written / 1048576:.1f} MiB "
                f"| ops done {len(self.ops_done)}/{len(self.scenario.workload)}")

    def _inject_at_start(self, limit: float = 10.0) -> None:
        """Injects the faults due at 0s before any client starts. A client started first
        races them: a short write can finish before a toxic `at: 0s` is in place. A fault
        on a client process (kill, pause, crash_client) waits for its client."""
        clients = self.scenario.client_ids
        keys = {("inject", f.id) for f in self.scenario.faults
                if f.at == AtTime(0.0) and getattr(f, "target", None) not in clients}
        deadline = time.time() + limit
        while time.time() < deadline and (keys & set(self.engine.pending())
                                          or not self.firings.empty()):
            self._handle_firings(timeout=0.05)

    def _on_fire(self, key, firing) -> None:
        # runs on the engine thread: hand over, act in the runner's thread
        self.firings.put((key, firing))

    def _handle_firings(self, timeout: float) -> None:
        try:
            key, firing = self.firings.get(timeout=timeout)
        except queue.Empty:
            return
        try:
            self._act_on(key, firing)
        finally:
            done = getattr(firing, "done", None)
            if done is not None:   # an exact trigger's process waits for this
                done.set()

    def _act_on(self, key, firing) -> None:
        kind, ident = key
        fields = firing.log_fields() if hasattr(firing, "log_fields") else {}
        fields["fault"] = ident
        self.log.emit("harness.trigger", action=kind, **fields)
        if kind == "op":
            self.backend.open_gate(ident)
            client = self.scenario.operation(ident).client
            self.log.emit("harness.workload.start", op_id=ident, client=client)
        elif kind == "inject":
            self._inject(ident)
        elif kind == "heal":
            fault = self.active.get(ident)
            if fault is not None:
                self._safely(fault.heal, ident)

    def _inject(self, fault_id: str) -> None:
        spec, resolved = self._resolve_positions(self.scenario.fault(fault_id))
        try:
            # the kind (faults.kinds.KINDS) builds and starts its effect on this run
            fault = spec.inject(self._fault_context(), resolved)
        except (FaultError, BackendError, HdfsError, OSError, ValueError) as e:
            self.errors.append(f"fault {fault_id}: {e}")
            self.log.emit("harness.fault.error", fault=fault_id, kind=spec.kind,
                          error=type(e).__name__, reason=str(e))
            return
        if fault is None:   # a heal, or a resume that ended pauses: it holds nothing
            self.fired.append(fault_id)
            self.engine.notify_fired(fault_id)
            return
        self.active[fault_id] = fault
        self.fired.append(fault_id)
        self.engine.notify_fired(fault_id)
        where = f": {', '.join(resolved)}" if resolved else ""
        self._progress(f"fault {fault_id} ({spec.kind}) injected{where}")

    def _fault_context(self) -> FaultContext:
        """What fault kinds act through on this run (faults.kinds.FaultContext)."""
        return FaultContext(log=self.log, mesh=self.backend.mesh, control=self.backend.control,
                            backend=self.backend, seed=self.seed, block_of=self._block_of,
                            active=self.active,
                            heal_active=lambda fid, by: self._safely(self.active[fid].heal, by))

    def _resolve_positions(self, spec):
        """The fault with its pipeline positions (c1.pipeline[1]) resolved to DataNode ids
        from the live events, and the `c1.pipeline[1]=dn3` texts; a position that cannot be
        resolved stops the run (RunError), never a fault acting on nothing."""
        from harness.pipelines import LivePipelines, PositionError, has_positions, resolve_fault
        if not has_positions(spec):
            return spec, []
        if self.pipelines is None:
            self.pipelines = LivePipelines(self.events_dir)
        self.system.catch_up_events()
        try:
            return resolve_fault(spec, self.pipelines.refresh())
        except PositionError as e:
            self.log.emit("harness.fault.error", fault=spec.id, kind=spec.kind,
                          error=type(e).__name__, reason=str(e))
            raise RunError(f"fault {spec.id}: {e}") from e

    def _safely(self, action, fault_id: str) -> None:
        try:
            action()
        except Exception as e:
            self.errors.append(f"heal {fault_id}: {e}")
            self.log.emit("harness.fault.error", fault=fault_id, kind="heal",
                          error=type(e).__name__, reason=str(e))

    def _context(self):
        """The run as the system under test sees it (None before a backend exists)."""
        return None if self.backend is None else self.backend.context()

    def _block_of(self, path: str, index: int) -> int:
        return self.system.block_of(self._context(), path, index)

    # -- exact injection (harness.exact) ---------------------------------------------------

    def _start_holds(self) -> None:
        """Exact triggers: a hold channel whose env the cluster's processes inherit."""
        exact = [f for f in self.scenario.faults if _is_exact(f.at)]
        if not exact:
            return
        if self.backend_name != "local":
            self._progress(f"exact injection needs the local backend; on {self.backend_name} "
                           f"{len(exact)} exact trigger(s) fire as ordinary event triggers")
            return
        run_fields = self.system.run_fields(self.scenario)
        if not self.system.capabilities(run_fields).exact_injection:   # cannot be held
            self._progress(f"exact injection needs the mini-HDFS or hadoop with "
                           f"cluster.hadoop_agent; on {self.system.name} {len(exact)} exact "
                           f"trigger(s) fire as ordinary event triggers")
            return
        # a system may hold some events only (hadoop: those its agent makes); the others
        # fire as ordinary event triggers
        can_hold = getattr(self.system, "can_hold", None)
        unheld = [f for f in exact if can_hold is not None and not can_hold(f.at)]
        if unheld:
            events = ", ".join(f.at.event for f in unheld)
            self._progress(f"{self.system.name} cannot hold {events}: "
                           f"{len(unheld)} exact trigger(s) fire as ordinary event triggers")
            exact = [f for f in exact if f not in unheld]
            if not exact:
                return
        from harness.exact import HoldServer
        # a system that announces something else than contract records (the Hadoop
        # agent's lines) says how to read them (its hold_hooks)
        hooks = getattr(self.system, "hold_hooks", None)
        extra = hooks(lambda: getattr(self.backend, "cluster", None)) if hooks else {}
        holds = HoldServer(self._fire_exact, on_release=lambda fields: self.log.emit(
            "harness.hold.release", **fields), **extra)
        for fault in exact:
            holds.add(("inject", fault.id), fault.at)
            self.held.add(fault.id)
        self.holds = holds.start()
        self._saved_env = {k: os.environ.get(k) for k in holds.env()}
        os.environ.update(holds.env())   # the local backend's processes inherit it

    def _fire_exact(self, key, firing) -> None:
        """On a hold channel thread: have the runner act, and wait until it did."""
        firing.done = threading.Event()
        self.firings.put((key, firing))
        firing.done.wait(self.holds.timeout - 1.0)

    def _stop_holds(self) -> None:
        if self.holds is None:
            return
        self.holds.stop()
        for k, v in getattr(self, "_saved_env", {}).items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        self._saved_env = {}

    # -- the end of a run --------------------------------------------------------------

    def _heal_everything(self) -> None:
        """Heal every fault still active (latest first), lift every toxic, stop clients."""
        self.phase = "heal"
        if self.engine is not None:
            self.engine.stop()
        self._stop_holds()
        while not self.firings.empty():   # a firing already handed over but not acted on
            _, firing = self.firings.get_nowait()
            if getattr(firing, "done", None) is not None:
                firing.done.set()
        for fault_id in reversed(list(self.active)):
            self._safely(self.active[fault_id].heal, fault_id)
        if self.backend is not None and self.backend.mesh is not None:
            try:
                self.backend.mesh.reset()
            except Exception as e:
                self.errors.append(f"mesh reset: {e}")
        if self.backend is not None:
            for client in self.scenario.client_ids:
                if self.backend.client_running(client):
                    # a client still holding files open stops; its leases expire
                    self.backend.control.stop(client)
                    self.log.emit("harness.node.stop", target=client)

    def _wait_quiescent(self, deadline: float) -> None:
        """Until every file is closed and every COMPLETE block fully replicated, or time's up."""
        self.phase = "quiescence"
        start = time.time()
        limit = max(deadline, start + 5.0)
        why, quiet_polls = "not checked", 0

        def quiet() -> bool:
            nonlocal why, quiet_polls
            try:
                why = self.system.not_quiet(self._context())
                # twice in a row: a command handed out on the last heartbeat is done
                quiet_polls = quiet_polls + 1 if why is None else 0
            except (OSError, EOFError, HdfsError, RuntimeError) as e:
                why, quiet_polls = f"NameNode not answering: {e}", 0
            return quiet_polls >= 2

        reached = tenacity.Retrying(
            # a quiet poll at the deadline still gets its confirming poll
            stop=lambda _: time.time() >= limit and quiet_polls == 0,
            wait=tenacity.wait_fixed(QUIESCENCE_POLL_S),
            retry=tenacity.retry_if_result(lambda ok: not ok),
            before_sleep=lambda _: self._progress(
                f"waiting for quiescence: {why or 'quiet once, checking again'}", transient=True),
            retry_error_callback=lambda state: state.outcome.result())(quiet)
        self.log.emit("harness.quiescent", waited=round(time.time() - start, 3), reached=reached,
                      reason=why)
        if not reached:
            self.errors.append(f"no quiescence: {why}")

    def _write_final_state(self) -> None:
        self.phase = "final state"
        doc = self.system.final_state(self._context())
        with open(os.path.join(self.run_dir, "final_state.json"), "w") as f:
            json.dump(doc, f, indent=1)

    def _teardown(self) -> None:
        self.phase = "stop"
        if self.pipelines is not None:
            self.pipelines.close()
        try:
            if self.engine is not None:
                self.engine.stop()
            self._stop_holds()
            for fault_id in reversed(list(self.active)):
                self._safely(self.active[fault_id].heal, fault_id)
        finally:
            if self.backend is not None:
                self._progress("stopping the cluster")
                self.backend.stop()

    def outcome(self) -> "RunOutcome":
        return RunOutcome(self.scenario.name, self.run_id, self.run_dir, self.status,
                          list(self.errors))


class RunOutcome:
    """What a run left for the verifier: its folder, and how the run itself went."""

    def __init__(self, scenario: str, run_id: str, run_dir: str, status: str, errors: list):
        self.scenario, self.run_id, self.run_dir = scenario, run_id, run_dir
        self.status, self.errors = status, errors

    def verdict_without_checks(self, error: str) -> Verdict:
        return Verdict(scenario=self.scenario, run_id=self.run_id, passed=False, checks=[],
                       expect=[], metrics={}, error=error, run_dir=self.run_dir)

    def finish(self, verdict: Verdict) -> Verdict:
        """Add how the run went to its verdict, and write verdict.json."""
        if self.status != "completed" or self.errors:
            verdict.run_status = self.status
            verdict.run_errors = self.errors
            if self.status in ("error", "interrupted"):
                verdict.passed = False
        verdict.run_dir = self.run_dir
        with open(os.path.join(self.run_dir, VERDICT_FILE), "w") as f:
            json.dump(verdict.to_json(), f, indent=1)
        return verdict


def verify_outcomes(outcomes: list[RunOutcome], progress: Progress | None = None
                    ) -> list[Verdict]:
    """Verify runs in one Spark batch (far cheaper than one batch a run), then build each
    run's report; returns the verdicts in the order of `outcomes`."""
    say = progress or (lambda msg: None)
    pending = [o for o in outcomes if o.status != "interrupted"]
    verdicts: dict[str, Verdict] = {}
    for o in outcomes:
        if o.status == "interrupted":   # nothing to verify: say so, quickly
            verdicts[o.run_id] = o.verdict_without_checks("the run was interrupted")
    if pending:
        try:
            from harness.reconcile.api import build_run_report, verify_runs
        except ImportError as e:
            for o in pending:
                verdicts[o.run_id] = o.verdict_without_checks(f"the verifier is not available: {e}")
        else:
            say(f"verifying {len(pending)} run{'s' if len(pending) > 1 else ''} with Spark")
            try:
                for o, v in zip(pending, verify_runs([o.run_dir for o in pending])):
                    verdicts[o.run_id] = v
            except Exception as e:   # the verifier broke: every run says so, none passes
                for o in pending:
                    verdicts[o.run_id] = o.verdict_without_checks(
                        f"the verifier failed: {type(e).__name__}: {e}")
            for o in pending:
                try:
                    build_run_report(o.run_dir)
                except Exception as e:   # a report is a convenience; the verdict stands
                    verdicts[o.run_id].add_warning(f"report: {e}")
    return [o.finish(verdicts[o.run_id]) for o in outcomes]


def _is_exact(trigger) -> bool:
    return getattr(trigger, "exact", False) is True


def _install_signal_handlers():
    """SIGTERM (and SIGINT) end the run through the normal teardown."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def handler(signum, frame):
        raise Interrupted(signal.Signals(signum).name)
    return {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}


def _restore_signal_handlers(previous) -> None:
    for sig, old in (previous or {}).items():
        signal.signal(sig, old)


def backend_issues(scenario: Scenario, backend: str) -> list[str]:
    """Why `scenario` cannot run on `backend` (its backends: leaves it out), or nothing."""
    refusal = scenario.backend_refusal(backend)
    return [f"scenario {scenario.name} {refusal}"] if refusal else []


def run_unverified(scenario: Scenario | str, backend: str = "local", results_dir: str = "results",
                   seed: int | None = None, keep: bool = False,
                   progress: Progress | None = None, system: str | None = None,
                   hadoop_version: str | None = None) -> RunOutcome:
    """Run one scenario (a Scenario or a YAML path) without verifying it: the RunOutcome to
    verify later with others in one Spark batch (verify_outcomes).
    `system`/`hadoop_version` override the scenario's cluster.system/hadoop_version."""
    if isinstance(scenario, str):
        scenario = load_scenario(scenario)
    sut = system_of(scenario, system, hadoop_version)
    return Run(scenario, backend, results_dir, seed, keep, progress, sut).execute()


def run_scenario(scenario: Scenario | str, backend: str = "local", results_dir: str = "results",
                 seed: int | None = None, keep: bool = False,
                 progress: Progress | None = None, system: str | None = None,
                 hadoop_version: str | None = None) -> Verdict:
    """Run one scenario (a Scenario or a YAML path) and verify it; returns its verdict
    (written to verdict.json). run_unverified runs without verifying."""
    outcome = run_unverified(scenario, backend, results_dir, seed, keep, progress,
                             system=system, hadoop_version=hadoop_version)
    return verify_outcomes([outcome], progress)[0]


def run_scenarios(files: list[str], backend: str = "local", results_dir: str = "results",
                  seed: int | None = None, keep: bool = False,
                  progress: Progress | None = None, system: str | None = None,
                  hadoop_version: str | None = None) -> list[Verdict]:
    """Validate every file first (nothing runs if one is invalid), run them in turn, then
    verify them all in one Spark batch, printing one result line per scenario."""
    from harness.scenario import validate_files
    scenarios, issues = validate_files(files)
    if issues:
        raise ScenarioError(issues)
    outcomes = []
    interrupted = False
    for path in files:
        outcome = run_unverified(scenarios[path], backend, results_dir, seed, keep, progress,
                                 system=system, hadoop_version=hadoop_version)
        outcomes.append(outcome)
        if progress:
            progress(f"{outcome.scenario}: run {outcome.status} "
                     f"({os.path.relpath(outcome.run_dir)})")
        if outcome.status == "interrupted":
            interrupted = True   # cleaned up already; the remaining scenarios do not run
            break
    verdicts = verify_outcomes(outcomes, progress)
    for verdict in verdicts:
        print(result_line(verdict), flush=True)
    if interrupted:
        raise KeyboardInterrupt
    return verdicts


class _LinesOnly:
    """Progress of a run in a worker process: its lasting lines (each starts with the
    scenario's name); status lines redrawn in place would garble with other runs'."""

    def __call__(self, message: str) -> None:
        import sys
        print(message, file=sys.stderr, flush=True)

    def transient(self, message: str) -> None:
        pass


def run_file(path: str, backend: str, results_dir: str, seed: int | None, keep: bool,
             quiet: bool, system: str | None, hadoop_version: str | None) -> RunOutcome:
    """One scenario file run in a worker process of run_parallel (verified later)."""
    return run_unverified(path, backend, results_dir, seed, keep,
                          None if quiet else _LinesOnly(), system=system,
                          hadoop_version=hadoop_version)


def _init_run_worker(counter, workers: int) -> None:
    # as an explorer worker: a machine-wide port slice (a flock on a slot file)
    ports.init_worker_ports(counter, workers)
    # a group of its own: a terminal's Ctrl-C reaches the parent alone, which stops each
    # run once (a second SIGINT during a teardown would cut the teardown short)
    os.setpgid(0, 0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # idle; a run installs its own handler


def run_pool(workers: int) -> cf.ProcessPoolExecutor:
    """Worker processes for run_parallel, each drawing its clusters' ports from its own slice."""
    import multiprocessing
    ctx = multiprocessing.get_context("spawn")
    return cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                                  initializer=_init_run_worker,
                                  initargs=(ctx.Value("i", 0), workers))


def _stop_workers(pool) -> None:
    """SIGINT to each worker process: its run heals, stops its cluster, returns."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        try:
            os.kill(process.pid, signal.SIGINT)
        except (ProcessLookupError, AttributeError):
            pass


def run_parallel(files: list[str], workers: int, backend: str = "local",
                 results_dir: str = "results", seed: int | None = None, keep: bool = False,
                 progress: Progress | None = None, system: str | None = None,
                 hadoop_version: str | None = None, fail_fast: bool = False,
                 run=None, verify=None, pool=None) -> tuple[list[Verdict], int]:
    """Run `files` `workers` at a time, each in a worker process with its own ports, then
    verify them in one Spark batch; with `fail_fast` each is verified as it finishes and
    none starts after the first failure (the running ones finish). Prints one result line
    per run in the order of `files`; returns (those verdicts, how many never started).
    Ctrl-C (or SIGTERM) stops every running run, verifies what ran, and raises
    KeyboardInterrupt."""
    from harness.scenario import validate_files
    _, issues = validate_files(files)
    if issues:
        raise ScenarioError(issues)
    say = progress or (lambda msg: None)
    run, verify = run or run_file, verify or verify_outcomes
    pool = pool or run_pool(min(workers, len(files)))
    waiting = list(range(len(files)))
    running: dict[cf.Future, int] = {}
    outcomes: dict[int, RunOutcome] = {}
    verdicts: dict[int, Verdict] = {}
    stop = interrupted = False

    def finished(future: cf.Future) -> None:
        nonlocal stop, interrupted
        index = running.pop(future)
        try:
            outcome = future.result()
        except Exception as e:   # the worker broke (not the run): this run fails, not the rest
            outcome = RunOutcome(os.path.basename(files[index]), "", "", "error",
                                 [f"{type(e).__name__}: {e}"])
        outcomes[index] = outcome
        say(f"{outcome.scenario}: run {outcome.status} ({os.path.relpath(outcome.run_dir or '.')})")
        if outcome.status == "interrupted":
            stop = interrupted = True
        elif fail_fast and outcome.run_dir:
            verdicts[index] = verify([outcome], progress)[0]
            stop = stop or not verdicts[index].passed
        elif fail_fast:
            stop = True

    def terminated(signum, frame):
        raise KeyboardInterrupt
    # SIGTERM stops the runs as Ctrl-C does (a sequential run's own handler does the same)
    previous = (signal.signal(signal.SIGTERM, terminated)
                if threading.current_thread() is threading.main_thread() else None)
    try:
        while running or (waiting and not stop):
            while waiting and not stop and len(running) < workers:
                index = waiting.pop(0)
                running[pool.submit(run, files[index], backend, results_dir, seed, keep,
                                    progress is None, system, hadoop_version)] = index
            done, _ = cf.wait(list(running), return_when=cf.FIRST_COMPLETED)
            for future in sorted(done, key=running.get):
                finished(future)
    except KeyboardInterrupt:
        interrupted = True
        _stop_workers(pool)
        for future in list(running):
            finished(future)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    late = [i for i in sorted(outcomes) if i not in verdicts and outcomes[i].run_dir]
    if late:
        verdicts.update(zip(late, verify([outcomes[i] for i in late], progress)))
    for i in sorted(outcomes):
        if i not in verdicts:   # no folder: the worker broke before the run began
            verdicts[i] = Verdict(scenario=outcomes[i].scenario, passed=False,
                                  error="; ".join(outcomes[i].errors))
    ordered = [verdicts[i] for i in sorted(verdicts)]
    for verdict in ordered:
        print(result_line(verdict), flush=True)
    if interrupted:
        raise KeyboardInterrupt
    return ordered, len(files) - len(outcomes)


def result_line(verdict: Verdict) -> str:
    """One line per scenario: PASS/FAIL, name, where the results are, failed checks, and
    each unmet expectation with the events behind it in a few words."""
    mark = "PASS" if verdict.passed else "FAIL"
    from harness.reconcile.evidence import with_brief
    failed = verdict.failed_checks
    bad_expect = [with_brief(e.to_json()) for e in verdict.unmet]
    detail = []
    if failed:
        detail.append("failed checks " + ",".join(failed))
    if bad_expect:
        detail.append("unmet: " + "; ".join(bad_expect))
    if verdict.error:
        detail.append(verdict.error)
    if verdict.run_status and verdict.run_status != "completed":
        detail.append(f"run {verdict.run_status}: " + "; ".join(verdict.run_errors or []))
    line = f"{mark} {verdict.scenario} ({os.path.relpath(verdict.run_dir or '.')})" \
        + (f" — {' | '.join(detail)}" if detail else "")
    return " ".join(line.split())   # one line, whatever the errors held
