"""The explorer's throughput, the time split of one schedule, and exact injection's
determinism.

    python benchmarks/bench_explore.py rate [--base FILE] [--budget 5min] [--workers N]
                                            [--depth 2] [--out DIR] [--spark-master URL]
    python benchmarks/bench_explore.py repeat OUT [--schedules 20] [--times 5] [--workers 2]
                                                  [--spread]
    python benchmarks/bench_explore.py mutants [--mutants a,b] [--base FILE] [--schedules 24]
                                               [--depth 1]

`rate` explores a base scenario for the budget and prints schedules per hour
(verification included) and the median split of one schedule: start (Toxiproxy, cluster
up), workload, recovery wait (heal, stop clients), quiescence, stop (final state,
teardown), and verification per run (batched, one Spark session). Target (issue 33):
>= 3,000 schedules per hour on a 2-core machine. With `--spark-master URL` the schedules
run as Spark tasks there (`standalone`: a 2-worker standalone cluster on this machine);
issue 33's target: at most 10% fewer schedules per hour than without Spark.

`repeat` takes schedules an exploration in OUT ran, runs each `--times` times and prints,
per schedule, the outcomes (pass/fail/hung and the failed checks) and where each exact
fault landed (the held event's node and seq): the same schedule should give the same
verdict every time.

`mutants` explores a base on each mutant of tools/mutants (the fidelity issue) with a
small budget and says which it kills (compare with `python -m tools.mutants run`, the
library against the same mutants).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import sys
import tempfile
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from harness.explore.engine import (Explorer, classify, explore, run_schedule,  # noqa: E402
                                    worker_pool)
from harness.explore.report import summary_numbers  # noqa: E402
from harness.explore.state import ExploreState  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cmd_rate(args) -> int:
    out = args.out or tempfile.mkdtemp(prefix="bench-explore-")
    cluster = None
    pool = None
    where = "local worker processes"
    if args.spark_master:
        from harness.explore import sparkrun
        master = args.spark_master
        if master == "standalone":      # a master and two 1-core workers on this machine
            from harness.explore.standalone import StandaloneCluster
            cluster = StandaloneCluster(workers=2, cores=1, memory="1g",
                                        work_dir=tempfile.mkdtemp(prefix="bench-standalone-"))
            master = cluster.start().url
        spark = sparkrun.start(master, out)
        pool = lambda n, package_root: sparkrun.SparkPool(spark, n)   # noqa: E731
        args.workers = args.workers or sparkrun.executor_slots(spark)   # as explore's
        where = f"Spark tasks on {master}"
    try:
        t = time.time()
        explorer = Explorer(args.base, out, args.budget, args.depth, args.workers, pool=pool)
        state = explorer.run()
    finally:
        if cluster is not None:
            from harness.reconcile.session import stop_spark
            stop_spark()
            cluster.stop()
    n = summary_numbers(state)
    load = os.getloadavg()
    print(f"\nexplored {os.path.relpath(args.base, ROOT)} for {time.time() - t:.0f}s with "
          f"{explorer.workers} workers, runs as {where} ({out}; load at the end "
          f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f})")
    print(f"  schedules run     {n['schedules']} ({n['depth1']} depth 1, {n['depth2']} depth 2;"
          f" {n['schedules'] - n['explored']} while shrinking)")
    print(f"  schedules/hour    {n['per_hour']:.0f} (target 3000)")
    print(f"  depth-1 coverage  {n['depth1']} of {n['space_depth1']} "
          f"({n['coverage_depth1'] * 100:.1f}%), {n['points']} failure points")
    print(f"  outcomes          {n['outcomes']}; findings {n['findings']}")
    print("  median split (s)  " + ", ".join(f"{k} {v}" for k, v in n["median_split_s"].items()))
    return 0


def _landing(run_dir: str) -> list[tuple]:
    try:
        with open(os.path.join(run_dir, "events", "harness.jsonl")) as f:
            h = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError):
        return []
    return [(e.get("held_node"), e.get("held_seq"), e.get("held_event"))
            for e in h if e.get("event") == "harness.hold.release"]


def pick(state: ExploreState, n: int, spread: bool = False) -> list[str]:
    """The schedules to repeat: failing ones first (they are what a reproducer must
    repeat), then the rest in the order they ran; with `spread`, round-robin over the
    kinds of the first fault's point (an exploration runs the first points' schedules
    first, so without it 20 schedules may all sit at the file's creation) and the
    depth-2 ones among them."""
    results = [r for r in state.results.values()
               if r["outcome"] != "unreached" and not r.get("shrink")]
    results.sort(key=lambda r: (r["outcome"] == "pass", r["at"]))
    if not spread:
        return [r["id"] for r in results[:n]]
    seen: Counter = Counter()
    ranked = []
    for r in results:
        kind = (r["signature"].split("|")[0], r.get("depth", 1))
        ranked.append(((r["outcome"] == "pass", seen[kind]), len(ranked), r["id"]))
        seen[kind] += 1
    return [sid for _, _, sid in sorted(ranked)[:n]]


def cmd_repeat(args) -> int:
    state = ExploreState.read(os.path.join(args.out, "state.json"))
    chosen = pick(state, args.schedules, args.spread)
    runs_dir = tempfile.mkdtemp(prefix="bench-repeat-")
    jobs = [(sid, i) for i in range(args.times) for sid in chosen]
    t = time.time()
    with worker_pool(args.workers) as pool:
        futures = {pool.submit(run_schedule, os.path.join(args.out, "schedules", f"{sid}.yaml"),
                               runs_dir): (sid, i) for sid, i in jobs}
        done = [(futures[f], f.result()) for f in cf.as_completed(futures)]
    from harness.reconcile.api import verify_runs
    verdicts = dict(zip([r["run_dir"] for _, r in done], verify_runs([r["run_dir"] for _, r in done])))
    per: dict[str, list] = {}
    for (sid, _), r in done:
        outcome, failed = classify(r, verdicts.get(r["run_dir"]))
        per.setdefault(sid, []).append((outcome, ",".join(failed), tuple(_landing(r["run_dir"]))))
    same = 0
    for sid in chosen:
        outcomes = Counter((o, f) for o, f, _ in per[sid])
        landings = Counter(land for _, _, land in per[sid])
        stable = len(outcomes) == 1
        same += stable
        print(f"{sid} [{state.results[sid]['signature']}]: outcomes {dict(outcomes)}; "
              f"fault landed at {len(landings)} distinct place(s)"
              f"{'' if stable else '  <- NOT the same verdict every time'}")
    print(f"\n{same} of {len(chosen)} schedules gave the same verdict in all {args.times} runs "
          f"({len(jobs)} runs, {time.time() - t:.0f}s)")
    return 0 if same == len(chosen) else 1


def cmd_mutants(args) -> int:
    """Each mutant (tools/mutants) explored with a small budget: the first `--schedules`
    schedules of the base (the same queue as on the unmutated tree, as long as the
    mutant leaves the clean run's points alone), no shrinking. A mutant is killed when
    a schedule fails or hangs, or when the clean run of the base already fails."""
    from harness.explore.engine import ExploreError
    from tools.mutants.apply import mutated_tree
    from tools.mutants.catalogue import BY_NAME, MUTANTS
    names = args.mutants.split(",") if args.mutants else [m.name for m in MUTANTS]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        print(f"bench_explore: unknown mutant(s) {', '.join(unknown)}: see "
              f"`python -m tools.mutants list`", file=sys.stderr)
        return 2
    out = args.out or tempfile.mkdtemp(prefix="bench-explore-mutants-")
    os.makedirs(out, exist_ok=True)
    rows = []
    for name in names:
        t = time.time()
        with mutated_tree(BY_NAME[name]) as root:
            try:
                state = explore(args.base, os.path.join(out, name), 24 * 3600, args.depth,
                                args.workers,
                                max_schedules=args.schedules, package_root=root, shrink=False)
                found = sorted(state.findings)
                ran = len(state.results)
                outcomes = dict(Counter(r["outcome"] for r in state.results.values()))
                verdict = "killed" if found else "survived"
            except ExploreError as e:
                found, ran, outcomes = [f"clean run: {e}"], 0, {}
                verdict = "killed (clean run)"
        rows.append({"mutant": name, "verdict": verdict, "schedules": ran, "outcomes": outcomes,
                     "findings": found, "wall_s": round(time.time() - t)})
        print(f"{name}: {verdict} after {ran} schedules in {rows[-1]['wall_s']}s "
              f"{outcomes} {found[:3]}", flush=True)
        with open(os.path.join(out, "mutants.json"), "w") as f:
            json.dump(rows, f, indent=1)
    killed = sum(r["verdict"].startswith("killed") for r in rows)
    print(f"\n{killed} of {len(rows)} mutants killed by the explorer "
          f"({args.schedules} schedules each, base {os.path.basename(args.base)}; {out})")
    return 0


def main(argv=None) -> int:
    from hdfs_contract.config import parse_duration
    p = argparse.ArgumentParser(prog="bench_explore")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("rate")
    r.add_argument("--base", default=os.path.join(ROOT, "explore-bases", "write-3-blocks.yaml"))
    r.add_argument("--budget", default="5min", type=parse_duration)
    r.add_argument("--workers", type=int, default=None,
                   help="runs at once (default: the explorer's, 3 a core on the mini-HDFS)")
    r.add_argument("--depth", type=int, default=2)
    r.add_argument("--out")
    r.add_argument("--spark-master", default=None, metavar="URL",
                   help="run the schedules as Spark tasks there (explore --spark-master); "
                        "`standalone`: a master and two 1-core workers started on this "
                        "machine for the measurement")
    q = sub.add_parser("repeat")
    q.add_argument("out")
    q.add_argument("--schedules", type=int, default=20)
    q.add_argument("--times", type=int, default=5)
    q.add_argument("--workers", type=int, default=2)
    q.add_argument("--spread", action="store_true",
                   help="pick schedules round-robin over point kinds and depths, not the first")
    m = sub.add_parser("mutants")
    m.add_argument("--mutants", default=None, help="comma-separated names (default: all)")
    m.add_argument("--base", default=os.path.join(ROOT, "explore-bases", "write-3-blocks.yaml"))
    m.add_argument("--schedules", type=int, default=24)
    m.add_argument("--depth", type=int, default=1)
    m.add_argument("--workers", type=int, default=2)
    m.add_argument("--out")
    args = p.parse_args(argv)
    return {"rate": cmd_rate, "repeat": cmd_repeat, "mutants": cmd_mutants}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
