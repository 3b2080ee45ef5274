"""A Spark Connect server on loopback, kept running between commands (`hdfs-chaos spark
up|down|status`).

A verification in a fresh process spends most of its time starting a JVM and compiling
Spark's planner; a server that stays up does that once, and every later `run`, `verify`,
`report`, `diff` or `explore` connects to it (session.get_spark) instead of starting its
own JVM. The server is Spark's own (`SparkConnectServer`, shipped in pyspark's jars),
started with spark-submit in local mode with the verifier's settings, in its own process
group; its address and pid are kept in a state file so that any later command finds it.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass

from hdfs_contract.procs import pid_alive

from harness.waits import wait_until

DEFAULT_PORT = 15002    # Spark Connect's own default port
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
REMOTE_ENV = "HDFS_CHAOS_SPARK_REMOTE"   # sc://host:port, or "off" for a local session
OFF = "off"


class ConnectError(RuntimeError):
    """The server could not start, or a remote could not be reached: one line for the CLI."""


def state_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "hdfs-chaos", "spark-connect")


def _state_path() -> str:
    return os.path.join(state_dir(), "server.json")


@dataclass
class Server:
    """A server this machine's `spark up` started."""
    pid: int
    port: int
    log: str
    started: float
    pyspark: str

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"


def answers(port: int, host: str = "127.0.0.1", timeout: float = 1.0) -> bool:
    """True when something accepts a TCP connection at host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def status() -> Server | None:
    """The running server, or None. A state file whose process is gone is removed."""
    try:
        with open(_state_path(), encoding="utf-8") as f:
            server = Server(**json.load(f))
    except (OSError, ValueError, TypeError):
        return None
    if not pid_alive(server.pid):
        _forget()
        return None
    return server


def _forget() -> None:
    try:
        os.remove(_state_path())
    except FileNotFoundError:
        pass


def remote_url() -> str | None:
    """The Spark Connect URL a command should use: HDFS_CHAOS_SPARK_REMOTE (`off`: none),
    else the server of `spark up` when it answers, else None (a local session)."""
    explicit = os.environ.get(REMOTE_ENV, "").strip()
    if explicit:
        return None if explicit == OFF else explicit
    server = status()
    if server is not None and answers(server.port):
        return server.url
    return None


def _submit_command(port: int, memory: str) -> list[str]:
    """spark-submit of Spark's Connect server with the verifier's settings (session._builder)."""
    import pyspark
    from .session import _builder
    spark_home = os.path.dirname(pyspark.__file__)
    options = dict(_builder("local[2]", input_bytes=None)._options)
    # a server lives for many verifications: the full JIT pays back there (see
    # session._java_options), so only the collector and class-data sharing are kept
    java = options.pop("spark.driver.extraJavaOptions", "")
    java = " ".join(o for o in java.split() if not o.startswith(("-XX:TieredStopAtLevel",
                                                                 "-XX:CICompilerCount")))
    options.pop("spark.master", None)
    options.pop("spark.app.name", None)
    options.pop("spark.driver.memory", None)
    options.update({
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.driver.extraJavaOptions": java,
    })
    cmd = [os.path.join(spark_home, "bin", "spark-submit"), "--class", SERVER_CLASS,
           "--name", "hdfs-chaos-connect", "--master", "local[2]", "--driver-memory", memory]
    for key, value in sorted(options.items()):
        cmd += ["--conf", f"{key}={value}"]
    return cmd


def up(port: int = DEFAULT_PORT, memory: str | None = None, timeout: float = 120.0,
       say=print, warm: bool = True) -> Server:
    """Start the server (or return the one already up) and wait until it answers."""
    import pyspark
    server = status()
    if server is not None:
        return server
    if answers(port):
        raise ConnectError(f"port {port} on 127.0.0.1 is taken by another program: "
                           f"choose another with --port")
    memory = memory or os.environ.get("HDFS_CHAOS_SPARK_MEMORY", "4g")
    os.makedirs(state_dir(), exist_ok=True)
    log = os.path.join(state_dir(), "server.log")
    env = {**os.environ, "SPARK_HOME": os.path.dirname(pyspark.__file__),
           "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    with open(log, "ab") as out:
        proc = subprocess.Popen(_submit_command(port, memory), stdout=out, stderr=out,
                                stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    server = Server(pid=proc.pid, port=port, log=log, started=time.time(),
                    pyspark=pyspark.__version__)
    tmp = _state_path() + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(asdict(server), f)
    os.replace(tmp, _state_path())
    say(f"starting the Spark Connect server on 127.0.0.1:{port} (log {log})")
    wait_until(lambda: answers(port) or proc.poll() is not None, timeout, 0.25)
    if not answers(port):
        if proc.poll() is not None:
            _forget()
            raise ConnectError(f"the Spark Connect server exited with {proc.returncode} "
                               f"before it answered: see {log} (Java 17+ on PATH?)")
        down()
        raise ConnectError(f"the Spark Connect server did not answer within "
                           f"{timeout:.0f} s: see {log}")
    if warm:
        say("warming the server up: verifying synthetic runs once")
        _warm(server.url)
    return server


def _warm(url: str) -> None:
    """Verify a few synthetic runs through the new server (benchmarks/gen_events.py, as
    cds.py trains with), so that its JIT has compiled Spark's planner and the checks'
    plans before a user's first verification; a small query where the generator is not
    beside the package (an installed copy)."""
    from .cds import GENERATOR, synthetic_runs
    env = dict(os.environ, HDFS_CHAOS_SPARK_REMOTE=url)
    if not os.path.exists(GENERATOR):
        code = ("from harness.reconcile.session import get_spark; "
                "get_spark().range(1).count()")
        subprocess.run([sys.executable, "-c", code], env=env, check=False,
                       capture_output=True, timeout=300)
        return
    with tempfile.TemporaryDirectory(prefix="hdfs-chaos-warm-") as tmp:
        runs = synthetic_runs(tmp, 20000)
        code = ("import sys; from harness.reconcile.api import verify_runs; "
                "[verify_runs([r]) for r in sys.argv[1:]]")
        subprocess.run([sys.executable, "-c", code, *runs], env=env, check=False,
                       capture_output=True, timeout=600,
                       cwd=os.path.dirname(os.path.dirname(GENERATOR)))


def down(grace: float = 15.0) -> Server | None:
    """Stop the server of `spark up` (its whole process group); None if none was up."""
    server = status()
    if server is None:
        return None
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            break
        if wait_until(lambda: not pid_alive(server.pid), wait, 0.1):
            break
    _forget()
    return server
