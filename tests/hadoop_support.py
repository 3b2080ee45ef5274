"""A real Apache Hadoop NameNode and DataNodes on loopback for the tests of the Hadoop log
adapter and workload client (no mocks: separate JVMs from the release's own jars).

Deliberately small and independent of the harness's Hadoop daemons (harness/systems/
hadoop, another branch): ports are picked free at start so that tests running at the
same time on one machine do not collide, and every JVM is stopped at teardown.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request

from harness.systems.hadoop.logmap import DEBUG_LOGGERS

RELEASE = os.environ.get("HDFS_CHAOS_HADOOP_VERSION", "3.4.2")
CACHE = os.path.expanduser(os.environ.get("HDFS_CHAOS_HADOOP_CACHE", "~/.cache/hdfs-chaos/hadoop"))
JAVA_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "harness", "systems", "hadoop", "java")
JVM_FLAGS = ["-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
LOG_PATTERN = "%d{ISO8601} %p [%t] %c{1}/%C{1}: %m%n"
WEBAPPS = ("hdfs", "datanode", "secondary", "static", "journal")


def lib_dir(release: str = RELEASE) -> str:
    return os.path.join(CACHE, release, "lib")


def missing(release: str = RELEASE) -> str | None:
    """Why the real-Hadoop tests cannot run here (None: they can)."""
    if not shutil.which("java") or not shutil.which("javac"):
        return "needs a JDK (java and javac)"
    if not os.path.isdir(lib_dir(release)) or not any(
            f.startswith("hadoop-hdfs-") for f in os.listdir(lib_dir(release))):
        return (f"needs the Hadoop {release} jars in {lib_dir(release)}: run the project's "
                "setup (harness/systems/hadoop/fetch.py)")
    return None


def free_ports(n: int) -> list[int]:
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def build_client(out_dir: str, release: str = RELEASE) -> str:
    subprocess.run([os.path.join(JAVA_DIR, "build.sh"), lib_dir(release), out_dir], check=True)
    return out_dir


def _xml(props: dict) -> str:
    body = "".join(f"<property><name>{k}</name><value>{v}</value></property>\n"
                   for k, v in props.items())
    return f"<?xml version=\"1.0\"?>\n<configuration>\n{body}</configuration>\n"


class HadoopCluster:
    """A NameNode and `datanodes` DataNodes, each its own JVM, logs in `dir/logs`."""

    def __init__(self, root: str, datanodes: int = 2, conf: dict | None = None,
                 release: str = RELEASE):
        self.root, self.release, self.n = root, release, datanodes
        self.procs: dict[str, subprocess.Popen] = {}
        self.logs = os.path.join(root, "logs")
        os.makedirs(self.logs, exist_ok=True)
        webroot = os.path.join(root, "webroot")
        for w in WEBAPPS:
            os.makedirs(os.path.join(webroot, "webapps", w), exist_ok=True)
        self.webroot = webroot
        ports = free_ports(2 + 3 * datanodes)
        self.nn_rpc, self.nn_http = ports[0], ports[1]
        self.dn_ports = {f"dn{j}": ports[2 + 3 * (j - 1): 5 + 3 * (j - 1)]
                         for j in range(1, datanodes + 1)}
        self.fs = f"hdfs://127.0.0.1:{self.nn_rpc}"
        self.base = {
            "fs.defaultFS": self.fs,
            "dfs.replication": str(min(datanodes, 3)),
            "dfs.blocksize": "1048576",
            "dfs.namenode.fs-limits.min-block-size": "512",
            "dfs.heartbeat.interval": "1",
            "dfs.namenode.heartbeat.recheck-interval": "5000",
            "dfs.namenode.lease-recheck-interval-ms": "1000",
            "dfs.namenode.safemode.extension": "0",
            "dfs.namenode.safemode.min.datanodes": "0",
            "dfs.namenode.datanode.registration.ip-hostname-check": "false",
            "dfs.blockreport.initialDelay": "0",
            "dfs.permissions.enabled": "false",
            "dfs.namenode.http-address": f"127.0.0.1:{self.nn_http}",
            "dfs.namenode.rpc-address": f"127.0.0.1:{self.nn_rpc}",
            "dfs.client.block.write.replace-datanode-on-failure.enable": "false",
            **(conf or {}),
        }
        # node ids of the DataNodes' transfer addresses, as the log adapter needs them
        self.hosts = {f"127.0.0.1:{p[0]}": dn for dn, p in self.dn_ports.items()}

    def conf_dir(self, node: str, extra: dict | None = None, debug: bool = True) -> str:
        d = os.path.join(self.root, "conf", node)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "core-site.xml"), "w") as f:
            f.write(_xml({"fs.defaultFS": self.fs}))
        with open(os.path.join(d, "hdfs-site.xml"), "w") as f:
            f.write(_xml({**self.base, **(extra or {})}))
        lines = ["log4j.rootLogger=INFO,F",
                 "log4j.appender.F=org.apache.log4j.FileAppender",
                 f"log4j.appender.F.File={self.log_of(node)}",
                 "log4j.appender.F.Append=true",
                 "log4j.appender.F.layout=org.apache.log4j.PatternLayout",
                 f"log4j.appender.F.layout.ConversionPattern={LOG_PATTERN}"]
        if debug:
            lines += [f"log4j.logger.{name}=DEBUG" for name in DEBUG_LOGGERS]
        with open(os.path.join(d, "log4j.properties"), "w") as f:
            f.write("\n".join(lines) + "\n")
        return d

    def log_of(self, node: str) -> str:
        return os.path.join(self.logs, f"{node}.log")

    def classpath(self, conf: str, *extra: str) -> str:
        return os.pathsep.join([conf, self.webroot, *extra, os.path.join(lib_dir(self.release), "*")])

    def _java(self, node: str, conf: str, main: list[str], extra_cp: tuple = ()) -> list[str]:
        # Jetty's scratch folders under the cluster's root, not left behind in /tmp
        scratch = os.path.join(self.root, "tmp")
        os.makedirs(scratch, exist_ok=True)
        return ["java", *JVM_FLAGS, f"-Djava.io.tmpdir={scratch}",
                "-cp", self.classpath(conf, *extra_cp), *main]

    def start(self, timeout: float = 90.0) -> "HadoopCluster":
        nn_conf = self.conf_dir("nn", {"dfs.namenode.name.dir": os.path.join(self.root, "nn")})
        subprocess.run(self._java("nn", nn_conf, ["org.apache.hadoop.hdfs.server.namenode.NameNode",
                                                  "-format", "-force", "-nonInteractive"]),
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=120)
        self._spawn("nn", nn_conf, ["org.apache.hadoop.hdfs.server.namenode.NameNode"])
        for dn, (xfer, ipc, http) in self.dn_ports.items():
            conf = self.conf_dir(dn, {
                "dfs.datanode.data.dir": os.path.join(self.root, dn, "data"),
                "dfs.datanode.address": f"127.0.0.1:{xfer}",
                "dfs.datanode.ipc.address": f"127.0.0.1:{ipc}",
                "dfs.datanode.http.address": f"127.0.0.1:{http}"})
            self._spawn(dn, conf, ["org.apache.hadoop.hdfs.server.datanode.DataNode"])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for node, p in self.procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"hadoop {node} exited ({p.returncode}); see {self.log_of(node)}")
            if self.live_datanodes() >= self.n:
                return self
            time.sleep(0.5)
        raise RuntimeError(f"{self.n} live DataNodes not reached in {timeout}s")

    def _spawn(self, node: str, conf: str, main: list[str]) -> None:
        out = open(os.path.join(self.logs, f"{node}.out"), "ab")
        self.procs[node] = subprocess.Popen(self._java(node, conf, main), stdout=out,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)
        out.close()

    def live_datanodes(self) -> int:
        url = (f"http://127.0.0.1:{self.nn_http}/jmx?qry=Hadoop:service=NameNode,"
               "name=FSNamesystemState")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                beans = json.load(r)["beans"]
            return int(beans[0]["NumLiveDataNodes"]) if beans else 0
        except (OSError, ValueError, KeyError, IndexError):
            return 0

    def client_command(self, classes: str, node: str, ops_file: str, events: str,
                       gate_dir: str | None = None, seed: int = 0) -> list[str]:
        conf = self.conf_dir(node)
        cmd = self._java(node, conf, ["HdfsChaosClient", "--node", node, "--ops", ops_file,
                                      "--events", events, "--seed", str(seed), "--fs", self.fs],
                         extra_cp=(classes,))
        if gate_dir:
            cmd[-2:-2] = ["--gate-dir", gate_dir]
        return cmd

    def stop(self) -> None:
        for node, p in self.procs.items():
            if p.poll() is None:
                p.kill()        # the test is over: nothing of a daemon's shutdown matters
        for p in self.procs.values():
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                pass


def fetched_or_skip(release: str = RELEASE) -> None:
    """Skip the calling test unless java is here and the `release` jars are in the cache
    (fetched now if need be)."""
    import pytest
    from harness.systems.hadoop import fetch
    if shutil.which("java") is None:
        pytest.skip("no java")
    try:
        fetch.fetch(release)
    except fetch.FetchError as e:
        pytest.skip(str(e))
