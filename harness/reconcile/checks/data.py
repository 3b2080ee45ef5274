"""Durability and data checks D1-D4 (spec/CHECKS.md): hflushed bytes survive, the
content read back is what the writers wrote, replicas agree, replication is restored.

D2 method (every byte of every file's final length): a writer's output stream
(`client.stream.open` .. its last `client.write`, numbered per client by `stream`)
wrote the bytes [start, end) of its path, contiguously, and each `client.write` carries
`stream_crc`, the CRC-32 of the stream's bytes before it. Each run's file operations
are replayed in time order (_layout): a create or a stream opened at offset o keeps
every earlier stream's bytes below o only, a truncate cuts, a rename moves, a delete
drops. What is left of a path, cut at its read-back length, must tile [0, len); each
piece is a prefix [start, b) of one stream, whose CRC is
 - b = the stream's end: its last write's stream_crc combined with that write's crc,
 - b = the end of an inner write w: w.stream_crc combined with w.crc,
 - b inside a write w (block recovery cut the tail mid-write, a truncate): w.stream_crc
   combined with the CRC of w's first b - w.offset bytes, regenerated from the content
   generator the stream names (`content`, with the run's seed), once w's whole CRC is
   confirmed to be the generator's,
and the pieces' CRCs combined in file order (crc32_combine, zlib's GF(2) method,
`harness.reconcile.crc`) must be the CRC read back. A byte that cannot be checked this
way (a write without stream fields, a gap in a stream, a cut mid-write without a
generator, a failed read-back) fails D2 with the reason, never passes.

Only the streams' summaries (the loader's folded table) and the few writes at a cut
inside a stream (read again from their clients' logs) come to the driver: D2 costs one
combine per stream, not one per write.
"""

from __future__ import annotations

import zlib
from collections import defaultdict

from pyspark.sql import DataFrame, Window, functions as F, types as T

from ..crc import crc32_combine
from ..load import RunSet
from .common import LOG_SLACK_S, Outcome, first_after, live_datanodes, runs_of, violation


_PATH_OPS = ("nn.file.truncate", "nn.file.delete", "nn.file.rename", "nn.file.create")


def check_d1(runs: RunSet) -> Outcome:
    """hflush is durable: the final length of every file (and the length read back) is at
    least the greatest client.hflush offset logged for it since its last create.

    A file truncated, renamed or deleted after its hflushes keeps the rule for its
    history up to that operation: a truncate to L lowers what must survive to L, a
    rename carries it to the new path (a folder's rename moves the files under it), and
    a delete or a re-create of the path leaves nothing to judge (such a file is not
    counted as exercised)."""
    judged = _d1_judged(runs)
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


def _d1_judged(runs: RunSet) -> DataFrame:
    """run_id, ts, node, event, path, offset, hflushed_path: the greatest hflush of each
    file since its last create (one per stretch up to a truncate, rename or delete), in
    runs with a final state, with `path` its final path and `offset` lowered by any
    truncate since (_follow_path_ops); files deleted or created anew are left out."""
    created = (runs.of("nn.file.create").select("run_id", "path", "ts")
               .unionByName(runs.of("client.stream.open").filter(F.col("mode") == "create")
                            .select("run_id", "path", "ts"))
               .groupBy("run_id", "path").agg(F.max("ts").alias("created")))
    hf = runs.of("client.hflush").join(created, ["run_id", "path"], "left") \
        .filter(F.col("created").isNull() | (F.col("ts") >= F.col("created") - LOG_SLACK_S))
    # the first truncate / rename / delete after each hflush, on its path or a folder
    # above it: the hflushes between two such operations share one greatest offset
    ops = runs.of(*_PATH_OPS[:3]).filter(F.col("path").isNotNull()).select(
        "run_id", "path", "ts", "eid")
    under = lambda l, r: ((l["path"] == r["o_path"])  # noqa: E731
                          | l["path"].startswith(F.concat(r["o_path"], F.lit("/"))))
    hf = (first_after(hf, ops, ["run_id"], "o_", extra=under)
          .withColumnRenamed("o_ts", "next_op").drop("o_path", "o_eid"))
    w = Window.partitionBy("run_id", "path", "next_op").orderBy(F.desc("offset"), "ts")
    top = (hf.withColumn("_rn", F.row_number().over(w)).filter("_rn = 1")
           .join(runs.fs_runs, "run_id", "left_semi")
           .select("run_id", "ts", "node", "event", "path", "offset", "next_op",
                   F.col("path").alias("hflushed_path")))
    direct = top.filter(F.col("next_op").isNull()).drop("next_op")
    later = _follow_path_ops(runs, top.filter(F.col("next_op").isNotNull()).drop("next_op"))
    return direct.unionByName(later)


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


_STREAM_KEY = ["run_id", "node", "stream"]


def _stream_summaries(runs: RunSet) -> DataFrame:
    """run_id, node, stream, path, first_ts, writes, first_off, end_off, len_sum, last_off,
    last_len, last_crc, last_stream_crc, first_stream_crc, with_crc: per output stream,
    from the loader's folded rows of the dense writes (a row per stream and block) and
    the rare writes. A write without `stream` is its own stream (null)."""
    dense = runs.folded.filter(F.col("event") == "client.write").select(
        "run_id", "node", "stream", "path", "first_ts", F.col("n").alias("writes"),
        "first_off", "end_off", "len_sum", "last_off", "last_len", "last_crc",
        "last_stream_crc", "first_stream_crc", F.col("n_stream_crc").alias("with_crc"))
    rare = runs.rare.filter(F.col("event") == "client.write").select(
        "run_id", "node", "stream", "path", F.col("ts").alias("first_ts"),
        F.lit(1).cast("long").alias("writes"), F.col("offset").alias("first_off"),
        F.try_add("offset", "len").alias("end_off"), F.col("len").alias("len_sum"),
        F.col("offset").alias("last_off"), F.col("len").alias("last_len"),
        F.col("crc").alias("last_crc"), F.col("stream_crc").alias("last_stream_crc"),
        F.col("stream_crc").alias("first_stream_crc"),
        F.col("stream_crc").isNotNull().cast("long").alias("with_crc"))
    return dense.unionByName(rare).groupBy(*_STREAM_KEY, "path").agg(
        F.min("first_ts").alias("first_ts"), F.sum("writes").alias("writes"),
        F.min("first_off").alias("first_off"), F.max("end_off").alias("end_off"),
        F.sum("len_sum").alias("len_sum"), F.max("last_off").alias("last_off"),
        F.max_by("last_len", "last_off").alias("last_len"),
        F.max_by("last_crc", "last_off").alias("last_crc"),
        F.max_by("last_stream_crc", "last_off").alias("last_stream_crc"),
        F.min_by("first_stream_crc", "first_off").alias("first_stream_crc"),
        F.sum("with_crc").alias("with_crc"))


def _file_ops(runs: RunSet) -> list:
    """Every run's namespace operations and stream opens, as rows in time order."""
    ops = (runs.of("nn.file.create", "nn.file.truncate", "nn.file.delete", "nn.file.rename",
                   "client.stream.open")
           .select("run_id", "ts", "eid", "node", "event", "path", "dst", "len", "offset",
                   "mode", "stream", "content"))
    return ops.orderBy("run_id", "ts", "eid").collect()


def _writes_at(runs: RunSet, cuts: list[tuple]) -> dict:
    """{(run_id, node, stream, b): write row}: the write of each stream that holds the
    byte before offset b (offset < b <= offset + len), read again from the logs of the
    clients concerned only (and the rare writes)."""
    if not cuts:
        return {}
    schema = T.StructType([T.StructField("_r", T.StringType()), T.StructField("_n", T.StringType()),
                           T.StructField("_s", T.LongType()), T.StructField("_b", T.LongType())])
    want = F.broadcast(runs.spark.createDataFrame(cuts, schema))
    logs = {(r, n) for r, n, _, _ in cuts}
    writes = (runs.lines_of(logs, "client.write").filter("dense AND event = 'client.write'")
              .select("run_id", "node", "stream", "offset", "len", "crc", "stream_crc")
              .unionByName(runs.rare.filter(F.col("event") == "client.write")
                           .select("run_id", "node", "stream", "offset", "len", "crc",
                                   "stream_crc")))
    hit = writes.join(want, (writes["run_id"] == want["_r"]) & (writes["node"] == want["_n"])
                      & (writes["stream"] == want["_s"]) & (writes["offset"] < want["_b"])
                      & (writes["offset"] + writes["len"] >= want["_b"]))
    return {(r["_r"], r["_n"], r["_s"], r["_b"]): r for r in hit.collect()}


def _content(name: str | None, seed: int | None):
    """The generator a stream names (`content`), or None when it cannot be rebuilt."""
    from hdfs_contract.content import CONTENT_NAME, Content
    if name == CONTENT_NAME and seed is not None:
        return Content(seed)
    return None


_LAYOUT = T.StructType([
    T.StructField("run_id", T.StringType()), T.StructField("path", T.StringType()),
    T.StructField("read_len", T.LongType()), T.StructField("read_crc", T.LongType()),
    T.StructField("final_len", T.LongType()), T.StructField("closed", T.BooleanType()),
    T.StructField("expected_crc", T.LongType()), T.StructField("covered", T.LongType()),
    T.StructField("why", T.StringType())])


def content_layout(runs: RunSet) -> DataFrame:
    """Per file of a run with final_state.json: what the writers' streams say about its
    bytes (module docstring). run_id, path, read_len, read_crc, final_len, closed,
    expected_crc (the CRC of the writers' bytes, when every byte could be checked),
    covered (how far the writers' kept bytes reach), why (null when D2 holds)."""
    return runs.memo("content_layout", lambda: runs.spark.createDataFrame(
        _layout(runs), _LAYOUT))


def _layout(runs: RunSet) -> list[tuple]:
    summaries = _stream_summaries(runs).collect()
    streams = {(r["run_id"], r["node"], r["stream"]): r
               for r in summaries if r["stream"] is not None}
    unnumbered = {(r["run_id"], r["path"]) for r in summaries if r["stream"] is None}
    seeds = {r["run_id"]: r["seed"] for r in runs.of("harness.run.start").collect()}
    finals = {r["run_id"] for r in runs.fs_runs.collect()}
    files = {(r["run_id"], r["path"]): r for r in runs.fs_files.collect()}
    readback = {(r["run_id"], r["path"]): r for r in runs.fs_readback.collect()}

    # replay each run: path -> [(start, end, stream key)], oldest first
    segs: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    opened: dict[tuple, dict] = {}
    placed: set = set()

    def cut(pieces, at):
        return [(a, min(b, at), k) for a, b, k in pieces if a < at]

    def place(rid, path, key, start):
        st = streams.get(key)
        end = st["end_off"] if st is not None and st["end_off"] is not None else start
        segs[rid][path] = cut(segs[rid][path], start) + ([(start, end, key)] if end > start
                                                         else [])
        placed.add(key)

    for op in _file_ops(runs):
        rid, path, ev = op["run_id"], op["path"], op["event"]
        if ev == "nn.file.create":
            segs[rid][path] = []
        elif ev == "nn.file.truncate" and op["len"] is not None:
            segs[rid][path] = cut(segs[rid][path], op["len"])
        elif ev == "nn.file.delete":
            segs[rid].pop(path, None)
        elif ev == "nn.file.rename" and op["dst"] is not None:
            segs[rid][op["dst"]] = segs[rid].pop(path, [])
        elif ev == "client.stream.open":
            key = (rid, op["node"], op["stream"])
            if op["mode"] == "create":
                segs[rid][path] = []
            if op["stream"] is None:
                continue
            opened[key] = op.asDict()
            st = streams.get(key)
            start = op["offset"] if op["offset"] is not None else (
                st["first_off"] if st is not None else 0)
            place(rid, path, key, start)
    # streams whose open is not logged: placed at their first write, after the others
    for key, st in sorted(streams.items(), key=lambda kv: (kv[1]["first_ts"] or 0)):
        if key not in placed and st["first_off"] is not None:
            place(key[0], st["path"], key, st["first_off"])

    # the cuts inside streams, looked up in one query
    inner = set()
    plans = {}
    for (rid, path), rb in readback.items():
        if rid not in finals or rb["len"] is None:
            continue
        pieces = sorted(cut(segs[rid].get(path, []), rb["len"]))
        plans[(rid, path)] = pieces
        for a, b, key in pieces:
            st = streams[key]
            if b != st["end_off"]:
                inner.add((*key, b))
    at = _writes_at(runs, sorted(inner))

    out = []
    for (rid, path) in sorted(set(readback) | set(files)):
        if rid not in finals:
            continue
        f, rb = files.get((rid, path)), readback.get((rid, path))
        final_len = f["len"] if f is not None else None
        closed = f["closed"] if f is not None else None
        if rb is None:
            why = (None if not final_len else
                   f"final_state lists {final_len} bytes but no read-back of the file: "
                   "its content cannot be checked")
            out.append((rid, path, None, None, final_len, closed, None, None, why))
            continue
        read_len, read_crc = rb["len"], rb["crc"]
        if rb["error"] is not None or read_len is None or read_crc is None:
            why = (f"the read-back failed ({rb['error']}): the content cannot be checked"
                   if rb["error"] is not None else
                   "the read-back has no length or CRC: the content cannot be checked")
            out.append((rid, path, read_len, read_crc, final_len, closed, None, None, why))
            continue
        expected, covered, why = _expected_crc(
            plans[(rid, path)], read_len, streams, opened, at, seeds.get(rid),
            (rid, path) in unnumbered)
        if why is None and closed and final_len is not None and final_len != read_len:
            why = f"read back {read_len} bytes of a closed file whose length is {final_len}"
        if why is None and expected != read_crc:
            why = f"CRC read back {read_crc} differs from the CRC {expected} of what was written"
        out.append((rid, path, read_len, read_crc, final_len, closed,
                    expected, covered, why))
    return out


def _expected_crc(pieces: list, read_len: int, streams: dict, opened: dict, at: dict,
                  seed: int | None, unnumbered: bool) -> tuple:
    """(expected CRC, bytes covered, why not checkable or null) of one file's pieces."""
    pos, crc = 0, 0
    for a, b, key in pieces:
        if a != pos:
            return None, pos, f"bytes from offset {pos} were read back but no writer wrote them"
        st = streams[key]
        who = f"stream {key[2]} of {key[1]}"
        if st["with_crc"] != st["writes"]:
            return None, pos, (f"{who}: {st['writes'] - st['with_crc']} of its client.write "
                               "events lack stream_crc, so its bytes cannot be checked")
        if (st["first_off"] != a or st["len_sum"] != st["end_off"] - st["first_off"]
                or st["first_stream_crc"] != 0):
            return None, pos, (f"{who}: its writes do not run contiguously from offset {a} "
                               f"(first at {st['first_off']}, {st['len_sum']} bytes up to "
                               f"{st['end_off']}), so its bytes cannot be checked")
        if b == st["end_off"]:
            part = crc32_combine(st["last_stream_crc"], st["last_crc"], st["last_len"])
        else:
            w = at.get((*key, b))
            if w is None:
                return None, pos, f"{who}: no client.write holds offset {b - 1}"
            if b == w["offset"] + w["len"]:
                part = crc32_combine(w["stream_crc"], w["crc"], w["len"])
            else:
                gen = _content((opened.get(key) or {}).get("content"), seed)
                if gen is None:
                    return None, pos, (
                        f"{who}: the file ends at {b}, inside the write at offset "
                        f"{w['offset']} ({w['len']} bytes), and the stream names no content "
                        "generator: bytes from " f"{w['offset']} to {b} cannot be checked")
                data = gen.get(st["path"], w["offset"], w["len"])
                if zlib.crc32(data) != w["crc"]:
                    return None, pos, (
                        f"{who}: the write at offset {w['offset']} is not what its content "
                        f"generator gives, so its first {b - w['offset']} bytes cannot be "
                        "checked")
                k = b - w["offset"]
                part = crc32_combine(w["stream_crc"], zlib.crc32(data[:k]), k)
        crc = crc32_combine(crc, part, b - a)
        pos = b
    if pos < read_len:
        why = (f"{read_len} bytes read back, but writers wrote only up to offset {pos}"
               + (" (some of its client.write events lack `stream`: an older writer)"
                  if unnumbered else ""))
        return None, pos, why
    return crc, pos, None


def check_d2(runs: RunSet) -> Outcome:
    """Content: every byte of every file's final length, as read back, is the byte the
    writers wrote there (module docstring); a byte that cannot be checked fails."""
    lay = content_layout(runs)
    bad = lay.filter(F.col("why").isNotNull())
    return Outcome(runs_of(lay), violation(
        bad, F.col("why"), "path", "read_len", "read_crc", "expected_crc", "covered",
        "final_len", ts=F.lit(None), node=F.lit("final_state"),
        event=F.lit("final_state.readback")))


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
