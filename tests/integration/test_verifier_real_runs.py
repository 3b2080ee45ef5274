"""Real runs of a mini-HDFS made deliberately wrong (a mutant of tools/mutants applied
to a scratch copy, which the cluster's processes run) are caught by the right check, and
the same scenario on the unmutated tree passes it: the oracles see real bugs, not only
hand-written logs."""

from __future__ import annotations

import textwrap

import pytest

from harness.runner import run_scenario
from harness.scenario import load_scenario_text
from tools.mutants import BY_NAME, mutated_tree

pytestmark = [pytest.mark.integration, pytest.mark.spark]

# The first node of the pipeline (whichever it is) receives more than the two others,
# which a partition between all DataNodes cuts off right after the first hflush; the
# writer crashes; block recovery must pick the minimum RBW length (the hflushed 256 KiB).
# The client's links are paced, as in the library's block-recovery-different-lengths:
# unpaced, the whole 2 MiB is acked before the partition lands.
UNEQUAL = """\
name: unequal-lengths
seed: 11
timeout: 60s
cluster:
  datanodes: 3
  config:
    dfs.blocksize: 4MiB
    dfs.heartbeat.interval: 300ms
    dfs.client.socket-timeout: 20s
    lease.soft-limit: 1s
    lease.hard-limit: 4s
    dfs.namenode.lease-recheck-interval-ms: 300ms
workload:
  - {id: w1, client: c1, op: write, path: /f, size: 2MiB, hflush_every: 256KiB}
faults:
  - {id: pace, kind: bandwidth, links: [[c1, dn1], [c1, dn2], [c1, dn3]], rate: 512KiB,
     at: 0s}
  - {id: cut, kind: partition, between: [[dn1], [dn2], [dn3]], mode: blackhole,
     at: {event: client.hflush, node: c1, nth: 1}, duration: 2500ms}
  - {id: crash, kind: crash_client, target: c1, at: {after: cut, delay: 1500ms}}
expect:
  checks: [B2]
"""

# A DataNode of a 3-node pipeline dies after an hflush: DEFAULT wants a replacement
# (r=3, n=2, hflushed); none is left, so best effort goes on with two nodes. The
# client's links are paced (1 MiB takes about a second): unpaced, the whole file can be
# written before the kill lands, and P2 then has nothing to judge.
REPLACE = """\
name: replace-default
seed: 5
timeout: 60s
cluster:
  datanodes: 3
  config:
    dfs.blocksize: 4MiB
    dfs.heartbeat.interval: 300ms
    dfs.client.socket-timeout: 4s
    dfs.client.block.write.replace-datanode-on-failure.policy: DEFAULT
    dfs.client.block.write.replace-datanode-on-failure.best-effort: true
workload:
  - {id: w1, client: c1, op: write, path: /f, size: 1MiB, hflush_every: 128KiB}
faults:
  - {id: pace, kind: bandwidth, links: [[c1, dn1], [c1, dn2], [c1, dn3]], rate: 1MiB,
     at: 0s}
  - {id: down, kind: kill, target: dn2, at: {event: client.hflush, node: c1, nth: 2}}
expect:
  checks: [P2]
"""


def _run(text, tmp_path, mutant):
    """Run the scenario on the unmutated tree (mutant None) or on the named mutant."""
    scenario = load_scenario_text(textwrap.dedent(text), "inline.yaml")
    with mutated_tree(BY_NAME[mutant] if mutant else None):
        return _valid(run_scenario(scenario, results_dir=str(tmp_path)))


def _valid(verdict):
    """The verdict, after checking that the verdict.json its run wrote validates against
    the schema and reads back as the verdict returned."""
    import json
    import os

    import jsonschema

    from harness.reconcile.verdict import Verdict, schema
    with open(os.path.join(verdict.run_dir, "verdict.json")) as f:
        on_disk = json.load(f)
    jsonschema.Draft202012Validator(schema()).validate(on_disk)
    assert Verdict.from_json(on_disk) == verdict
    return verdict


def _check(verdict, check_id):
    return next(c.to_json() for c in verdict.checks if c.id == check_id)


@pytest.mark.parametrize("mutant,expected", [(None, "pass"), ("sync-length-max", "fail")])
def test_a_recovery_to_the_longest_replica_is_caught_by_B2(tmp_path, mutant, expected):
    verdict = _run(UNEQUAL, tmp_path, mutant)
    b2 = _check(verdict, "B2")
    assert b2["status"] == expected, b2
    if expected == "fail":
        assert b2["evidence"], "a failed check shows the sync that broke the rule"


@pytest.mark.parametrize("mutant,expected", [(None, "pass"),
                                             ("replace-default-ignores-hflush", "fail")])
def test_no_replacement_under_default_after_hflush_is_caught_by_P2(tmp_path, mutant, expected):
    verdict = _run(REPLACE, tmp_path, mutant)
    p2 = _check(verdict, "P2")
    assert p2["status"] == expected, p2


# Library scenarios whose check a mutant breaks on a real run (python -m tools.mutants
# run --targeted measured each: the mutant fails the check, the unmutated tree passes).
LIBRARY_PROOFS = [
    ("hard-limit-two-writers", "hard-limit-newest-first", "L3"),
    ("second-writer-before-soft-limit", "soft-limit-ignored", "L2"),
    ("client-crash-after-hflush", "hflush-skips-ack-wait", "D1"),
]


@pytest.mark.parametrize("scenario,mutant,check_id", LIBRARY_PROOFS,
                         ids=[f"{c}-{m}" for _, m, c in LIBRARY_PROOFS])
def test_a_library_scenario_catches_its_mutant(tmp_path, scenario, mutant, check_id):
    from harness.scenario import load_scenario
    from tools.mutants.apply import REPO_ROOT
    loaded = load_scenario(f"{REPO_ROOT}/scenarios/{scenario}.yaml")
    with mutated_tree(None):
        clean = _valid(run_scenario(loaded, results_dir=str(tmp_path / "unmutated")))
    with mutated_tree(BY_NAME[mutant]):
        broken = _valid(run_scenario(loaded, results_dir=str(tmp_path / "mutant")))
    assert _check(clean, check_id)["status"] == "pass", _check(clean, check_id)
    assert _check(broken, check_id)["status"] == "fail", _check(broken, check_id)
