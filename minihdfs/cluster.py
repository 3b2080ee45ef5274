"""A local mini-HDFS cluster: one NameNode and N DataNodes as separate processes on
127.0.0.1, each with its own ports, storage folder, event log and routing map.

Python API (the harness's local backend uses it) and command line:
    python -m minihdfs.cluster up --datanodes 3 --dir DIR [--config KEY=VALUE ...]
    python -m minihdfs.cluster down --dir DIR
    python -m minihdfs.cluster restart|kill|stop|start|pause|resume NODE --dir DIR
    python -m minihdfs.cluster status --dir DIR
`up` writes DIR/cluster.json and returns once the cluster is healthy; the nodes keep
running after it returns (their pids are in cluster.json).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import Callable

from hdfs_contract import lifeline
from hdfs_contract.config import Config, ConfigError
from hdfs_contract.ports import free_port
from hdfs_contract.errors import ClusterError
from hdfs_contract.procs import pid_alive, stop_process

from .routing import Routes
from .rpc import RpcClient

PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# where node processes keep the bytecode of what they import (PYTHONPYCACHEPREFIX): a
# folder of ours, never the source tree
BYTECODE_DIR = os.path.join(tempfile.gettempdir(), f"hdfs-chaos-{os.getuid()}", "pycache")


def node_env() -> dict:
    """The environment of a node process: the mini-HDFS from PACKAGE_ROOT first, and its
    bytecode cached under BYTECODE_DIR even where PYTHONDONTWRITEBYTECODE is set (as in
    some shells): else every node process of every run compiles the whole mini-HDFS
    again. A prefix already set is kept."""
    env = dict(os.environ, PYTHONPATH=PACKAGE_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.setdefault("PYTHONPYCACHEPREFIX", BYTECODE_DIR)
    return env


class LocalCluster:
    """Starts, stops and breaks the processes of a local cluster.

    `routes_for(node)` may give each process its own routing map (the harness sends
    every link through Toxiproxy that way); by default every process dials directly."""

    def __init__(self, directory: str, datanodes: int = 3, config: dict | None = None,
                 racks: dict[str, str] | None = None, host: str = "127.0.0.1",
                 routes_for: Callable[[str], dict] | None = None, seed: int | None = None,
                 events_dir: str | None = None, logs_dir: str | None = None):
        self.dir = os.path.abspath(directory)
        self.logs_dir = os.path.abspath(logs_dir or os.path.join(self.dir, "logs"))
        self.events_dir = os.path.abspath(events_dir or os.path.join(self.dir, "events"))
        self.host = host
        self.config_raw = dict(config or {})
        self.conf = Config(self.config_raw)
        self.seed = seed
        self.routes_for = routes_for
        # True: every process dies with this one, even on SIGKILL (hdfs_contract.lifeline);
        # the harness sets it, `cluster up` (nodes outlive the command) does not
        self.tie_to_parent = False
        self.procs: dict[str, subprocess.Popen | None] = {}
        self.nodes: dict[str, dict] = {}
        racks = racks or {}
        self.nodes["nn"] = {"role": "namenode", "rpc": f"{host}:{free_port(host)}"}
        for i in range(1, datanodes + 1):
            dn = f"dn{i}"
            self.nodes[dn] = {"role": "datanode", "rpc": f"{host}:{free_port(host)}",
                              "xfer": f"{host}:{free_port(host)}",
                              "rack": racks.get(dn, "/default-rack")}
        for node, spec in self.nodes.items():
            spec["storage"] = os.path.join(self.dir, "storage", node)
            spec["events"] = os.path.join(self.events_dir, f"{node}.jsonl")
            spec["routes"] = os.path.join(self.dir, "routes", f"{node}.json")
            spec["stdout"] = os.path.join(self.logs_dir, f"{node}.out")

    # -- addresses ---------------------------------------------------------------------

    def direct_routes(self) -> dict:
        """Every node's real listen addresses: the map of a process that bypasses proxies."""
        return {node: {svc: spec[svc] for svc in ("rpc", "xfer") if svc in spec}
                for node, spec in self.nodes.items() if spec["role"] != "client"}

    def datanodes(self) -> list[str]:
        return [n for n, s in self.nodes.items() if s["role"] == "datanode"]

    # -- life cycle --------------------------------------------------------------------

    def start(self, timeout: float = 60.0, wait: bool = True) -> "LocalCluster":
        os.makedirs(self.events_dir, exist_ok=True)
        os.makedirs(self.logs_dir, exist_ok=True)
        for sub in ("routes", "storage"):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        with open(os.path.join(self.dir, "config.json"), "w") as f:
            json.dump(self.config_raw, f, indent=1)
        for node in self.nodes:
            self.write_routes(node)
        self.start_node("nn")
        # the DataNodes start side by side: each waits for its port only once all run
        for dn in self.datanodes():
            self.start_node(dn, wait=False)
        for dn in self.datanodes():
            spec = self.nodes[dn]
            _wait_port(spec["rpc"], self.procs[dn], dn, spec["stdout"])
        self.save()
        if wait:
            self.wait_healthy(timeout)
        return self

    def write_routes(self, node: str) -> None:
        routes = self.routes_for(node) if self.routes_for else self.direct_routes()
        with open(self.nodes[node]["routes"], "w") as f:
            json.dump(routes, f, indent=1)

    def command(self, node: str) -> list[str]:
        spec = self.nodes[node]
        cmd = [sys.executable, "-m", "minihdfs.node", spec["role"], "--id", node,
               "--routes", spec["routes"], "--config", os.path.join(self.dir, "config.json"),
               "--events", spec["events"], "--storage", spec["storage"], "--rpc", spec["rpc"]]
        if spec["role"] == "datanode":
            cmd += ["--xfer", spec["xfer"], "--rack", spec["rack"]]
        elif self.seed is not None:
            cmd += ["--seed", str(self.seed)]
        return cmd

    def start_node(self, node: str, wait: bool = True) -> None:
        """Start a node's process; `wait`: until it listens on its RPC port."""
        spec = self.nodes[node]
        os.makedirs(spec["storage"], exist_ok=True)
        out = open(spec["stdout"], "ab")
        env = node_env()
        proc = self._popen(self.command(node), stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, start_new_session=True,
                                cwd=self.dir)
        out.close()
        self.procs[node] = proc
        spec["pid"] = proc.pid
        self.save()
        if wait:
            _wait_port(spec["rpc"], proc, node, spec["stdout"])

    def start_client(self, client_id: str, ops: list[dict], seed: int = 0,
                     config: dict | None = None, gate_dir: str | None = None) -> subprocess.Popen:
        """Start a workload client process (python -m minihdfs.node client) running `ops`."""
        spec = self.nodes.setdefault(client_id, {"role": "client"})
        spec.update(events=os.path.join(self.events_dir, f"{client_id}.jsonl"),
                    routes=os.path.join(self.dir, "routes", f"{client_id}.json"),
                    stdout=os.path.join(self.logs_dir, f"{client_id}.out"),
                    workload=os.path.join(self.dir, "workload", f"{client_id}.json"),
                    config=os.path.join(self.dir, "config.json"),
                    gate_dir=gate_dir or os.path.join(self.dir, "gates"))
        os.makedirs(os.path.dirname(spec["workload"]), exist_ok=True)
        os.makedirs(spec["gate_dir"], exist_ok=True)
        with open(spec["workload"], "w") as f:
            json.dump(ops, f, indent=1)
        if config:
            spec["config"] = os.path.join(self.dir, f"config-{client_id}.json")
            with open(spec["config"], "w") as f:
                json.dump({**self.config_raw, **config}, f)
        self.write_routes(client_id)
        cmd = [sys.executable, "-m", "minihdfs.node", "client", "--id", client_id,
               "--routes", spec["routes"], "--config", spec["config"], "--events", spec["events"],
               "--workload", spec["workload"], "--seed", str(seed), "--gate-dir", spec["gate_dir"]]
        out = open(spec["stdout"], "ab")
        env = node_env()
        proc = self._popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True, cwd=self.dir)
        out.close()
        self.procs[client_id] = proc
        spec["pid"] = proc.pid
        self.save()
        return proc

    def _popen(self, *args, **kwargs) -> subprocess.Popen:
        if getattr(self, "tie_to_parent", False):
            return lifeline.popen(*args, **kwargs)
        return subprocess.Popen(*args, **kwargs)

    def stop_node(self, node: str, timeout: float = 10.0) -> None:
        """Graceful stop (SIGTERM), SIGKILL if it does not go in time."""
        pid = self.nodes[node].get("pid")
        if pid and pid_alive(pid):
            _resume_quietly(pid)
            os.kill(pid, signal.SIGTERM)
            if not _wait_exit(pid, self.procs.get(node), timeout):
                os.kill(pid, signal.SIGKILL)
                _wait_exit(pid, self.procs.get(node), 5)
        self.nodes[node]["pid"] = None
        self.save()

    def stop_nodes(self, nodes: list[str], timeout: float = 10.0) -> None:
        """Graceful stop of several nodes side by side: every one is told (SIGTERM) before
        any is waited for, then each as stop_node (SIGKILL if it does not go in time)."""
        for node in nodes:
            pid = self.nodes[node].get("pid")
            if pid and pid_alive(pid):
                _resume_quietly(pid)
                try:
                    os.kill(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for node in nodes:
            self.stop_node(node, timeout)

    def kill_node(self, node: str) -> None:
        """SIGKILL: a crash. Storage is kept."""
        pid = self.nodes[node].get("pid")
        if pid and pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
            _wait_exit(pid, self.procs.get(node), 5)
        self.nodes[node]["pid"] = None
        self.save()

    def restart_node(self, node: str, down: float = 0.0) -> None:
        self.stop_node(node)
        if down:
            time.sleep(down)
        self.start_node(node)

    def pause_node(self, node: str) -> None:
        """SIGSTOP, returning once the process is stopped: the signal is asynchronous,
        and a node still running for a moment would process what comes next."""
        stop_process(self._pid(node))

    def resume_node(self, node: str) -> None:
        os.kill(self._pid(node), signal.SIGCONT)

    def _pid(self, node: str) -> int:
        pid = self.nodes.get(node, {}).get("pid")
        if not pid or not pid_alive(pid):
            raise ClusterError(f"{node} is not running")
        return pid

    def down(self) -> None:
        for node in reversed(list(self.nodes)):
            if self.nodes[node].get("pid"):
                self.stop_node(node, timeout=5.0)

    def save(self) -> None:
        os.makedirs(self.dir, exist_ok=True)
        doc = {"dir": self.dir, "host": self.host, "config": self.config_raw, "seed": self.seed,
               "events_dir": self.events_dir, "logs_dir": self.logs_dir,
               "nodes": self.nodes, "routes": self.direct_routes()}
        tmp = os.path.join(self.dir, "cluster.json.tmp")
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, os.path.join(self.dir, "cluster.json"))

    @classmethod
    def load(cls, directory: str) -> "LocalCluster":
        path = os.path.join(directory, "cluster.json")
        try:
            with open(path) as f:
                doc = json.load(f)
        except FileNotFoundError:
            raise ClusterError(f"no cluster at {directory}: {path} does not exist "
                               "(start one with `python -m minihdfs.cluster up --dir DIR`)") from None
        self = cls.__new__(cls)
        self.dir, self.host, self.config_raw = doc["dir"], doc["host"], doc["config"]
        self.events_dir = doc.get("events_dir", os.path.join(self.dir, "events"))
        self.logs_dir = doc.get("logs_dir", os.path.join(self.dir, "logs"))
        self.conf = Config(self.config_raw)
        self.seed, self.nodes, self.procs, self.routes_for = doc.get("seed"), doc["nodes"], {}, None
        return self

    # -- health ------------------------------------------------------------------------

    def nn_client(self) -> RpcClient:
        return RpcClient(self.nodes["nn"]["rpc"], 5.0, 10.0)

    def wait_healthy(self, timeout: float = 60.0, datanodes: int | None = None) -> None:
        """Until the NameNode answers and the DataNodes are registered and live."""
        want = len(self.datanodes()) if datanodes is None else datanodes
        deadline = time.monotonic() + timeout
        nn = self.nn_client()
        last = "NameNode not answering"
        try:
            while time.monotonic() < deadline:
                for node, proc in self.procs.items():
                    if proc is not None and proc.poll() is not None and self.nodes[node].get("pid"):
                        raise ClusterError(f"{node} exited with code {proc.returncode}; see "
                                           f"{self.nodes[node]['stdout']}")
                try:
                    report = nn.call("getDatanodeReport")
                    live = [d for d in report if d["state"] == "live"]
                    if len(live) >= want:
                        return
                    last = f"{len(live)} of {want} DataNodes live"
                except OSError as e:
                    last = f"NameNode not answering: {e}"
                time.sleep(0.1)
        finally:
            nn.close()
        raise ClusterError(f"cluster not healthy after {timeout:.0f}s: {last}")

    def client(self, client_id: str = "shell", events_path: str | None = None):
        from .client import DFSClient
        from hdfs_contract.events import EventLog
        return DFSClient(client_id, Routes(self.direct_routes()), self.conf,
                         EventLog(events_path, client_id, "client"))


def _resume_quietly(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGCONT)
    except ProcessLookupError:
        pass


def _wait_exit(pid: int, proc: subprocess.Popen | None, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None:
            if proc.poll() is not None:
                return True
        elif not pid_alive(pid):
            return True
        time.sleep(0.02)
    return False


def _wait_port(addr: str, proc: subprocess.Popen, node: str, log: str, timeout: float = 30.0) -> None:
    host, port = addr.rsplit(":", 1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            with open(log, "rb") as f:
                tail = f.read()[-600:].decode(errors="replace").strip().splitlines()
            raise ClusterError(f"{node} exited with code {proc.returncode}: "
                               f"{tail[-1] if tail else 'no output'} (see {log})")
        try:
            with socket.create_connection((host, int(port)), timeout=0.5):
                return
        except OSError:
            time.sleep(0.02)
    raise ClusterError(f"{node} did not open {addr} within {timeout:.0f}s (see {log})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m minihdfs.cluster",
                                     description="Run a local mini-HDFS cluster.")
    sub = parser.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="start a cluster and wait until it is healthy")
    up.add_argument("--datanodes", type=int, default=3)
    up.add_argument("--dir", required=True)
    up.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    up.add_argument("--rack", action="append", default=[], metavar="DN=/RACK")
    up.add_argument("--timeout", type=float, default=60.0)
    down = sub.add_parser("down", help="stop every node of the cluster")
    down.add_argument("--dir", required=True)
    status = sub.add_parser("status", help="print the nodes and the DataNode report")
    status.add_argument("--dir", required=True)
    for name in ("restart", "kill", "stop", "start", "pause", "resume"):
        p = sub.add_parser(name, help=f"{name} one node (storage kept)")
        p.add_argument("node")
        p.add_argument("--dir", required=True)
    args = parser.parse_args(argv)
    try:
        if args.cmd == "up":
            if args.datanodes < 1:
                raise ClusterError("--datanodes must be at least 1")
            conf = Config.from_pairs(args.config)
            bad = [r for r in args.rack if "=" not in r or not r.split("=", 1)[1].startswith("/")]
            if bad:
                raise ClusterError(f"--rack {bad[0]!r}: expected DN=/RACK, e.g. --rack dn1=/r1")
            racks = dict(r.split("=", 1) for r in args.rack)
            cluster = LocalCluster(args.dir, args.datanodes, conf.raw, racks)
            try:
                cluster.start(args.timeout)
            except Exception:
                cluster.down()
                raise
            print(json.dumps({"cluster": os.path.join(cluster.dir, "cluster.json"),
                              "nodes": {n: {k: s[k] for k in ("rpc", "xfer", "pid") if k in s}
                                        for n, s in cluster.nodes.items()}}, indent=1))
            return 0
        cluster = LocalCluster.load(args.dir)
        if args.cmd == "down":
            cluster.down()
        elif args.cmd == "status":
            nn = cluster.nn_client()
            try:
                report = nn.call("getDatanodeReport")
            except OSError as e:
                report = f"NameNode not answering: {e}"
            print(json.dumps({"nodes": {n: {"pid": s.get("pid"), "running": bool(s.get("pid")) and pid_alive(s["pid"])}
                                        for n, s in cluster.nodes.items()},
                              "datanodes": report}, indent=1))
        else:
            if args.node not in cluster.nodes:
                raise ClusterError(f"unknown node {args.node!r}; the cluster has "
                                   f"{', '.join(cluster.nodes)}")
            {"restart": cluster.restart_node, "kill": cluster.kill_node,
             "stop": cluster.stop_node, "start": cluster.start_node,
             "pause": cluster.pause_node, "resume": cluster.resume_node}[args.cmd](args.node)
        return 0
    except (ConfigError, ClusterError, ValueError) as e:
        print(f"minihdfs.cluster: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
