"""Cluster backends: where the nodes of a run live (local processes or containers).

A backend starts Toxiproxy and one proxy per directed link, starts the NameNode and the
DataNodes with routing maps through those proxies, starts workload clients, controls
nodes for the faults (`control`: kill, stop, start, pause, resume), and stops and
removes everything it started, on every exit path. What a killed harness left behind
is reaped by `cleanup_all()` (`hdfs-chaos cleanup`); every run first calls
`cleanup(backend)`, which reaps its own backend's leftovers.
"""

from __future__ import annotations

import abc
import os
from typing import Any

from harness.errors import BackendError
from hdfs_contract.events import EventLog


class Backend(abc.ABC):
    name: str = ""

    def __init__(self, scenario: Any, run_id: str, run_dir: str, log: EventLog, seed: int,
                 progress=None):
        self.scenario, self.run_id, self.run_dir = scenario, run_id, run_dir
        self.log, self.seed = log, seed
        self.progress = progress or (lambda msg: None)
        self.mesh = None        # faults.network.LinkMesh, once started
        self.control = None     # faults.process.NodeControl, once started

    @abc.abstractmethod
    def start(self) -> None:
        """Toxiproxy, the link mesh, the NameNode and DataNodes; returns when healthy."""

    @abc.abstractmethod
    def start_client(self, client_id: str, ops: list[dict]) -> None:
        """Start a workload client process running `ops` (gated ops wait for open_gate)."""

    @abc.abstractmethod
    def open_gate(self, op_id: str) -> None:
        """Let the gated workload operation `op_id` start."""

    @abc.abstractmethod
    def client_running(self, client_id: str) -> bool:
        """Whether the client's process still runs."""

    @abc.abstractmethod
    def storage_path(self, datanode: str) -> str:
        """A host path to the DataNode's storage folder (for disk faults and final state)."""

    @abc.abstractmethod
    def host_routes(self) -> dict:
        """A routing map with which the harness reaches every node directly."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop and remove everything this backend started (idempotent)."""

    def context(self):
        """The run as its system under test sees it (harness.systems.RunContext): never
        the backend itself."""
        from harness.systems import RunContext
        return RunContext(scenario=self.scenario, seed=self.seed, run_dir=self.run_dir,
                          work_dir=getattr(self, "work_dir", os.path.join(self.run_dir, "work")),
                          host_routes=self.host_routes, storage_path=self.storage_path,
                          cluster=getattr(self, "cluster", None))

    def disconnect(self, node: str) -> None:
        raise BackendError(f"the {self.name} backend cannot disconnect {node} from a network: "
                           "the disconnect fault needs --backend docker")

    def reconnect(self, node: str) -> None:
        raise BackendError(f"the {self.name} backend cannot reconnect {node}")


def get_backend(name: str) -> type[Backend]:
    if name == "local":
        from .local import LocalBackend
        return LocalBackend
    if name == "docker":
        from .docker import DockerBackend
        return DockerBackend
    raise BackendError(f"unknown backend {name!r}: use local or docker")


def cleanup(backend: str) -> list[str]:
    """What a run of `backend` reaps first: local leftovers always (a scan of a folder),
    a docker run's also the engine's. A local run does not ask the Docker engine (a
    probe at every run where there is none, several requests where there is): nothing
    a docker run leaves behind is in a local run's way (its ports are checked free)."""
    if backend == "docker":
        return cleanup_all()
    from .local import reap_local
    return reap_local()


def cleanup_all() -> list[str]:
    """Remove what killed runs left behind, on every backend; returns what was removed."""
    from .local import reap_local
    removed = reap_local()
    try:
        from .docker import reap_docker
    except ImportError:
        return removed
    try:
        removed += reap_docker()
    except BackendError:
        pass   # no Docker engine here: nothing of ours can be running on it
    return removed
