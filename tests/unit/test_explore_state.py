"""The explorer's state (harness/explore/state.py): state.json keeps its keys and their
order, reads back as itself, and a state.json written before the type (a dict of string
keys, some absent in older explorations) still resumes."""

from __future__ import annotations

import json
import os

import pytest

from harness.explore.engine import Explorer, ExploreError
from harness.explore.schedules import Schedule
from harness.explore.state import ExploreState, StateError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASE = os.path.join(ROOT, "explore-bases", "write-3-blocks.yaml")

POINT = {"event": "client.hflush", "node": "c1", "where": {"path": "/f"}, "nth": 1, "index": 3,
         "ts": 1.0, "fields": {"offset": 512}}


def _old_state(**changes) -> dict:
    """state.json as Explorer.save wrote it as a dict, after a base run and one result."""
    doc = {"base": os.path.abspath(BASE), "system": "minihdfs", "exact": True, "note": None,
           "points": [POINT], "results": {"s1": {"id": "s1", "outcome": "pass", "depth": 1,
                                                 "signature": "pass:-:after/kill"}},
           "schedules": {"s1": Schedule(()).to_json()}, "queue": [], "tried": {"x": 1},
           "running": {}, "findings": {}, "elapsed": 12.5, "space": 40, "verify_s": 3.0,
           "verified": 1, "base_run": {"run_dir": "/r", "outcome": "pass", "failed": [],
                                       "timings": None}}
    doc.update(changes)
    return {k: v for k, v in doc.items() if v is not ...}


def test_round_trip_keeps_keys_and_order():
    doc = _old_state()
    state = ExploreState.from_json(doc)
    assert state.results["s1"]["outcome"] == "pass" and state.base_run["outcome"] == "pass"
    assert json.dumps(state.to_json()) == json.dumps(doc)
    assert ExploreState.from_json(state.to_json()) == state
    fresh = ExploreState(base="/b")
    assert "base_run" not in fresh.to_json()      # no base run yet: the key is absent
    assert list(fresh.to_json())[:4] == ["base", "system", "exact", "note"]


def test_an_older_state_takes_the_defaults_and_keeps_unknown_keys():
    old = _old_state(system=..., exact=..., note=..., tried=..., running=..., base_run=...,
                     later="kept")
    state = ExploreState.from_json(old)
    assert (state.system, state.exact, state.note, state.tried, state.running) == (
        "minihdfs", True, None, {}, {})
    assert state.extra == {"later": "kept"} and state.to_json()["later"] == "kept"


@pytest.mark.parametrize("bad, message", [
    ([], "not a JSON object"), ({"points": []}, "names no base"),
    ({"base": "/b", "results": []}, "results is list, not a dict"),
])
def test_what_is_not_a_state_says_so(bad, message):
    with pytest.raises(StateError, match=message):
        ExploreState.from_json(bad)


def test_resume_reads_a_state_written_before_the_type(tmp_path):
    out = tmp_path / "out"
    (out / "schedules").mkdir(parents=True)
    old = _old_state(system=..., exact=..., note=...)       # before explorations on Hadoop
    old["running"] = {"s2": Schedule(()).to_json()}           # cut short: queued again
    (out / "state.json").write_text(json.dumps(old))
    x = Explorer(BASE, str(out), 60, resume=True, say=lambda m: None)
    x._load_or_init()
    assert isinstance(x.state, ExploreState)
    assert [p.to_json() for p in x.points] == [POINT]
    assert x.state.results == old["results"] and x.state.running == {}
    assert x.elapsed_before == 12.5 and len(x.queue) == 1
    x.save()
    saved = json.loads((out / "state.json").read_text())
    assert list(saved) == list(_old_state())                 # the keys as a new one has them
    assert saved["results"] == old["results"] and saved["base_run"] == old["base_run"]


def test_a_broken_state_file_is_one_line(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "state.json").write_text("{torn")
    with pytest.raises(ExploreError, match="state.json: not JSON.*use another --out"):
        Explorer(BASE, str(out), 60, resume=True, say=lambda m: None)._load_or_init()
