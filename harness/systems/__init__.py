"""The seam between the harness and the system under test (the mini-HDFS, Apache
Hadoop HDFS): what the runner and the local backend need from a system, and nothing
about how a system does it. A third system (another release line, another
distribution) is one more module implementing `SystemUnderTest`, named in `SYSTEMS`.

What a system provides, for one run (`backend` is the harness's backend object; it
carries the scenario, the seed and the run's folders):
  - `make_cluster(backend)`: its nodes, not started; `listen(cluster)` their real
    addresses by service, from which the backend builds the link mesh with
    `make_mesh(api, cluster, clients)`; `set_routes(cluster, routes_of)` gives every
    node its routes through the mesh; `start(cluster)` / `wait_healthy(cluster)`;
  - the workload: `start_client(backend, client_id, ops)` (the client command),
    `client_running(backend, client_id)`;
  - `start_event_sources(backend)` / `stop_event_sources(backend)`: whatever turns the
    system's output into contract events in the run's events/ folder;
  - node control through the cluster's `kill_node`, `stop_node`, `start_node`,
    `pause_node`, `resume_node` (SIGKILL, SIGTERM, start, SIGSTOP, SIGCONT of the pid);
  - the end of a run: `not_quiet(backend)` (why the cluster is not quiescent, or None),
    `final_state(backend)` (final_state.json), `block_of(backend, path, index)`;
  - `issues(scenario)`: one line per thing of the scenario it cannot run.
"""

from __future__ import annotations

from typing import Any

SYSTEMS = ("minihdfs", "hadoop")


class SystemError_(RuntimeError):
    """A system that cannot run this scenario here (the message names the fix)."""


class SystemUnderTest:
    """The interface; see the module docstring for what each method owes the harness."""

    name = ""
    version: str | None = None
    # seconds between two not_quiet() polls while the runner waits for a pending fault
    # after the workload (Run._settled_out_of_reach): a poll should cost little CPU
    settle_poll_seconds = 0.5

    def issues(self, scenario) -> list[str]:
        return []

    def run_fields(self, scenario) -> dict:
        """Fields of `harness.run.start` that say how this system ran `scenario` (the
        verifier reads them back: harness/reconcile/observable.py)."""
        return {}

    def make_cluster(self, backend) -> Any:
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

    def start_client(self, backend, client_id: str, ops: list[dict]) -> None:
        raise NotImplementedError

    def client_running(self, backend, client_id: str) -> bool:
        proc = backend.cluster.procs.get(client_id)
        return proc is not None and proc.poll() is None

    def start_event_sources(self, backend) -> None:
        pass

    def stop_event_sources(self, backend) -> None:
        pass

    def catch_up_events(self) -> None:
        """Write now every event the system's processes have logged so far (a system whose
        events are adapted from its logs maps what the logs hold), before the harness
        acts on the run's state: which node is c1.pipeline[0] when a fault fires."""

    def storage_path(self, cluster, datanode: str) -> str:
        return cluster.nodes[datanode]["storage"]

    def pids(self, cluster) -> list[int]:
        return [s["pid"] for s in cluster.nodes.values() if s.get("pid")]

    def not_quiet(self, backend) -> str | None:
        raise NotImplementedError

    def final_state(self, backend) -> dict:
        raise NotImplementedError

    def block_of(self, backend, path: str, index: int) -> int:
        raise NotImplementedError


def get_system(name: str = "minihdfs", version: str | None = None) -> SystemUnderTest:
    """The system `name` (`version`: the Hadoop release; None for its default)."""
    if name == "minihdfs":
        from .minihdfs import MiniHdfs
        return MiniHdfs()
    if name == "hadoop":
        from .hadoop import Hadoop
        return Hadoop(version)
    raise SystemError_(f"unknown system {name!r}: use one of {', '.join(SYSTEMS)}")


def system_of(scenario, name: str | None = None, version: str | None = None) -> SystemUnderTest:
    """The system a run of `scenario` uses: the command line's choice, else its YAML's."""
    cluster = scenario.cluster
    return get_system(name or getattr(cluster, "system", "minihdfs") or "minihdfs",
                      version or getattr(cluster, "hadoop_version", None))
