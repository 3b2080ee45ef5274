"""Metrics of a run (spec/CHECKS.md "Metrics"): recovery latencies, recovery counts,
bytes written and throughput. Computed for every loaded run in Spark; only the per-run
numbers are collected.

- pipeline_recovery_s: harness.fault.inject to the next client.pipeline.recovered in
  the run (a fault followed by another fault before any recovery is not measured);
- lease_recovery_s: for each lease recovery counted in lease_recoveries, from its start
  to the nn.file.close of the file: the start is the crash of the holder's client
  (harness.node.kill of a client, or a crash_client fault) while it had the file open,
  else the first nn.lease.recover or nn.lease.reassign of that lease;
- block_recovery_s: nn.recovery.start to the nn.recovery.commit of the same recovery id;
  each of these is the worst (largest) in the run, every value is in
  `recovery_latencies_s`. A recovery that was counted but has no latency (a block
  recovery never committed, a file never closed, a pipeline recovery no fault preceded)
  is in `unmeasured_recoveries` with the reason, so that for each kind
  len(recovery_latencies_s[kind]) + len(unmeasured_recoveries[kind]) == {kind}_recoveries;
- pipeline_recoveries (client.pipeline.recovered), block_recoveries (distinct recovery
  ids started), lease_recoveries (distinct (path, old holder) whose lease was recovered
  or reassigned, for holders that opened a file for writing: not the recovering client
  that a recovery handed the lease to), replacements (client.pipeline.replace decision added);
- bytes_written (sum of client.write len) and throughput_mbps: megabytes (10^6 bytes)
  per second, from the first client.stream.open to the last client.close.
`units` names the unit of every metric.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window, functions as F

from .checks.common import (assign_stream, client_streams, first_after, node_deaths,
                            union_all)
from .evidence import CLOSE_SLACK_S
from .load import RunSet

METRIC_NAMES = ["lease_recovery_s", "pipeline_recovery_s", "block_recovery_s",
                "pipeline_recoveries", "block_recoveries", "lease_recoveries", "replacements",
                "bytes_written", "throughput_mbps"]


LATENCY_KINDS = ("pipeline", "lease", "block")
UNITS = {"lease_recovery_s": "s", "pipeline_recovery_s": "s", "block_recovery_s": "s",
         "pipeline_recoveries": "count", "block_recoveries": "count",
         "lease_recoveries": "count", "replacements": "count", "bytes_written": "bytes",
         "throughput_mbps": "MB/s (10^6 bytes per second)", "malformed_lines": "count",
         "recovery_latencies_s": "s", "unmeasured_recoveries": "s since the run's first event"}


def pipeline_latencies(runs: RunSet) -> DataFrame:
    """run_id, fault, kind, ts, latency: fault injection to the pipeline recovery it caused."""
    # every inject is a fault of its own (a heal fault holds no effect and logs none)
    faults = runs.of("harness.fault.inject").select("run_id", "eid", "ts", "fault", "kind",
                                                    "target")
    w = Window.partitionBy("run_id").orderBy("ts", "eid")
    faults = faults.withColumn("next_fault", F.lead("ts").over(w))
    rec = runs.of("client.pipeline.recovered").select("run_id", "eid", "ts", "block", "node")
    j = first_after(faults, rec, ["run_id"], "r_")
    return (j.filter(F.col("r_ts").isNotNull()
                     & (F.col("next_fault").isNull() | (F.col("r_ts") <= F.col("next_fault"))))
            .select("run_id", "fault", "kind", "ts", (F.col("r_ts") - F.col("ts")).alias("latency"),
                    F.col("r_eid").alias("recovered_eid")))


# the columns each of these returns: compute_metrics names them to odd() (through Spark
# Connect, df.columns is a request)
UNMEASURED_PIPELINE_COLUMNS = ("run_id", "ts", "node", "block")
LEASE_LATENCY_COLUMNS = ("run_id", "path", "holder", "ts", "latency")
BLOCK_LATENCY_COLUMNS = ("run_id", "block", "recovery_id", "path", "ts", "latency")


def unmeasured_pipeline(runs: RunSet) -> DataFrame:
    """run_id, ts, node, block: the client.pipeline.recovered events no fault measured
    (none came before them, or another recovery was the first after the fault)."""
    rec = runs.of("client.pipeline.recovered").select("run_id", "eid", "ts", "node", "block")
    if "harness.fault.inject" not in runs.event_names:
        return rec.select(*UNMEASURED_PIPELINE_COLUMNS)
    got = pipeline_latencies(runs).select("run_id", F.col("recovered_eid").alias("eid"))
    return rec.join(got, ["run_id", "eid"], "left_anti").select(*UNMEASURED_PIPELINE_COLUMNS)


def lease_recoveries(runs: RunSet) -> DataFrame:
    """run_id, path, holder, r_ts: each writer's lease that was recovered or reassigned
    (what lease_recoveries counts), with its first recovery event."""
    # a writer's lease: one its holder took by create or append. A recovery hands the
    # lease to the recovering client (HDFS's reassignLease); that client's repeated
    # recoverLease while the block recovery runs recovers this lease again (Hadoop
    # logs it), which is the same recovery, not another: so only a holder that had
    # opened this path itself before the recovery counts, not one that appends later
    writers = (runs.of("nn.file.create", "nn.file.append")
               .select(F.col("run_id").alias("_r"), F.col("path").alias("_p"),
                       F.col("holder").alias("_h"), F.col("ts").alias("_t")))
    rec = (runs.of("nn.lease.recover").filter(F.col("result") != "error")
           .select("run_id", "path", "holder", "ts")
           .unionByName(runs.of("nn.lease.reassign").select(
               "run_id", "path", F.col("old_holder").alias("holder"), "ts"))
           .filter(F.col("holder").isNotNull()))
    return (rec.join(writers, (rec["run_id"] == writers["_r"]) & (rec["path"] == writers["_p"])
                     & (rec["holder"] == writers["_h"]) & (writers["_t"] <= rec["ts"]),
                     "left_semi")
            .groupBy("run_id", "path", "holder").agg(F.min("ts").alias("r_ts")))


def _crashed_open(runs: RunSet) -> DataFrame:
    """run_id, path, holder, c_ts: a client crash while its stream of `path` was open."""
    clients = runs.node_facts.filter(F.col("role") == "client").select(
        "run_id", F.col("node").alias("target")).distinct()
    crashes = node_deaths(runs).filter(F.col("event") != "harness.node.stop") \
        .join(clients, ["run_id", "target"], "left_semi") \
        .dropDuplicates(["run_id", "target", "ts"])
    st = client_streams(runs)
    ends = (assign_stream(runs.of("client.close", "client.stream.error")
                          .select("run_id", "node", "path", "ts"), st)
            .groupBy("run_id", "node", "path", "s_open").agg(F.min("ts").alias("s_close")))
    s = st.join(ends, ["run_id", "node", "path", "s_open"], "left")
    c = crashes.alias("c")
    o = s.alias("s")
    return c.join(o, (F.col("c.run_id") == F.col("s.run_id")) & (F.col("c.target") == F.col("s.node"))
                  & (F.col("s.s_open") < F.col("c.ts"))
                  & (F.col("s.s_close").isNull() | (F.col("s.s_close") > F.col("c.ts")))) \
        .select(F.col("c.run_id").alias("run_id"), F.col("s.path").alias("path"),
                F.col("s.s_holder").alias("holder"), F.col("c.ts").alias("c_ts"))


def lease_latencies(runs: RunSet) -> DataFrame:
    """run_id, path, holder, ts, latency: each counted lease recovery, from its start
    (the holder's crash while the file was open, else its first recovery event) to the
    first nn.file.close of the file from then on; latency null: the file never closed."""
    rec = lease_recoveries(runs)
    if _a_client_died(runs):
        crash = _crashed_open(runs).alias("k")
        r = rec.alias("r")
        rec = (r.join(crash, (F.col("r.run_id") == F.col("k.run_id"))
                      & (F.col("r.path") == F.col("k.path"))
                      & (F.col("r.holder") == F.col("k.holder"))
                      & (F.col("k.c_ts") <= F.col("r.r_ts")), "left")
               .groupBy(F.col("r.run_id").alias("run_id"), F.col("r.path").alias("path"),
                        F.col("r.holder").alias("holder"), F.col("r.r_ts").alias("r_ts"))
               .agg(F.min("k.c_ts").alias("c_ts"))
               .withColumn("r_ts", F.coalesce("c_ts", "r_ts")).drop("c_ts"))
    # a recovery that closes the file at once logs nn.file.close just before its
    # nn.lease.recover (result closed): closes from CLOSE_SLACK_S before the start count
    rec = (rec.withColumnRenamed("r_ts", "start").withColumn("ts", F.col("start") - CLOSE_SLACK_S)
           .withColumn("eid", F.monotonically_increasing_id()))
    closes = runs.of("nn.file.close").select("run_id", "path", "ts", "eid")
    j = first_after(rec, closes, ["run_id", "path"], "f_", strict=False)
    return (j.withColumn("latency", F.greatest(F.col("f_ts") - F.col("start"), F.lit(0.0)))
            .withColumn("ts", F.col("start")).select(*LEASE_LATENCY_COLUMNS))


def block_latencies(runs: RunSet) -> DataFrame:
    """run_id, block, recovery_id, path, ts, latency: nn.recovery.start to its commit
    (latency null: never committed)."""
    st = runs.of("nn.recovery.start").groupBy("run_id", "block", "recovery_id").agg(
        F.min("ts").alias("ts"), F.first("path", ignorenulls=True).alias("path"))
    cm = runs.of("nn.recovery.commit").groupBy("run_id", "block", "recovery_id").agg(
        F.min("ts").alias("c_ts"))
    return (st.join(cm, ["run_id", "block", "recovery_id"], "left")
            .withColumn("latency", F.col("c_ts") - F.col("ts")).select(*BLOCK_LATENCY_COLUMNS))


def _a_client_died(runs: RunSet) -> bool:
    """Whether any run killed or crashed a client (what lease_latencies measures from):
    two small look-ups instead of planning that query for every run with a fault, most
    of which kill or cut DataNodes."""
    if not runs.event_names & {"harness.node.kill", "harness.fault.inject"}:
        return False
    clients = runs.node_facts.filter(F.col("role") == "client").select(
        "run_id", F.col("node").alias("target"))
    deaths = node_deaths(runs).filter(F.col("event") != "harness.node.stop")
    return bool(deaths.join(clients, ["run_id", "target"], "left_semi").limit(1).collect())


def compute_metrics(runs: RunSet) -> dict[str, dict]:
    """{run_id: {metric: value, ..., "recovery_latencies_s": {...},
    "unmeasured_recoveries": {...}, "units": {...}}} for every run."""
    # each latency only where the runs logged what it starts from (a query not planned
    # is half a second less for a run without, say, any block recovery)
    names = runs.event_names
    lat_parts, odd_parts = [], []   # measured latencies; counted recoveries without one
    odd_cols = ("ts", "node", "path", "holder", "block", "recovery_id", "why")

    def odd(df: DataFrame, columns: tuple[str, ...], kind: str, why: str) -> DataFrame:
        # `columns`: df's own (through Spark Connect, df.columns is a request)
        return df.select("run_id", F.lit(kind).alias("kind"), *[
            (F.col(c) if c in columns else F.lit(None)).cast(t).alias(c)
            for c, t in zip(odd_cols[:-1], ("double", "string", "string", "string", "long",
                                             "long"))], F.lit(why).alias("why"))

    if {"harness.fault.inject", "client.pipeline.recovered"} <= names:
        lat_parts.append(pipeline_latencies(runs).select(
            "run_id", F.lit("pipeline").alias("kind"), "latency"))
    if "client.pipeline.recovered" in names:
        odd_parts.append(odd(unmeasured_pipeline(runs), UNMEASURED_PIPELINE_COLUMNS,
                             "pipeline",
                             "no fault measured it (none before it, or another recovery "
                             "came first after the fault)"))
    lease = block = None
    if names & {"nn.lease.recover", "nn.lease.reassign"}:
        lease = lease_latencies(runs)
        lat_parts.append(lease.filter(F.col("latency").isNotNull()).select(
            "run_id", F.lit("lease").alias("kind"), "latency"))
        odd_parts.append(odd(lease.filter(F.col("latency").isNull()), LEASE_LATENCY_COLUMNS,
                             "lease",
                             "the file never closed"))
    if "nn.recovery.start" in names:
        block = block_latencies(runs)
        lat_parts.append(block.filter(F.col("latency").isNotNull()).select(
            "run_id", F.lit("block").alias("kind"), "latency"))
        odd_parts.append(odd(block.filter(F.col("latency").isNull()), BLOCK_LATENCY_COLUMNS,
                             "block",
                             "never committed"))
    # per-event totals come from the one pass RunSet.event_stats already made
    st = runs.event_stats
    ev = F.col("event")
    counts = st.groupBy("run_id").agg(
        F.sum(F.when(ev == "client.pipeline.recovered", F.col("events"))).alias("pipeline_recoveries"),
        F.sum(F.when(ev == "client.write", F.col("len_sum"))).alias("bytes_written"),
        F.min(F.when(ev.isin("client.stream.open", "client.write"), F.col("first_ts"))).alias("w_start"),
        F.max(F.when(ev.isin("client.close", "client.write", "client.ack"), F.col("last_ts"))).alias("w_end"),
    )
    per_run = [counts, runs.bounds.select("run_id", "start_ts")]
    if block is not None:
        per_run.append(block.groupBy("run_id").agg(F.count(F.lit(1)).alias("block_recoveries")))
    if lease is not None:
        per_run.append(lease.groupBy("run_id").agg(F.count(F.lit(1)).alias("lease_recoveries")))
    if "client.pipeline.replace" in names:
        per_run.append(runs.of("client.pipeline.replace").filter(F.col("decision") == "added")
                       .groupBy("run_id").agg(F.count(F.lit(1)).alias("replacements")))
    per_run.append(runs.malformed.groupBy("run_id").agg(F.count(F.lit(1)).alias("malformed_lines")))
    if lat_parts:   # one column per kind: run_id, pipeline, lease, block (lists of latencies)
        lat = (union_all(lat_parts).groupBy("run_id").pivot("kind", list(LATENCY_KINDS))
               .agg(F.sort_array(F.collect_list(F.round("latency", 6)))))
        per_run.append(lat.select("run_id", *[F.col(k).alias(f"lat_{k}") for k in LATENCY_KINDS]))
    if odd_parts:
        un = (union_all(odd_parts).groupBy("run_id").pivot("kind", list(LATENCY_KINDS))
              .agg(F.sort_array(F.collect_list(F.struct(*odd_cols)))))
        per_run.append(un.select("run_id", *[F.col(k).alias(f"odd_{k}") for k in LATENCY_KINDS]))
    j = runs.runs_df
    for df in per_run:
        j = j.join(df, "run_id", "left")
    rows = [r.asDict(recursive=True) for r in j.collect()]   # one query for every metric
    out: dict[str, dict] = {}
    for r in rows:
        span = (r["w_end"] - r["w_start"]) if r["w_end"] is not None and r["w_start"] is not None else None
        written = int(r["bytes_written"] or 0)
        m = out[r["run_id"]] = {
            "lease_recovery_s": None, "pipeline_recovery_s": None, "block_recovery_s": None,
            "pipeline_recoveries": int(r["pipeline_recoveries"] or 0),
            "block_recoveries": int(r.get("block_recoveries") or 0),
            "lease_recoveries": int(r.get("lease_recoveries") or 0),
            "replacements": int(r.get("replacements") or 0),
            "bytes_written": written,
            "throughput_mbps": round(written / span / 1e6, 3) if span and span > 0 else None,
            "malformed_lines": int(r["malformed_lines"] or 0),
            "recovery_latencies_s": {"pipeline": [], "lease": [], "block": []},
            "unmeasured_recoveries": {"pipeline": [], "lease": [], "block": []},
            "units": dict(UNITS),
        }
        t0 = r.get("start_ts")
        for kind in LATENCY_KINDS:
            values = [float(v) for v in (r.get(f"lat_{kind}") or [])]
            m["recovery_latencies_s"][kind] = values
            m[f"{kind}_recovery_s"] = round(max(values), 3) if values else None
            m["unmeasured_recoveries"][kind] = [_unmeasured(u, t0) for u in r.get(f"odd_{kind}") or []]
    return out


def _unmeasured(u: dict, t0: float | None) -> dict:
    """A counted recovery without a latency, its time relative to the run's first event."""
    item = {"t": round(u["ts"] - t0, 3) if u.get("ts") is not None and t0 is not None else None}
    item.update({k: v for k, v in u.items() if k not in ("ts",) and v is not None})
    return item
