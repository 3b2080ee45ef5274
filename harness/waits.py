"""Harness-side waits: polling until a condition holds, on tenacity."""

from __future__ import annotations

from typing import Callable, TypeVar

import tenacity

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout: float, interval: float = 0.2) -> T:
    """Call `predicate` every `interval` seconds until it answers something true or
    `timeout` seconds have passed; returns its last answer (false when time ran out).
    An exception from `predicate` ends the wait at once."""
    retrying = tenacity.Retrying(stop=tenacity.stop_after_delay(timeout),
                                 wait=tenacity.wait_fixed(interval),
                                 retry=tenacity.retry_if_result(lambda answer: not answer),
                                 retry_error_callback=lambda state: state.outcome.result())
    return retrying(predicate)


def retrying(errors: tuple[type[BaseException], ...], timeout: float | None = None,
             attempts: int | None = None, interval: float = 0.1) -> tenacity.Retrying:
    """A Retrying that calls again on `errors` every `interval` seconds, until `timeout`
    seconds or `attempts` calls, then raises the last error."""
    stops = [tenacity.stop_after_delay(timeout)] if timeout is not None else []
    stops += [tenacity.stop_after_attempt(attempts)] if attempts is not None else []
    return tenacity.Retrying(stop=tenacity.stop_any(*stops) if stops else tenacity.stop_never,
                             wait=tenacity.wait_fixed(interval),
                             retry=tenacity.retry_if_exception_type(errors), reraise=True)
