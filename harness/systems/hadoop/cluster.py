"""A local Apache Hadoop HDFS cluster: one NameNode and N DataNodes, each its own JVM
on loopback, each with its own configuration folder, hosts file, storage and log.

Owns the daemons' life cycle (format once, start, SIGKILL, SIGTERM, SIGSTOP/SIGCONT of
the JVM itself: the JVM is exec'd directly, never through a shell wrapper, so a kill
lands on the process that holds the sockets), their configuration (conf.py renders the
scenario's keys) and readiness (NumLiveDataNodes from the NameNode's JMX servlet).

Routing: node Y is known to every JVM by the host name `Y.hdfs` (`dfs.datanode.hostname`,
fs.defaultFS `hdfs://nn.hdfs:PORT`, `dfs.*.use.datanode.hostname`); each JVM resolves
names through its own hosts file (`-Djdk.net.hosts.file`), written from its routing map:
in the map of source X, peer Y's services are the addresses of the proxies of link
X -> Y (mesh.py puts them on one address per link, 127.1.x.y, at Y's real ports), so
the same name leads each source through its own proxy. Daemons bind 127.0.0.1 only,
which leaves 127.1.x.y free for the proxies.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from typing import Callable

from hdfs_contract import lifeline
from hdfs_contract.ports import free_port
from hdfs_contract.errors import ClusterError
from hdfs_contract.procs import pid_alive, stop_process

from harness.waits import wait_until

from . import conf, fetch

NN_CLASS = "org.apache.hadoop.hdfs.server.namenode.NameNode"
# dfsadmin: a graceful DataNode stop goes through -shutdownDatanode ... upgrade
ADMIN_CLASS = "org.apache.hadoop.hdfs.tools.DFSAdmin"
DN_CLASS = "org.apache.hadoop.hdfs.server.datanode.DataNode"
DOMAIN = "hdfs"
AGENT_OUT_PROPERTY = "hdfs-chaos.agent.out"     # agent.OUT_PROPERTY: where a JVM's rules write
START_TIMINGS = "hadoop-start.json"             # in logs/: the format's and the JVMs' seconds

# Measured by benchmarks/bench_hadoop_start.py on 2 cores: C1 only (no C2 compiles of
# start-up code nobody runs twice) and the serial collector (no GC threads to compete
# for the two cores) shorten start-up; small heaps keep 5 JVMs within memory.
JVM_FLAGS = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xms64m", "-Xmx384m",
             "-XX:-UsePerfData", "-Djava.net.preferIPv4Stack=true"]

Routes = dict[str, dict[str, str]]


def host_name(node: str) -> str:
    return f"{node}.{DOMAIN}"


class HadoopCluster:
    """The NameNode `nn` and DataNodes `dn1..dnN` of one run, under `directory`."""

    def __init__(self, directory: str, version: str = fetch.DEFAULT_VERSION,
                 datanodes: int = 3, config: dict | None = None, *,
                 logs_dir: str | None = None, debug_loggers: list[str] | tuple = (),
                 jvm_flags: list[str] | None = None, java: str = "java",
                 role_flags: dict[str, list[str]] | None = None, agent: bool = False,
                 hold_rules: frozenset[str] = frozenset()):
        self.dir = os.path.abspath(directory)
        self.version = version
        self.scenario_config = dict(config or {})
        self.props = {**conf.BASE, **conf.hadoop_keys(self.scenario_config, version)}
        self.logs_dir = os.path.abspath(logs_dir or os.path.join(self.dir, "logs"))
        # each JVM's java.io.tmpdir: Jetty unpacks the web apps there, which would
        # otherwise leave a /tmp/jetty-* folder behind every daemon of every run
        self.tmp_dir = os.path.join(self.dir, "tmp")
        self.debug_loggers = list(debug_loggers)
        self.jvm_flags = list(JVM_FLAGS if jvm_flags is None else jvm_flags)
        self.role_flags = dict(role_flags or {})   # e.g. a CDS archive per daemon kind
        self.java = java
        # the Byteman agent (agent.py) in every daemon and workload client JVM, off by
        # default; its script is generated from the release's rule table; the rules in
        # `hold_rules` (exact injection) call the hold helper, put on the JVMs' classpath
        self.agent_flag: str | None = None
        self.agent_boot: str | None = None
        self.hold_dir: str | None = None
        if agent:
            from . import agent as agent_rules
            jar = fetch.require_agent_jar()
            os.makedirs(os.path.join(self.dir, "conf"), exist_ok=True)
            if hold_rules:
                try:
                    self.hold_dir = agent_rules.hold_helper_dir(str(jar))
                except fetch.FetchError as e:
                    raise ClusterError(str(e)) from None
            btm = agent_rules.write_script(version, os.path.join(self.dir, "conf", "agent.btm"),
                                           hold_rules if self.hold_dir else frozenset(),
                                           conf.agent_lease_periods(self.scenario_config, version))
            self.agent_flag = agent_rules.javaagent_flag(str(jar), btm)
            self.agent_boot = agent_rules.boot_flag(str(jar))
        self.routes_for: Callable[[str], Routes] | None = None
        self.procs: dict[str, subprocess.Popen] = {}
        self.tie_to_parent = False
        self.upgrade_stops = True     # stop_node of a DataNode: shut down for upgrade first
        self.nodes: dict[str, dict] = {}
        self._add_node("nn", "namenode", rpc=free_port(), http=free_port())
        for j in range(1, datanodes + 1):
            self._add_node(f"dn{j}", "datanode", xfer=free_port(), ipc=free_port(),
                           http=free_port())

    # -- layout ------------------------------------------------------------------------

    def _add_node(self, node: str, role: str, **ports: int) -> dict:
        spec = {"role": role, "pid": None, "conf": os.path.join(self.dir, "conf", node),
                "hosts": os.path.join(self.dir, "hosts", node),
                "storage": os.path.join(self.dir, "storage", node),
                "log": os.path.join(self.logs_dir, f"{node}.log"),
                "stdout": os.path.join(self.logs_dir, f"{node}.out"),
                "agent_out": os.path.join(self.logs_dir, f"{node}.agent")}
        spec.update({svc: f"127.0.0.1:{port}" for svc, port in ports.items()})
        self.nodes[node] = spec
        return spec

    def datanodes(self) -> list[str]:
        return [n for n, s in self.nodes.items() if s["role"] == "datanode"]

    def listen(self) -> Routes:
        """Each server's real addresses, by service: the mesh's upstreams."""
        out: Routes = {}
        for node, spec in self.nodes.items():
            if spec["role"] == "namenode":
                out[node] = {"rpc": spec["rpc"]}
            elif spec["role"] == "datanode":
                out[node] = {"xfer": spec["xfer"], "ipc": spec["ipc"]}
        return out

    def direct_routes(self) -> Routes:
        return self.listen()

    @property
    def nn_port(self) -> int:
        return int(self.nodes["nn"]["rpc"].rpartition(":")[2])

    @property
    def fs_uri(self) -> str:
        return f"hdfs://{host_name('nn')}:{self.nn_port}"

    def address_map(self) -> dict[str, str]:
        """Every way Hadoop names a DataNode or the NameNode in its logs and reports,
        to the node id: `127.0.0.1:XFER` (the NameNode's key of a DataNode),
        `dnj.hdfs:PORT`, and the proxies' addresses once routed (LogAdapter `hosts`)."""
        out = {}
        for node, spec in self.nodes.items():
            for svc in ("rpc", "xfer", "ipc", "http"):
                if svc in spec:
                    port = spec[svc].rpartition(":")[2]
                    out[spec[svc]] = node
                    out[f"{host_name(node)}:{port}"] = node
        if self.routes_for is not None:
            for src in list(self.nodes):
                for peer, services in self.routes_for(src).items():
                    for addr in services.values():
                        out[addr] = peer
        return out

    # -- configuration -----------------------------------------------------------------

    def _common_props(self) -> dict[str, str]:
        return {**self.props, "fs.defaultFS": self.fs_uri,
                "dfs.namenode.rpc-address": f"{host_name('nn')}:{self.nn_port}",
                "hadoop.tmp.dir": os.path.join(self.dir, "tmp")}

    def write_conf(self, node: str) -> str:
        spec = self.nodes[node]
        os.makedirs(spec["conf"], exist_ok=True)
        os.makedirs(self.logs_dir, exist_ok=True)
        props = self._common_props()
        if spec["role"] == "namenode":
            props.update({"dfs.namenode.name.dir": "file://" + spec["storage"],
                          "dfs.namenode.http-address": spec["http"]})
        elif spec["role"] == "datanode":
            props.update({"dfs.datanode.data.dir": "file://" + spec["storage"],
                          "dfs.datanode.address": spec["xfer"],
                          "dfs.datanode.ipc.address": spec["ipc"],
                          "dfs.datanode.http.address": spec["http"],
                          "dfs.datanode.hostname": host_name(node)})
        props.update(spec.get("extra_props", {}))
        conf.write_site(os.path.join(spec["conf"], "core-site.xml"),
                        {k: v for k, v in props.items()
                         if k.startswith(("fs.", "hadoop.", "ipc.", "io."))})
        conf.write_site(os.path.join(spec["conf"], "hdfs-site.xml"), props)
        conf.write_log4j(os.path.join(spec["conf"], "log4j.properties"), spec["log"],
                         self.debug_loggers)
        self.write_hosts(node)
        return spec["conf"]

    def write_hosts(self, node: str) -> None:
        """The hosts file of `node`'s JVM: each peer's name at the address of the proxy of
        the link node -> peer (its real address when unrouted or not dialled)."""
        spec = self.nodes[node]
        routes = self.routes_for(node) if self.routes_for and node != "harness" else {}
        me = socket.gethostname()
        lines = [f"127.0.0.1 localhost {me}"]
        for peer in self.nodes:
            if self.nodes[peer]["role"] == "client":
                continue
            addrs = {a.rpartition(":")[0] for a in routes.get(peer, {}).values()}
            if len(addrs) > 1:
                raise ClusterError(f"{node}'s routes to {peer} use several hosts {addrs}: "
                                   f"a host name resolves to one address")
            lines.append(f"{addrs.pop() if addrs else '127.0.0.1'} {host_name(peer)}")
        os.makedirs(os.path.dirname(spec["hosts"]), exist_ok=True)
        with open(spec["hosts"], "w") as f:
            f.write("\n".join(lines) + "\n")

    def add_client(self, client_id: str, extra_props: dict | None = None) -> dict:
        """A client JVM's folder: conf (its log into logs/<client>.log) and hosts file."""
        spec = self.nodes.get(client_id) or self._add_node(client_id, "client")
        spec["extra_props"] = dict(extra_props or {})   # for this launch only
        self.write_conf(client_id)
        return spec

    def classpath(self, node: str, extra: list[str] = ()) -> str:
        return os.pathsep.join([self.nodes[node]["conf"], *extra, str(fetch.webroot(self.version)),
                                os.path.join(str(fetch.lib_dir(self.version)), "*")])

    def java_command(self, node: str, main: str, args: list[str] = (),
                     extra_cp: list[str] = (), agent: bool = True) -> list[str]:
        spec = self.nodes[node]
        os.makedirs(self.tmp_dir, exist_ok=True)
        # the agent goes into the cluster's and the workload's JVMs, not the harness's own
        # (dfsadmin, the state tool): their calls are no part of the run under test
        agent = [self.agent_boot, self.agent_flag, f"-D{AGENT_OUT_PROPERTY}={spec['agent_out']}"] \
            if agent and self.agent_flag and node != "harness" else []
        if agent and self.hold_dir:
            extra_cp = [*extra_cp, self.hold_dir]
        # -Dhdfs-chaos-node names the JVM for the reaper (harness/backends/local.py _ours)
        return [self.java, *self.jvm_flags, *self.role_flags.get(spec["role"], []), *agent,
                f"-Dhdfs-chaos-node={node}",
                f"-Djdk.net.hosts.file={spec['hosts']}",
                f"-Dhadoop.log.dir={self.logs_dir}",
                f"-Djava.io.tmpdir={self.tmp_dir}",
                f"-Dlog4j.configuration=file:{os.path.join(spec['conf'], 'log4j.properties')}",
                "-cp", self.classpath(node, list(extra_cp)), main, *args]

    # -- life cycle --------------------------------------------------------------------

    def start(self, timeout: float = 90.0, wait: bool = True) -> "HadoopCluster":
        if not fetch.is_fetched(self.version):
            raise ClusterError(f"hadoop {self.version} jars are not fetched: run "
                               f"tools/setup.sh --hadoop {self.version}")
        for node in self.nodes:
            self.write_conf(node)
        t = time.monotonic()
        formatted = self.format()
        self.timings = {"format": round(time.monotonic() - t, 3), "format_copied": not formatted}
        self._spawned = time.monotonic()
        self.start_node("nn")
        # a DataNode whose first version request finds no NameNode sleeps 5 s before the
        # next (3.x BPServiceActor.retrieveNamespaceInfo): the DataNodes start once the
        # NameNode's RPC port is bound (after its image is loaded); their own JVM start
        # covers the rest of the NameNode's
        self._wait_nn_bound(timeout)
        for dn in self.datanodes():
            self.start_node(dn)
        self.save()
        if wait:
            self.wait_healthy(timeout)
        return self

    def _wait_nn_bound(self, timeout: float) -> bool:
        """Until the NameNode's RPC port takes a connection; fails at once with the log's
        path if the NameNode exits. False when time ran out (wait_healthy then says why)."""
        host, _, port = self.nodes["nn"]["rpc"].rpartition(":")

        def bound() -> bool:
            proc = self.procs.get("nn")
            if proc is not None and proc.poll() is not None:
                raise ClusterError(f"nn exited with code {proc.returncode}; see "
                                   f"{self.nodes['nn']['stdout']} and {self.nodes['nn']['log']}")
            try:
                with socket.create_connection((host or "127.0.0.1", int(port)), timeout=0.5):
                    return True
            except OSError:
                return False

        return bool(wait_until(bound, timeout, 0.05))

    def format(self) -> bool:
        """Formats the NameNode's storage, once: a restarted run keeps its namespace. A
        fresh storage is a copy of the release's formatted one for the same configuration
        (`format_template`), formatted by a JVM only the first time: a format is a JVM
        start per run, and its output (an empty fsimage, new ids) depends on no port or
        path of the run. True when a JVM formatted it."""
        spec = self.nodes["nn"]
        if os.path.isfile(os.path.join(spec["storage"], "current", "VERSION")):
            return False
        template = self.format_template()
        if os.path.isfile(os.path.join(template, "current", "VERSION")):
            shutil.copytree(template, spec["storage"], dirs_exist_ok=True)
            return False
        with open(spec["stdout"], "ab") as out:
            # without the agent: the format JVM is no part of the run under test
            rc = subprocess.run(self.java_command("nn", NN_CLASS,
                                                  ["-format", "-force", "-nonInteractive"],
                                                  agent=False),
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                cwd=self.dir, timeout=120).returncode
        if rc != 0:
            raise ClusterError(f"NameNode -format failed (exit {rc}); see {spec['stdout']}")
        self._keep_template(spec["storage"], template)
        return True

    def format_template(self) -> str:
        """Where the formatted NameNode storage of this release and configuration is kept:
        one folder per the configuration's keys (the scenario's and the base ones)."""
        digest = hashlib.sha256(json.dumps(sorted(self.props.items()), default=str).encode())
        return os.path.join(str(fetch.release_dir(self.version)), "formatted-nn",
                            digest.hexdigest()[:12])

    @staticmethod
    def _keep_template(storage: str, template: str) -> None:
        """Copy a just-formatted storage to `template`, atomically: two runs formatting at
        once each copy to a folder of their own and the first rename wins."""
        parent = os.path.dirname(template)
        try:
            os.makedirs(parent, exist_ok=True)
            tmp = tempfile.mkdtemp(prefix=".tmp-", dir=parent)
            shutil.copytree(storage, tmp, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("in_use.lock"))
            try:
                os.rename(tmp, template)
            except OSError:         # another run kept its copy first
                shutil.rmtree(tmp, ignore_errors=True)
        except OSError:             # no cache to keep it in: the next run formats again
            pass

    def start_node(self, node: str) -> None:
        spec = self.nodes[node]
        if spec["role"] == "client":
            raise ClusterError(f"{node} is a client: a crashed client is not started again")
        self.write_conf(node)   # routes may have changed since the last start
        os.makedirs(spec["storage"], exist_ok=True)
        main = NN_CLASS if spec["role"] == "namenode" else DN_CLASS
        self._spawn(node, self.java_command(node, main))

    def _spawn(self, node: str, cmd: list[str]) -> subprocess.Popen:
        spec = self.nodes[node]
        # under the local backend (tie_to_parent) a JVM dies with the harness, SIGKILL
        # included, as the mini-HDFS processes do (hdfs_contract.lifeline)
        popen = lifeline.popen if self.tie_to_parent else subprocess.Popen
        with open(spec["stdout"], "ab") as out:
            proc = popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, start_new_session=True, cwd=self.dir)
        self.procs[node] = proc
        spec["pid"] = proc.pid
        self.save()
        return proc

    def start_client(self, client_id: str, main: str, args: list[str],
                     extra_cp: list[str] = (), extra_props: dict | None = None,
                     stdout: str | None = None) -> subprocess.Popen:
        """Starts a client JVM (the workload client, FsShell, ...) as `client_id`."""
        spec = self.add_client(client_id, extra_props)
        if stdout:
            spec["stdout"] = stdout
        return self._spawn(client_id, self.java_command(client_id, main, args, extra_cp))

    def run_client(self, client_id: str, main: str, args: list[str], timeout: float = 120.0,
                   extra_props: dict | None = None, stdin: bytes | None = None
                   ) -> subprocess.CompletedProcess:
        """Runs a short client JVM to its end (a shell command, the harness's own reads)."""
        self.add_client(client_id, extra_props)
        return subprocess.run(self.java_command(client_id, main, args), input=stdin,
                              capture_output=True, timeout=timeout, cwd=self.dir)

    def running(self, node: str) -> bool:
        proc = self.procs.get(node)
        if proc is not None:
            return proc.poll() is None
        pid = self.nodes.get(node, {}).get("pid")
        return bool(pid) and pid_alive(pid)

    def stop_node(self, node: str, timeout: float = 10.0, upgrade: bool | None = None) -> None:
        """Graceful stop (SIGTERM: Hadoop's shutdown hook runs), SIGKILL if it lingers.
        A DataNode is first asked to shut down for upgrade (`upgrade`; by default
        `upgrade_stops`, true until the run's teardown): only then does Hadoop send its writers the RESTART OOB ack and
        keep their RBW replicas to reload, the restart the mini-HDFS's graceful stop
        models (MINIHDFS.md 5); a SIGTERM alone resets the pipeline connections."""
        pid = self.nodes[node].get("pid")
        upgrade = self.upgrade_stops if upgrade is None else upgrade
        if upgrade and pid and pid_alive(pid) and self.nodes[node]["role"] == "datanode":
            self.shutdown_for_upgrade(node)
            pid = self.nodes[node].get("pid")
        if pid and pid_alive(pid):
            _signal(pid, signal.SIGCONT)
            _signal(pid, signal.SIGTERM)
            if not self._wait_exit(node, timeout):
                _signal(pid, signal.SIGKILL)
                self._wait_exit(node, 5)
        self.nodes[node]["pid"] = None
        self.save()

    def stop_nodes(self, nodes: list[str], timeout: float = 10.0) -> None:
        """Graceful stop of several JVMs side by side (the run's teardown): every one gets
        its SIGTERM before any is waited for, so their shutdown hooks run at once; then
        each as stop_node. A DataNode still to be shut down for upgrade goes alone."""
        alone = [n for n in nodes if self.upgrade_stops
                 and self.nodes[n]["role"] == "datanode"]
        for node in nodes:
            pid = self.nodes[node].get("pid")
            if node not in alone and pid and pid_alive(pid):
                _signal(pid, signal.SIGCONT)
                _signal(pid, signal.SIGTERM)
        for node in nodes:
            if node in alone:
                self.stop_node(node, timeout)
            elif self.nodes[node].get("pid"):
                if not self._wait_exit(node, timeout):
                    _signal(self.nodes[node]["pid"], signal.SIGKILL)
                    self._wait_exit(node, 5)
                self.nodes[node]["pid"] = None
        self.save()

    def shutdown_for_upgrade(self, node: str, timeout: float = 30.0) -> bool:
        """`dfsadmin -shutdownDatanode <ipc> upgrade` from the harness (straight to the
        DataNode, not through the link mesh), then wait for the JVM to exit. False if
        either did not happen (the caller then falls back to SIGTERM)."""
        spec = self.nodes[node]
        try:
            done = self.run_client("harness", ADMIN_CLASS,
                                   ["-shutdownDatanode", spec["ipc"], "upgrade"], timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return done.returncode == 0 and self._wait_exit(node, 15)

    def kill_node(self, node: str) -> None:
        """SIGKILL of the JVM: a crash. Storage is kept."""
        pid = self.nodes[node].get("pid")
        if pid and pid_alive(pid):
            _signal(pid, signal.SIGKILL)
            self._wait_exit(node, 5)
        self.nodes[node]["pid"] = None
        self.save()

    def restart_node(self, node: str, down: float = 0.0) -> None:
        self.stop_node(node)
        if down:
            time.sleep(down)
        self.start_node(node)

    def pause_node(self, node: str) -> None:
        stop_process(self._pid(node))

    def resume_node(self, node: str) -> None:
        os.kill(self._pid(node), signal.SIGCONT)

    def _pid(self, node: str) -> int:
        pid = self.nodes.get(node, {}).get("pid")
        if not pid or not pid_alive(pid):
            raise ClusterError(f"{node} is not running")
        return pid

    def _wait_exit(self, node: str, timeout: float) -> bool:
        pid = self.nodes[node].get("pid")
        proc = self.procs.get(node)
        return wait_until(lambda: (proc.poll() is not None) if proc is not None
                          else not pid_alive(pid), timeout, 0.02)

    def down(self) -> None:
        for node in reversed(list(self.nodes)):
            if self.nodes[node].get("pid"):
                self.stop_node(node, timeout=5.0, upgrade=False)

    def pids(self) -> list[int]:
        return [s["pid"] for s in self.nodes.values() if s.get("pid")]

    def _record_start_timings(self) -> None:
        """How the cluster's start went (logs/hadoop-start.json, kept with the run): the
        format (a copy or a JVM) and the daemons' JVMs from spawn to all live."""
        if getattr(self, "_spawned", None) is None or not hasattr(self, "timings"):
            return
        self.timings["daemons"] = round(time.monotonic() - self._spawned, 3)
        self._spawned = None        # a later wait (a restart) is no start
        try:
            with open(os.path.join(self.logs_dir, START_TIMINGS), "w") as f:
                json.dump(self.timings, f)
        except OSError:
            pass

    def save(self) -> None:
        os.makedirs(self.dir, exist_ok=True)
        doc = {"dir": self.dir, "version": self.version, "fs": self.fs_uri, "nodes": self.nodes}
        tmp = os.path.join(self.dir, "cluster.json.tmp")
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, os.path.join(self.dir, "cluster.json"))

    # -- JMX ---------------------------------------------------------------------------

    def jmx(self, node: str, query: str, timeout: float = 2.0) -> dict:
        """One bean of a daemon's /jmx servlet, e.g. `Hadoop:service=NameNode,name=FSNamesystemState`."""
        url = f"http://{self.nodes[node]['http']}/jmx?qry={query}"
        with urllib.request.urlopen(url, timeout=timeout) as r:
            beans = json.load(r).get("beans", [])
        if not beans:
            raise ClusterError(f"{node} has no JMX bean {query}")
        return beans[0]

    def namenode_state(self) -> tuple[int, str]:
        """Live DataNodes and FSState (`Operational`, or `safeMode` until enough block
        reports are in) from one read of the NameNode's FSNamesystemState bean."""
        bean = self.jmx("nn", "Hadoop:service=NameNode,name=FSNamesystemState")
        return int(bean["NumLiveDataNodes"]), str(bean.get("FSState", ""))

    def live_nodes(self) -> dict[str, dict]:
        """The NameNode's LiveNodes by DataNode id (lastContact etc.), from NameNodeInfo."""
        raw = self.jmx("nn", "Hadoop:service=NameNode,name=NameNodeInfo")["LiveNodes"]
        names = self.address_map()
        return {names.get(info.get("xferaddr"), key): info
                for key, info in json.loads(raw).items()}

    def wait_healthy(self, timeout: float = 90.0, datanodes: int | None = None) -> float:
        """Until the NameNode counts `datanodes` (default all) live and is out of safe
        mode; returns the seconds waited. Fails early with the log's path when a daemon
        exits. A restarted NameNode counts a DataNode live at its registration, before its
        block report: until then it is in safe mode and refuses a read of a block it has
        no location of (FSNamesystem.getBlockLocations, SafeModeException)."""
        want = len(self.datanodes()) if datanodes is None else datanodes
        start = time.monotonic()
        why = "not asked yet"

        def ready() -> bool:
            nonlocal why
            for node, proc in self.procs.items():
                if self.nodes[node]["role"] != "client" and proc.poll() is not None \
                        and self.nodes[node].get("pid") == proc.pid:
                    raise ClusterError(f"{node} exited with code {proc.returncode}; see "
                                       f"{self.nodes[node]['stdout']} and {self.nodes[node]['log']}")
            try:
                live, fs_state = self.namenode_state()
                why = f"{live} of {want} DataNodes live, NameNode {fs_state or 'state unknown'}"
                return live >= want and fs_state == "Operational"
            except (OSError, urllib.error.URLError, ValueError, KeyError, ClusterError) as e:
                why = f"NameNode JMX not answering ({e})"
                return False

        if wait_until(ready, timeout, 0.2):
            self._record_start_timings()
            return time.monotonic() - start
        raise ClusterError(f"hadoop cluster not ready within {timeout:.0f}s: {why}")


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
