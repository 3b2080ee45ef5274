"""Loading runs: every `results/<run-id>/` folder into Spark DataFrames.

A run folder holds `events/<node>.jsonl` (one JSON object a line, spec/EVENTS.md),
`final_state.json` and `scenario.yaml`. All runs given are read as one dataset with the
folder name as `run_id`, so the checks work on one run or on ten thousand alike.

Nothing is silently lost: a line that is not a JSON object, lacks the envelope (ts,
node, event) or has a field of the wrong type is *malformed*; it is counted and kept (in
`RunSet.malformed`, with its text), never fatal. A line with a wrongly typed field but a
sound envelope still takes part in the checks with that field null. Fields the schema
does not know ride along in `raw` (the line itself) and `extra_fields()` maps them.

Speed: nearly all lines of a large run are writes and acks (schema.BULK_EVENTS), and
parsing every line with the full schema of some 70 fields costs about twice a parse with
the envelope and the few fields those events carry. So every line is parsed once with
that narrow schema; a bulk event whose keys are provably all among the narrow fields
(see `_dense`) is kept in that form and nothing is lost; every other line (the protocol
events the checks look up again and again, and anything unusual) is parsed again in
full into a small table of its own, which `RunSet.of` scans instead of all lines. The
narrow parse is the verifier's own scanner (`jvm.BulkLine`) when a JDK could compile it,
Spark's JSON reader otherwise; both take and give the same lines (tests/verifier/test_load.py).

With that scanner the dense lines are not even kept: `jvm.DenseFold` reads every line
once, gives back those that are not dense, and folds the dense ones into the three
tables that are all the checks read of them (per-process event stats, per-block ack
sums, per-file lists of written ranges; `RunSet.folded_part`). At 10 million events
that took the verification from 77 s and 147 CPU-s to 63 s and 116 CPU-s: building the
columnar cache of ten million rows, then aggregating it again, was most of the load and
the bulk summaries (benchmarks/bench_verifier.py; tests/verifier/test_fold.py proves both
forms give the same tables). `RunSet.bulk` still gives the dense lines, read and parsed
again, for the rare query that needs them one by one.
"""

from __future__ import annotations

import dataclasses
import glob
import logging
import os
import re
import threading
import urllib.parse
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, Callable

import yaml
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession, functions as F, types as T

from minihdfs.config import Config, ConfigError
from . import jvm
from .schema import (BULK_EVENTS, CORRUPT, ENVELOPE, EVENT_SCHEMA, FIELDS,
                     FINAL_STATE_SCHEMA, KNOWN_FIELDS, NARROW_SCHEMA)
from .session import BIG_CACHE, get_spark, is_local, session_conf

log = logging.getLogger(__name__)

NAMENODE_HOLDER = "HDFS_NameNode"
# libyaml's safe loader when PyYAML has it: a suite of thousands of runs reads as many
# scenario files, ten times faster
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclasses.dataclass
class RunInfo:
    """What the driver knows about one run folder (small, plain data)."""
    run_id: str
    run_dir: str
    scenario: dict
    name: str
    config: Config
    expect: dict
    event_files: list[str]
    has_final_state: bool
    warnings: list[str]


class RunSet:
    """The loaded runs: cached event and final-state DataFrames plus per-run facts."""

    def __init__(self, spark: SparkSession, runs: dict[str, RunInfo], lines: DataFrame,
                 final: DataFrame, rare_partitions: int | None = None,
                 folded: DataFrame | None = None):
        self.spark = spark
        self.runs = runs
        self._cached: list[DataFrame] = []
        self._memo: dict[str, DataFrame] = {}
        self._memo_locks: dict[str, threading.RLock] = {}
        self._lock = threading.Lock()
        # Every line once, narrow (see the module docstring); `dense` marks the bulk
        # events that the narrow columns hold entirely. Built now, at full parallelism
        # (the rare table coalesces). Or, `folded` (jvm.fold of the same text), only the
        # lines that are not dense, and the dense ones folded into the summaries that the
        # checks read of them (`folded_part`): then `lines`, and `bulk`, are read and
        # parsed again if they are ever asked for, with the same eids.
        with session_conf(spark, BIG_CACHE):
            if folded is None:
                self.lines = self._cache(lines)
                self.lines.count()
                others = self.lines.filter(~F.col("dense"))
            else:
                self.lines = lines
                folded = self._cache(folded)
                folded.count()
                others = folded.filter(F.col("kind") == jvm.RARE)
        self.folded = folded
        bulk = self.lines.filter("dense")
        self.bulk = bulk.select(
            "run_id", "log", "eid",
            *[F.col(n) if n in bulk.columns else F.lit(None).cast(t).alias(n)
              for n, t in ENVELOPE + FIELDS],
            F.lit(False).alias("malformed"), "raw")
        # Every other line, parsed in full: few, so a few partitions, each sorted by
        # event so that a look-up of some events reads only the column batches that
        # hold them (the cache keeps each batch's least and greatest value). In local
        # mode one partition: the checks' joins, windows and aggregates over it then
        # need no exchange (session.small_queries); the two check threads keep the two
        # cores busy instead.
        if rare_partitions is None:
            rare_partitions = 1 if is_local(spark) else spark.sparkContext.defaultParallelism
        rare = (others.coalesce(rare_partitions)
                .select("run_id", "log", "eid", "raw",
                        F.from_json("raw", EVENT_SCHEMA,
                                    {"columnNameOfCorruptRecord": CORRUPT,
                                     "mode": "PERMISSIVE"}).alias("j")))
        bad_envelope = (F.col("j.ts").isNull() | F.col("j.node").isNull()
                        | F.col("j.event").isNull())
        malformed = F.col(f"j.{CORRUPT}").isNotNull() | bad_envelope
        rare = rare.select(
            "run_id", "log", "eid", *[F.col(f"j.{n}").alias(n) for n, _ in ENVELOPE + FIELDS],
            F.coalesce(bad_envelope, F.lit(True)).alias("bad_envelope"),
            F.coalesce(malformed, F.lit(True)).alias("malformed"), "raw"
        ).sortWithinPartitions("event")
        # That table is built in the background: in local mode it is one task, which
        # leaves a core free for what needs only the bulk lines (RunSet.bulk_stats)
        # and for final_state.json. Whatever reads the rare events waits for it
        # (`rare_lines`, `rare`, `events`, `malformed`). Its query is planned in that
        # thread, so a runtime setting that the caller changes at once (session_conf)
        # may apply to it: none of them changes its rows.
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rare-events")
        self._rare_built = pool.submit(self._build_rare, rare)
        pool.shutdown(wait=False)
        self.final = self._keep(final)
        self.runs_df = spark.createDataFrame(
            [(r,) for r in sorted(runs)], T.StructType([T.StructField("run_id", T.StringType())]))
        self.conf = spark.createDataFrame(
            [_conf_row(info) for info in runs.values()], CONF_SCHEMA)

    def _build_rare(self, rare: DataFrame) -> None:
        self._rare_lines = self._cache(rare)
        self._rare_lines.count()
        self._rare = self._rare_lines.filter(~F.col("bad_envelope")).drop("bad_envelope")
        self._events = self.bulk.unionByName(self._rare)
        self._malformed = (self._rare_lines.filter(F.col("malformed"))
                           .select("run_id", "log", "seq", "raw"))

    def _after_rare(name: str, doc: str) -> property:     # used in the class body only
        """A property that waits for the rare table's build, then gives `name`."""
        def get(self) -> DataFrame:
            self._rare_built.result()
            return getattr(self, name)
        return property(get, doc=doc)

    rare_lines = _after_rare("_rare_lines", "Every line but the dense ones, parsed in full "
                             "(bad_envelope and malformed marked).")
    rare = _after_rare("_rare", "The events that are not dense bulk lines, with every field.")
    events = _after_rare("_events", "Every event: the dense bulk lines and the rare events.")
    malformed = _after_rare("_malformed", "run_id, log, seq, raw of every malformed line.")
    del _after_rare

    # -- caching -------------------------------------------------------------------
    def _keep(self, df: DataFrame) -> DataFrame:
        """`df` computed now and kept (memory, spilling to disk) as a DataFrame without
        lineage: plans built on it stay small, which keeps Spark's per-query analysis
        cheap (with its lineage, every check would re-analyse the whole load). For the
        small tables: rows kept this way take more memory than a columnar cache."""
        df = df.localCheckpoint(eager=True)
        self._cached.append(df)
        return df

    def _cache(self, df: DataFrame) -> DataFrame:
        """`df` cached in columns (memory, spilling to disk) on first use: for the big
        tables, the lines and the rare events. The column batches stay Java objects:
        PySpark's MEMORY_AND_DISK is the *serialized* level (Scala's default, which
        DataFrame.cache() uses, is not), with which every scan deserialized all the
        batches of the table again, also the rare table's for each of the checks'
        look-ups, and the load serialized them. At 10 million events
        (benchmarks/bench_verifier.py) the verification took 66.5 s instead of 80-91 s,
        and 217 CPU-s in all instead of 245-260."""
        df = df.persist(StorageLevel.MEMORY_AND_DISK_DESER)
        self._cached.append(df)
        return df

    def memo(self, key: str, build: Callable[[], DataFrame]) -> DataFrame:
        """A derived DataFrame shared by several checks, computed once and kept. Checks
        run in several threads: the first to ask for a table builds it, the others wait
        for that one only."""
        with self._lock:
            lock = self._memo_locks.setdefault(key, threading.RLock())
        with lock:
            if key not in self._memo:
                self._memo[key] = self._keep(build())
            return self._memo[key]

    def close(self) -> None:
        """Release every kept DataFrame of these runs (their blocks leave memory and disk
        now, not whenever the JVM collects garbage)."""
        wait([self._rare_built])
        for df in self._cached:
            try:
                plan = df._jdf.queryExecution().logical()
                if plan.getClass().getSimpleName() == "LogicalRDD":   # a local checkpoint
                    plan.rdd().unpersist(False)
                else:
                    df.unpersist()
            except Exception:
                pass
        self._cached.clear()
        self._memo.clear()

    # -- final_state.json, flattened -------------------------------------------------
    @property
    def fs_runs(self) -> DataFrame:
        """Run ids that have a readable final_state.json."""
        return self.memo("fs_runs", lambda: self.final.filter(F.col(CORRUPT).isNull())
                         .select("run_id").distinct())

    @property
    def fs_files(self) -> DataFrame:
        """run_id, path, closed, len, replication, blocks."""
        return self.memo("fs_files", lambda: self.final
                         .select("run_id", F.explode("files").alias("f"))
                         .select("run_id", "f.path", "f.closed", "f.len", "f.replication",
                                 "f.blocks"))

    @property
    def fs_blocks(self) -> DataFrame:
        """run_id, path, replication, idx, block, gs, len, state, locations."""
        return self.memo("fs_blocks", lambda: self.fs_files
                         .select("run_id", "path", "replication",
                                 F.posexplode("blocks").alias("idx", "b"))
                         .select("run_id", "path", "replication", "idx", "b.block", "b.gs",
                                 "b.len", "b.state", "b.locations"))

    @property
    def fs_leases(self) -> DataFrame:
        """run_id, holder, path: one row per path a final lease names."""
        return self.memo("fs_leases", lambda: self.final
                         .select("run_id", F.explode("leases").alias("l"))
                         .select("run_id", F.col("l.holder").alias("holder"),
                                 F.explode("l.paths").alias("path")))

    @property
    def fs_replicas(self) -> DataFrame:
        """run_id, dn, block, gs, len, state, crc: every replica on every DataNode's disk."""
        return self.memo("fs_replicas", lambda: self.final
                         .select("run_id", F.explode("datanodes").alias("dn", "reps"))
                         .select("run_id", "dn", F.explode("reps").alias("r"))
                         .select("run_id", "dn", "r.block", "r.gs", "r.len", "r.state",
                                 "r.crc"))

    @property
    def fs_datanodes(self) -> DataFrame:
        """run_id, dn: the DataNodes final_state.json lists."""
        return self.memo("fs_datanodes", lambda: self.final
                         .select("run_id", F.explode(F.map_keys("datanodes")).alias("dn")))

    @property
    def fs_readback(self) -> DataFrame:
        """run_id, path, len, crc: each file as a client read it back."""
        return self.memo("fs_readback", lambda: self.final
                         .select("run_id", F.explode("readback").alias("path", "r"))
                         .select("run_id", "path", "r.len", "r.crc"))

    # -- per-run facts ---------------------------------------------------------------
    @property
    def event_stats(self) -> DataFrame:
        """run_id, node, role, event, events, first_ts, last_ts, len_sum: per process and
        event name, from the one pass over every event that the per-run facts need (the
        bulk lines' part, `bulk_stats`, can run while the rare events are parsed)."""
        def build():
            keys = ["run_id", "node", "role", "event"]
            return (self.bulk_stats.unionByName(_event_stats(self.rare)).groupBy(*keys)
                    .agg(F.sum("events").alias("events"), F.min("first_ts").alias("first_ts"),
                         F.max("last_ts").alias("last_ts"), F.sum("len_sum").alias("len_sum")))
        return self.memo("event_stats", build)

    @property
    def bulk_stats(self) -> DataFrame:
        """event_stats of the dense bulk lines alone."""
        def build():
            part = self.folded_part(jvm.STATS)
            if part is None:
                return _event_stats(self.bulk)
            return part.groupBy("run_id", "node", "role", "event").agg(
                F.sum("events").alias("events"), F.min("first_ts").alias("first_ts"),
                F.max("last_ts").alias("last_ts"), F.sum("len_sum").alias("len_sum"))
        return self.memo("bulk_stats", build)

    @property
    def log_stats(self) -> DataFrame:
        """run_id, log (file stem), node, lines, malformed, min_seq, max_seq, seq_ok: one
        row per event log of every run (an empty log too), for check I1. seq_ok: the seqs
        of its lines are exactly min_seq..max_seq, each once (lines without a seq aside:
        those are malformed). The simple form: it reads every line again."""
        def build():
            # the narrow parse gives the seq of the dense lines only; the others' comes
            # from their full parse
            cols = ["run_id", "log", "node", "seq"]
            every = (self.lines.filter("dense").select(*cols)
                     .unionByName(self.rare_lines.select(*cols)))
            per_log = every.groupBy("run_id", "log").agg(
                F.count(F.lit(1)).alias("lines"), F.min("node").alias("node"),
                F.min("seq").alias("min_seq"), F.max("seq").alias("max_seq"),
                F.count("seq").alias("_n"), F.countDistinct("seq").alias("_d"))
            bad = self.malformed.groupBy("run_id", "log").agg(
                F.count(F.lit(1)).alias("malformed"))
            names = [(rid, os.path.basename(f)[:-len(".jsonl")])
                     for rid, info in self.runs.items() for f in info.event_files]
            logs = self.spark.createDataFrame(names, "run_id string, log string")
            j = (logs.join(per_log, ["run_id", "log"], "left")
                 .join(bad, ["run_id", "log"], "left"))
            seq_ok = F.coalesce((F.col("_n") == F.col("_d"))
                                & (F.col("max_seq") - F.col("min_seq") + 1 == F.col("_d")),
                                F.col("_n") == 0, F.lit(True))
            return j.select("run_id", "log", "node",
                            F.coalesce("lines", F.lit(0)).cast("long").alias("lines"),
                            F.coalesce("malformed", F.lit(0)).cast("long").alias("malformed"),
                            "min_seq", "max_seq", seq_ok.alias("seq_ok"))
        return self.memo("log_stats", build)

    def folded_part(self, kind: int) -> DataFrame | None:
        """The partial summaries of the dense lines of one `kind` (jvm.STATS, ACKS,
        WRITES) that the loader folded them into, a row per key and partition (see
        DenseFold.java for their columns); None when the loader kept the lines instead."""
        if self.folded is None:
            return None
        return self.folded.filter(F.col("kind") == kind)

    @property
    def node_facts(self) -> DataFrame:
        """run_id, node, role, first_ts, last_ts, events: each process's log span (a row
        per role it logged under)."""
        return self.memo("node_facts", lambda: self.event_stats.groupBy("run_id", "node", "role")
                         .agg(F.min("first_ts").alias("first_ts"),
                              F.max("last_ts").alias("last_ts"),
                              F.sum("events").alias("events")))

    @property
    def bounds(self) -> DataFrame:
        """run_id, start_ts, end_ts: the first and last event of each run."""
        return self.memo("bounds", lambda: self.node_facts.groupBy("run_id")
                         .agg(F.min("first_ts").alias("start_ts"),
                              F.max("last_ts").alias("end_ts")))

    def of(self, *names: str) -> DataFrame:
        """The events with one of these names (the rare ones from their small table)."""
        names = list(names)
        rare = self.rare.filter(F.col("event").isin(names))
        bulk = [n for n in names if n in BULK_EVENTS]
        if not bulk:
            return rare
        return self.bulk.filter(F.col("event").isin(bulk)).unionByName(rare)

    def malformed_summary(self, sample: int = 5) -> dict[str, dict]:
        """{run_id: {"count": n, "sample": [{"log", "line"}]}} for runs with bad lines."""
        from pyspark.sql.window import Window
        w = Window.partitionBy("run_id").orderBy("log", "seq")
        rows = (self.malformed
                .withColumn("n", F.count(F.lit(1)).over(Window.partitionBy("run_id")))
                .withColumn("rn", F.row_number().over(w))
                .filter(F.col("rn") <= sample)
                .select("run_id", "n", "log", F.substring("raw", 1, 300).alias("line"))
                .collect())
        out: dict[str, dict] = {}
        for r in rows:
            d = out.setdefault(r["run_id"], {"count": r["n"], "sample": []})
            d["sample"].append({"log": r["log"], "line": r["line"]})
        for rid, info in self.runs.items():
            for w_ in info.warnings:
                d = out.setdefault(rid, {"count": 0, "sample": []})
                d.setdefault("warnings", []).append(w_)
        return out


def _event_stats(events: DataFrame) -> DataFrame:
    return (events.groupBy("run_id", "node", "role", "event")
            .agg(F.count(F.lit(1)).alias("events"), F.min("ts").alias("first_ts"),
                 F.max("ts").alias("last_ts"), F.sum("len").alias("len_sum")))


def extra_fields(df: DataFrame) -> DataFrame:
    """Adds `extra`: a map of the fields of each line that the event schema does not know
    (empty for a line kept without its text: it has none)."""
    known = F.array(*[F.lit(k) for k in sorted(KNOWN_FIELDS)])
    m = F.from_json("raw", T.MapType(T.StringType(), T.StringType()))
    extra = F.map_filter(m, lambda k, v: ~F.array_contains(known, k))
    return df.withColumn("extra", F.when(F.col("raw").isNull(), F.create_map()
                                         .cast("map<string,string>")).otherwise(extra))


CONF_SCHEMA = T.StructType([
    T.StructField("run_id", T.StringType()),
    T.StructField("soft_limit", T.DoubleType()),
    T.StructField("hard_limit", T.DoubleType()),
    T.StructField("lease_recheck", T.DoubleType()),
    T.StructField("heartbeat", T.DoubleType()),
    T.StructField("conf_replication", T.LongType()),
    T.StructField("conf_policy", T.StringType()),
    T.StructField("replace_enable", T.BooleanType()),
    T.StructField("best_effort", T.BooleanType()),
])


def _conf_row(info: RunInfo) -> tuple:
    c = info.config
    return (info.run_id, float(c["lease.soft-limit"]), float(c["lease.hard-limit"]),
            float(c["dfs.namenode.lease-recheck-interval-ms"]),
            float(c["dfs.heartbeat.interval"]), int(c["dfs.replication"]),
            c["dfs.client.block.write.replace-datanode-on-failure.policy"],
            bool(c["dfs.client.block.write.replace-datanode-on-failure.enable"]),
            bool(c["dfs.client.block.write.replace-datanode-on-failure.best-effort"]))


def read_run_info(run_dir: str) -> RunInfo:
    """The driver-side facts of one run folder: scenario, config, expect, files."""
    run_dir = os.path.abspath(run_dir)
    run_id = os.path.basename(run_dir.rstrip("/"))
    warnings: list[str] = []
    scenario: dict = {}
    sc_path = os.path.join(run_dir, "scenario.yaml")
    if os.path.exists(sc_path):
        try:
            with open(sc_path, encoding="utf-8") as f:
                scenario = yaml.load(f, Loader=_YAML_LOADER) or {}
            if not isinstance(scenario, dict):
                warnings.append("scenario.yaml is not a mapping; ignored")
                scenario = {}
        except yaml.YAMLError as exc:
            warnings.append(f"scenario.yaml does not parse: {exc}".splitlines()[0])
    else:
        warnings.append("no scenario.yaml: defaults assumed")
    cluster = scenario.get("cluster") or {}
    raw_conf = cluster.get("config") if isinstance(cluster, dict) else None
    try:
        config = Config(raw_conf if isinstance(raw_conf, dict) else {})
    except ConfigError as exc:
        warnings.append(f"cluster.config: {exc}; Hadoop defaults assumed")
        config = Config({})
    expect = scenario.get("expect") or {}
    if not isinstance(expect, dict):
        warnings.append("expect: is not a mapping; ignored")
        expect = {}
    files = sorted(glob.glob(os.path.join(run_dir, "events", "*.jsonl")))
    if not files:
        warnings.append("no events/*.jsonl")
    return RunInfo(run_id=run_id, run_dir=run_dir, scenario=scenario,
                   name=str(scenario.get("name") or run_id), config=config, expect=expect,
                   event_files=files,
                   has_final_state=os.path.exists(os.path.join(run_dir, "final_state.json")),
                   warnings=warnings)


def load_runs(run_dirs: list[str], spark: SparkSession | None = None,
              keep_raw: bool = False, fold: bool | None = None) -> RunSet:
    """Read the given run folders into one RunSet (Spark reads and parses them now).

    `raw` holds the text of every line except the bulk events whose keys are all known
    and set (those have no unknown field to keep); `keep_raw` keeps theirs too.
    `fold` (default: unless `keep_raw`, when the verifier's JVM code is loaded) keeps
    only the summaries of the dense lines that the checks read (jvm.DenseFold), not the
    lines themselves.
    """
    spark = spark or get_spark()
    infos: dict[str, RunInfo] = {}
    for d in run_dirs:
        info = read_run_info(d)
        if info.run_id in infos:
            raise ValueError(f"two run folders are both named {info.run_id!r} "
                             f"({infos[info.run_id].run_dir} and {info.run_dir}); "
                             "run ids must be unique")
        infos[info.run_id] = info
    files = [f for info in infos.values() for f in info.event_files]
    if fold is None:
        fold = not keep_raw and jvm.available(spark)
    if fold and keep_raw:
        raise ValueError("fold keeps no text of the dense lines: it cannot go with keep_raw")
    if fold and not jvm.available(spark):
        raise ValueError("fold needs the verifier's JVM code, which is not loaded "
                         "(a JDK's javac builds it; HDFS_CHAOS_FAST_PARSE=0 turns it off)")
    text = _read_text(spark, files)
    return RunSet(spark, infos, _read_lines(spark, text, keep_raw),
                  _read_final(spark, [i.run_dir for i in infos.values() if i.has_final_state]),
                  folded=jvm.fold(text) if fold else None)


def _path_part(col: str, index: int):
    """The `index`-th part (from the end) of a file URI: a folder or file name (the
    per-row form of `_file_parts`, for a file it does not know)."""
    part = F.substring_index(F.substring_index(F.col(col), "/", index), "/", 1)
    # the URI escapes odd characters as %XX; url_decode would also read '+' as a space
    return F.when(part.contains("%"), F.url_decode(F.replace(part, F.lit("+"), F.lit("%2B")))
                  ).otherwise(part)


def _file_parts(spark: SparkSession, df: DataFrame, suffix: str = "", **parts: int
                ) -> DataFrame:
    """`file` (a file URI as `_metadata.file_path` gives it) and, for each name in
    `parts`, the part of the path at that index from the end (less `suffix` at its
    end), for every file `df` reads. Joined on `file`, it names the rows of a file
    once per file: cutting the parts out of every row's path took an eighth of the
    load's CPU at 10 million events (JFR profile, benchmarks/bench_verifier.py)."""
    rows = []
    for uri in df.inputFiles():
        names = urllib.parse.unquote(urllib.parse.urlsplit(uri).path).split("/")
        picked = [names[i] if len(names) >= -i else None for i in parts.values()]
        picked = [p[:-len(suffix)] if suffix and p and p.endswith(suffix) else p
                  for p in picked]
        # inputFiles() writes a local file file:///x, _metadata.file_path file:/x
        for form in {uri, re.sub(r"^([a-z][a-z0-9+.-]*):///", r"\1:/", uri)}:
            rows.append((form, *picked))
    return spark.createDataFrame(rows, T.StructType(
        [T.StructField("file", T.StringType())]
        + [T.StructField(name, T.StringType()) for name in parts]))


def _dense(value: Column, parsed: str, fields: list[str]) -> Column:
    """True when the line `value`, parsed into the struct column `parsed` with the narrow
    schema, is a bulk event that those fields hold entirely: it parsed cleanly, has the
    envelope, and has no other key. The last is proved by counting: every key of a JSON
    object is followed by one colon, so a line has at least as many colons as keys, and
    at least as many keys as non-null fields; equal counts leave no room for another key
    (a colon in a string, a nested object, a null or a repeated key only make a line
    count as not dense, and be parsed in full)."""
    colons = F.size(F.split(value, ":", -1)) - 1
    set_fields = sum((F.col(f"{parsed}.{n}").isNotNull().cast("int") for n in fields), F.lit(0))
    return (F.col(f"{parsed}.event").isin(list(BULK_EVENTS))
            & F.col(f"{parsed}.{CORRUPT}").isNull()
            & F.col(f"{parsed}.ts").isNotNull() & F.col(f"{parsed}.node").isNotNull()
            & (colons == set_fields))


def _read_text(spark: SparkSession, files: list[str]) -> DataFrame:
    """run_id, log, value: every line of `files`, named by its run folder and log file."""
    if files:
        read = spark.read.text(files)
        names = _file_parts(spark, read, ".jsonl", _run=-3, _log=-1)
        text = (read.select("value", F.col("_metadata.file_path").alias("file"))
                .join(F.broadcast(names), "file", "left"))
    else:
        text = spark.createDataFrame([], "value string, file string, _run string, _log string")
    return text.select(
        F.coalesce("_run", _path_part("file", -3)).alias("run_id"),
        F.coalesce("_log", F.regexp_replace(_path_part("file", -1), r"\.jsonl$", "")).alias("log"),
        "value")


def _read_lines(spark: SparkSession, text: DataFrame, keep_raw: bool,
                fast: bool | None = None) -> DataFrame:
    """run_id, log, eid, the envelope and narrow fields, dense, raw: every line of `text`
    (`_read_text`) once.

    The narrow fields are those of the dense lines (the others are parsed again in
    full). `fast` (default: when it is loaded) finds and parses the dense lines with the
    verifier's own scanner (jvm.BulkLine), which takes a fifth of the time of Spark's
    JSON reader; without it, the JSON reader and `_dense` do."""
    fields = [f.name for f in NARROW_SCHEMA.fields if f.name != CORRUPT]
    if fast is None:
        fast = jvm.available(spark)
    if fast:
        parsed = F.call_udf(jvm.UDF_NAME, F.col("value"))
    else:
        parsed = F.from_json("value", NARROW_SCHEMA,
                             {"columnNameOfCorruptRecord": CORRUPT, "mode": "PERMISSIVE"})
    parsed = text.select("run_id", "log", parsed.alias("j"), "value")
    dense = (F.col("j.dense") if fast
             else F.coalesce(_dense(F.col("value"), "j", fields), F.lit(False)))
    # the eid of a line is its place in its partition of `text`: jvm.DenseFold gives
    # the lines it folds the same
    return parsed.select(
        "run_id", "log", F.monotonically_increasing_id().alias("eid"),
        *[F.col(f"j.{n}").alias(n) for n in fields],
        dense.alias("dense"),
        (F.col("value") if keep_raw else F.when(~dense, F.col("value"))).alias("raw"))


def _read_final(spark: SparkSession, run_dirs: list[str]) -> DataFrame:
    paths = [os.path.join(d, "final_state.json") for d in run_dirs]
    if paths:
        df = (spark.read.schema(FINAL_STATE_SCHEMA)
              .option("multiLine", True).option("mode", "PERMISSIVE")
              .option("columnNameOfCorruptRecord", CORRUPT).json(paths))
        names = _file_parts(spark, df, _run=-2)
        return (df.withColumn("file", F.col("_metadata.file_path"))
                .join(F.broadcast(names), "file", "left")
                .withColumn("run_id", F.coalesce("_run", _path_part("file", -2)))
                .drop("file", "_run"))
    # a new type: StructType.add would change the shared schema itself
    return spark.createDataFrame([], T.StructType(
        FINAL_STATE_SCHEMA.fields + [T.StructField("run_id", T.StringType())]))


def scenario_name(info: RunInfo) -> str:
    return info.name


def as_jsonable(value: Any) -> Any:
    """Spark Row / numpy values to plain JSON values."""
    if hasattr(value, "asDict"):
        return {k: as_jsonable(v) for k, v in value.asDict(recursive=False).items()}
    if isinstance(value, dict):
        return {k: as_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_jsonable(v) for v in value]
    return value
