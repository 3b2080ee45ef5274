"""Benchmark of the Spark verifier: generate N events of synthetic, consistent runs
(benchmarks/gen_events.py), reconcile them with every check, and compare two checks (L1
one writer, B2 length rule) with the same logic in plain pandas on the same data.

    python benchmarks/bench_verifier.py --events 10000000 [--per-run 10000] [--dir DIR]
    python benchmarks/bench_verifier.py --runs results/RUN [results/RUN ...]

Prints the generation time, Spark start-up, load (read + parse + fold), the checks,
metrics and expect evaluation, total reconcile time and events/s (start-up and
generation excluded), CPU seconds, steal, the checks' fixed planning cost, then the pandas
timings. With --runs: the wall time of verifying recorded runs as `hdfs-chaos verify`
does, Spark's start-up included, and the checks' fixed planning cost. Spark's memory: HDFS_CHAOS_SPARK_MEMORY
(default here 6g).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))


def _proc_stat(path: str) -> tuple[str, list[str]]:
    """The name and the fields after it of a /proc/.../stat file (the name, in
    parentheses, may hold spaces)."""
    with open(path) as f:
        text = f.read()
    return text[text.index("(") + 1:text.rindex(")")], text.rsplit(")", 1)[1].split()


def _cpu_seconds(spark) -> float:
    """CPU seconds (user + system) used so far by this process, the Spark JVM and the
    JVM's Python workers: a measure that another load on the machine does not inflate
    the way it inflates wall time."""
    def stat(pid):
        fields = _proc_stat(f"/proc/{pid}/stat")[1]
        return int(fields[1]), sum(int(x) for x in fields[11:15])  # ppid, u+s+cu+cs
    t = os.times()
    total = t.user + t.system
    try:
        jvm = spark.sparkContext._gateway.proc.pid
        procs = {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    procs[int(d)] = stat(d)
                except OSError:
                    pass
        family, grew = {jvm}, True
        while grew:
            more = {p for p, (pp, _) in procs.items() if pp in family} - family
            family |= more
            grew = bool(more)
        total += sum(procs[p][1] for p in family if p in procs) / os.sysconf("SC_CLK_TCK")
    except Exception:
        pass
    return total


def _steal_seconds() -> float:
    """CPU seconds the hypervisor gave to other guests so far (all cores): on a shared
    VM the same run's wall time moves by a quarter between runs, and steal is one cause
    that shows."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        return int(fields[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _reference_loop() -> float:
    """Seconds for a fixed pure-Python loop: how fast this machine is right now. On a
    shared VM it varies without any steal time showing, and the verifier's wall time
    moves with it (benchmarks/RESULTS.md)."""
    t = time.perf_counter()
    s = 0
    for i in range(10_000_000):
        s += i
    return time.perf_counter() - t


def planning_seconds(runs) -> dict[str, float]:
    """The checks' fixed cost: for each check, the seconds to build its query and have
    Spark analyse, optimise and plan it, without running it (the shared tables it reads
    are built already). This is what a check costs however small the runs are."""
    from harness.reconcile.checks import CHECKS, _drop_views, _result_rows
    from harness.reconcile.session import session_conf, small_queries
    out = {}
    with session_conf(runs.spark, small_queries(runs.spark)):
        for check in CHECKS:
            t = time.perf_counter()
            rows, views = _result_rows(runs, check)
            rows._jdf.queryExecution().executedPlan()
            _drop_views(runs, views)
            out[check.id] = time.perf_counter() - t
    return out


def bench_runs(run_dirs: list[str]) -> int:
    """`hdfs-chaos verify` of recorded run folders, timed as a user meets it: Spark's
    start-up, the load and every check (verify_runs writes each verdict.json), then the
    checks' fixed planning cost measured apart on the same loaded runs."""
    t0 = time.perf_counter()
    from harness.reconcile.api import verify_runs
    from harness.reconcile.load import load_runs
    from harness.reconcile.api import event_bytes
    from harness.reconcile.session import get_spark
    # the JVM verify_runs would start: options for the size of these runs' logs
    spark = get_spark(input_bytes=event_bytes(run_dirs))
    spark.range(1).count()
    t_start = time.perf_counter() - t0
    ref0 = _reference_loop()
    cpu0, steal0 = _cpu_seconds(spark), _steal_seconds()
    t1 = time.perf_counter()
    verdicts = verify_runs(run_dirs)
    t_verify = time.perf_counter() - t1
    cpu_all = _cpu_seconds(spark)
    cpu = cpu_all - cpu0
    passed = sum(1 for v in verdicts if v.passed)
    print(f"verify of {len(run_dirs)} runs: {t_start + t_verify:.1f}s wall in all = Spark "
          f"start-up {t_start:.1f}s + load and checks {t_verify:.1f}s ({cpu:.0f} CPU-s; "
          f"{cpu_all:.0f} CPU-s with start-up); {passed}/{len(verdicts)} runs passed")
    print(f"CPU-s stolen by the hypervisor: {_steal_seconds() - steal0:.1f}; load average "
          f"{os.getloadavg()[0]:.1f}; a fixed Python loop took {ref0:.2f}s before and "
          f"{_reference_loop():.2f}s after (lower is faster)")
    runs = load_runs(run_dirs, spark)
    try:
        from harness.reconcile.checks import CHECKS, possible_checks, prepare_bulk
        prepare_bulk(runs)
        plan = planning_seconds(runs)
        possible = possible_checks(runs, CHECKS)
    finally:
        runs.close()
    print(f"checks' fixed cost (building and planning the {len(plan)} checks' queries, no "
          f"execution): {sum(plan.values()):.1f}s; slowest: " + ", ".join(
              f"{k} {v:.2f}s" for k, v in sorted(plan.items(), key=lambda kv: -kv[1])[:5]))
    unplanned = [c.id for c in CHECKS if c.id not in possible]
    print(f"of which verify planned {len(possible)} checks ({sum(plan[i] for i in possible):.1f}s)"
          f"; left unplanned for want of their starting events: "
          f"{' '.join(unplanned) or 'none'} ({sum(plan[i] for i in unplanned):.1f}s)")
    return 0


def pandas_l1_b2(run_dirs: list[str]) -> dict:
    """L1 and B2 in plain pandas: read the needed events (lines pre-filtered by their
    event name, then json.loads), then the same algorithms as the Spark checks."""
    import pandas as pd
    t0 = time.perf_counter()
    lease_rows, sync_rows = [], []
    for d in run_dirs:
        rid = os.path.basename(d)
        for path in glob.glob(os.path.join(d, "events", "*.jsonl")):
            with open(path, encoding="utf-8") as f:
                for line in f:
                    if '"nn.lease.' in line:
                        rec = json.loads(line)
                        if rec["event"] in ("nn.lease.add", "nn.lease.remove", "nn.lease.reassign"):
                            rec["run_id"] = rid
                            lease_rows.append(rec)
                    elif '"dn.recovery.sync"' in line:
                        rec = json.loads(line)
                        rec["run_id"] = rid
                        sync_rows.append(rec)
    t1 = time.perf_counter()
    # every field the algorithms read, present even when no event carried it
    lease = pd.DataFrame(lease_rows)
    for c in ("path", "holder", "old_holder"):
        if c not in lease.columns:
            lease[c] = None
    l1 = _pandas_l1(lease)
    t2 = time.perf_counter()
    b2 = _pandas_b2(pd.DataFrame(sync_rows))
    t3 = time.perf_counter()
    return {"read_s": t1 - t0, "l1_s": t2 - t1, "b2_s": t3 - t2, "l1_violations": l1,
            "b2_violations": b2, "lease_events": len(lease_rows), "syncs": len(sync_rows)}


def _pandas_l1(lease):
    import pandas as pd
    if lease.empty:
        return 0
    add = lease[lease.event == "nn.lease.add"].assign(sub=1, start=True)
    rem = lease[(lease.event == "nn.lease.remove") & lease.path.notna()].assign(sub=0, start=False)
    rea = lease[lease.event == "nn.lease.reassign"]
    rea_end = rea.assign(holder=rea.old_holder, sub=0, start=False)
    rea_start = rea.assign(sub=1, start=True)
    t = pd.concat([add, rem, rea_end, rea_start])[["run_id", "path", "holder", "ts", "seq", "sub",
                                                   "start"]]
    t = t.sort_values(["run_id", "path", "holder", "ts", "seq", "sub"])
    prev = t.groupby(["run_id", "path", "holder"])["start"].shift(1, fill_value=False).astype(bool)
    t["delta"] = 0
    t.loc[t.start & ~prev, "delta"] = 1
    t.loc[~t.start & prev, "delta"] = -1
    t = t[t.delta != 0].sort_values(["run_id", "path", "ts", "seq", "sub"])
    t["holders"] = t.groupby(["run_id", "path"])["delta"].cumsum()
    return int(((t.delta == 1) & (t.holders >= 2)).sum())


def _pandas_b2(syncs):
    if syncs.empty:
        return 0

    def expected(row):
        cand = [a for a in row["answers"] if a.get("len") and a["len"] > 0]
        if row.get("new_len") is not None and row.get("new_len") == row.get("new_len"):
            return "truncate", row["new_len"]
        if not cand:
            return "remove", 0
        for state, rule in (("FINALIZED", "finalized"), ("RBW", "min_rbw"), ("RWR", "min_rwr")):
            lens = [a["len"] for a in cand if a["state"] == state]
            if lens:
                return rule, min(lens)
        return "remove", 0

    exp = syncs.apply(expected, axis=1, result_type="expand")
    bad = (exp[0] != syncs["rule"].str.lower()) | (exp[1] != syncs["len"])
    return int(bad.sum())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Benchmark the Spark verifier.")
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--per-run", type=int, default=10_000)
    ap.add_argument("--dir", help="where to generate (default: a temporary folder, removed)")
    ap.add_argument("--reuse", action="store_true", help="reuse runs already in --dir")
    ap.add_argument("--procs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--no-pandas", action="store_true")
    ap.add_argument("--keep-raw", action="store_true",
                    help="keep the text of every line (default: of all but plain writes and acks)")
    ap.add_argument("--runs", nargs="+", metavar="RUN_DIR",
                    help="instead: time `hdfs-chaos verify` of these recorded run folders "
                         "(Spark start-up included) and the checks' fixed planning cost")
    a = ap.parse_args(argv)
    if a.runs:
        return bench_runs(a.runs)
    os.environ.setdefault("HDFS_CHAOS_SPARK_MEMORY", "6g")
    from gen_events import generate

    root = a.dir or tempfile.mkdtemp(prefix="bench-verifier-")
    try:
        t = time.perf_counter()
        if a.reuse and glob.glob(os.path.join(root, "bench-*")):
            dirs = sorted(glob.glob(os.path.join(root, "bench-*")))
            print(f"reusing {len(dirs)} runs in {root}")
        else:
            dirs, n = generate(root, a.events, a.per_run, a.procs)
            print(f"generated {n:,} events in {len(dirs)} runs in {time.perf_counter() - t:.1f}s ({root})")

        from pyspark.sql import functions as F
        from harness.reconcile.api import verify_loaded
        from harness.reconcile.load import load_runs
        from harness.reconcile.session import get_spark
        t = time.perf_counter()
        from harness.reconcile.api import event_bytes
        spark = get_spark(input_bytes=event_bytes(dirs))
        spark.range(1).count()
        print(f"spark start-up: {time.perf_counter() - t:.1f}s")

        ref0 = _reference_loop()
        cpu0, steal0 = _cpu_seconds(spark), _steal_seconds()
        t0 = time.perf_counter()
        runs = load_runs(dirs, spark, keep_raw=a.keep_raw)
        t_load = time.perf_counter() - t0
        cpu_load = _cpu_seconds(spark) - cpu0
        print(f"load (read, parse, the dense lines folded into their summaries; the rare "
              f"events are parsed on in the background): {t_load:.1f}s ({cpu_load:.0f} CPU-s)")
        timings: dict = {}
        t1 = time.perf_counter()
        verdicts = verify_loaded(runs, timings)
        t_verify = time.perf_counter() - t1
        total = time.perf_counter() - t0
        # after the clock: the verdicts do not need it (every event is in one group of
        # event_stats, which the verdicts built; counting runs.events would read and
        # parse the dense lines again)
        n_events = runs.event_stats.agg(F.sum("events")).first()[0] or 0
        checks = {k: v for k, v in timings.items()
                  if k not in ("total", "checks_wall", "metrics_expect", "bulk")}
        print("each check (they overlap: two at a time, with metrics + expect): "
              + ", ".join(f"{k} {v:.1f}s" for k, v in checks.items()))
        print(f"bulk summaries (event spans, ack progress, D2's streams; they wait for "
              f"the rare events) "
              f"{timings['bulk']:.1f}s")
        print(f"checks {timings['checks_wall']:.1f}s wall; metrics + expect "
              f"{timings['metrics_expect']:.1f}s (alongside); verify {t_verify:.1f}s")
        passed = sum(1 for v in verdicts if v.passed)
        failing = sorted({c.id for v in verdicts for c in v.checks
                          if c.status in ("fail", "error")})
        print(f"verdicts: {passed}/{len(verdicts)} runs passed; failing checks: {failing or 'none'}")
        cpu = _cpu_seconds(spark) - cpu0
        print(f"RECONCILE TOTAL {total:.1f}s for {n_events:,} events = "
              f"{n_events / total:,.0f} events/s (spark start-up and generation excluded)")
        print(f"CPU: {cpu:.0f} CPU-s in all ({cpu - cpu_load:.0f} after the load) on "
              f"{os.cpu_count()} cores; {_steal_seconds() - steal0:.1f} CPU-s stolen by the "
              f"hypervisor; load average now {os.getloadavg()[0]:.1f}")
        print(f"machine speed: a fixed Python loop took {ref0:.2f}s before and "
              f"{_reference_loop():.2f}s after (lower is faster)")
        plan = planning_seconds(runs)
        print(f"checks' fixed cost (building and planning their queries): "
              f"{sum(plan.values()):.1f}s")
        runs.close()
        if not a.no_pandas:
            p = pandas_l1_b2(dirs)
            print(f"pandas: read {p['lease_events']:,} lease events + {p['syncs']:,} syncs "
                  f"(lines pre-filtered) {p['read_s']:.1f}s; L1 {p['l1_s']:.2f}s "
                  f"({p['l1_violations']} violations); B2 {p['b2_s']:.2f}s "
                  f"({p['b2_violations']} violations)")
            print(f"spark:  L1 {timings.get('L1', float('nan')):.1f}s, B2 "
                  f"{timings.get('B2', float('nan')):.1f}s on the cached events "
                  f"(+ their share of the {t_load:.1f}s load)")
    finally:
        if not a.dir:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
