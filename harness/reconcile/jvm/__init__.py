"""The verifier's own JVM code: `BulkLine.java`, the loader's fast path for bulk lines,
`DenseFold.java`, which folds those lines into the few sums the checks read of them as
it reads them (load.py), and `FileLayout.java`, which lays out each file's written
ranges for D2 (checks/data.py) in one pass over the file's list instead of two window
sorts over every write.

Nearly every line of a large run is a plain client.write or client.ack. Spark's JSON
reader parses one in about 1.9 microseconds of a core; BulkLine, a strict scanner that
knows only those lines' dozen fields, in about 0.4 (3 million lines: 5.6 -> 1.2 s on top
of reading them). They are compiled on first use with the
JDK's `javac` against pyspark's own jars, into a jar in the user's cache folder
(`$HDFS_CHAOS_CACHE`, else `$XDG_CACHE_HOME/hdfs-chaos`, else `~/.cache/hdfs-chaos`),
named by a hash of the sources and the Spark version so that an upgrade of either builds
it anew. Without a JDK (a JRE has no javac) or with HDFS_CHAOS_FAST_PARSE=0 the loader
parses every line with Spark's JSON reader and D2 uses window functions: slower, same
results (tests/verifier/test_load.py, test_layout.py).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import threading
import zipfile

log = logging.getLogger(__name__)

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = [os.path.join(HERE, name)
           for name in ("BulkLine.java", "DenseFold.java", "FileLayout.java")]
CLASS = "hdfschaos.BulkLine"
UDF_NAME = "hdfs_chaos_bulk_line"
LAYOUT_CLASS = "hdfschaos.FileLayout"
LAYOUT_UDF = "hdfs_chaos_file_layout"
# BulkLine's result, in its field order: the narrow fields, then `dense`
FIELD_ORDER = ("ts", "node", "role", "seq", "event", "path", "block", "offset", "len",
               "crc", "seqno", "acked")

_lock = threading.Lock()
_built: dict[str, str | None] = {}


def enabled() -> bool:
    """False when HDFS_CHAOS_FAST_PARSE is 0/false/no/off (every line through Spark's
    JSON reader)."""
    return os.environ.get("HDFS_CHAOS_FAST_PARSE", "1").strip().lower() not in (
        "0", "false", "no", "off")


def cache_dir() -> str:
    base = os.environ.get("HDFS_CHAOS_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "hdfs-chaos")
    return os.path.join(base, "jvm")


def _javac() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "javac"), os.X_OK):
        return os.path.join(home, "bin", "javac")
    return shutil.which("javac")


def jar() -> str | None:
    """The path of the compiled jar, built now if it is not in the cache yet; None (with
    one warning) when it cannot be built, or when the fast path is turned off."""
    if not enabled():
        return None
    path = os.path.join(cache_dir(), f"hdfs-chaos-jvm-{_digest()}.jar")
    with _lock:
        if path not in _built:
            _built[path] = path if os.path.exists(path) else _build(path)
        return _built[path]


@functools.lru_cache(maxsize=1)
def _digest() -> str:
    """What names the jar: a hash of the sources and the Spark version (read once)."""
    import pyspark
    h = hashlib.sha256()
    for src in SOURCES:
        with open(src, "rb") as f:
            h.update(f.read())
    h.update(pyspark.__version__.encode())
    return h.hexdigest()[:16]


def _build(path: str) -> str | None:
    import pyspark
    javac = _javac()
    if javac is None:
        log.warning("no javac (a JDK 17+) on PATH or in JAVA_HOME: the verifier parses "
                    "every log line with Spark's JSON reader and lays out D2's ranges with "
                    "window functions (slower; same results)")
        return None
    classpath = os.path.join(os.path.dirname(pyspark.__file__), "jars", "*")
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with tempfile.TemporaryDirectory(dir=os.path.dirname(path)) as tmp:
            classes = os.path.join(tmp, "classes")
            proc = subprocess.run(
                [javac, "--release", "17", "-nowarn", "-d", classes, "-cp", classpath, *SOURCES],
                capture_output=True, text=True, timeout=300)
            if proc.returncode != 0:
                raise RuntimeError((proc.stderr or proc.stdout).strip().splitlines()[0])
            staged = os.path.join(tmp, "out.jar")
            with zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n\r\n")
                for root, _, names in os.walk(classes):
                    for name in sorted(names):
                        full = os.path.join(root, name)
                        z.write(full, os.path.relpath(full, classes))
            os.replace(staged, path)     # atomic: a concurrent build leaves one whole jar
        return path
    except Exception as exc:  # no disk space, a broken JDK: the slow path still works
        log.warning("cannot build the verifier's JVM helpers (%s: %s); every log line "
                    "goes through Spark's JSON reader and D2 lays out ranges with window "
                    "functions (slower; same results)",
                    type(exc).__name__, str(exc)[:300])
        return None


def return_type():
    """BulkLine's result type: the narrow fields (their NARROW_SCHEMA types) and dense."""
    from pyspark.sql import types as T
    from ..schema import NARROW_SCHEMA
    types = {f.name: f.dataType for f in NARROW_SCHEMA.fields}
    return T.StructType([T.StructField(n, types[n]) for n in FIELD_ORDER]
                        + [T.StructField("dense", T.BooleanType())])


def layout_type():
    """FileLayout's result type (see FileLayout.java)."""
    from pyspark.sql import types as T
    return T.StructType([
        T.StructField("gap_at", T.LongType()), T.StructField("covered", T.LongType()),
        T.StructField("partial", T.IntegerType()),
        T.StructField("crc", T.LongType())])


def register(spark) -> bool:
    """Registers BulkLine as UDF_NAME and FileLayout as LAYOUT_UDF in `spark` (started
    with jar() in spark.jars); False when the classes are not there."""
    if not enabled():
        return False
    try:
        spark.udf.registerJavaFunction(UDF_NAME, CLASS, return_type())
        spark.udf.registerJavaFunction(LAYOUT_UDF, LAYOUT_CLASS, layout_type())
        return True
    except Exception as exc:
        log.warning("the verifier's JVM helpers are not loaded (%s); every log line goes "
                    "through Spark's JSON reader", str(exc).splitlines()[0][:200])
        return False


# DenseFold's `kind` of row
RARE, STATS, ACKS, WRITES = 0, 1, 2, 3


def fold(text):
    """`text` (run_id, log, value) folded by DenseFold: a row per line that is not dense
    and per partial summary of the dense ones (see DenseFold.java). Needs the jar loaded
    (`available`)."""
    from pyspark.sql import DataFrame
    spark = text.sparkSession
    return DataFrame(spark._jvm.hdfschaos.DenseFold.fold(text._jdf), spark)


def available(spark, udf: str = UDF_NAME) -> bool:
    """True when the fast path is on and `udf` (BulkLine's by default) is registered in
    `spark`."""
    return enabled() and spark.catalog.functionExists(udf)
