"""The JIT directives of harness/reconcile/jit.py, read back from the JVM's own directive
stack: Spark's planning packages kept from C2 from the start, everything kept from C2
inside `c1_only` (and only there), and a JVM that refuses them costs a warning, never a
verification."""

from __future__ import annotations

import logging

import pytest

from harness.reconcile import jit


def _top(spark):
    return jit.directives(spark)[0]


def _planning():
    return sorted(p + "*.*" for p in jit.PLANNING)


def test_planning_packages_kept_from_c2_from_the_start(spark):
    stack = jit.directives(spark)
    assert (_planning(), True) in [(sorted(m), ex) for m, ex in stack]
    # HotSpot's own default is last, and C2 compiles everything else
    assert stack[-1] == (["*.*"], False)


def test_c1_only_keeps_everything_from_c2_inside_the_block_only(spark):
    before = jit.directives(spark)
    with jit.c1_only(spark):
        inside = jit.directives(spark)
        assert inside[0] == (["*.*"], True)
        with jit.c1_only(spark):             # overlapping blocks add no second directive
            assert jit.directives(spark) == inside
        assert jit.directives(spark) == inside
    assert jit.directives(spark) == before
    assert (sorted(_top(spark)[0]), _top(spark)[1]) == (_planning(), True)


def test_c1_only_lifts_its_directive_when_the_block_fails(spark):
    before = jit.directives(spark)
    with pytest.raises(ZeroDivisionError):
        with jit.c1_only(spark):
            1 / 0
    assert jit.directives(spark) == before


def test_switched_off_adds_nothing(spark, monkeypatch):
    monkeypatch.setenv("HDFS_CHAOS_JIT_DIRECTIVES", "0")
    before = jit.directives(spark)
    with jit.c1_only(spark):
        assert jit.directives(spark) == before
    assert not jit.enabled()


def test_a_jvm_that_refuses_costs_one_warning(spark, monkeypatch, caplog):
    """Not HotSpot (no DiagnosticCommand bean): the block runs, one warning says why."""
    def refuse(*_):
        raise RuntimeError("javax.management.InstanceNotFoundException: DiagnosticCommand")
    monkeypatch.setattr(jit, "_dcmd", refuse)
    monkeypatch.setattr(jit, "_warned", False)
    ran = []
    with caplog.at_level(logging.WARNING, logger=jit.__name__):
        with jit.c1_only(spark):
            ran.append(1)
        with jit.c1_only(spark):
            ran.append(2)
    assert ran == [1, 2]
    warnings = [r.getMessage() for r in caplog.records if r.name == jit.__name__]
    assert len(warnings) == 1 and "InstanceNotFoundException" in warnings[0]
    assert jit._c1_only_depth == 0
