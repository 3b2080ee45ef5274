"""The acks' and the writes' progress per stream and block (checks.pipeline.ack_progress,
write_progress) are built in two steps: the dense lines summed up per client, path and
block before the streams are known, then placed in streams. Each must give the table
that placing every line by itself gives: on every hand-written case, and on random
histories where a block's lines span two streams (an append that goes on with the last
block), lines come before any open, at an open's very time, without a block, or as
lines that are not dense."""

from __future__ import annotations

import json
import os
import random

import pytest

from builders import random_runs, write_logs

pytestmark = pytest.mark.spark

T0 = 1790000000.0


def _rows(df):
    return sorted(json.dumps(r.asDict(), sort_keys=True) for r in df.collect())


def _both(runs, progress=None):
    from harness.reconcile.checks.pipeline import ack_progress
    progress = progress or ack_progress
    return _rows(progress(runs)), _rows(progress(runs, split=False))


def test_both_forms_agree_on_every_case(case_runs):
    from harness.reconcile.checks.pipeline import write_progress
    got, direct = _both(case_runs)
    assert got == direct
    assert len(got) >= 10
    got, direct = _both(case_runs, write_progress)
    assert got == direct
    assert len(got) >= 10


def _random_run(root: str, rng: random.Random, i: int) -> str:
    d = os.path.join(root, f"acks-{i:03d}")
    os.makedirs(os.path.join(d, "events"))
    logs: dict[str, list[dict]] = {}
    for c in ("c1", "c2"):
        recs = logs.setdefault(c, [])
        t = 0.0
        for f in range(rng.randint(1, 3)):
            path = f"/a/f{f}"
            block = 1000 * i + 10 * f
            if rng.random() < 0.15:     # acks before the client opens the path
                t += 0.01
                recs.append({"ts": T0 + t, "event": "client.ack", "path": path,
                             "block": block, "seqno": 0, "acked": rng.randint(0, 99)})
            for _ in range(rng.randint(1, 3)):          # create, then appends
                t += rng.choice([0.0, 0.01])
                recs.append({"ts": T0 + t, "event": "client.stream.open", "path": path,
                             "holder": f"DFSClient_{c}", "mode": "append" if recs else "create"})
                acked = 0
                for _ in range(rng.randint(0, 8)):
                    t += rng.choice([0.0, 0.001, 0.2])  # acks at an open's very time too
                    if rng.random() < 0.2:
                        block += 1                      # else the last block goes on
                        acked = 0
                    acked += rng.randint(0, 4096)
                    rec = {"ts": T0 + t, "event": "client.ack", "path": path,
                           "block": block, "seqno": rng.randint(0, 99), "acked": acked}
                    # the write the ack is for, half the time
                    write = ({"ts": T0 + t, "event": "client.write", "path": path,
                              "block": block, "offset": acked, "len": 1}
                             if rng.random() < 0.5 else {})
                    r = rng.random()
                    if r < 0.05:
                        del rec["block"]
                        write.pop("block", None)
                    elif r < 0.12:
                        rec["note"] = "an unknown field: not a dense line"
                        if write:
                            write["note"] = rec["note"]
                    recs += [write, rec] if write else [rec]
    for node, recs in logs.items():
        write_logs(d, {node: recs}, node=node, role="client")
    return d


def test_both_forms_agree_on_random_histories(spark, tmp_path):
    from harness.reconcile.checks.pipeline import bulk_blocks, write_progress
    with random_runs(spark, str(tmp_path), 20261123, 60, _random_run) as runs:
        got, direct = _both(runs)
        assert got == direct
        assert len(got) > 300
        got, direct = _both(runs, write_progress)
        assert got == direct
        assert len(got) > 200
        # the histories reach the cases where a block's dense acks are placed one by one
        from pyspark.sql import functions as F
        from harness.reconcile.checks.common import client_streams
        s = client_streams(runs)
        pre = bulk_blocks(runs, "client.ack", ("acked",))
        spans = pre.join(s, ["run_id", "node", "path"]).filter(
            (F.col("first_ts") < F.col("s_open"))
            & (F.col("last_ts") >= F.col("s_open"))).select("run_id", "node", "path", "block")
        assert spans.distinct().count() > 20
        assert runs.rare.filter("event = 'client.ack'").count() > 20
        pre = bulk_blocks(runs, "client.write")
        spans = pre.join(s, ["run_id", "node", "path"]).filter(
            (F.col("first_ts") < F.col("s_open"))
            & (F.col("last_ts") >= F.col("s_open"))).select("run_id", "node", "path", "block")
        assert spans.distinct().count() > 10
        assert runs.rare.filter("event = 'client.write'").count() > 10
