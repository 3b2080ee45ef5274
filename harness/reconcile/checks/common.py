"""Building blocks shared by the checks: the outcome shape, evidence rows, and the
derived tables several checks need (client streams, lease intervals, live nodes).

A check returns an `Outcome`: the runs it exercised and its violations, both Spark
DataFrames. A violation row is one event that proves the failure, made readable:
run_id, ts, node, event, why (one sentence) and fields (JSON of the key fields).
The runner turns outcomes into pass / fail / skip per run.
"""

from __future__ import annotations

import dataclasses

from pyspark.sql import Column, DataFrame, Window, functions as F

from ...scenario import kind_names
from ..load import RunSet

INF = float("inf")
# Tolerance for timestamps of two events that the same process logs around one decision
# (log calls are not atomic with the state change they report).
LOG_SLACK_S = 0.05


@dataclasses.dataclass
class Outcome:
    """What a check found: `exercised` (run_id) and `violations` (evidence rows)."""
    exercised: DataFrame
    violations: DataFrame


@dataclasses.dataclass(frozen=True)
class Starts:
    """Events a check starts from: every row it can give, an exercised run or a
    violation, derives from an `event` event that meets `where` (SQL over its fields;
    None: every one). The check reads them with `rows`, and the runner plans it only
    where some exist (checks.Check.needs): the filter is written once, here."""
    event: str
    where: str | None = None

    def rows(self, runs: RunSet) -> DataFrame:
        df = runs.of(self.event)
        return df.filter(self.where) if self.where else df

    def sql(self) -> str:
        """The condition as SQL over a table of events (RunSet.rare)."""
        cond = f"event = {sql_string(self.event)}"
        return f"({cond} AND ({self.where}))" if self.where else cond


def lit_or(value) -> Column:
    return value if isinstance(value, Column) else F.lit(value)


def sql_string(text: str) -> str:
    """`text` as a SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def ident(name: str) -> str:
    """A column name quoted for SQL text (`primary`, `limit`, `end` are keywords)."""
    return "`" + name.replace("`", "``") + "`"


def violation(df: DataFrame, why, *fields, ts="ts", node="node", event="event") -> DataFrame:
    """Evidence rows from `df`: the event (ts, node, event), why it violates, key fields.

    `fields` are column names or aliased Columns; null fields are left out of the JSON.
    """
    if all(isinstance(x, str) for x in (why, ts, node, event, *fields)):
        # the common case as one selectExpr: a Py4J call or so per column instead of the
        # five or more that each Column built in Python costs (the checks build hundreds)
        return df.selectExpr(
            "run_id", f"CAST({ident(ts)} AS DOUBLE) AS ts",
            f"CAST({ident(node)} AS STRING) AS node",
            f"CAST({ident(event)} AS STRING) AS event", f"{sql_string(why)} AS why",
            (f"to_json(named_struct({', '.join(f'{sql_string(c)}, {ident(c)}' for c in fields)}))"
             if fields else "'{}'") + " AS fields")
    cols = [F.col(c) if isinstance(c, str) else c for c in fields]
    return df.select(
        F.col("run_id"),
        lit_or(F.col(ts) if isinstance(ts, str) else ts).cast("double").alias("ts"),
        lit_or(F.col(node) if isinstance(node, str) else node).cast("string").alias("node"),
        lit_or(F.col(event) if isinstance(event, str) else event).cast("string").alias("event"),
        lit_or(why).cast("string").alias("why"),
        (F.to_json(F.struct(*cols)) if cols else F.lit("{}")).alias("fields"))


def union_all(frames: list[DataFrame]) -> DataFrame:
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


def runs_of(df: DataFrame) -> DataFrame:
    return df.selectExpr("run_id").distinct()


def prefixed(df: DataFrame, prefix: str, keep: tuple[str, ...] = (),
             columns: list[str] | None = None) -> DataFrame:
    """Every column renamed `prefix + name`, except those in `keep`. `columns`: df's
    columns when the caller has them (through Spark Connect, df.columns is a request)."""
    return df.select(*[F.col(c) if c in keep else F.col(c).alias(prefix + c)
                       for c in (df.columns if columns is None else columns)])


def first_after(left: DataFrame, right: DataFrame, on: list[str], prefix: str,
                strict: bool = True, key: str | list[str] = "eid", how: str = "left",
                extra=None, at: str = "ts", columns: list[str] | None = None) -> DataFrame:
    """For each row of `left` (unique `key`), the earliest row of `right` with the same
    `on` columns and a ts later than left's `at` (or equal, `strict=False`); right's
    columns come back prefixed (null if none; `how="inner"`: left rows without one are
    dropped). `extra(left, right_prefixed)` adds a join condition. `columns`: right's,
    when the caller knows them (through Spark Connect, right.columns is a request)."""
    bound = lambda l, r: r[prefix + "ts"] > l[at] if strict else r[prefix + "ts"] >= l[at]  # noqa: E731
    return _pick(left, right, on, prefix, bound, extra, key, how, latest=False,
                 columns=columns)


def last_before(left: DataFrame, right: DataFrame, on: list[str], prefix: str,
                strict: bool = True, key: str | list[str] = "eid", how: str = "left",
                extra=None, at: str = "ts", slack: float = 0.0,
                columns: list[str] | None = None) -> DataFrame:
    """For each row of `left` (unique `key`), the latest row of `right` with the same `on`
    columns and a ts earlier than left's `at` (or equal, `strict=False`; up to `slack`
    seconds after it, for events two processes log around one moment); prefixed columns,
    null if none. `extra`, `how` and `columns` as in first_after."""
    def bound(l, r):
        t = l[at] + slack if slack else l[at]
        return r[prefix + "ts"] < t if strict else r[prefix + "ts"] <= t
    return _pick(left, right, on, prefix, bound, extra, key, how, latest=True,
                 columns=columns)


def first_of(left: DataFrame, right: DataFrame, on: list[str], prefix: str,
             key: str | list[str] = "eid", how: str = "left") -> DataFrame:
    """For each row of `left`, the earliest row of `right` with the same `on` columns,
    whenever it was logged (prefixed columns, null if none)."""
    return _pick(left, right, on, prefix, None, None, key, how, latest=False)


def _pick(left, right, on, prefix, bound, extra, key, how, latest, columns=None):
    """The join of first_after / last_before / first_of: `right` prefixed, matched on `on`,
    `bound` and `extra`, and per `key` of left the first row in time order (the last when
    `latest`; ties broken by eid when right has one)."""
    columns = right.columns if columns is None else columns
    r = prefixed(right, prefix, columns=columns)
    cond = [left[c] == r[prefix + c] for c in on]
    for c in (bound, extra):
        if c is not None:
            cond.append(c(left, r))
    j = left.join(r, on=_and(cond), how=how).drop(*[prefix + c for c in on])
    order = [prefix + "ts"] + ([prefix + "eid"] if "eid" in columns else [])
    order = [F.col(c).desc_nulls_last() if latest else F.col(c).asc_nulls_last() for c in order]
    w = Window.partitionBy(*([key] if isinstance(key, str) else key)).orderBy(*order)
    return j.withColumn("_rn", F.row_number().over(w)).filter("_rn = 1").drop("_rn")


def _and(conds):
    out = conds[0]
    for c in conds[1:]:
        out = out & c
    return out


def base(df: DataFrame, *cols: str) -> DataFrame:
    """The envelope of each event plus the named fields."""
    return df.selectExpr("run_id", "eid", "ts", "seq", "node", "event",
                         *[ident(c) for c in cols])


# -- client streams ----------------------------------------------------------------------

def client_streams(runs: RunSet) -> DataFrame:
    """One row per output stream: run_id, node, path, s_open (ts of client.stream.open),
    s_next (ts of the same client's next open of the path), s_holder, s_mode."""
    def build():
        opens = runs.of("client.stream.open").select(
            "run_id", "node", "path", F.col("ts").alias("s_open"),
            F.col("holder").alias("s_holder"), F.col("mode").alias("s_mode"), "eid")
        w = Window.partitionBy("run_id", "node", "path").orderBy("s_open", "eid")
        return opens.withColumn("s_next", F.lead("s_open").over(w)).drop("eid")
    return runs.memo("client_streams", build)


def assign_stream(df: DataFrame, streams: DataFrame, first: str = "ts", last: str = "ts",
                  how: str = "inner") -> DataFrame:
    """Adds s_open / s_holder: the stream of the same client and path open from each
    row's `first` to its `last` time (a span: streams of a client and path are disjoint,
    so at most one holds it). Rows of no stream are dropped (`how` "left": kept, with
    nulls)."""
    s = streams.select(F.col("run_id").alias("_r"), F.col("node").alias("_n"),
                       F.col("path").alias("_p"), "s_open", "s_next", "s_holder")
    cond = ((df["run_id"] == s["_r"]) & (df["node"] == s["_n"]) & (df["path"] == s["_p"])
            & (df[first] >= s["s_open"]) & (s["s_next"].isNull() | (df[last] < s["s_next"])))
    return df.join(F.broadcast(s), cond, how).drop("_r", "_n", "_p", "s_next")


def node_deaths(runs: RunSet) -> DataFrame:
    """run_id, target, ts, event: every kill, graceful stop or client crash of a node."""
    def build():
        direct = runs.of("harness.node.kill", "harness.node.stop").select(
            "run_id", "target", "ts", "event")
        crash = (runs.of("harness.fault.inject")
                 .filter(F.col("kind").isin(*sorted(kind_names(ends_node=True))))
                 .select("run_id", "target", "ts", "event"))
        return direct.unionByName(crash).filter(F.col("target").isNotNull())
    return runs.memo("node_deaths", build)


def dead_at_end(runs: RunSet) -> DataFrame:
    """run_id, node: nodes whose last lifecycle event in the run is a kill or stop."""
    def build():
        life = runs.of("harness.node.kill", "harness.node.stop", "harness.node.start").select(
            "run_id", F.col("target").alias("node"), "ts", "eid",
            F.col("event").isin("harness.node.kill", "harness.node.stop").alias("dead"))
        w = Window.partitionBy("run_id", "node").orderBy(F.desc("ts"), F.desc("eid"))
        return (life.withColumn("_rn", F.row_number().over(w)).filter("_rn = 1 AND dead")
                .select("run_id", "node"))
    return runs.memo("dead_at_end", build)


def live_datanodes(runs: RunSet) -> DataFrame:
    """run_id, dn: DataNodes of final_state.json that are alive at the end of the run."""
    def build():
        dead = dead_at_end(runs).select("run_id", F.col("node").alias("dn"))
        return runs.fs_datanodes.join(dead, ["run_id", "dn"], "left_anti")
    return runs.memo("live_datanodes", build)


def fault_windows(runs: RunSet) -> DataFrame:
    """run_id, fault, kind, f_start, f_end, f_text: each injected fault, active from its
    harness.fault.inject to its harness.fault.heal (or the end of the run); f_text is its
    target and parameters as text, to find the nodes it touches."""
    def build():
        # a heal fault logs no harness.fault.inject (it holds no effect): every inject is
        # a fault of its own
        inj = runs.of("harness.fault.inject").select(
            "run_id", "fault", "kind", F.col("ts").alias("f_start"),
            F.concat_ws(" ", F.coalesce("target", F.lit("")),
                        F.coalesce("params", F.lit(""))).alias("f_text"))
        heal = (runs.of("harness.fault.heal").groupBy("run_id", "fault")
                .agg(F.max("ts").alias("f_heal")))
        return (inj.join(heal, ["run_id", "fault"], "left").join(runs.bounds, "run_id", "left")
                .select("run_id", "fault", "kind", "f_start",
                        F.coalesce("f_heal", "end_ts").alias("f_end"), "f_text"))
    return runs.memo("fault_windows", build)


def touches(text_col: str, node_col: str):
    """True when the fault text names the node as a whole word (c1, not c10)."""
    return F.expr(f"{text_col} RLIKE concat('(^|[^A-Za-z0-9_])', {node_col}, '([^A-Za-z0-9_]|$)')")


# -- leases --------------------------------------------------------------------------------

def lease_changes(runs: RunSet) -> DataFrame:
    """Every change of who holds a lease on a path, from the NameNode's lease events.

    run_id, path, holder, ts, seq, sub, eid, event, delta: +1 when `holder` starts holding
    `path`, -1 when it stops. Repeated adds of a held lease and removals of an unheld one
    change nothing and are left out. A removal without a path ends every path the holder
    had.
    """
    def build():
        cols = ["run_id", "path", "holder", "ts", "seq", "eid", "event", "node"]
        add = runs.of("nn.lease.add").select(*cols, F.lit(1).alias("sub"), F.lit(True).alias("start"))
        rem = runs.of("nn.lease.remove")
        rem_path = rem.filter(F.col("path").isNotNull()).select(
            *cols, F.lit(0).alias("sub"), F.lit(False).alias("start"))
        rea = runs.of("nn.lease.reassign")
        rea_end = rea.select("run_id", "path", F.col("old_holder").alias("holder"), "ts", "seq",
                             "eid", "event", "node", F.lit(0).alias("sub"),
                             F.lit(False).alias("start"))
        rea_start = rea.select(*cols, F.lit(1).alias("sub"), F.lit(True).alias("start"))
        held = (add.select("run_id", "holder", "path")
                .unionByName(rea_start.select("run_id", "holder", "path")).distinct())
        rem_all = (rem.filter(F.col("path").isNull()).drop("path")
                   .join(held, ["run_id", "holder"])
                   .select(*cols, F.lit(0).alias("sub"), F.lit(False).alias("start")))
        t = union_all([add, rem_path, rea_end, rea_start, rem_all]).filter(
            F.col("holder").isNotNull() & F.col("path").isNotNull())
        w = Window.partitionBy("run_id", "path", "holder").orderBy("ts", "seq", "sub", "eid")
        prev = F.coalesce(F.lag("start").over(w), F.lit(False))
        t = t.withColumn("delta", F.when(F.col("start") & ~prev, 1)
                         .when(~F.col("start") & prev, -1).otherwise(0))
        return t.filter("delta != 0").drop("start")
    return runs.memo("lease_changes", build)


def lease_intervals(runs: RunSet) -> DataFrame:
    """run_id, path, holder, s, s_eid, e, open: one row per period a holder held a path
    (e is the end of the run when the lease was never given up)."""
    def build():
        c = lease_changes(runs)
        w = Window.partitionBy("run_id", "path", "holder").orderBy("ts", "seq", "sub", "eid")
        iv = (c.withColumn("e", F.lead("ts").over(w)).filter("delta = 1")
              .join(runs.bounds, "run_id", "left"))
        return iv.select("run_id", "path", "holder", F.col("ts").alias("s"),
                         F.col("eid").alias("s_eid"),
                         F.coalesce("e", "end_ts").alias("e"), F.col("e").isNull().alias("open"))
    return runs.memo("lease_intervals", build)


def holder_renewals(runs: RunSet) -> DataFrame:
    """run_id, holder, ts: every moment the NameNode renewed a holder's lease (renew, add
    and reassign all reset its last-update time)."""
    def build():
        return (runs.of("nn.lease.renew", "nn.lease.add", "nn.lease.reassign")
                .select("run_id", "holder", "ts").filter(F.col("holder").isNotNull()))
    return runs.memo("holder_renewals", build)


def namenode_starts(runs: RunSet) -> DataFrame:
    return runs.memo("nn_starts", lambda: runs.of("nn.start").select("run_id", "ts"))


def recovery_renewals(runs: RunSet) -> DataFrame:
    """run_id, holder, ts, eid, event: the renewals inside lease recovery. A recovery that
    does not close the file (internalReleaseLease, result `recovering`) renews the lease it
    leaves behind: the requester's after recoverLease (reassigned to it, or already its own
    when it calls again), the old holder's after a soft-limit takeover by create/append
    (HDFS renews it so that recovery does not start again at once). The mini-HDFS also
    logs these as nn.lease.renew with reason `lease_recovery` just before the
    nn.lease.recover; Hadoop's log has no line for them."""
    return (runs.of("nn.lease.recover").filter(F.col("result") == "recovering")
            .select("run_id", F.when(F.coalesce(F.col("force"), F.lit(False)), F.col("requester"))
                    .otherwise(F.col("holder")).alias("holder"), "ts", "eid", "event")
            .filter(F.col("holder").isNotNull()))


def last_renewal(runs: RunSet, df: DataFrame, holder_col: str = "holder",
                 renewals: DataFrame | None = None) -> DataFrame:
    """Adds `last_renew`: the latest renewal of the row's holder before its ts (a
    NameNode start counts: restored leases start fresh), null if none. `renewals`
    (run_id, holder, ts) replaces holder_renewals."""
    r = (renewals if renewals is not None else holder_renewals(runs)).select(
        "run_id", F.col("holder").alias(holder_col), "ts")
    j = last_before(df, r, ["run_id", holder_col], "_lr_",
                    columns=["run_id", holder_col, "ts"])
    j = last_before(j, namenode_starts(runs), ["run_id"], "_ls_")
    return (j.withColumn("last_renew", F.greatest("_lr_ts", "_ls_ts"))
            .drop("_lr_ts", "_ls_ts"))


def with_conf(runs: RunSet, df: DataFrame) -> DataFrame:
    return df.join(F.broadcast(runs.conf), "run_id", "left")


