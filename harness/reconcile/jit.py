"""Which code of the verifier's JVM HotSpot's optimising compiler (C2) may spend a core on.

On a 2-core machine the JIT competes with the work it speeds up. C2 pays off on the hot
loops of the data path: the line scanner, the columnar cache, the bulk aggregates. It
does not pay off on Spark's planning code, which the checks run through a few hundred
times each (analysis, optimisation, planning of small queries): a 10M-event JFR
recording (benchmarks/bench_verifier.py) had the one C2 compiler thread busy without
a break for the whole checks phase, compiling Catalyst, Janino and Py4J methods, so one
core of two went to making code faster that would not run long enough to repay it.
HotSpot's compiler directives say which methods C2 leaves alone; such a method is
compiled by C1 at its full-optimisation level (tier 1) instead. So:

- `keep_planning_on_c1`, once per JVM: Spark's planning packages (PLANNING) never go to C2;
- `c1_only`, around the checks: nothing new goes to C2 while the many small queries run;
  what C2 compiled for the load and the bulk summaries stays compiled.

The directives are added through the DiagnosticCommand MBean (`jcmd Compiler.directives_add`
from inside the JVM). A JVM without it (not HotSpot) runs as before, after one warning;
HDFS_CHAOS_JIT_DIRECTIVES=0 turns both off (to compare, or to rule them out).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import tempfile
import threading

log = logging.getLogger(__name__)

# Packages whose code runs on the driver to plan queries, never over the rows of a task.
PLANNING = [
    "org/apache/spark/sql/catalyst/analysis/", "org/apache/spark/sql/catalyst/optimizer/",
    "org/apache/spark/sql/catalyst/trees/", "org/apache/spark/sql/catalyst/plans/",
    "org/apache/spark/sql/catalyst/rules/", "org/apache/spark/sql/catalyst/parser/",
    "org/apache/spark/sql/execution/adaptive/", "org/codehaus/", "py4j/", "org/antlr/",
    "org/apache/xbean/",
]
PLANNING_DIRECTIVE = [{"match": [p + "*.*" for p in PLANNING], "c2": {"Exclude": True}}]
ALL_DIRECTIVE = [{"match": ["*.*"], "c2": {"Exclude": True}}]

_MBEAN = "com.sun.management:type=DiagnosticCommand"
_lock = threading.Lock()
_c1_only_depth = 0
_warned = False


def enabled() -> bool:
    """False when HDFS_CHAOS_JIT_DIRECTIVES is 0/false/no/off."""
    return os.environ.get("HDFS_CHAOS_JIT_DIRECTIVES", "1").strip().lower() not in (
        "0", "false", "no", "off")


def _dcmd(spark, op: str, *args: str) -> str:
    """Runs the diagnostic command `op` (its MBean name, e.g. compilerDirectivesAdd) in
    `spark`'s driver JVM and returns what it printed."""
    gw = spark.sparkContext._gateway
    jvm = gw.jvm

    def array(cls, items: list):
        out = gw.new_array(cls, len(items))
        for i, item in enumerate(items):
            out[i] = item
        return out

    server = jvm.java.lang.management.ManagementFactory.getPlatformMBeanServer()
    # through the interface's Method: Py4J looks methods up on the object's own class,
    # which lives in a package that the java.management module does not export
    invoke = jvm.java.lang.Class.forName("javax.management.MBeanServer").getMethod(
        "invoke", array(jvm.java.lang.Class, [
            jvm.java.lang.Class.forName(c) for c in (
                "javax.management.ObjectName", "java.lang.String", "[Ljava.lang.Object;",
                "[Ljava.lang.String;")]))
    params = array(jvm.java.lang.Object, [array(jvm.java.lang.String, list(args))])
    call = array(jvm.java.lang.Object, [jvm.javax.management.ObjectName(_MBEAN), op, params,
                                      array(jvm.java.lang.String, ["[Ljava.lang.String;"])])
    return str(invoke.invoke(server, call) or "")


def _add(spark, directive: list[dict]) -> bool:
    global _warned
    try:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(directive, f)
        try:
            out = _dcmd(spark, "compilerDirectivesAdd", f.name)
        finally:
            os.unlink(f.name)
        if "added" not in out:
            raise RuntimeError(out.strip().splitlines()[-1] if out.strip() else "no answer")
        return True
    except Exception as exc:      # not HotSpot, no management beans: just slower
        if not _warned:
            _warned = True
            log.warning("cannot steer the JVM's JIT compiler (%s); the checks run as before, "
                        "more slowly on few cores", str(exc).splitlines()[0][:200])
        return False


def keep_planning_on_c1(spark) -> bool:
    """Adds PLANNING_DIRECTIVE to `spark`'s driver JVM, once; True when it is in place."""
    if not enabled():
        return False
    sc = spark.sparkContext
    with _lock:
        if not getattr(sc, "_hdfs_chaos_planning_c1", False):
            sc._hdfs_chaos_planning_c1 = _add(spark, PLANNING_DIRECTIVE)
        return sc._hdfs_chaos_planning_c1


@contextlib.contextmanager
def c1_only(spark):
    """Nothing new is compiled by C2 inside the block (in this thread or any other:
    the directive is the JVM's); blocks may overlap, the last one out lifts it."""
    global _c1_only_depth
    added = False
    if enabled():
        with _lock:
            if _c1_only_depth == 0:
                added = _add(spark, ALL_DIRECTIVE)
                _c1_only_depth = 1 if added else 0
            else:
                _c1_only_depth += 1
                added = True
    try:
        yield
    finally:
        if added:
            with _lock:
                _c1_only_depth -= 1
                if _c1_only_depth == 0:
                    try:      # the latest directive: ALL_DIRECTIVE (PLANNING's is older)
                        _dcmd(spark, "compilerDirectivesRemove")
                    except Exception as exc:
                        log.warning("cannot lift the JIT directive (%s); C2 stays off for "
                                    "new code in this process", str(exc).splitlines()[0][:200])


def directives(spark) -> list[tuple[list[str], bool]]:
    """The JVM's directive stack now, newest first: each directive's method patterns
    and whether it keeps them from C2 (parsed from jcmd Compiler.directives_print)."""
    out = []
    for block in _dcmd(spark, "compilerDirectivesPrint").split("Directive:")[1:]:
        match = re.search(r"matching: (.*)", block)
        c2 = block.split("c2 directives:", 1)[-1]
        out.append(([p.strip() for p in match.group(1).split(",")] if match else [],
                    "Exclude:true" in c2))
    return out
