"""Disk faults on one DataNode's replica files: corrupt a replica, delete a replica.

The mini-HDFS DataNode keeps each replica as two files under its storage folder:
`current/<state>/blk_<block>` (the data) and `current/<state>/blk_<block>_<gs>.meta`
(a 7-byte header, then a 4-byte CRC per checksum chunk), where `<state>` is
`finalized`, `rbw` (being written) or `tmp` (temporary). Apache Hadoop's DataNode keeps
the same two files one block pool deeper, `current/BP-*/current/<state>/`, finalized
replicas further spread over `subdir*/subdir*/`; both layouts are searched. Which block
id a "file and block index" means is the runner's question for the NameNode; faults
take block ids.

Both faults are permanent: heal() does nothing. A checksum error or a missing replica
is exactly what HDFS must detect and repair (re-replication from a good copy), and
putting the bytes back behind its back would hide whether it did.
"""

from __future__ import annotations

import os
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faults.base import Fault, FaultError
from hdfs_contract.events import EventLog

REPLICA_DIRS = ("finalized", "rbw", "tmp")  # searched in this order
_META = re.compile(r"^blk_(\d+)_(\d+)\.meta$")


@dataclass(frozen=True)
class ReplicaFiles:
    """Where one replica of a block lies on a DataNode's disk."""

    block: int
    state_dir: str            # finalized | rbw | tmp
    data: Path
    meta: Path | None         # None if the meta file is missing
    gs: int | None


def _data_files(storage: Path, state_dir: str, block_id: int) -> list[Path]:
    """The data files of `block_id` in one state folder: the mini-HDFS's
    current/<state>/, else Hadoop's current/BP-*/current/<state>/ at any depth."""
    mini = storage / "current" / state_dir / f"blk_{block_id}"
    if mini.is_file():
        return [mini]
    return sorted(p for p in storage.glob(f"current/BP-*/current/{state_dir}/**/blk_{block_id}")
                  if p.is_file())


def find_replicas(storage: str | os.PathLike, block_id: int) -> list[ReplicaFiles]:
    """Every replica of `block_id` under `storage` (normally one), finalized first."""
    found = []
    for state_dir in REPLICA_DIRS:
        for data in _data_files(Path(storage), state_dir, block_id):
            metas = [(int(m.group(2)), entry) for entry in data.parent.iterdir()
                     if (m := _META.match(entry.name)) and int(m.group(1)) == block_id]
            gs, meta = max(metas) if metas else (None, None)  # the newest generation stamp
            found.append(ReplicaFiles(block_id, state_dir, data, meta, gs))
    return found


def _check_block_id(block_id: Any, kind: str) -> int:
    if isinstance(block_id, bool) or not isinstance(block_id, int) or block_id < 0:
        raise ValueError(f"{kind}: block must be a block id (an integer >= 0), "
                         f"got {block_id!r}")
    return block_id


class DiskFault(Fault):
    """A fault on the replica of one block on one DataNode's storage folder."""

    def __init__(self, storage: str | os.PathLike, block_id: int, *, node: str | None = None,
                 log: EventLog | None = None, fault_id: str | None = None):
        super().__init__(fault_id=fault_id, log=log)
        self.storage = Path(storage)
        self.block_id = _check_block_id(block_id, self.kind)
        self.node = node
        self.replicas: list[ReplicaFiles] = []

    @property
    def target(self) -> str:
        return self.node or str(self.storage)

    @property
    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"block": self.block_id, "storage": str(self.storage)}
        if self.replicas:
            out["state_dirs"] = [r.state_dir for r in self.replicas]
            out["gs"] = self.replicas[0].gs
        return out

    def _prepare(self) -> None:
        if not (self.storage / "current").is_dir():
            raise FaultError(f"{self.kind}: {self.storage} is not a DataNode storage folder "
                             f"(no current/ in it)")
        self.replicas = find_replicas(self.storage, self.block_id)
        if not self.replicas:
            where = self.node or str(self.storage)
            raise FaultError(f"{self.kind}: {where} has no replica of block {self.block_id} "
                             f"(looked for blk_{self.block_id} in current/[BP-*/current/]"
                             f"{{{','.join(REPLICA_DIRS)}}})")

    def _undo(self) -> None:
        pass  # permanent by design, see the module docstring


class CorruptReplica(DiskFault):
    """Flips `nbytes` bytes of the replica's data file (never its meta file), at
    positions drawn from `seed`, so the stored CRCs no longer match and a reader or
    the block scanner must report a checksum error. The same seed and file length
    give the same positions. With several replicas of the block on this node (an
    unusual state), the first in finalized, rbw, tmp order is corrupted."""

    kind = "corrupt_replica"

    def __init__(self, storage: str | os.PathLike, block_id: int, *, nbytes: int = 1,
                 seed: int = 0, **kw: Any):
        super().__init__(storage, block_id, **kw)
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 1:
            raise ValueError(f"corrupt_replica: nbytes must be an integer >= 1, got {nbytes!r}")
        self.nbytes, self.seed = nbytes, seed
        self.offsets: list[int] = []

    @property
    def params(self) -> dict[str, Any]:
        return {**super().params, "seed": self.seed, "nbytes": self.nbytes,
                "offsets": self.offsets}

    def _prepare(self) -> None:
        super()._prepare()
        self.replicas = self.replicas[:1]
        size = self.replicas[0].data.stat().st_size
        if size == 0:
            raise FaultError(f"corrupt_replica: replica of block {self.block_id} on "
                             f"{self.target} is empty; there is no byte to corrupt")
        rng = random.Random(f"{self.seed}:{self.block_id}")
        self.offsets = sorted(rng.sample(range(size), min(self.nbytes, size)))

    def _apply(self) -> None:
        with open(self.replicas[0].data, "r+b") as f:
            for offset in self.offsets:
                f.seek(offset)
                byte = f.read(1)
                f.seek(offset)
                f.write(bytes([byte[0] ^ 0xFF]))  # every bit flipped: never a no-op
            f.flush()
            os.fsync(f.fileno())


class DeleteReplica(DiskFault):
    """Deletes the replica's data and meta files, as a lost disk sector or an operator
    mistake would; every copy found under finalized, rbw and tmp goes."""

    kind = "delete_replica"

    def _apply(self) -> None:
        for replica in self.replicas:
            for path in (replica.data, replica.meta):
                if path is not None:
                    try:
                        path.unlink()
                    except FileNotFoundError:
                        pass  # the DataNode moved or removed it meanwhile
