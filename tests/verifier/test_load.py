"""The loader: how it reads run folders into Spark."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark


def test_runs_without_final_state_leave_the_schema_alone(spark):
    from harness.reconcile.load import _read_final
    from harness.reconcile.schema import FINAL_STATE_SCHEMA
    assert "run_id" in _read_final(spark, []).columns
    assert "run_id" not in FINAL_STATE_SCHEMA.fieldNames()
