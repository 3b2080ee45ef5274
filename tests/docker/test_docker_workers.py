"""`run --workers 2 --backend docker` (issue 29): two library scenarios at once, each in
containers of its own, on a network of its own, both completing, nothing left behind.
The verifier is stood in for (these tests check the backend, not the checks)."""

from __future__ import annotations

import json
import os
import re

import pytest

from harness.runner import run_parallel

from tests.docker.test_docker_backend import ROOT, assert_ran_in_containers, engine, leftovers  # noqa: F401

pytestmark = pytest.mark.docker

NAMES = ["setup-first-bad-link", "replace-never"]


def _span(run_dir: str) -> tuple[float, float]:
    """When a run's harness started and ended it (events/harness.jsonl)."""
    with open(os.path.join(run_dir, "events", "harness.jsonl")) as f:
        events = [json.loads(line) for line in f if line.strip()]
    return (next(e["ts"] for e in events if e["event"] == "harness.run.start"),
            next(e["ts"] for e in events if e["event"] == "harness.run.end"))


def _no_verifier(outcomes, progress=None) -> list:
    from harness.reconcile.verdict import Verdict
    return [Verdict(scenario=o.scenario, run_id=o.run_id, run_dir=o.run_dir,
                    passed=o.status == "completed" and not o.errors, run_status=o.status,
                    run_errors=o.errors) for o in outcomes]


def test_two_scenarios_with_two_workers_on_docker(engine, tmp_path, capfd):  # noqa: F811
    files = [os.path.join(ROOT, "scenarios", f"{name}.yaml") for name in NAMES]
    verdicts, not_run = run_parallel(files, 2, backend="docker",
                                     results_dir=str(tmp_path / "results"),
                                     progress=lambda line: None, verify=_no_verifier)
    err = capfd.readouterr().err
    assert not_run == 0
    assert [v.scenario for v in verdicts] == NAMES
    for verdict in verdicts:
        assert verdict.passed, (verdict.run_status, verdict.run_errors, err[-3000:])
        assert_ran_in_containers(verdict, verdict.run_dir, datanodes=4)
    # they ran at once
    (start1, end1), (start2, end2) = (_span(v.run_dir) for v in verdicts)
    assert max(start1, start2) < min(end1, end2), "the runs did not overlap"
    # each on a network (and subnet) of its own: "NAME: network PREFIX on SUBNET; ..."
    found = re.findall(r"^([\w-]+): network (\S+) on (\S+);", err, re.M)
    networks = {name: (network, subnet) for name, network, subnet in found}
    assert sorted(networks) == sorted(NAMES), err[-3000:]
    assert len({name for name, _ in networks.values()}) == 2
    assert len({subnet for _, subnet in networks.values()}) == 2
    for verdict in verdicts:
        assert leftovers(engine, verdict.run_id) == []
