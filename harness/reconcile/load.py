"""Loading runs: every `results/<run-id>/` folder into Spark DataFrames.

A run folder holds `events/<node>.jsonl` (one JSON object a line, spec/EVENTS.md),
`final_state.json` and `scenario.yaml`. All runs given are read as one dataset with the
folder name as `run_id`, so the checks work on one run or on ten thousand alike.

Nothing is silently lost: a line that is not a JSON object, lacks the envelope (ts,
node, event) or has a field of the wrong type is *malformed*; it is counted and kept (in
`RunSet.malformed`, with its text), never fatal. A line with a wrongly typed field but a
sound envelope still takes part in the checks with that field null. Fields the schema
does not know ride along in `raw` (the line itself) and `extra_fields()` maps them.

How, all of it Spark's own engine (no code of ours in the JVM):

1. One pass over the text. Spark's JSON reader parses every line with the narrow schema
   (schema.NARROW_SCHEMA: the envelope and the dozen fields of client.write and
   client.ack, a third of the cost of the full schema). A write or ack whose keys are
   provably all among those fields (`_dense`) is *dense*: the narrow columns hold it
   whole.
2. In that same pass, one grouped aggregation (`_fold`) folds the dense lines into a
   row per log, process, event, path, block and stream: counts, time spans, byte sums,
   the greatest ack, each stream's first and last write. Spark's partial
   aggregation does the folding inside each task, so the millions of dense lines never
   leave it. A line that is not dense is its own group (its text is part of the key):
   it comes out of the same pass as itself, and is parsed again, in full, into a small
   table of its own (`rare`), which `RunSet.of` scans instead of all lines.
3. Everything the checks read of the dense lines is a query over the folded table
   (`event_stats`, `folded`, `log_stats`); `bulk` (the dense lines one by one) is read
   and parsed again only if asked for.

Per-line expressions stay byte-wise (replace(), not translate()): they run on every line
of every log (benchmarks/bench_verifier.py measures the load).

Event ids: `eid` = log number << 32 | seq, where the log number is the place of the
log file among all the RunSet's logs sorted by (run_id, log file name). Any tool can
recompute it from the run folders; it orders events of equal `ts` by run, log and seq.
A line without a usable seq (0 <= seq < 2^32) gets log number << 32 | 2^31 | (CRC-32
of its text mod 2^31) instead (such a log fails integrity check I1 anyway, through
`log_stats`).
"""

from __future__ import annotations

import dataclasses
import glob
import logging
import os
import re
import threading
import urllib.parse
import weakref
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, Callable

import yaml
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession, functions as F, types as T

from hdfs_contract.config import Config, ConfigError
from .schema import (BULK_EVENTS, CORRUPT, ENVELOPE, EVENT_SCHEMA, FIELDS,
                     FINAL_STATE_SCHEMA, KNOWN_FIELDS, NARROW_SCHEMA)
from .session import default_parallelism, get_spark, is_local
from .sparkjvm import cached_leaf, has_jvm, release

log = logging.getLogger(__name__)

# the NameNode's own lease holder, a prefix: 3.x names it HDFS_NameNode-<time>
NAMENODE_HOLDER = "HDFS_NameNode"
# libyaml's safe loader when PyYAML has it: a suite of thousands of runs reads as many
# scenario files, ten times faster
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# log_stats folds a log's seqs into one 64-bit word of presence bits per 2^6 seqs
SEQ_WORD_BITS = 6
# how many missing seq ranges and repeated seqs the evidence of a torn log names
SEQ_SAMPLE = 10
_NARROW = [f.name for f in NARROW_SCHEMA.fields if f.name != CORRUPT]


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
    """The loaded runs: the folded lines, the rare events, final state and per-run facts."""

    def __init__(self, spark: SparkSession, runs: dict[str, RunInfo], files: list[tuple],
                 final: DataFrame, keep_raw: bool = False, rare_partitions: int | None = None,
                 columnar: bool = True):
        self.spark = spark
        self.runs = runs
        self.keep_raw = keep_raw
        self.columnar = columnar
        # (run_id, log, log_no, path) of every event file, in log-number order
        self.files = files
        self._cached: list[DataFrame] = []
        self._memo: dict[str, DataFrame] = {}
        self._memo_locks: dict[str, threading.RLock] = {}
        self._lock = threading.Lock()
        # the one pass over every line (module docstring), at full parallelism
        fold = self._cache(_fold(_narrow_lines(_read_text(spark, files))))
        if columnar:    # as rows (_keep) it is computed already
            fold.count()
        self.fold = fold
        self.folded = fold.filter(F.col("rare").isNull()).drop("rare")
        # Every line that is not dense, parsed in full: few, so a few partitions, each
        # sorted by event so that a look-up of some events reads only the column batches
        # that hold them (the cache keeps each batch's least and greatest value). In local
        # mode one partition: the checks' joins, windows and aggregates over it then need
        # no exchange (session.small_queries); the two check threads keep the two cores
        # busy instead.
        if rare_partitions is None:
            rare_partitions = 1 if is_local(spark) else default_parallelism(spark)
        rare = (fold.filter(F.col("rare").isNotNull()).coalesce(rare_partitions)
                .select("run_id", "log", "log_no",
                        F.explode(F.array_repeat("rare", F.col("n").cast("int"))).alias("raw"))
                .select("run_id", "log", "log_no", "raw",
                        F.from_json("raw", EVENT_SCHEMA,
                                    {"columnNameOfCorruptRecord": CORRUPT,
                                     "mode": "PERMISSIVE"}).alias("j")))
        # Spark's reader takes NaN and Infinity, which JSON does not have: not a time
        bad_envelope = (F.col("j.ts").isNull() | F.isnan("j.ts")
                        | (F.abs("j.ts") == float("inf"))
                        | F.col("j.node").isNull() | F.col("j.event").isNull())
        malformed = F.col(f"j.{CORRUPT}").isNotNull() | bad_envelope
        rare = rare.select(
            "run_id", "log", _eid(F.col("log_no"), F.col("j.seq"), F.col("raw")).alias("eid"),
            *[F.col(f"j.{n}").alias(n) for n, _ in ENVELOPE + FIELDS],
            F.coalesce(bad_envelope, F.lit(True)).alias("bad_envelope"),
            F.coalesce(malformed, F.lit(True)).alias("malformed"), "raw"
        ).sortWithinPartitions("event")
        # That table is built in the background: in local mode it is one task, which
        # leaves a core free for what needs only the folded lines (the bulk summaries)
        # and for final_state.json. Whatever reads the rare events waits for it.
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
        if self.columnar:
            self._rare_lines.count()
        self._rare = self._rare_lines.filter(~F.col("bad_envelope")).drop("bad_envelope")
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
    malformed = _after_rare("_malformed", "run_id, log, seq, raw of every malformed line.")
    del _after_rare

    @property
    def bulk(self) -> DataFrame:
        """The dense lines one by one (run_id, log, eid, every field, malformed, raw):
        the text is read and parsed again by every query over it (nothing is kept: the
        checks read the folded table; a query here usually wants a few of the lines).
        `raw` is null unless the runs were loaded with keep_raw (a dense line has no
        field the schema lacks)."""
        def build():
            lines = _narrow_lines(_read_text(self.spark, self.files)).filter("dense")
            return lines.select(
                "run_id", "log", _eid(F.col("log_no"), F.col("seq"), F.col("value")).alias("eid"),
                *[F.col(n) if n in _NARROW else F.lit(None).cast(t).alias(n)
                  for n, t in ENVELOPE + FIELDS],
                F.lit(False).alias("malformed"),
                (F.col("value") if self.keep_raw else F.lit(None).cast("string")).alias("raw"))
        return self._memo_of("bulk", build)

    def lines_of(self, logs: set[tuple[str, str]], event: str | None = None) -> DataFrame:
        """The lines of some logs, read again and parsed narrowly (run_id, log, log_no,
        value, the narrow fields, dense): `logs` holds (run_id, log) pairs; a pair that
        names no log file (a node that logged elsewhere) reads every log of its run.
        `event`: only lines whose text holds that name are parsed (the others cannot be
        that event)."""
        names = {(rid, name) for rid, name, _, _ in self.files}
        runs_whole = {rid for rid, name in logs if (rid, name) not in names}
        picked = [f for f in self.files if (f[0], f[1]) in logs or f[0] in runs_whole]
        text = _read_text(self.spark, picked)
        if event is not None:
            text = text.filter(F.col("value").contains(event))
        return _narrow_lines(text)

    @property
    def events(self) -> DataFrame:
        """Every event: the dense bulk lines (read again, see `bulk`) and the rare events."""
        return self.bulk.unionByName(self.rare)

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
        """`df` cached in columns (memory, spilling to disk) on first use. The column
        batches stay Java objects: PySpark's MEMORY_AND_DISK is the *serialized* level,
        with which every scan deserializes all the batches again.

        Unless `columnar` is off (small inputs, ROW_CACHE_BYTES): then kept as rows,
        like the memo tables. Every scan of a column cache runs a column accessor that
        Spark generates and compiles for the columns it reads, whatever the codegen
        settings, and the checks read some hundred different column sets; the batches'
        statistics that let a scan skip most of a large table are no gain on a few
        thousand rows."""
        if not self.columnar:
            return self._keep(df)
        df = df.persist(StorageLevel.MEMORY_AND_DISK_DESER)
        self._cached.append(df)
        return cached_leaf(df)

    def memo(self, key: str, build: Callable[[], DataFrame]) -> DataFrame:
        """A derived DataFrame shared by several checks, computed once and kept. Checks
        run in several threads: the first to ask for a table builds it, the others wait
        for that one only."""
        return self._memo_of(key, lambda: self._keep(build()))

    def _memo_of(self, key: str, make: Callable[[], DataFrame]) -> DataFrame:
        with self._lock:
            lock = self._memo_locks.setdefault(key, threading.RLock())
        with lock:
            if key not in self._memo:
                self._memo[key] = make()
            return self._memo[key]

    def close(self) -> None:
        """Release every kept DataFrame of these runs (their blocks leave memory and disk
        now, not whenever the JVM collects garbage)."""
        wait([self._rare_built])

        def free(df):
            try:
                release(df)
            except Exception:
                pass
        if has_jvm(self.spark):
            for df in self._cached:
                free(df)
        else:   # through Spark Connect a release is a round trip: some 25 of them at once
            with ThreadPoolExecutor(max_workers=8, thread_name_prefix="release") as pool:
                list(pool.map(free, self._cached))
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
    def fs_space(self) -> DataFrame:
        """run_id, dn, reserved_for_replicas, free, used: each DataNode's space as
        final_state.json recorded it; one row with dn null for a final state that records
        none (the mini-HDFS), the columns null for a DataNode that did not answer."""
        return self.memo("fs_space", lambda: self.final
                         .select("run_id", F.explode_outer("datanode_space").alias("dn", "s"))
                         .select("run_id", "dn", "s.reserved_for_replicas", "s.free", "s.used"))

    @property
    def fs_readback(self) -> DataFrame:
        """run_id, path, len, crc, error: each file as a client read it back (len and crc
        null, error set, when the read failed)."""
        return self.memo("fs_readback", lambda: self.final
                         .select("run_id", F.explode("readback").alias("path", "r"))
                         .select("run_id", "path", "r.len", "r.crc", "r.error"))

    # -- per-run facts ---------------------------------------------------------------
    @property
    def event_stats(self) -> DataFrame:
        """run_id, node, role, event, events, first_ts, last_ts, len_sum: per process and
        event name (the dense lines' part, `bulk_stats`, from the folded table)."""
        def build():
            keys = ["run_id", "node", "role", "event"]
            return (self.bulk_stats.unionByName(_event_stats(self.rare)).groupBy(*keys)
                    .agg(F.sum("events").alias("events"), F.min("first_ts").alias("first_ts"),
                         F.max("last_ts").alias("last_ts"), F.sum("len_sum").alias("len_sum")))
        return self.memo("event_stats", build)

    @property
    def bulk_stats(self) -> DataFrame:
        """event_stats of the dense bulk lines alone."""
        return self.memo("bulk_stats", lambda: self.folded.groupBy(
            "run_id", "node", "role", "event").agg(
                F.sum("n").alias("events"), F.min("first_ts").alias("first_ts"),
                F.max("last_ts").alias("last_ts"), F.sum("len_sum").alias("len_sum")))

    @property
    def log_stats(self) -> DataFrame:
        """run_id, log, node, lines, malformed, min_seq, max_seq, seq_ok, no_seq,
        seq_missing, seq_repeated: one row per event file (an empty file too). `node` is
        the node its lines name (null if none), `lines` counts every line, malformed ones
        included, `no_seq` the lines that are not malformed yet have no seq. seq_ok: no
        such line, and the seqs of the log are exactly min_seq..max_seq, each once (the
        lines with a seq counted against the distinct seqs, _seq_counts; true for a log
        without seqs). For a log that is not: seq_missing names the gaps inside
        min_seq..max_seq, seq_repeated the seqs logged more than once (_seq_faults)."""
        def build():
            per = self.fold.groupBy("log_no").agg(
                F.sum("n").alias("lines"), F.min("node").alias("node"))
            # by run too: every run has its own dn1.jsonl
            bad = self.rare_lines.groupBy("run_id", "log").agg(
                F.sum(F.col("malformed").cast("int")).alias("malformed"),
                F.sum((~F.col("malformed") & F.col("seq").isNull()).cast("int")).alias("no_seq"))
            got = {r["log_no"]: r for r in per.collect()}
            seqs = {r["log_no"]: r for r in _seq_counts(_read_text(self.spark, self.files))
                    .collect()}
            bad_of = {(r["run_id"], r["log"]): r for r in bad.collect()}
            torn = {no for no, s in seqs.items()
                    if not (s["n_seq"] == s["distinct_seq"]
                            == s["max_seq"] - s["min_seq"] + 1)}
            faults = _seq_faults(_read_text(self.spark, [f for f in self.files
                                                         if f[2] in torn])) if torn else {}
            rows = []
            for run_id, log_name, no, _ in self.files:
                g, s, b = got.get(no), seqs.get(no), bad_of.get((run_id, log_name))
                malformed = int(b["malformed"]) if b else 0
                no_seq = int(b["no_seq"]) if b else 0
                if g is None:
                    rows.append((run_id, log_name, None, 0, 0, None, None, True, 0, None, None))
                    continue
                missing, repeated = faults.get(no, (None, None))
                rows.append((run_id, log_name, g["node"], int(g["lines"]), malformed,
                             s["min_seq"] if s else None, s["max_seq"] if s else None,
                             not no_seq and no not in torn, no_seq, missing, repeated))
            return self.spark.createDataFrame(rows, LOG_STATS_SCHEMA)
        return self.memo("log_stats", build)

    @property
    def node_facts(self) -> DataFrame:
        """run_id, node, role, first_ts, last_ts, events: each process's log span (a row
        per role it logged under)."""
        return self.memo("node_facts", lambda: self.event_stats.groupBy("run_id", "node", "role")
                         .agg(F.min("first_ts").alias("first_ts"),
                              F.max("last_ts").alias("last_ts"),
                              F.sum("events").alias("events")))

    @property
    def event_names(self) -> frozenset[str]:
        """Every event name the runs logged (from event_stats, kept: one small job)."""
        with self._lock:
            names = self._memo.get("event_names")
        if names is None:
            names = frozenset(r["event"] for r in self.event_stats.select("event").distinct()
                              .collect() if r["event"] is not None)
            with self._lock:
                self._memo["event_names"] = names
        return names

    @property
    def bounds(self) -> DataFrame:
        """run_id, start_ts, end_ts: the first and last event of each run."""
        return self.memo("bounds", lambda: self.node_facts.groupBy("run_id")
                         .agg(F.min("first_ts").alias("start_ts"),
                              F.max("last_ts").alias("end_ts")))

    def of(self, *names: str) -> DataFrame:
        """The events with one of these names (the rare ones from their small table; a
        bulk name reads the dense lines again, see `bulk`)."""
        # filters given as SQL text: one Py4J call each, where Column.isin makes one per
        # name and more (the checks ask for events some hundred times per verification)
        rare = self.rare.filter(_event_in(names))
        bulk = [n for n in names if n in BULK_EVENTS]
        if not bulk:
            return rare
        return self.bulk.filter(_event_in(bulk)).unionByName(rare)

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


LOG_STATS_SCHEMA = T.StructType([
    T.StructField("run_id", T.StringType()), T.StructField("log", T.StringType()),
    T.StructField("node", T.StringType()), T.StructField("lines", T.LongType()),
    T.StructField("malformed", T.LongType()), T.StructField("min_seq", T.LongType()),
    T.StructField("max_seq", T.LongType()), T.StructField("seq_ok", T.BooleanType()),
    T.StructField("no_seq", T.LongType()), T.StructField("seq_missing", T.StringType()),
    T.StructField("seq_repeated", T.StringType())])


def _seqs(text: DataFrame) -> DataFrame:
    """log_no, seq of every line of `text` (the one field parsed; null if none). Not
    filtered: Spark would push a filter on seq below the parse and parse every line twice;
    the aggregates over it count and fold the non-null seqs only."""
    return text.select("log_no", F.from_json("value", "seq long").getField("seq").alias("seq"))


def _seq_counts(text: DataFrame) -> DataFrame:
    """log_no, n_seq, distinct_seq, min_seq, max_seq of each log of `text` with a seq:
    how many lines have a seq, how many distinct seqs, the least and greatest. Exact, and
    one aggregation per log: the lines fold into a word of presence bits per 64
    consecutive seqs of a log (folded inside each task before the shuffle: a log's lines
    are consecutive in its file), whose set bits are its distinct seqs."""
    words = _seqs(text).groupBy(
        # a shift and a mask: floor division and remainder, negative seqs included
        F.col("log_no"), F.expr(f"shiftright(seq, {SEQ_WORD_BITS})").alias("word")).agg(
            F.count("seq").alias("n"),
            F.expr(f"bit_or(shiftleft(1L, CAST(seq & {(1 << SEQ_WORD_BITS) - 1} AS INT)))")
            .alias("bits"),
            F.min("seq").alias("lo"), F.max("seq").alias("hi"))
    return words.groupBy("log_no").agg(
        F.sum("n").alias("n_seq"), F.expr("sum(bit_count(bits))").alias("distinct_seq"),
        F.min("lo").alias("min_seq"), F.max("hi").alias("max_seq")).filter("n_seq > 0")


def _seq_faults(text: DataFrame) -> dict[int, tuple[str | None, str | None]]:
    """{log_no: (missing, repeated)} for the logs of `text` (the few whose seqs are not
    each once): the gaps between consecutive seqs as ranges, and the seqs that more than
    one line has with how many lines; SEQ_SAMPLE of each at most, the least first, and
    how many in all."""
    from pyspark.sql.window import Window
    # the lines without a seq make a group of n = 0: no repeat, and no gap after a null
    per = _seqs(text).groupBy("log_no", "seq").agg(F.count("seq").alias("n"))
    by_log = Window.partitionBy("log_no")
    gaps = (per.withColumn("prev", F.lag("seq").over(by_log.orderBy("seq")))
            .filter(F.col("seq") - F.col("prev") > 1)
            .select("log_no", F.lit("missing").alias("kind"),
                    (F.col("prev") + 1).alias("lo"), (F.col("seq") - 1).alias("hi"),
                    (F.col("seq") - F.col("prev") - 1).alias("n")))
    repeats = (per.filter(F.col("n") > 1)
               .select("log_no", F.lit("repeated").alias("kind"), F.col("seq").alias("lo"),
                       F.col("seq").alias("hi"), "n"))
    one_kind = Window.partitionBy("log_no", "kind")
    rows = (gaps.unionByName(repeats)
            .withColumn("rank", F.row_number().over(one_kind.orderBy("lo")))
            .withColumn("items", F.count(F.lit(1)).over(one_kind))
            .withColumn("total", F.sum(F.col("n") - F.when(F.col("kind") == "repeated", 1)
                                       .otherwise(0)).over(one_kind))
            .filter(F.col("rank") <= SEQ_SAMPLE).collect())
    out: dict[int, dict[str, list]] = {}
    for r in sorted(rows, key=lambda r: (r["log_no"], r["kind"], r["lo"])):
        out.setdefault(r["log_no"], {}).setdefault(r["kind"], []).append(r)

    def said(items: list, what: Callable, total: str) -> str | None:
        if not items:
            return None
        more = ", ..." if items[0]["items"] > len(items) else ""
        return f"{', '.join(what(r) for r in items)}{more} ({items[0]['total']} {total})"

    def span(r) -> str:
        return str(r["lo"]) if r["lo"] == r["hi"] else f"{r['lo']}..{r['hi']}"

    return {no: (said(kinds.get("missing", []), span, "in all"),
                 said(kinds.get("repeated", []), lambda r: f"{r['lo']} (x{r['n']})",
                      "extra line(s)"))
            for no, kinds in out.items()}


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
    T.StructField("min_replication", T.LongType()),
])


def _conf_row(info: RunInfo) -> tuple:
    c = info.config
    return (info.run_id, float(c["lease.soft-limit"]), float(c["lease.hard-limit"]),
            float(c["dfs.namenode.lease-recheck-interval-ms"]),
            float(c["dfs.heartbeat.interval"]), int(c["dfs.replication"]),
            c["dfs.client.block.write.replace-datanode-on-failure.policy"],
            bool(c["dfs.client.block.write.replace-datanode-on-failure.enable"]),
            bool(c["dfs.client.block.write.replace-datanode-on-failure.best-effort"]),
            int(c["dfs.namenode.replication.min"]))


def _event_in(names) -> str:
    """`event IN (...)` as SQL text, for names of the event catalogue."""
    for n in names:
        if not re.fullmatch(r"[A-Za-z0-9_.]+", n):
            raise ValueError(f"not an event name: {n!r}")
    return "event IN (" + ", ".join(f"'{n}'" for n in names) + ")"


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


# Up to this many bytes of event logs the loaded tables are kept as rows, above it in
# columns (RunSet._cache). Measured with the benchmark's generated runs
# (bench_verifier.py, load and verify, same JVM): 17 MB of logs 24.3 s as rows against
# 27.8 s in columns, 51 MB 31.6 s against 31.1 s, 240 MB 66.5 s against 46.6 s, 1.7 GB
# (10 million events) 171 s against 87-89 s. One recorded run is some 30 KB, the
# 31-run library 5 MB.
ROW_CACHE_BYTES = 32 << 20


def load_runs(run_dirs: list[str], spark: SparkSession | None = None,
              keep_raw: bool = False, columnar: bool | None = None) -> RunSet:
    """Read the given run folders into one RunSet (Spark reads, parses and folds the
    lines now). `keep_raw` keeps the text of the dense lines in `RunSet.bulk` too.
    `columnar` (RunSet._cache): None keeps the loaded tables in columns above
    ROW_CACHE_BYTES of event logs and as rows up to it."""
    spark = spark or get_spark()
    infos: dict[str, RunInfo] = {}
    for d in run_dirs:
        info = read_run_info(d)
        if info.run_id in infos:
            raise ValueError(f"two run folders are both named {info.run_id!r} "
                             f"({infos[info.run_id].run_dir} and {info.run_dir}); "
                             "run ids must be unique")
        infos[info.run_id] = info
    logs = sorted((info.run_id, _log_name(f), f) for info in infos.values()
                  for f in info.event_files)
    files = [(rid, name, no, path) for no, (rid, name, path) in enumerate(logs)]
    if columnar is None:
        columnar = event_bytes(run_dirs) > ROW_CACHE_BYTES
    return RunSet(spark, infos, files,
                  _read_final(spark, [i.run_dir for i in infos.values() if i.has_final_state]),
                  keep_raw=keep_raw, columnar=columnar)


def event_bytes(run_dirs: list[str]) -> int:
    """The size of the runs' event logs: what the verifier's JVM is started for
    (session._java_options) and what picks rows or columns for the loaded tables
    (ROW_CACHE_BYTES)."""
    total = 0
    for d in run_dirs:
        events = os.path.join(d, "events")
        try:
            names = os.listdir(events)
        except OSError:
            continue
        for name in names:
            try:
                total += os.path.getsize(os.path.join(events, name))
            except OSError:
                pass
    return total


def _log_name(path: str) -> str:
    name = os.path.basename(path)
    return name[:-len(".jsonl")] if name.endswith(".jsonl") else name


def _eid(log_no: Column, seq: Column, text: Column) -> Column:
    """The event id of a line (module docstring): log_no << 32 | seq, or for a line
    without a usable seq, log_no << 32 | 2^31 | (CRC-32 of its text mod 2^31)."""
    usable = seq.isNotNull() & (seq >= 0) & (seq < F.lit(1 << 32))
    base = log_no.cast("long") * F.lit(1 << 32)
    return F.when(usable, base + seq).otherwise(
        base + F.lit(1 << 31) + F.pmod(F.crc32(F.coalesce(text, F.lit(""))), F.lit(1 << 31)))


def _path_part(col: str, index: int):
    """The `index`-th part (from the end) of a file URI: a folder or file name (the
    per-row form of `_file_parts`, for a file it does not know)."""
    part = F.substring_index(F.substring_index(F.col(col), "/", index), "/", 1)
    # the URI escapes odd characters as %XX; url_decode would also read '+' as a space
    return F.when(part.contains("%"), F.url_decode(F.replace(part, F.lit("+"), F.lit("%2B")))
                  ).otherwise(part)


def _uri_forms(uri: str) -> set[str]:
    # inputFiles() writes a local file file:///x, _metadata.file_path file:/x
    return {uri, re.sub(r"^([a-z][a-z0-9+.-]*):///", r"\1:/", uri)}


def _file_parts(spark: SparkSession, df: DataFrame, suffix: str = "", **parts: int
                ) -> DataFrame:
    """`file` (a file URI as `_metadata.file_path` gives it) and, for each name in
    `parts`, the part of the path at that index from the end (less `suffix` at its
    end), for every file `df` reads. Joined on `file`, it names the rows of a file
    once per file instead of cutting the parts out of every row's path."""
    rows = []
    for uri in df.inputFiles():
        names = urllib.parse.unquote(urllib.parse.urlsplit(uri).path).split("/")
        picked = [names[i] if len(names) >= -i else None for i in parts.values()]
        picked = [p[:-len(suffix)] if suffix and p and p.endswith(suffix) else p
                  for p in picked]
        for form in _uri_forms(uri):
            rows.append((form, *picked))
    return spark.createDataFrame(rows, T.StructType(
        [T.StructField("file", T.StringType())]
        + [T.StructField(name, T.StringType()) for name in parts]))


# session -> {absolute path: the URI Spark names that file by}: the logs of one
# verification are read several times (the load, log_stats, I1), and through Spark
# Connect each inputFiles() is a request
_URIS: "weakref.WeakKeyDictionary[SparkSession, dict[str, str]]" = weakref.WeakKeyDictionary()
_URIS_LOCK = threading.Lock()


def _input_files(spark: SparkSession, read: DataFrame, paths: list[str]) -> list[str]:
    """read.inputFiles() for a read of `paths` (absolute), from what an earlier read of
    the same files in this session gave when it named all of them."""
    with _URIS_LOCK:
        known = _URIS.get(spark, {})
        if all(p in known for p in paths):
            return [known[p] for p in paths]
    uris = read.inputFiles()
    got = {os.path.abspath(urllib.parse.unquote(urllib.parse.urlsplit(u).path)): u
           for u in uris}
    with _URIS_LOCK:
        _URIS.setdefault(spark, {}).update(got)
    return uris


_TEXT_NAMES = T.StructType([T.StructField("file", T.StringType()),
                            T.StructField("run_id", T.StringType()),
                            T.StructField("log", T.StringType()),
                            T.StructField("log_no", T.IntegerType())])


def _read_text(spark: SparkSession, files: list[tuple]) -> DataFrame:
    """run_id, log, log_no, value: every line of `files` ((run_id, log, log_no, path),
    load_runs), named by its run, log file and log number."""
    if not files:
        return spark.createDataFrame([], "run_id string, log string, log_no int, value string")
    read = spark.read.text([f[3] for f in files])
    by_path = {os.path.abspath(path): (rid, name, no) for rid, name, no, path in files}
    rows = []
    for uri in _input_files(spark, read, list(by_path)):
        known = by_path.get(os.path.abspath(urllib.parse.unquote(urllib.parse.urlsplit(uri).path)))
        if known is not None:
            rows += [(form, *known) for form in _uri_forms(uri)]
    names = spark.createDataFrame(rows, _TEXT_NAMES)
    # a file Spark names otherwise (a link?) keeps its lines, named from its path
    return (read.select("value", F.col("_metadata.file_path").alias("file"))
            .join(F.broadcast(names), "file", "left")
            .select(F.coalesce("run_id", _path_part("file", -3)).alias("run_id"),
                    F.coalesce("log", F.regexp_replace(_path_part("file", -1), r"\.jsonl$", ""))
                    .alias("log"), "log_no", "value"))


def _dense(value: Column, parsed: str) -> Column:
    """True when the line `value`, parsed into the struct column `parsed` with the narrow
    schema, is a bulk event that those fields hold entirely: it parsed cleanly, has the
    envelope and a usable seq, and has no other key. The last is proved by counting:
    every key of a JSON object is followed by one colon, so a line has at least as many
    colons as keys, and at least as many keys as non-null fields; equal counts leave no
    room for another key (a colon in a string, a nested object, a null or a repeated key
    only make a line count as not dense, and be parsed in full)."""
    # bytes, not characters: a colon is one byte, and a byte count costs nothing
    colons = F.octet_length(value) - F.octet_length(F.replace(value, F.lit(":"), F.lit("")))
    set_fields = sum((F.col(f"{parsed}.{n}").isNotNull().cast("int") for n in _NARROW),
                     F.lit(0))
    seq, ts = F.col(f"{parsed}.seq"), F.col(f"{parsed}.ts")
    return (F.col(f"{parsed}.event").isin(list(BULK_EVENTS))
            & F.col(f"{parsed}.{CORRUPT}").isNull()
            # Spark's reader ignores text after the object, and takes NaN and Infinity
            & F.rtrim(value).endswith("}")
            & ts.isNotNull() & ~F.isnan(ts) & (F.abs(ts) != float("inf"))
            & F.col(f"{parsed}.node").isNotNull()
            & (seq >= 0) & (seq < F.lit(1 << 32))
            & (colons == set_fields))


def _narrow_lines(text: DataFrame) -> DataFrame:
    """run_id, log, log_no, value, the narrow fields and `dense` of every line of `text`."""
    parsed = F.from_json("value", NARROW_SCHEMA,
                         {"columnNameOfCorruptRecord": CORRUPT, "mode": "PERMISSIVE"})
    return (text.select("run_id", "log", "log_no", "value", parsed.alias("j"))
            .select("run_id", "log", "log_no", "value",
                    *[F.col(f"j.{n}").alias(n) for n in _NARROW],
                    F.coalesce(_dense(F.col("value"), "j"), F.lit(False)).alias("dense")))


def _fold(lines: DataFrame) -> DataFrame:
    """The one grouped aggregation of every line (module docstring, 2): a row per log,
    process, event, path, block and stream of the dense lines, and a row per distinct
    text of the other lines (`rare`: the text; `n`: how many times the log holds it).

    Every aggregate keeps a fixed-width buffer (counts, sums, least/greatest, max_by),
    so Spark folds in a hash map in each task before the shuffle. For a stream's writes
    (offsets grow along a stream): the first and last offset, the end of the last write
    and its len, crc and stream_crc, the least stream_crc."""
    dense = F.col("dense")
    key = lambda c: F.when(dense, F.col(c))     # noqa: E731 -- the grouping of dense lines
    off = F.col("offset")
    return lines.groupBy(
        "run_id", "log", "log_no", F.col("node"), F.col("role"), F.col("event"),
        key("path").alias("path"), key("block").alias("block"), key("stream").alias("stream"),
        F.when(~dense, F.col("value")).alias("rare"),
    ).agg(
        F.count(F.lit(1)).alias("n"),
        F.min("ts").alias("first_ts"), F.max("ts").alias("last_ts"),
        F.try_sum("len").alias("len_sum"), F.max("acked").alias("max_acked"),
        F.min(off).alias("first_off"), F.max(off).alias("last_off"),
        F.max(F.try_add(off, F.col("len"))).alias("end_off"),
        F.max_by("len", off).alias("last_len"), F.max_by("crc", off).alias("last_crc"),
        F.max_by("stream_crc", off).alias("last_stream_crc"),
        F.min_by("stream_crc", off).alias("first_stream_crc"),
        F.count("stream_crc").alias("n_stream_crc"),
    )


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
