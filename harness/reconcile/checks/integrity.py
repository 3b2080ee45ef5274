"""Check I1 (spec/CHECKS.md): the logs of a run are complete, so that the other checks'
passes mean something. A run without logs, with a log cut inside or torn, with a
process that left no log, without final_state.json or with a harness that did not end
well fails here with the node and what is missing, never as a quiet skip elsewhere.

Every run is judged (there is always a folder to look at), so I1 never skips.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, functions as F, types as T

from ..load import RunSet
from .common import Outcome, union_all, violation

# harness.run.end statuses of a run that went through: EVENTS.md says `ok`; the runner
# writes `completed` (its other values: timeout, error, interrupted)
RUN_OK = ("ok", "completed")


def _driver_facts(runs: RunSet) -> DataFrame:
    """run_id, has_events, has_final: what the driver saw of each run folder."""
    rows = [(rid, bool(info.event_files), bool(info.has_final_state))
            for rid, info in runs.runs.items()]
    # a schema, not DDL text: through Spark Connect the server would parse the text
    return runs.spark.createDataFrame(rows, T.StructType([
        T.StructField("run_id", T.StringType()), T.StructField("has_events", T.BooleanType()),
        T.StructField("has_final", T.BooleanType())]))


def check_i1(runs: RunSet) -> Outcome:
    """Logs complete: events/ has logs; every process the harness started (its
    harness.node.start targets) has a log; each log's seqs are 0, 1, ..., each once
    (a killed process may end early: a missing tail is no gap); no malformed
    line; final_state.json exists and parses; the cluster settled before it was taken
    (harness.quiescent reached); harness.run.end says the run went through."""
    facts = _driver_facts(runs)
    no_events, no_final, bad_final = _i1_missing_files(runs, facts)
    not_ok, unsettled, no_end = _i1_run_end(runs, facts)
    return Outcome(runs.runs_df,
                   union_all([no_events, no_final, bad_final, _i1_no_log(runs),
                              _i1_bad_logs(runs), not_ok, unsettled, no_end]))


def _i1_missing_files(runs: RunSet, facts: DataFrame) -> tuple[DataFrame, DataFrame, DataFrame]:
    """I1's violations of the run folder: no event logs; no final_state.json; one that
    does not parse."""
    no_events = violation(
        facts.filter(~F.col("has_events")),
        "the run has no event logs (no events/*.jsonl): nothing of it can be checked",
        ts=F.lit(None), node=F.lit("events"), event=F.lit("events/"))
    no_final = violation(
        facts.filter(~F.col("has_final")),
        "final_state.json is missing: the final layout, replicas and read-back are unknown",
        ts=F.lit(None), node=F.lit("final_state"), event=F.lit("final_state.json"))
    unreadable = facts.filter("has_final").join(runs.fs_runs, "run_id", "left_anti")
    bad_final = violation(unreadable, "final_state.json does not parse",
                          ts=F.lit(None), node=F.lit("final_state"),
                          event=F.lit("final_state.json"))
    return no_events, no_final, bad_final


def _i1_no_log(runs: RunSet) -> DataFrame:
    """I1's violations of processes the harness started (harness.node.start) that left
    no log."""
    started = (runs.of("harness.node.start").filter(F.col("target").isNotNull())
               .groupBy("run_id", "target").agg(F.min("ts").alias("ts")))
    missing = started.join(runs.log_stats.select("run_id", F.col("log").alias("target")),
                           ["run_id", "target"], "left_anti")
    return violation(
        missing, F.format_string("%s was started by the harness but left no log "
                                 "(events/%s.jsonl is missing)", F.col("target"),
                                 F.col("target")),
        F.col("target").alias("process"), node="target", event=F.lit("harness.node.start"))


def _i1_bad_logs(runs: RunSet) -> DataFrame:
    """I1's violations of the logs themselves: empty, not starting at seq 0, seqs not
    each once, malformed lines (all of a log's faults in one row)."""
    logs = runs.log_stats.withColumn("what", F.concat_ws("; ", F.array_compact(F.array(
        F.when(F.col("lines") == 0, F.lit("the log is empty")),
        F.when(F.col("min_seq") != 0,
               F.format_string("its first seq is %d, not 0 (the start of the log is lost)",
                               F.col("min_seq"))),
        F.when(~F.col("seq_ok"),
               F.format_string("its seqs %d..%d are not each once (lines lost, repeated or "
                               "torn inside the log): %s", F.col("min_seq"), F.col("max_seq"),
                               F.concat_ws("; ", F.array_compact(F.array(
                                   F.concat(F.lit("missing "), F.col("seq_missing")),
                                   F.concat(F.lit("repeated "), F.col("seq_repeated")),
                                   F.when(F.col("no_seq") > 0, F.format_string(
                                       "%d line(s) without a seq", F.col("no_seq")))))))),
        F.when(F.col("malformed") > 0,
               F.format_string("%d malformed line(s)", F.col("malformed")))))))
    return violation(
        logs.filter(F.col("what") != ""),
        F.format_string("events/%s.jsonl: %s", F.col("log"), F.col("what")),
        "log", "lines", "malformed", "min_seq", "max_seq", "seq_missing", "seq_repeated",
        ts=F.lit(None), node=F.coalesce("node", "log"), event=F.lit("log"))


def _i1_run_end(runs: RunSet, facts: DataFrame) -> tuple[DataFrame, DataFrame, DataFrame]:
    """I1's violations of how the run ended: harness.run.end not ok; the cluster never
    settled; no harness.run.end at all."""
    ends = runs.of("harness.run.end").select("run_id", "ts", "node", "event", "status")
    not_ok = violation(
        ends.filter(~F.coalesce(F.col("status").isin(*RUN_OK), F.lit(False))),
        F.format_string("harness.run.end has status %s, not ok: the run did not go through",
                        F.coalesce(F.col("status"), F.lit("(none)"))),
        "status")
    # the runner waits for every file closed and every COMPLETE block replicated before
    # it takes final_state.json; a run that never got there was judged on a cluster
    # still moving (a stale replica never deleted, a file never closed)
    unsettled = violation(
        runs.of("harness.quiescent").filter(F.col("reached") == F.lit(False)),
        F.format_string("the cluster never settled: %s (final_state.json shows a cluster "
                        "still moving)", F.coalesce(F.col("reason"), F.lit("no reason given"))),
        "waited")
    no_end = violation(
        facts.filter("has_events").join(ends, "run_id", "left_anti"),
        "the harness log has no harness.run.end: the run did not finish (or its log is cut)",
        ts=F.lit(None), node=F.lit("harness"), event=F.lit("harness.run.end"))
    return not_ok, unsettled, no_end
