"""The seam between the harness and the system under test (the mini-HDFS, Apache
Hadoop HDFS): what the runner and the backends need from a system, and nothing about
how a system does it. A third system (another release line, a Hadoop build from one's
own jars) is one more module `harness/systems/<name>.py` whose `SYSTEM` is a
`SystemUnderTest` class: `get_system(name)` finds it there (or in `register()`).

A system gets a `RunContext` (the scenario, the seed, the run's folders, its cluster
handle, the backend's direct routes and storage paths), never the backend itself, and
declares what it can do in `Capabilities`; the harness asks those, never its name.

What a system provides, for one run:
  - `make_cluster(ctx)`: its nodes, not started; `listen(cluster)` their real
    addresses by service, from which the backend builds the link mesh with
    `make_mesh(api, cluster, clients)`; `set_routes(cluster, routes_of)` gives every
    node its routes through the mesh; `start(cluster)` / `wait_healthy(cluster)`;
  - the workload: `start_client(ctx, client_id, ops)` (the client command),
    `client_running(ctx, client_id)`;
  - `start_event_sources(ctx)` / `stop_event_sources(ctx)`: whatever turns the
    system's output into contract events in the run's events/ folder;
  - node control through the cluster's `kill_node`, `stop_node`, `start_node`,
    `pause_node`, `resume_node` (SIGKILL, SIGTERM, start, SIGSTOP, SIGCONT of the pid);
  - the end of a run: `not_quiet(ctx)` (why the cluster is not quiescent, or None),
    `final_state(ctx)` (final_state.json), `block_of(ctx, path, index)`;
  - `issues(scenario)`: one line per thing of the scenario it cannot run;
    `config_issues(config)`: one line per configuration value it cannot honour;
    `prepare()`: what it builds once before many runs (jars, a client);
  - `capabilities(run_fields)`: see `Capabilities`.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import pkgutil
import re
from typing import Any, Callable, Mapping

DEFAULT_SYSTEM = "minihdfs"        # a scenario's system when it names none


class SystemError_(RuntimeError):
    """A system that cannot run this scenario here (the message names the fix)."""


@dataclasses.dataclass(frozen=True)
class RunContext:
    """What a system may use of one run, built by the backend (`Backend.context()`):
    `cluster` is the handle its own `make_cluster` returned (None before, and on a
    backend that runs the nodes itself, such as docker); `host_routes()` reaches every
    node directly from the harness; `storage_path(dn)` is a host path to a DataNode's
    storage folder."""

    scenario: Any
    seed: int
    run_dir: str
    work_dir: str
    host_routes: Callable[[], dict]
    storage_path: Callable[[str], str]
    cluster: Any = None

    @property
    def events_dir(self) -> str:
        return os.path.join(self.run_dir, "events")

    @property
    def logs_dir(self) -> str:
        return os.path.join(self.run_dir, "logs")


@dataclasses.dataclass(frozen=True)
class Capabilities:
    """What a system can do, for the harness to ask instead of its name.

    exact_injection: its processes wait at their event log for the harness
        (harness/exact.py), so an `exact:` trigger fires before the event's effect;
    backends: the backends it runs on;
    unobservable: check id -> why its events cannot feed that check (the verifier
        reports the check as a skip with this reason);
    refused_config: configuration key -> why it refuses the key whatever its value
        (a value it cannot honour is `SystemUnderTest.config_issues`);
    needs_java: its daemons and clients are JVMs, so a machine that runs it needs java
        (an explorer's Spark executor checks this before a run)."""

    exact_injection: bool = False
    backends: frozenset[str] = frozenset({"local"})
    unobservable: Mapping[str, str] = dataclasses.field(default_factory=dict)
    refused_config: Mapping[str, str] = dataclasses.field(default_factory=dict)
    needs_java: bool = False

    def backend_refusal(self, system: str, backend: str) -> str | None:
        """Why `system` does not run on `backend`, or None."""
        if backend in self.backends:
            return None
        return f"--system {system} needs --backend {' or '.join(sorted(self.backends))}"


class SystemUnderTest:
    """The interface; see the module docstring for what each method owes the harness."""

    name = ""
    # seconds between two not_quiet() polls while the runner waits for a pending fault
    # after the workload (Run._settled_out_of_reach): a poll should cost little CPU
    settle_poll_seconds = 0.5
    # runs the explorer keeps going at once per core when --workers is not given: the
    # mini-HDFS's runs mostly wait (a fault's pause, a lease limit), a JVM's start does not
    runs_per_core = 1

    def __init__(self, version: str | None = None):
        self.version = version

    @property
    def label(self) -> str:
        """The system and its release, as the harness prints them ("hadoop 3.4.2")."""
        return self.name + (f" {self.version}" if self.version else "")

    def capabilities(self, run_fields: Mapping[str, Any] | None = None) -> Capabilities:
        """What this system can do; `run_fields` are the fields `run_fields()` gave a run
        (what is observable may depend on them)."""
        return Capabilities()

    def issues(self, scenario) -> list[str]:
        return []

    def config_issues(self, config: Mapping[str, Any], agent: bool | None = None) -> list[str]:
        """`agent`: the scenario's word on an in-process agent (False: none), for a
        system that can honour some values only through one."""
        return []

    def prepare(self) -> None:
        """Build once what every run needs (raises SystemError_ with the fix)."""

    def run_fields(self, scenario) -> dict:
        """Fields of `harness.run.start` that say how this system ran `scenario` (the
        verifier reads them back: harness/reconcile/observable.py)."""
        return {}

    def make_cluster(self, ctx: RunContext) -> Any:
        raise NotImplementedError

    def listen(self, cluster) -> dict[str, dict[str, str]]:
        raise NotImplementedError

    def make_mesh(self, api, cluster, clients):
        raise NotImplementedError

    def set_routes(self, cluster, routes_of) -> None:
        cluster.routes_for = routes_of

    def start(self, cluster) -> None:
        cluster.start(wait=False)

    def wait_healthy(self, cluster, timeout: float = 60.0) -> None:
        raise NotImplementedError

    def start_client(self, ctx: RunContext, client_id: str, ops: list[dict]) -> None:
        raise NotImplementedError

    def client_running(self, ctx: RunContext, client_id: str) -> bool:
        proc = ctx.cluster.procs.get(client_id)
        return proc is not None and proc.poll() is None

    def start_event_sources(self, ctx: RunContext) -> None:
        pass

    def stop_event_sources(self, ctx: RunContext) -> None:
        pass

    def catch_up_events(self) -> None:
        """Write now every event the system's processes have logged so far (a system whose
        events are adapted from its logs maps what the logs hold), before the harness
        acts on the run's state: which node is c1.pipeline[0] when a fault fires."""

    def storage_path(self, cluster, datanode: str) -> str:
        return cluster.nodes[datanode]["storage"]

    def pids(self, cluster) -> list[int]:
        return [s["pid"] for s in cluster.nodes.values() if s.get("pid")]

    def not_quiet(self, ctx: RunContext) -> str | None:
        raise NotImplementedError

    def final_state(self, ctx: RunContext) -> dict:
        raise NotImplementedError

    def block_of(self, ctx: RunContext, path: str, index: int) -> int:
        raise NotImplementedError


# name -> factory(version) of the systems registered in this process (register());
# the others are found as harness/systems/<name>.py's SYSTEM
_REGISTERED: dict[str, Callable[[str | None], SystemUnderTest]] = {}
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def register(name: str, factory: Callable[[str | None], SystemUnderTest]) -> None:
    """Make `get_system(name, version)` return `factory(version)` (a system defined
    outside harness/systems/, e.g. in a plugin or a test)."""
    _REGISTERED[name] = factory


def unregister(name: str) -> None:
    _REGISTERED.pop(name, None)


def _module_system(name: str):
    """The SYSTEM of harness/systems/<name>, or None if there is no such module (a module
    that exists but fails to import raises: its error is the user's to see)."""
    if not _NAME.match(name or ""):
        return None
    try:
        module = importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{name}":   # the module exists but cannot import
            raise
        return None
    return getattr(module, "SYSTEM", None)


def system_names() -> tuple[str, ...]:
    """Every name `get_system` knows, the one list the scenario model, the CLI and the
    diff choose from: the modules of harness/systems that define SYSTEM (the default,
    minihdfs, first, then by name), then the registered systems in registration order."""
    found = sorted(m.name for m in pkgutil.iter_modules(__path__)
                   if _module_system(m.name) is not None)
    modules = [n for n in found if n == DEFAULT_SYSTEM] + [n for n in found if n != DEFAULT_SYSTEM]
    return tuple(modules + [n for n in _REGISTERED if n not in modules])


def unknown_system(name: str, extra: tuple[str, ...] = ()) -> str:
    """The one-line error for a system name that is not known (`extra`: other words the
    caller accepts, such as `both`)."""
    return f"unknown system {name!r}: use one of {', '.join(system_names() + extra)}"


def get_system(name: str = DEFAULT_SYSTEM, version: str | None = None) -> SystemUnderTest:
    """The system `name` (`version`: its release; None for its default)."""
    if name in _REGISTERED:
        return _REGISTERED[name](version)
    factory = _module_system(name)
    if factory is None:
        raise SystemError_(unknown_system(name))
    return factory(version)


def system_of(scenario, name: str | None = None, version: str | None = None) -> SystemUnderTest:
    """The system a run of `scenario` uses: the command line's choice, else its YAML's."""
    cluster = scenario.cluster
    return get_system(name or getattr(cluster, "system", None) or DEFAULT_SYSTEM,
                      version or getattr(cluster, "hadoop_version", None))
