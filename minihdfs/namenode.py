"""The NameNode (Hadoop's FSNamesystem with its BlockManager, DatanodeManager and
LeaseManager monitor): the client and DataNode protocols, block states, lease recovery
(recoverLeaseInternal, internalReleaseLease) and the NameNode side of block recovery.

One namesystem lock guards all state, as in Hadoop; every change is in the edit log
before the RPC returns, and every transition is an event (spec/EVENTS.md).
"""

from __future__ import annotations

import random
import struct
import threading
import time
import traceback

from hdfs_contract.config import Config
from hdfs_contract.events import EventLog
from .leases import Lease, LeaseManager
from .namespace import EditLog, INodeFile, normalize
from .placement import BlockPlacementPolicy
from .rpc import (AlreadyBeingCreatedException, FileAlreadyExistsException,
                  FileNotFoundException, HdfsError, InvalidRequestException, IOExceptionRemote,
                  LeaseExpiredException, NotReplicatedYetException, RecoveryInProgressException,
                  SafeModeException, UnregisteredNodeException)

UNDER_CONSTRUCTION, UNDER_RECOVERY = "UNDER_CONSTRUCTION", "UNDER_RECOVERY"
COMMITTED, COMPLETE, REMOVED = "COMMITTED", "COMPLETE", "REMOVED"
# BlockManagerSafeMode.BMSafeModeStatus
SAFEMODE_OFF, SAFEMODE_PENDING, SAFEMODE_EXTENSION = "OFF", "PENDING_THRESHOLD", "EXTENSION"
SAFEMODE_RECHECK = 1.0   # SafeModeMonitor's recheck interval (Hadoop: 1000 ms)


class BlockInfo:
    """A block as the NameNode knows it: GS, length, state, the expected locations of an
    unfinished block (its pipeline) and the replicas DataNodes reported."""

    def __init__(self, block: int, gs: int, path: str, state: str = UNDER_CONSTRUCTION):
        self.id, self.gs, self.path, self.state = block, gs, path, state
        self.num_bytes = 0
        self.expected: list[str] = []
        self.replicas: dict[str, dict] = {}      # dn -> {state, gs, len}
        self.corrupt: dict[str, str] = {}        # dn -> reason (CorruptReplicasMap)
        self.recovery_id = 0
        self.primary: str | None = None
        self.tried_primaries: set[str] = set()
        self.truncate_len: int | None = None
        self.removed_from: str | None = None     # the state it was removed in (REMOVED)

    def finalized_matching(self) -> list[str]:
        return [dn for dn, r in self.replicas.items()
                if r["state"] == "FINALIZED" and r["gs"] == self.gs and r["len"] == self.num_bytes
                and dn not in self.corrupt]


class DatanodeDescriptor:
    def __init__(self, dn: str, rack: str):
        self.id, self.rack = dn, rack
        self.last_heartbeat = time.monotonic()
        self.stale = self.dead = False
        self.commands: list[dict] = []
        self.invalidate: list[dict] = []
        # 3.x DatanodeDescriptor.recoverBlocks: blocks, each once; commands built at heartbeat
        self.recover: list[BlockInfo] = []


_REPLICA_RECORD = {"block": int, "gs": int, "len": int, "state": str}


def _check_records(op: str, records: list, fields: dict[str, type]) -> None:
    """TypeError (answered as MalformedFrame and logged by the RPC server) naming the
    first record of a DataNode's or reader's report that lacks a field or has one of the
    wrong type: checked before the report changes anything, so a bad one is all refused."""
    for i, r in enumerate(records):
        if not isinstance(r, dict):
            raise TypeError(f"{op}: item {i} must be an object, not {type(r).__name__}")
        for name, want in fields.items():
            value = r.get(name)
            if isinstance(value, bool) or not isinstance(value, want):
                raise TypeError(f"{op}: item {i}: field {name} must be {want.__name__}, "
                                f"not {type(value).__name__}")


class NameNode:
    def __init__(self, node_id: str, conf: Config, storage: str, events: EventLog,
                 seed: int | None = None):
        self.id, self.conf = node_id, conf
        self.events = events
        self.emit = events.emit
        self.lock = threading.RLock()
        self.editlog = EditLog(storage)
        self.files: dict[str, INodeFile] = {}
        self.dirs: set[str] = {"/"}
        self.blocks: dict[int, BlockInfo] = {}
        self.datanodes: dict[str, DatanodeDescriptor] = {}
        self.leases = LeaseManager(conf["lease.soft-limit"], conf["lease.hard-limit"])
        self.placement = BlockPlacementPolicy(random.Random(seed))
        # the redundancy monitor draws from its own seeded stream: whether it found work
        # before an addBlock (a matter of timing) must not change where a seeded run
        # places that block (Hadoop's choices are unseeded; the rules stay the same)
        self.redundancy_placement = BlockPlacementPolicy(
            random.Random(None if seed is None else f"{seed}/redundancy"))
        self.last_gs = 1000
        self.last_block_id = 1073741824       # Hadoop's first block id
        self.pending_replication: dict[tuple[int, str], float] = {}
        # 3.x BlockManager.pendingRecoveryBlocks (HDFS-11576): block id -> when its
        # recovery attempt times out; a new attempt only after that
        self.pending_recovery: dict[int, float] = {}
        self.clock = time.monotonic
        self._stopped = threading.Event()
        self.started = time.monotonic()
        self.deletion_delay = conf["dfs.namenode.startup.delay.block.deletion.sec"]

    # == start, stop, persistence =======================================================

    def start(self) -> None:
        image, edits = self.editlog.replay()
        if image:
            self._load_image(image)
        for edit in edits:
            self._apply_edit(edit)
        restored = [inode for inode in self.files.values() if inode.under_construction]
        self.editlog.checkpoint(self._image())
        self.emit("nn.start", files=len(self.files), blocks=len(self.blocks),
                  open_files=len(restored))
        for inode in restored:
            # seed 004 5: the leases of open files are restored, and logged like any
            # other, so that the one-writer check (L1) holds across a restart
            self.leases.add(inode.client_name, inode.path)
            self.emit("nn.lease.add", holder=inode.client_name, path=inode.path,
                      reason="restart")
        with self.lock:
            self._safemode_activate()
        for target, name in ((self._lease_monitor, "LeaseManager.Monitor"),
                             (self._heartbeat_monitor, "HeartbeatManager"),
                             (self._redundancy_monitor, "RedundancyMonitor")):
            threading.Thread(target=self._guard(target), daemon=True, name=name).start()

    def stop(self) -> None:
        self._stopped.set()
        with self.lock:
            self.editlog.checkpoint(self._image())
            self.emit("nn.stop")

    def _guard(self, fn):
        def run():
            while not self._stopped.is_set():
                try:
                    fn()
                    return
                except Exception:
                    self.emit("nn.internal_error", reason=traceback.format_exc()[-2000:])
                    time.sleep(0.5)
        return run

    def _image(self) -> dict:
        return {"last_gs": self.last_gs, "last_block_id": self.last_block_id,
                "dirs": sorted(self.dirs),
                "files": [f.to_record(self.blocks) for f in self.files.values()]}

    def _load_image(self, image: dict) -> None:
        self.last_gs, self.last_block_id = image["last_gs"], image["last_block_id"]
        self.dirs = set(image["dirs"])
        for rec in image["files"]:
            self._put_file(rec)

    def _apply_edit(self, edit: dict) -> None:
        op = edit["op"]
        if op == "OP_SET_GENSTAMP":
            self.last_gs = max(self.last_gs, edit["gs"])
        elif op == "OP_ALLOCATE_BLOCK_ID":
            self.last_block_id = max(self.last_block_id, edit["block"])
        elif op == "OP_MKDIR":
            self.dirs.add(edit["path"])
        elif op == "OP_DELETE":
            inode = self.files.pop(edit["path"], None)
            for b in inode.blocks if inode else []:
                self.blocks.pop(b, None)
            for d in [d for d in self.dirs if d.startswith(edit["path"].rstrip("/") + "/")]:
                self.dirs.discard(d)
            if edit["path"] in self.dirs and edit["path"] != "/":
                self.dirs.discard(edit["path"])
        elif op == "OP_RENAME":
            self._rename_tree(edit["src"], edit["dst"])
        else:   # OP_ADD, OP_ADD_BLOCK, OP_UPDATE_BLOCKS, OP_CLOSE, OP_REASSIGN_LEASE, ...
            # 3.x FSEditLogLoader OP_APPEND: an append to a new block leaves the last block COMPLETE
            self._put_file(edit["file"], last_complete=bool(edit.get("new_block")))

    def _put_file(self, rec: dict, last_complete: bool = False) -> None:
        old = self.files.get(rec["path"])
        for b in old.blocks if old else []:
            if b not in {x["block"] for x in rec["blocks"]}:
                self.blocks.pop(b, None)
        inode = INodeFile(rec["path"], rec["replication"], rec["block_size"])
        inode.client_name, inode.client_machine = rec["client_name"], rec["client_machine"]
        inode.mtime = rec.get("mtime", 0.0)
        for i, b in enumerate(rec["blocks"]):
            info = self.blocks.get(b["block"]) or BlockInfo(b["block"], b["gs"], rec["path"])
            info.gs, info.num_bytes, info.path = b["gs"], b["len"], rec["path"]
            last = i == len(rec["blocks"]) - 1
            # seed 004 5 (Hadoop's loadINodeFileUnderConstruction): the last block of a
            # file still open is UNDER_CONSTRUCTION, whatever state it was in before
            info.state = UNDER_CONSTRUCTION if inode.under_construction and last \
                and not last_complete else COMPLETE
            self.blocks[b["block"]] = info
            inode.blocks.append(b["block"])
        self.files[rec["path"]] = inode

    def _log_file(self, op: str, inode: INodeFile) -> None:
        self.editlog.log(op, file=inode.to_record(self.blocks))

    def next_gs(self) -> int:
        self.last_gs += 1
        self.editlog.log("OP_SET_GENSTAMP", gs=self.last_gs)
        return self.last_gs

    def _next_block_id(self) -> int:
        self.last_block_id += 1
        self.editlog.log("OP_ALLOCATE_BLOCK_ID", block=self.last_block_id)
        return self.last_block_id

    # == helpers ========================================================================

    def _reject(self, op: str, exc: type, message: str, path: str = None, holder: str = None):
        self.emit("nn.rpc.reject", op=op, path=path, holder=holder, error=exc.__name__,
                  reason=message)
        return exc(message)

    def _set_state(self, info: BlockInfo, state: str) -> None:
        if info.state != state:
            info.state = state
            self.emit("nn.block.state", path=info.path, block=info.id, gs=info.gs,
                      len=info.num_bytes, state=state)

    def _file(self, op: str, path: str, holder: str = None) -> INodeFile:
        inode = self.files.get(path)
        if inode is None:
            raise self._reject(op, FileNotFoundException, f"File does not exist: {path}",
                               path, holder)
        return inode

    def check_lease(self, op: str, path: str, holder: str) -> INodeFile:
        """checkLease (seed 000): the file exists, is open, and `holder` is its writer.
        The soft limit is not checked here: a lease that exists is valid."""
        inode = self.files.get(path)
        if inode is None:
            raise self._reject(op, FileNotFoundException,
                               f"No lease on {path}: File does not exist. Holder {holder} "
                               "does not have any open files.", path, holder)
        if not inode.under_construction:
            raise self._reject(op, LeaseExpiredException,
                               f"No lease on {path}: File is not open for writing. "
                               f"Holder {holder} does not have any open files.", path, holder)
        if inode.client_name != holder:
            raise self._reject(op, LeaseExpiredException,
                               f"No lease on {path}: the lease is held by {inode.client_name}, "
                               f"not {holder}", path, holder)
        return inode

    def _alive(self, dn: str) -> bool:
        d = self.datanodes.get(dn)
        return d is not None and not d.dead

    def _good_targets(self) -> dict[str, str]:
        return {d.id: d.rack for d in self.datanodes.values() if not d.dead and not d.stale}

    def _rack_of(self) -> dict[str, str]:
        return {d.id: d.rack for d in self.datanodes.values()}

    def _file_len(self, inode: INodeFile) -> int:
        return sum(self.blocks[b].num_bytes for b in inode.blocks)

    def _located(self, info: BlockInfo, writer: str = "") -> dict:
        if info.state in (UNDER_CONSTRUCTION, UNDER_RECOVERY):
            locs = [dn for dn in info.expected if self._alive(dn)]
        elif info.state == COMMITTED:
            # seed 004 2.3: a COMMITTED block is readable from its pipeline's replicas,
            # RBW ones included, until enough FINALIZED replicas make it COMPLETE
            locs = [dn for dn in dict.fromkeys(info.finalized_matching() + info.expected)
                    if self._alive(dn) and dn not in info.corrupt]
        else:
            locs = [dn for dn in info.finalized_matching() if self._alive(dn)]
        locs = self.placement.pipeline_order(writer, locs, self._rack_of()) if writer else locs
        return {"block": info.id, "gs": info.gs, "len": info.num_bytes, "state": info.state,
                "locations": locs}

    def _commit_block(self, op: str, inode: INodeFile, last: dict, holder: str) -> None:
        """commitBlock: the client's final length and GS; COMMITTED, then COMPLETE once
        dfs.namenode.replication.min FINALIZED replicas match."""
        info = self.blocks.get(int(last["block"]))
        if info is None or not inode.blocks or info.id not in inode.blocks:
            raise self._reject(op, IOExceptionRemote, f"block {last['block']} is not in {inode.path}",
                               inode.path, holder)
        if info.state in (COMMITTED, COMPLETE):
            if info.gs == last["gs"] and info.num_bytes == last["len"]:
                return
            raise self._reject(op, IOExceptionRemote,
                               f"block {info.id} already committed with gs {info.gs} len "
                               f"{info.num_bytes}", inode.path, holder)
        if info.state == UNDER_RECOVERY:
            # BlockManager.commitOrCompleteLastBlock (HDFS-10240): block recovery owns the
            # block now; a commit would race commitBlockSynchronization and could leave
            # the file closed with a GS no replica has
            raise self._reject(op, IOExceptionRemote,
                               f"Commit or complete block {info.id}_{last['gs']}, whereas it "
                               "is under recovery.", inode.path, holder)
        if info.gs != last["gs"]:
            raise self._reject(op, IOExceptionRemote,
                               f"commit of block {info.id} with gs {last['gs']}, expected {info.gs}",
                               inode.path, holder)
        info.num_bytes = int(last["len"])
        self._set_state(info, COMMITTED)
        self._try_complete(info)

    def _try_complete(self, info: BlockInfo) -> bool:
        if info.state == COMMITTED and \
                len(info.finalized_matching()) >= self.conf["dfs.namenode.replication.min"]:
            self._set_state(info, COMPLETE)
            return True
        return info.state == COMPLETE

    def _finalize_file(self, inode: INodeFile, reason: str) -> None:
        """finalizeINodeFileUnderConstruction: close the file and remove its lease."""
        holder = inode.client_name
        lease = self.leases.get_by_path(inode.path)
        if lease is not None:
            self.leases.remove(lease, inode.path)
            self.emit("nn.lease.remove", holder=lease.holder, path=inode.path, reason=reason)
        inode.client_name = inode.client_machine = None
        inode.mtime = time.time()
        self._log_file("OP_CLOSE", inode)
        self.emit("nn.file.close", path=inode.path, len=self._file_len(inode), reason=reason,
                  holder=holder)

    def _add_lease(self, holder: str, path: str) -> None:
        self.leases.add(holder, path)
        self.emit("nn.lease.add", holder=holder, path=path)

    def _mkdirs(self, path: str) -> None:
        parts = path.strip("/").split("/")
        cur = ""
        for part in parts:
            cur += "/" + part
            if cur in self.files:
                raise FileAlreadyExistsException(f"{cur} is a file")
            if cur not in self.dirs:
                self.dirs.add(cur)
                self.editlog.log("OP_MKDIR", path=cur)

    def _remove_block(self, inode: INodeFile, info: BlockInfo, reason: str) -> None:
        inode.blocks.remove(info.id)
        self.pending_recovery.pop(info.id, None)
        info.removed_from = info.state
        self._set_state(info, REMOVED)
        self._invalidate_all(info)
        self.blocks.pop(info.id, None)

    def _invalidate_all(self, info: BlockInfo) -> None:
        for dn, r in info.replicas.items():
            self._queue_invalidate(dn, info.id, max(r["gs"], info.gs))

    def _queue_invalidate(self, dn: str, block: int, gs: int) -> None:
        if self.safemode_status != SAFEMODE_OFF:
            return   # BlockManager.addToInvalidates: nothing while replication queues are off
        d = self.datanodes.get(dn)
        if d is not None and not any(i["block"] == block for i in d.invalidate):
            d.invalidate.append({"block": block, "gs": gs})
            self.emit("nn.replica.invalidate", dn=dn, block=block, gs=gs)

    # == client protocol ================================================================

    def rpc_create(self, path: str, holder: str, client_machine: str = "", overwrite: bool = False,
                   replication: int = 0, block_size: int = 0) -> dict:
        path = normalize(path)
        with self.lock:
            self._check_safe_mode("create", "Cannot create file" + path, path, holder)
            replication = replication or self.conf["dfs.replication"]
            block_size = block_size or self.conf["dfs.blocksize"]
            if block_size % self.conf["dfs.bytes-per-checksum"]:
                raise self._reject("create", InvalidRequestException,
                                   "block size must be a multiple of bytes per checksum", path, holder)
            if path in self.dirs:
                raise self._reject("create", FileAlreadyExistsException, f"{path} is a directory",
                                   path, holder)
            inode = self.files.get(path)
            if inode is not None:
                # FSDirWriteFileOp.startFile: overwrite deletes the file (and its lease),
                # open or not; otherwise an open file goes through recoverLeaseInternal
                if not overwrite:
                    if inode.under_construction:
                        self.recover_lease_internal("create", inode, holder, force=False)
                    raise self._reject("create", FileAlreadyExistsException,
                                       f"{path} for client {holder} already exists", path, holder)
                self._delete_file(inode)
            self._mkdirs(posixpath_dirname(path))
            inode = INodeFile(path, int(replication), int(block_size))
            inode.client_name, inode.client_machine = holder, client_machine
            inode.mtime = time.time()
            self.files[path] = inode
            self._log_file("OP_ADD", inode)
            self._add_lease(holder, path)
            self.emit("nn.file.create", path=path, holder=holder, replication=inode.replication,
                      block_size=inode.block_size)
            return {"path": path, "replication": inode.replication, "block_size": inode.block_size}

    def rpc_append(self, path: str, holder: str, client_machine: str = "",
                   new_block: bool = False) -> dict:
        path = normalize(path)
        with self.lock:
            self._check_safe_mode("append", "Cannot append to file" + path, path, holder)
            inode = self._take_over("append", path, holder)
            if inode.blocks and self.blocks[inode.blocks[-1]].state != COMPLETE:
                raise self._reject("append", IOExceptionRemote,
                                   f"the last block of {path} is not COMPLETE", path, holder)
            inode.client_name, inode.client_machine = holder, client_machine
            last = previous = None
            if inode.blocks:
                info = self.blocks[inode.blocks[-1]]
                if new_block:
                    # 3.x FSDirAppendOp.prepareFileForAppend (newBlock): the last block stays
                    # COMPLETE, however partial; it is the previous block of the next addBlock
                    previous = {"block": info.id, "gs": info.gs, "len": info.num_bytes}
                elif info.num_bytes < inode.block_size:
                    # seed 004: append turns a COMPLETE last block back into UNDER_CONSTRUCTION
                    info.expected = [dn for dn in info.finalized_matching() if self._alive(dn)]
                    self._set_state(info, UNDER_CONSTRUCTION)
                    last = self._located(info, client_machine)
            self.editlog.log("OP_APPEND", file=inode.to_record(self.blocks), new_block=new_block)
            self._add_lease(holder, path)
            self.emit("nn.file.append", path=path, holder=holder, len=self._file_len(inode),
                      new_block=new_block)
            return {"path": path, "replication": inode.replication, "block_size": inode.block_size,
                    "len": self._file_len(inode), "last_block": last, "previous_block": previous}

    def _take_over(self, op: str, path: str, holder: str) -> INodeFile:
        """The file for an append or truncate: if another writer holds it, its lease must
        be recoverable (recoverLeaseInternal) and the file closed by now."""
        inode = self._file(op, path, holder)
        if inode.under_construction:
            self.recover_lease_internal(op, inode, holder, force=False)
            if inode.under_construction:
                raise self._reject(op, RecoveryInProgressException,
                                   f"lease recovery of {path} is in progress", path, holder)
        return inode

    def rpc_addBlock(self, path: str, holder: str, previous: dict | None = None,
                     excluded: list | None = None) -> dict:
        path = normalize(path)
        with self.lock:
            # FSDirWriteFileOp.analyzeFileState: refused before the lease is looked at
            self._check_safe_mode("addBlock", "Cannot add block to " + path, path, holder)
            inode = self.check_lease("addBlock", path, holder)
            if previous is not None:
                last = self.blocks.get(inode.blocks[-1]) if inode.blocks else None
                if last is None or last.id != int(previous["block"]):
                    raise self._reject("addBlock", IOExceptionRemote,
                                       f"previous block {previous['block']} is not the last block",
                                       path, holder)
            elif inode.blocks and self.blocks[inode.blocks[-1]].state not in (COMPLETE, COMMITTED):
                raise self._reject("addBlock", IOExceptionRemote,
                                   "addBlock without the previous block", path, holder)
            # checkFileProgress: the penultimate block must be COMPLETE
            # 3.x FSDirWriteFileOp.validateAddBlock: checked before storeAllocatedBlock commits
            # `previous`, so a refused addBlock leaves the last block UNDER_CONSTRUCTION
            if len(inode.blocks) >= 2 and self.blocks[inode.blocks[-2]].state != COMPLETE:
                raise self._reject("addBlock", NotReplicatedYetException,
                                   f"Not replicated yet: {path}", path, holder)
            if previous is not None:
                self._commit_block("addBlock", inode, previous, holder)
            for b in inode.blocks:
                self._try_complete(self.blocks[b])
            writer = inode.client_machine or ""
            targets = self.placement.choose_targets(writer, inode.replication,
                                                    self._good_targets(),
                                                    excluded=set(excluded or []))
            if len(targets) < self.conf["dfs.namenode.replication.min"]:
                raise self._reject("addBlock", IOExceptionRemote,
                                   f"File {path} could only be written to {len(targets)} of the "
                                   f"{self.conf['dfs.namenode.replication.min']} minReplication "
                                   f"nodes; excluded: {sorted(excluded or [])}", path, holder)
            targets = self.placement.pipeline_order(writer, targets, self._rack_of())
            info = BlockInfo(self._next_block_id(), self.next_gs(), path)
            info.expected = targets
            self.blocks[info.id] = info
            inode.blocks.append(info.id)
            self._log_file("OP_ADD_BLOCK", inode)
            self.emit("nn.block.allocate", path=path, block=info.id, gs=info.gs, pipeline=targets,
                      holder=holder, excluded=sorted(excluded or []))
            self.emit("nn.block.state", path=path, block=info.id, gs=info.gs, len=0,
                      state=UNDER_CONSTRUCTION)
            return self._located(info)

    def rpc_abandonBlock(self, path: str, holder: str, block: int) -> bool:
        path = normalize(path)
        with self.lock:
            self._check_safe_mode("abandonBlock", f"Cannot abandon block {block} for file" + path,
                                  path, holder)
            inode = self.check_lease("abandonBlock", path, holder)
            info = self.blocks.get(int(block))
            if info is None or not inode.blocks or inode.blocks[-1] != info.id:
                return True
            self.emit("nn.block.abandon", path=path, block=info.id, gs=info.gs, holder=holder)
            self._remove_block(inode, info, "abandon")
            self._log_file("OP_UPDATE_BLOCKS", inode)
            return True

    def rpc_getAdditionalDatanode(self, path: str, holder: str, block: int, existing: list,
                                  excluded: list, num: int = 1) -> dict:
        path = normalize(path)
        with self.lock:
            self._check_safe_mode("getAdditionalDatanode",
                                  f"Cannot add datanode; src={path}, blk={block}", path, holder)
            inode = self.check_lease("getAdditionalDatanode", path, holder)
            info = self.blocks.get(int(block))
            if info is None:
                raise self._reject("getAdditionalDatanode", IOExceptionRemote,
                                   f"unknown block {block}", path, holder)
            writer = inode.client_machine or ""
            new = self.placement.choose_targets(writer, int(num), self._good_targets(),
                                                chosen=list(existing), excluded=set(excluded),
                                                rack_of=self._rack_of())
            if not new:
                raise self._reject("getAdditionalDatanode", IOExceptionRemote,
                                   f"no DataNode left to add to the pipeline of block {block}",
                                   path, holder)
            nodes = self.placement.pipeline_order(writer, list(existing) + new, self._rack_of())
            return {"block": info.id, "gs": info.gs, "locations": nodes, "new": new}

    def rpc_updateBlockForPipeline(self, block: int, holder: str) -> dict:
        with self.lock:
            self._check_safe_mode("updateBlockForPipeline", "Cannot get a new generation stamp "
                                  f"and an access token for block {block}", None, holder)
            info = self.blocks.get(int(block))
            if info is None:
                raise self._reject("updateBlockForPipeline", IOExceptionRemote,
                                   f"unknown block {block}", None, holder)
            self.check_lease("updateBlockForPipeline", info.path, holder)
            if info.state != UNDER_CONSTRUCTION:
                raise self._reject("updateBlockForPipeline", IOExceptionRemote,
                                   f"block {block} is {info.state}, not UNDER_CONSTRUCTION",
                                   info.path, holder)
            return {"block": info.id, "gs": self.next_gs(), "len": info.num_bytes}

    def rpc_updatePipeline(self, holder: str, old_block: dict, new_block: dict,
                           new_nodes: list) -> bool:
        with self.lock:
            self._check_safe_mode("updatePipeline", "Pipeline not updated", None, holder)
            info = self.blocks.get(int(old_block["block"]))
            if info is None:
                raise self._reject("updatePipeline", IOExceptionRemote,
                                   f"unknown block {old_block['block']}", None, holder)
            inode = self.check_lease("updatePipeline", info.path, holder)
            if info.state != UNDER_CONSTRUCTION:
                raise self._reject("updatePipeline", IOExceptionRemote,
                                   f"block {info.id} is {info.state}", info.path, holder)
            if new_block["gs"] <= info.gs or new_block["gs"] > self.last_gs:
                raise self._reject("updatePipeline", IOExceptionRemote,
                                   f"update of block {info.id} from gs {info.gs} to "
                                   f"{new_block['gs']} is not allowed", info.path, holder)
            if int(new_block["len"]) < info.num_bytes:
                # 3.x FSNamesystem.updatePipelineInternal: a block never shrinks here
                raise self._reject("updatePipeline", IOExceptionRemote,
                                   f"Update blk_{info.id}_{old_block['gs']} (size={info.num_bytes}) "
                                   f"to a smaller size block blk_{info.id}_{new_block['gs']} "
                                   f"(size={new_block['len']})", info.path, holder)
            old_gs = info.gs
            info.gs, info.num_bytes = int(new_block["gs"]), int(new_block["len"])
            info.expected = list(new_nodes)
            self._log_file("OP_UPDATE_BLOCKS", inode)
            self.emit("nn.block.gs_bump", block=info.id, old_gs=old_gs, gs=info.gs,
                      reason="pipeline", path=info.path)
            self.emit("nn.block.update_pipeline", block=info.id, old_gs=old_gs, gs=info.gs,
                      pipeline=list(new_nodes), path=info.path, len=info.num_bytes,
                      holder=holder)
            return True

    def rpc_fsync(self, path: str, holder: str, last_block_len: int = -1) -> bool:
        path = normalize(path)
        with self.lock:
            self._check_safe_mode("fsync", "Cannot fsync file " + path, path, holder)
            inode = self.check_lease("fsync", path, holder)
            info = self.blocks[inode.blocks[-1]] if inode.blocks else None
            if info is not None and info.state == UNDER_CONSTRUCTION \
                    and last_block_len > info.num_bytes:
                info.num_bytes = int(last_block_len)
                self._log_file("OP_UPDATE_BLOCKS", inode)
            self.emit("nn.file.fsync", path=path, holder=holder,
                      block=info.id if info else None, len=info.num_bytes if info else None)
            return True

    def rpc_complete(self, path: str, holder: str, last: dict | None = None) -> bool:
        path = normalize(path)
        with self.lock:
            self._check_safe_mode("complete", "Cannot complete file " + path, path, holder)
            inode = self.files.get(path)
            if inode is not None and not inode.under_construction and last is not None \
                    and inode.blocks and self._is_complete_retry(inode, last):
                # HDFS-3031: a retried complete of an already closed file succeeds
                self.emit("nn.file.complete", path=path, holder=holder, ok=True, retry=True)
                return True
            inode = self.check_lease("complete", path, holder)
            if last is not None:
                self._commit_block("complete", inode, last, holder)
            elif inode.blocks:
                self._try_complete(self.blocks[inode.blocks[-1]])
            ok = all(self.blocks[b].state == COMPLETE for b in inode.blocks)
            self.emit("nn.file.complete", path=path, holder=holder, ok=ok)
            if ok:
                self._finalize_file(inode, "complete")
            return ok

    def _is_complete_retry(self, inode, last: dict) -> bool:
        """Is this complete() of a closed file a retry of one that went through? Only if
        the client's last block is the file's last block with the same id and GS
        (completeFileInternal's Block.matchingIdAndGenStamp; the length is not compared):
        after a block recovery the GS is bumped, so a writer whose lease was recovered
        is refused, not told its write succeeded."""
        info = self.blocks[inode.blocks[-1]]
        return info.id == int(last["block"]) and info.gs == int(last.get("gs", -1))

    def rpc_renewLease(self, holder: str) -> bool:
        """LeaseManager.renewLease: the holder's lease, if it has one, is renewed; a
        holder without one (its lease was recovered or handed to another client) is not
        refused, as in HDFS: it learns of the loss at its next addBlock or complete."""
        with self.lock:
            self._check_safe_mode("renewLease", "Cannot renew lease for " + holder, None, holder)
            lease = self.leases.get(holder)
            if lease is not None:
                self.leases.renew(lease)
                self.emit("nn.lease.renew", holder=holder)
            return True

    def rpc_recoverLease(self, path: str, holder: str) -> bool:
        """recoverLease: true if the file is closed, false if recovery started."""
        path = normalize(path)
        with self.lock:
            self._check_safe_mode("recoverLease", "Cannot recover the lease of " + path, path,
                                  holder)
            inode = self._file("recoverLease", path, holder)
            if not inode.under_construction:
                return True
            return self.recover_lease_internal("recoverLease", inode, holder, force=True)

    def rpc_truncate(self, path: str, new_len: int, holder: str, client_machine: str = "") -> bool:
        """truncate (seed 000): on a block boundary at once; inside a block through block
        recovery with the new length, the file staying open until it commits."""
        path = normalize(path)
        with self.lock:
            self._check_safe_mode("truncate", "Cannot truncate for " + path, path, holder)
            inode = self._take_over("truncate", path, holder)
            length = self._file_len(inode)
            if new_len < 0 or new_len > length:
                raise self._reject("truncate", InvalidRequestException,
                                   f"cannot truncate {path} of {length} bytes to {new_len}",
                                   path, holder)
            start = 0
            keep: list[int] = []
            cut: BlockInfo | None = None
            for b in list(inode.blocks):
                info = self.blocks[b]
                if start + info.num_bytes <= new_len:
                    keep.append(b)
                elif start < new_len:
                    keep.append(b)
                    cut = info
                else:
                    self._remove_block(inode, info, "truncate")
                start += info.num_bytes
            if cut is None:
                self._log_file("OP_TRUNCATE", inode)
                self.emit("nn.file.truncate", path=path, len=new_len, ok=True)
                return True
            block_start = new_len - sum(self.blocks[b].num_bytes for b in inode.blocks
                                        if b != cut.id and inode.blocks.index(b)
                                        < inode.blocks.index(cut.id))
            inode.client_name, inode.client_machine = holder, client_machine
            self._add_lease(holder, path)
            cut.expected = [dn for dn in cut.finalized_matching() if self._alive(dn)]
            cut.truncate_len = block_start
            self._set_state(cut, UNDER_CONSTRUCTION)
            self._log_file("OP_TRUNCATE", inode)
            self.emit("nn.file.truncate", path=path, len=new_len, ok=False)
            # 3.x FSDirTruncateOp.prepareFileForTruncate: no BlockManager.addBlockRecoveryAttempt
            self._initialize_block_recovery(cut)
            return False

    def rpc_getFileInfo(self, path: str) -> dict | None:
        path = normalize(path)
        with self.lock:
            if path in self.dirs:
                return {"path": path, "type": "dir"}
            inode = self.files.get(path)
            if inode is None:
                return None
            return {"path": path, "type": "file", "len": self._file_len(inode),
                    "closed": not inode.under_construction, "holder": inode.client_name,
                    "replication": inode.replication, "block_size": inode.block_size,
                    "mtime": inode.mtime}

    def rpc_getListing(self, path: str) -> list[dict]:
        path = normalize(path)
        with self.lock:
            if path in self.files:
                return [self.rpc_getFileInfo(path)]
            if path not in self.dirs:
                raise FileNotFoundException(f"{path} does not exist")
            prefix = path.rstrip("/") + "/"
            children = {p for p in list(self.dirs) + list(self.files)
                        if p.startswith(prefix) and "/" not in p[len(prefix):] and p != path}
            return [self.rpc_getFileInfo(p) for p in sorted(children)]

    def rpc_getBlockLocations(self, path: str, client_machine: str = "") -> dict:
        path = normalize(path)
        with self.lock:
            inode = self._file("getBlockLocations", path)
            blocks, offset = [], 0
            for b in inode.blocks:
                loc = self._located(self.blocks[b], client_machine)
                loc["offset"] = offset
                offset += loc["len"]
                blocks.append(loc)
            self._check_safe_mode_locations(path, blocks)
            return {"path": path, "len": offset, "under_construction": inode.under_construction,
                    "blocks": blocks}

    def rpc_delete(self, path: str, recursive: bool = False) -> bool:
        path = normalize(path)
        with self.lock:
            self._check_safe_mode("delete", "Cannot delete " + path, path)
            if path in self.files:
                self._delete_file(self.files[path])
                return True
            if path in self.dirs and path != "/":
                prefix = path.rstrip("/") + "/"
                below = [p for p in self.files if p.startswith(prefix)]
                subdirs = [d for d in self.dirs if d.startswith(prefix)]
                if (below or subdirs) and not recursive:
                    raise IOExceptionRemote(f"{path} is not empty")
                for p in below:
                    self._delete_file(self.files[p])
                self.dirs.difference_update(subdirs + [path])
                self.editlog.log("OP_DELETE", path=path)
                return True
            return False

    def _delete_file(self, inode: INodeFile) -> None:
        lease = self.leases.get_by_path(inode.path)
        if lease is not None:
            self.leases.remove(lease, inode.path)
            self.emit("nn.lease.remove", holder=lease.holder, path=inode.path, reason="delete")
        for b in list(inode.blocks):
            self._remove_block(inode, self.blocks[b], "delete")
        del self.files[inode.path]
        self.editlog.log("OP_DELETE", path=inode.path)
        self.emit("nn.file.delete", path=inode.path)

    def rpc_rename(self, src: str, dst: str) -> bool:
        src, dst = normalize(src), normalize(dst)
        with self.lock:
            self._check_safe_mode("rename", "Cannot rename " + src, src)
            if src not in self.files and src not in self.dirs:
                raise FileNotFoundException(f"{src} does not exist")
            if dst in self.dirs and src in self.files:
                dst = dst.rstrip("/") + "/" + src.rsplit("/", 1)[1]
            if dst in self.files or dst in self.dirs:
                raise FileAlreadyExistsException(f"{dst} already exists")
            self._mkdirs(posixpath_dirname(dst))
            self._rename_tree(src, dst)
            self.leases.change_path(src, dst)
            self.editlog.log("OP_RENAME", src=src, dst=dst)
            self.emit("nn.file.rename", path=src, dst=dst)
            return True

    def _rename_tree(self, src: str, dst: str) -> None:
        prefix = src.rstrip("/") + "/"
        for p in [p for p in self.files if p == src or p.startswith(prefix)]:
            inode = self.files.pop(p)
            inode.path = dst + p[len(src):]
            self.files[inode.path] = inode
            for b in inode.blocks:
                self.blocks[b].path = inode.path
        for d in [d for d in self.dirs if d == src or d.startswith(prefix)]:
            self.dirs.discard(d)
            self.dirs.add(dst + d[len(src):])

    def rpc_getDatanodeReport(self) -> list[dict]:
        with self.lock:
            now = time.monotonic()
            return [{"dn": d.id, "rack": d.rack,
                     "state": "dead" if d.dead else "stale" if d.stale else "live",
                     "last_heartbeat_age": round(now - d.last_heartbeat, 3),
                     "blocks": sum(1 for b in self.blocks.values() if d.id in b.replicas)}
                    for d in sorted(self.datanodes.values(), key=lambda d: d.id)]

    def rpc_reportBadBlocks(self, blocks: list[dict]) -> bool:
        """A reader found a corrupt replica: it no longer counts, and is replaced."""
        _check_records("reportBadBlocks", blocks, {"block": int, "dn": str})
        with self.lock:
            for item in blocks:
                info = self.blocks.get(int(item["block"]))
                if info is None or item["dn"] not in info.replicas:
                    continue
                # the reader's block carries the stored GS (BlockManager.findAndMarkBlockAsCorrupt)
                self._mark_corrupt(info, item["dn"], info.gs, item.get("reason", "checksum"))
            return True

    def _live_replicas(self, info: BlockInfo) -> list[str]:
        """NumberReplicas.liveReplicas: FINALIZED, matching, not corrupt, on a live node."""
        return [dn for dn in info.finalized_matching() if self._alive(dn)]

    def _mark_corrupt(self, info: BlockInfo, dn: str, gs: int, reason: str) -> None:
        """The replica on `dn` is corrupt: it no longer counts, and is deleted at once only
        if the block can spare it; otherwise it stays (excluded as a copy target) until
        the block is back at its replication (_invalidate_corrupt_replicas)."""
        if dn not in info.corrupt:
            self.emit("nn.replica.corrupt", dn=dn, block=info.id, gs=gs, reason=reason)
        info.corrupt[dn] = reason   # CorruptReplicasMap.addToCorruptReplicasMap: add or update
        inode = self.files.get(info.path)
        if inode is None:
            self._queue_invalidate(dn, info.id, gs)
            return
        live = len(self._live_replicas(info))
        corrupt = sum(1 for c in info.corrupt if c in info.replicas and self._alive(c))
        min_ok = live >= self.conf["dfs.namenode.replication.min"]
        # 3.x BlockManager.markBlockAsCorrupt: enough live, live + corrupt > replication, or older GS
        if live >= inode.replication or (min_ok and live + corrupt > inode.replication) \
                or (min_ok and info.gs > gs):
            self._queue_invalidate(dn, info.id, gs)

    def _invalidate_corrupt_replicas(self, info: BlockInfo) -> None:
        """A replica was added: once the block has its replication of live replicas, its
        corrupt replicas are deleted."""
        inode = self.files.get(info.path)
        if not info.corrupt or inode is None:
            return
        # 3.x BlockManager.addStoredBlock: invalidateCorruptReplicas once numLiveReplicas >= replication
        if len(self._live_replicas(info)) >= inode.replication:
            for dn in sorted(info.corrupt):
                if dn in info.replicas:
                    self._queue_invalidate(dn, info.id, info.replicas[dn]["gs"])

    def rpc_getClusterState(self) -> dict:
        """Files with their blocks and leases, for fsck and final_state.json."""
        with self.lock:
            files = []
            for inode in sorted(self.files.values(), key=lambda f: f.path):
                files.append({
                    "path": inode.path, "closed": not inode.under_construction,
                    "len": self._file_len(inode), "holder": inode.client_name,
                    "replication": inode.replication,
                    "blocks": [{"block": b, "gs": self.blocks[b].gs, "len": self.blocks[b].num_bytes,
                                "state": self.blocks[b].state,
                                "locations": self._located(self.blocks[b])["locations"],
                                "replicas": {dn: dict(r) for dn, r in self.blocks[b].replicas.items()},
                                "corrupt": sorted(self.blocks[b].corrupt)}
                               for b in inode.blocks]})
            leases = [{"holder": lease.holder, "paths": sorted(lease.paths)}
                      for lease in self.leases.sorted_leases()]
            pending = {"invalidate": sum(len(d.invalidate) for d in self.datanodes.values()),
                       "replication": len(self.pending_replication),
                       "recovery": sum(len(d.recover) for d in self.datanodes.values())}
            return {"files": files, "leases": leases, "datanodes": self.rpc_getDatanodeReport(),
                    "pending": pending}

    # == lease recovery =================================================================

    def recover_lease_internal(self, op: str, inode: INodeFile, holder: str, force: bool) -> bool:
        """recoverLeaseInternal (seed 002): what a create, append, truncate or recoverLease
        by `holder` does to a file another writer may still hold."""
        path = inode.path
        lease = self.leases.get(holder)
        if not force and lease is not None and self.leases.get_by_path(path) is lease:
            self._log_recover(path, holder, inode.client_name, force, "error",
                              "AlreadyBeingCreatedException")
            raise self._reject(op, AlreadyBeingCreatedException,
                               f"Failed to {op} {path} for {holder}: {holder} is already the "
                               "current lease holder.", path, holder)
        original = self.leases.get(inode.client_name)
        if original is None:
            self._log_recover(path, holder, inode.client_name, force, "error",
                              "AlreadyBeingCreatedException")
            raise self._reject(op, AlreadyBeingCreatedException,
                               f"Failed to {op} {path}: the file is under construction but no "
                               "leases found.", path, holder)
        if force:
            closed = self._release(original, path, holder, requester=holder, force=True)
            return closed
        if self.leases.expired_soft(original):
            self.emit("nn.lease.expired", holder=original.holder, limit="soft", path=path)
            if self._release(original, path, None, requester=holder, force=False):
                return True
            raise self._reject(op, RecoveryInProgressException,
                               f"Failed to {op} {path} for {holder}: lease recovery is in "
                               "progress. Try again later.", path, holder)
        last = self.blocks.get(inode.blocks[-1]) if inode.blocks else None
        if last is not None and last.state == UNDER_RECOVERY:
            self._log_recover(path, holder, inode.client_name, force, "error",
                              "RecoveryInProgressException")
            raise self._reject(op, RecoveryInProgressException,
                               f"Failed to {op} {path} for {holder}: another recovery is in "
                               f"progress by {inode.client_name}", path, holder)
        self._log_recover(path, holder, inode.client_name, force, "error",
                          "AlreadyBeingCreatedException")
        raise self._reject(op, AlreadyBeingCreatedException,
                           f"Failed to {op} {path} for {holder}: this file lease is currently "
                           f"owned by {inode.client_name}", path, holder)

    def _log_recover(self, path, requester, holder, force, result, error=None) -> None:
        self.emit("nn.lease.recover", path=path, holder=holder, requester=requester,
                  force=force, result=result, error=error)

    def _release(self, lease: Lease, path: str, new_holder: str | None, requester: str,
                 force: bool) -> bool:
        old_holder = lease.holder
        try:
            closed = self.internal_release_lease(lease, path, new_holder)
        except HdfsError as e:
            self._log_recover(path, requester, old_holder, force, "error", type(e).__name__)
            raise
        self._log_recover(path, requester, old_holder, force,
                          "closed" if closed else "recovering")
        return closed

    def internal_release_lease(self, lease: Lease, path: str, new_holder: str | None) -> bool:
        """internalReleaseLease (seed 000): close the file if its blocks allow, else start
        block recovery of the last block. True if the file was closed."""
        inode = self.files.get(path)
        if inode is None or not inode.under_construction:
            self.leases.remove(lease, path)
            self.emit("nn.lease.remove", holder=lease.holder, path=path, reason="not_open")
            return True
        infos = [self.blocks[b] for b in inode.blocks]
        complete = sum(1 for b in infos if b.state == COMPLETE)
        if complete == len(infos):
            self._finalize_file(inode, "lease_recovery")
            return True
        last = infos[-1]
        penultimate = infos[-2] if len(infos) >= 2 else None
        if complete < len(infos) - 2 or (complete == len(infos) - 2 and penultimate.state != COMMITTED):
            raise IOExceptionRemote(f"internalReleaseLease: {path} has incomplete blocks "
                                    "before the last two")
        min_rep = self.conf["dfs.namenode.replication.min"]
        pen_ok = penultimate is None or len(penultimate.finalized_matching()) >= min_rep
        if last.state == COMMITTED:
            if pen_ok and len(last.finalized_matching()) >= min_rep:
                for b in infos:
                    self._try_complete(b)
                self._finalize_file(inode, "lease_recovery")
                return True
            if pen_ok and last.num_bytes == 0:
                # 3.x FSNamesystem.internalReleaseLease (HDFS-14498): an empty COMMITTED
                # last block without replicas is dropped and the file closed
                for b in infos[:-1]:
                    self._try_complete(b)
                self._remove_block(inode, last, "empty")
                self._finalize_file(inode, "lease_recovery")
                return True
            if not pen_ok:
                raise AlreadyBeingCreatedException(
                    f"Failed to release lease for file {path}. Committed blocks are waiting "
                    "to be minimally replicated. Try again later.")
            # 3.x FSNamesystem.internalReleaseLease: "Intentionally fall through" to block
            # recovery, as for an UNDER_CONSTRUCTION last block
        # UNDER_CONSTRUCTION or UNDER_RECOVERY (or COMMITTED, above)
        if not last.expected:
            last.expected = [dn for dn, r in last.replicas.items() if r["gs"] >= last.gs]
        if not last.expected and last.num_bytes == 0:
            # no DataNode ever reported the block: the client died before writing to it
            self._remove_block(inode, last, "empty")
            self._finalize_file(inode, "lease_recovery")
            return True
        lease = self._reassign_lease(lease, path, new_holder, inode)
        # 3.x BlockManager.addBlockRecoveryAttempt: one recovery of a block at a time;
        # until it times out a new request changes only the lease holder
        if self._add_block_recovery_attempt(last):
            self._initialize_block_recovery(last)
        self.leases.renew(lease)
        self.emit("nn.lease.renew", holder=lease.holder, path=path, reason="lease_recovery")
        return False

    @property
    def block_recovery_timeout(self) -> float:
        """BlockManager.getBlockRecoveryTimeout: 30 x the heartbeat interval, which
        Hadoop reads in whole seconds (300 ms is 0 s: no wait)."""
        return self.conf.heartbeat_seconds * 30

    def _add_block_recovery_attempt(self, info: BlockInfo) -> bool:
        """PendingRecoveryBlocks.add: True (and the attempt recorded) if no recovery of
        the block is pending or the pending one has timed out."""
        now = self.clock()
        timeout_at = self.pending_recovery.get(info.id)
        if timeout_at is not None and now <= timeout_at:
            return False
        self.pending_recovery[info.id] = now + self.block_recovery_timeout
        return True

    def _reassign_lease(self, lease: Lease, path: str, new_holder: str | None,
                        inode: INodeFile) -> Lease:
        if new_holder is None or new_holder == lease.holder:
            return lease
        old = lease.holder
        lease = self.leases.reassign(lease, path, new_holder)
        inode.client_name = new_holder
        self._log_file("OP_REASSIGN_LEASE", inode)
        self.emit("nn.lease.reassign", path=path, old_holder=old, holder=new_holder)
        return lease

    def _initialize_block_recovery(self, info: BlockInfo) -> None:
        """Section 3 steps 1-2: a recovery id from a new GS, UNDER_RECOVERY, a primary."""
        old_gs = info.gs
        info.recovery_id = self.next_gs()
        self._set_state(info, UNDER_RECOVERY)
        locations, alive, fresh, send = self._recovery_locations(info)
        candidates = [dn for dn in (fresh or alive) if dn not in info.tried_primaries] \
            or fresh or alive
        if not candidates:
            info.primary = None
            self.emit("nn.recovery.start", path=info.path, block=info.id, gs=old_gs,
                      recovery_id=info.recovery_id, primary=None, pipeline=locations,
                      reason="no live replica location")
            return
        # Hadoop picks the location heard from most recently, and not twice in a row.
        primary = max(candidates, key=lambda dn: self.datanodes[dn].last_heartbeat)
        info.primary = primary
        info.tried_primaries.add(primary)
        queue = self.datanodes[primary].recover
        # 3.x DatanodeDescriptor.addBlockToBeRecovered: the block, not a command, and once
        if all(b.id != info.id for b in queue):
            queue.append(info)
        self.emit("nn.recovery.start", path=info.path, block=info.id, gs=old_gs,
                  recovery_id=info.recovery_id, primary=primary, pipeline=send)

    def _recovery_locations(self, info: BlockInfo
                            ) -> tuple[list[str], list[str], list[str], list[str]]:
        """The expected locations of a block under recovery (its pipeline and the replicas
        reported with its GS), the live ones, the fresh (live, not stale) ones, and the
        ones its recovery command names."""
        locations = list(dict.fromkeys(info.expected + [
            dn for dn, r in info.replicas.items()
            if r["gs"] >= info.gs and r["state"] in ("RBW", "RWR", "FINALIZED", "RUR")]))
        alive = [dn for dn in locations if self._alive(dn)]
        fresh = [dn for dn in alive if not self.datanodes[dn].stale]
        # Hadoop: with fewer than two fresh locations, every expected location takes
        # part (the primary copes with the ones that do not answer)
        return locations, alive, fresh, fresh if len(fresh) >= 2 else locations

    def _recovery_commands(self, d: DatanodeDescriptor) -> list[dict]:
        """DatanodeManager.getBlockRecoveryCommand: takes the whole queue and builds each
        block's command from its state now; a block no longer under construction fails
        the heartbeat (the queue is lost, the other commands wait for the next one)."""
        blocks, d.recover = d.recover, []
        commands = []
        for info in blocks:
            # 3.x DatanodeManager.getBlockRecoveryCommand: a completed block fails the heartbeat
            if (info.removed_from if info.state == REMOVED else info.state) == COMPLETE:
                raise IOExceptionRemote(
                    f"Recovery block {info.id} where it is not under construction.")
            send = self._recovery_locations(info)[3]
            # 3.x DatanodeManager.getBlockRecoveryCommand: recovery id, locations, length as now
            commands.append({"type": "recover", "block": info.id, "gs": info.gs,
                             "recovery_id": info.recovery_id, "locations": send,
                             "new_len": info.truncate_len})
        return commands

    # == DataNode protocol ==============================================================

    def rpc_registerDatanode(self, dn: str, rack: str = "/default-rack") -> bool:
        with self.lock:
            d = self.datanodes.get(dn)
            if d is None:
                d = self.datanodes[dn] = DatanodeDescriptor(dn, rack)
            d.rack, d.last_heartbeat = rack, time.monotonic()
            was_down = d.stale or d.dead
            d.stale = d.dead = False
            d.commands.clear()
            self.emit("nn.dn.register", dn=dn, rack=rack)
            if was_down:
                self.emit("nn.dn.alive", dn=dn)
            self._safemode_check()
            return True

    def _datanode(self, dn: str) -> DatanodeDescriptor:
        d = self.datanodes.get(dn)
        if d is None:
            raise UnregisteredNodeException(f"DataNode {dn} is not registered")
        return d

    def rpc_sendHeartbeat(self, dn: str, replicas: int = 0) -> dict:
        with self.lock:
            d = self._datanode(dn)
            d.last_heartbeat = time.monotonic()
            if d.dead:
                # a node declared dead must re-register and report all its blocks again
                raise UnregisteredNodeException(f"DataNode {dn} was declared dead")
            if d.stale:
                d.stale = False
                self.emit("nn.dn.alive", dn=dn)
            if self.safemode_status != SAFEMODE_OFF:
                return {"commands": []}   # DatanodeManager.handleHeartbeat: queues not drained
            recover = self._recovery_commands(d)
            if recover:
                # 3.x DatanodeManager.handleHeartbeat: a recovery command goes out alone
                return {"commands": recover}
            commands, d.commands = d.commands, []
            # InvalidateBlocks.getInvalidationDelay: deletions stay queued until the
            # startup delay has passed
            if d.invalidate and time.monotonic() - self.started >= self.deletion_delay:
                commands.append({"type": "invalidate", "blocks": d.invalidate})
                d.invalidate = []
            return {"commands": commands}

    def rpc_blockReport(self, dn: str, replicas: list[dict]) -> bool:
        _check_records("blockReport", replicas, _REPLICA_RECORD)   # before anything changes
        with self.lock:
            self._datanode(dn)
            reported = {int(r["block"]) for r in replicas}
            for info in self.blocks.values():
                if dn in info.replicas and info.id not in reported:
                    del info.replicas[dn]
                    info.corrupt.pop(dn, None)   # 3.x BlockManager.removeStoredBlock: mark too
            for r in replicas:
                self._process_replica(dn, r)
            self._safemode_check()
            return True

    def rpc_blockReceivedAndDeleted(self, dn: str, reports: list[dict]) -> bool:
        _check_records("blockReceivedAndDeleted", reports, {"kind": str, "block": int})
        _check_records("blockReceivedAndDeleted",
                       [r for r in reports if r["kind"] != "deleted"], _REPLICA_RECORD)
        with self.lock:
            self._datanode(dn)
            for r in reports:
                if r["kind"] == "deleted":
                    info = self.blocks.get(int(r["block"]))
                    if info is not None and dn in info.replicas:
                        del info.replicas[dn]
                        info.corrupt.pop(dn, None)
                else:
                    self._process_replica(dn, r)
            self._safemode_check()
            return True

    def _process_replica(self, dn: str, r: dict) -> None:
        """A replica reported by a DataNode: record it, complete blocks, mark the corrupt
        ones (old GS, wrong length, wrong state) and invalidate the orphaned ones."""
        block, gs, length, state = int(r["block"]), int(r["gs"]), int(r["len"]), r["state"]
        self.emit("nn.replica.reported", dn=dn, block=block, gs=gs, len=length, state=state)
        info = self.blocks.get(block)
        if info is None:
            self._queue_invalidate(dn, block, gs)
            return
        record = {"state": state, "gs": gs, "len": length}
        if state == "FINALIZED" and gs >= info.gs:
            # the transfer arrived: no longer pending (BlockManager.addStoredBlock ->
            # pendingReconstruction.decrement), not only after the pending timeout (10 s)
            self.pending_replication.pop((block, dn), None)
        if info.state in (COMMITTED, COMPLETE) and state not in ("FINALIZED", "RBW", "RWR"):
            # a TEMPORARY or RUR replica (a Hadoop DataNode reports neither): an old GS goes
            info.replicas[dn] = record
            if gs < info.gs:
                self._queue_invalidate(dn, block, gs)
            return
        reason = self._replica_corrupt_reason(info, state, gs, length)
        if reason is not None:
            # 3.x BlockManager.processReportedBlock: toCorrupt -> markBlockAsCorrupt
            info.replicas[dn] = record
            self._mark_corrupt(info, dn, gs, reason)
            return
        if info.corrupt.get(dn) == "genstamp_mismatch" and \
                (state == "FINALIZED" or info.state != COMPLETE):
            # 3.x BlockManager.addStoredBlock: a good report clears a GENSTAMP_MISMATCH mark
            del info.corrupt[dn]
        if info.state in (COMMITTED, COMPLETE):
            if state != "FINALIZED":
                # 3.x BlockManager.processReportedBlock: a late RBW never downgrades a FINALIZED
                # replica; it joins a COMMITTED block's list, a COMPLETE one ignores it (HDFS-2791)
                if info.state == COMMITTED and info.replicas.get(dn, {}).get("state") != "FINALIZED":
                    info.replicas[dn] = record
                return
            info.replicas[dn] = record
            if info.state == COMMITTED:
                # files close in complete() or commitBlockSynchronization, not here
                self._try_complete(info)
            self._invalidate_corrupt_replicas(info)
            return
        info.replicas[dn] = record
        if state in ("RBW", "RWR") and info.state in (UNDER_CONSTRUCTION, UNDER_RECOVERY) \
                and gs >= info.gs and dn not in info.expected:
            info.expected.append(dn)

    @staticmethod
    def _replica_corrupt_reason(info: BlockInfo, state: str, gs: int, length: int) -> str | None:
        """BlockManager.checkReplicaCorrupt for a FINALIZED, RBW or RWR replica: why it is
        corrupt (Reason), or None. TEMPORARY and RUR replicas are not checked."""
        if state not in ("FINALIZED", "RBW", "RWR"):
            return None
        if state == "FINALIZED":
            if info.state in (COMMITTED, COMPLETE):
                # 3.x BlockManager.checkReplicaCorrupt: another GS or length is marked corrupt
                if gs != info.gs:
                    return "genstamp_mismatch"
                return "size_mismatch" if length != info.num_bytes else None
            # 3.x BlockManager.checkReplicaCorrupt: older GS while UNDER_CONSTRUCTION (not RECOVERY)
            older = info.state == UNDER_CONSTRUCTION and gs < info.gs
            return "genstamp_mismatch" if older else None
        if info.state != COMPLETE:
            # 3.x BlockManager.checkReplicaCorrupt: an RBW/RWR older than an incomplete block
            return "genstamp_mismatch" if gs < info.gs else None
        if gs != info.gs:
            return "genstamp_mismatch"
        # an RWR replica of a COMPLETE block with its GS is corrupt (INVALID_STATE)
        return "invalid_state" if state == "RWR" else None

    def rpc_commitBlockSynchronization(self, block: int, recovery_id: int, new_gs: int,
                                       new_len: int, close: bool, delete: bool,
                                       targets: list) -> bool:
        """Section 3 step 6: store the recovered GS, length and locations, close the file."""
        with self.lock:
            self._check_safe_mode("commitBlockSynchronization",
                                  "Cannot commitBlockSynchronization while in safe mode")
            info = self.blocks.get(int(block))
            if info is None:
                raise IOExceptionRemote(f"commitBlockSynchronization: block {block} not found")
            inode = self.files.get(info.path)
            if inode is None or not inode.under_construction:
                if info.gs == new_gs and info.num_bytes == new_len:
                    return True   # a retry of a commit that already went through
                raise IOExceptionRemote(f"commitBlockSynchronization: {info.path} is closed")
            if info.state != UNDER_RECOVERY or info.recovery_id != recovery_id:
                raise IOExceptionRemote(
                    f"commitBlockSynchronization: the recovery id {recovery_id} does not match "
                    f"the current recovery id {info.recovery_id} of block {block}")
            self.emit("nn.recovery.commit", block=info.id, recovery_id=recovery_id, gs=new_gs,
                      len=new_len, pipeline=list(targets), close=close, delete=delete,
                      path=info.path)
            if delete:
                self._remove_block(inode, info, "recovery")
            else:
                old_gs = info.gs
                info.gs, info.num_bytes = int(new_gs), int(new_len)
                info.expected = list(targets)
                info.truncate_len = None
                for dn, r in list(info.replicas.items()):
                    if r["gs"] < info.gs and dn not in targets:
                        self._queue_invalidate(dn, info.id, r["gs"])
                if info.gs != old_gs:   # the block's GS changes here, to the recovery id
                    self.emit("nn.block.gs_bump", block=info.id, old_gs=old_gs, gs=info.gs,
                              reason="recovery", path=info.path)
                if close:
                    # 3.x FSNamesystem.commitBlockSynchronization: the targets become the
                    # block's stored locations ("Insert block locations into blockManager")
                    for dn in targets:
                        if self._alive(dn):
                            info.replicas[dn] = {"state": "FINALIZED", "gs": info.gs,
                                                 "len": info.num_bytes}
                self._set_state(info, COMMITTED)
                self._try_complete(info)
                if close and info.id in self.pending_recovery:
                    # 3.x BlockManager.commitOrCompleteLastBlock: a block just recovered
                    # is completed even without min replicas ("complete the block
                    # forcibly"), so the file closes with a COMPLETE last block
                    self._set_state(info, COMPLETE)
            self._log_file("OP_UPDATE_BLOCKS", inode)
            if close:
                self._finalize_file(inode, "block_recovery")
            # BlockManager.successfulBlockRecovery: the attempt is no longer pending
            self.pending_recovery.pop(info.id, None)
            return True

    # == monitors =======================================================================

    def _lease_monitor(self) -> None:
        """LeaseManager.Monitor: every recheck interval, the hard-limit-expired leases,
        oldest first, are recovered with the NameNode as the new holder."""
        interval = self.conf["dfs.namenode.lease-recheck-interval-ms"]
        while not self._stopped.wait(interval):
            with self.lock:
                if self.safemode_status != SAFEMODE_OFF:
                    continue   # LeaseManager.Monitor: no lease released in safe mode
                self.check_leases()

    def check_leases(self) -> None:
        for lease in self.leases.expired_hard():
            if self.leases.get(lease.holder) is not lease:
                continue
            self.emit("nn.lease.expired", holder=lease.holder, limit="hard")
            holder = self.leases.internal_lease_holder()   # 3.x: HDFS_NameNode-<time>
            for path in sorted(lease.paths):
                try:
                    self._release(lease, path, holder, requester=holder, force=False)
                except HdfsError:
                    # 3.x LeaseManager.checkLeases: the lease stays and is retried on a
                    # later round ("It will be retried"); 2.7 removed it by force
                    continue

    def _heartbeat_monitor(self) -> None:
        """Marks DataNodes stale and dead; a dead node's replicas stop counting."""
        period = max(0.1, min(self.conf["dfs.heartbeat.interval"], 1.0) / 2)
        while not self._stopped.wait(period):
            with self.lock:
                self.heartbeat_check(time.monotonic())

    def heartbeat_check(self, now: float) -> None:
        """HeartbeatManager.heartbeatCheck (lock held): the DataNodes silent since `now`
        minus the stale interval are stale, minus the dead interval dead."""
        stale_after = self.conf.stale_interval
        dead_after = self.conf.dead_interval
        for d in self.datanodes.values():
            silent = now - d.last_heartbeat
            if not d.dead and silent > dead_after:
                d.dead = True
                self.emit("nn.dn.dead", dn=d.id, silent=round(silent, 3))
                for info in self.blocks.values():
                    info.replicas.pop(d.id, None)
                    info.corrupt.pop(d.id, None)
                # BlockManager.removeBlocksAssociatedTo: invalidateBlocks.remove(node)
                # (a dead node's deletions are dropped, not kept for a node that
                # may never heartbeat again: the block report of its return says
                # what it holds, and what is stale is invalidated then)
                d.invalidate = []
            elif not d.stale and not d.dead and silent > stale_after:
                d.stale = True
                self.emit("nn.dn.stale", dn=d.id, silent=round(silent, 3))

    def _redundancy_monitor(self) -> None:
        """Re-replicates under-replicated COMPLETE blocks (transfer to a TEMPORARY replica
        on the target) and invalidates excess replicas (stale and corrupt ones are left to
        the block reports and _mark_corrupt)."""
        interval = self.conf["dfs.namenode.redundancy.interval.seconds"]
        while not self._stopped.is_set():
            with self.lock:
                # BlockManager.computeDatanodeWork: nothing replicated or removed in safe
                # mode, while the block map is still being filled by the first reports
                if self.safemode_status == SAFEMODE_OFF:
                    self.compute_redundancy_work()
            self._stopped.wait(interval)

    def compute_redundancy_work(self) -> None:
        now = time.monotonic()
        timeout = max(10.0, 5 * self.conf["dfs.namenode.redundancy.interval.seconds"])
        self.pending_replication = {k: t for k, t in self.pending_replication.items()
                                    if now - t < timeout}
        for info in list(self.blocks.values()):
            if info.state != COMPLETE:
                continue
            inode = self.files.get(info.path)
            if inode is None:
                continue
            valid = self._live_replicas(info)
            if not valid:
                continue
            # corrupt replicas are not deleted here but by _mark_corrupt and
            # _invalidate_corrupt_replicas; a node holding one is no copy target
            for dn, r in info.replicas.items():
                if r["gs"] < info.gs and self._alive(dn):
                    self._queue_invalidate(dn, info.id, r["gs"])
            pending = [t for (b, t) in self.pending_replication if b == info.id]
            missing = inode.replication - len(valid) - len(pending)
            if missing > 0:
                sources = [dn for dn in valid if not self.datanodes[dn].stale] or valid
                source = self.redundancy_placement.rng.choice(sorted(sources))
                targets = self.redundancy_placement.choose_targets(
                    "", missing, self._good_targets(), chosen=valid,
                    excluded=set(info.replicas) | set(pending), rack_of=self._rack_of())
                if targets:
                    self.datanodes[source].commands.append(
                        {"type": "transfer", "block": info.id, "gs": info.gs,
                         "len": info.num_bytes, "targets": targets})
                    for t in targets:
                        self.pending_replication[(info.id, t)] = now
                        self.emit("nn.replication.schedule", block=info.id, source=source,
                                  target=t, gs=info.gs)
            elif len(valid) > inode.replication:
                for dn in sorted(valid)[inode.replication:]:
                    self._queue_invalidate(dn, info.id, info.gs)


    # == startup safe mode (BlockManagerSafeMode) =======================================

    safemode_status = SAFEMODE_OFF

    def in_safe_mode(self) -> bool:
        return self.safemode_status != SAFEMODE_OFF

    def _safemode_activate(self) -> None:
        """BlockManagerSafeMode.activate, at start: the NameNode stays in safe mode until
        (long) (COMPLETE blocks x threshold-pct) of them have dfs.namenode.replication.min
        live replicas and min.datanodes DataNodes are live; met at once, it never enters."""
        self._safemode_started = time.monotonic()
        self._safemode_total = sum(1 for b in self.blocks.values() if b.state == COMPLETE)
        self._safemode_threshold = safemode_threshold(
            self._safemode_total, self.conf["dfs.namenode.safemode.threshold-pct"])
        self._safemode_reached = 0.0
        if self._safemode_met():
            return
        self.safemode_status = SAFEMODE_PENDING
        self.emit("nn.safemode.enter", **self._safemode_counts())

    def _safemode_counts(self) -> dict:
        min_rep = self.conf["dfs.namenode.replication.min"]
        safe = sum(1 for b in self.blocks.values() if b.state == COMPLETE and
                   sum(1 for dn in b.finalized_matching() if self._alive(dn)) >= min_rep)
        return {"safe_blocks": safe, "total_blocks": self._safemode_total,
                "threshold_blocks": self._safemode_threshold,
                "live_datanodes": sum(1 for d in self.datanodes.values() if not d.dead),
                "min_datanodes": self.conf["dfs.namenode.safemode.min.datanodes"]}

    def _safemode_met(self) -> bool:
        """areThresholdsMet: enough safe blocks and live DataNodes."""
        c = self._safemode_counts()
        return c["safe_blocks"] >= c["threshold_blocks"] and \
            c["live_datanodes"] >= c["min_datanodes"]

    def _safemode_check(self) -> None:
        """checkSafeMode, after a report or a registration (lock held): thresholds met,
        leave, or start the extension and the SafeModeMonitor that ends it."""
        if self.safemode_status != SAFEMODE_PENDING or not self._safemode_met():
            return
        extension = self.conf["dfs.namenode.safemode.extension"]
        if extension <= 0:
            self._safemode_leave()
            return
        self.safemode_status = SAFEMODE_EXTENSION
        self._safemode_reached = time.monotonic()
        self.emit("nn.safemode.extension", extension=extension, **self._safemode_counts())
        threading.Thread(target=self._guard(self._safemode_monitor), daemon=True,
                         name="SafeModeMonitor").start()

    def _safemode_monitor(self) -> None:
        """SafeModeMonitor: every recheck interval, leave once the extension has passed
        and the thresholds are (still) met."""
        while not self._stopped.wait(SAFEMODE_RECHECK):
            with self.lock:
                if self.safemode_status != SAFEMODE_EXTENSION:
                    return
                passed = time.monotonic() - self._safemode_reached
                if passed >= self.conf["dfs.namenode.safemode.extension"] and self._safemode_met():
                    self._safemode_leave()
                    return

    def _safemode_leave(self) -> None:
        self.safemode_status = SAFEMODE_OFF
        self.emit("nn.safemode.leave", waited=round(time.monotonic() - self._safemode_started, 3),
                  **self._safemode_counts())

    def _safemode_tip(self) -> str:
        """BlockManagerSafeMode.getSafeModeTip."""
        c = self._safemode_counts()
        safe, total, need = c["safe_blocks"], c["total_blocks"], c["threshold_blocks"]
        pct = self.conf["dfs.namenode.safemode.threshold-pct"]
        if safe < need:
            tip = (f"The reported blocks {safe} needs additional {need - safe} blocks to reach "
                   f"the threshold {pct:.4f} of total blocks {total}.\n")
        else:
            tip = (f"The reported blocks {safe} has reached the threshold {pct:.4f} of total "
                   f"blocks {total}. ")
        live, min_dn = c["live_datanodes"], c["min_datanodes"]
        if live < min_dn:
            tip += (f"The number of live datanodes {live} needs an additional {min_dn - live} "
                    f"live datanodes to reach the minimum number {min_dn}.\n")
        else:
            tip += f"The number of live datanodes {live} has reached the minimum number {min_dn}. "
        if self.safemode_status == SAFEMODE_EXTENSION:
            left = self._safemode_reached + self.conf["dfs.namenode.safemode.extension"] \
                - time.monotonic()
            return tip + ("In safe mode extension. Safe mode will be turned off automatically "
                          f"in {max(0, int(left))} seconds.")
        return tip + "Safe mode will be turned off automatically once the thresholds have been reached."

    def _check_safe_mode(self, op: str, message: str, path: str | None = None,
                         holder: str | None = None) -> None:
        """FSNamesystem.checkNameNodeSafeMode: a change refused in safe mode. Without HA
        it is a SafeModeException, not a RetriableException, and the client does not
        retry it (dfs.client.retry.policy.enabled is false by default)."""
        if self.safemode_status != SAFEMODE_OFF:
            raise self._reject(op, SafeModeException,
                               f"{message}. Name node is in safe mode.\n{self._safemode_tip()}",
                               path, holder)

    def _check_safe_mode_locations(self, path: str, blocks: list[dict]) -> None:
        """FSNamesystem.getBlockLocations: in safe mode, a block (the last one under
        construction aside) with no location yet is refused rather than read as missing."""
        if self.safemode_status == SAFEMODE_OFF:
            return
        if any(not b["locations"] for b in blocks
               if b["state"] not in (UNDER_CONSTRUCTION, UNDER_RECOVERY)):
            raise self._reject("getBlockLocations", SafeModeException,
                               f"Zero blocklocations for {path}. Name node is in safe mode.\n"
                               f"{self._safemode_tip()}", path)


def safemode_threshold(total: int, pct: float) -> int:
    """BlockManagerSafeMode.setBlockTotal: (long) (total * threshold), the threshold read
    with conf.getFloat (a float32): 1 block needs 0 reported, 2 need 1, 78001 need 77923."""
    return int(total * struct.unpack("f", struct.pack("f", pct))[0])


def posixpath_dirname(path: str) -> str:
    parent = path.rsplit("/", 1)[0]
    return parent or "/"
