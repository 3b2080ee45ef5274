"""The ports a cluster's processes listen on: one allocator per process, handing out
ports free now from a configured range.

The range sits below the kernel's ephemeral range: a port from bind(0) could be taken by
any outgoing connection before our node binds it. A port is handed out once per
allocator, so two nodes never get the same one before binding. Processes that run
clusters side by side (the explorer's workers) each set their own slice of the range
with `set_port_range`, since a port is only known to be handed out once within one
process.
"""

from __future__ import annotations

import random
import socket

DEFAULT_RANGE = (20000, 32000)


class PortAllocator:
    """Hands out ports free now from `range` (low inclusive, high exclusive)."""

    def __init__(self, port_range: tuple[int, int] = DEFAULT_RANGE):
        self.range = _checked(port_range)
        self._rng = random.Random()
        self._handed_out: set[int] = set()

    def set_range(self, port_range: tuple[int, int]) -> tuple[int, int]:
        self.range = _checked(port_range)
        return self.range

    def free_port(self, host: str = "127.0.0.1") -> int:
        low, high = self.range
        # a long session: ports of clusters long gone come back (before the range is used
        # up: an explorer worker's range is a slice of a few thousand ports)
        if len(self._handed_out) > (high - low) * 2 // 3:
            self._handed_out.clear()
        for _ in range(200):
            port = self._rng.randrange(low, high)
            if port in self._handed_out:
                continue
            self._handed_out.add(port)
            with socket.socket() as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    s.bind((host, port))
                except OSError:
                    continue
                return port
        with socket.socket() as s:
            s.bind((host, 0))
            return s.getsockname()[1]


def _checked(port_range: tuple[int, int]) -> tuple[int, int]:
    low, high = (int(p) for p in port_range)
    if not 0 < low < high <= 65536:
        raise ValueError(f"port range {port_range!r}: expected (low, high) with 0 < low < high <= 65536")
    return (low, high)


# this process's allocator: what every cluster started from this process takes ports from
ALLOCATOR = PortAllocator()


def free_port(host: str = "127.0.0.1") -> int:
    """A port free now from this process's range (see the module's docstring)."""
    return ALLOCATOR.free_port(host)


def port_range() -> tuple[int, int]:
    """The range this process's allocator hands ports out of."""
    return ALLOCATOR.range


def set_port_range(low: int, high: int) -> tuple[int, int]:
    """Sets the range this process's allocator hands ports out of; returns it."""
    return ALLOCATOR.set_range((low, high))
