"""Write and read a file with replication 3 on a local mini-HDFS cluster; print MB/s.

    python benchmarks/bench_write.py [--size 256MiB] [--blocksize 128MiB]

Target (issue 2): write >= 150 MB/s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from minihdfs.cluster import LocalCluster  # noqa: E402
from minihdfs.config import parse_size  # noqa: E402


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
            crc = 0
            t0 = time.monotonic()
            stream = client.create("/bench/f")
            written = 0
            while written < args.size:
                n = min(len(piece), args.size - written)
                stream.write(piece[:n])
                crc = zlib.crc32(piece[:n], crc)
                written += n
            stream.close()
            wt = time.monotonic() - t0
            t0 = time.monotonic()
            data = client.read("/bench/f")
            rt = time.monotonic() - t0
            ok = len(data) == args.size and zlib.crc32(data) == crc
            mb = args.size / 1e6
            print(f"write {mb:.0f} MB (replication {args.replication}): {wt:.2f}s = {mb / wt:.1f} MB/s")
            print(f"read  {mb:.0f} MB: {rt:.2f}s = {mb / rt:.1f} MB/s, content {'OK' if ok else 'MISMATCH'}")
            client.close()
            return 0 if ok else 1
        finally:
            cluster.down()


if __name__ == "__main__":
    sys.exit(main())
