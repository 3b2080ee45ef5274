"""Cluster ready time and one scenario end to end, on the local and the docker backend
and on Apache Hadoop (`hadoop`: the local backend with real Hadoop daemons), side by
side in one run; with --write, also SIZE written and read back with replication 3 on
the mini-HDFS and on Hadoop; printed as a table.

    python benchmarks/bench_backends.py [--repeat 3] [--scenario FILE] [--backends local,docker]
                                        [--verify] [--write 256MiB] [--hadoop-version 3.4.2]
    python benchmarks/bench_backends.py --backends local,hadoop --write 256MiB   # issue 18

"Cluster ready" is Backend.start(): Toxiproxy, the link mesh, the NameNode and the
DataNodes of the scenario, until every DataNode is live (for docker: engine check,
image up-to-date check, network, containers). The images are built first, outside the
measurement. "End to end" is run_scenario() from call to verdict; the verifier is left
out unless --verify (it is the same Spark job on both backends).

Target (docker backend issue): docker cluster ready <= 5 s once the image exists.

--write (issue 18): a cluster of 3 DataNodes with no link mesh, 128 MiB blocks; the
mini-HDFS is written by its Python client in this process, Hadoop by FsShell
(`-put -`, one client JVM, its start-up included and shown apart as `-ls /`'s time),
then read back whole (`-cat`) and compared by CRC.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from harness.backends import BackendError, get_backend  # noqa: E402
from harness.reconcile.verdict import Verdict  # noqa: E402
from harness.runner import run_scenario  # noqa: E402
from harness.scenario import load_scenario  # noqa: E402
from harness.systems import get_system  # noqa: E402
from hdfs_contract.config import parse_size  # noqa: E402
from hdfs_contract.events import EventLog  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_DOCKER_READY = 5.0


def prepare_images() -> str:
    """Builds the docker images if missing (not measured); returns what happened."""
    from harness import images
    started = time.monotonic()
    lines: list[str] = []
    try:
        images.build_image(lines.append)
        images.build_toxiproxy_image(progress=lines.append)
    except images.ImageError as e:
        raise BackendError(str(e)) from None
    built = any("built in" in line for line in lines)
    return f"{'built' if built else 'present'} ({time.monotonic() - started:.1f}s)"


def _backend_system(column: str, version: str) -> tuple[str, dict]:
    """A column of the table as (backend name, extra Backend arguments)."""
    if column == "hadoop":
        return "local", {"system": get_system("hadoop", version)}
    return column, {}


def time_ready(backend: str, scenario, work: str, repeat: int,
               version: str = "3.4.2") -> tuple[list[float], list[float]]:
    """Start and stop a cluster `repeat` times: (ready seconds, stop seconds)."""
    ready, stop = [], []
    name, extra = _backend_system(backend, version)
    cls = get_backend(name)
    for i in range(repeat):
        run_dir = os.path.join(work, f"ready-{backend}-{i}")
        os.makedirs(os.path.join(run_dir, "events"))
        b = cls(scenario, f"bench-ready-{backend}-{os.getpid()}-{i}", run_dir,
                EventLog(None, "harness", "harness"), 1, **extra)
        try:
            started = time.monotonic()
            b.start()
            ready.append(time.monotonic() - started)
        finally:
            started = time.monotonic()
            b.stop()
            stop.append(time.monotonic() - started)
    return ready, stop


def time_scenario(backend: str, path: str, work: str, verify: bool,
                  version: str = "3.4.2") -> tuple[float, Verdict]:
    if not verify:
        sys.modules["harness.reconcile.api"] = None   # the runner's "no verifier" path
    try:
        started = time.monotonic()
        hadoop = {"system": "hadoop", "hadoop_version": version} if backend == "hadoop" else {}
        verdict = run_scenario(path, backend=_backend_system(backend, version)[0],
                               results_dir=os.path.join(work, backend), **hadoop)
        return time.monotonic() - started, verdict
    finally:
        if not verify:
            sys.modules.pop("harness.reconcile.api", None)


def time_write(system: str, size: int, work: str, version: str) -> dict[str, str]:
    """`size` bytes written with replication 3 and read back, on a fresh cluster of 3
    DataNodes of `system` (minihdfs | hadoop): {write, read, content[, jvm]}."""
    import zlib
    piece = os.urandom(4 << 20)
    data = (piece * (size // len(piece) + 1))[:size]
    crc = zlib.crc32(data)
    config = {"dfs.blocksize": "128MiB", "dfs.replication": 3, "dfs.heartbeat.interval": "1s"}
    folder = os.path.join(work, f"write-{system}")
    if system == "minihdfs":
        from minihdfs.cluster import LocalCluster
        cluster = LocalCluster(folder, 3, config).start()
        try:
            client = cluster.client("bench")
            started = time.monotonic()
            stream = client.create("/bench/f")
            for at in range(0, size, len(piece)):
                stream.write(data[at:at + len(piece)])
            stream.close()
            wrote = time.monotonic() - started
            started = time.monotonic()
            back = client.read("/bench/f")
            read = time.monotonic() - started
            client.close()
        finally:
            cluster.down()
        jvm = None
    else:
        from harness.systems.hadoop import fetch
        from harness.systems.hadoop.cluster import HadoopCluster
        fetch.fetch(version)
        shell = "org.apache.hadoop.fs.FsShell"
        cluster = HadoopCluster(folder, version, 3, {k: str(v) for k, v in config.items()})
        cluster.start(timeout=180)
        try:
            started = time.monotonic()
            cluster.run_client("bench", shell, ["-ls", "/"])
            jvm = time.monotonic() - started
            started = time.monotonic()
            put = cluster.run_client("bench", shell, ["-put", "-", "/bench/f"], stdin=data,
                                     timeout=600)
            wrote = time.monotonic() - started
            if put.returncode != 0:
                raise BackendError(f"hadoop -put failed: {put.stderr.decode()[-300:]}")
            started = time.monotonic()
            back = cluster.run_client("bench", shell, ["-cat", "/bench/f"], timeout=600).stdout
            read = time.monotonic() - started
        finally:
            cluster.down()
    mb = size / 1e6
    out = {"write": f"{wrote:.2f} s = {mb / wrote:.0f} MB/s",
           "read": f"{read:.2f} s = {mb / read:.0f} MB/s",
           "content": "OK" if len(back) == size and zlib.crc32(back) == crc else "MISMATCH"}
    if jvm is not None:
        out["jvm"] = f"{jvm:.2f} s"
    return out


def fmt(seconds: list[float]) -> str:
    return f"{statistics.median(seconds):.2f} s" if seconds else "-"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3, help="cluster starts per backend")
    p.add_argument("--scenario", default=os.path.join(ROOT, "scenarios",
                                                      "client-crash-after-hflush.yaml"))
    p.add_argument("--backends", default="local,docker")
    p.add_argument("--verify", action="store_true", help="include the verifier in end to end")
    p.add_argument("--write", type=parse_size, default=0,
                   help="also write and read this much, replication 3 (e.g. 256MiB)")
    p.add_argument("--hadoop-version", default="3.4.2")
    args = p.parse_args()
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    scenario = load_scenario(args.scenario)
    rows: dict[str, dict[str, str]] = {b: {} for b in backends}
    notes = []
    with tempfile.TemporaryDirectory(prefix="bench-backends-") as work:
        for backend in backends:
            row = rows[backend]
            try:
                if backend == "docker":
                    row["images"] = prepare_images()
                print(f"[{backend}] starting {args.repeat} clusters of {scenario.cluster.datanodes} "
                      "DataNodes", flush=True)
                ready, stop = time_ready(backend, scenario, work, args.repeat,
                                         args.hadoop_version)
                row["ready"] = fmt(ready)
                row["ready_range"] = f"{min(ready):.2f}-{max(ready):.2f} s"
                row["stop"] = fmt(stop)
                print(f"[{backend}] ready {', '.join(f'{s:.2f}' for s in ready)} s; "
                      f"running {os.path.basename(args.scenario)}", flush=True)
                elapsed, verdict = time_scenario(backend, args.scenario, work, args.verify,
                                                 args.hadoop_version)
                row["e2e"] = f"{elapsed:.2f} s"
                status = verdict.run_status or "completed"
                errors = verdict.run_errors or []
                row["status"] = status + (" (with errors)" if errors else "")
                if errors:
                    notes.append(f"{backend}: " + "; ".join(errors))
                if backend == "docker":
                    row["target"] = ("met" if statistics.median(ready) <= TARGET_DOCKER_READY
                                     else "MISSED") + f" (<= {TARGET_DOCKER_READY:.0f} s)"
                if args.write and backend in ("local", "hadoop"):
                    system = "hadoop" if backend == "hadoop" else "minihdfs"
                    print(f"[{backend}] writing {args.write >> 20} MiB", flush=True)
                    row.update({f"w_{k}": v for k, v in
                                time_write(system, args.write, work, args.hadoop_version).items()})
            except BackendError as e:
                row["ready"] = "unavailable"
                notes.append(f"{backend}: {e}")
    labels = [("images", "docker images"), ("ready", f"cluster ready (median of {args.repeat})"),
              ("ready_range", "cluster ready (min-max)"), ("stop", "cluster stop (median)"),
              ("e2e", "scenario end to end" + (" + verify" if args.verify else "")),
              ("status", "scenario run status"), ("target", "docker ready target"),
              ("w_write", f"write {args.write >> 20} MiB, replication 3"),
              ("w_read", f"read {args.write >> 20} MiB"), ("w_content", "read-back content"),
              ("w_jvm", "  of which a client JVM start")]
    width = max(len(text) for _, text in labels)
    print()
    print(f"scenario: {scenario.name} ({scenario.cluster.datanodes} DataNodes, "
          f"{len(scenario.client_ids)} client(s)); cpus: {os.cpu_count()}; "
          f"load average: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"{'':<{width}}  " + "  ".join(f"{b:>20}" for b in backends))
    for key, text in labels:
        if any(key in rows[b] for b in backends):
            print(f"{text:<{width}}  " + "  ".join(f"{rows[b].get(key, '-'):>20}" for b in backends))
    for note in notes:
        print(f"note: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
