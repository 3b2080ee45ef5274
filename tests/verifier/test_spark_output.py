"""Spark's own output: the JVM's start-up warnings go to the run's logs/spark.log, never
to the terminal of `hdfs-chaos verify`; a JVM that cannot start is still one line.

These run the real console command in a subprocess (its terminal is what a user sees),
on a hand-written run folder (builders.happy)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from builders import happy
from harness.reconcile.session import spark_log_path

pytestmark = pytest.mark.spark

# what spark-submit, log4j and Spark print when a JVM starts (the hostname and native
# library warnings depend on the machine, the incubator one on the JDK)
NOISE = ("Using incubator modules", "WARN Utils", "Your hostname", "NativeCodeLoader",
         "log4j", "Setting default log level", "setLogLevel", "Setting Spark log level")


def _cli(*args, env=None, timeout=600):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    full = {**os.environ, "PYTHONPATH": root, **(env or {})}
    full.pop("PYSPARK_GATEWAY_PORT", None)   # a gateway of this test process: not theirs
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], env=full,
                          capture_output=True, text=True, timeout=timeout)


def test_verify_keeps_spark_start_up_noise_off_the_terminal(tmp_path):
    run_dir = happy("quiet-run").write(str(tmp_path))
    done = _cli("verify", run_dir)
    terminal = done.stdout + done.stderr
    assert done.returncode == 0, terminal
    assert json.load(open(os.path.join(run_dir, "verdict.json")))["passed"] is True
    seen = [n for n in NOISE if n in terminal]
    assert not seen, f"Spark's noise reached the terminal: {seen}\n{terminal}"
    log = os.path.join(run_dir, "logs", "spark.log")
    text = open(log, encoding="utf-8", errors="replace").read()
    assert "log4j" in text and "Setting default log level" in text, text
    assert " WARN " in text, text      # hostname / native-hadoop warnings, as on a terminal


def test_no_java_is_one_line_naming_the_log(tmp_path):
    run_dir = happy("no-java").write(str(tmp_path))
    done = _cli("verify", run_dir, env={"JAVA_HOME": str(tmp_path / "no-such-jdk")},
                timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("hdfs-chaos: error: cannot start Spark"), lines[0]
    assert "no-such-jdk/bin/java" in lines[0] and "Java 17+" in lines[0], lines[0]
    assert os.path.join(run_dir, "logs", "spark.log") in lines[0], lines[0]


def test_spark_log_path_of_one_run_and_of_several(tmp_path):
    a, b = str(tmp_path / "results" / "a"), str(tmp_path / "results" / "b")
    assert spark_log_path([a]) == os.path.join(a, "logs", "spark.log")
    assert spark_log_path([a + "/"]) == os.path.join(a, "logs", "spark.log")
    assert spark_log_path([a, b]) == str(tmp_path / "results" / "spark.log")
