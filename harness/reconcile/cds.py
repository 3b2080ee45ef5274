"""The class-data sharing (CDS) archive of the verifier's JVM: built once at setup.

A Spark JVM loads some 15,000 classes before it has verified one run, and at every start
it reads, parses and verifies them again from the jars. A dynamic CDS archive (Java 13+)
holds them parsed and verified, mapped into memory at start. It is made by a JVM that
ran with `-XX:ArchiveClassesAtExit`, so that it holds what a verification really loads:
this module verifies a few synthetic runs (benchmarks/gen_events.py: pipeline, lease and
block recovery, so most checks' code runs) in a child process and keeps the archive it
leaves. sparkjvm.cds_options maps it into the verifier's JVM where it exists.

    python -m harness.reconcile.cds            # build it unless it is there
    python -m harness.reconcile.cds --force    # build it again
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

from .sparkjvm import cds_archive, jvm_process

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GENERATOR = os.path.join(ROOT, "benchmarks", "gen_events.py")


def synthetic_runs(folder: str, events: int) -> list[str]:
    """Run folders of `events` synthetic events (benchmarks/gen_events.py, 10,000 a run)
    written into `folder`."""
    subprocess.run([sys.executable, GENERATOR, folder, "--events", str(events),
                    "--per-run", "10000", "--procs", "1"],
                   check=True, stdout=subprocess.DEVNULL, timeout=300)
    return sorted(os.path.join(folder, d) for d in os.listdir(folder)
                  if os.path.isdir(os.path.join(folder, d, "events")))


def _train(dump: str) -> None:
    """In the child: verify synthetic runs in a JVM that dumps its classes at exit."""
    from .api import verify_runs
    from .session import get_spark, stop_spark
    with tempfile.TemporaryDirectory(prefix="hdfs-chaos-cds-") as tmp:
        runs = synthetic_runs(tmp, 30000)
        spark = get_spark(log_path=os.path.join(tmp, "spark.log"), input_bytes=0,
                          dump_cds=dump)
        verify_runs(runs)
        jvm = jvm_process(spark)
        stop_spark()
        # the JVM exits when its stdin closes (PySpark's gateway watches it) and writes
        # the archive as it exits: wait for that here, so the parent finds it complete
        jvm.stdin.close()
        jvm.wait(timeout=300)


def build(force: bool = False) -> str | None:
    """Build the archive (unless it exists); its path, or None where no archive could be
    made (no benchmarks/ beside the package: an installed copy; the verifier then starts
    without one, a second or two slower)."""
    path = cds_archive()
    if os.path.exists(path) and not force:
        return path
    if not os.path.exists(GENERATOR):
        return None
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    env = dict(os.environ, HDFS_CHAOS_SPARK_CDS=path + ".absent")   # train without one
    proc = subprocess.run([sys.executable, "-m", "harness.reconcile.cds", "--train", tmp],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    # the child waits for its JVM to write the archive: a missing file means it failed
    if proc.returncode != 0 or not os.path.exists(tmp):
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"building the Spark CDS archive failed: {tail[0]}")
    os.replace(tmp, path)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.reconcile.cds",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--force", action="store_true", help="build again even if it exists")
    ap.add_argument("--train", metavar="DUMP", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.train:
        _train(args.train)
        return 0
    try:
        path = build(force=args.force)
    except RuntimeError as exc:
        print(f"cds: {exc}", file=sys.stderr)
        return 1
    print(f"cds: {path or 'no archive (benchmarks/gen_events.py not found)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
