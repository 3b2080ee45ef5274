"""Schedules as Spark tasks (harness/explore/sparkrun.py) without a cluster: what ships,
publishing a run folder once (a retried task never makes a second copy nor a half one),
the task's code shipped by value, a missing piece as one line, and the engine's pool seam."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile

import pytest

from harness.explore import sparkrun
from harness.explore.engine import ExploreError, Explorer
from harness.explore.sparkrun import (INCOMING, MISSING, RESULT_FILE, Destination, MissingPiece,
                                      missing_line, project_archive, run_task, ship_conf,
                                      task_entry)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _fake_project(root, text="x = 1\n"):
    for pkg in sparkrun.PACKAGES:
        os.makedirs(root / pkg / "__pycache__", exist_ok=True)
        (root / pkg / "__init__.py").write_text(text)
        (root / pkg / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"\0")
    (root / "harness" / "schema").mkdir(exist_ok=True)
    (root / "harness" / "schema" / "s.json").write_text("{}")


def test_project_archive_holds_the_packages_and_their_data_and_is_named_by_content(tmp_path):
    src = tmp_path / "src"
    _fake_project(src)
    a = project_archive(str(tmp_path / "out"), str(src))
    names = zipfile.ZipFile(a).namelist()
    assert "harness/schema/s.json" in names and "minihdfs/__init__.py" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert project_archive(str(tmp_path / "out"), str(src)) == a     # same content, same file
    (src / "faults" / "__init__.py").write_text("x = 2\n")
    b = project_archive(str(tmp_path / "out"), str(src))
    assert b != a and os.path.exists(a) and os.path.exists(b)


def test_the_real_project_archive_has_this_module(tmp_path):
    names = zipfile.ZipFile(project_archive(str(tmp_path))).namelist()
    assert "harness/explore/sparkrun.py" in names and "minihdfs/cluster.py" in names


def test_ship_conf_sends_project_toxiproxy_and_environment_through_spark(tmp_path, monkeypatch):
    monkeypatch.delenv("HDFS_CHAOS_SPARK_PARTITIONS", raising=False)
    conf = ship_conf("/p/proj.zip", "/bin/toxiproxy-server", "/e/env.tar.gz")
    assert conf["spark.archives"] == (f"/p/proj.zip#{sparkrun.ARCHIVE_NAME},"
                                      f"/e/env.tar.gz#{sparkrun.ENV_NAME}")
    assert conf["spark.files"] == "/bin/toxiproxy-server"
    assert conf["spark.pyspark.python"] == f"./{sparkrun.ENV_NAME}/bin/python"
    assert conf["spark.scheduler.mode"] == "FAIR" and conf["spark.speculation"] == "false"
    assert conf["spark.sql.shuffle.partitions"] == "2"
    assert "TieredStopAtLevel=1" in conf["spark.executor.extraJavaOptions"]
    bare = ship_conf("/p/proj.zip")
    assert "spark.files" not in bare and "spark.pyspark.python" not in bare
    monkeypatch.setenv("HDFS_CHAOS_SPARK_PARTITIONS", "16")    # the user's setting wins
    assert "spark.sql.shuffle.partitions" not in ship_conf("/p/proj.zip")


def _finished_run(tmp_path, name, text):
    d = tmp_path / name
    (d / "events").mkdir(parents=True)
    (d / "events" / "harness.jsonl").write_text(text)
    return str(d)


@pytest.mark.parametrize("uri", [False, True])
def test_publish_first_attempt_wins_and_a_second_copy_is_dropped(tmp_path, uri):
    runs = tmp_path / "runs"
    dest = Destination(f"file://{runs}" if uri else str(runs))
    first = _finished_run(tmp_path / "a1", "r", "attempt 1\n")
    got = dest.publish(first, "sched-x1", "host-1-t7", {"status": "completed", "run_dir": first})
    assert got["run_dir"] == dest.path("sched-x1") and got["status"] == "completed"
    # a retried task (the first attempt's executor was lost after publishing) finishes too
    second = _finished_run(tmp_path / "a2", "r", "attempt 2\n")
    again = dest.publish(second, "sched-x1", "host-2-t9", {"status": "error", "run_dir": second})
    assert again == got                                   # the published result, not its own
    assert sorted(os.listdir(runs)) == ["sched-x1"]      # no second folder, no .incoming-
    assert (runs / "sched-x1" / "events" / "harness.jsonl").read_text() == "attempt 1\n"
    assert json.loads((runs / "sched-x1" / RESULT_FILE).read_text()) == got


def test_a_half_written_folder_is_never_a_result_and_is_swept(tmp_path):
    runs = tmp_path / "runs"
    half = runs / f"{INCOMING}sched-x2-host-1-t3" / "events"
    half.mkdir(parents=True)                              # a lost attempt mid-copy
    dest = Destination(str(runs))
    assert dest.result_of("sched-x2") is None
    (runs / "sched-x3").mkdir()                           # no RESULT_FILE: not whole either
    assert dest.result_of("sched-x3") is None
    assert dest.sweep() == [f"{INCOMING}sched-x2-host-1-t3"]
    assert sorted(os.listdir(runs)) == ["sched-x3"]


def test_a_uri_destination_replaces_a_dead_attempts_folder_without_result(tmp_path):
    runs = tmp_path / "runs"
    (runs / "sched-x4" / "events").mkdir(parents=True)    # moved, RESULT_FILE not written
    dest = Destination(f"file://{runs}")
    run = _finished_run(tmp_path / "a", "r", "whole\n")
    got = dest.publish(run, "sched-x4", "h-t1", {"status": "completed", "run_dir": run})
    assert dest.result_of("sched-x4") == got
    assert (runs / "sched-x4" / "events" / "harness.jsonl").read_text() == "whole\n"


def fake_schedule_run(yaml_path: str, results_dir: str) -> dict:
    """A run's stand-in for run_task: a folder with the schedule in it."""
    d = os.path.join(results_dir, "x-20260101-s1")
    os.makedirs(os.path.join(d, "events"))
    with open(yaml_path) as f, open(os.path.join(d, "scenario.yaml"), "w") as g:
        g.write(f.read())
    return {"run_dir": d, "status": "completed", "errors": []}


def explode(yaml_path: str, results_dir: str) -> dict:
    raise AssertionError("a published schedule ran again")


def _payload(dest, function="fake_schedule_run", system="minihdfs"):
    return {"yaml": "name: base-xab\n", "file": "ab.yaml", "name": "base-xab", "dest": dest,
            "system": system, "module": __name__, "function": function}


def test_run_task_publishes_once_and_a_retry_returns_the_published_run(tmp_path, monkeypatch):
    from minihdfs import cluster as local_cluster
    monkeypatch.setattr(local_cluster, "PACKAGE_ROOT", local_cluster.PACKAGE_ROOT)
    monkeypatch.setenv("TOXIPROXY_SERVER", sys.executable)      # any executable file
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    dest = str(tmp_path / "runs")
    got = run_task(_payload(dest), ROOT)
    assert got["run_dir"] == os.path.join(dest, "base-xab") and not got.get("reused")
    assert open(os.path.join(got["run_dir"], "scenario.yaml")).read() == "name: base-xab\n"
    again = run_task(_payload(dest, "explode"), ROOT)           # Spark's retry of the task
    assert again["reused"] and again["run_dir"] == got["run_dir"]
    assert os.listdir(dest) == ["base-xab"]
    assert not [n for n in os.listdir(tmp_path) if n.startswith("hdfs-chaos-")]   # temp gone


def test_run_task_without_toxiproxy_fails_with_one_line(tmp_path, monkeypatch):
    from faults import toxiproxy_server
    monkeypatch.delenv("TOXIPROXY_SERVER", raising=False)
    monkeypatch.setattr(toxiproxy_server, "find_binary", lambda: None)
    from minihdfs import cluster as local_cluster
    monkeypatch.setattr(local_cluster, "PACKAGE_ROOT", local_cluster.PACKAGE_ROOT)
    with pytest.raises(MissingPiece) as e:
        run_task(_payload(str(tmp_path / "runs")), ROOT)
    assert str(e.value).startswith(MISSING) and "toxiproxy-server" in str(e.value)
    assert "\n" not in str(e.value)


def test_run_task_for_hadoop_without_java_names_java(tmp_path, monkeypatch):
    monkeypatch.setenv("TOXIPROXY_SERVER", sys.executable)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    from minihdfs import cluster as local_cluster
    monkeypatch.setattr(local_cluster, "PACKAGE_ROOT", local_cluster.PACKAGE_ROOT)
    with pytest.raises(MissingPiece, match="no java for the hadoop daemons"):
        run_task(_payload(str(tmp_path / "runs"), system="hadoop"), ROOT)


def test_missing_line_is_found_in_a_jobs_long_error():
    text = ("An error occurred while calling o81.collectAndServe.\n: org.apache.spark."
            "SparkException: Job aborted due to stage failure: Task 0 in stage 3.0 failed 4 "
            "times ...\n  File \"/x/worker.py\", line 1\nRuntimeError: "
            f"{MISSING} host7 has no toxiproxy-server: ship it (--spark-toxiproxy PATH).\n"
            "\tat org.apache.spark.api.python...")
    assert missing_line(RuntimeError(text)) == \
        f"{MISSING} host7 has no toxiproxy-server: ship it (--spark-toxiproxy PATH)"
    assert missing_line(RuntimeError("Task failed: OOM")) is None


def test_the_task_entry_ships_by_value_and_needs_no_project_to_start(tmp_path):
    from pyspark import cloudpickle
    path = tmp_path / "entry.pkl"
    path.write_bytes(cloudpickle.dumps(task_entry()))
    code = ("import sys, pickle\n"
            "for m in ('harness', 'minihdfs', 'faults', 'hdfs_contract'): sys.modules[m] = None\n"
            f"f = pickle.loads(open({str(path)!r}, 'rb').read())\n"
            "print(f.__code__.co_name)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=str(tmp_path), timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "entry"


def test_the_task_entry_without_the_unpacked_project_says_so(tmp_path, monkeypatch):
    from pyspark import SparkFiles
    monkeypatch.setattr(SparkFiles, "_is_running_on_worker", True)
    monkeypatch.setattr(SparkFiles, "_root_directory", str(tmp_path))
    entry = task_entry()
    with pytest.raises(RuntimeError) as e:
        list(entry(iter([{}])))
    assert missing_line(e.value) and sparkrun.ARCHIVE_NAME in str(e.value)


class _NoExecutors:
    """A pool whose every run lacks a piece, as sparkrun.SparkPool raises it."""

    def __init__(self, workers, package_root):
        self.workers = workers

    def submit(self, fn, yaml_path, results_dir):
        import concurrent.futures as cf
        f = cf.Future()
        f.set_exception(MissingPiece(f"{MISSING} h1 has no toxiproxy-server"))
        return f

    def shutdown(self, wait=True, cancel_futures=False):
        pass


def test_the_explorer_runs_schedules_on_the_pool_it_is_given_and_stops_on_a_missing_piece(
        tmp_path):
    base = os.path.join(ROOT, "explore-bases", "append.yaml")
    ex = Explorer(base, str(tmp_path / "out"), budget=60, depth=1, workers=3,
                  pool=_NoExecutors, say=lambda m: None, status=lambda m: None)
    with pytest.raises(ExploreError, match="h1 has no toxiproxy-server"):
        ex.run()
    assert isinstance(ex.pool, _NoExecutors) and ex.pool.workers == 3


@pytest.mark.parametrize("argv, message", [
    (["--spark-toxiproxy", "/bin/true"], "go with --spark-master"),
    (["--spark-master", "spark://127.0.0.1:9", "--out", "hdfs://nn:8020/x"], "not a URI"),
    (["--spark-master", "spark://127.0.0.1:9", "--spark-python-env", "/nowhere/env.tar.gz"],
     "--spark-python-env /nowhere/env.tar.gz: no such file"),
    (["--workers", "0"], "--workers 0: use at least 1"),
])
def test_explore_spark_options_bad_input_exit_2_with_one_line(capsys, monkeypatch, tmp_path,
                                                                argv, message):
    from harness import cli
    monkeypatch.chdir(ROOT)
    if "--out" not in argv:
        argv = argv + ["--out", str(tmp_path / "out")]
    assert cli.main(["explore", "explore-bases/append.yaml", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
