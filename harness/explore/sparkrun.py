"""Schedules as Spark tasks (`hdfs-chaos explore BASE --spark-master URL`).

The driver orders schedules as without Spark; `SparkPool` stands where the local worker
pool stands (engine.worker_pool: `submit(fn, yaml_path, results_dir)` -> a Future) and
runs each schedule as one Spark job of one task on an executor: the task unpacks nothing
itself (Spark ships the project, the toxiproxy-server binary and an optional packed
Python environment: `ship_conf`), runs the schedule with the local backend in a
temporary folder of its machine, and publishes the finished run folder to the
destination (`Destination`): copied under an attempt-specific `.incoming-*` name, then
renamed to the schedule's own name. A folder under its final name is whole; a retried
task (a lost executor) whose schedule is published already returns the published
result instead of running it again, so a schedule is counted once.

What an executor lacks (the project, toxiproxy-server, java for Hadoop, a Python module)
fails its task with one line that starts with MISSING; the driver raises it as the
exploration's error (`MissingPiece`).
"""

from __future__ import annotations

import concurrent.futures as cf
import fcntl
import hashlib
import json
import os
import re
import shutil
import socket
import stat
import sys
import tempfile
import threading
import time
import zipfile

import yaml

from .engine import ExploreError

ARCHIVE_NAME = "hdfs-chaos-project"   # the project, unpacked in each executor's folder
ENV_NAME = "hdfs-chaos-env"           # a packed Python environment, likewise
PACKAGES = ("harness", "minihdfs", "faults", "hdfs_contract")
RESULT_FILE = "explore-result.json"   # in a published run folder: what the task returned
INCOMING = ".incoming-"               # a folder being published (never a result)
MISSING = "hdfs-chaos executor:"      # starts the one line of a missing piece
RUNS_POOL = "hdfs-chaos-runs"         # the fair-scheduler pool of the schedules' jobs


class MissingPiece(ExploreError):
    """An executor (or the driver) lacks what a run needs: one line naming it."""


# -- what ships ----------------------------------------------------------------------------

def project_root() -> str:
    """The folder holding this project's packages (harness/, minihdfs/, ...)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def project_archive(out_dir: str, root: str | None = None) -> str:
    """A zip of the project's packages (no caches), named by its content hash so that an
    executor never takes an older copy for it; made in `out_dir` once per content."""
    root = root or project_root()
    files = []
    for pkg in PACKAGES:
        for dirpath, dirnames, names in os.walk(os.path.join(root, pkg)):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
            files += [os.path.join(dirpath, n) for n in sorted(names)
                      if not n.endswith((".pyc", ".pyo")) and not n.startswith(".")]
    digest = hashlib.sha256()
    for path in files:
        digest.update(os.path.relpath(path, root).encode() + b"\0")
        with open(path, "rb") as f:
            digest.update(f.read())
    os.makedirs(out_dir, exist_ok=True)
    target = os.path.join(out_dir, f"hdfs-chaos-{digest.hexdigest()[:12]}.zip")
    if not os.path.exists(target):
        tmp = f"{target}.{os.getpid()}.tmp"
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            for path in files:
                info = zipfile.ZipInfo(os.path.relpath(path, root), (2020, 1, 1, 0, 0, 0))
                info.external_attr = (os.stat(path).st_mode & 0o777 | stat.S_IFREG) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                with open(path, "rb") as f:
                    z.writestr(info, f.read())
        os.replace(tmp, target)
    return target


def ship_conf(archive: str, toxiproxy: str | None = None,
              python_env: str | None = None) -> dict[str, str]:
    """The session's settings that ship what an executor needs through Spark: the project
    (spark.archives, unpacked as ARCHIVE_NAME), toxiproxy-server (spark.files), a packed
    Python environment (a venv-pack/conda-pack tar.gz, unpacked as ENV_NAME, whose
    bin/python runs the tasks). Schedules' jobs and the verifier's share the executors
    in a fair scheduler, so a verification is not queued behind every run."""
    archives = [f"{os.path.abspath(archive)}#{ARCHIVE_NAME}"]
    conf = {"spark.scheduler.mode": "FAIR",
            # one schedule is one task: no second copy of a run beside a slow one
            "spark.speculation": "false",
            # a check's task waits for no particular executor (the default waits 3 s for
            # the one caching its input, which a run may hold for many seconds)
            "spark.locality.wait": "0s"}
    if python_env:
        archives.append(f"{os.path.abspath(python_env)}#{ENV_NAME}")
        conf["spark.pyspark.python"] = f"./{ENV_NAME}/bin/python"
    conf["spark.archives"] = ",".join(archives)
    if not os.environ.get("HDFS_CHAOS_SPARK_PARTITIONS"):
        # a batch is a few runs of small logs: a cluster's default of 200 partitions
        # makes hundreds of tasks of nothing per stage of the checks
        conf["spark.sql.shuffle.partitions"] = conf["spark.default.parallelism"] = "2"
    # the checks of such a batch are seconds of cold code on the executors as in a local
    # verify (session._java_options): the client compiler only, the throughput collector
    conf["spark.executor.extraJavaOptions"] = ("-XX:+UseParallelGC -XX:TieredStopAtLevel=1 "
                                               "-XX:CICompilerCount=1")
    if toxiproxy:
        conf["spark.files"] = os.path.abspath(toxiproxy)
    return conf


# -- publishing a run folder -----------------------------------------------------------------

class Destination:
    """Where run folders go: a local folder (atomic rename), or a URI of a file system
    pyarrow knows (hdfs://, s3://, file://: moved, then RESULT_FILE written last, which
    marks the folder whole). `publish` gives the published folder and its result;
    an attempt that finds the schedule published already drops its own copy."""

    def __init__(self, where: str):
        self.where = where
        self.uri = bool(re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", where))
        if self.uri:
            import pyarrow.fs as pafs
            self.fs, self.base = pafs.FileSystem.from_uri(where)
            self.local = pafs.LocalFileSystem()
        else:
            self.fs, self.base = None, os.path.abspath(where)

    def path(self, name: str) -> str:
        if not self.uri:
            return os.path.join(self.base, name)
        return self.where.rstrip("/") + "/" + name

    def _inner(self, name: str) -> str:
        return self.base.rstrip("/") + "/" + name

    def result_of(self, name: str) -> dict | None:
        """The result of `name` if it is published whole, else None."""
        try:
            if not self.uri:
                with open(os.path.join(self.base, name, RESULT_FILE)) as f:
                    return json.load(f)
            with self.fs.open_input_stream(self._inner(f"{name}/{RESULT_FILE}")) as f:
                return json.loads(f.read())
        except (OSError, ValueError, FileNotFoundError):
            return None

    def publish(self, local_dir: str, name: str, tag: str, result: dict) -> dict:
        """Publish `local_dir` (a finished run) as `name`, with `result` (run_dir set to
        the published path) in RESULT_FILE; returns the published result: ours, or the
        one already there."""
        result = dict(result, run_dir=self.path(name))
        if self.uri:
            return self._publish_fs(local_dir, name, tag, result)
        os.makedirs(self.base, exist_ok=True)
        with open(os.path.join(local_dir, RESULT_FILE), "w") as f:
            json.dump(result, f, default=str)
        incoming = os.path.join(self.base, f"{INCOMING}{name}-{tag}")
        try:
            os.rename(local_dir, incoming)          # the same file system: no copy
        except OSError:
            shutil.copytree(local_dir, incoming, symlinks=True)
        final = os.path.join(self.base, name)
        try:
            os.rename(incoming, final)   # fails on a folder there: the first attempt wins
        except OSError:
            shutil.rmtree(incoming, ignore_errors=True)
            there = self.result_of(name)
            if there is None:
                raise
            return there
        return result

    def _publish_fs(self, local_dir: str, name: str, tag: str, result: dict) -> dict:
        import pyarrow.fs as pafs
        there = self.result_of(name)
        if there is not None:
            return there
        incoming = self._inner(f"{INCOMING}{name}-{tag}")
        final = self._inner(name)
        self.fs.create_dir(self.base, recursive=True)
        pafs.copy_files(local_dir, incoming, source_filesystem=self.local,
                        destination_filesystem=self.fs)
        # a folder there without RESULT_FILE is a dead attempt's (one attempt runs at a
        # time: no speculation): ours replaces it
        if self.fs.get_file_info(final).type != pafs.FileType.NotFound:
            self.fs.delete_dir(final)
        self.fs.move(incoming, final)
        with self.fs.open_output_stream(f"{final}/{RESULT_FILE}") as f:
            f.write(json.dumps(result, default=str).encode())
        return result

    def sweep(self) -> list[str]:
        """Remove the `.incoming-*` folders lost attempts left (call with no task
        running); returns their names."""
        if self.uri:
            import pyarrow.fs as pafs
            infos = self.fs.get_file_info(pafs.FileSelector(self.base, allow_not_found=True))
            gone = [i.base_name for i in infos if i.base_name.startswith(INCOMING)]
            for name in gone:
                self.fs.delete_dir(self._inner(name))
            return gone
        try:
            gone = [n for n in os.listdir(self.base) if n.startswith(INCOMING)]
        except OSError:
            return []
        for name in gone:
            shutil.rmtree(os.path.join(self.base, name), ignore_errors=True)
        return gone


# -- on the executor -----------------------------------------------------------------------

def _host() -> str:
    return socket.gethostname()


def _toxiproxy() -> None:
    """Point the runs at a toxiproxy-server: the one shipped with spark.files, else the
    executor's own (faults.toxiproxy_server.find_binary)."""
    try:
        from pyspark import SparkFiles
        shipped = SparkFiles.get("toxiproxy-server")
    except Exception:
        shipped = None
    if shipped and os.path.isfile(shipped):
        if not os.access(shipped, os.X_OK):
            os.chmod(shipped, os.stat(shipped).st_mode | 0o755)
        os.environ["TOXIPROXY_SERVER"] = shipped
        return
    from faults.toxiproxy_server import ToxiproxyError, find_binary
    try:
        found = find_binary()
    except ToxiproxyError as e:
        raise MissingPiece(f"{MISSING} {_host()}: {e}") from None
    if found is None:
        raise MissingPiece(f"{MISSING} {_host()} has no toxiproxy-server: ship it "
                           f"(--spark-toxiproxy PATH) or put it on the executors' PATH")


def _java(system) -> None:
    if not system.capabilities().needs_java:
        return
    home = os.environ.get("JAVA_HOME")
    if shutil.which("java") or (home and os.access(os.path.join(home, "bin", "java"), os.X_OK)):
        return
    raise MissingPiece(f"{MISSING} {_host()} has no java for the {system.name} daemons: "
                       f"install Java 11+ on the executors or set JAVA_HOME there")


def _system_of(payload: dict):
    """The system (and release) a schedule's run uses, as its scenario names it."""
    from harness.systems import get_system
    return get_system(payload["system"], payload.get("version"))


def _prepare(system) -> None:
    """What the system builds once per machine (Hadoop's jars and client), under a lock:
    two tasks of one machine would write the same files."""
    from harness.systems import SystemError_
    lock_dir = os.path.join(os.path.expanduser("~"), ".cache", "hdfs-chaos")
    os.makedirs(lock_dir, exist_ok=True)
    with open(os.path.join(lock_dir, ".spark-prepare.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            system.prepare()
        except SystemError_ as e:
            raise MissingPiece(f"{MISSING} {_host()}: {e}") from None


def run_task(payload: dict, root: str) -> dict:
    """One schedule on this executor: the result of payload's function (module, name)
    on the schedule, published to payload["dest"]; the published result if a former
    attempt published it already."""
    from pyspark import TaskContext
    ctx = TaskContext.get()
    tag = f"{_host()}-{os.getpid()}-t{ctx.taskAttemptId() if ctx else 0}"
    dest = Destination(payload["dest"])
    name = payload["name"]
    there = dest.result_of(name)
    if there is not None:
        return dict(there, reused=True)
    from harness.systems.minihdfs import use_package_root
    use_package_root(root)        # the cluster's processes import the shipped mini-HDFS
    _toxiproxy()
    system = _system_of(payload)
    _java(system)
    work = tempfile.mkdtemp(prefix=f"hdfs-chaos-{name[-24:]}-")
    try:
        path = os.path.join(work, payload["file"])
        with open(path, "w") as f:
            f.write(payload["yaml"])
        _prepare(system)
        module = __import__(payload["module"], fromlist=[payload["function"]])
        result = getattr(module, payload["function"])(path, os.path.join(work, "runs"))
        result = dict(result, host=_host(), attempt=tag, project=root)
        # a run cut short (its executor going down signals it) is no result to keep
        if not result.get("run_dir") or not os.path.isdir(result["run_dir"]) \
                or result.get("status") == "interrupted":
            return result
        return dest.publish(result["run_dir"], name, tag, result)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def task_entry(archive_name: str = ARCHIVE_NAME, packages: tuple = PACKAGES,
               missing: str = MISSING):
    """The function Spark runs on each partition (one schedule payload). A nested
    function, so cloudpickle ships its code by value: it needs nothing of the project to
    start, finds the project Spark unpacked, puts it first on sys.path (dropping any
    other copy a reused Python worker imported) and calls run_task from there."""
    def entry(rows):
        import os
        import socket
        import sys
        from pyspark import SparkFiles
        # absolute: the runs' processes (PYTHONPATH) work in other folders
        root = os.path.abspath(os.path.join(SparkFiles.getRootDirectory(), archive_name))
        if not os.path.isdir(os.path.join(root, "harness")):
            raise RuntimeError(f"{missing} {socket.gethostname()} has not got the project "
                               f"({archive_name} is not in {SparkFiles.getRootDirectory()}): "
                               f"ship it in spark.archives")
        if not sys.path or sys.path[0] != root:
            for mod in list(sys.modules):
                f = getattr(sys.modules[mod], "__file__", None) or ""
                if mod.split(".")[0] in packages and not f.startswith(root):
                    del sys.modules[mod]
            sys.path.insert(0, root)
        try:
            from harness.explore.sparkrun import run_task
            for row in rows:
                yield run_task(row, root)
        except ImportError as e:
            raise RuntimeError(f"{missing} {socket.gethostname()}: the executors' Python "
                               f"({sys.executable}) cannot import {e.name or e}: ship a "
                               f"packed environment (--spark-python-env)") from None
    return entry


# -- on the driver -------------------------------------------------------------------------

def missing_line(exc: BaseException) -> str | None:
    """The MISSING line a task failed with, from the exception its job raised."""
    m = re.search(re.escape(MISSING) + r"[^\n\r]*", str(exc))
    return m.group(0).strip().rstrip(".") if m else None


class SparkPool:
    """The explorer's pool on a Spark cluster: `submit(fn, yaml_path, results_dir)` runs
    fn(yaml file, folder) as a one-task job on an executor (fn importable by name from
    the shipped project) and publishes the run folder into `results_dir`; a Future of
    its result. `max_workers` jobs run at once, each from its own driver thread."""

    def __init__(self, spark, max_workers: int):
        self.spark = spark
        self.sc = spark.sparkContext
        self.max_workers = max_workers
        self.threads = cf.ThreadPoolExecutor(max_workers=max_workers,
                                             thread_name_prefix="spark-schedule")
        self.entry = task_entry()
        self.dests: set[str] = set()
        self._lock = threading.Lock()

    def payload(self, fn, yaml_path: str, results_dir: str) -> dict:
        with open(yaml_path) as f:
            text = f.read()
        doc = yaml.safe_load(text) or {}
        name = str(doc.get("name") or os.path.splitext(os.path.basename(yaml_path))[0])
        cluster = doc.get("cluster") or {}
        system = str(cluster.get("system") or "minihdfs")
        return {"yaml": text, "file": os.path.basename(yaml_path), "name": name,
                "dest": results_dir, "system": system, "version": cluster.get("hadoop_version"),
                "module": fn.__module__, "function": fn.__qualname__}

    def submit(self, fn, yaml_path: str, results_dir: str) -> cf.Future:
        payload = self.payload(fn, yaml_path, results_dir)
        with self._lock:
            self.dests.add(results_dir)
        return self.threads.submit(self._job, payload)

    def _job(self, payload: dict) -> dict:
        self.sc.setLocalProperty("spark.scheduler.pool", RUNS_POOL)
        self.sc.setJobDescription(f"hdfs-chaos schedule {payload['name']}")
        try:
            [result] = self.sc.parallelize([payload], 1).mapPartitions(self.entry).collect()
        except Exception as e:
            line = missing_line(e)
            if line:
                raise MissingPiece(line) from None
            raise
        return result

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        self.threads.shutdown(wait=wait, cancel_futures=cancel_futures)
        if not wait:
            self.sc.cancelAllJobs()
            return
        for d in sorted(self.dests):
            Destination(d).sweep()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.shutdown()


def executor_slots(spark, wait: float = 60.0, settle: float = 3.0) -> int:
    """Task slots (cores) the cluster's executors offer, once the first registered and
    no other came for `settle` s (waiting up to `wait` s): the schedules run at once by
    default. 1 when none came."""
    master = spark.sparkContext.master
    if master.startswith("local"):     # the driver is the executor: local[N], local[*]
        m = re.match(r"local\[(\d+|\*)", master)
        return 1 if not m else (os.cpu_count() or 1) if m.group(1) == "*" else int(m.group(1))
    store = spark.sparkContext._jsc.sc().statusStore()

    def cores() -> tuple[int, int]:
        lst = store.executorList(True)
        found = [lst.apply(i) for i in range(lst.size())]
        found = [e for e in found if e.id() != "driver"]
        return len(found), sum(e.totalCores() for e in found)

    deadline = time.time() + wait
    seen, since = cores(), time.time()
    while time.time() < deadline and (seen[0] == 0 or time.time() - since < settle):
        time.sleep(0.5)
        now = cores()
        if now != seen:
            seen, since = now, time.time()
    return max(1, seen[1])


def start(master: str, out: str, toxiproxy: str | None = None,
          python_env: str | None = None):
    """The cluster session for an exploration into `out`: the project packed into
    out/.spark/, shipped with toxiproxy-server (the driver's, unless given) and an
    optional packed environment. Raises MissingPiece on what the driver lacks."""
    from harness.reconcile.session import get_spark
    if python_env and not os.path.isfile(python_env):
        raise MissingPiece(f"--spark-python-env {python_env}: no such file (a venv-pack or "
                           f"conda-pack tar.gz)")
    if toxiproxy is None:
        from faults.toxiproxy_server import ToxiproxyError, find_binary
        try:
            toxiproxy = find_binary()
        except ToxiproxyError:
            toxiproxy = None
    elif not os.access(toxiproxy, os.X_OK):
        raise MissingPiece(f"--spark-toxiproxy {toxiproxy}: not an executable file")
    archive = project_archive(os.path.join(os.path.abspath(out), ".spark"))
    conf = ship_conf(archive, toxiproxy, python_env)
    if not master.startswith("local"):
        # the driver plans the checks of small batches, as a local verify does: the same
        # JVM options (client compiler, throughput collector, the CDS archive if built)
        from harness.reconcile.session import SMALL_INPUT_BYTES, _java_options
        conf["spark.driver.extraJavaOptions"] = _java_options(SMALL_INPUT_BYTES)
    os.makedirs(out, exist_ok=True)
    return get_spark(master, log_path=os.path.join(os.path.abspath(out), "spark.log"),
                     conf=conf)
