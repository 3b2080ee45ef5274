"""Benchmark of verification through a warm Spark Connect server (`hdfs-chaos spark up`)
against a Spark of the command's own: the wall time of `hdfs-chaos verify` as a user
types it, from the command's start to its last verdict line.

    python benchmarks/bench_connect.py --one results/RUN --library results/ [--repeat 3]

Starts a server on a free port (its own state folder, so a server a user keeps up is not
touched), verifies the one run and the library `--repeat` times through it and once each
with `--remote off` (a cold JVM), prints every wall time and the medians, checks that
both paths give the same check statuses, and stops the server. `--remote URL` times
through a server already up instead (none started or stopped); `--tree DIR` times the
`hdfs-chaos` of another source tree (e.g. a `git archive` of an older commit), so that
two commits are compared through one warm server in one sitting.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _copy_runs(paths: list[str], into: str) -> list[str]:
    """Copies of the run folders (verify rewrites verdict.json)."""
    out = []
    for p in paths:
        dst = os.path.join(into, os.path.basename(os.path.abspath(p).rstrip("/")))
        shutil.copytree(p, dst, ignore=shutil.ignore_patterns("report.html", "plots"))
        out.append(dst)
    return out


def _run_dirs(arg: str) -> list[str]:
    if os.path.exists(os.path.join(arg, "events")):
        return [arg]
    return sorted(os.path.join(arg, d) for d in os.listdir(arg)
                  if os.path.exists(os.path.join(arg, d, "events")))


def _statuses(dirs: list[str]) -> dict:
    out = {}
    for d in dirs:
        with open(os.path.join(d, "verdict.json")) as f:
            v = json.load(f)
        out[os.path.basename(d)] = (v["passed"], tuple((c["id"], c["status"]) for c in v["checks"]))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--one", required=True, help="one recorded run folder")
    ap.add_argument("--library", default=None, help="a folder of recorded runs")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--remote", default=None, metavar="URL",
                    help="time through this server, already up (sc://host:port), instead of "
                         "starting one")
    ap.add_argument("--tree", default=ROOT, metavar="DIR",
                    help="the source tree whose `hdfs-chaos verify` is timed (default: this "
                         "one), to compare two commits through one server")
    ap.add_argument("--no-cold", dest="cold", action="store_false",
                    help="skip the verification with a JVM of its own")
    args = ap.parse_args(argv)
    tree = os.path.abspath(args.tree)
    work = tempfile.mkdtemp(prefix="bench-connect-")
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache"),
               PYTHONPATH=tree + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("HDFS_CHAOS_SPARK_REMOTE", None)
    if args.remote:
        env["HDFS_CHAOS_SPARK_REMOTE"] = args.remote

    def cli(*a) -> float:
        t = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "harness.cli", *a], env=env, cwd=tree,
                              capture_output=True, text=True)
        wall = time.monotonic() - t
        if done.returncode not in (0, 1):
            raise SystemExit(f"hdfs-chaos {' '.join(a[:2])} failed: {done.stderr.strip()}")
        return wall

    sets = [("one run", _run_dirs(args.one))]
    if args.library:
        sets.append((f"library ({len(_run_dirs(args.library))} runs)", _run_dirs(args.library)))
    try:
        if not args.remote:
            t = time.monotonic()
            cli("spark", "up", "--port", str(_free_port()))
            print(f"spark up: {time.monotonic() - t:.1f} s", flush=True)
        print(f"load average at the start: {os.getloadavg()[0]:.1f}", flush=True)
        for label, dirs in sets:
            cold_dirs = _copy_runs(dirs, tempfile.mkdtemp(dir=work))
            cold = cli("verify", "--remote", "off", *cold_dirs) if args.cold else None
            warm = []
            for _ in range(args.repeat):
                warm_dirs = _copy_runs(dirs, tempfile.mkdtemp(dir=work))
                warm.append(cli("verify", *warm_dirs))
            same = _statuses(cold_dirs) == _statuses(warm_dirs) if args.cold else None
            own = f"own JVM {cold:.1f} s; " if args.cold else ""
            print(f"{label}: {own}through the server "
                  f"{', '.join(f'{w:.1f}' for w in warm)} s (median "
                  f"{statistics.median(warm):.1f} s); same verdicts: {same}; "
                  f"load average {os.getloadavg()[0]:.1f}", flush=True)
            if same is False:
                return 1
    finally:
        if not args.remote:
            cli("spark", "down")
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
