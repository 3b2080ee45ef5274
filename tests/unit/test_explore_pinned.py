"""The explorer's schedules are pinned: for one base (write-3-blocks, its recorded points)
and two runs of its schedules (depth 2), the schedules generated, their order, their ids
and the scenario each writes are those of expected-schedules.json. Resume files and
budgets name schedules by id and take them in this order, so a change to how the fault
kinds are explored must leave it as it is.

The fixture was made by the explorer as it was before the kinds carried their explorer
variants; `python tests/unit/test_explore_pinned.py` rewrites it (only for a change of
the schedules that is meant)."""

from __future__ import annotations

import hashlib
import json
import os
import sys

from harness.explore.engine import Explorer
from harness.explore.points import FailurePoint, extract_points, read_run_events
from harness.explore.schedules import Schedule, ScheduleQueue, scenario_doc, to_yaml

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                    "explore-write-3-blocks")
EXPECTED = os.path.join(DATA, "expected-schedules.json")
RUNS = ("run-x59413228c9", "run-xe1a6f47497")   # a pause and a crash_client of the writer


def generated(tmp: str) -> dict:
    """What the explorer generates from the fixture: depth 1 at the base's points and at
    the points of each run, the queue's order over the base's, depth 2 after each run."""
    x = Explorer(os.path.join(DATA, "base.yaml"), os.path.join(tmp, "out"), 60,
                 say=lambda m: None)
    with open(os.path.join(DATA, "base-points.json")) as f:
        base_points = [FailurePoint.from_json(p) for p in json.load(f)]
    lists: dict[str, list[Schedule]] = {"depth1": x.depth1(base_points)}
    for run in RUNS:
        run_dir = os.path.join(DATA, run)
        lists[f"depth1:{run}"] = x.depth1(extract_points(read_run_events(run_dir)))
        with open(os.path.join(run_dir, "schedule.json")) as f:
            parent = Schedule.from_json(json.load(f))
        lists[f"depth2:{run}"] = x.depth2(parent, run_dir)
    queue = ScheduleQueue()
    for s in lists["depth1"]:
        queue.push(s)
    popped = []
    while (s := queue.pop()) is not None:
        popped.append(s)
    lists["queue"] = popped
    out: dict = {}
    for name, schedules in lists.items():
        docs = "".join(to_yaml(scenario_doc(x.base_doc, s)) for s in schedules)
        out[name] = {"schedules": [f"{s.id} {s.signature}" for s in schedules],
                     "yaml_sha256": hashlib.sha256(docs.encode()).hexdigest()}
    return out


def test_the_generated_schedules_are_the_pinned_ones(tmp_path):
    with open(EXPECTED) as f:
        expected = json.load(f)
    got = generated(str(tmp_path))
    assert list(got) == list(expected)
    for name in expected:
        assert got[name]["schedules"] == expected[name]["schedules"], name
        assert got[name]["yaml_sha256"] == expected[name]["yaml_sha256"], name
    assert len(expected["depth1"]["schedules"]) > 300
    assert all(expected[f"depth2:{run}"]["schedules"] for run in RUNS)


if __name__ == "__main__":
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        result = generated(tmp)
    with open(EXPECTED, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(f"wrote {EXPECTED}: " + ", ".join(f"{k} {len(v['schedules'])}"
                                             for k, v in result.items()), file=sys.stderr)
