"""D2's per-file layout has two forms: jvm.FileLayout over each file's list of ranges, and
window functions over all the writes. Both must give the same table: on every
hand-written case, and on random histories of appends, rewrites, truncates, re-creates,
ties in time and missing fields."""

from __future__ import annotations

import json
import os
import random

import pytest

from builders import random_runs, write_logs

pytestmark = pytest.mark.spark

T0 = 1790000000.0


@pytest.fixture(scope="module")
def layout_udf(spark):
    from harness.reconcile import jvm
    if not jvm.available(spark, jvm.LAYOUT_UDF):
        pytest.skip("the verifier's JVM helpers are not loaded (no javac, or "
                    "HDFS_CHAOS_FAST_PARSE=0)")
    return spark


def _rows(df):
    """The rows of `df` as dicts, in a fixed order."""
    return [json.loads(t) for t in
            sorted(json.dumps(r.asDict(), sort_keys=True) for r in df.collect())]


def _both(runs):
    from harness.reconcile.checks.data import content_layout
    return _rows(content_layout(runs, fast=True)), _rows(content_layout(runs, fast=False))


def test_both_forms_agree_on_every_case(layout_udf, case_runs):
    got, slow = _both(case_runs)
    assert got == slow
    assert len(got) >= 5
    # the cases include a short coverage, a range cut mid-way and whole files
    assert any(g["covered"] is not None and g["covered"] < g["read_len"] for g in got)
    assert any(g["partial"] == 1 for g in got)
    assert any(g["verifiable"] and g["expected_crc"] == g["read_crc"] for g in got)


def _random_run(root: str, rng: random.Random, i: int) -> str:
    d = os.path.join(root, f"layout-{i:03d}")
    os.makedirs(os.path.join(d, "events"))
    client, nn, files, readback = [], [], [], {}
    for f in range(rng.randint(1, 3)):
        path = f"/r/f{f}"
        t, end = 0.0, 0
        nn.append({"ts": T0, "node": "nn", "event": "nn.file.create", "path": path})
        for _ in range(rng.randint(0, 25)):
            t += rng.choice([0.0, 0.001, 0.5])          # ties in time happen
            kind = rng.random()
            if kind < 0.08:
                nn.append({"ts": T0 + t, "node": "nn", "event": "nn.file.truncate",
                           "path": path, "len": rng.randint(0, end), "ok": rng.random() < .8})
                continue
            if kind < 0.11:
                nn.append({"ts": T0 + t, "node": "nn", "event": "nn.file.create", "path": path})
                end = 0
                continue
            offset = end if kind < 0.75 else rng.randint(0, end)
            length = rng.choice([0, 1, 512, 1000, rng.randint(1, 4096)])
            rec = {"ts": T0 + t, "node": "c1", "event": "client.write", "path": path,
                   "offset": offset, "len": length, "crc": rng.randint(0, 2**32 - 1)}
            if rng.random() < 0.04:
                del rec[rng.choice(["offset", "len", "crc"])]
            client.append(rec)
            end = max(end, offset + length)
        read_len = rng.choice([end, end, max(0, end - rng.randint(0, 700)),
                               end + rng.randint(1, 50)])
        readback[path] = {"len": read_len, "crc": rng.randint(0, 2**32 - 1)}
        files.append({"path": path, "closed": True, "len": read_len, "replication": 3,
                      "blocks": []})
    write_logs(d, {"c1": client, "nn": nn})
    with open(os.path.join(d, "final_state.json"), "w") as out:
        json.dump({"files": files, "leases": [], "datanodes": {}, "readback": readback}, out)
    return d


def test_both_forms_agree_on_random_histories(layout_udf, tmp_path):
    with random_runs(layout_udf, str(tmp_path), 20261122, 120, _random_run) as runs:
        got, slow = _both(runs)
        assert got == slow
        assert len(got) > 150
        # the histories reach every outcome: gaps, cuts, short coverage, whole files
        assert sum(g["gap_at"] is not None for g in got) > 5
        assert sum(g["partial"] == 1 for g in got) > 5
        assert sum(g["covered"] is not None and g["covered"] < g["read_len"] for g in got) > 5
        assert sum(bool(g["verifiable"]) for g in got) > 5
        # ... and CRCs combined over more than 1 KiB of ranges of mixed lengths (in the
        # JVM for one form, with numpy for the other)
        assert sum(g["expected_crc"] is not None and g["read_len"] > 1024 for g in got) > 5
