"""Hadoop cluster start-up on this machine: a NameNode and N DataNodes (separate JVMs)
until the NameNode counts N live DataNodes (JMX NumLiveDataNodes), per JVM flag set,
and the resident memory of each daemon once ready. Printed as a table.

    python benchmarks/bench_hadoop_start.py [--version 3.4.2] [--datanodes 3] [--repeat 2]
                                            [--variants default,no-c1-only,no-serial-gc,bare]

"ready" is HadoopCluster.start() after the NameNode's storage is formatted (format is
timed apart: a run formats once). Variants: `default` is cluster.JVM_FLAGS;
`no-c1-only` drops -XX:TieredStopAtLevel=1; `no-serial-gc` drops -XX:+UseSerialGC;
`bare` keeps only the heap sizes. (A class-data-sharing archive is not measured: a
dynamic dump at exit does not happen on the daemons' SIGTERM, and a static AppCDS
archive refuses the non-empty conf and webapps folders on the classpath.)
Target (issue 18): <= 8 s to 3 live DataNodes on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from harness.systems.hadoop import fetch  # noqa: E402
from harness.systems.hadoop.cluster import JVM_FLAGS, HadoopCluster  # noqa: E402

TARGET = 8.0
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", default=fetch.DEFAULT_VERSION)
    ap.add_argument("--datanodes", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--variants", default="default,no-c1-only,no-serial-gc,bare")
    args = ap.parse_args()
    fetch.fetch(args.version)
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
