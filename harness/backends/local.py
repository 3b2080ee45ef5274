"""The local backend: every node a process on 127.0.0.1 (the mini-HDFS launcher), and
Toxiproxy a local process with one proxy per directed link.

Every process of a run (nodes, clients, Toxiproxy) is tied to the harness with
hdfs_contract.lifeline: the kernel kills it when the harness dies, SIGKILL included. While a
run is live, its pids are also listed in a state file under the reaper folder; the next
run (or `hdfs-chaos cleanup`) kills anything listed there that is still ours.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile

import tenacity

from faults.toxiproxy_server import ToxiproxyServer
from harness.systems import SystemUnderTest, get_system
from harness.waits import wait_until
from hdfs_contract.errors import ClusterError
from hdfs_contract.procs import pid_alive

from . import Backend, BackendError

REAPER_DIR = os.path.join(tempfile.gettempdir(), f"hdfs-chaos-{os.getuid()}", "live")


class LocalControl:
    """NodeControl over a local cluster of any system: the verbs node faults use."""

    def __init__(self, cluster, on_change):
        self.cluster, self.on_change = cluster, on_change

    def kill(self, node: str) -> None:
        self.cluster.kill_node(node)

    def stop(self, node: str) -> None:
        self.cluster.stop_node(node)

    def start(self, node: str) -> None:
        if self.cluster.nodes[node]["role"] == "client":
            raise ClusterError(f"{node} is a client: a crashed client is not started again")
        self.cluster.start_node(node)
        self.on_change()

    def pause(self, node: str) -> None:
        self.cluster.pause_node(node)

    def resume(self, node: str) -> None:
        pid = self.cluster.nodes[node].get("pid")
        if pid and pid_alive(pid):    # a node that exited meanwhile has nothing to resume
            self.cluster.resume_node(node)


class LocalBackend(Backend):
    name = "local"

    def __init__(self, *args, keep: bool = False, system: SystemUnderTest | None = None, **kw):
        super().__init__(*args, **kw)
        self.work_dir = os.path.join(self.run_dir, "work")
        self.keep = keep
        self.system = system or get_system("minihdfs")
        refusal = self.system.capabilities().backend_refusal(self.system.name, self.name)
        if refusal:
            raise BackendError(refusal)
        self.toxiproxy: ToxiproxyServer | None = None
        self.cluster = None
        self.state_file = os.path.join(REAPER_DIR, f"{self.run_id}.json")

    def start(self) -> None:
        sc = self.scenario
        os.makedirs(os.path.join(self.run_dir, "logs"), exist_ok=True)
        self.progress("starting Toxiproxy")
        try:
            self.toxiproxy = ToxiproxyServer(
                log_path=os.path.join(self.run_dir, "logs", "toxiproxy.log")).start()
        except Exception as e:
            raise BackendError(f"Toxiproxy could not start: {e} (run tools/build_toxiproxy.sh "
                               "or put toxiproxy-server on PATH)") from e
        self._save_state()
        self.cluster = self.system.make_cluster(self.context())
        self.mesh = self.system.make_mesh(self.toxiproxy.api(), self.cluster,
                                          sc.client_ids).create()
        self.system.set_routes(self.cluster, self.mesh.routes)
        self.cluster.tie_to_parent = True   # SIGKILL of the harness takes every node along
        self.control = LocalControl(self.cluster, self._save_state)
        self.progress(f"starting the NameNode and {sc.cluster.datanodes} DataNodes"
                      + ("" if self.system.version is None else f" ({self.system.label})"))
        try:
            self.system.start(self.cluster)
        finally:
            self._save_state()
        self._wait_healthy()
        self.system.start_event_sources(self.context())

    def _wait_healthy(self) -> None:
        retry = tenacity.Retrying(stop=tenacity.stop_after_delay(60),
                                  wait=tenacity.wait_fixed(0.1), reraise=True,
                                  retry=tenacity.retry_if_exception_type(ClusterError))
        for attempt in retry:
            with attempt:
                self.system.wait_healthy(self.cluster, timeout=1.0)

    def start_client(self, client_id: str, ops: list[dict]) -> None:
        self.system.start_client(self.context(), client_id, ops)
        self._save_state()

    def open_gate(self, op_id: str) -> None:
        gates = os.path.join(self.work_dir, "gates")
        os.makedirs(gates, exist_ok=True)
        with open(os.path.join(gates, op_id), "w"):
            pass

    def client_running(self, client_id: str) -> bool:
        return self.system.client_running(self.context(), client_id)

    def storage_path(self, datanode: str) -> str:
        return self.system.storage_path(self.cluster, datanode)

    def host_routes(self) -> dict:
        return self.cluster.direct_routes()

    def stop(self) -> None:
        if self.cluster is not None:
            try:
                self.system.stop_event_sources(self.context())
            except Exception:   # the nodes must still stop
                pass
            nodes = [node for node, spec in list(self.cluster.nodes.items()) if spec.get("pid")]
            stop_all = getattr(self.cluster, "stop_nodes", None)   # side by side, if it can
            try:
                if stop_all is not None:
                    stop_all(nodes, timeout=5.0)
            except (OSError, ClusterError):
                stop_all = None
            for node in nodes if stop_all is None else ():
                try:
                    self.cluster.stop_node(node, timeout=5.0)
                except (OSError, ClusterError):
                    pass
        if self.mesh is not None and self.toxiproxy is None:
            try:   # proxies on a server of ours go with it: no request per proxy
                self.mesh.destroy()
            except Exception:
                pass
        if self.toxiproxy is not None:
            self.toxiproxy.stop()
        remove_empty_logs(os.path.join(self.run_dir, "logs"))
        if not self.keep:
            shutil.rmtree(self.work_dir, ignore_errors=True)
        try:
            os.unlink(self.state_file)
        except FileNotFoundError:
            pass

    def _save_state(self) -> None:
        """Record every pid of this run, so that a later run can reap them if we die."""
        os.makedirs(REAPER_DIR, exist_ok=True)
        pids = []
        if self.cluster is not None:
            pids += [s["pid"] for s in self.cluster.nodes.values() if s.get("pid")]
        if self.toxiproxy is not None and self.toxiproxy.process is not None:
            pids.append(self.toxiproxy.process.pid)
        doc = {"harness_pid": os.getpid(), "run_id": self.run_id, "pids": pids,
               "work_dir": self.work_dir, "keep": self.keep}
        tmp = self.state_file + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f)
        os.replace(tmp, self.state_file)


def _ours(pid: int) -> bool:
    """A pid that is one of our node or Toxiproxy processes (never anything else)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ")
    except OSError:
        return False
    return b"minihdfs.node" in cmd or b"toxiproxy" in cmd or b"hdfs-chaos-node=" in cmd


def reap_local(harness_pid: int | None = None) -> list[str]:
    """Kill the processes of local runs whose harness is gone; remove their state.
    `harness_pid`: only the runs of that harness (one known dead, e.g. a worker)."""
    removed = []
    if not os.path.isdir(REAPER_DIR):
        return removed
    for name in sorted(os.listdir(REAPER_DIR)):
        path = os.path.join(REAPER_DIR, name)
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError):
            continue
        if harness_pid is not None:
            if doc.get("harness_pid") != harness_pid:
                continue
        elif doc.get("harness_pid") != os.getpid() and pid_alive(doc.get("harness_pid", 0)):
            continue   # a run in progress in another harness
        for pid in doc.get("pids", []):
            if _ours(pid):
                try:
                    os.kill(pid, signal.SIGCONT)
                    os.kill(pid, signal.SIGKILL)
                    removed.append(f"process {pid} of run {doc.get('run_id')}")
                except ProcessLookupError:
                    pass
        wait_until(lambda: not any(_ours(p) and pid_alive(p) for p in doc.get("pids", [])),
                   5, 0.05)
        if not doc.get("keep") and doc.get("work_dir"):
            shutil.rmtree(doc["work_dir"], ignore_errors=True)
        os.unlink(path)
    return removed


def remove_empty_logs(folder: str) -> None:
    """Remove the output files of processes that printed nothing: each process writes to
    logs/<node>.out from its start (it may print at any time), and an empty file in the
    results only looks like a log that lost its content."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        path = os.path.join(folder, name)
        try:
            if os.path.isfile(path) and os.path.getsize(path) == 0:
                os.unlink(path)
        except OSError:
            pass
