"""Cluster ready time and one scenario end to end, on the local and the docker backend,
side by side in one run; printed as a table.

    python benchmarks/bench_backends.py [--repeat 3] [--scenario FILE] [--backends local,docker]
                                        [--verify]

"Cluster ready" is Backend.start(): Toxiproxy, the link mesh, the NameNode and the
DataNodes of the scenario, until every DataNode is live (for docker: engine check,
image up-to-date check, network, containers). The images are built first, outside the
measurement. "End to end" is run_scenario() from call to verdict; the verifier is left
out unless --verify (it is the same Spark job on both backends).

Target (docker backend issue): docker cluster ready <= 5 s once the image exists.
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
from harness.runner import run_scenario  # noqa: E402
from harness.scenario import load_scenario  # noqa: E402
from minihdfs.events import EventLog  # noqa: E402

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


def time_ready(backend: str, scenario, work: str, repeat: int) -> tuple[list[float], list[float]]:
    """Start and stop a cluster `repeat` times: (ready seconds, stop seconds)."""
    ready, stop = [], []
    cls = get_backend(backend)
    for i in range(repeat):
        run_dir = os.path.join(work, f"ready-{backend}-{i}")
        os.makedirs(os.path.join(run_dir, "events"))
        b = cls(scenario, f"bench-ready-{backend}-{os.getpid()}-{i}", run_dir,
                EventLog(None, "harness", "harness"), 1)
        try:
            started = time.monotonic()
            b.start()
            ready.append(time.monotonic() - started)
        finally:
            started = time.monotonic()
            b.stop()
            stop.append(time.monotonic() - started)
    return ready, stop


def time_scenario(backend: str, path: str, work: str, verify: bool) -> tuple[float, dict]:
    if not verify:
        sys.modules["harness.reconcile.api"] = None   # the runner's "no verifier" path
    try:
        started = time.monotonic()
        verdict = run_scenario(path, backend=backend, results_dir=os.path.join(work, backend))
        return time.monotonic() - started, verdict
    finally:
        if not verify:
            sys.modules.pop("harness.reconcile.api", None)


def fmt(seconds: list[float]) -> str:
    return f"{statistics.median(seconds):.2f} s" if seconds else "-"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3, help="cluster starts per backend")
    p.add_argument("--scenario", default=os.path.join(ROOT, "scenarios",
                                                      "client-crash-after-hflush.yaml"))
    p.add_argument("--backends", default="local,docker")
    p.add_argument("--verify", action="store_true", help="include the verifier in end to end")
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
                ready, stop = time_ready(backend, scenario, work, args.repeat)
                row["ready"] = fmt(ready)
                row["ready_range"] = f"{min(ready):.2f}-{max(ready):.2f} s"
                row["stop"] = fmt(stop)
                print(f"[{backend}] ready {', '.join(f'{s:.2f}' for s in ready)} s; "
                      f"running {os.path.basename(args.scenario)}", flush=True)
                elapsed, verdict = time_scenario(backend, args.scenario, work, args.verify)
                row["e2e"] = f"{elapsed:.2f} s"
                status = verdict.get("run_status", "completed")
                errors = verdict.get("run_errors") or []
                row["status"] = status + (" (with errors)" if errors else "")
                if errors:
                    notes.append(f"{backend}: " + "; ".join(errors))
                if backend == "docker":
                    row["target"] = ("met" if statistics.median(ready) <= TARGET_DOCKER_READY
                                     else "MISSED") + f" (<= {TARGET_DOCKER_READY:.0f} s)"
            except BackendError as e:
                row["ready"] = "unavailable"
                notes.append(f"{backend}: {e}")
    labels = [("images", "docker images"), ("ready", f"cluster ready (median of {args.repeat})"),
              ("ready_range", "cluster ready (min-max)"), ("stop", "cluster stop (median)"),
              ("e2e", "scenario end to end" + (" + verify" if args.verify else "")),
              ("status", "scenario run status"), ("target", "docker ready target")]
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
