"""The loader's two ways of parsing lines: the fast scanner of bulk lines (jvm.BulkLine)
and Spark's JSON reader must give the same events, the same malformed lines and the same
fields; the scanner takes only the lines it can prove plain."""

from __future__ import annotations

import json
import os

import pytest

pytestmark = pytest.mark.spark

W = '"ts":1790000000.5,"node":"c1","role":"client","seq":%d,"event":"client.write"'
A = '"ts":1790000000.25,"node":"c1","role":"client","seq":%d,"event":"client.ack"'

# (line, dense under the scanner)
LINES = [
    ('{' + W % 1 + ',"path":"/f","offset":0,"len":65536,"crc":3626764237}', True),
    ('{' + A % 2 + ',"path":"/f","block":1073741825,"seqno":0,"acked":65536}', True),
    # whitespace, another key order, a colon in a string, a negative and an exponent
    ('{ "event" : "client.write" , "ts" : 1.79e9 , "node" : "c1" , "path" : "/a:b", '
     '"offset" : -1 }', True),
    ('{' + W % 3 + ',"path":"/f","len":0}   ', True),
    ('{"ts":1790000000,"node":"c2","event":"client.ack"}', True),     # integer ts
    ('{"ts":-0,"node":"c2","event":"client.ack"}', True),             # 0.0, not -0.0
    ('{"ts":-0.0,"node":"c2","event":"client.ack"}', True),           # -0.0
    # ... and every line the scanner must leave to Spark's reader
    ('{' + W % 4 + ',"path":"/f\\u0041","len":1}', False),              # an escape
    ('{' + W % 5 + ',"path":"/f","len":1,"len":2}', False),             # a repeated key
    ('{' + W % 6 + ',"path":"/f","len":1,"zone":"a"}', False),           # an unknown key
    ('{' + W % 27 + ',"pach":"/f","len":1}', False),                    # path's length and P
    ('{' + W % 28 + ',"path":"/f","offsetx":1}', False),                 # 7 letters, no key
    ('{' + W % 29 + ',"path":"/f","offset_x":1}', False),                # longer than any key
    ('{' + W % 30 + ',"path":"/f","l\\u0065n":1}', False),              # an escape in a key
    ('{' + W % 31 + ',"path":"/f","":1}', False),                        # an empty key
    ('{' + W % 32 + ',"path":"/f","lén":1}', False),                     # a key not ASCII
    ('{' + W % 7 + ',"path":"/f","len":1.5}', False),                   # a fraction, long
    ('{' + W % 8 + ',"path":"/f","len":1e3}', False),                   # an exponent, long
    ('{' + W % 9 + ',"path":"/f","len":012}', False),                   # a leading zero
    ('{' + W % 10 + ',"path":"/f","len":99999999999999999999}', False),  # beyond a long
    ('{' + W % 11 + ',"path":"/f","len":null}', False),                 # a null
    ('{' + W % 12 + ',"path":"/f","len":"7"}', False),                  # a string, long
    ('{' + W % 13 + ',"path":7,"len":1}', False),                       # a number, string
    ('{' + W % 14 + ',"path":"/fé","len":1}', False),                   # not ASCII
    ('{' + W % 15 + ',"path":"/f","len":1} x', False),                  # after the object
    ('{' + W % 16 + ',"path":"/f","len":1', False),                     # no closing brace
    ('{' + W % 17 + ',"path":"/f","len":1,}', False),                   # a trailing comma
    ('{' + W % 18 + ',"path":"/f","len":[1]}', False),                  # an array
    ('{"node":"c1","seq":19,"event":"client.write","len":1}', False),   # no ts
    ('{"ts":1.0,"seq":20,"event":"client.write","len":1}', False),      # no node
    ('{"ts":1.0,"node":"c1","seq":21,"event":"client.hflush","offset":1}', False),
    ('{"ts":1.0,"node":"c1","seq":22,"len":1}', False),                  # no event
    ('{"ts":-,"node":"c1","seq":23,"event":"client.write"}', False),
    ('{"ts":1.,"node":"c1","seq":24,"event":"client.write"}', False),
    ('{"ts":NaN,"node":"c1","seq":25,"event":"client.write"}', False),
    ('{"ts":1e999,"node":"c1","seq":26,"event":"client.write"}', False),  # infinite
    ('["ts",1]', False),
    ('this is not json', False),
    ('{}', False),
    ('', False),
]


@pytest.fixture(scope="module")
def odd_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("fastparse") / "odd-lines"
    (d / "events").mkdir(parents=True)
    with open(d / "events" / "c1.jsonl", "w", encoding="utf-8") as f:
        f.write("\n".join(line for line, _ in LINES) + "\n")
    return str(d)


@pytest.fixture(scope="module")
def scanner(spark):
    """The fast parser, registered in the session (skips where no JDK could build it)."""
    from harness.reconcile import jvm
    if not jvm.available(spark):
        pytest.skip("the fast line parser is not loaded (no javac, or HDFS_CHAOS_FAST_PARSE=0)")
    return spark


def _load(spark, dirs, fast):
    from harness.reconcile.load import RunSet, _read_final, _read_lines, _read_text, read_run_info
    infos = {i.run_id: i for i in map(read_run_info, dirs)}
    files = [f for i in infos.values() for f in i.event_files]
    finals = [i.run_dir for i in infos.values() if i.has_final_state]
    return RunSet(spark, infos, _read_lines(spark, _read_text(spark, files), False, fast=fast),
                  _read_final(spark, finals))


def _rows(df):
    cols = sorted(c for c in df.columns if c != "eid")
    return sorted((tuple(json.dumps(r[c], sort_keys=True, default=str) for c in cols)
                   for r in df.select(*cols).collect()))


def test_the_fast_parser_is_built_and_loaded(spark):
    from harness.reconcile import jvm
    if jvm._javac() is None or not jvm.enabled():
        pytest.skip("no javac (a JDK 17; tools/setup.sh installs one as root), "
                    "or HDFS_CHAOS_FAST_PARSE=0")
    assert jvm.jar() and os.path.exists(jvm.jar())
    assert jvm.available(spark)


def test_the_scanner_takes_exactly_the_plain_bulk_lines(scanner, odd_run):
    spark = scanner
    runs = _load(spark, [odd_run], fast=True)
    try:
        rows = runs.lines.select("raw", "dense", "seq").collect()
        assert len(rows) == len(LINES)
        dense = sorted((r["seq"] for r in rows if r["dense"]), key=lambda s: (s is None, s))
        assert dense == [1, 2, 3, None, None, None, None]
        assert len(dense) == sum(1 for _, d in LINES if d)
        # a dense line keeps no text (it has nothing the columns do not hold)
        assert [r["raw"] for r in rows if r["dense"]] == [None] * len(dense)
    finally:
        runs.close()


@pytest.mark.parametrize("what", ["odd", "cases"])
def test_both_parsers_give_the_same_events(scanner, odd_run, case_dirs, what):
    spark = scanner
    dirs = [odd_run] if what == "odd" else list(case_dirs.values())
    fast, slow = _load(spark, dirs, fast=True), _load(spark, dirs, fast=False)
    try:
        assert _rows(fast.events.drop("raw")) == _rows(slow.events.drop("raw"))
        assert _rows(fast.malformed) == _rows(slow.malformed)
        assert fast.malformed.count() > 0 or what == "cases"
        from harness.reconcile.load import extra_fields
        assert (_rows(extra_fields(fast.events).select("run_id", "seq", "extra"))
                == _rows(extra_fields(slow.events).select("run_id", "seq", "extra")))
    finally:
        fast.close()
        slow.close()


def test_values_of_the_fast_path(scanner, odd_run):
    spark = scanner
    runs = _load(spark, [odd_run], fast=True)
    try:
        r = runs.bulk.filter("path = '/a:b'").first()
        assert (r["ts"], r["node"], r["offset"], r["len"]) == (1.79e9, "c1", -1, None)
        w = runs.bulk.filter("seq = 1").first()
        assert (w["ts"], w["len"], w["crc"], w["path"]) == (1790000000.5, 65536, 3626764237, "/f")
    finally:
        runs.close()


def test_fast_parse_can_be_turned_off(monkeypatch, spark):
    from harness.reconcile import jvm
    monkeypatch.setenv("HDFS_CHAOS_FAST_PARSE", "0")
    assert jvm.jar() is None and not jvm.available(spark)


def test_no_javac_means_the_slow_path_with_a_warning(monkeypatch, tmp_path, caplog):
    from harness.reconcile import jvm
    monkeypatch.setenv("HDFS_CHAOS_FAST_PARSE", "1")
    monkeypatch.setenv("HDFS_CHAOS_CACHE", str(tmp_path))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "nojdk"))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(jvm, "_built", {})
    assert jvm.jar() is None
    assert "no javac" in caplog.text


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
        real = load._file_parts
        monkeypatch.setattr(load, "_file_parts",
                            lambda *a, **kw: real(*a, **kw).limit(0))   # knows no file
    runs = load.load_runs(dirs, spark)
    try:
        got = {(r["run_id"], r["log"]) for r in runs.lines.select("run_id", "log").distinct().collect()}
        want = {(n, log) for n in ODD_NAMES for log in logs}
        want = (want - {(ODD_NAMES[0], logs[0])}) | {(ODD_NAMES[0], "c+1 %41")}
        assert got == want
        assert sorted(r["run_id"] for r in runs.final.select("run_id").collect()) == sorted(ODD_NAMES)
        assert sorted(runs.runs) == sorted(ODD_NAMES)
    finally:
        runs.close()


def test_decimal_ts_is_the_correctly_rounded_double(scanner):
    """BulkLine reads a plain decimal with one division (BulkLine.plainDecimal): it must
    give the correctly rounded double, as Double.parseDouble and Python's float() do,
    inside its fast path, at its edges (2^53, 22 decimals) and beyond them."""
    import math
    import random
    from pyspark.sql import functions as F
    from harness.reconcile import jvm
    rnd = random.Random(5)
    values = ["0.0", "-0.0", "0.1", "0.30000000000000004", "1790000000.5", "1e0",
              "9007199254740.992", "9007199254740.993", "900719925474099.3",
              "90071992547409.93", "1.0000000000000000000001", "0.0000000000000000000001",
              "0.00000000000000000000001", "123456789.12345678", "-1763877013.123456",
              "1.5e3", "4.9E-324", "1.7976931348623157e308", "0.000000000000000000000000001"]
    for _ in range(3000):
        whole = str(rnd.randrange(10 ** rnd.randint(0, 13)))
        digits = "".join(rnd.choice("0123456789") for _ in range(rnd.randint(1, 14)))
        values.append(("-" if rnd.random() < 0.1 else "") + whole + "." + digits)
    lines = [(f'{{"ts":{v},"node":"c1","event":"client.ack"}}',) for v in values]
    got = [r["j"] for r in scanner.createDataFrame(lines, "value string")
           .select(F.call_udf(jvm.UDF_NAME, "value").alias("j")).collect()]
    assert len(got) == len(values)
    for v, j in zip(values, got):
        assert j["dense"], v
        assert j["ts"] == float(v) and math.copysign(1, j["ts"]) == math.copysign(1, float(v)), v
