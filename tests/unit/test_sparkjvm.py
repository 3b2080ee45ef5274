"""The private Spark APIs the verifier uses exist in the installed PySpark release."""

import importlib
import re
from pathlib import Path

import pyspark
import pytest

from harness.reconcile import sparkjvm
from harness.reconcile.session import get_spark


def _version(text: str) -> tuple[int, int]:
    major, minor = text.split(".")[:2]
    return int(major), int(minor)


def test_installed_pyspark_is_in_the_supported_range():
    low, high = sparkjvm.SUPPORTED_PYSPARK
    assert low <= _version(pyspark.__version__) < high, (
        f"pyspark {pyspark.__version__} is outside {low}..{high} (pyproject.toml)")


def test_pyproject_states_the_supported_range():
    text = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    low, high = sparkjvm.SUPPORTED_PYSPARK
    found = re.findall(r'"pyspark(?:\[[\w,]+\])?>=([\d.]+),<([\d.]+)"', text)
    assert [(_version(a + ".0"), _version(b + ".0")) for a, b in found] == [(low, high)], (
        f"pyproject.toml's pyspark requirement {found} is not sparkjvm's {low}..{high}")


@pytest.mark.parametrize("owner,attribute", sparkjvm.PRIVATE_PYTHON_ATTRIBUTES)
def test_private_python_attributes_exist(owner, attribute):
    module, _, name = owner.rpartition(".")
    try:
        obj = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):   # a nested class: pyspark.sql.SparkSession.Builder
        outer, _, inner = module.rpartition(".")
        obj = getattr(getattr(importlib.import_module(outer), inner), name)
    # instance attributes set in __init__ are found on a live object below
    if not hasattr(obj, attribute):
        spark = get_spark()
        live = {"DataFrame": spark.range(1), "SparkSession": spark,
                "SparkContext": spark.sparkContext, "Builder": spark.builder}[name]
        assert hasattr(live, attribute), f"{owner}.{attribute} is gone"


@pytest.mark.parametrize("cls", sparkjvm.PRIVATE_JVM_CLASSES)
def test_private_jvm_classes_exist(cls):
    spark = get_spark()
    spark._jvm.java.lang.Class.forName(cls)   # Py4JJavaError (ClassNotFound) if renamed


def test_cached_leaf_keeps_the_data_and_drops_the_lineage():
    spark = get_spark()
    df = spark.range(10).selectExpr("id * 2 AS x").filter("x > 4").persist()
    leaf = sparkjvm.cached_leaf(df)
    assert sorted(r.x for r in leaf.collect()) == [6, 8, 10, 12, 14, 16, 18]
    plan = leaf._jdf.queryExecution().logical()
    assert plan.getClass().getSimpleName() == "InMemoryRelation"
    assert plan.children().size() == 0   # a leaf: the lineage is not part of the plan
    sparkjvm.release(df)


def test_the_cds_archive_is_one_per_pyspark_release(monkeypatch, tmp_path):
    monkeypatch.delenv("HDFS_CHAOS_SPARK_CDS", raising=False)
    assert sparkjvm.cds_archive().endswith(f"spark-{pyspark.__version__}.jsa")
    monkeypatch.setattr(pyspark, "__version__", "9.9.0")
    assert sparkjvm.cds_archive().endswith("spark-9.9.0.jsa")
    assert sparkjvm.cds_options() == []   # no archive for that release: nothing mapped
    archive = tmp_path / "spark.jsa"
    archive.write_bytes(b"")
    monkeypatch.setenv("HDFS_CHAOS_SPARK_CDS", str(archive))
    assert sparkjvm.cds_options() == [f"-XX:SharedArchiveFile={archive}"]
    assert sparkjvm.cds_options(dump="/x.jsa") == ["-XX:ArchiveClassesAtExit=/x.jsa"]
