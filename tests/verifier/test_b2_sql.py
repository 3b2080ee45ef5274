"""The SQL of check B2 (checks.block.sync_rule_stages) against the pure rule
(checks.block.b2_length) on random recoveries: answers of random states, lengths, GSs and
DataNodes, with and without a truncate and a block GS, in both readings (zero-length
answers left out or kept). Any difference in rule, length or participants fails."""

from __future__ import annotations

import random

STATES = ("FINALIZED", "RBW", "RWR", "RUR", None)


def _random_sync(rnd: random.Random) -> tuple:
    answers = None if rnd.random() < 0.03 else [
        None if rnd.random() < 0.03 else {
            "dn": rnd.choice(["dn1", "dn2", "dn3", "dn4", None]),
            "state": rnd.choice(STATES),
            "len": rnd.choice([None, 0, 0, 1, 2, 3, 5, 8]),
            "gs": rnd.choice([None, 3, 4, 5]),
        }
        for _ in range(rnd.randint(0, 5))]
    new_len = rnd.choice([None] * 5 + [0, 2, 4])
    start_gs = rnd.choice([None, None, 4, 5])
    return answers, new_len, start_gs


def test_sync_rule_sql_matches_the_pure_rule(spark):
    from harness.reconcile.checks.block import b2_length, sync_rule_stages
    from harness.reconcile.schema import ANSWER
    from pyspark.sql import types as T
    rnd = random.Random(20261126)
    cases = [_random_sync(rnd) for _ in range(400)]
    schema = T.StructType([T.StructField("i", T.LongType()),
                           T.StructField("answers", T.ArrayType(ANSWER)),
                           T.StructField("new_len", T.LongType()),
                           T.StructField("start_gs", T.LongType())])
    df = spark.createDataFrame([(i, *c) for i, c in enumerate(cases)], schema)
    for exp_stage, alt_stage in zip(sync_rule_stages("exp", False),
                                    sync_rule_stages("alt", True)):
        df = df.selectExpr("*", *exp_stage, *alt_stage)
    rows = df.select("i", "exp_rule", "exp_len", "exp_participants",
                     "alt_rule", "alt_len", "alt_participants").collect()
    assert len(rows) == len(cases)
    wrong, rules = [], set()
    for r in rows:
        answers, new_len, start_gs = cases[r["i"]]
        for p, keep_empty in (("exp", False), ("alt", True)):
            want = b2_length(answers, new_len, start_gs, keep_empty)
            got = (r[f"{p}_rule"], r[f"{p}_len"], r[f"{p}_participants"])
            rules.add(want[0])
            if got != want:
                wrong.append((answers, new_len, start_gs, keep_empty, got, want))
    assert not wrong, f"{len(wrong)} differ, e.g. {wrong[:3]}"
    # the draws reach every rule of the table
    assert rules == {"truncate", "remove", "finalized", "min_rbw", "min_rwr"}, rules
