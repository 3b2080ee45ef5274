"""The wait for quiescence at the end of a run (harness/runner.py Run._wait_quiescent)."""

from harness import runner


class _Clock:
    def __init__(self):
        self.now = 1000.0

    def time(self):
        return self.now

    def sleep(self, s):
        self.now += s


class _System:
    """Busy until `quiet_from` seconds after the clock's start, quiet from then on."""

    def __init__(self, clock, quiet_from):
        self.clock, self.quiet_from = clock, clock.now + quiet_from

    def not_quiet(self, backend):
        return None if self.clock.now >= self.quiet_from else "a block under-replicated"


class _Log:
    def __init__(self):
        self.events = []

    def emit(self, event, **fields):
        self.events.append((event, fields))


def _run(monkeypatch, quiet_from):
    clock = _Clock()
    monkeypatch.setattr(runner.time, "time", clock.time)
    monkeypatch.setattr(runner.time, "sleep", clock.sleep)
    run = runner.Run.__new__(runner.Run)
    run.system, run.backend, run.log, run.errors = _System(clock, quiet_from), None, _Log(), []
    run._progress = lambda *a, **k: None
    run._wait_quiescent(deadline=clock.now)     # the 5 s floor applies
    [(event, fields)] = run.log.events
    assert event == "harness.quiescent"
    return fields, run.errors


def test_a_quiet_poll_at_the_deadline_gets_its_confirming_poll(monkeypatch):
    fields, errors = _run(monkeypatch, quiet_from=5.0)
    assert fields["reached"] is True and errors == []


def test_busy_at_the_deadline_is_no_quiescence(monkeypatch):
    fields, errors = _run(monkeypatch, quiet_from=60.0)
    assert fields["reached"] is False and fields["reason"] == "a block under-replicated"
    assert errors == ["no quiescence: a block under-replicated"]


def test_a_quiet_cluster_is_confirmed_after_one_short_poll(monkeypatch):
    """Quiet at once: the first poll and its confirming poll 0.2 s later end the wait
    (a fixed half second per run before)."""
    fields, errors = _run(monkeypatch, quiet_from=0.0)
    assert fields["reached"] is True and errors == []
    assert fields["waited"] == runner.QUIESCENCE_POLL_S == 0.2
