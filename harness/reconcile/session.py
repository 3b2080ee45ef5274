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

DEFAULT_MASTER = "local[2]"
_lock = threading.Lock()
_spark = None
_master = None


def _builder(master: str):
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
         # their queries with some 15,000 calls, so this halves the time to build them
         # (10k events: 24 -> 12 s). HDFS_CHAOS_SPARK_CONF can turn it back on to debug.
         .config("spark.python.sql.dataFrameDebugging.enabled", "false")
         .config("spark.python.worker.reuse", "true")
         # Every hash aggregate, sort and broadcast hash join takes memory in pages, and
         # Spark sizes a page from the heap: 64 MB for a few GB on 2 cores. The checks run
         # hundreds of tiny aggregates, sorts and broadcasts, and each took a 64 MB page
         # (a long[] that the JVM zeroes); a broadcast keeps its page until the driver
         # collects garbage. At 10k events the live heap grew to 1-3 GB in the checks,
         # with a full GC every few seconds; with 2 MB pages, 0.2-0.3 GB. At 10 million
         # events (benchmarks/bench_verifier.py) the GC took 7-8 CPU-s instead of 24-31,
         # and the checks 39.5-55.2 s against 52.0-70.6 s over three runs each (this VM's
         # speed varies). A large aggregate just takes more pages.
         # HDFS_CHAOS_SPARK_CONF can set another size.
         .config("spark.buffer.pageSize", "2m")
         .config("spark.pyspark.python", sys.executable)
         .config("spark.pyspark.driver.python", sys.executable))
    if local:
        # The throughput collector, not G1: the verifier is a batch job that allocates a
        # row object or string for nearly every field it parses, and G1's write barriers
        # and concurrent marking cost more than the pauses they avoid. At 10 million events
        # (benchmarks/bench_verifier.py) the load went from 107 to 95 s and the whole
        # verification from 225.6 to 210.9 s. HDFS_CHAOS_SPARK_CONF may set other options.
        b = b.config("spark.driver.extraJavaOptions", "-XX:+UseParallelGC")
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


def get_spark(master: str | None = None):
    """The process-wide SparkSession, created on first use (`master` or local[2]).

    Asking again returns the same session; asking for a different master once a session
    exists is an error, since a JVM can host only one SparkContext.
    """
    global _spark, _master
    wanted = master or os.environ.get("HDFS_CHAOS_SPARK_MASTER") or DEFAULT_MASTER
    with _lock:
        if _spark is not None:
            if master and master != _master:
                raise RuntimeError(
                    f"a SparkSession for {_master!r} already runs in this process; "
                    f"cannot switch to {master!r} (start a new process for another master)")
            return _spark
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        try:
            spark = _builder(wanted).getOrCreate()
        except Exception as exc:  # no Java, bad master URL: one clear line
            raise RuntimeError(
                f"cannot start Spark ({wanted}): {exc}. The verifier needs Java 17+ on PATH "
                f"(or JAVA_HOME) and pyspark installed: pip install pyspark") from exc
        spark.sparkContext.setLogLevel("ERROR")
        _spark, _master = spark, wanted
        atexit.register(stop_spark)
        return spark


@contextlib.contextmanager
def session_conf(spark, settings: dict[str, str]):
    """Runtime SQL settings for the duration of a block, restored after it."""
    before = {k: spark.conf.get(k, None) for k in settings}
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


# The checks run a few hundred small queries over small tables (the protocol events; the
# bulk writes and acks are read through summaries). For them Spark's code generation
# costs more than it saves: a JFR profile put 15% of the sampled Java time in code
# generation and class loading, with the JIT compiler thread busy besides. Interpreted
# expressions cut the checks' CPU by a fifth to a quarter at 1M events
# (benchmarks/bench_verifier.py). In local mode they also shuffle into one partition (see
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
    return spark.sparkContext.master.startswith("local")


def small_queries(spark) -> dict[str, str]:
    """SMALL_QUERIES for `spark`: one shuffle partition in local mode (the 21 checks'
    plans went from 130 exchanges to 75; at 10 million events the checks took 66 s
    instead of 74, and the whole verification 197.6 s instead of 210.9; at 10k events
    38 s instead of 42), the two of SMALL_QUERIES on a cluster, whose cores would
    otherwise idle."""
    return {**SMALL_QUERIES, "spark.sql.shuffle.partitions": "1"} if is_local(spark) \
        else dict(SMALL_QUERIES)


def stop_spark() -> None:
    """Stop the shared session (at exit, or in a test that needs a fresh one)."""
    global _spark, _master
    with _lock:
        if _spark is not None:
            try:
                _spark.stop()
            except Exception:
                pass
            _spark, _master = None, None
