"""The loader (harness/reconcile/load.py): one pass of Spark's JSON reader over every
line, the dense writes and acks folded in one grouped aggregation, every other line
parsed in full. Nothing is lost or changed by the folding: the folded tables equal the
same sums over the lines one by one, the dense lines are exactly those the narrow
columns hold whole, event ids are recomputable from the files, and log_stats sees every
gap, repeat and torn line of a log."""

from __future__ import annotations

import json
import os
import random

import pytest

pytestmark = pytest.mark.spark

W = '"ts":1790000000.5,"node":"c1","role":"client","seq":%d,"event":"client.write"'
A = '"ts":1790000000.25,"node":"c1","role":"client","seq":%d,"event":"client.ack"'

# (line, dense: folded without its text)
LINES = [
    ('{' + W % 1 + ',"path":"/f","offset":0,"len":65536,"crc":3626764237}', True),
    ('{' + A % 2 + ',"path":"/f","block":1073741825,"seqno":0,"acked":65536}', True),
    # whitespace, another key order, a negative offset
    ('{ "event" : "client.write" , "ts" : 1.79e9 , "node" : "c1" , "seq" : 3, '
     '"path" : "/a", "offset" : -1 }', True),
    ('{' + W % 4 + ',"path":"/f","len":0,"stream":2,"stream_crc":7}   ', True),
    # ... and every line the fold must leave to the full parse
    ('{' + W % 5 + ',"path":"/a:b","len":1}', False),                   # a colon in a string
    ('{' + W % 6 + ',"path":"/f","len":1,"len":2}', False),             # a repeated key
    ('{' + W % 7 + ',"path":"/f","len":1,"zone":"a"}', False),           # an unknown key
    ('{' + W % 8 + ',"path":"/f","len":1.5}', False),                   # a fraction, long
    ('{' + W % 9 + ',"path":"/f","len":null}', False),                  # a null
    ('{' + W % 10 + ',"path":"/f","len":"7"}', False),                  # a string, long
    ('{' + W % 11 + ',"path":"/f","len":1} x', False),                  # after the object
    ('{' + W % 12 + ',"path":"/f","len":1', False),                     # no closing brace
    ('{' + W % 13 + ',"path":"/f","len":[1]}', False),                  # an array
    ('{"ts":1790000000,"node":"c2","event":"client.ack"}', False),      # no seq
    ('{"ts":1.0,"node":"c2","seq":-1,"event":"client.ack"}', False),   # a negative seq
    ('{"node":"c1","seq":19,"event":"client.write","len":1}', False),   # no ts
    ('{"ts":1.0,"seq":20,"event":"client.write","len":1}', False),      # no node
    ('{"ts":1.0,"node":"c1","seq":21,"event":"client.hflush","offset":1}', False),
    ('{"ts":1.0,"node":"c1","seq":22,"len":1}', False),                  # no event
    ('{"ts":NaN,"node":"c1","seq":25,"event":"client.write"}', False),
    ('{"ts":1e999,"node":"c1","seq":26,"event":"client.write"}', False),  # infinite
    ('["ts",1]', False),
    ('this is not json', False),
    ('this is not json', False),                                         # twice: both kept
    ('{}', False),
    ('', False),
]


@pytest.fixture(scope="module")
def odd_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("odd") / "odd-lines"
    (d / "events").mkdir(parents=True)
    with open(d / "events" / "c1.jsonl", "w", encoding="utf-8") as f:
        f.write("\n".join(line for line, _ in LINES) + "\n")
    return str(d)


def _rows(df):
    cols = sorted(df.columns)
    return sorted((tuple(json.dumps(r[c], sort_keys=True, default=str) for c in cols)
                   for r in df.select(*cols).collect()))


def test_dense_lines_are_exactly_the_plain_ones_and_nothing_is_lost(spark, odd_run):
    from harness.reconcile.load import load_runs
    runs = load_runs([odd_run], spark)
    try:
        assert runs.folded.agg({"n": "sum"}).first()[0] == sum(1 for _, d in LINES if d)
        assert sorted(r["seq"] for r in runs.bulk.collect()) == [1, 2, 3, 4]
        # every other line is in the rare table, as often as the log holds it
        assert runs.rare_lines.count() == sum(1 for _, d in LINES if not d)
        assert (sorted(r["raw"] for r in runs.rare_lines.collect())
                == sorted(line for line, d in LINES if not d))
        stats = runs.log_stats.first()
        assert stats["lines"] == len(LINES)
        assert stats["malformed"] == runs.malformed.count() > 0
        bad = {r["raw"] for r in runs.malformed.collect()}
        assert {LINES[i][0] for i in (11, 15, 16, 18, 19, 20, 21, 22, 23, 24)} <= bad
        b = runs.bulk.filter("seq = 3").first()
        assert (b["ts"], b["node"], b["offset"], b["len"], b["raw"]) == (1.79e9, "c1", -1, None,
                                                                        None)
        w = runs.bulk.filter("seq = 4").first()
        assert (w["stream"], w["stream_crc"], w["len"]) == (2, 7, 0)
    finally:
        runs.close()


def test_unknown_fields_of_a_bulk_line_are_kept(spark, odd_run):
    from harness.reconcile.load import extra_fields, load_runs
    runs = load_runs([odd_run], spark)
    try:
        got = extra_fields(runs.of("client.write").filter("seq = 7")).first()
        assert got["extra"] == {"zone": "a"}
    finally:
        runs.close()


def _random_run(root: str, rng: random.Random, i: int) -> str:
    """A run of two clients writing and acking several streams, some lines not dense."""
    from builders import write_logs
    d = os.path.join(root, f"rand-{i}")
    os.makedirs(os.path.join(d, "events"))
    logs = {}
    for c in ("c1", "c2"):
        recs, t, stream = [], 0.0, 0
        for f in range(rng.randint(1, 3)):
            path, block, off = f"/r/f{f}", 100 * f, 0
            for _ in range(rng.randint(1, 3)):
                recs.append({"ts": t, "event": "client.stream.open", "path": path,
                             "stream": stream, "offset": off})
                acked = 0
                for _ in range(rng.randint(0, 12)):
                    t += rng.choice([0.0, 0.001])
                    n = rng.randint(0, 9000)
                    w = {"ts": t, "event": "client.write", "path": path, "offset": off,
                         "len": n, "crc": rng.randrange(1 << 32), "stream": stream,
                         "stream_crc": rng.randrange(1 << 32)}
                    if rng.random() < 0.1:
                        w["note"] = "not dense"
                    recs.append(w)
                    off += n
                    if rng.random() < 0.2:
                        block, acked = block + 1, 0
                    acked += n
                    recs.append({"ts": t + 0.0001, "event": "client.ack", "path": path,
                                 "block": block, "seqno": rng.randint(0, 99), "acked": acked})
                stream += 1
        logs[c] = recs
    for node, recs in logs.items():
        write_logs(d, {node: recs}, node=node, role="client")
    return d


def test_the_folded_tables_are_the_sums_of_the_lines(spark, tmp_path):
    """bulk_stats, the ack sums and the streams' summaries, from the fold, equal the
    same aggregations over the dense lines one by one (read again by `bulk`)."""
    from pyspark.sql import functions as F
    from builders import random_runs
    from harness.reconcile.checks.pipeline import bulk_blocks
    from harness.reconcile.load import _event_stats
    with random_runs(spark, str(tmp_path), 7, 6, _random_run) as runs:
        assert runs.bulk.count() > 100
        assert _rows(runs.bulk_stats) == _rows(_event_stats(runs.bulk))
        acks = (runs.bulk.filter("event = 'client.ack'").groupBy("run_id", "node", "path", "block")
                .agg(F.min("ts").alias("first_ts"), F.max("ts").alias("last_ts"),
                     F.max("acked").alias("max_acked")))
        assert _rows(bulk_blocks(runs, "client.ack", ("acked",))) == _rows(acks)
        writes = runs.bulk.filter("event = 'client.write'")
        last = (writes.groupBy("run_id", "node", "stream")
                .agg(F.max_by(F.struct("offset", "len", "crc", "stream_crc"), "offset").alias("w"),
                     F.min("offset").alias("first_off"), F.sum("len").alias("len_sum")))
        folded = (runs.folded.filter("event = 'client.write'").groupBy("run_id", "node", "stream")
                  .agg(F.max("last_off").alias("o"), F.max_by("last_len", "last_off").alias("l"),
                       F.max_by("last_crc", "last_off").alias("c"),
                       F.max_by("last_stream_crc", "last_off").alias("s"),
                       F.min("first_off").alias("first_off"), F.sum("len_sum").alias("len_sum")))
        want = last.select("run_id", "node", "stream", "w.offset", "w.len", "w.crc",
                           "w.stream_crc", "first_off", "len_sum")
        got = folded.select("run_id", "node", "stream", F.col("o").alias("offset"),
                            F.col("l").alias("len"), F.col("c").alias("crc"),
                            F.col("s").alias("stream_crc"), "first_off", "len_sum")
        assert _rows(got) == _rows(want)


def test_event_ids_are_recomputable_from_the_files(spark, case_dirs):
    """eid = (place of the log among the RunSet's logs sorted by run and file name)
    << 32 | seq, for every event, computed here from the folders alone."""
    from harness.reconcile.load import load_runs
    dirs = sorted(case_dirs.values())[:5]
    logs = sorted((os.path.basename(d), f[:-len(".jsonl")]) for d in dirs
                  for f in os.listdir(os.path.join(d, "events")))
    number = {key: i for i, key in enumerate(logs)}
    want = set()
    for d in dirs:
        for f in os.listdir(os.path.join(d, "events")):
            key = (os.path.basename(d), f[:-len(".jsonl")])
            with open(os.path.join(d, "events", f)) as fh:
                for line in fh:
                    seq = json.loads(line)["seq"]
                    want.add((*key, number[key] << 32 | seq))
    runs = load_runs(dirs, spark)
    try:
        got = {(r["run_id"], r["log"], r["eid"]) for r in runs.events.collect()}
        assert got == want
    finally:
        runs.close()


def test_log_stats_see_gaps_repeats_and_torn_lines(spark, tmp_path):
    from harness.reconcile.load import load_runs
    d = tmp_path / "seqs"
    (d / "events").mkdir(parents=True)
    logs = {
        "ok": list(range(0, 50)),
        "late": list(range(3, 9)),                    # does not start at 0: seq_ok, min 3
        "gap": [0, 1, 2, 4, 5],
        "twice": [0, 1, 1, 2],
        "even": [0, 1, 1, 4, 4],                      # count, least, greatest, sum as 0..4
        # seqs 1, 5, 6 lost and 2, 3, 7 twice: count, ends, sum and sum of squares as 0..9
        "squares": [0, 2, 2, 3, 3, 4, 7, 7, 8, 9],
        "negative": [-64, 0, 1, 2],                   # -64 is 0's bit in the word below
        "shuffled": [2, 0, 1],
    }
    for name, seqs in logs.items():
        with open(d / "events" / f"{name}.jsonl", "w") as f:
            for s in seqs:
                event = "client.write" if s % 2 else "nn.lease.renew"
                f.write(json.dumps({"ts": 1.0 + s, "node": f"n-{name}", "seq": s,
                                    "event": event, "path": "/f", "offset": 0, "len": 1,
                                    "crc": 0}) + "\n")
    with open(d / "events" / "torn.jsonl", "w") as f:     # killed mid-line
        f.write(json.dumps({"ts": 1.0, "node": "n-torn", "seq": 0, "event": "x"}) + "\n"
                + '{"ts": 2.0, "node": "n-t')
    with open(d / "events" / "noseq.jsonl", "w") as f:    # a sound line without seq
        f.write(json.dumps({"ts": 1.0, "node": "n-noseq", "seq": 0, "event": "x"}) + "\n"
                + json.dumps({"ts": 2.0, "node": "n-noseq", "event": "x"}) + "\n")
    open(d / "events" / "empty.jsonl", "w").close()
    runs = load_runs([str(d)], spark)
    try:
        got = {r["log"]: r.asDict() for r in runs.log_stats.collect()}
    finally:
        runs.close()
    assert set(got) == set(logs) | {"torn", "noseq", "empty"}
    assert {k: v["seq_ok"] for k, v in got.items()} == {
        "ok": True, "late": True, "gap": False, "twice": False, "even": False,
        "shuffled": True, "torn": True, "noseq": False, "empty": True, "squares": False,
        "negative": False}
    assert (got["squares"]["seq_missing"], got["squares"]["seq_repeated"]) == (
        "1, 5..6 (3 in all)", "2 (x2), 3 (x2), 7 (x2) (3 extra line(s))")
    assert (got["negative"]["seq_missing"], got["negative"]["seq_repeated"]) == (
        "-63..-1 (63 in all)", None)
    assert (got["noseq"]["no_seq"], got["noseq"]["seq_missing"]) == (1, None)
    assert got["ok"]["seq_missing"] is None and got["ok"]["seq_repeated"] is None
    assert (got["late"]["min_seq"], got["late"]["max_seq"], got["late"]["lines"]) == (3, 8, 6)
    assert (got["torn"]["lines"], got["torn"]["malformed"], got["torn"]["node"]) == (2, 1, "n-torn")
    assert (got["empty"]["lines"], got["empty"]["node"], got["empty"]["min_seq"]) == (0, None, None)
    assert got["ok"]["node"] == "n-ok" and got["ok"]["malformed"] == 0


def test_runs_without_final_state_leave_the_schema_alone(spark):
    from harness.reconcile.load import _read_final
    from harness.reconcile.schema import FINAL_STATE_SCHEMA
    assert "run_id" in _read_final(spark, []).columns
    assert "run_id" not in FINAL_STATE_SCHEMA.fieldNames()


ODD_NAMES = ["run a+b", "run%41 x", "rün ü", "run,=;#"]


@pytest.mark.parametrize("per_file", [True, False])
def test_odd_folder_and_file_names(spark, case_dirs, tmp_path, monkeypatch, per_file):
    """The run id is the folder's name and the log the file's, however odd (a '+' is
    not a space, '%41' is not 'A'): through the names joined per file, and through the
    per-row form that a file the join does not know falls back on."""
    import shutil
    from pyspark.sql import functions as F
    from harness.reconcile import load
    src = next(d for d in case_dirs.values() if os.path.exists(os.path.join(d, "final_state.json")))
    logs = sorted(f[:-len(".jsonl")] for f in os.listdir(os.path.join(src, "events")))
    dirs = []
    for name in ODD_NAMES:
        shutil.copytree(src, tmp_path / name)
        dirs.append(str(tmp_path / name))
    os.rename(tmp_path / ODD_NAMES[0] / "events" / f"{logs[0]}.jsonl",
              tmp_path / ODD_NAMES[0] / "events" / "c+1 %41.jsonl")
    if per_file:      # the per-row form must not be needed
        monkeypatch.setattr(load, "_path_part", lambda col, index: F.lit("not joined"))
    else:
        monkeypatch.setattr(load, "_uri_forms", lambda uri: set())     # knows no file
    runs = load.load_runs(dirs, spark)
    try:
        got = {(r["run_id"], r["log"]) for r in runs.fold.select("run_id", "log").distinct().collect()}
        want = {(n, log) for n in ODD_NAMES for log in logs}
        want = (want - {(ODD_NAMES[0], logs[0])}) | {(ODD_NAMES[0], "c+1 %41")}
        assert got == want
        assert sorted(r["run_id"] for r in runs.final.select("run_id").collect()) == sorted(ODD_NAMES)
        assert sorted(runs.runs) == sorted(ODD_NAMES)
    finally:
        runs.close()




def test_the_column_cache_gives_the_verdicts_of_the_row_cache(spark, case_dirs, case_runs,
                                                               case_verdicts):
    """Small inputs keep the loaded tables as rows (RunSet._cache), large ones in columns:
    every hand-written case gets the same verdict, check by check and evidence row by
    evidence row, either way (the benchmark's 10M events are the only other user of the
    column cache)."""
    from harness.reconcile.api import verify_loaded
    from harness.reconcile.load import load_runs
    assert not case_runs.columnar          # the cases are a small input
    runs = load_runs(list(case_dirs.values()), spark, columnar=True)
    try:
        assert runs.columnar
        columnar = {v.run_id: v.to_json() for v in verify_loaded(runs)}
    finally:
        runs.close()
    assert columnar.keys() == case_verdicts.keys()
    for rid, v in case_verdicts.items():
        assert columnar[rid] == v, rid
