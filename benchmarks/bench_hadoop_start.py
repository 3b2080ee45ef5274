"""Hadoop cluster start-up on this machine: a NameNode and N DataNodes (separate JVMs)
until the NameNode counts N live DataNodes (JMX NumLiveDataNodes), per JVM flag set,
and the resident memory of each daemon once ready. Printed as a table.

    python benchmarks/bench_hadoop_start.py [--version 3.4.2] [--datanodes 3] [--repeat 2]
                                            [--variants default,no-c1-only,no-serial-gc,bare]
    python benchmarks/bench_hadoop_start.py --agent [--repeat 3] [--write 64MiB]

"ready" is HadoopCluster.start() after the NameNode's storage is formatted (format is
timed apart: a run formats once). Variants: `default` is cluster.JVM_FLAGS;
`no-c1-only` drops -XX:TieredStopAtLevel=1; `no-serial-gc` drops -XX:+UseSerialGC;
`bare` keeps only the heap sizes. (A class-data-sharing archive is not measured here: a
dynamic dump at exit does not happen on the daemons' SIGTERM; a JVM that exits, e.g. the
`-format` one, can dump one if the jars come before the conf and webapps folders on the
classpath, as the JVM refuses only non-empty folders before the last entry it loaded a
class from.)
Target (issue 18): <= 8 s to 3 live DataNodes on 2 cores.

`--agent`: the Byteman agent's cost (issue 32). Each round starts a cluster without and
one with the agent (alternating which goes first), as a run starts it (cluster.JVM_FLAGS,
the DEBUG loggers of logmap), times it to N live DataNodes, then times one workload
client (HdfsChaosClient, the agent in it too) writing `--write` bytes with replication 3
from its own client.op.start to client.op.end, after a 1 MiB write of the same client
timed apart (the client's one-time costs); and the CPU seconds of each (the daemons'
CPU when ready, from /proc; the client run's: the daemons' and the client JVM's, from
its rusage): CPU is less at the mercy of the machine's other load than wall time.
Prints the medians and with/without ratios.
Target (issue 32): the agent costs at most 10% of either.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from harness.systems.hadoop import CLIENT_CLASS, Hadoop, fetch  # noqa: E402
from harness.systems.hadoop.cluster import JVM_FLAGS, HadoopCluster  # noqa: E402
from harness.systems.hadoop.logmap import DEBUG_LOGGERS  # noqa: E402
from hdfs_contract.config import parse_size  # noqa: E402

TARGET = 8.0
AGENT_TARGET = 1.10     # with / without, for start time and for write time
WARM = 1 << 20          # the client's first write, timed apart (--agent)
HEAP = [f for f in JVM_FLAGS if f.startswith("-Xm")]


def variant_flags(name: str) -> list[str]:
    if name == "default":
        return list(JVM_FLAGS)
    if name == "no-c1-only":
        return [f for f in JVM_FLAGS if f != "-XX:TieredStopAtLevel=1"]
    if name == "no-serial-gc":
        return [f for f in JVM_FLAGS if f != "-XX:+UseSerialGC"]
    if name == "bare":
        return HEAP
    raise SystemExit(f"unknown variant {name!r}")


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def one_start(base: str, version: str, datanodes: int, flags: list[str]) -> dict:
    cluster = HadoopCluster(base, version, datanodes, {"dfs.heartbeat.interval": "1s"},
                            jvm_flags=flags)
    for node in cluster.nodes:
        cluster.write_conf(node)
    t0 = time.monotonic()
    cluster.format()
    formatted = time.monotonic() - t0
    try:
        t1 = time.monotonic()
        cluster.start(timeout=180)
        ready = time.monotonic() - t1
        rss = {n: rss_mb(cluster.nodes[n]["pid"]) for n in ["nn"] + cluster.datanodes()}
    finally:
        cluster.down()
    return {"format": formatted, "ready": ready, "rss": rss}


def cpu_of(pid: int) -> float:
    """CPU seconds (user + system) process `pid` has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_agent_round(base: str, version: str, datanodes: int, agent: bool, size: int,
                    classes: str) -> dict:
    """One cluster (with or without the agent): seconds to `datanodes` live DataNodes, then
    one workload client writing `size` bytes (replication 3): MiB/s and CPU seconds."""
    cluster = HadoopCluster(base, version, datanodes, {"dfs.heartbeat.interval": "1s"},
                            debug_loggers=DEBUG_LOGGERS, agent=agent)
    for node in cluster.nodes:
        cluster.write_conf(node)
    cluster.format()
    try:
        t0 = time.monotonic()
        cluster.start(timeout=180)
        ready = time.monotonic() - t0
        daemons = ["nn"] + cluster.datanodes()
        start_cpu = sum(cpu_of(cluster.nodes[n]["pid"]) for n in daemons)
        ops = os.path.join(base, "ops.json")
        with open(ops, "w") as f:
            # a 1 MiB write first: the client's one-time costs (its write path's classes
            # loaded, and with the agent DataStreamer transformed) are timed apart
            json.dump([{"id": "warm", "op": "write", "path": "/bench/warm", "size": WARM,
                        "hflush_every": None, "close": True, "gated": False},
                       {"id": "w1", "op": "write", "path": "/bench/f", "size": size,
                        "hflush_every": None, "close": True, "gated": False}], f)
        events = os.path.join(base, "c1.jsonl")
        cpu0 = {n: cpu_of(cluster.nodes[n]["pid"]) for n in daemons}
        kids0 = children_cpu()
        proc = cluster.start_client("c1", CLIENT_CLASS,
                                    ["--node", "c1", "--ops", ops, "--events", events,
                                     "--seed", "1", "--fs", cluster.fs_uri], [classes])
        rc = proc.wait(timeout=600)
        client_cpu = children_cpu() - kids0
        daemon_cpu = sum(cpu_of(cluster.nodes[n]["pid"]) - cpu0[n] for n in daemons)
        evs = [json.loads(ln) for ln in open(events) if ln.strip()]
        span = {}
        for op in ("warm", "w1"):
            start = next((e["ts"] for e in evs if e["event"] == "client.op.start"
                          and e.get("op_id") == op), None)
            end = next((e for e in evs if e["event"] == "client.op.end"
                        and e.get("op_id") == op), None)
            if rc != 0 or start is None or end is None or end.get("ok") is False:
                raise SystemExit(f"write {op} failed (exit {rc}, {end}); see {base}/logs")
            span[op] = end["ts"] - start
        rss = {n: rss_mb(cluster.nodes[n]["pid"]) for n in daemons}
    finally:
        cluster.down()
    return {"ready": ready, "start_cpu": start_cpu, "mibs": size / (1 << 20) / span["w1"],
            "warm": span["warm"],
            "cpu": client_cpu + daemon_cpu, "client_cpu": client_cpu, "rss": rss}


def agent_cost(args) -> int:
    size = parse_size(args.write)
    fetch.require_agent_jar()
    classes = Hadoop(args.version).client_classes()
    work = tempfile.mkdtemp(prefix="bench-hadoop-agent-")
    runs: dict[bool, list[dict]] = {False: [], True: []}
    loads = [os.getloadavg()[0]]
    try:
        for i in range(args.repeat):
            for agent in ((False, True) if i % 2 == 0 else (True, False)):
                r = one_agent_round(os.path.join(work, f"{i}-{'agent' if agent else 'bare'}"),
                                    args.version, args.datanodes, agent, size, classes)
                runs[agent].append(r)
                loads.append(os.getloadavg()[0])
                print(f"round {i + 1} {'with' if agent else 'without'} the agent: ready "
                      f"{r['ready']:.2f}s (CPU {r['start_cpu']:.1f}s), first 1 MiB {r['warm']:.2f}s, "
                      f"write {r['mibs']:.1f} MiB/s, client run CPU {r['cpu']:.1f}s "
                      f"(client {r['client_cpu']:.1f}s), load {loads[-1]:.1f}",
                      file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    keys = ("ready", "start_cpu", "warm", "mibs", "cpu")
    med = {a: {k: statistics.median(r[k] for r in runs[a]) for k in keys}
           for a in runs}
    ratio = {"ready": med[True]["ready"] / med[False]["ready"],
             "start_cpu": med[True]["start_cpu"] / med[False]["start_cpu"],
             "write": med[False]["mibs"] / med[True]["mibs"],     # time with / time without
             "cpu": med[True]["cpu"] / med[False]["cpu"]}
    print(f"Hadoop {args.version}, NameNode + {args.datanodes} DataNodes, {os.cpu_count()} cores, "
          f"{args.repeat} rounds (with/without alternating), write {size >> 20} MiB "
          f"replication 3, load {min(loads):.1f}-{max(loads):.1f}; target: the agent costs "
          f"<= {AGENT_TARGET - 1:.0%} of either")
    print(f"{'':<16}{'ready med':>10}{'start CPU s':>13}{'first 1 MiB':>13}{'write MiB/s':>13}"
          f"{'client CPU s':>13}{'NN RSS':>9}{'DN RSS':>9}")
    for agent in (False, True):
        rss = runs[agent][-1]["rss"]
        print(f"{'with agent' if agent else 'without agent':<16}{med[agent]['ready']:>9.2f}s"
              f"{med[agent]['start_cpu']:>13.1f}{med[agent]['warm']:>12.2f}s"
              f"{med[agent]['mibs']:>13.1f}{med[agent]['cpu']:>13.1f}{rss['nn']:>7.0f}MB"
              f"{statistics.mean(v for k, v in rss.items() if k != 'nn'):>7.0f}MB")
    print(f"with/without: start {ratio['ready']:.3f} (CPU {ratio['start_cpu']:.3f}), first 1 MiB "
          f"{med[True]['warm'] / med[False]['warm']:.3f}, write time {ratio['write']:.3f}, "
          f"client run CPU {ratio['cpu']:.3f}")
    ok = ratio["ready"] <= AGENT_TARGET and ratio["write"] <= AGENT_TARGET
    print("within target" if ok else "over target")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", default=fetch.DEFAULT_VERSION)
    ap.add_argument("--datanodes", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--variants", default="default,no-c1-only,no-serial-gc,bare")
    ap.add_argument("--agent", action="store_true",
                    help="measure the Byteman agent's cost: start and write, with and without")
    ap.add_argument("--write", default="64MiB", help="bytes the client writes (--agent)")
    args = ap.parse_args()
    fetch.fetch(args.version)
    if args.agent:
        return agent_cost(args)
    work = tempfile.mkdtemp(prefix="bench-hadoop-")
    rows = []
    try:
        for variant in args.variants.split(","):
            runs = [one_start(os.path.join(work, f"{variant}-{i}"), args.version, args.datanodes,
                              variant_flags(variant)) for i in range(args.repeat)]
            readies = [r["ready"] for r in runs]
            rss = runs[-1]["rss"]
            rows.append((variant, statistics.median(readies), min(readies), max(readies),
                         statistics.median(r["format"] for r in runs), rss["nn"],
                         statistics.mean(v for k, v in rss.items() if k != "nn")))
            print(f"{variant}: ready {readies}", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"Hadoop {args.version}, NameNode + {args.datanodes} DataNodes, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}; target ready <= {TARGET:.0f} s")
    print(f"{'variant':<14}{'ready med':>10}{'min':>7}{'max':>7}{'format':>8}{'NN RSS':>9}{'DN RSS':>9}")
    for v, med, lo, hi, fmt, nn, dn in rows:
        print(f"{v:<14}{med:>9.1f}s{lo:>6.1f}s{hi:>6.1f}s{fmt:>7.1f}s{nn:>7.0f}MB{dn:>7.0f}MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
