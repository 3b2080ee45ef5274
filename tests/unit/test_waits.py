"""harness.waits: the tenacity-based polls the harness waits with."""

import time

import pytest

from harness.waits import retrying, wait_until


def test_wait_until_returns_the_first_true_answer():
    answers = iter([0, None, "", "ready", "later"])
    assert wait_until(lambda: next(answers), timeout=5, interval=0.001) == "ready"


def test_wait_until_gives_the_last_false_answer_when_time_runs_out():
    calls = []
    start = time.monotonic()
    assert wait_until(lambda: calls.append(1) or [], timeout=0.05, interval=0.01) == []
    assert time.monotonic() - start >= 0.05
    assert len(calls) >= 2   # polled again after the first refusal


def test_wait_until_ends_at_once_on_an_exception():
    calls = []

    def broken():
        calls.append(1)
        raise ValueError("exited")

    with pytest.raises(ValueError, match="exited"):
        wait_until(broken, timeout=5, interval=0.001)
    assert calls == [1]


def test_retrying_calls_again_on_the_named_errors_only():
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise OSError("not yet")
        return "up"

    assert retrying((OSError,), attempts=5, interval=0.001)(flaky) == "up"
    assert len(calls) == 3
    with pytest.raises(KeyError):
        retrying((OSError,), attempts=5, interval=0.001)(lambda: {}["x"])


def test_retrying_raises_the_last_error_after_its_attempts():
    calls = []

    def down():
        calls.append(1)
        raise OSError(f"refused {len(calls)}")

    with pytest.raises(OSError, match="refused 3"):
        retrying((OSError,), attempts=3, interval=0.001)(down)
    with pytest.raises(OSError):
        retrying((OSError,), timeout=0.02, interval=0.005)(down)
