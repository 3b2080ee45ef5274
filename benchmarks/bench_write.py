"""Write and read a file with replication 3 on a local mini-HDFS cluster; print MB/s.

    python benchmarks/bench_write.py [--size 256MiB] [--blocksize 128MiB]

Target (issue 2): write >= 150 MB/s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from minihdfs.cluster import LocalCluster  # noqa: E402
from hdfs_contract.config import parse_size  # noqa: E402


def cpu_seconds(cluster: LocalCluster) -> dict[str, float]:
    """CPU seconds (user + system) used so far by this process (the client) and each
    DataNode: unlike MB/s, these do not depend on what else the machine is doing."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out = {"client": usage.ru_utime + usage.ru_stime}
    tick = os.sysconf("SC_CLK_TCK")
    for node, proc in sorted(cluster.procs.items()):
        if proc is not None and node.startswith("dn"):
            with open(f"/proc/{proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            out[node] = (int(fields[11]) + int(fields[12])) / tick
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=parse_size, default=parse_size("256MiB"))
    p.add_argument("--blocksize", default="128MiB")
    p.add_argument("--replication", type=int, default=3)
    args = p.parse_args()
    piece = os.urandom(4 << 20)
    with tempfile.TemporaryDirectory(prefix="bench-write-") as d:
        t0 = time.monotonic()
        cluster = LocalCluster(d, 3, {"dfs.blocksize": args.blocksize,
                                      "dfs.replication": args.replication,
                                      "dfs.heartbeat.interval": "1s"}).start()
        print(f"cluster ready in {time.monotonic() - t0:.2f}s", flush=True)
        try:
            client = cluster.client("bench")
            pieces = [len(piece)] * (args.size // len(piece))
            pieces += [args.size % len(piece)] if args.size % len(piece) else []
            crc = 0
            for n in pieces:   # what the read must match, computed outside the timing
                crc = zlib.crc32(piece[:n], crc)
            cpu0 = cpu_seconds(cluster)
            t0 = time.monotonic()
            stream = client.create("/bench/f")
            for n in pieces:
                stream.write(piece[:n])
            stream.close()
            wt = time.monotonic() - t0
            cpu = {k: v - cpu0[k] for k, v in cpu_seconds(cluster).items()}
            t0 = time.monotonic()
            data = client.read("/bench/f")
            rt = time.monotonic() - t0
            ok = len(data) == args.size and zlib.crc32(data) == crc
            mb = args.size / 1e6
            print(f"write {mb:.0f} MB (replication {args.replication}): {wt:.2f}s = {mb / wt:.1f} MB/s")
            print("  CPU seconds of the write: " + ", ".join(f"{k} {v:.2f}" for k, v in cpu.items())
                  + f" (total {sum(cpu.values()):.2f})")
            print(f"read  {mb:.0f} MB: {rt:.2f}s = {mb / rt:.1f} MB/s, content {'OK' if ok else 'MISMATCH'}")
            client.close()
            return 0 if ok else 1
        finally:
            cluster.down()


if __name__ == "__main__":
    sys.exit(main())
