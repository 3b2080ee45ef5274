"""`hdfs-chaos explore --spark-master` on a real Spark standalone cluster of this machine
(a master and two one-core workers from the pyspark package's jars): the schedules run
as tasks on the executors with the shipped project and toxiproxy-server, each run folder
is published once into --out, the batches are verified on the same cluster, and
`--resume` goes on. Then a worker is SIGKILLed (its whole process group) while it runs a
schedule: Spark retries the task on the other worker and no schedule is lost or counted
twice, nor a half-written folder left.

Bounded by numbers of schedules, not time: a loaded machine makes it slower, not
different."""

from __future__ import annotations

import json
import os
import re
import threading
import time

import pytest

from harness.explore import sparkrun
from harness.explore.engine import explore
from harness.explore.standalone import StandaloneCluster

pytestmark = [pytest.mark.integration, pytest.mark.spark]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASE = os.path.join(ROOT, "explore-bases", "append.yaml")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from harness.reconcile.session import stop_spark
    stop_spark()          # a session of another test would be on another master
    c = StandaloneCluster(workers=2, cores=1, memory="1g",
                          work_dir=str(tmp_path_factory.mktemp("spark-standalone")))
    try:
        c.start()
        yield c
    finally:
        stop_spark()      # the driver's JVM and its executors first, then the cluster
        c.stop()


def _pool(spark):
    return lambda workers, package_root: sparkrun.SparkPool(spark, workers)


def _published(out: str) -> dict[str, dict]:
    runs = os.path.join(out, "runs")
    return {n: json.load(open(os.path.join(runs, n, sparkrun.RESULT_FILE)))
            for n in os.listdir(runs) if not n.startswith(".")}


def test_schedules_run_as_tasks_on_the_cluster_and_resume(cluster, tmp_path):
    out = str(tmp_path / "explore")
    spark = sparkrun.start(cluster.url, out)
    assert spark.sparkContext.master == cluster.url
    state = explore(BASE, out, budget=3600, depth=1, workers=2, max_schedules=2,
                    pool=_pool(spark))
    assert state.base_run["outcome"] == "pass"
    assert len(state.results) == 2
    published = _published(out)
    # one folder per schedule (and the clean run), named by it, published whole
    assert len(published) == 3
    for r in state.results.values():
        name = os.path.basename(r["run_dir"])
        assert os.path.dirname(r["run_dir"]) == os.path.join(out, "runs")
        assert name.endswith(f"-x{r['id']}") and name in published
        assert r["outcome"] in ("pass", "fail", "hung", "unreached"), r
        assert os.path.exists(os.path.join(r["run_dir"], "verdict.json"))   # verified
        # ran by a Python worker of an executor: its attempt tag, not this process
        assert published[name]["attempt"].split("-")[-2] != str(os.getpid())
        # with the project Spark shipped, unpacked in the executor's folder
        assert published[name]["project"].startswith(os.path.join(cluster.work_dir, "work"))
    # the executors had the shipped project and toxiproxy-server
    apps = os.listdir(os.path.join(cluster.work_dir, "work"))
    shipped = [os.listdir(os.path.join(cluster.work_dir, "work", a, e)) for a in apps
               for e in os.listdir(os.path.join(cluster.work_dir, "work", a))]
    assert any(sparkrun.ARCHIVE_NAME in s and "toxiproxy-server" in s for s in shipped)
    again = explore(BASE, out, budget=3600, depth=1, workers=2, resume=True, max_schedules=3,
                    pool=_pool(spark))
    assert set(state.results) < set(again.results) and len(again.results) == 3
    assert len(_published(out)) == 4


def _executors_of(cluster, worker: int) -> list[str]:
    """The executor folders (work/app/N) worker `worker` launched."""
    with open(os.path.join(cluster.work_dir, f"worker-{worker}.log"), errors="replace") as f:
        ids = re.findall(r"Asked to launch executor (app-[\w-]+)/(\d+)", f.read())
    return [os.path.join(cluster.work_dir, "work", app, n) for app, n in ids]


def _run_in(folders: list[str]) -> str | None:
    """The schedule (its name's tail) a mini-HDFS node started from one of `folders`
    (its PYTHONPATH: the project shipped there) runs, if any."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")
            if "minihdfs.node" not in cmd:
                continue
            env = open(f"/proc/{pid}/environ", "rb").read().decode(errors="replace")
        except OSError:
            continue
        path = next((v[len("PYTHONPATH="):] for v in env.split("\0")
                     if v.startswith("PYTHONPATH=")), "")
        m = re.search(r"hdfs-chaos-([\w.-]+?)-\w{8}/runs", cmd)
        if m and any(path.startswith(f + os.sep) for f in folders):
            return m.group(1)
    return None


def test_a_lost_worker_loses_no_schedule_and_counts_none_twice(cluster, tmp_path):
    out = str(tmp_path / "explore")
    spark = sparkrun.start(cluster.url, out)     # the session of the first test
    killed: dict = {}

    def kill_worker_1_mid_run():
        deadline = time.time() + 400
        while time.time() < deadline and not killed:
            if os.path.exists(os.path.join(out, "state.json")):   # past the clean run
                lost = _run_in(_executors_of(cluster, 1))
                if lost:
                    cluster.kill_worker(1)
                    killed["schedule"] = lost
                    return
            time.sleep(0.3)

    watcher = threading.Thread(target=kill_worker_1_mid_run, daemon=True)
    watcher.start()
    state = explore(BASE, out, budget=3600, depth=1, workers=2, max_schedules=3,
                    pool=_pool(spark))
    watcher.join(5)
    assert killed, "worker 1 never ran a schedule after the clean run"
    assert cluster.workers[1].poll() is not None
    assert len(state.results) == 3 and not state.running
    published = _published(out)
    names = sorted(os.path.basename(r["run_dir"]) for r in state.results.values())
    # the schedule lost with the worker ran again elsewhere and counts once
    assert [n for n in names if n.endswith(killed["schedule"])], (killed, names)
    assert len(set(names)) == 3 and set(names) <= set(published)
    assert len(published) == 4                           # the three and the clean run
    assert not [n for n in os.listdir(os.path.join(out, "runs")) if n.startswith(".")]
    for r in state.results.values():
        assert os.path.exists(os.path.join(r["run_dir"], "verdict.json"))
