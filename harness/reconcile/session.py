"""The one SparkSession of a process, shared by every verification and report.

Spark start-up costs seconds (a JVM, a Py4J gateway), so a process makes one session and
reuses it for every run it checks. Local mode (`local[2]`) is the default; a master URL
(`spark://host:7077`, `yarn`, `k8s://...`) runs the same job on a cluster, in which case
the results folders must be on a file system every executor can read.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading

from .sparkjvm import (cds_options, conf_restore, conf_swap, detach_accumulator_server,
                       launch_jvm_logging_to)

DEFAULT_MASTER = "local[2]"
_lock = threading.Lock()
_spark = None
_master = None


# Inputs up to this many bytes of event logs are "small": a JVM that lives for seconds
# (one run, the library) spends them loading classes and compiling Spark's planner, not
# in steady computation. See `_java_options`.
SMALL_INPUT_BYTES = 256 << 20


def _java_options(input_bytes: int | None, dump_cds: str | None = None) -> str:
    """The driver JVM's options in local mode.

    - The throughput collector, not G1: the verifier is a batch job that allocates a row
      object or string for nearly every field it parses, and G1's write barriers and
      concurrent marking cost more than the pauses they avoid.
    - For small inputs, the client compiler only (`-XX:TieredStopAtLevel=1`), in one
      thread: verifying one run is a few seconds of mostly cold code (the planner of some
      25 checks), where C2's compilations cost CPU that never pays back; at 10 million
      events C2 does pay.
    - The class-data sharing archive, where one was built: the JVM maps the classes of
      Spark, Catalyst and their dependencies parsed and verified instead of loading some
      15,000 classes from jars at every start.
    `input_bytes` None (unknown) keeps the full JIT. HDFS_CHAOS_SPARK_CONF may set other
    options (spark.driver.extraJavaOptions)."""
    opts = ["-XX:+UseParallelGC"]
    if input_bytes is not None and input_bytes <= SMALL_INPUT_BYTES:
        # one compiler thread: a second one buys compiled code sooner at the price of
        # the other core
        opts += ["-XX:TieredStopAtLevel=1", "-XX:CICompilerCount=1"]
    opts += cds_options(dump_cds)
    return " ".join(opts)


def _builder(master: str, input_bytes: int | None = None, dump_cds: str | None = None,
             conf: dict[str, str] | None = None):
    from pyspark.sql import SparkSession

    local = master.startswith("local")
    memory = os.environ.get("HDFS_CHAOS_SPARK_MEMORY", "4g")
    partitions = os.environ.get("HDFS_CHAOS_SPARK_PARTITIONS", "4" if local else "200")
    b = (SparkSession.builder.master(master).appName("hdfs-chaos-reconcile")
         .config("spark.sql.shuffle.partitions", partitions)
         .config("spark.default.parallelism", partitions)
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.log.level", "ERROR")
         .config("spark.sql.execution.arrow.pyspark.enabled", "true")
         .config("spark.sql.execution.arrow.pyspark.fallback.enabled", "true")
         # Listing thousands of small log files on the driver is faster than a Spark
         # job that lists them in parallel (that job alone takes seconds on 2 cores).
         .config("spark.sql.sources.parallelPartitionDiscovery.threshold", "1000000")
         .config("spark.sql.files.openCostInBytes", str(1 << 20))
         .config("spark.sql.adaptive.enabled", "true")
         .config("spark.sql.autoBroadcastJoinThreshold", str(32 << 20))
         # PySpark 4 records the Python call site of every DataFrame and Column call for
         # its error messages: some five Py4J round trips more per call. The checks build
         # their queries with some 15,000 calls, so this halves the time to build them.
         # HDFS_CHAOS_SPARK_CONF can turn it back on to debug.
         .config("spark.python.sql.dataFrameDebugging.enabled", "false")
         # lower() and upper() through the JVM's case mapping, not ICU's: the first ICU
         # case mapping initialises ICU's tables, about half a second of a one-run verify
         # (the checks compare protocol names, ASCII, where both agree)
         .config("spark.sql.icu.caseMappings.enabled", "false")
         .config("spark.python.worker.reuse", "true")
         # Every hash aggregate, sort and broadcast hash join takes memory in pages, and
         # Spark sizes a page from the heap: 64 MB for a few GB on 2 cores. The checks run
         # hundreds of tiny aggregates, sorts and broadcasts, and each would take a 64 MB
         # page (a long[] that the JVM zeroes); a broadcast keeps its page until the
         # driver collects garbage, so the heap fills with pages and the GC runs full.
         # A large aggregate just takes more pages.
         # HDFS_CHAOS_SPARK_CONF can set another size.
         .config("spark.buffer.pageSize", "2m")
         .config("spark.pyspark.python", sys.executable)
         .config("spark.pyspark.driver.python", sys.executable))
    if local:
        b = b.config("spark.driver.extraJavaOptions", _java_options(input_bytes, dump_cds))
    for key, value in (conf or {}).items():   # the caller's (explore's shipping); env wins
        b = b.config(key, value)
    user: dict[str, str] = {}
    for item in filter(None, os.environ.get("HDFS_CHAOS_SPARK_CONF", "").split(";")):
        key, sep, value = item.partition("=")
        if not sep:
            raise RuntimeError(f"HDFS_CHAOS_SPARK_CONF: {item!r} is not KEY=VALUE "
                               "(separate settings with ';')")
        user[key.strip()] = value.strip()
    for key, value in user.items():
        b = b.config(key, value)
    if local:
        # Driver and executor are one JVM in local mode: its heap holds the cached events.
        b = (b.config("spark.driver.memory", memory)
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.driver.host", "127.0.0.1"))
    return b


class SparkStartError(RuntimeError):
    """Spark did not start (no Java, a bad master URL): the CLI shows it as one line."""


def get_spark(master: str | None = None, log_path: str | None = None,
              input_bytes: int | None = None, dump_cds: str | None = None,
              conf: dict[str, str] | None = None):
    """The process-wide SparkSession, created on first use (`master` or local[2]).

    Asking again returns the same session; asking for a different master once a session
    exists is an error, since a JVM can host only one SparkContext. With `log_path`, the
    JVM that a first call starts writes its output there (spark_log_path), not to the
    terminal. `input_bytes`, the size of the event logs the first call is for, picks the
    JVM's options (`_java_options`); `dump_cds` writes a class-data sharing archive there
    when the JVM exits (harness.reconcile.cds). `conf`: more settings for a session
    this call starts (HDFS_CHAOS_SPARK_CONF still wins).
    """
    global _spark, _master
    from .connect import remote_url
    wanted = master or remote_url() or os.environ.get("HDFS_CHAOS_SPARK_MASTER") \
        or DEFAULT_MASTER
    with _lock:
        if _spark is not None:
            if master and master != _master:
                raise RuntimeError(
                    f"a SparkSession for {_master!r} already runs in this process; "
                    f"cannot switch to {master!r} (start a new process for another master)")
            return _spark
        if is_remote(wanted):
            _spark, _master = _connect(wanted), wanted
            atexit.register(stop_spark)
            return _spark
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        try:
            builder = _builder(wanted, input_bytes, dump_cds, conf)
            if log_path:
                launch_jvm_logging_to(builder, log_path)
            spark = builder.getOrCreate()
        except Exception as exc:  # no Java, bad master URL: one clear line
            raise SparkStartError(
                f"cannot start Spark ({wanted}): {str(exc).rstrip('.')}"
                f"{_last_line(log_path)}. The verifier needs Java 17+ on PATH (or JAVA_HOME) "
                f"and pyspark installed: pip install pyspark") from exc
        spark.sparkContext.setLogLevel("ERROR")
        _spark, _master = spark, wanted
        atexit.register(stop_spark)
        return spark


def is_remote(master: str) -> bool:
    """True for a Spark Connect URL (sc://host:port), which a session reaches over gRPC."""
    return master.startswith("sc://")


def _connect(url: str):
    """A Spark Connect session to `url` (a server of `hdfs-chaos spark up`, or a shared
    one): no JVM in this process; the checks use only the DataFrame and SQL APIs there."""
    from urllib.parse import urlsplit
    where = urlsplit(url.split(";", 1)[0])
    host, port = where.hostname or "localhost", where.port or 15002
    from .connect import answers
    if not answers(port, host, timeout=5.0):   # the Connect client retries for minutes
        raise SparkStartError(f"cannot reach the Spark Connect server at {url}: nothing "
                              f"answers at {host}:{port} (hdfs-chaos spark status; "
                              f"hdfs-chaos spark up starts one)")
    try:
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.remote(url).getOrCreate()
        spark.conf.set("spark.sql.session.timeZone", "UTC")
        return spark
    except ImportError as exc:
        raise SparkStartError(f"cannot use Spark Connect at {url}: {exc}. Install the "
                              f"client: pip install 'pyspark[connect]'") from exc
    except Exception as exc:
        raise SparkStartError(f"cannot reach the Spark Connect server at {url}: "
                              f"{_one_line(exc)} (hdfs-chaos spark status; hdfs-chaos spark up "
                              f"starts one)") from exc


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__


def master_of(spark) -> str:
    """The master URL `spark` runs on: its context's, or the server's for Spark Connect."""
    if getattr(spark, "_sc", None) is not None:
        return spark.sparkContext.master
    # through Spark Connect a round trip: asked once per session
    known = _remote_masters.get(id(spark))
    if known is None or known[0] is not spark:
        known = _remote_masters[id(spark)] = (spark, str(spark.conf.get("spark.master", "")))
    return known[1]


_remote_masters: dict[int, tuple] = {}


def default_parallelism(spark) -> int:
    """The number of partitions Spark gives a distributed collection by default."""
    if getattr(spark, "_sc", None) is not None:
        return spark.sparkContext.defaultParallelism
    return int(spark.conf.get("spark.default.parallelism", "2"))


@contextlib.contextmanager
def session_conf(spark, settings: dict[str, str]):
    """Runtime SQL settings for the duration of a block, restored after it."""
    before = conf_swap(spark, settings)
    try:
        yield
    finally:
        conf_restore(spark, before)


# The checks run a few hundred small queries over small tables (the protocol events; the
# bulk writes and acks are read through summaries). For them Spark's code generation
# costs more than it saves: a JFR profile put 15% of the sampled Java time in code
# generation and class loading, with the JIT compiler thread busy besides, so the checks
# run with interpreted expressions (benchmarks/bench_verifier.py). In local mode they also shuffle into one partition (see
# `is_local` and load.RunSet): every table they read is one partition then, and a table
# in one partition already meets any grouping or join requirement, so most exchanges
# (each a stage of its own, scheduled at some 100 ms) drop out of the plans. The checks
# run two at a time, which keeps both cores busy.
SMALL_QUERIES = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    "spark.sql.shuffle.partitions": "2",
}


def is_local(spark) -> bool:
    """True when `spark` runs in this process (local mode), on this machine's cores."""
    return master_of(spark).startswith("local")


def small_queries(spark) -> dict[str, str]:
    """SMALL_QUERIES for `spark`: one shuffle partition in local mode (a table in one
    partition needs no exchange, which removes about half of the checks' exchanges), the
    two of SMALL_QUERIES on a cluster, whose cores would otherwise idle."""
    return {**SMALL_QUERIES, "spark.sql.shuffle.partitions": "1"} if is_local(spark) \
        else dict(SMALL_QUERIES)


def stop_spark() -> None:
    """Stop the shared session (at exit, or in a test that needs a fresh one)."""
    global _spark, _master
    with _lock:
        if _spark is not None:
            # PySpark's accumulator server notices a shutdown only at its next poll, every
            # half second, and SparkContext.stop waits for it: half a second at the end
            # of every verify, after its verdict. It is shut down beside the stop instead
            # (a daemon thread: at exit the process closes its socket).
            server = detach_accumulator_server(_spark)
            if server is not None:
                threading.Thread(target=server.shutdown, name="accumulator-server-stop",
                                 daemon=True).start()
            try:
                _spark.stop()
            except Exception:
                pass
            _spark, _master = None, None


# -- where the JVM's own output goes -----------------------------------------------------

SPARK_LOG = "spark.log"


def spark_log_path(run_dirs: list[str]) -> str:
    """Where the JVM of a verification writes its output: logs/spark.log of the run when
    there is one run, spark.log beside the runs (in the first run's parent folder, the
    results folder of `hdfs-chaos run`) when there are several."""
    first = os.path.abspath(run_dirs[0]).rstrip("/")
    if len(run_dirs) == 1:
        return os.path.join(first, "logs", SPARK_LOG)
    return os.path.join(os.path.dirname(first), SPARK_LOG)


def _last_line(path: str | None) -> str:
    """' (<why, from the JVM's log>; see <path>)', or '' without a log: why the JVM did
    not start (no java, a bad option) is in its log now, not on the terminal. The last
    line that names Java says it best ("/x/bin/java: No such file or directory", "Could
    not create the Java Virtual Machine"); spark-submit's own complaints follow it."""
    if not path or not os.path.exists(path):
        return ""
    with open(path, "rb") as f:
        f.seek(max(0, os.path.getsize(path) - 4096))
        lines = [l.strip() for l in f.read().decode("utf-8", "replace").splitlines()]
    lines = [l for l in lines if l]
    last = next((l for l in reversed(lines) if "java" in l.lower()), lines[-1] if lines else "")
    return f" ({last}; see {path})" if last else f" (see {path})"
