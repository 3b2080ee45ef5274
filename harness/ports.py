"""Port slices per harness process: every cluster node's port comes from this process's
port allocator (hdfs_contract.ports), and a port is known to be handed out once only
within one process. Two harness processes at once (an explorer's workers, a known-bugs matrix
beside a diff, two test sessions) therefore each claim a slot, an flock on a file, and
take their ports from that slot's slice of the range: a JVM that binds its port seconds
after the harness chose it then never finds it taken by the other process. The kernel
releases a slot when its process exits, however it exits, so no slot stays taken."""

from __future__ import annotations

import fcntl
import os
import tempfile

from hdfs_contract import ports as contract_ports

PORT_SLOTS = 8
PORT_SLOTS_DIR = os.path.join(tempfile.gettempdir(), "hdfs-chaos-port-slots")
_SLOT_FD: int | None = None     # the claimed slot's lock, held for the process's life
_FULL_RANGE: tuple[int, int] | None = None     # the port range before this process cut it


def claim_port_slot(slots: int | None = None, directory: str | None = None) -> int | None:
    """The index of a port slot no other live process holds, now held by this one; None
    when every slot is taken (or locks cannot be made here)."""
    global _SLOT_FD
    slots = PORT_SLOTS if slots is None else slots
    directory = directory or PORT_SLOTS_DIR
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError:
        return None
    for index in range(slots):
        try:
            fd = os.open(os.path.join(directory, f"slot-{index}.lock"), os.O_CREAT | os.O_RDWR,
                         0o666)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        if _SLOT_FD is not None:
            os.close(_SLOT_FD)
        _SLOT_FD = fd
        return index
    return None


def use_slice(slot: int, parts: int) -> tuple[int, int]:
    """Narrows this process's port range to part `slot` of `parts` of the range it
    started with; returns the slice."""
    global _FULL_RANGE
    if _FULL_RANGE is None:
        _FULL_RANGE = contract_ports.port_range()
    low, high = _FULL_RANGE
    width = (high - low) // parts
    return contract_ports.set_port_range(low + slot * width, low + (slot + 1) * width)


def claim_run_ports() -> tuple[int, int] | None:
    """Before a run picks ports: a slot's slice for this process, once (an explorer
    worker has one already). None when every slot is taken: the run then keeps the
    whole range."""
    if _SLOT_FD is not None:
        return None
    slot = claim_port_slot()
    return None if slot is None else use_slice(slot, PORT_SLOTS)


def init_worker_ports(counter, workers: int) -> tuple[int, int]:
    """A pool worker's set-up (the explorer's, run_parallel's): the slice of a slot
    claimed on the machine, or, every slot taken, slice `index` of `workers` of the
    whole range, where `counter` (a shared multiprocessing.Value) numbers the workers."""
    with counter.get_lock():
        index = counter.value % workers
        counter.value += 1
    slot = claim_port_slot()
    if slot is not None:
        return use_slice(slot, PORT_SLOTS)
    return use_slice(index, workers)
