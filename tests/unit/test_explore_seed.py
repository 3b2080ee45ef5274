"""A schedule runs with its base run's seed: a base without `seed:` gets a new seed at
each run, and the NameNode's placement draws from it, so a schedule whose point is a
replica the base placed on dn4 would wait for it in vain."""

from __future__ import annotations

import os
import shutil

import yaml

from harness.explore.engine import Explorer
from harness.explore.points import read_run_events
from harness.reconcile.verdict import Verdict

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                    "explore-write-3-blocks")
RUN = os.path.join(DATA, "run-x59413228c9")   # logged harness.run.start with seed 11


def unseeded_explorer(tmp_path) -> Explorer:
    with open(os.path.join(DATA, "base.yaml")) as f:
        doc = yaml.safe_load(f)
    doc.pop("seed")
    base = tmp_path / "base.yaml"
    base.write_text(yaml.safe_dump(doc, sort_keys=False))
    x = Explorer(str(base), str(tmp_path / "out"), 60, say=lambda m: None,
                 status=lambda m: None)
    x._load_or_init()
    return x


def test_schedules_take_the_seed_of_the_base_run_when_the_base_has_none(tmp_path):
    run_dir = tmp_path / "base-run"
    shutil.copytree(RUN, run_dir)
    x = unseeded_explorer(tmp_path)
    passed = Verdict(scenario="base", passed=True, checks=[], run_dir=str(run_dir))
    x._run_all = lambda schedules: [{"run_dir": str(run_dir), "status": "completed",
                                      "errors": []}]
    x._verify = lambda results: [passed]
    x._record_base()
    x._check_base(wait=True)
    assert x.state.base_run["seed"] == 11
    schedule = x.queue.pop()
    with open(x.schedule_file(schedule)) as f:
        assert yaml.safe_load(f)["seed"] == 11
    # a resumed exploration keeps it
    again = Explorer(x.base_path, x.out, 60, resume=True, say=lambda m: None,
                     status=lambda m: None)
    again._load_or_init()
    assert again.schedule_doc(schedule)["seed"] == 11


def test_a_base_with_a_seed_keeps_it(tmp_path):
    x = Explorer(os.path.join(DATA, "base.yaml"), str(tmp_path / "out"), 60,
                 say=lambda m: None, status=lambda m: None)
    x._pin_seed(99)
    assert x.base_doc["seed"] == 11
    assert read_run_events(RUN)[0]["seed"] == 11
