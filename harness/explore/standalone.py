"""A Spark standalone cluster on this machine, from the pyspark package's own jars: a
master and N workers on 127.0.0.1, each in its own process group (`kill_worker` takes a
worker and its executors down at once, as a lost machine). For the tests and the
benchmark of `hdfs-chaos explore --spark-master` (docs/explorer.md).

    with StandaloneCluster(workers=2, cores=1, memory="1g", work_dir=DIR) as cluster:
        explore(..., pool=...)   # cluster.url is spark://127.0.0.1:PORT
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time

from hdfs_contract import lifeline


class ClusterError(RuntimeError):
    """The cluster did not come up (one line, with the log to read)."""


def spark_home() -> str:
    import pyspark
    return os.path.dirname(os.path.abspath(pyspark.__file__))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _command(cls: str, *args: str) -> list[str]:
    """bin/spark-class of the package when it ships one, else java on its jars."""
    home = spark_home()
    script = os.path.join(home, "bin", "spark-class")
    if os.access(script, os.X_OK):
        return [script, cls, *args]
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") \
        if os.environ.get("JAVA_HOME") else "java"
    return [java, "-cp", os.path.join(home, "jars", "*"), cls, *args]


class StandaloneCluster:
    def __init__(self, workers: int = 2, cores: int = 1, memory: str = "1g",
                 work_dir: str = "/tmp/spark-standalone"):
        self.n_workers, self.cores, self.memory = workers, cores, memory
        self.work_dir = os.path.abspath(work_dir)
        self.port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.master: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen] = []

    def _env(self) -> dict:
        env = dict(os.environ, SPARK_HOME=spark_home(),
                   SPARK_LOG_DIR=os.path.join(self.work_dir, "logs"),
                   SPARK_WORKER_DIR=os.path.join(self.work_dir, "work"),
                   SPARK_LOCAL_IP="127.0.0.1",
                   # no REST submission server (it takes a fixed port); a lost worker's
                   # executors are noticed by the driver at once (their connection drops)
                   SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
                   SPARK_WORKER_OPTS="-Dspark.worker.cleanup.enabled=false")
        env.pop("PYTHONSTARTUP", None)
        return env

    def _spawn(self, name: str, cmd: list[str]) -> subprocess.Popen:
        os.makedirs(self.work_dir, exist_ok=True)
        log = open(os.path.join(self.work_dir, f"{name}.log"), "ab")
        try:
            # its own process group: a kill of the group takes its executors along; tied
            # to this process (lifeline), so a test killed outright leaves no daemon
            return lifeline.popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=self._env(),
                                  start_new_session=True)
        finally:
            log.close()

    def start(self, timeout: float = 180.0) -> "StandaloneCluster":
        self.master = self._spawn("master", _command(
            "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
            "--port", str(self.port), "--webui-port", str(free_port())))
        self._wait_log("master", "I have been elected leader", timeout)
        for i in range(self.n_workers):
            self.workers.append(self._spawn(f"worker-{i}", _command(
                "org.apache.spark.deploy.worker.Worker", self.url, "--host", "127.0.0.1",
                "--cores", str(self.cores), "--memory", self.memory,
                "--webui-port", str(free_port()),
                "--work-dir", os.path.join(self.work_dir, "work"))))
        for i in range(self.n_workers):
            self._wait_log(f"worker-{i}", "Successfully registered with master", timeout)
        return self

    def _wait_log(self, name: str, text: str, timeout: float) -> None:
        path = os.path.join(self.work_dir, f"{name}.log")
        deadline = time.time() + timeout
        proc = self.master if name == "master" else self.workers[int(name.split("-")[1])]
        while time.time() < deadline:
            try:
                with open(path, errors="replace") as f:
                    if text in f.read():
                        return
            except OSError:
                pass
            if proc.poll() is not None:
                raise ClusterError(f"the Spark {name} exited ({proc.returncode}): see {path}")
            time.sleep(0.5)
        raise ClusterError(f"the Spark {name} did not come up in {timeout:.0f}s: see {path}")

    def kill_worker(self, i: int) -> None:
        """SIGKILL worker `i`'s process group: the worker, its executors and their
        Python workers and runs, as a machine lost."""
        _kill_group(self.workers[i])

    def stop(self) -> None:
        for proc in self.workers + ([self.master] if self.master else []):
            _kill_group(proc, signal.SIGTERM)
        deadline = time.time() + 15
        for proc in self.workers + ([self.master] if self.master else []):
            try:
                proc.wait(max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                pass
            _kill_group(proc)

    def __enter__(self) -> "StandaloneCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _kill_group(proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
    if sig == signal.SIGKILL:
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
