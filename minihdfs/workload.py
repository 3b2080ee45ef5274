"""A workload client process: runs write / append / read / recover_lease / truncate
operations in order, with hflush points and deterministic content from the seed
(hdfs_contract.content).

Every operation is bracketed by `client.op.start` and `client.op.end {ok, error, len}`.
A file written with `close: false` stays open, its lease renewed, until the process
is stopped or killed.
"""

from __future__ import annotations

import os
import threading
import time

from hdfs_contract.config import Config
from hdfs_contract.content import CONTENT_NAME, Content
from hdfs_contract.events import EventLog

from .client import DFSClient
from .routing import Routes


def write_stream(stream, content: Content, path: str, start: int, size: int,
                 hflush_every: int | None, piece: int = 1 << 20) -> int:
    """Write `size` bytes from file offset `start`, hflushing every `hflush_every` bytes."""
    written = 0
    while written < size:
        n = min(piece, size - written)
        if hflush_every:
            n = min(n, hflush_every - (written % hflush_every))
        stream.write(content.get(path, start + written, n))
        written += n
        if hflush_every and written % hflush_every == 0:
            stream.hflush()
    return written


def run_op(client: DFSClient, content: Content, op: dict, open_streams: list) -> int:
    kind, path = op["op"], op["path"]
    if kind in ("write", "append"):
        if kind == "write":
            stream = client.create(path, overwrite=op.get("overwrite", False),
                                   replication=op.get("replication", 0))
            start = 0
        else:
            stream = client.append(path, new_block=op.get("new_block", False))
            start = stream.file_offset
        n = write_stream(stream, content, path, start, op.get("size", 0), op.get("hflush_every"))
        if op.get("close", True):
            stream.close()
        else:
            open_streams.append(stream)
        return n
    if kind == "read":
        return len(client.read(path))
    if kind == "recover_lease":
        deadline = time.monotonic() + op.get("timeout", 60)
        while not client.recover_lease(path):
            if time.monotonic() > deadline:
                raise TimeoutError(f"recoverLease({path}) did not close the file in time")
            time.sleep(op.get("retry_interval", 1.0))
        return 0
    if kind == "truncate":
        new_len = op["new_len"]
        if not client.truncate(path, new_len):
            deadline = time.monotonic() + op.get("timeout", 60)
            while not (client.info(path) or {}).get("closed"):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"truncate({path}) did not finish in time")
                time.sleep(0.2)
        return new_len
    raise ValueError(f"unknown workload op {kind!r}")


def run_workload(client_id: str, routes: Routes, conf: Config, events: EventLog, ops: list[dict],
                 gate_dir: str | None, seed: int, stop: threading.Event) -> int:
    client = DFSClient(client_id, routes, conf, events)
    client.content = CONTENT_NAME      # the verifier regenerates a write cut mid-way from it
    events.emit("client.start", holder=client.holder)
    content = Content(seed)
    open_streams: list = []
    failed = 0
    for op in ops:
        if op.get("gated") and gate_dir:
            gate = os.path.join(gate_dir, op["id"])
            while not os.path.exists(gate) and not stop.is_set():
                time.sleep(0.01)
        if stop.is_set():
            break
        events.emit("client.op.start", op_id=op["id"], op=op["op"], path=op["path"])
        try:
            n = run_op(client, content, op, open_streams)
            events.emit("client.op.end", op_id=op["id"], op=op["op"], path=op["path"], ok=True,
                        error=None, len=n)
        except Exception as e:
            failed += 1
            events.emit("client.op.end", op_id=op["id"], op=op["op"], path=op["path"], ok=False,
                        error=type(e).__name__, reason=str(e), len=None)
    if open_streams:   # keep the files open, and their lease renewed, until told to stop
        stop.wait()
    client.close()
    return 1 if failed else 0
