"""The side-by-side comparison (harness/reconcile/diff.py) on two hand-made run folders
of one scenario: a mini-HDFS run and a Hadoop 3.4.2 run that disagree on a check, a
length, the recovery counts and the rebuilt pipeline; and a scenario Hadoop does not run."""

from __future__ import annotations

import json
import os

import pandas as pd

from harness.reconcile import diff

P3_REASON = "not observable on hadoop 3.4.2: needs dn.replica.state"


def _run(root, name: str, verdict: dict, final: dict, recovered: list[list[str]]) -> str:
    d = os.path.join(str(root), name)
    os.makedirs(os.path.join(d, "events"))
    with open(os.path.join(d, "verdict.json"), "w") as f:
        json.dump(dict(verdict, run_id=name), f)
    with open(os.path.join(d, "final_state.json"), "w") as f:
        json.dump(final, f)
    with open(os.path.join(d, "events", "c1.jsonl"), "w") as f:
        f.write(json.dumps({"ts": 1.0, "event": "client.write", "path": "/f", "len": 9}) + "\n")
        # written out of order: the diff orders them by time
        for i, p in reversed(list(enumerate(recovered))):
            f.write(json.dumps({"ts": 10.0 + i, "event": "client.pipeline.recovered",
                                "path": "/f", "pipeline": p}) + "\n")
    return d


def _verdict(system, version, passed, checks, reasons=None, **metrics):
    m = {"pipeline_recoveries": 1, "lease_recoveries": 0, "block_recoveries": 0,
         "replacements": 0, "recovery_latencies_s": {"pipeline": [0.5], "lease": [], "block": []}}
    m.update(metrics)
    return {"scenario": "dn-crash", "system": system, "system_version": version,
            "passed": passed, "metrics": m,
            "checks": [dict({"id": c, "status": s}, **({"reason": reasons[c]} if reasons and c in reasons else {}))
                       for c, s in checks.items()]}


def _final(lengths: dict, closed: set):
    return {"files": [{"path": p, "len": n, "closed": p in closed} for p, n in lengths.items()]}


def _pair(tmp_path):
    mini = _run(tmp_path, "mini", _verdict("minihdfs", None, True,
                                           {"P1": "pass", "P3": "pass", "D1": "pass"}),
                _final({"/f": 4096, "/g": 10}, {"/f", "/g"}), [["dn1", "dn3"]])
    hadoop = _run(tmp_path, "hadoop", _verdict("hadoop", "3.4.2", False,
                                               {"P1": "pass", "P3": "skip", "D1": "fail"},
                                               {"P3": P3_REASON},
                                               pipeline_recoveries=2, replacements=1,
                                               recovery_latencies_s={"pipeline": [3.25, 1.0]}),
                  _final({"/f": 4000, "/g": 10}, {"/g"}), [["dn1", "dn3"], ["dn1", "dn4"]])
    return mini, hadoop


def test_every_difference_is_named(tmp_path):
    mini, hadoop = _pair(tmp_path)
    a, b = diff.load_result(mini), diff.load_result(hadoop)
    assert (b.system, b.version) == ("hadoop", "3.4.2")
    assert a.pipelines == [["dn1", "dn3"]] and b.pipelines == [["dn1", "dn3"], ["dn1", "dn4"]]
    assert (a.files_closed, a.files_total, b.files_closed) == (2, 2, 1)
    d = diff.compare("dn-crash", a, b).diffs
    assert set(d) == {"verdict", "check:D1", "files_closed", "length:/f",
                      "pipeline_recoveries", "replacements", "pipelines"}
    assert d["length:/f"] == "4096 vs 4000"
    assert d["check:D1"] == "pass vs fail"
    # P3 could not be judged on Hadoop: shown with its reason, not a difference; the
    # equal length of /g and the equal P1 are not differences either
    assert "check:P3" not in d and b.reasons["P3"] == P3_REASON


def test_same_runs_have_no_difference(tmp_path):
    mini, _ = _pair(tmp_path)
    a = diff.load_result(mini)
    assert diff.compare("x", a, diff.load_result(mini)).diffs == {}


def test_diff_html_and_parquet(tmp_path):
    mini, hadoop = _pair(tmp_path)
    out = str(tmp_path / "out")
    both = diff.compare("dn-crash", diff.load_result(mini), diff.load_result(hadoop))
    skipped = diff.compare("racks-only", diff.load_result(mini),
                           diff.not_run("hadoop", "racks are not configured on hadoop", "3.4.2"))
    html = open(diff.write_diff([both, skipped], out)).read()
    assert "2 scenarios, 1 differ" in html
    assert "not run on hadoop: racks are not configured on hadoop" in html
    assert P3_REASON in html
    assert html.count('class="diff"') >= 1 + len(both.diffs)   # summary row + each row
    assert "3.25" in html and "[dn1,dn4]" in html
    t = pd.read_parquet(os.path.join(out, "diff.parquet"))
    assert len(t) == 4
    row = t[(t.scenario == "dn-crash") & (t.system == "hadoop")].iloc[0]
    assert row["verdict"] == "FAIL" and row["check_D1"] == "fail" and row["reason_P3"] == P3_REASON
    assert row["pipeline_recoveries"] == 2 and json.loads(row["final_lengths"])["/f"] == 4000
    assert [list(p) for p in row["pipelines_after_recovery"]] == [["dn1", "dn3"], ["dn1", "dn4"]]
    assert list(row["pipeline_latencies_s"]) == [3.25, 1.0]
    assert "length:/f" in list(row["differences"])
    nr = t[(t.scenario == "racks-only") & (t.system == "hadoop")].iloc[0]
    assert nr["verdict"] == "not run" and nr["not_run_reason"].startswith("racks")
    assert list(nr["differences"]) == []
