"""Child processes that die with the process that started them, however it dies.

`popen(...)` is `subprocess.Popen(...)` whose child is SIGKILLed by the kernel the moment
this process dies (SIGKILL included), through Linux's PR_SET_PDEATHSIG set between fork
and exec. Two subtleties, each handled here:

- The kernel sends the signal when the *thread* that forked the child exits, not the
  process: a node started from a short-lived thread (a `threading.Timer` that restarts a
  DataNode) would be killed as soon as that thread returned. Every child is therefore
  forked by one long-lived spawner thread of this module; callers on any thread hand it
  their Popen and wait for the result.
- The parent may die between fork and prctl: the child then checks `getppid()` against
  the pid that forked it and exits at once if it was already orphaned.

The flag survives exec (the children are not setuid) and is not inherited by the
child's own children: the mini-HDFS nodes and toxiproxy-server start none. Off Linux
(no prctl) `popen` is plain Popen.
"""

from __future__ import annotations

import ctypes
import os
import queue
import signal
import subprocess
import sys
import threading
from concurrent.futures import Future

PR_SET_PDEATHSIG = 1

try:   # loaded before any fork: the child only calls into it
    _LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
    _PRCTL = _LIBC.prctl if _LIBC is not None else None
except (OSError, AttributeError):
    _PRCTL = None

_REQUESTS: "queue.Queue[tuple]" = queue.Queue()
_SPAWNER: threading.Thread | None = None
_SPAWNER_PID = -1          # the process the spawner thread belongs to (not a fork of it)
_SPAWNER_LOCK = threading.Lock()


def supported() -> bool:
    """Whether children can be tied to this process here (Linux with prctl)."""
    return _PRCTL is not None


def _tie(parent_pid: int, then=None):
    def preexec() -> None:
        # runs in the child between fork and exec: no locks, no imports, no allocation
        # beyond what the call needs
        if _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            os._exit(126)
        if os.getppid() != parent_pid:   # the parent died before prctl took effect
            os._exit(126)
        if then is not None:
            then()
    return preexec


def _serve(requests: "queue.Queue[tuple]") -> None:
    while True:
        args, kwargs, future = requests.get()
        if not future.set_running_or_notify_cancel():
            continue
        try:
            future.set_result(subprocess.Popen(*args, **kwargs))
        except BaseException as e:   # handed to the caller, raised on its thread
            future.set_exception(e)


def _spawner() -> "queue.Queue[tuple]":
    """The request queue of this process's spawner thread, started on first use."""
    global _SPAWNER, _SPAWNER_PID, _REQUESTS
    with _SPAWNER_LOCK:
        if _SPAWNER is not None and _SPAWNER.is_alive() and _SPAWNER_PID == os.getpid():
            return _REQUESTS
        _REQUESTS = queue.Queue()
        # a daemon thread lives until the process exits: the children's "parent thread"
        _SPAWNER = threading.Thread(target=_serve, args=(_REQUESTS,), name="lifeline-spawner",
                                    daemon=True)
        _SPAWNER.start()
        _SPAWNER_PID = os.getpid()
        return _REQUESTS


def popen(*args, **kwargs) -> subprocess.Popen:
    """subprocess.Popen whose child is killed when this process dies (see the module doc).
    A `preexec_fn` of the caller still runs, after the tie."""
    if _PRCTL is None:
        return subprocess.Popen(*args, **kwargs)
    kwargs["preexec_fn"] = _tie(os.getpid(), kwargs.get("preexec_fn"))
    future: Future = Future()
    _spawner().put((args, kwargs, future))
    return future.result()
