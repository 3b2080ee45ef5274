"""Metrics of a run (spec/CHECKS.md "Metrics"): recovery latencies, recovery counts,
bytes written and throughput. Computed for every loaded run in Spark; only the per-run
numbers are collected.

- pipeline_recovery_s: harness.fault.inject to the next client.pipeline.recovered in
  the run (a fault followed by another fault before any recovery is not measured);
- lease_recovery_s: a client crash (harness.node.kill of a client, or a crash_client
  fault) to the nn.file.close of each file that client had open;
- block_recovery_s: nn.recovery.start to the nn.recovery.commit of the same recovery id;
  each of these is the worst (largest) in the run, every value is in
  `recovery_latencies_s`;
- pipeline_recoveries (client.pipeline.recovered), block_recoveries (distinct recovery
  ids started), lease_recoveries (distinct (path, old holder) whose lease was recovered
  or reassigned, for holders that opened a file for writing: not the recovering client
  that a recovery handed the lease to), replacements (client.pipeline.replace decision added);
- bytes_written (sum of client.write len) and throughput_mbps: megabytes (10^6 bytes)
  per second, from the first client.stream.open to the last client.close.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window, functions as F

from .checks.common import (assign_stream, client_streams, first_after, node_deaths,
                            union_all)
from .load import RunSet

METRIC_NAMES = ["lease_recovery_s", "pipeline_recovery_s", "block_recovery_s",
                "pipeline_recoveries", "block_recoveries", "lease_recoveries", "replacements",
                "bytes_written", "throughput_mbps"]


LATENCY_KINDS = ("pipeline", "lease", "block")


def pipeline_latencies(runs: RunSet) -> DataFrame:
    """run_id, fault, kind, ts, latency: fault injection to the pipeline recovery it caused."""
    faults = (runs.of("harness.fault.inject").filter(F.coalesce(F.col("kind"), F.lit("")) != "heal")
              .select("run_id", "eid", "ts", "fault", "kind", "target"))
    w = Window.partitionBy("run_id").orderBy("ts", "eid")
    faults = faults.withColumn("next_fault", F.lead("ts").over(w))
    rec = runs.of("client.pipeline.recovered").select("run_id", "eid", "ts", "block", "node")
    j = first_after(faults, rec, ["run_id"], "r_")
    return (j.filter(F.col("r_ts").isNotNull()
                     & (F.col("next_fault").isNull() | (F.col("r_ts") <= F.col("next_fault"))))
            .select("run_id", "fault", "kind", "ts", (F.col("r_ts") - F.col("ts")).alias("latency")))


def lease_latencies(runs: RunSet) -> DataFrame:
    """run_id, target, path, ts, latency: client crash to the close of each open file."""
    clients = runs.node_facts.filter(F.col("role") == "client").select(
        "run_id", F.col("node").alias("target")).distinct()
    crashes = node_deaths(runs).filter(F.col("event") != "harness.node.stop") \
        .join(clients, ["run_id", "target"], "left_semi") \
        .dropDuplicates(["run_id", "target", "ts"]) \
        .withColumn("ckey", F.monotonically_increasing_id())
    st = client_streams(runs)
    ends = (assign_stream(runs.of("client.close", "client.stream.error")
                          .select("run_id", "node", "path", "ts"), st)
            .groupBy("run_id", "node", "path", "s_open").agg(F.min("ts").alias("s_close")))
    s = st.join(ends, ["run_id", "node", "path", "s_open"], "left")
    c = crashes.alias("c")
    o = s.alias("s")
    open_at = c.join(o, (F.col("c.run_id") == F.col("s.run_id")) & (F.col("c.target") == F.col("s.node"))
                     & (F.col("s.s_open") < F.col("c.ts"))
                     & (F.col("s.s_close").isNull() | (F.col("s.s_close") > F.col("c.ts")))) \
        .select(F.col("c.run_id").alias("run_id"), F.col("c.target").alias("target"),
                F.col("s.path").alias("path"), F.col("c.ts").alias("ts"), "ckey")
    open_at = open_at.withColumn("eid", F.monotonically_increasing_id())
    closes = runs.of("nn.file.close").select("run_id", "path", "ts", "eid")
    j = first_after(open_at, closes, ["run_id", "path"], "f_")
    return j.filter(F.col("f_ts").isNotNull()).select(
        "run_id", "target", "path", "ts", (F.col("f_ts") - F.col("ts")).alias("latency"))


def block_latencies(runs: RunSet) -> DataFrame:
    """run_id, block, recovery_id, ts, latency: nn.recovery.start to its commit."""
    st = runs.of("nn.recovery.start").groupBy("run_id", "block", "recovery_id").agg(
        F.min("ts").alias("ts"))
    cm = runs.of("nn.recovery.commit").groupBy("run_id", "block", "recovery_id").agg(
        F.min("ts").alias("c_ts"))
    return st.join(cm, ["run_id", "block", "recovery_id"]).select(
        "run_id", "block", "recovery_id", "ts", (F.col("c_ts") - F.col("ts")).alias("latency"))


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
    """{run_id: {metric: value, ..., "recovery_latencies_s": {...}}} for every run."""
    # each latency only where the runs logged both of its ends (a query not planned is
    # half a second less for a run without, say, any block recovery)
    names = runs.event_names
    parts = []
    if {"harness.fault.inject", "client.pipeline.recovered"} <= names:
        parts.append(pipeline_latencies(runs).select("run_id", F.lit("pipeline").alias("kind"),
                                                     "latency"))
    if "nn.file.close" in names and _a_client_died(runs):
        parts.append(lease_latencies(runs).select("run_id", F.lit("lease").alias("kind"),
                                                  "latency"))
    if {"nn.recovery.start", "nn.recovery.commit"} <= names:
        parts.append(block_latencies(runs).select("run_id", F.lit("block").alias("kind"),
                                                  "latency"))
    lat = None
    if parts:   # one column per kind: run_id, pipeline, lease, block (lists of latencies)
        lat = (union_all(parts).groupBy("run_id").pivot("kind", list(LATENCY_KINDS))
               .agg(F.sort_array(F.collect_list(F.round("latency", 6)))))
    # per-event totals come from the one pass RunSet.event_stats already made
    st = runs.event_stats
    ev = F.col("event")
    counts = st.groupBy("run_id").agg(
        F.sum(F.when(ev == "client.pipeline.recovered", F.col("events"))).alias("pipeline_recoveries"),
        F.sum(F.when(ev == "client.write", F.col("len_sum"))).alias("bytes_written"),
        F.min(F.when(ev.isin("client.stream.open", "client.write"), F.col("first_ts"))).alias("w_start"),
        F.max(F.when(ev.isin("client.close", "client.write", "client.ack"), F.col("last_ts"))).alias("w_end"),
    )
    per_run = [counts]
    if "nn.recovery.start" in names:
        per_run.append(runs.of("nn.recovery.start").groupBy("run_id").agg(
            F.countDistinct(F.struct("block", "recovery_id")).alias("block_recoveries")))
    if "client.pipeline.replace" in names:
        per_run.append(runs.of("client.pipeline.replace").filter(F.col("decision") == "added")
                       .groupBy("run_id").agg(F.count(F.lit(1)).alias("replacements")))
    if names & {"nn.lease.recover", "nn.lease.reassign"}:
        # a writer's lease: one its holder took by create or append. A recovery hands the
        # lease to the recovering client (HDFS's reassignLease); that client's repeated
        # recoverLease while the block recovery runs recovers this lease again (Hadoop
        # logs it), which is the same recovery, not another
        writers = runs.of("nn.file.create", "nn.file.append").select("run_id", "holder")
        per_run.append(
            runs.of("nn.lease.recover").filter(F.col("result") != "error")
            .select("run_id", "path", "holder")
            .unionByName(runs.of("nn.lease.reassign").select("run_id", "path",
                                                            F.col("old_holder").alias("holder")))
            .filter(F.col("holder").isNotNull())
            .join(writers, ["run_id", "holder"], "left_semi").distinct()
            .groupBy("run_id").agg(F.count(F.lit(1)).alias("lease_recoveries")))
    per_run.append(runs.malformed.groupBy("run_id").agg(F.count(F.lit(1)).alias("malformed_lines")))
    if lat is not None:
        per_run.append(lat.select("run_id", *[F.col(k).alias(f"lat_{k}") for k in LATENCY_KINDS]))
    j = runs.runs_df
    for df in per_run:
        j = j.join(df, "run_id", "left")
    rows = [r.asDict() for r in j.collect()]   # one query for every metric
    out: dict[str, dict] = {}
    for r in rows:
        span = (r["w_end"] - r["w_start"]) if r["w_end"] is not None and r["w_start"] is not None else None
        written = int(r["bytes_written"] or 0)
        out[r["run_id"]] = {
            "lease_recovery_s": None, "pipeline_recovery_s": None, "block_recovery_s": None,
            "pipeline_recoveries": int(r["pipeline_recoveries"] or 0),
            "block_recoveries": int(r.get("block_recoveries") or 0),
            "lease_recoveries": int(r.get("lease_recoveries") or 0),
            "replacements": int(r.get("replacements") or 0),
            "bytes_written": written,
            "throughput_mbps": round(written / span / 1e6, 3) if span and span > 0 else None,
            "malformed_lines": int(r["malformed_lines"] or 0),
            "recovery_latencies_s": {"pipeline": [], "lease": [], "block": []},
        }
        for kind in LATENCY_KINDS:
            values = [float(v) for v in (r.get(f"lat_{kind}") or [])]
            out[r["run_id"]]["recovery_latencies_s"][kind] = values
            out[r["run_id"]][f"{kind}_recovery_s"] = round(max(values), 3) if values else None
    return out
