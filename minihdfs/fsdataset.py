"""A DataNode's replicas, in memory and on disk (Hadoop's FsDatasetImpl and ReplicaInfo).

Layout under the storage folder:
    current/finalized/blk_<id>          data of a FINALIZED replica
    current/finalized/blk_<id>_<gs>.meta its checksums (7-byte header, 4 bytes a chunk)
    current/rbw/...                      replicas being written (RBW), or waiting for
                                         recovery after a restart (RWR), or under it (RUR)
    current/tmp/...                      TEMPORARY replicas (transfer targets)
The GS lives in the meta file's name, so a GS bump is a rename. On start, finalized
replicas load as FINALIZED, rbw ones as RWR (length checked against the checksums),
and tmp is emptied (seed 004). A DataNode shutting down for a restart leaves
`rbw/blk_<id>.restart` (the wall-clock deadline) beside each replica being written: back
before the deadline, that replica loads as RBW, so that its writer can go on with it
(Hadoop's restart meta file, dfs.datanode.restart.replica.expiration).
"""

from __future__ import annotations

import os
import re
import struct
import threading
import time
import zlib
from typing import Callable

from . import wire
from .rpc import (IOExceptionRemote, RecoveryInProgressException,
                  ReplicaAlreadyExistsException, ReplicaNotFoundException)

FINALIZED, RBW, RWR, RUR, TEMPORARY, DELETED = "FINALIZED", "RBW", "RWR", "RUR", "TEMPORARY", "DELETED"
_DIR_OF = {FINALIZED: "finalized", RBW: "rbw", RWR: "rbw", RUR: "rbw", TEMPORARY: "tmp"}
_META_HEADER = struct.Struct(">HBI")  # version, checksum type, bytes per checksum
_META_RE = re.compile(r"^blk_(\d+)_(\d+)\.meta$")
_RESTART_RE = re.compile(r"^blk_(\d+)\.restart$")
STATE_ORDER = {FINALIZED: 3, RBW: 2, RWR: 1}


class ReplicaInfo:
    """One replica: block id, GS, state and lengths; `writer` is the BlockReceiver writing it."""

    def __init__(self, block: int, gs: int, state: str, num_bytes: int, folder: str):
        self.block, self.gs, self.state = block, gs, state
        self.num_bytes = num_bytes          # bytes on disk
        self.bytes_acked = num_bytes        # bytes acked downstream (RBW); visible length
        self.folder = folder
        self.writer = None
        self.recovery_id = 0                # RUR only
        self.original_state = None          # RUR only: the state recovery found

    @property
    def data_path(self) -> str:
        return os.path.join(self.folder, f"blk_{self.block}")

    @property
    def meta_path(self) -> str:
        return os.path.join(self.folder, f"blk_{self.block}_{self.gs}.meta")

    @property
    def visible_length(self) -> int:
        return self.num_bytes if self.state == FINALIZED else self.bytes_acked

    def describe(self) -> dict:
        return {"block": self.block, "gs": self.gs, "len": self.num_bytes, "state": self.state}


class FsDataset:
    """All replicas of one DataNode. Every transition goes through here and is logged."""

    def __init__(self, storage: str, bpc: int, checksum: str, emit: Callable[..., dict]):
        self.storage, self.bpc, self.checksum = storage, bpc, checksum
        self.crc = wire.checksum_fn(checksum)
        self.emit = emit
        self.lock = threading.RLock()
        self.replicas: dict[int, ReplicaInfo] = {}
        self.dirs = {name: os.path.join(storage, "current", name)
                     for name in ("finalized", "rbw", "tmp")}
        for d in self.dirs.values():
            os.makedirs(d, exist_ok=True)

    # -- start-up ----------------------------------------------------------------------

    def load(self) -> None:
        """Rebuild the replica map from disk: finalized -> FINALIZED, rbw -> RWR (RBW if
        saved for a restart and back in time), tmp deleted."""
        for name in os.listdir(self.dirs["tmp"]):
            os.unlink(os.path.join(self.dirs["tmp"], name))
        restart_ok = self._take_restart_markers()
        for dirname, state in (("finalized", FINALIZED), ("rbw", RWR)):
            folder = self.dirs[dirname]
            metas: dict[int, list[int]] = {}
            for name in os.listdir(folder):
                m = _META_RE.match(name)
                if m:
                    metas.setdefault(int(m.group(1)), []).append(int(m.group(2)))
            for block, stamps in metas.items():
                gs = max(stamps)
                for old in stamps:   # a crash during a GS bump can leave two meta files
                    if old != gs:
                        os.unlink(os.path.join(folder, f"blk_{block}_{old}.meta"))
                replica = ReplicaInfo(block, gs, state, 0, folder)
                if not os.path.exists(replica.data_path):
                    os.unlink(replica.meta_path)
                    continue
                if block in self.replicas:   # the finalized copy wins over a stale rbw one
                    self._delete_files(replica)
                    continue
                replica.num_bytes = (os.path.getsize(replica.data_path) if state == FINALIZED
                                     else self._validated_length(replica))
                replica.bytes_acked = replica.num_bytes
                if state == RWR and block in restart_ok:
                    replica.state = RBW
                self.replicas[block] = replica

    def _take_restart_markers(self) -> set[int]:
        """Read and delete the restart markers; the blocks whose deadline has not passed."""
        ok, now = set(), time.time()
        folder = self.dirs["rbw"]
        for name in os.listdir(folder):
            m = _RESTART_RE.match(name)
            if not m:
                continue
            path = os.path.join(folder, name)
            try:
                with open(path) as f:
                    if float(f.read().strip() or 0) > now:
                        ok.add(int(m.group(1)))
            except (OSError, ValueError):
                pass
            os.unlink(path)
        return ok

    def save_for_restart(self, replica: ReplicaInfo, expiration: float) -> bool:
        """Shutdown for restart: mark an RBW replica to load as RBW if back within
        `expiration` seconds (BlockReceiver's restart meta file)."""
        with self.lock:
            if replica.state != RBW or self.replicas.get(replica.block) is not replica:
                return False
            path = os.path.join(self.dirs["rbw"], f"blk_{replica.block}.restart")
            with open(path, "w") as f:
                f.write(f"{time.time() + expiration:.3f}")
            return True

    def _validated_length(self, replica: ReplicaInfo) -> int:
        """Length of an RBW replica after a crash: whole chunks whose checksums match."""
        data_len = os.path.getsize(replica.data_path)
        meta_len = os.path.getsize(replica.meta_path) - _META_HEADER.size
        chunks = min(max(meta_len, 0) // 4, (data_len + self.bpc - 1) // self.bpc)
        length = min(data_len, chunks * self.bpc)
        with open(replica.data_path, "rb") as data, open(replica.meta_path, "rb") as meta:
            while length > 0:
                last = (length - 1) // self.bpc
                data.seek(last * self.bpc)
                chunk = data.read(length - last * self.bpc)
                meta.seek(_META_HEADER.size + 4 * last)
                if self.crc(chunk).to_bytes(4, "big") == meta.read(4):
                    break
                length = last * self.bpc
        self._truncate_files(replica, length)
        return length

    # -- queries -----------------------------------------------------------------------

    def get(self, block: int) -> ReplicaInfo | None:
        with self.lock:
            return self.replicas.get(block)

    def report(self) -> list[dict]:
        with self.lock:
            return [r.describe() for r in self.replicas.values()]

    def replica_crc(self, replica: ReplicaInfo) -> int:
        """CRC32 of the replica's whole data, as final_state.json reports it."""
        crc = 0
        with open(replica.data_path, "rb") as f:
            remaining = replica.num_bytes
            while remaining > 0:
                buf = f.read(min(remaining, 1 << 20))
                if not buf:
                    break
                crc = zlib.crc32(buf, crc)
                remaining -= len(buf)
        return crc

    # -- transitions -------------------------------------------------------------------

    def _log(self, replica: ReplicaInfo, **extra) -> None:
        self.emit("dn.replica.state", block=replica.block, gs=replica.gs,
                  len=replica.num_bytes, state=replica.state, **extra)

    def _new_files(self, replica: ReplicaInfo) -> None:
        with open(replica.data_path, "wb"):
            pass
        with open(replica.meta_path, "wb") as meta:
            meta.write(_META_HEADER.pack(1, wire.CHECKSUM_CRC32 if self.checksum == "CRC32"
                                         else wire.CHECKSUM_CRC32C, self.bpc))

    def create_rbw(self, block: int, gs: int, recreate: bool = False) -> ReplicaInfo:
        """PIPELINE_SETUP_CREATE; `recreate`: a create-stage recovery with a new GS, which
        replaces the older replica its failed setup left (3.4.1 FsDatasetImpl.createRbw)."""
        with self.lock:
            old = self.replicas.get(block)
            if old is not None and recreate and old.gs < gs:
                self._stop_writer(old)
                self._delete_files(old)
                del self.replicas[block]
                old = None
            if old is not None:
                raise ReplicaAlreadyExistsException(
                    f"block {block} already exists in state {old.state} with gs {old.gs}")
            replica = ReplicaInfo(block, gs, RBW, 0, self.dirs["rbw"])
            self._new_files(replica)
            self.replicas[block] = replica
            self._log(replica)
            return replica

    def create_temporary(self, block: int, gs: int) -> ReplicaInfo:
        with self.lock:
            old = self.replicas.get(block)
            if old is not None:
                if old.state == TEMPORARY or old.gs < gs:
                    self._stop_writer(old)
                    self._delete_files(old)
                    del self.replicas[block]
                else:
                    raise ReplicaAlreadyExistsException(
                        f"block {block} already exists in state {old.state} with gs {old.gs}")
            replica = ReplicaInfo(block, gs, TEMPORARY, 0, self.dirs["tmp"])
            self._new_files(replica)
            self.replicas[block] = replica
            self._log(replica)
            return replica

    def append(self, block: int, gs: int, new_gs: int, expected_len: int) -> ReplicaInfo:
        """PIPELINE_SETUP_APPEND: a FINALIZED replica reopens as RBW with the new GS."""
        with self.lock:
            replica = self._require(block, (FINALIZED,))
            if replica.gs != gs or replica.num_bytes != expected_len:
                raise ReplicaNotFoundException(
                    f"append: block {block} has gs {replica.gs} len {replica.num_bytes}, "
                    f"expected gs {gs} len {expected_len}")
            self._move(replica, RBW, new_gs)
            return replica

    def recover_rbw(self, block: int, old_gs: int, new_gs: int, min_bytes: int,
                    max_bytes: int) -> ReplicaInfo:
        """PIPELINE_SETUP_STREAMING_RECOVERY (FsDatasetImpl.recoverRbw): stop the old
        writer; the replica's GS must lie in [old_gs, new_gs], its acked bytes cover
        what the client saw acked (min_bytes) and its bytes received not exceed what the
        client sent (max_bytes); then it keeps its own acked bytes, with the new GS."""
        with self.lock:
            replica = self._require(block, (RBW,))
        self._stop_writer(replica)
        with self.lock:
            if not old_gs <= replica.gs <= new_gs:
                raise ReplicaNotFoundException(
                    f"recover_rbw: block {block} has gs {replica.gs}; expected GS range is "
                    f"[{old_gs}, {new_gs}]")
            if replica.bytes_acked < min_bytes or replica.num_bytes > max_bytes:
                raise ReplicaNotFoundException(
                    f"recover_rbw: unmatched length replica of block {block}: bytes acked "
                    f"{replica.bytes_acked}, received {replica.num_bytes}, not in the range "
                    f"[{min_bytes}, {max_bytes}]")
            # Bytes received but not acked downstream are dropped (the client resends
            # them); what this node acked stays, even beyond the client's own count.
            self._truncate(replica, replica.bytes_acked)
            self._move(replica, RBW, new_gs)
            return replica

    def recover_append(self, block: int, new_gs: int, expected_len: int) -> ReplicaInfo:
        """PIPELINE_SETUP_APPEND_RECOVERY: a FINALIZED or RBW replica becomes RBW, new GS."""
        return self._reopen("recover_append", block, new_gs, expected_len, RBW)

    def recover_close(self, block: int, new_gs: int, expected_len: int) -> ReplicaInfo:
        """PIPELINE_CLOSE_RECOVERY: bump the GS and finalize during pipeline setup."""
        return self._reopen("recover_close", block, new_gs, expected_len, FINALIZED)

    def _reopen(self, op: str, block: int, new_gs: int, expected_len: int, state: str) -> ReplicaInfo:
        with self.lock:
            replica = self._require(block, (FINALIZED, RBW))
        self._stop_writer(replica)
        with self.lock:
            if replica.num_bytes < expected_len:
                raise ReplicaNotFoundException(
                    f"{op}: block {block} has {replica.num_bytes} < {expected_len} bytes")
            self._truncate(replica, expected_len)
            self._move(replica, state, new_gs)
            return replica

    def finalize(self, replica: ReplicaInfo) -> None:
        with self.lock:
            self._require_mapped(replica, "finalize")
            if replica.state != FINALIZED:
                replica.bytes_acked = replica.num_bytes
                self._move(replica, FINALIZED, replica.gs)

    def convert_temporary_to_rbw(self, replica: ReplicaInfo) -> None:
        with self.lock:
            self._require_mapped(replica, "convertTemporaryToRbw")
            replica.bytes_acked = replica.num_bytes
            self._move(replica, RBW, replica.gs)

    def unfinalize_failed(self, replica: ReplicaInfo) -> None:
        """A TEMPORARY replica whose transfer failed is removed at once."""
        with self.lock:
            if replica.state == TEMPORARY and self.replicas.get(replica.block) is replica:
                self._delete_files(replica)
                del self.replicas[replica.block]
                replica.state = DELETED
                self._log(replica)

    def invalidate(self, block: int, gs: int) -> bool:
        """DNA_INVALIDATE (3.x FsDatasetImpl.invalidate): only a replica of exactly this GS
        leaves the map and loses its files; one of another GS stays ("GenerationStamp not
        matched"). Its writer is not stopped: it writes on into the deleted files and
        fails when it finalizes the replica."""
        with self.lock:
            replica = self.replicas.get(block)
            if replica is None:
                return False
            if replica.gs != gs:
                self.emit("dn.replica.invalidate_failed", block=block, gs=gs,
                          replica_gs=replica.gs, state=replica.state,
                          reason="GenerationStamp not matched")
                return False
            self._delete_files(replica)
            del self.replicas[block]
            replica.state = DELETED
            self._log(replica)
            return True

    # -- block recovery (seed 002 initReplicaRecovery, updateReplicaUnderRecovery) ------

    def init_replica_recovery(self, block: int, block_gs: int, recovery_id: int,
                              stop_timeout: float) -> dict:
        with self.lock:
            replica = self.replicas.get(block)
            if replica is None:
                raise ReplicaNotFoundException(f"no replica of block {block}")
        # Stop the writer first: a client that comes back must not write on (seed 000 Q1).
        self._stop_writer(replica, stop_timeout)
        with self.lock:
            if self.replicas.get(block) is not replica:
                raise ReplicaNotFoundException(f"replica of block {block} went away")
            if replica.state != RUR and replica.gs < block_gs:
                raise IOExceptionRemote(
                    f"replica gs {replica.gs} < block gs {block_gs}: an old generation")
            if replica.gs >= recovery_id and replica.state != RUR:
                raise IOExceptionRemote(f"replica gs {replica.gs} >= recovery id {recovery_id}")
            if replica.state == RUR:
                if replica.recovery_id >= recovery_id:
                    raise RecoveryInProgressException(
                        f"recovery {replica.recovery_id} >= {recovery_id} already in progress")
                replica.recovery_id = recovery_id   # a newer recovery replaces the older
            else:
                # a TEMPORARY replica too (FsDatasetImpl.initReplicaRecoveryImpl): its
                # writer stopped, it becomes RUR; the primary leaves it out of the sync
                replica.original_state = replica.state
                replica.recovery_id = recovery_id
                replica.state = RUR
                self._log(replica, recovery_id=recovery_id)
            return {"state": replica.original_state, "len": replica.num_bytes, "gs": replica.gs}

    def update_replica_under_recovery(self, block: int, recovery_id: int, new_len: int) -> dict:
        with self.lock:
            replica = self._require(block, (RUR,))
            if replica.recovery_id != recovery_id:
                raise RecoveryInProgressException(
                    f"replica recovery id {replica.recovery_id} != {recovery_id}")
            if replica.num_bytes < new_len:
                raise IOExceptionRemote(
                    f"replica has {replica.num_bytes} bytes, fewer than the new length {new_len}")
            self._truncate(replica, new_len)
            replica.bytes_acked = new_len
            self._move(replica, FINALIZED, recovery_id)
            return replica.describe()

    # -- internals ---------------------------------------------------------------------

    def _require(self, block: int, states: tuple) -> ReplicaInfo:
        replica = self.replicas.get(block)
        if replica is None or replica.state not in states:
            found = replica.state if replica else "no replica"
            raise ReplicaNotFoundException(
                f"block {block}: expected a replica in state {'/'.join(states)}, found {found}")
        return replica

    def _require_mapped(self, replica: ReplicaInfo, op: str) -> None:
        """A writer's replica that was invalidated meanwhile is no longer in the map:
        Hadoop's getReplicaInfo fails with ReplicaNotFoundException."""
        if self.replicas.get(replica.block) is not replica:
            raise ReplicaNotFoundException(
                f"{op}: replica not found for block {replica.block} gs {replica.gs} "
                f"(deleted while being written)")

    def _stop_writer(self, replica: ReplicaInfo, timeout: float = 60.0) -> None:
        writer = replica.writer
        if writer is not None:
            writer.stop(timeout)
            replica.writer = None

    def _move(self, replica: ReplicaInfo, state: str, gs: int) -> None:
        """Change state and GS: the files move folders and the meta file is renamed."""
        old_data, old_meta = replica.data_path, replica.meta_path
        replica.folder = self.dirs[_DIR_OF[state]]
        replica.gs = gs
        if old_meta != replica.meta_path:
            os.replace(old_meta, replica.meta_path)
        if old_data != replica.data_path:
            os.replace(old_data, replica.data_path)
        replica.state = state
        if state != RUR:
            replica.original_state = None
        self._log(replica)

    def _truncate(self, replica: ReplicaInfo, length: int) -> None:
        if length != replica.num_bytes:
            self._truncate_files(replica, length)
        replica.num_bytes = length
        replica.bytes_acked = min(replica.bytes_acked, length)

    def _truncate_files(self, replica: ReplicaInfo, length: int) -> None:
        os.truncate(replica.data_path, length)
        chunks = (length + self.bpc - 1) // self.bpc
        os.truncate(replica.meta_path, _META_HEADER.size + 4 * chunks)
        if length % self.bpc:
            start = (chunks - 1) * self.bpc
            with open(replica.data_path, "rb") as data:
                data.seek(start)
                crc = self.crc(data.read(length - start))
            with open(replica.meta_path, "r+b") as meta:
                meta.seek(_META_HEADER.size + 4 * (chunks - 1))
                meta.write(crc.to_bytes(4, "big"))

    def _delete_files(self, replica: ReplicaInfo) -> None:
        for path in (replica.data_path, replica.meta_path):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

    # -- data I/O used by BlockReceiver and readers ------------------------------------

    def write_packet(self, replica: ReplicaInfo, data_fd: int, meta_fd: int, offset: int,
                     data: bytes, sums: bytes) -> None:
        """Write a verified packet at `offset`; bytes already on disk are not written again."""
        bpc = self.bpc
        on_disk = replica.num_bytes
        if offset > on_disk:
            raise IOExceptionRemote(f"packet at offset {offset} beyond the {on_disk} bytes on disk")
        skip = on_disk - offset
        if skip >= len(data):
            return
        if skip:
            data, offset = data[skip:], on_disk
        os.pwrite(data_fd, data, offset)
        end = offset + len(data)
        if offset % bpc == 0 and skip == 0:
            # The packet's chunks are the block's chunks: keep the checksums we verified.
            os.pwrite(meta_fd, sums, _META_HEADER.size + 4 * (offset // bpc))
        else:
            first = offset // bpc
            start = first * bpc
            head = os.pread(data_fd, offset - start, start) if offset > start else b""
            new = wire.chunk_checksums(head + bytes(data), bpc, self.crc)
            os.pwrite(meta_fd, new, _META_HEADER.size + 4 * first)
        replica.num_bytes = end

    def read_chunks(self, replica: ReplicaInfo, offset: int, length: int) -> tuple[bytes, bytes, int]:
        """Read whole chunks covering [offset, offset+length): (data, sums, start offset)."""
        bpc = self.bpc
        start = offset - offset % bpc
        with open(replica.data_path, "rb") as f:
            f.seek(start)
            data = f.read(offset + length - start)
        with open(replica.meta_path, "rb") as m:
            m.seek(_META_HEADER.size + 4 * (start // bpc))
            sums = m.read(4 * ((len(data) + bpc - 1) // bpc))
        if len(data) % bpc and start + len(data) < replica.num_bytes:
            # The visible end cuts a chunk whose stored checksum covers more bytes (an RBW
            # replica read while being written): checksum the visible part afresh.
            tail = len(data) - len(data) % bpc
            sums = sums[:4 * (tail // bpc)] + self.crc(data[tail:]).to_bytes(4, "big")
        return data, sums, start

    def open_for_write(self, replica: ReplicaInfo) -> tuple[int, int]:
        return (os.open(replica.data_path, os.O_RDWR | os.O_CREAT),
                os.open(replica.meta_path, os.O_RDWR))
