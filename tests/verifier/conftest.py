"""Fixtures of the verifier tests: one SparkSession for the whole session, and every
hand-written run of cases.py built, loaded and checked once."""

from __future__ import annotations

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))


@pytest.fixture(scope="session")
def spark():
    """The process-wide session (harness.reconcile.session.get_spark)."""
    pytest.importorskip("pyspark")
    from harness.reconcile.session import get_spark
    return get_spark(input_bytes=0)     # small inputs: the JVM options of a one-run verify


@pytest.fixture(scope="session")
def case_dirs(tmp_path_factory):
    """{run_id: run folder} for every case of cases.py."""
    from cases import CASES
    root = tmp_path_factory.mktemp("verifier-cases")
    return {rid: build().write(str(root)) for rid, build in CASES.items()}


@pytest.fixture(scope="session")
def case_runs(spark, case_dirs):
    """Every case loaded together into one RunSet (released at the end of the session)."""
    from harness.reconcile.load import load_runs
    runs = load_runs(list(case_dirs.values()), spark)
    yield runs
    runs.close()


@pytest.fixture(scope="session")
def case_verdicts(case_runs):
    """{run_id: verdict} for every case, from one pass of every check over all of them, in
    its verdict.json form."""
    from harness.reconcile.api import verify_loaded
    return {v.run_id: v.to_json() for v in verify_loaded(case_runs)}
