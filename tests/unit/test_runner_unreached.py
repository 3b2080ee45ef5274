"""When the runner ends a run as `unreached` (Run._settled_out_of_reach): only when no
pending fault can fire any more, never while a timer, a delay or a lasting fault may
still bring its event."""

from __future__ import annotations

import queue
import textwrap

import pytest

from harness.runner import Run
from harness.scenario import load_scenario_text

SCENARIO = textwrap.dedent("""\
    name: settle
    seed: 1
    timeout: 60s
    cluster: {{datanodes: 3}}
    workload:
      - {{id: w1, client: c1, op: write, path: /f, size: 64KiB}}
    faults:
      - {{id: x1, kind: kill, target: dn2, at: {at}}}
      - {{id: p1, kind: partition, between: [[dn1], [dn3]], at: 0s}}
    """)


class _Engine:
    def __init__(self, keys):
        self.keys = keys

    def pending(self):
        return list(self.keys)


class _System:
    settle_poll_seconds = 0.5

    def __init__(self, quiet=True):
        self.quiet = quiet

    def not_quiet(self, backend):
        return None if self.quiet else "/f is still open"


class _Fault:
    def __init__(self, active):
        self.active = active


def _run(tmp_path, at="{event: client.pipeline.recovered}", keys=(("inject", "x1"),),
         quiet=True, partition_active=False):
    run = Run(load_scenario_text(SCENARIO.format(at=at)), "local", str(tmp_path), 1, False, None)
    run.engine = _Engine(keys)
    run.system = _System(quiet)
    run.active = {"p1": _Fault(partition_active)}
    run.firings = queue.Queue()
    return run


def _polls(run, n=3) -> list[bool]:
    out = []
    for _ in range(n):
        run._settle_next_poll = 0.0     # no half-second wait between polls in a test
        out.append(run._settled_out_of_reach())
    return out


def test_a_workload_event_that_cannot_come_ends_on_the_second_quiet_poll(tmp_path):
    assert _polls(_run(tmp_path)) == [False, True, True]


@pytest.mark.parametrize("at", ["5s", "{event: dn.block_report, nth: 50}",
                                "{event: nn.dn.dead}", "{after: p1, delay: 30s}"])
def test_a_trigger_that_may_still_fire_by_itself_keeps_the_run(tmp_path, at):
    assert _polls(_run(tmp_path, at=at)) == [False, False, False]


def test_not_while_the_cluster_is_busy_or_a_lasting_fault_holds(tmp_path):
    assert _polls(_run(tmp_path, quiet=False)) == [False, False, False]
    assert _polls(_run(tmp_path, partition_active=True)) == [False, False, False]
    assert _polls(_run(tmp_path, keys=(("inject", "x1"), ("heal", "p1")))) == [False] * 3


def test_a_busy_poll_starts_the_count_again(tmp_path):
    run = _run(tmp_path)
    assert _polls(run, 1) == [False]
    run.system.quiet = False
    assert _polls(run, 1) == [False]
    run.system.quiet = True
    assert _polls(run, 2) == [False, True]


def test_the_pending_heal_of_a_fault_that_never_fired_keeps_no_run(tmp_path):
    """A fault with a duration has a heal trigger from the start; while its fault waits
    for an event that cannot come, that heal cannot come either (it follows the
    injection), so the run ends as unreached instead of waiting out the timeout."""
    run = _run(tmp_path, keys=(("inject", "x1"), ("heal", "x1")))
    assert _polls(run) == [False, True, True]
    run.fired.append("x1")     # injected: its heal is due, the run goes on
    run._settle_polls = 0
    assert _polls(run) == [False, False, False]
