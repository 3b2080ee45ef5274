"""Every use of Spark's private APIs by the verifier, in one place.

PySpark's public API does not reach some things the verifier needs: a DataFrame whose
plan is its cache alone, releasing a local checkpoint's blocks, starting the JVM with its
output in a file, and stopping the accumulator server without its half-second poll. They
go through Py4J to JVM classes and to private attributes of PySpark, which a PySpark
release may rename: `PRIVATE_JVM_CLASSES` and `PRIVATE_PYTHON_ATTRIBUTES` list them, and
tests/unit/test_sparkjvm.py fails on a release that lacks one. Without a JVM gateway
(Spark Connect) each function falls back to the public API. The class-data sharing
archive of Spark's classes (cds.py builds it) is tied to one PySpark release and lives
here too.
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import DataFrame

# The PySpark releases these were checked on, [low, high) by (major, minor); pyproject.toml
# states the same range (tests/unit/test_sparkjvm.py holds the two together).
SUPPORTED_PYSPARK = ((4, 0), (4, 4))
PRIVATE_JVM_CLASSES = ("org.apache.spark.sql.classic.Dataset",)
PRIVATE_PYTHON_ATTRIBUTES = (
    ("pyspark.sql.DataFrame", "_jdf"),
    ("pyspark.sql.SparkSession", "_jsparkSession"),
    ("pyspark.sql.SparkSession", "_jvm"),
    ("pyspark.SparkContext", "_gateway"),
    ("pyspark.SparkContext", "_ensure_initialized"),
    ("pyspark.sql.SparkSession.Builder", "_options"),
    ("pyspark.sql.connect.session.SparkSession", "client"),
    ("pyspark.sql.connect.client.SparkConnectClient", "config"),
)


def cds_archive() -> str:
    """Where the class-data sharing archive of Spark's JVM lives (built by
    `python -m harness.reconcile.cds`, which tools/setup.sh runs): one per virtualenv and
    pyspark release, since it is only valid for the class path it was made with."""
    import pyspark
    return os.environ.get("HDFS_CHAOS_SPARK_CDS") or os.path.join(
        sys.prefix, "share", "hdfs-chaos", f"spark-{pyspark.__version__}.jsa")


def cds_options(dump: str | None = None) -> list[str]:
    """The driver JVM's class-data sharing options: write an archive to `dump` at exit,
    or map the archive of this PySpark release where it exists."""
    if dump:
        return [f"-XX:ArchiveClassesAtExit={dump}"]
    if os.path.exists(cds_archive()):
        # -Xshare:auto (the default): an archive that does not match this JVM or class
        # path is ignored (with a warning in the Spark log), never an error
        return [f"-XX:SharedArchiveFile={cds_archive()}"]
    return []


def has_jvm(df_or_spark) -> bool:
    """True when Py4J reaches the JVM (a classic session, not Spark Connect)."""
    spark = getattr(df_or_spark, "sparkSession", df_or_spark)
    return getattr(spark, "_jvm", None) is not None


def cached_leaf(df: DataFrame) -> DataFrame:
    """A persisted `df` as a DataFrame whose plan is the cache alone (an InMemoryRelation
    leaf), not the lineage that computes it: Spark analyses a DataFrame's whole logical
    plan again at every call that extends it. Same data, same cache."""
    if not has_jvm(df):
        return df
    spark = df.sparkSession
    plan = df._jdf.queryExecution().withCachedData()
    return DataFrame(spark._jvm.org.apache.spark.sql.classic.Dataset.ofRows(
        spark._jsparkSession, plan), spark)


def release(df: DataFrame) -> None:
    """Free a kept DataFrame's blocks now: a local checkpoint's RDD, or a cache."""
    if has_jvm(df):
        plan = df._jdf.queryExecution().logical()
        if plan.getClass().getSimpleName() == "LogicalRDD":   # a local checkpoint
            plan.rdd().unpersist(False)
            return
    df.unpersist()


def launch_jvm_logging_to(builder, path: str) -> None:
    """Start Spark's JVM (the Py4J gateway) with its stdout and stderr appended to `path`.

    PySpark starts the JVM with the terminal as its output, where spark-submit and log4j
    print start-up warnings a user of the CLI has no use for. PySpark's launch_gateway
    takes Popen arguments; a gateway handed to SparkContext._ensure_initialized first is
    the one the builder's SparkContext then uses. The launch needs the builder's settings
    now, as spark-submit arguments (driver memory and Java options apply only at launch).
    A JVM already running keeps writing where it wrote before."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return
    conf = SparkConf()
    for key, value in builder._options.items():
        conf.set(key, value)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "ab") as out:   # the JVM holds its own copy of the descriptor
        gateway = launch_gateway(conf, popen_kwargs={"stdout": out, "stderr": out})
    SparkContext._ensure_initialized(gateway=gateway)


def detach_accumulator_server(spark):
    """The accumulator server of `spark`'s context, detached from it so that stop() does
    not wait for its next poll (every half second); the caller shuts it down. None if
    there is none."""
    sc = getattr(spark, "_sc", None)
    server = getattr(sc, "_accumulatorServer", None)
    if server is not None:
        sc._accumulatorServer = None
    return server


def jvm_process(spark):
    """The Popen of the JVM that `spark` runs in (None when PySpark did not start it)."""
    gateway = getattr(spark.sparkContext, "_gateway", None)
    return getattr(gateway, "proc", None)


def conf_swap(spark, settings: dict[str, str]) -> dict[str, str | None]:
    """Set `settings` in `spark`'s runtime configuration; returns the values they had
    (None: not set). Through Spark Connect every `conf.get` and `conf.set` is a round
    trip: there the whole lot is read in one request and set in another, with the
    client's config request, which takes many keys where the public API takes one."""
    # a classic session's `client` raises: asked only without a JVM
    client = None if has_jvm(spark) else getattr(spark, "client", None)
    if client is None or not hasattr(client, "config"):
        before = {k: spark.conf.get(k, None) for k in settings}
        for k, v in settings.items():
            spark.conf.set(k, v)
        return before
    from pyspark.sql.connect import proto
    get = proto.ConfigRequest.GetWithDefault(pairs=[proto.KeyValue(key=k) for k in settings])
    got = client.config(proto.ConfigRequest.Operation(get_with_default=get)).pairs
    before = {k: v for k, v in got}
    conf_restore(spark, dict(settings))
    return before


def conf_restore(spark, values: dict[str, str | None]) -> None:
    """Set each key of `values` to its value, or unset it where the value is None
    (conf_swap's result): in two requests at most through Spark Connect."""
    # a classic session's `client` raises: asked only without a JVM
    client = None if has_jvm(spark) else getattr(spark, "client", None)
    if client is None or not hasattr(client, "config"):
        for k, v in values.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)
        return
    from pyspark.sql.connect import proto
    pairs = [proto.KeyValue(key=k, value=v) for k, v in values.items() if v is not None]
    unset = [k for k, v in values.items() if v is None]
    if pairs:
        client.config(proto.ConfigRequest.Operation(set=proto.ConfigRequest.Set(pairs=pairs)))
    if unset:
        client.config(proto.ConfigRequest.Operation(unset=proto.ConfigRequest.Unset(keys=unset)))
