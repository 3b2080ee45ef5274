"""The docker backend: every node a container from the cluster image on a private network
made for the run, Toxiproxy in its own container, node faults through the Docker API.

One run owns: a bridge network on a subnet chosen free among the engine's networks and
the host's routes (the host reaches every container at its address, so the harness
needs no published ports); one container per node with a fixed address on it (kept
across stop/start); a named volume per NameNode and DataNode for its storage (kept
across restarts, and on the host at the volume's mount point for disk faults); and the
Toxiproxy container, whose proxies (one per directed link, as on the local backend)
listen on 0.0.0.0 and are dialled at the Toxiproxy container's address. The run's
events folder is bind-mounted into every container at the same path, so events land in
results/<run-id>/events as on the local backend, stamped by the host's clock.

Every container, network and volume carries the project label, the run id, and the
harness that made it (host, pid, process start time). `stop()` removes what the run
made, on every exit path; the run's reaper container (reaper.py) removes it all when
the harness dies, SIGKILL included; `reap_docker()` (through `cleanup_all()`, which
every run calls first) removes whatever a killed harness still left. Nothing without our labels is touched.
"""

from __future__ import annotations

import contextlib
import dataclasses
import ipaddress
import json
import os
import re
import shutil
import socket
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterable, Iterator

import tenacity

from faults.base import Fault, FaultError
from faults.network import LinkMesh
from faults.toxiproxy_server import ToxiproxyAPI, ToxiproxyError
from harness.systems import SystemUnderTest, get_system
from harness.systems.minihdfs import nn_rpc_client
from harness.waits import retrying, wait_until
from hdfs_contract.events import EventLog

from . import Backend, BackendError
from .reaper import start_reaper

PROJECT = "hdfs-chaos"
PROJECT_LABEL = "org.hdfs-chaos.project"
RUN_LABEL = "org.hdfs-chaos.run-id"
HARNESS_LABEL = "org.hdfs-chaos.harness"      # "<hostname>:<pid>:<process start ticks>"
NODE_LABEL = "org.hdfs-chaos.node"
WORK_LABEL = "org.hdfs-chaos.work-dir"

# Run networks are /24s of this pool; a /24 holds the gateway, Toxiproxy, the NameNode,
# up to 89 DataNodes (.11-.99) and up to 154 clients (.100-.253).
SUBNET_POOL = ipaddress.ip_network("10.213.0.0/16")
SUBNET_PREFIX = 24
TOXIPROXY_HOST, NAMENODE_HOST, DATANODE_BASE, CLIENT_BASE = 2, 10, 10, 100
TOXIPROXY_API_PORT = 8474
NAMENODE_PORTS = {"rpc": 8020}
DATANODE_PORTS = {"rpc": 9867, "xfer": 9866}
STORAGE_PATH = "/hdfs/storage"     # where a node's volume is mounted in its container
STOP_TIMEOUT = 10.0                # graceful stop: SIGTERM, then SIGKILL after this

# The runs in progress in this process. The reaper cannot tell them by the harness pid
# (ours, alive): it leaves these alone and reaps any other run of ours that failed to stop.
_LIVE_RUNS: set[str] = set()
_LIVE_LOCK = threading.Lock()


# --- the plan: pure data ---------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class NodePlan:
    """One container of the run: node id, role, fixed address, ports, rack, volume."""

    node: str
    role: str                       # namenode | datanode | client | toxiproxy
    ip: str
    container: str                  # the container's name on the engine
    ports: dict[str, int] = dataclasses.field(default_factory=dict)
    rack: str = "/default-rack"
    volume: str | None = None       # named storage volume (NameNode and DataNodes)

    @property
    def listen(self) -> dict[str, str]:
        """`{service: "ip:port"}`: where the node's services are reached on the network."""
        return {svc: f"{self.ip}:{port}" for svc, port in self.ports.items()}


def free_subnet(used: Iterable[ipaddress.IPv4Network], pool: ipaddress.IPv4Network = SUBNET_POOL,
                prefix: int = SUBNET_PREFIX, start: int = 0) -> ipaddress.IPv4Network:
    """The first /prefix of `pool` (from the `start`-th on, wrapping) that overlaps none
    of `used`; BackendError if every one does."""
    used = [u for u in used if u.version == 4]
    candidates = list(pool.subnets(new_prefix=prefix))
    for i in range(len(candidates)):
        net = candidates[(start + i) % len(candidates)]
        if not any(net.overlaps(u) for u in used):
            return net
    raise BackendError(f"no free /{prefix} left in {pool} for the run's network: remove "
                       "unused Docker networks (`hdfs-chaos cleanup`, `docker network prune`)")


def name_prefix(run_id: str, token: str) -> str:
    """The prefix of every object name of a run: readable, unique, valid for Docker."""
    slug = re.sub(r"[^a-zA-Z0-9_.-]+", "-", run_id).strip("-.")[:48] or "run"
    return f"hdfs-chaos-{slug}-{token}"


def plan_cluster(datanodes: int, clients: Iterable[str], racks: dict[str, str],
                 subnet: ipaddress.IPv4Network, prefix: str) -> dict[str, NodePlan]:
    """Every container of a run, by node id (`toxiproxy` included), with fixed addresses."""
    clients = list(dict.fromkeys(clients))
    if datanodes > CLIENT_BASE - DATANODE_BASE - 1:
        raise BackendError(f"the docker backend runs at most {CLIENT_BASE - DATANODE_BASE - 1} "
                           f"DataNodes, not {datanodes}")
    if len(clients) > 254 - CLIENT_BASE:
        raise BackendError(f"the docker backend runs at most {254 - CLIENT_BASE} clients")
    host = lambda n: str(subnet.network_address + n)  # noqa: E731
    plans = {"toxiproxy": NodePlan("toxiproxy", "toxiproxy", host(TOXIPROXY_HOST),
                                   f"{prefix}-toxiproxy", {"api": TOXIPROXY_API_PORT}),
             "nn": NodePlan("nn", "namenode", host(NAMENODE_HOST), f"{prefix}-nn",
                            dict(NAMENODE_PORTS), volume=f"{prefix}-nn-storage")}
    for i in range(1, datanodes + 1):
        dn = f"dn{i}"
        plans[dn] = NodePlan(dn, "datanode", host(DATANODE_BASE + i), f"{prefix}-{dn}",
                             dict(DATANODE_PORTS), racks.get(dn, "/default-rack"),
                             f"{prefix}-{dn}-storage")
    for j, client in enumerate(clients):
        plans[client] = NodePlan(client, "client", host(CLIENT_BASE + j), f"{prefix}-{client}")
    return plans


def listen_map(plans: dict[str, NodePlan]) -> dict[str, dict[str, str]]:
    """The servers' real addresses (what the harness dials, and the proxies' upstreams)."""
    return {n: p.listen for n, p in plans.items() if p.role in ("namenode", "datanode")}


def node_command(plan: NodePlan, paths: dict[str, str], seed: int) -> list[str]:
    """The entrypoint arguments of a NameNode or DataNode container (it listens on every
    address of the container, so a reconnected container answers at once)."""
    cmd = [plan.role, "--id", plan.node, "--routes", paths["routes"], "--config", paths["config"],
           "--events", paths["events"], "--storage", STORAGE_PATH,
           "--rpc", f"0.0.0.0:{plan.ports['rpc']}"]
    if plan.role == "datanode":
        cmd += ["--xfer", f"0.0.0.0:{plan.ports['xfer']}", "--rack", plan.rack]
    else:
        cmd += ["--seed", str(seed)]
    return cmd


def await_file(path: str, command: list[str]) -> list[str]:
    """`command` (entrypoint arguments) run once `path` exists: a container can start
    before the harness has written its routing map."""
    script = 'while [ ! -e "$0" ]; do sleep 0.02; done; exec /opt/hdfs-chaos/entrypoint.sh "$@"'
    return ["sh", "-c", script, path, *command]


def client_command(plan: NodePlan, paths: dict[str, str], seed: int) -> list[str]:
    """The entrypoint arguments of a workload client container."""
    return ["client", "--id", plan.node, "--routes", paths["routes"], "--config", paths["config"],
            "--events", paths["events"], "--workload", paths["workload"], "--seed", str(seed),
            "--gate-dir", paths["gates"]]


# --- who made what: the harness identity in labels ---------------------------------------

def _start_ticks(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (tells a reused pid apart)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(") ", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] == "Z" else fields[19]


def harness_identity(pid: int | None = None) -> str:
    """`hostname:pid:start-ticks` of a harness process (ours by default)."""
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}:{pid}:{_start_ticks(pid) or 0}"


def run_is_live(labels: dict[str, str]) -> bool:
    """Whether the run that labelled an object may still be using it.

    A run of another host (or with labels we cannot read) counts as live: we cannot see
    its harness, so we never touch its objects. A run of this process is live while it
    is in progress here."""
    host, _, rest = (labels.get(HARNESS_LABEL) or "").partition(":")
    pid, _, ticks = rest.partition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True
    if _start_ticks(int(pid)) != ticks:
        return False   # that harness is gone (its pid may be another process's now)
    if int(pid) == os.getpid():
        with _LIVE_LOCK:
            return labels.get(RUN_LABEL) in _LIVE_RUNS
    return True


# --- the engine -------------------------------------------------------------------------

@contextlib.contextmanager
def api_errors(what: str) -> Iterator[None]:
    """Turns a Docker API error (or a lost connection to the engine) into one line."""
    import docker.errors
    import requests
    try:
        yield
    except (docker.errors.DockerException, requests.RequestException) as e:
        raise BackendError(f"docker: cannot {what}: {_explain(e)}") from None


def _explain(error: BaseException) -> str:
    """The engine's own words for an API error (not the request URL), on one line."""
    explanation = getattr(error, "explanation", None)
    if isinstance(explanation, bytes):
        explanation = explanation.decode(errors="replace")
    return _first_line(explanation) if explanation else _first_line(error)


def _first_line(error: BaseException | str) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0][:300]


def engine(timeout: float = 120.0):
    """A Docker SDK client of the engine (DOCKER_HOST or the local socket), or BackendError."""
    try:
        import docker
    except ImportError:
        raise BackendError("the Docker SDK for Python is missing: pip install 'docker>=7'") from None
    where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    try:
        probe = docker.from_env(timeout=5)   # a short probe: an absent engine fails fast
        try:
            probe.ping()
        finally:
            probe.close()
        return docker.from_env(timeout=timeout)
    except Exception as e:   # the SDK raises several types for "nobody answers"
        raise BackendError(f"no Docker engine answers at {where}: run tools/setup_docker.sh "
                           f"(as root) or start dockerd ({_first_line(e)})") from None


def _used_subnets(client) -> list[ipaddress.IPv4Network]:
    """The subnets of every network of the engine and every route of the host."""
    used = []
    for net in client.networks.list():
        for cfg in (net.attrs.get("IPAM") or {}).get("Config") or []:
            try:
                used.append(ipaddress.ip_network(cfg.get("Subnet", ""), strict=False))
            except ValueError:
                pass
    try:
        with open("/proc/net/route") as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                dest, mask = (int(fields[1], 16), int(fields[7], 16))
                if mask:   # the default route (mask 0) overlaps everything; skip it
                    used.append(ipaddress.ip_network(
                        (socket.inet_ntoa(dest.to_bytes(4, "little")),
                         socket.inet_ntoa(mask.to_bytes(4, "little"))), strict=False))
    except (OSError, ValueError, IndexError):
        pass
    return used


# --- node control through the Docker API -------------------------------------------------

class DockerControl:
    """NodeControl over the run's containers: the verbs node faults use."""

    def __init__(self, backend: "DockerBackend"):
        self.backend = backend

    def kill(self, node: str) -> None:
        """A crash: the container frozen at once, then SIGKILLed; the volume kept.

        Freezing first (docker pause, ~20 ms) makes the crash happen when it is asked
        for: `docker kill` alone takes 0.1-0.3 s, in which a writer goes on writing."""
        import docker.errors
        c = self.backend.container(node)
        with api_errors(f"kill {node}"):
            try:
                c.pause()
            except docker.errors.APIError:
                pass   # not running, or paused already
            try:
                c.kill("SIGKILL")
            except docker.errors.APIError as e:
                if e.status_code != 409:   # 409: it is not running
                    raise
            c.wait(timeout=STOP_TIMEOUT)

    def stop(self, node: str) -> None:
        """Graceful: SIGTERM (tini forwards it to the node), SIGKILL after STOP_TIMEOUT."""
        c = self.backend.container(node)
        with api_errors(f"stop {node}"):
            c.reload()
            if c.status == "paused":   # a frozen process cannot act on SIGTERM
                c.unpause()
            if c.status in ("running", "paused", "restarting"):
                c.stop(timeout=int(STOP_TIMEOUT))

    def start(self, node: str) -> None:
        """Start the node's container again: same volume, same address; no-op if running."""
        plan = self.backend.plans[node]
        if plan.role == "client":
            raise BackendError(f"{node} is a client: a crashed client is not started again")
        c = self.backend.container(node)
        with api_errors(f"start {node}"):
            c.reload()
            if c.status == "paused":
                c.unpause()
                return
            if c.status == "running":
                return
            c.start()
        if node not in self.backend.disconnected:
            self.backend.wait_port(node)

    def pause(self, node: str) -> None:
        """Freeze the container's cgroup (docker pause): sockets open, nothing runs."""
        c = self.backend.container(node)
        with api_errors(f"pause {node}"):
            c.reload()
            if c.status != "paused":
                c.pause()

    def resume(self, node: str) -> None:
        """Thaw a paused container; like SIGCONT, nothing happens to a running one."""
        c = self.backend.container(node)
        with api_errors(f"resume {node}"):
            c.reload()
            if c.status == "paused":
                c.unpause()


class Disconnect(Fault):
    """Detaches a node's container from the run's network: every connection to and from
    it stalls, the harness included, as if its cable were pulled. Heal reconnects it
    with the same address."""

    kind = "disconnect"

    def __init__(self, backend: "DockerBackend", node: str, **kw: Any):
        super().__init__(**kw)
        self.backend, self.node = backend, node

    @property
    def target(self) -> str:
        return self.node

    def _prepare(self) -> None:
        if self.node not in self.backend.plans or self.node == "toxiproxy":
            raise FaultError(f"disconnect: unknown node {self.node!r}")

    def _apply(self) -> None:
        self.backend.disconnect(self.node)
        self.log.emit("harness.node.disconnect", target=self.node)

    def _undo(self) -> None:
        self.backend.reconnect(self.node)
        self.log.emit("harness.node.reconnect", target=self.node)


# --- the backend -------------------------------------------------------------------------

class DockerBackend(Backend):
    """A run's cluster as containers (see the module doc). `image` and `toxiproxy_image`
    name images to use instead of building this tree's; `keep` keeps the work folder
    (routing maps, config, workloads) in the results, never containers or volumes."""

    name = "docker"

    def __init__(self, *args, keep: bool = False, image: str | None = None,
                 toxiproxy_image: str | None = None, system: SystemUnderTest | None = None, **kw):
        super().__init__(*args, **kw)
        # the containers run the cluster image's nodes: only a system that says it runs
        # on docker may be given here
        self.system = system or get_system("minihdfs")
        refusal = self.system.capabilities().backend_refusal(self.system.name, self.name)
        if refusal:
            raise BackendError(refusal)
        self.keep = keep
        self.image, self.toxiproxy_image = image, toxiproxy_image
        self.work_dir = os.path.join(self.run_dir, "work")
        self.events_dir = os.path.join(self.run_dir, "events")
        self.prefix = name_prefix(self.run_id, uuid.uuid4().hex[:6])
        self.identity = harness_identity()
        self.docker = None
        self.network = None
        self.subnet: ipaddress.IPv4Network | None = None
        self.plans: dict[str, NodePlan] = {}
        self.containers: dict[str, Any] = {}
        self.disconnected: set[str] = set()
        self._exited: set[str] = set()
        self._starter: ThreadPoolExecutor | None = None
        self._client_starts: dict[str, Any] = {}   # client -> Future of its container start
        self._stopped = False
        self._lock = threading.RLock()
        self.reaper = None   # removes the run's objects if this harness dies (reaper.py)

    # -- labels and paths
    def labels(self, **extra: str) -> dict[str, str]:
        return {PROJECT_LABEL: PROJECT, RUN_LABEL: self.run_id, HARNESS_LABEL: self.identity,
                **extra}

    def _paths(self, node: str) -> dict[str, str]:
        return {"routes": os.path.join(self.work_dir, "routes", f"{node}.json"),
                "config": os.path.join(self.work_dir, "config.json"),
                "events": os.path.join(self.events_dir, f"{node}.jsonl"),
                "workload": os.path.join(self.work_dir, "workload", f"{node}.json"),
                "gates": os.path.join(self.work_dir, "gates")}

    # -- life cycle
    def start(self) -> None:
        sc = self.scenario
        self.progress("connecting to the Docker engine")
        self.docker = engine()
        with _LIVE_LOCK:
            _LIVE_RUNS.add(self.run_id)
        self._ensure_images()
        # before any object of the run exists: from here on a SIGKILLed harness leaves nothing
        self.reaper = start_reaper(self.docker, self.image, self.labels(),
                                   f"{self.prefix}-reaper", self.progress)
        for sub in ("routes", "workload", "gates"):
            os.makedirs(os.path.join(self.work_dir, sub), exist_ok=True)
        os.makedirs(self.events_dir, exist_ok=True)
        os.makedirs(os.path.join(self.run_dir, "logs"), exist_ok=True)
        with open(os.path.join(self.work_dir, "config.json"), "w") as f:
            json.dump(dict(sc.cluster.config), f, indent=1)
        self._create_network()
        self.plans = plan_cluster(sc.cluster.datanodes, sc.client_ids, dict(sc.cluster.racks),
                                  self.subnet, self.prefix)
        self.control = DockerControl(self)
        toxiproxy = self.plans["toxiproxy"]
        servers = [p for p in self.plans.values() if p.role in ("namenode", "datanode")]
        self.progress(f"network {self.network.name} on {self.subnet}; starting Toxiproxy, "
                      f"the NameNode and {sc.cluster.datanodes} DataNodes")
        # Every container starts at once (the engine takes ~0.5 s per start, most of the
        # time to ready); each server waits inside its container for its routing map,
        # written as soon as the mesh exists.
        with ThreadPoolExecutor(max_workers=len(servers) + 1) as pool:
            started = [pool.submit(self._run, toxiproxy, self.toxiproxy_image, None)]
            started += [pool.submit(self._start_server, p) for p in servers]
            started[0].result()
            api = ToxiproxyAPI(toxiproxy.ip, TOXIPROXY_API_PORT)
            self._wait_toxiproxy(api)
            self.mesh = LinkMesh(api, listen_map(self.plans), sc.client_ids,
                                 proxy_host="0.0.0.0", advertise_host=toxiproxy.ip).create()
            for node in self.mesh.nodes:
                self._write_routes(node)
            for future in started[1:]:
                future.result()
        self._wait_healthy()
        self.system.start_event_sources(self.context())

    def _ensure_images(self) -> None:
        """The cluster and Toxiproxy images: built if missing (skipped when up to date)."""
        from harness import images
        try:
            if self.image is None:
                self.image = images.build_image(self.progress)
        except images.ImageError as e:
            raise BackendError(f"the cluster image cannot be built: {e}") from None
        if self.toxiproxy_image is None:
            try:
                self.toxiproxy_image = images.build_toxiproxy_image(progress=self.progress)
            except images.ImageError as e:
                found = self.docker.images.list(
                    name=images.TOXIPROXY_REPOSITORY,
                    filters={"label": [f"{images.PROJECT_LABEL}={images.PROJECT}"]})
                tagged = sorted((i for i in found if i.tags),
                                key=lambda i: i.attrs.get("Created", ""), reverse=True)
                if not tagged:
                    raise BackendError(f"the Toxiproxy image cannot be built: {e}") from None
                self.toxiproxy_image = tagged[0].tags[0]
                self.progress(f"using {self.toxiproxy_image} ({e})")

    def _create_network(self) -> None:
        import docker.errors
        from docker.types import IPAMConfig, IPAMPool
        used = _used_subnets(self.docker)
        start = int(self.prefix.rsplit("-", 1)[1], 16)   # spread concurrent runs apart
        for _ in range(32):
            subnet = free_subnet(used, start=start)
            gateway = str(subnet.network_address + 1)
            try:
                self.network = self.docker.networks.create(
                    self.prefix, driver="bridge", internal=True,
                    ipam=IPAMConfig(pool_configs=[IPAMPool(subnet=str(subnet), gateway=gateway)]),
                    labels=self.labels(**{WORK_LABEL: self.work_dir}))
                self.subnet = subnet
                return
            except docker.errors.APIError as e:
                if "overlap" not in str(e).lower():
                    raise BackendError(f"docker: cannot create network {self.prefix}: "
                                       f"{_explain(e)}") from None
                used.append(subnet)   # another run took it meanwhile
        raise BackendError("docker: no free subnet for the run's network after 32 tries")

    def _start_server(self, plan: NodePlan) -> None:
        """The storage volume and the container of a NameNode or DataNode."""
        with api_errors(f"create volume {plan.volume}"):
            self.docker.volumes.create(plan.volume, labels=self.labels(**{NODE_LABEL: plan.node}))
        paths = self._paths(plan.node)
        self._run(plan, self.image, await_file(paths["routes"],
                                               node_command(plan, paths, self.seed)))

    def _run(self, plan: NodePlan, image: str, command: list[str] | None) -> None:
        """Create and start one container with its fixed address, mounts and labels."""
        volumes = {self.events_dir: {"bind": self.events_dir, "mode": "rw"},
                   self.work_dir: {"bind": self.work_dir, "mode": "ro"}}
        if plan.volume:
            volumes[plan.volume] = {"bind": STORAGE_PATH, "mode": "rw"}
        if plan.role == "toxiproxy":
            volumes = {}
        net = self.network.name
        with api_errors(f"start container {plan.container}"):
            container = self.docker.containers.create(
                image, command, name=plan.container, hostname=plan.node, detach=True,
                labels=self.labels(**{NODE_LABEL: plan.node}), volumes=volumes, network=net,
                networking_config={net: self.docker.api.create_endpoint_config(
                    ipv4_address=plan.ip, aliases=[plan.node])},
                environment={"LOG_LEVEL": "warn"} if plan.role == "toxiproxy" else None)
            with self._lock:
                self.containers[plan.node] = container
            container.start()

    def _wait_toxiproxy(self, api: ToxiproxyAPI, timeout: float = 20.0) -> None:
        def answers() -> None:
            try:
                api.version(timeout=1.0)
            except ToxiproxyError:
                self._check_running(["toxiproxy"])   # an exited container says why
                raise

        try:
            retrying((ToxiproxyError,), timeout=timeout, interval=0.05)(answers)
        except ToxiproxyError as e:
            raise BackendError(f"the Toxiproxy container answers no API at {api.url} "
                               f"after {timeout:.0f}s: {e}") from None

    def _write_routes(self, node: str) -> None:
        path = self._paths(node)["routes"]
        with open(path + ".tmp", "w") as f:
            json.dump(self.mesh.routes(node), f, indent=1)
        os.replace(path + ".tmp", path)

    def _wait_healthy(self, timeout: float = 60.0) -> None:
        """Until the NameNode answers and every DataNode is registered and live."""
        want = self.scenario.cluster.datanodes
        nn = nn_rpc_client(self.plans["nn"].listen["rpc"], 1.0, 5.0)
        last, checked = "NameNode not answering", 0.0

        def healthy() -> bool:
            nonlocal last, checked
            try:
                live = [d for d in nn.call("getDatanodeReport") if d["state"] == "live"]
                if len(live) >= want:
                    return True
                last = f"{len(live)} of {want} DataNodes live"
            except (OSError, EOFError) as e:
                last = f"NameNode not answering: {e}"
            if time.monotonic() - checked > 1.0:   # a container that died says why
                checked = time.monotonic()
                self._check_running([n for n, p in self.plans.items() if p.role != "client"])
            return False

        try:
            if wait_until(healthy, timeout, 0.05):
                return
        finally:
            nn.close()
        raise BackendError(f"docker cluster not healthy after {timeout:.0f}s: {last}")

    def _check_running(self, nodes: list[str]) -> None:
        for node in nodes:
            c = self.containers.get(node)
            if c is None:
                continue
            with api_errors(f"inspect {node}"):
                c.reload()
            if c.status == "exited":
                tail = c.logs(tail=5).decode(errors="replace").strip().splitlines()
                raise BackendError(f"{node} container exited with code "
                                   f"{c.attrs['State'].get('ExitCode')}: "
                                   f"{tail[-1] if tail else 'no output'}")

    def wait_port(self, node: str, timeout: float = 30.0) -> None:
        """Until the node's rpc port answers from the host; BackendError if it exits first."""
        addr = self.plans[node].listen["rpc"]
        host, port = addr.rsplit(":", 1)
        def opens() -> None:
            try:
                socket.create_connection((host, int(port)), timeout=0.5).close()
            except OSError:
                self._check_running([node])
                raise

        try:
            retrying((OSError,), timeout=timeout, interval=0.05)(opens)
        except OSError:
            raise BackendError(f"{node} did not open {addr} within {timeout:.0f}s") from None

    # -- the Backend verbs
    def container(self, node: str):
        """The node's container (once a client's background start has made it)."""
        pending = self._client_starts.get(node)
        if pending is not None:
            pending.result()
        try:
            return self.containers[node]
        except KeyError:
            raise BackendError(f"no container for node {node!r} in this run "
                               f"(nodes: {', '.join(sorted(self.containers))})") from None

    def start_client(self, client_id: str, ops: list[dict]) -> None:
        """Starts the client's container in the background and returns at once, as a
        local process start does: the runner goes on (time-0 faults such as a paced
        link take effect) while the engine spends ~0.5 s starting the container."""
        if client_id not in self.plans:
            raise BackendError(f"client {client_id!r} is not in the scenario")
        paths = self._paths(client_id)
        with open(paths["workload"], "w") as f:
            json.dump(ops, f, indent=1)
        if not os.path.exists(paths["routes"]):
            self._write_routes(client_id)
        command = client_command(self.plans[client_id], paths, self.seed)
        with self._lock:
            if self._starter is None:
                self._starter = ThreadPoolExecutor(max_workers=4,
                                                   thread_name_prefix="docker-client-start")
            self._client_starts[client_id] = self._starter.submit(
                self._run, self.plans[client_id], self.image, command)

    def open_gate(self, op_id: str) -> None:
        # the gates folder is bind-mounted into every client: the file appears there
        with open(os.path.join(self.work_dir, "gates", op_id), "w"):
            pass

    def client_running(self, client_id: str) -> bool:
        """Whether the client runs (or is still starting); raises if its start failed."""
        if client_id in self._exited:
            return False   # a client is never started again
        pending = self._client_starts.get(client_id)
        if pending is not None and not pending.done():
            return True
        if pending is not None:
            pending.result()   # a failed start raises here, in the runner's thread
        c = self.containers.get(client_id)
        if c is None:
            return False
        with api_errors(f"inspect {client_id}"):
            c.reload()
        if c.status in ("exited", "dead"):
            self._exited.add(client_id)
            return False
        return True

    def storage_path(self, datanode: str) -> str:
        """The host path of the node's storage volume (docker volume inspect: Mountpoint)."""
        plan = self.plans.get(datanode)
        if plan is None or plan.volume is None:
            raise BackendError(f"{datanode} has no storage volume in this run")
        with api_errors(f"inspect volume {plan.volume}"):
            return self.docker.volumes.get(plan.volume).attrs["Mountpoint"]

    def host_routes(self) -> dict:
        return listen_map(self.plans)

    def disconnect_fault(self, node: str, *, log: EventLog | None = None,
                         fault_id: str | None = None) -> Disconnect:
        """The `disconnect` fault on `node` (a partition by the network, not Toxiproxy)."""
        return Disconnect(self, node, log=log, fault_id=fault_id)

    def disconnect(self, node: str) -> None:
        with api_errors(f"disconnect {node}"):
            self.network.disconnect(self.container(node), force=True)
        self.disconnected.add(node)

    def reconnect(self, node: str) -> None:
        plan = self.plans[node]
        with api_errors(f"reconnect {node}"):
            self.network.connect(self.container(node), ipv4_address=plan.ip, aliases=[node])
        self.disconnected.discard(node)

    def stop(self) -> None:
        """Collect every container's output into logs/, then remove the containers, the
        network and the volumes of this run (found by its label, so also what a failed
        start left half made)."""
        with self._lock:
            if self._stopped or self.docker is None:
                self._forget()
                return
            self._stopped = True
        try:
            if self._starter is not None:   # no container may appear after the removal
                self._starter.shutdown(wait=True, cancel_futures=True)
            try:
                self.system.stop_event_sources(self.context())
            except Exception:   # the containers must still go
                pass
            self._collect_logs()
            with api_errors(f"remove the containers, network and volumes of {self.run_id}"):
                remove_run(self.docker, self.run_id, self.identity)
        except BackendError as e:
            # not raised: the run's outcome stands, and the next cleanup reaps the rest
            self.progress(f"{e} (`hdfs-chaos cleanup` removes them)")
        finally:
            if not self.keep:
                shutil.rmtree(self.work_dir, ignore_errors=True)
            if self.reaper is not None:   # finds nothing left, and goes
                self.reaper.release()
            self.docker.close()
            self._forget()

    def _forget(self) -> None:
        with _LIVE_LOCK:
            _LIVE_RUNS.discard(self.run_id)

    def _collect_logs(self) -> None:
        logs = os.path.join(self.run_dir, "logs")
        os.makedirs(logs, exist_ok=True)
        for node, c in list(self.containers.items()):
            name = "toxiproxy.log" if node == "toxiproxy" else f"{node}.out"
            try:
                data = c.logs(stdout=True, stderr=True)
            except Exception:   # a container that never started has no logs; go on
                continue
            if not data:   # a process that printed nothing leaves no empty file
                continue
            with open(os.path.join(logs, name), "wb") as f:
                f.write(data)


def remove_run(client, run_id: str, harness: str) -> list[str]:
    """Removes every container, network and volume labelled with `run_id` and made by
    `harness` (two harnesses may give two runs one id). Containers first: a network or
    volume in use cannot go. Returns what was removed."""
    import docker.errors
    removed = []
    mine = {"label": [f"{PROJECT_LABEL}={PROJECT}", f"{RUN_LABEL}={run_id}",
                      f"{HARNESS_LABEL}={harness}"]}

    def remove_container(c) -> str | None:
        try:
            c.remove(force=True)
        except docker.errors.NotFound:
            return None
        return f"container {((c.attrs.get('Names') or [c.id[:12]])[0]).lstrip('/')}"

    containers = client.containers.list(all=True, sparse=True, filters=mine)
    if containers:   # in parallel: each removal of a running container costs ~0.3 s
        with ThreadPoolExecutor(max_workers=min(8, len(containers))) as pool:
            removed += [r for r in pool.map(remove_container, containers) if r]
    for net in client.networks.list(filters=mine):
        try:
            net.remove()
            removed.append(f"network {net.name}")
        except docker.errors.NotFound:
            pass
    busy = tenacity.Retrying(   # a just-removed container may hold a volume for a moment
        stop=tenacity.stop_after_attempt(20), wait=tenacity.wait_fixed(0.1), reraise=True,
        retry=tenacity.retry_if_exception(lambda e: isinstance(e, docker.errors.APIError)
                                          and not isinstance(e, docker.errors.NotFound)))
    for vol in client.volumes.list(filters=mine):
        try:
            busy(vol.remove, force=True)
            removed.append(f"volume {vol.name}")
        except docker.errors.NotFound:
            pass
    return removed


def _remove_work_dir(path: str | None) -> None:
    """A killed run's work folder (routes, config, workloads): only a folder that looks
    like one (named `work`, holding `routes` and `gates`), never anything else."""
    if path and os.path.basename(path) == "work" and os.path.isdir(os.path.join(path, "routes")) \
            and os.path.isdir(os.path.join(path, "gates")):
        shutil.rmtree(path, ignore_errors=True)


def reap_docker() -> list[str]:
    """Remove the containers, networks and volumes of runs whose harness is gone.

    Only objects with our project label and a run id are considered; those of a run
    whose harness still lives (or lives on another host, where we cannot tell) stay."""
    client = engine(timeout=60)
    try:
        ours = {"label": [f"{PROJECT_LABEL}={PROJECT}", RUN_LABEL, HARNESS_LABEL]}
        found = [c.attrs.get("Labels") or {} for c in
                 client.containers.list(all=True, sparse=True, filters=ours)]
        found += [n.attrs.get("Labels") or {} for n in client.networks.list(filters=ours)]
        found += [v.attrs.get("Labels") or {} for v in client.volumes.list(filters=ours)]
        dead = sorted({(labels[RUN_LABEL], labels[HARNESS_LABEL]) for labels in found
                       if not run_is_live(labels)})
        removed = []
        for run, harness in dead:
            with api_errors(f"remove what run {run} left"):
                removed += [f"{what} of run {run}" for what in remove_run(client, run, harness)]
        for labels in found:
            if (labels[RUN_LABEL], labels[HARNESS_LABEL]) in dead and labels.get(WORK_LABEL):
                _remove_work_dir(labels[WORK_LABEL])
        return removed
    finally:
        client.close()
