"""The processes of a cluster, seen from the outside: whether one runs, and stopping
one for a pause."""

from __future__ import annotations

import os
import signal
import time


def pid_alive(pid: int) -> bool:
    """Whether a process runs (a zombie does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:   # a zombie of ours is not alive
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return True


def stop_process(pid: int, timeout: float = 5.0) -> None:
    """SIGSTOP `pid` and return once every thread of it is stopped (or it is gone)."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not _all_stopped(pid):
        time.sleep(0.001)


def _all_stopped(pid: int) -> bool:
    """Every thread of the process is stopped (or the process is gone)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                if f.read().rsplit(") ", 1)[1][0] not in "Tt":
                    return False
        except (OSError, IndexError):
            continue
    return True
