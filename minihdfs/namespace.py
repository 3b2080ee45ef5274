"""The NameNode's namespace (FSDirectory) and its persistence: an fsync'd edit log plus a
checkpoint image, so that a restarted NameNode keeps every file, block and open file.

Each edit records the whole new state of one file (or a delete, or the counters), so
replay is a plain fold over the log; the op names are Hadoop's for the reader's sake.
"""

from __future__ import annotations

import json
import os
import posixpath
import threading


def normalize(path: str) -> str:
    if not isinstance(path, str) or not path.startswith("/"):
        raise ValueError(f"path {path!r} must be absolute")
    norm = posixpath.normpath(path)
    return "/" if norm in ("/", "//") else norm


class INodeFile:
    """A file: replication, block size, its block ids, and while open for write the
    under-construction feature (client name and machine)."""

    def __init__(self, path: str, replication: int, block_size: int):
        self.path = path
        self.replication, self.block_size = replication, block_size
        self.blocks: list[int] = []
        self.client_name: str | None = None
        self.client_machine: str | None = None
        self.mtime = 0.0

    @property
    def under_construction(self) -> bool:
        return self.client_name is not None

    def to_record(self, blocks: dict) -> dict:
        return {"path": self.path, "replication": self.replication, "block_size": self.block_size,
                "client_name": self.client_name, "client_machine": self.client_machine,
                "mtime": self.mtime,
                "blocks": [{"block": b, "gs": blocks[b].gs, "len": blocks[b].num_bytes,
                            "state": blocks[b].state} for b in self.blocks]}


class EditLog:
    """Append-only JSON lines, fsync'd before the RPC that made the change returns."""

    def __init__(self, storage: str):
        os.makedirs(storage, exist_ok=True)
        self.path = os.path.join(storage, "edits.log")
        self.image = os.path.join(storage, "fsimage.json")
        self._lock = threading.Lock()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.txid = 0

    def log(self, op: str, **fields) -> None:
        with self._lock:
            self.txid += 1
            line = json.dumps({"txid": self.txid, "op": op, **fields}, separators=(",", ":"))
            os.write(self._fd, (line + "\n").encode())
            os.fsync(self._fd)

    def replay(self) -> tuple[dict | None, list[dict]]:
        """The checkpoint (or None) and the edits after it; a torn last line is dropped."""
        image = None
        if os.path.exists(self.image):
            with open(self.image) as f:
                image = json.load(f)
        edits = []
        with open(self.path, "rb") as f:
            for line in f:
                try:
                    edits.append(json.loads(line))
                except ValueError:
                    break   # a crash in the middle of the last write
        base = image["txid"] if image else 0
        edits = [e for e in edits if e["txid"] > base]
        self.txid = edits[-1]["txid"] if edits else base
        return image, edits

    def checkpoint(self, image: dict) -> None:
        """Save the namespace and start an empty log (done at start-up and at clean stop)."""
        with self._lock:
            image = dict(image, txid=self.txid)
            tmp = self.image + ".tmp"
            with open(tmp, "w") as f:
                json.dump(image, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.image)
            os.ftruncate(self._fd, 0)
            os.fsync(self._fd)

    def close(self) -> None:
        with self._lock:
            os.close(self._fd)
