"""Durability and data checks D1-D4 (spec/CHECKS.md): hflushed bytes survive, the
content read back is what the writers wrote, replicas agree, replication is restored.

D2 method: the `client.write` ranges of a file (and its truncates and re-creates) are
laid out in time order; a range that starts at offset o discards everything earlier at
or beyond o (an append after lost, unacked data continues at the file's length, a
truncate cuts, a create starts over). The ranges left, cut at the final length, must
tile [0, len) exactly; their CRCs are combined in file order with crc32_combine (zlib's
GF(2) method, `harness.reconcile.crc`) by a UDF over each file's bounded list of ranges,
and compared with the CRC read back. A range cut in its middle cannot be checked from its
CRC: such a file is reported as unverifiable (not a failure); its coverage still is.
"""

from __future__ import annotations

import pandas as pd
from pyspark.sql import DataFrame, Window, functions as F, types as T

from .. import jvm
from ..load import RunSet
from .common import LOG_SLACK_S, Outcome, live_datanodes, runs_of, violation


_PATH_OPS = ("nn.file.truncate", "nn.file.delete", "nn.file.rename", "nn.file.create")


def check_d1(runs: RunSet) -> Outcome:
    """hflush is durable: the final length of every file (and the length read back) is at
    least the greatest client.hflush offset logged for it since its last create.

    A file truncated, renamed or deleted after its hflushes keeps the rule for its
    history up to that operation: a truncate to L lowers what must survive to L, a
    rename carries it to the new path (a folder's rename moves the files under it), and
    a delete or a re-create of the path leaves nothing to judge (such a file is not
    counted as exercised)."""
    created = (runs.of("nn.file.create").select("run_id", "path", "ts")
               .unionByName(runs.of("client.stream.open").filter(F.col("mode") == "create")
                            .select("run_id", "path", "ts"))
               .groupBy("run_id", "path").agg(F.max("ts").alias("created")))
    hf = runs.of("client.hflush").join(created, ["run_id", "path"], "left") \
        .filter(F.col("created").isNull() | (F.col("ts") >= F.col("created") - LOG_SLACK_S))
    # the first truncate / rename / delete after each hflush, on its path or a folder
    # above it: the hflushes between two such operations share one greatest offset
    ops = runs.of(*_PATH_OPS[:3]).filter(F.col("path").isNotNull()).select(
        F.col("run_id").alias("_r"), F.col("path").alias("_p"), F.col("ts").alias("_t"))
    under = (F.col("path") == F.col("_p")) | F.col("path").startswith(F.concat(F.col("_p"), F.lit("/")))
    nxt = (hf.join(ops, (hf["run_id"] == ops["_r"]) & under & (ops["_t"] > hf["ts"]), "left")
           .groupBy("eid").agg(F.min("_t").alias("next_op")))
    hf = hf.join(nxt, "eid", "left")
    w = Window.partitionBy("run_id", "path", "next_op").orderBy(F.desc("offset"), "ts")
    top = (hf.withColumn("_rn", F.row_number().over(w)).filter("_rn = 1")
           .join(runs.fs_runs, "run_id", "left_semi")
           .select("run_id", "ts", "node", "event", "path", "offset", "next_op",
                   F.col("path").alias("hflushed_path")))
    direct = top.filter(F.col("next_op").isNull()).drop("next_op")
    later = _follow_path_ops(runs, top.filter(F.col("next_op").isNotNull()).drop("next_op"))
    judged = direct.unionByName(later)
    files = runs.fs_files.select("run_id", "path", F.col("len").alias("final_len"),
                                 F.lit(True).alias("listed"))
    rb = runs.fs_readback.select("run_id", "path", F.col("len").alias("read_len"))
    j = judged.join(files, ["run_id", "path"], "left").join(rb, ["run_id", "path"], "left")
    why = (F.when(F.col("listed").isNull(), "a file that was hflushed is missing from final_state")
           .when(F.col("final_len") < F.col("offset"),
                 F.format_string("final length %d is below the hflushed offset %d",
                                 F.col("final_len"), F.col("offset")))
           .when(F.col("read_len") < F.col("offset"),
                 F.format_string("%d bytes read back, below the hflushed offset %d",
                                 F.col("read_len"), F.col("offset"))))
    bad = j.withColumn("why", why).filter(F.col("why").isNotNull())
    return Outcome(runs_of(judged), violation(bad, F.col("why"), "path",
                                              F.col("offset").alias("hflushed"), "final_len",
                                              "read_len", "hflushed_path"))


def _follow_path_ops(runs: RunSet, tops: DataFrame) -> DataFrame:
    """For hflushes followed by a truncate, rename or delete (few: those operations are
    rare), where the hflushed bytes must be in the end: the operations of their runs are
    replayed in time order on the driver. Returns the rows of `tops` with `path` the
    file's final path and `offset` lowered by every truncate on the way; a file deleted
    or created anew on the way is dropped."""
    rows = tops.collect()
    if not rows:
        return tops
    wanted = runs.spark.createDataFrame([(r["run_id"],) for r in rows], "run_id string") \
        .distinct()
    ops: dict[str, list] = {}
    for o in (runs.of(*_PATH_OPS).join(F.broadcast(wanted), "run_id", "left_semi")
              .select("run_id", "ts", "eid", "event", "path", "dst", "len", "ok")
              .orderBy("ts", "eid").collect()):
        ops.setdefault(o["run_id"], []).append(o)
    out = []
    for r in rows:
        path, offset = r["path"], r["offset"]
        for o in ops.get(r["run_id"], []):
            if o["ts"] <= r["ts"] or path is None or o["path"] is None:
                continue
            src = o["path"].rstrip("/") or "/"
            inside = path == src or path.startswith(src.rstrip("/") + "/")
            if o["event"] == "nn.file.rename" and inside and o["dst"]:
                path = o["dst"].rstrip("/") + path[len(src.rstrip("/")):] \
                    if path != src else o["dst"]
            elif o["event"] == "nn.file.rename" and o["dst"] == path:
                path = None             # another file renamed over it: replaced
            elif o["event"] in ("nn.file.delete", "nn.file.create") and inside:
                path = None
            elif (o["event"] == "nn.file.truncate" and o["path"] == path
                  and o["ok"] is not False and o["len"] is not None):
                offset = min(offset, o["len"])
        if path is not None:
            out.append((r["run_id"], r["ts"], r["node"], r["event"], path, offset,
                        r["hflushed_path"]))
    return runs.spark.createDataFrame(out, tops.schema)


def _combine_ranges(lens: pd.Series, crcs: pd.Series) -> pd.Series:
    """CRC-32 of whole ranges laid end to end, given their lengths and CRCs in file order:
    one value per file, for a batch of files at once (crc.crc32_of_ranges_many combines
    them side by side with numpy: the 480,000 ranges of the 1M-event benchmark's files
    take 0.12 s instead of 0.32 s in a Python loop per range)."""
    from harness.reconcile.crc import crc32_of_ranges_many
    return pd.Series(crc32_of_ranges_many(list(lens), list(crcs)), index=lens.index,
                     dtype="Int64")


_combine_udf = F.pandas_udf(_combine_ranges, T.LongType())


def content_layout(runs: RunSet, fast: bool | None = None) -> DataFrame:
    """Per read-back file: what the writers' ranges say about its bytes.

    run_id, path, read_len, read_crc, final_len, closed, gap_at (first offset no kept
    range covers, or null), covered (bytes up to which ranges reach), partial (a range
    is cut mid-way), expected_crc (when fully verifiable). The per-file part is
    jvm.FileLayout when it is loaded, window functions otherwise (`fast` picks one: the
    tests compare them)."""
    def build():
        in_jvm = jvm.available(runs.spark, jvm.LAYOUT_UDF) if fast is None else fast
        if in_jvm:
            dense = bulk_write_ranges(runs)     # first: it needs no rare event
        rb = runs.fs_readback.select("run_id", "path", F.col("len").alias("read_len"),
                                     F.col("crc").alias("read_crc"))
        resets = (runs.of("nn.file.create").select("run_id", "path", "ts", "eid",
                                                   F.lit(0).cast("long").alias("offset"))
                  .unionByName(runs.of("nn.file.truncate")
                               .filter(F.coalesce(F.col("ok"), F.lit(True)))
                               .select("run_id", "path", "ts", "eid", F.col("len").alias("offset")))
                  .select("*", F.lit(0).cast("long").alias("len"), F.lit(0).cast("long").alias("crc")))
        if in_jvm:
            # the rare events' ranges (resets, writes that are not dense lines) join the
            # dense writes' lists: FileLayout puts each file's ranges in time order itself
            rare = (runs.rare.filter(F.col("event") == "client.write")
                    .select("run_id", "path", "ts", "eid", "offset", "len", "crc")
                    .unionByName(resets))
            per = _layout_jvm(_range_lists(rare), dense, rb)
        else:
            writes = runs.of("client.write").select("run_id", "path", "ts", "eid", "offset",
                                                    "len", "crc")
            per = _layout_sql(writes.unionByName(resets), rb)
        files = runs.fs_files.select("run_id", "path", F.col("len").alias("final_len"), "closed")
        j = rb.join(per, ["run_id", "path"], "left").join(files, ["run_id", "path"], "left")
        verifiable = (F.coalesce(F.col("partial"), F.lit(0)) == 0) & F.col("gap_at").isNull() \
            & (F.coalesce(F.col("covered"), F.lit(0)) == F.col("read_len"))
        j = j.withColumn("verifiable", verifiable)
        if in_jvm:      # FileLayout combined the CRCs itself
            combined = F.col("ranges_crc")
        else:
            # the UDF runs on every row whatever the condition: give it only what it combines
            todo = F.col("verifiable") & (F.col("read_len") != 0)
            combined = _combine_udf(F.when(todo, F.col("lens")), F.when(todo, F.col("crcs")))
        return j.withColumn("expected_crc", F.when(
            F.col("verifiable"),
            F.when(F.col("read_len") == 0, F.lit(0).cast("long")).otherwise(combined))
        ).drop("lens", "crcs", "ranges_crc")
    if fast is not None:        # a comparison of both forms (tests): not the shared table
        return build()
    return runs.memo("content_layout", build)


_RANGE = T.StructType([T.StructField("ts", T.DoubleType()), T.StructField("eid", T.LongType()),
                       T.StructField("offset", T.LongType()), T.StructField("len", T.LongType()),
                       T.StructField("crc", T.LongType())])


def _range_lists(ranges: DataFrame) -> DataFrame:
    """run_id, path, ranges: each file's ranges (ts, eid, offset, len, crc) in a list."""
    return ranges.groupBy("run_id", "path").agg(F.collect_list(F.struct(
        *[F.col(f.name).cast(f.dataType).alias(f.name) for f in _RANGE.fields])).alias("ranges"))


def bulk_write_ranges(runs: RunSet) -> DataFrame:
    """run_id, path, ranges: the ranges of the dense client.write lines, listed per file
    (the bulk of content_layout's input). Needs no rare event, so prepare_bulk builds it
    while the loader still parses those."""
    def build():
        part = runs.folded_part(jvm.WRITES)     # the loader's lists per partition
        if part is not None:
            return part.groupBy("run_id", "path").agg(
                F.flatten(F.collect_list("ranges")).alias("ranges"))
        return _range_lists(runs.bulk.filter(F.col("event") == "client.write"))
    return runs.memo("bulk_write_ranges", build)


def _layout_jvm(rare: DataFrame, dense: DataFrame, rb: DataFrame) -> DataFrame:
    """run_id, path, gap_at, covered, partial, ranges_crc: per file, by jvm.FileLayout
    over the list of its ranges (`rare` and `dense`, each a _range_lists: hash
    aggregations, no sort of all the writes), which also combines the kept ranges' CRCs
    (at 10 million events, handing their 5 million lengths and CRCs to the pandas UDF
    took a Python worker and some 5 s)."""
    none = F.array().cast(T.ArrayType(_RANGE))
    per = (dense.withColumnRenamed("ranges", "_d")
           .join(rare.withColumnRenamed("ranges", "_q"), ["run_id", "path"], "full")
           .join(rb.select("run_id", "path", "read_len"), ["run_id", "path"])
           .select("run_id", "path", F.call_udf(
               jvm.LAYOUT_UDF, F.concat(F.coalesce("_d", none), F.coalesce("_q", none)),
               F.col("read_len")).alias("_l")))
    return per.filter(F.col("_l").isNotNull()).select(
        "run_id", "path", "_l.gap_at", "_l.covered", "_l.partial",
        F.col("_l.crc").alias("ranges_crc"))


def _layout_sql(ranges: DataFrame, rb: DataFrame) -> DataFrame:
    """The same as _layout_jvm with window functions (when the JVM helper is not loaded)."""
    w_all = ranges.join(rb.select("run_id", "path", "read_len"), ["run_id", "path"])
    # the least offset of every later row, as a running minimum in reverse time order
    # (Spark recomputes a frame that ends at UNBOUNDED FOLLOWING for every row,
    # quadratic in the writes of a file; one that starts at UNBOUNDED PRECEDING grows)
    w = Window.partitionBy("run_id", "path").orderBy(F.desc("ts"), F.desc("eid")) \
        .rowsBetween(Window.unboundedPreceding, -1)
    big = F.lit(1 << 62).cast("long")
    eff = (w_all.withColumn("later_min", F.min("offset").over(w))
           .withColumn("eff_end", F.least(F.col("offset") + F.col("len"),
                                          F.coalesce("later_min", big), F.col("read_len")))
           .filter(F.col("eff_end") > F.col("offset")))
    eff = eff.withColumn("partial", F.col("eff_end") < F.col("offset") + F.col("len"))
    wo = Window.partitionBy("run_id", "path").orderBy("offset", "ts")
    eff = eff.withColumn("prev_end", F.coalesce(F.lag("eff_end").over(wo), F.lit(0).cast("long")))
    per = eff.groupBy("run_id", "path").agg(
        F.min(F.when(F.col("offset") != F.col("prev_end"), F.col("prev_end"))).alias("gap_at"),
        F.max("eff_end").alias("covered"),
        F.max(F.col("partial").cast("int")).alias("partial"),
        # in file order: the kept ranges have distinct offsets
        F.array_sort(F.collect_list(F.struct("offset", "len", "crc"))).alias("ranges"))
    return per.select("run_id", "path", "gap_at", "covered", "partial",
                      F.transform("ranges", lambda r: r["len"]).alias("lens"),
                      F.transform("ranges", lambda r: r["crc"]).alias("crcs"))


def check_d2(runs: RunSet) -> Outcome:
    """Content: the bytes read back are the bytes the writers wrote, in order, for the
    whole final length; no byte read back lies outside every written range."""
    lay = content_layout(runs)
    why = (F.when(F.col("gap_at").isNotNull() & (F.col("gap_at") < F.col("read_len")),
                  F.format_string("bytes from offset %d were read back but no writer wrote them",
                                  F.col("gap_at")))
           .when(F.coalesce(F.col("covered"), F.lit(0)) < F.col("read_len"),
                 F.format_string("%d bytes read back, but writers wrote only up to offset %d",
                                 F.col("read_len"), F.coalesce(F.col("covered"), F.lit(0))))
           .when(F.col("closed") & F.col("final_len").isNotNull()
                 & (F.col("final_len") != F.col("read_len")),
                 F.format_string("read back %d bytes of a closed file whose length is %d",
                                 F.col("read_len"), F.col("final_len")))
           .when(F.col("verifiable") & (F.col("expected_crc") != F.col("read_crc")),
                 F.format_string("CRC read back %d differs from the CRC %d of what was written",
                                 F.col("read_crc"), F.col("expected_crc"))))
    bad = lay.withColumn("why", why).filter(F.col("why").isNotNull())
    checked = lay.filter(F.col("verifiable") | why.isNotNull())
    return Outcome(runs_of(checked), violation(
        bad, F.col("why"), "path", "read_len", "read_crc", "expected_crc", "covered", "gap_at",
        "final_len", ts=F.lit(None), node=F.lit("final_state"), event=F.lit("final_state.readback")))


def check_d3(runs: RunSet) -> Outcome:
    """Replicas agree: all FINALIZED replicas of a block on live DataNodes have the same
    GS, length and CRC."""
    live = live_datanodes(runs)
    reps = (runs.fs_replicas.filter(F.col("state") == "FINALIZED")
            .join(live, ["run_id", "dn"], "left_semi"))
    g = reps.groupBy("run_id", "block").agg(
        F.count(F.lit(1)).alias("n"),
        F.countDistinct(F.struct("gs", "len", "crc")).alias("versions"),
        F.sort_array(F.collect_list(F.struct("dn", "gs", "len", "crc"))).alias("replicas"))
    bad = g.filter(F.col("versions") > 1)
    return Outcome(runs_of(g.filter(F.col("n") >= 2)), violation(
        bad, F.format_string("%d FINALIZED replicas disagree (%d versions of GS/length/CRC)",
                             F.col("n"), F.col("versions")),
        "block", "replicas", ts=F.lit(None), node=F.lit("final_state"),
        event=F.lit("final_state.datanodes")))


def check_d4(runs: RunSet) -> Outcome:
    """Replication restored: after quiescence every COMPLETE block has `replication`
    valid replicas (FINALIZED, the block's GS and length) on live DataNodes (or as many
    as there are live DataNodes)."""
    live = live_datanodes(runs)
    n_live = live.groupBy("run_id").agg(F.count(F.lit(1)).alias("live_dns"))
    blocks = runs.fs_blocks.filter(F.col("state") == "COMPLETE")
    reps = (runs.fs_replicas.filter(F.col("state") == "FINALIZED")
            .join(live, ["run_id", "dn"], "left_semi")
            .select(F.col("run_id").alias("_r"), F.col("block").alias("_b"),
                    F.col("gs").alias("r_gs"), F.col("len").alias("r_len"), "dn"))
    j = blocks.join(reps, (blocks["run_id"] == reps["_r"]) & (blocks["block"] == reps["_b"])
                    & (blocks["gs"] == reps["r_gs"]) & (blocks["len"] == reps["r_len"]), "left")
    g = (j.groupBy("run_id", "path", "block", "gs", "len", "replication")
         .agg(F.count("dn").alias("valid"), F.sort_array(F.collect_set("dn")).alias("valid_on"))
         .join(n_live, "run_id", "left"))
    need = F.least(F.col("replication"), F.coalesce(F.col("live_dns"), F.col("replication")))
    bad = g.filter(F.col("valid") < need)
    return Outcome(runs_of(blocks), violation(
        bad, F.format_string("%d valid replicas on live DataNodes, replication %d",
                             F.col("valid"), F.col("replication")),
        "path", "block", "gs", "len", "replication", "valid_on", "live_dns",
        ts=F.lit(None), node=F.lit("final_state"), event=F.lit("final_state.files")))
