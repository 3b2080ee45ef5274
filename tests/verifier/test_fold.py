"""The loader's fold (jvm.DenseFold): it keeps only the lines that are not dense and the
summaries of the dense ones that the checks read. Loaded folded or with every line
kept, the same runs must give the same events (eids too), malformed lines, per-process
stats, per-block ack sums and per-file range lists: on the hand-written cases, on odd
lines, and on random logs whose files are split over many partitions, so that a key's
partial sums meet from several tasks."""

from __future__ import annotations

import json
import os
import random

import pytest

from builders import write_logs
from test_load import odd_run, scanner  # noqa: F401  (fixtures)

pytestmark = pytest.mark.spark

T0 = 1790000000.0


def _rows(df):
    return sorted(json.dumps(r.asDict(recursive=True), sort_keys=True, default=str)
                  for r in df.collect())


def _tables(runs):
    """Every table the fold changes the making of, as sorted JSON rows."""
    from harness.reconcile.checks.data import bulk_write_ranges
    from harness.reconcile.checks.pipeline import bulk_ack_blocks
    from pyspark.sql import functions as F
    ranges = bulk_write_ranges(runs).select(
        "run_id", "path", F.array_sort("ranges").alias("ranges"))
    return {"events": _rows(runs.events), "malformed": _rows(runs.malformed),
            "bulk_stats": _rows(runs.bulk_stats), "event_stats": _rows(runs.event_stats),
            "acks": _rows(bulk_ack_blocks(runs)), "ranges": _rows(ranges)}


def _compare(spark, dirs):
    from harness.reconcile.load import load_runs
    folded, kept = load_runs(dirs, spark, fold=True), load_runs(dirs, spark, fold=False)
    try:
        assert folded.folded is not None and kept.folded is None
        got, want = _tables(folded), _tables(kept)
        for name in want:
            assert got[name] == want[name], name
        return folded.folded.rdd.getNumPartitions(), want
    finally:
        folded.close()
        kept.close()


def test_the_fold_gives_the_cases_tables(scanner, case_dirs):
    _, want = _compare(scanner, list(case_dirs.values()))
    assert len(want["acks"]) >= 10 and len(want["ranges"]) >= 10


def test_the_fold_gives_the_odd_lines_tables(scanner, odd_run):
    _, want = _compare(scanner, [odd_run])
    assert want["malformed"] and want["acks"]


def _random_run(root: str, rng: random.Random, i: int) -> str:
    """Dense writes and acks of two clients with keys left out at random (a null key
    is a key; a null value is skipped), equal timestamps, and lines that are not dense."""
    d = os.path.join(root, f"fold-{i:03d}")
    os.makedirs(os.path.join(d, "events"))
    for node in ("c1", "c2"):
        recs = []
        t = 0.0
        for _ in range(rng.randint(200, 600)):
            t += rng.choice([0.0, 0.0005, 0.01])
            path = f"/r/f{rng.randint(0, 2)}"
            if rng.random() < 0.5:
                rec = {"ts": T0 + t, "event": "client.write", "path": path,
                       "offset": rng.randint(0, 1 << 20), "len": rng.randint(0, 65536),
                       "crc": rng.randint(0, (1 << 32) - 1)}
            else:
                rec = {"ts": T0 + t, "event": "client.ack", "path": path,
                       "block": 1000 * i + rng.randint(0, 3), "seqno": rng.randint(0, 99),
                       "acked": rng.randint(0, 1 << 20)}
            for key in ("path", "offset", "len", "crc", "block", "acked"):
                if key in rec and rng.random() < 0.03:
                    del rec[key]
            if rng.random() < 0.03:
                rec["note"] = "an unknown field: not a dense line"
            recs.append(rec)
        recs.insert(rng.randint(0, len(recs)), {"ts": T0, "event": "client.stream.open",
                                               "path": "/r/f0", "holder": f"DFSClient_{node}"})
        common = {"node": node} if rng.random() < 0.2 else {"node": node, "role": "client"}
        write_logs(d, {node: recs}, **common)
    return d


def test_the_fold_gives_the_same_tables_when_files_span_partitions(scanner, tmp_path):
    """Files split in 16 KiB partitions: most keys get partial sums from two tasks, and
    the lines read again one by one must get the eids the fold gave them."""
    from harness.reconcile.session import session_conf
    rng = random.Random(20261123)
    dirs = [_random_run(str(tmp_path), rng, i) for i in range(6)]
    n_files = 2 * len(dirs)
    with session_conf(scanner, {"spark.sql.files.maxPartitionBytes": str(16 * 1024),
                                "spark.sql.files.openCostInBytes": "0"}):
        partitions, want = _compare(scanner, dirs)
    assert partitions > 2 * n_files
    assert len(want["ranges"]) >= 6 * 3
    assert any('"path": null' in r for r in want["acks"])
    assert any('"role": null' in r for r in want["bulk_stats"])
    assert len(want["events"]) > 2000


def test_fold_and_keep_raw_do_not_go_together(scanner, case_dirs):
    from harness.reconcile.load import load_runs
    with pytest.raises(ValueError, match="keep_raw"):
        load_runs(list(case_dirs.values()), scanner, keep_raw=True, fold=True)
