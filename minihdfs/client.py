"""The client (seed 003): DFSClient, DFSOutputStream with its DataStreamer and
ResponseProcessor (dataQueue, ackQueue, error detection, pipeline recovery, the
replace-datanode policy), reads with checksum verification, and the LeaseRenewer.
"""

from __future__ import annotations

import collections
import itertools
import os
import socket
import threading
import time
import zlib

from . import wire
from hdfs_contract.config import Config
from .datanode import (STAGE_APPEND, STAGE_APPEND_RECOVERY, STAGE_CLOSE, STAGE_CLOSE_RECOVERY,
                       STAGE_CREATE, STAGE_STREAMING, STAGE_STREAMING_RECOVERY,
                       STAGE_TRANSFER_RBW, read_timeout_extension)
from hdfs_contract.events import EventLog
from .routing import Routes
from .rpc import ConnectError, HdfsError, NotReplicatedYetException, RpcClient

MAX_PACKETS_IN_FLIGHT = 80


class StreamError(IOError):
    """The output stream failed for good; nothing more can be written to it."""


def replace_datanode_policy(policy: str, replication: int, remaining: int,
                            hflushed_or_appended: bool) -> bool:
    """ReplaceDatanodeOnFailure.satisfy (seed 003): should a failed node be replaced?"""
    if remaining == 0 or remaining >= replication or policy == "NEVER":
        return False
    if policy == "ALWAYS":
        return True
    # DEFAULT: r >= 3 and (floor(r/2) >= n, or the block was hflushed or appended)
    return replication >= 3 and (replication // 2 >= remaining or hflushed_or_appended)


class LeaseRenewer:
    """Renews the client's lease every soft-limit/2 while it has files open."""

    def __init__(self, client: "DFSClient"):
        self.client = client
        self.period = client.conf["lease.soft-limit"] / 2
        self.hard_limit = client.conf["lease.hard-limit"]
        self.streams: dict[str, "DFSOutputStream"] = {}   # the files open, by path
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()
        self.last_renewal = time.monotonic()

    def begin(self, path: str, stream: "DFSOutputStream") -> None:
        with self._lock:
            if not self.streams:
                self.last_renewal = time.monotonic()
            self.streams[path] = stream
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True, name="LeaseRenewer")
                self._thread.start()

    def end(self, path: str) -> None:
        with self._lock:
            self.streams.pop(path, None)

    def _run(self) -> None:
        while not self._stopped.wait(min(1.0, self.period / 4)):
            with self._lock:
                busy = bool(self.streams)
            if busy and time.monotonic() - self.last_renewal >= self.period:
                try:
                    self.client.nn_call("renewLease", holder=self.client.holder, retries=0)
                    self.last_renewal = time.monotonic()
                    self.client.emit("client.lease.renew", holder=self.client.holder)
                except (OSError, EOFError, HdfsError):
                    # try again at the next tick, as Hadoop does every second; 3.x
                    # DFSClient.renewLease: after the hard limit without a renewal the
                    # client gives up every file it writes (closeAllFilesBeingWritten(true))
                    if time.monotonic() - self.last_renewal > self.hard_limit:
                        self._abort_all()

    @property
    def open_files(self) -> set[str]:
        with self._lock:
            return set(self.streams)

    def _abort_all(self) -> None:
        with self._lock:
            streams = list(self.streams.values())
        for s in streams:   # DFSOutputStream.abort: the stream fails, its lease ends
            s.fail(IOError(f"Lease timeout of {self.hard_limit:g} seconds expired."))
            s.abort()

    def stop(self) -> None:
        self._stopped.set()


class DFSClient:
    def __init__(self, client_id: str, routes: Routes, conf: Config, events: EventLog,
                 holder: str | None = None):
        self.id, self.routes, self.conf = client_id, routes, conf
        self.events = events
        self.emit = events.emit
        self.holder = holder or f"DFSClient_{client_id}_{os.getpid()}"
        self.socket_timeout = conf["dfs.client.socket-timeout"]
        self.connect_timeout = conf["ipc.client.connect.timeout"]
        self.nn = RpcClient(routes.addr("nn", "rpc"), self.connect_timeout,
                            conf["ipc.client.rpc-timeout.ms"])
        self.renewer = LeaseRenewer(self)
        self.crc = wire.checksum_fn(conf["dfs.checksum.type"])
        # the output streams' numbers (client.stream.open/client.write `stream`), and the
        # name of the generator of the bytes written, when the caller has one (`content`)
        self.streams = itertools.count()
        self.content: str | None = None

    def nn_call(self, op: str, retries: int = 10, **args):
        """Call the NameNode, retrying while it cannot be reached (ipc.client.connect.max.retries)."""
        for attempt in range(retries + 1):
            try:
                return self.nn.call(op, **args)
            except ConnectError:
                if attempt == retries:
                    raise
                time.sleep(1.0)

    def close(self) -> None:
        self.renewer.stop()
        self.nn.close()

    # -- namespace ---------------------------------------------------------------------

    def create(self, path: str, overwrite: bool = False, replication: int = 0,
               block_size: int = 0) -> "DFSOutputStream":
        status = self.nn_call("create", path=path, holder=self.holder, client_machine=self.id,
                              overwrite=overwrite, replication=replication, block_size=block_size)
        return DFSOutputStream(self, status["path"], status, mode="create")

    def append(self, path: str, new_block: bool = False) -> "DFSOutputStream":
        """Append to `path`: fill its partial last block, or with `new_block` (Hadoop's
        CreateFlag.NEW_BLOCK) start a new block after it."""
        status = self.nn_call("append", path=path, holder=self.holder, client_machine=self.id,
                              new_block=new_block)
        return DFSOutputStream(self, status["path"], status, mode="append")

    def recover_lease(self, path: str) -> bool:
        closed = self.nn_call("recoverLease", path=path, holder=self.holder)
        self.emit("client.recover_lease", path=path, result=closed)
        return closed

    def truncate(self, path: str, new_len: int) -> bool:
        return self.nn_call("truncate", path=path, new_len=new_len, holder=self.holder,
                            client_machine=self.id)

    def info(self, path: str) -> dict | None:
        return self.nn_call("getFileInfo", path=path)

    def listing(self, path: str) -> list[dict]:
        return self.nn_call("getListing", path=path)

    def delete(self, path: str, recursive: bool = False) -> bool:
        return self.nn_call("delete", path=path, recursive=recursive)

    def rename(self, src: str, dst: str) -> bool:
        return self.nn_call("rename", src=src, dst=dst)

    # -- reads -------------------------------------------------------------------------

    def read(self, path: str) -> bytes:
        """Read the whole file; a corrupt replica is reported and another one is tried."""
        located = self.nn_call("getBlockLocations", path=path, client_machine=self.id)
        out = bytearray()
        for blk in located["blocks"]:
            out += self._read_block(path, blk)
        data = bytes(out)
        self.emit("client.read", path=path, offset=0, len=len(data), crc=zlib.crc32(data))
        return data

    def _read_block(self, path: str, blk: dict) -> bytes:
        length = blk["len"]
        errors = []
        for dn in blk["locations"]:
            try:
                if blk["state"] in ("UNDER_CONSTRUCTION", "UNDER_RECOVERY"):
                    peer = RpcClient(self.routes.addr(dn, "rpc"), self.connect_timeout,
                                     self.socket_timeout)
                    try:
                        length = peer.call("getReplicaVisibleLength", block=blk["block"])
                    finally:
                        peer.close()
                return self._read_from(path, dn, blk, length)
            except ChecksumMismatch as e:
                self.emit("client.checksum.error", path=path, block=blk["block"], dn=dn,
                          offset=e.offset)
                self.nn_call("reportBadBlocks", blocks=[{"block": blk["block"], "dn": dn}])
                errors.append(f"{dn}: checksum error at {e.offset}")
            except (OSError, EOFError, HdfsError, wire.MalformedFrame, KeyError) as e:
                errors.append(f"{dn}: {e}")
        raise IOError(f"Could not obtain block {blk['block']} of {path}: {'; '.join(errors) or 'no locations'}")

    def _read_from(self, path: str, dn: str, blk: dict, length: int) -> bytes:
        bpc = self.conf["dfs.bytes-per-checksum"]
        sock = wire.connect(self.routes.addr(dn, "xfer"), self.connect_timeout)
        sock.settimeout(self.socket_timeout)
        with sock:
            wire.send_message(sock, {"op": "READ_BLOCK", "block": blk["block"], "gs": blk["gs"],
                                     "offset": 0, "len": length})
            reply = wire.recv_message(sock)
            if reply.get("status") != "SUCCESS":
                raise IOError(reply.get("message", "read refused"))
            buf = bytearray()
            reader = wire.FrameReader(sock)
            while True:
                packet, _ = reader.packet(bpc)
                if packet.last:
                    break
                bad = wire.first_bad_chunk(packet.data, packet.sums, bpc, self.crc)
                if bad >= 0:
                    raise ChecksumMismatch(packet.offset + bad * bpc)
                if packet.offset > len(buf) or (not packet.data):
                    raise IOError(f"{dn} sent a packet at offset {packet.offset} after "
                                  f"{len(buf)} bytes of block {blk['block']}")
                buf += packet.data[len(buf) - packet.offset:]
            if len(buf) < length:
                raise IOError(f"{dn} sent {len(buf)} of the {length} bytes of block {blk['block']}")
            return bytes(buf[:length])


class ChecksumMismatch(IOError):
    def __init__(self, offset: int):
        super().__init__(f"checksum mismatch at offset {offset}")
        self.offset = offset


class _Packet(wire.Packet):
    __slots__ = ("file_end", "block_seq")


class _QueueMonitor(threading.Condition):
    """The stream's lock and condition (Hadoop's dataQueue monitor). The writer and both
    streamer threads notify on every packet; most of the time nobody waits, and then
    notify_all (Python code) is skipped. `_waiters` is threading.Condition's own list."""

    def notify_all(self) -> None:
        if self._waiters:
            super().notify_all()


class DFSOutputStream:
    """An open file being written: the application side (write, hflush, close) fills
    packets into the dataQueue; the DataStreamer thread sends them down the pipeline."""

    def __init__(self, client: DFSClient, path: str, status: dict, mode: str):
        self.client, self.path, self.mode = client, path, mode
        conf = client.conf
        self.emit = client.emit
        self.bpc = conf["dfs.bytes-per-checksum"]
        self.packet_size = conf["dfs.client-write-packet-size"]
        self.block_size = status["block_size"]
        self.replication = status["replication"]
        self.lock = _QueueMonitor()
        self.data_queue: collections.deque = collections.deque()
        self.ack_queue: collections.deque = collections.deque()
        self.seqno = 0
        self.closed = False
        self.error: Exception | None = None        # the stream failed for good
        self.file_offset = status.get("len", 0)      # bytes handed to the stream
        self.acked_file_offset = self.file_offset
        self.buffer = bytearray()
        self.buffer_block_offset = 0                 # where the buffer starts in its block
        self.streamer = DataStreamer(self)
        self.block_has_data = False                  # packets queued in the current block
        last = status.get("last_block")
        if last is not None:   # append to a partial last block
            self.streamer.setup_append(last)
            self.buffer_block_offset = last["len"]
        elif status.get("previous_block") is not None:
            # DFSOutputStream's append with NEW_BLOCK: the file's last block, as it is, is
            # the previous block of the first addBlock
            self.streamer.last_block = dict(status["previous_block"])
        client.renewer.begin(path, self)
        # stream_crc: the CRC-32 of the bytes written to this stream so far, so that a
        # verifier can check any prefix of the stream with one CRC combine
        self.stream, self.stream_crc = next(client.streams), 0
        self.emit("client.stream.open", path=path, holder=client.holder, mode=mode,
                  stream=self.stream, offset=self.file_offset, content=client.content)
        self.streamer.start()

    # -- application side --------------------------------------------------------------

    def _check(self) -> None:
        if self.error is not None:
            raise StreamError(f"{self.path}: {self.error}")
        if self.closed:
            raise StreamError(f"{self.path}: stream closed")

    def write(self, data: bytes) -> None:
        self._check()
        crc = zlib.crc32(data)
        self.emit("client.write", path=self.path, offset=self.file_offset, len=len(data),
                  crc=crc, stream=self.stream, stream_crc=self.stream_crc)
        self.stream_crc = zlib.crc32(data, self.stream_crc)
        view = memoryview(data)
        while view:
            block_room = self.block_size - (self.buffer_block_offset + len(self.buffer))
            # packets end on chunk boundaries so the DataNodes can keep our checksums
            packet_room = self.packet_size - (self.buffer_block_offset % self.bpc) - len(self.buffer)
            n = min(len(view), block_room, packet_room)
            full = n == packet_room or n == block_room
            if full and not self.buffer:   # a whole packet straight from the caller's bytes
                self.file_offset += n
                # immutable bytes can be sent from where they are; anything else is copied
                self._queue_data(view[:n] if isinstance(data, bytes) else bytes(view[:n]),
                                 sync=False)
                view = view[n:]
            else:
                self.buffer += view[:n]
                view = view[n:]
                self.file_offset += n
                if full:
                    self._queue_buffer(sync=False)
            if self.buffer_block_offset == self.block_size:
                self._queue_end_of_block()

    def _queue_buffer(self, sync: bool) -> None:
        data = bytes(self.buffer)
        self.buffer = bytearray()
        self._queue_data(data, sync)

    def _queue_data(self, data: bytes, sync: bool) -> None:
        pkt = self._new_packet(self.buffer_block_offset, data,
                               wire.chunk_checksums(data, self.bpc, self.client.crc),
                               wire.FLAG_SYNC if sync else 0)
        self.buffer_block_offset += len(data)
        self.block_has_data = True
        self._enqueue(pkt)

    def _queue_end_of_block(self) -> None:
        self._enqueue(self._new_packet(self.buffer_block_offset, b"", b"", wire.FLAG_LAST))
        self.buffer_block_offset = 0
        self.block_has_data = False

    def _new_packet(self, offset: int, data: bytes, sums: bytes, flags: int) -> _Packet:
        pkt = _Packet(self.seqno, offset, data, sums, flags)
        pkt.file_end = self.file_offset
        self.seqno += 1
        return pkt

    def _enqueue(self, pkt: _Packet) -> None:
        with self.lock:
            while len(self.data_queue) + len(self.ack_queue) >= MAX_PACKETS_IN_FLIGHT \
                    and self.error is None:
                self.lock.wait(1.0)
            self._check()
            self.data_queue.append(pkt)
            self.lock.notify_all()

    def hflush(self) -> int:
        """Return once every pipeline node acked all bytes written so far (that offset is
        durable: no recovery may lose it)."""
        self._check()
        self.streamer.hflushed = True
        if self.buffer:
            self._queue_buffer(sync=True)
        target = self.file_offset
        with self.lock:
            while self.acked_file_offset < target and self.error is None:
                self.lock.wait(1.0)
        self._check()
        if self.streamer.persist_blocks:
            # Hadoop's flushOrSync: a pipeline was set up since the last flush (a new block
            # or a recovery), so the block list is persisted on the NameNode with fsync,
            # which checks the lease. A writer whose lease was recovered while it was away
            # learns it here, and its hflush fails instead of claiming bytes that are no
            # longer part of the file.
            self.streamer.persist_blocks = False
            block = self.streamer.block
            try:
                self.client.nn_call("fsync", path=self.path, holder=self.client.holder,
                                    last_block_len=self.streamer.bytes_sent if block else -1)
            except (OSError, EOFError, HdfsError, wire.MalformedFrame) as e:
                # 3.x DFSOutputStream.flushOrSync: a failed hflush closes the stream's threads
                # for good, and setClosed ends the file's lease (the renewer lets it go)
                self.fail(e)
                self.abort()
                raise
        self.emit("client.hflush", path=self.path, offset=target)
        return target

    def close(self) -> None:
        if self.closed:
            if self.error is not None:   # a failed stream keeps saying so
                raise StreamError(f"{self.path}: {self.error}")
            return
        try:
            self._check()
            if self.buffer:
                self._queue_buffer(sync=False)
            if self.block_has_data:
                self._queue_end_of_block()
            with self.lock:
                while (self.data_queue or self.ack_queue or self.streamer.mid_block()) \
                        and self.error is None:
                    self.lock.wait(1.0)
            self._check()
            self.streamer.shutdown()
            self._complete()
        except Exception as e:
            self.closed = True
            self.streamer.shutdown()
            self.client.renewer.end(self.path)
            self.emit("client.close", path=self.path, len=self.acked_file_offset, ok=False,
                      error=type(e).__name__, reason=str(e))
            raise
        self.closed = True
        self.client.renewer.end(self.path)
        self.emit("client.close", path=self.path, len=self.file_offset, ok=True, error=None)

    def _complete(self) -> None:
        """complete() until the NameNode sees the last block COMPLETE (Hadoop's completeFile)."""
        last = self.streamer.last_block
        retries = self.client.conf["dfs.client.block.write.locateFollowingBlock.retries"]
        delay = 0.4
        for attempt in range(retries + 1):
            if self.client.nn_call("complete", path=self.path, holder=self.client.holder,
                                   last=last):
                return
            if attempt < retries:
                time.sleep(delay)
                delay *= 2
        raise IOError(f"Unable to close file {self.path} because the last block does not have "
                      "enough number of replicas.")

    def abort(self) -> None:
        """Give up the stream without closing the file (the lease stays until it expires)."""
        self.closed = True
        self.streamer.shutdown()
        self.client.renewer.end(self.path)

    def fail(self, error: Exception) -> None:
        with self.lock:
            if self.error is None:
                self.error = error
                self.emit("client.stream.error", path=self.path, error=type(error).__name__,
                          reason=str(error))
            self.lock.notify_all()


class PipelineError(IOError):
    pass


class DataStreamer(threading.Thread):
    """Sends packets down the pipeline, sets it up for each block, and recovers it."""

    def __init__(self, stream: DFSOutputStream):
        super().__init__(daemon=True, name=f"DataStreamer-{stream.path}")
        self.s = stream
        self.client = stream.client
        conf = stream.client.conf
        self.block: dict | None = None           # {block, gs, len}
        self.last_block: dict | None = None      # the previous block, for addBlock/complete
        self.nodes: list[str] = []
        self.stage = STAGE_CREATE
        self.sock: socket.socket | None = None
        self.responder: threading.Thread | None = None
        self.bad_index = -1
        self.has_error = False
        self.bytes_acked = 0                     # of the current block
        self.bytes_sent = 0
        self.hflushed = False
        self.persist_blocks = False              # a pipeline was set up since the last hflush
        self.is_append = False
        self.failed: list[str] = []              # nodes dropped from this block's pipeline
        self.recovery_count = 0                  # pipelineRecoveryCount
        self.last_acked_seqno = -1               # lastAckedSeqno
        self.last_acked_seqno_before_failure = -1
        self.restart_timeout = conf["dfs.client.datanode-restart.timeout"]
        self.restarting_index = -1               # a node that sent the RESTART OOB ack
        self.restart_deadline = 0.0
        self.policy = conf["dfs.client.block.write.replace-datanode-on-failure.policy"] \
            if conf["dfs.client.block.write.replace-datanode-on-failure.enable"] else "NEVER"
        self.best_effort = conf["dfs.client.block.write.replace-datanode-on-failure.best-effort"]
        self.max_recoveries = conf["dfs.client.pipeline.recovery.max-retries"]
        self.write_retries = conf["dfs.client.block.write.retries"]
        self.min_replication = conf[
            "dfs.client.block.write.replace-datanode-on-failure.min-replication"]
        self._stopping = False
        self.last_send = time.monotonic()

    def setup_append(self, last: dict) -> None:
        self.block = {"block": last["block"], "gs": last["gs"], "len": last["len"]}
        self.nodes = list(last["locations"])
        self.bytes_acked = self.bytes_sent = last["len"]
        self.stage = STAGE_APPEND
        self.is_append = True
        self.last_block = dict(self.block)

    def mid_block(self) -> bool:
        """A block has a pipeline that has not yet sent its last packet."""
        return self.block is not None and self.stage != STAGE_APPEND

    def shutdown(self) -> None:
        self._stopping = True
        self._close_pipeline()
        with self.s.lock:
            self.s.lock.notify_all()

    # -- main loop ---------------------------------------------------------------------

    def run(self) -> None:
        s = self.s
        try:
            while not self._stopping and s.error is None:
                if self.has_error:
                    self.process_datanode_error()
                    continue
                pkt = self._next_packet()
                if pkt is None:
                    continue
                if self.block is None:
                    self.next_block_output_stream()
                    self.stage = STAGE_STREAMING
                    self.start_responder()
                elif self.stage == STAGE_APPEND:
                    self.setup_pipeline_for_append_or_recovery(recovery=False)
                    self.stage = STAGE_STREAMING
                    self.start_responder()
                if pkt.last:
                    if not self._wait_acks_drained():
                        continue
                    self.stage = STAGE_CLOSE
                with s.lock:
                    if not s.data_queue or s.data_queue[0] is not pkt:
                        continue
                    s.data_queue.popleft()
                    s.ack_queue.append(pkt)
                    s.lock.notify_all()
                try:
                    pkt.send(self.sock)
                    self.last_send = time.monotonic()
                    self.bytes_sent = max(self.bytes_sent, pkt.end)
                except OSError as e:
                    self._set_error(f"write to {self.nodes[0]}: {e}", first_if_unmarked=True)
                    continue
                if pkt.last:
                    if self._wait_acks_drained():
                        self.end_block()
        except Exception as e:   # StreamError, PipelineError, HdfsError, OSError, a bug
            s.fail(e)
        finally:
            self._close_pipeline()

    def _next_packet(self):
        s = self.s
        heartbeat_every = self.client.socket_timeout / 2
        with s.lock:
            while not s.data_queue and not self._stopping and not self.has_error \
                    and s.error is None:
                if self.stage == STAGE_STREAMING and self.sock is not None and \
                        time.monotonic() - self.last_send >= heartbeat_every:
                    break
                s.lock.wait(min(1.0, heartbeat_every / 2))
            if s.data_queue and not self.has_error:
                return s.data_queue[0]
        if self.stage == STAGE_STREAMING and self.sock is not None and not self.has_error \
                and not self._stopping:
            try:   # keep an idle pipeline alive (Hadoop's heartbeat packet)
                self.sock.sendall(wire.Packet(wire.HEARTBEAT_SEQNO, self.bytes_sent, b"", b"").encode())
                self.last_send = time.monotonic()
            except OSError as e:
                self._set_error(f"heartbeat to {self.nodes[0]}: {e}", first_if_unmarked=True)
        return None

    def _wait_acks_drained(self) -> bool:
        s = self.s
        with s.lock:
            while s.ack_queue and not self.has_error and not self._stopping and s.error is None:
                s.lock.wait(1.0)
            return not self.has_error and not s.ack_queue

    def _set_error(self, reason: str, first_if_unmarked: bool = False, index: int = -1) -> None:
        with self.s.lock:
            if not self.has_error:
                self.has_error = True
                self.error_reason = reason
                if index >= 0:
                    self.bad_index = index
                elif first_if_unmarked and self.bad_index < 0:
                    self.bad_index = 0   # markFirstNodeIfNotMarked
            self.s.lock.notify_all()

    # -- per block ---------------------------------------------------------------------

    def end_block(self) -> None:
        self._close_pipeline()
        self.last_block = {"block": self.block["block"], "gs": self.block["gs"],
                           "len": self.bytes_acked}
        with self.s.lock:
            self.block = None
            self.nodes = []
            self.stage = STAGE_CREATE
            self.bytes_acked = self.bytes_sent = 0
            self.failed = []
            self.recovery_count = 0
            self.is_append = False
            self.s.lock.notify_all()

    def next_block_output_stream(self) -> None:
        """addBlock and set up its pipeline; on a setup error abandon the block, exclude
        the bad node and ask again (dfs.client.block.write.retries)."""
        excluded: list[str] = []
        path, holder = self.s.path, self.client.holder
        for attempt in range(self.write_retries + 1):
            lb = self._add_block(excluded)
            self.block = {"block": lb["block"], "gs": lb["gs"], "len": 0}
            self.nodes = list(lb["locations"])
            self.bytes_acked = self.bytes_sent = 0
            bad = self.create_block_output_stream(self.nodes, lb["gs"], STAGE_CREATE)
            if bad is None:
                return
            self.emit_error(STAGE_CREATE, bad, f"setup: {self.error_reason}")
            bad = self._recover_new_block(bad)
            if bad is None:
                return
            bad_node = self.nodes[bad] if bad >= 0 else self.failed[-1]
            self.emit("client.pipeline.abandon", path=path, block=lb["block"], gs=lb["gs"],
                      bad_node=bad_node)
            self.client.nn_call("abandonBlock", path=path, holder=holder, block=lb["block"])
            excluded.append(bad_node)
            self.block = None
        raise PipelineError(f"Unable to create new block for {path}: excluded {excluded}")

    def _recover_new_block(self, bad: int) -> int | None:
        """3.4.1 DataStreamer.setupPipelineForCreate: a new block whose setup failed is
        recovered on the survivors (new GS, same stage, updatePipeline) while at least
        min-replication nodes remain; 0 keeps the old abandon. None: set up; else the
        index of the node to exclude (-1: the last one dropped)."""
        path, holder = self.s.path, self.client.holder
        while self.min_replication > 0:
            # 3.x DataStreamer.handleBadDatanode: the last node is never dropped
            if len(self.nodes) <= 1:
                return bad
            self.failed.append(self.nodes.pop(bad))
            # 3.x setupPipelineInternal: no replacement in the create stage
            # (addDatanode2ExistingPipeline: no data written yet)
            if len(self.nodes) < self.min_replication:
                return -1
            old = dict(self.block)
            new_gs = self.client.nn_call("updateBlockForPipeline", block=old["block"],
                                         holder=holder)["gs"]
            bad = self.create_block_output_stream(self.nodes, new_gs, STAGE_CREATE)
            self.block = {"block": old["block"], "gs": new_gs, "len": 0}
            if bad is None:
                self.client.nn_call("updatePipeline", holder=holder, old_block=old,
                                    new_block=self.block, new_nodes=self.nodes)
                self.emit("client.pipeline.recovered", path=path, block=old["block"],
                          old_gs=old["gs"], gs=new_gs, pipeline=list(self.nodes), acked=0)
                return None
            self.emit_error(STAGE_CREATE, bad, f"recovery setup: {self.error_reason}")
        return bad

    def _add_block(self, excluded: list[str]) -> dict:
        delay = 0.4
        retries = self.client.conf["dfs.client.block.write.locateFollowingBlock.retries"]
        for attempt in range(retries + 1):
            try:
                return self.client.nn_call("addBlock", path=self.s.path, holder=self.client.holder,
                                           previous=self.last_block, excluded=excluded)
            # DFSOutputStream.addBlock retries NotReplicatedYetException only: a
            # SafeModeException fails the stream (no RetriableException without HA)
            except NotReplicatedYetException:
                if attempt == retries:
                    raise
                time.sleep(delay)
                delay *= 2

    def emit(self, event: str, **fields) -> None:
        self.s.emit(event, **fields)

    def emit_error(self, stage: str, index: int, reason: str) -> None:
        self.emit("client.pipeline.error", path=self.s.path, block=self.block["block"],
                  gs=self.block["gs"], stage=stage, pipeline=list(self.nodes), error_index=index,
                  bad_node=self.nodes[index] if 0 <= index < len(self.nodes) else None,
                  acked=self.bytes_acked, offset=self.s.acked_file_offset, reason=reason,
                  # a node that sent the RESTART OOB ack: no bad node, it stays (P1 knows)
                  restarting=(self.nodes[self.restarting_index]
                              if 0 <= self.restarting_index < len(self.nodes) else None))

    def create_block_output_stream(self, nodes: list[str], gs: int, stage: str) -> int | None:
        """Connect to the first node and send WRITE_BLOCK; returns None on success, else the
        index of the bad node (firstBadLink, or 0)."""
        self._close_pipeline()
        self.has_error = False
        self.bad_index = -1
        self.persist_blocks = True               # fsync on the next hflush, as Hadoop does
        b = self.block
        ext = read_timeout_extension(self.client.socket_timeout)
        try:
            sock = wire.connect(self.client.routes.addr(nodes[0], "xfer"),
                                self.client.connect_timeout)
        except OSError as e:
            self.error_reason = f"connect to {nodes[0]}: {e}"
            return 0
        try:
            sock.settimeout(self.client.socket_timeout + ext * len(nodes))
            wire.send_message(sock, {
                "op": "WRITE_BLOCK", "block": b["block"], "gs": gs, "old_gs": b["gs"],
                "stage": stage, "targets": nodes[1:], "client": self.client.holder,
                "src": self.client.id, "min_bytes": self.bytes_acked,
                "max_bytes": self.bytes_sent, "bpc": self.s.bpc})
            reply = wire.recv_message(sock)
        except (OSError, EOFError, wire.MalformedFrame) as e:
            sock.close()
            self.error_reason = f"connect-ack from {nodes[0]}: {e}"
            return 0
        if reply.get("status") != "SUCCESS":
            sock.close()
            bad = reply.get("first_bad_link") or ""
            self.error_reason = f"bad connect ack with firstBadLink {bad!r}: {reply.get('message')}"
            return nodes.index(bad) if bad in nodes else 0
        self.sock = sock
        self.last_send = time.monotonic()
        self.emit("client.pipeline.setup", path=self.s.path, block=b["block"], gs=gs, stage=stage,
                  pipeline=list(nodes))
        return None

    def start_responder(self) -> None:
        self.responder = threading.Thread(target=self._response_processor, args=(self.sock,),
                                          daemon=True, name=f"ResponseProcessor-{self.s.path}")
        self.responder.start()

    def _close_pipeline(self) -> None:
        sock, self.sock = self.sock, None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        responder = self.responder
        if responder is not None and responder is not threading.current_thread():
            responder.join(5.0)
        self.responder = None

    def _response_processor(self, sock: socket.socket) -> None:
        """ResponseProcessor: match acks to the ackQueue; a non-SUCCESS status marks that
        node bad (scanning from the last node back, as Hadoop does); a missing ack or a
        read error marks the first node."""
        s = self.s
        acks = wire.FrameReader(sock, 4096)
        while True:
            try:
                seqno, statuses = acks.ack()
            except (OSError, EOFError, wire.MalformedFrame) as e:
                if self.sock is sock and not self._stopping:
                    self._set_error(f"ack from {self.nodes[0] if self.nodes else '?'}: {e}",
                                    first_if_unmarked=True)
                return
            for i in range(len(statuses) - 1, -1, -1):
                if statuses[i] == wire.OOB_RESTART and self.should_wait_for_restart(i):
                    # keep the node in the pipeline and wait for it to come back
                    self.restarting_index = i
                    self.restart_deadline = time.monotonic() + self.restart_timeout
                    self.emit("client.pipeline.restart_wait", path=s.path,
                              block=self.block["block"] if self.block else None,
                              dn=self.nodes[i] if i < len(self.nodes) else None,
                              timeout=self.restart_timeout)
                    self._set_error(f"A datanode is restarting: "
                                    f"{self.nodes[i] if i < len(self.nodes) else i}")
                    return
                if statuses[i] != wire.SUCCESS:
                    self._set_error(f"bad response {wire.STATUS_NAMES.get(statuses[i], statuses[i])}"
                                    f" for seqno {seqno} from {self.nodes[i] if i < len(self.nodes) else i}",
                                    index=i)
                    return
            if seqno == wire.HEARTBEAT_SEQNO:
                continue
            with s.lock:
                if not s.ack_queue or s.ack_queue[0].seqno != seqno:
                    expected = s.ack_queue[0].seqno if s.ack_queue else None
                    self._set_error(f"ack for seqno {seqno}, expected {expected}",
                                    first_if_unmarked=True)
                    return
                pkt = s.ack_queue.popleft()
                self.last_acked_seqno = seqno
                if pkt.data or pkt.last:
                    self.bytes_acked = max(self.bytes_acked, pkt.end)
                s.acked_file_offset = max(s.acked_file_offset, pkt.file_end)
                s.lock.notify_all()
            self.emit("client.ack", path=s.path, block=self.block["block"] if self.block else None,
                      seqno=seqno, acked=self.bytes_acked)
            if pkt.last:
                return

    # -- pipeline recovery -------------------------------------------------------------

    def process_datanode_error(self) -> None:
        """processDatanodeError: unacked packets go back to the dataQueue, the bad node
        leaves the pipeline, and the pipeline is rebuilt with a new GS."""
        s = self.s
        self._close_pipeline()
        with s.lock:
            while s.ack_queue:
                s.data_queue.appendleft(s.ack_queue.pop())
            s.lock.notify_all()
        if self.block is None:
            raise PipelineError(f"error outside a block: {self.error_reason}")
        self.emit_error(self.stage, self.bad_index, self.error_reason)
        self.count_recovery()
        self.setup_pipeline_for_append_or_recovery(recovery=True)
        self.start_responder()

    def should_wait_for_restart(self, index: int) -> bool:
        """DataStreamer.shouldWaitForRestart: wait for a restarting node only if it is the
        only one in the pipeline or runs on the writer's own machine (Hadoop compares
        addresses; here a machine is a node id, as for writer-local placement, so the
        answer is the same on every backend). Otherwise a restart is a node error."""
        if len(self.nodes) == 1:
            return True
        return 0 <= index < len(self.nodes) and self.nodes[index] == self.client.id

    def _wait_for_restart(self) -> None:
        """Sleep before reconnecting while a node restarts: 4 s or the restart timeout,
        whichever is shorter, as Hadoop does (cut short by a shutdown)."""
        until = time.monotonic() + min(self.restart_timeout, 4.0)
        while not self._stopping and self.s.error is None and time.monotonic() < until:
            time.sleep(0.05)

    def count_recovery(self) -> None:
        """processDatanodeError's limit (seed 003): the count starts again at 1 whenever
        an ack arrived since the last failure; only recoveries in a row for the same
        packet add up, and more than max-retries of them fail the stream."""
        if self.restarting_index >= 0:
            # 3.x DataStreamer.processDatanodeOrExternalError: a node restarting (OOB
            # RESTART ack) is no failure, pipelineRecoveryCount is not incremented
            return
        if self.last_acked_seqno != self.last_acked_seqno_before_failure:
            self.last_acked_seqno_before_failure = self.last_acked_seqno
            self.recovery_count = 1
            return
        self.recovery_count += 1
        if self.recovery_count > self.max_recoveries:
            raise PipelineError(f"Error recovering pipeline for writing block "
                                f"{self.block['block']}. Already retried "
                                f"{self.max_recoveries} times for the same packet.")

    def _recovery_stage(self) -> str:
        if self.stage in (STAGE_CLOSE, STAGE_CLOSE_RECOVERY):
            return STAGE_CLOSE_RECOVERY
        if self.stage in (STAGE_APPEND, STAGE_APPEND_RECOVERY):
            return STAGE_APPEND_RECOVERY
        return STAGE_STREAMING_RECOVERY

    def setup_pipeline_for_append_or_recovery(self, recovery: bool) -> None:
        path, holder = self.s.path, self.client.holder
        stage = self._recovery_stage() if recovery else STAGE_APPEND
        while True:
            if self.restarting_index >= 0:
                self._wait_for_restart()
            if recovery:
                # no count here: each failed setup drops a node (or waits for a
                # restarting one until its deadline), which bounds this loop
                if 0 <= self.bad_index < len(self.nodes):
                    bad = self.nodes.pop(self.bad_index)
                    self.failed.append(bad)
                    if not self.nodes:
                        raise PipelineError(f"All datanodes {self.failed} are bad. Aborting...")
                    if self.restarting_index >= 0:
                        # a node after the restarting one failed: that restart is over
                        if self.bad_index > self.restarting_index:
                            self.restarting_index = -1
                        elif self.bad_index < self.restarting_index:
                            self.restarting_index -= 1
                self.bad_index = -1
                self._maybe_replace(stage)
            old = dict(self.block)
            new_gs = self.client.nn_call("updateBlockForPipeline", block=old["block"],
                                         holder=holder)["gs"]
            bad = self.create_block_output_stream(self.nodes, new_gs, stage)
            if bad is not None:
                recovery = True
                if self.restarting_index >= 0:
                    if bad == self.restarting_index:
                        bad = -1          # the restarting node is not back yet
                    if time.monotonic() >= self.restart_deadline:
                        # not back in time: from here on, normal pipeline recovery
                        expired, self.restarting_index = self.restarting_index, -1
                        self.emit("client.pipeline.restart_timeout", path=path,
                                  block=old["block"], dn=self.nodes[expired],
                                  timeout=self.restart_timeout)
                        if bad < 0:
                            bad = expired
                self.bad_index = bad
                self.emit_error(stage, bad, f"recovery setup: {self.error_reason}")
                continue
            self.restarting_index = -1
            self.block = {"block": old["block"], "gs": new_gs, "len": self.bytes_acked}
            if recovery or stage == STAGE_APPEND:
                self.client.nn_call("updatePipeline", holder=holder, old_block=old,
                                    new_block=self.block, new_nodes=self.nodes)
            if recovery:
                self.emit("client.pipeline.recovered", path=path, block=old["block"],
                          old_gs=old["gs"], gs=new_gs, pipeline=list(self.nodes),
                          acked=self.bytes_acked)
            self.stage = STAGE_CLOSE if stage == STAGE_CLOSE_RECOVERY else STAGE_STREAMING
            return

    def _maybe_replace(self, stage: str) -> None:
        """The replace-datanode-on-failure policy, then getAdditionalDatanode and a
        TRANSFER_RBW of the acked bytes from a surviving node to the new one."""
        r, n = self.s.replication, len(self.nodes)
        hflushed = self.hflushed or self.is_append
        wanted = replace_datanode_policy(self.policy, r, n, hflushed)
        base = {"path": self.s.path, "block": self.block["block"], "policy": self.policy,
                "replication": r, "remaining": n, "hflushed": hflushed, "stage": stage}
        if not wanted:
            self.emit("client.pipeline.replace", decision="not_needed", new_node=None, **base)
            return
        # 3.4.0 DataStreamer.addDatanode2ExistingPipeline adds a node in the close stage
        # too (HDFS-16146; 2.x-3.3 returned at once): the survivor transfers its FINALIZED
        # replica
        error = None
        for _ in range(2):
            try:
                new_node = self._add_datanode_to_pipeline()
                self.emit("client.pipeline.replace", decision="added", new_node=new_node, **base)
                return
            except (OSError, EOFError, HdfsError, wire.MalformedFrame) as e:
                error = e
        if self.best_effort:
            self.emit("client.pipeline.replace", decision="failed_best_effort", new_node=None,
                      error=type(error).__name__, reason=str(error), **base)
            return
        self.emit("client.pipeline.replace", decision="failed", new_node=None,
                  error=type(error).__name__, reason=str(error), **base)
        raise PipelineError(f"Failed to replace a bad datanode on the existing pipeline: {error}")

    def _add_datanode_to_pipeline(self) -> str:
        lb = self.client.nn_call("getAdditionalDatanode", path=self.s.path,
                                 holder=self.client.holder, block=self.block["block"],
                                 existing=self.nodes, excluded=self.failed, num=1)
        new_node = lb["new"][0]
        nodes = list(lb["locations"])
        d = nodes.index(new_node)
        src = nodes[1] if d == 0 else nodes[d - 1]
        if self.bytes_acked > 0 or self.bytes_sent > 0 or self.stage != STAGE_CREATE:
            try:
                self._transfer(src, [new_node])
            except Exception:
                self.failed.append(new_node)
                raise
        self.nodes = nodes
        return new_node

    def _transfer(self, src: str, targets: list[str]) -> None:
        sock = wire.connect(self.client.routes.addr(src, "xfer"), self.client.connect_timeout)
        sock.settimeout(self.client.socket_timeout * 2)
        with sock:
            wire.send_message(sock, {"op": "TRANSFER_BLOCK", "block": self.block["block"],
                                     "gs": self.block["gs"], "targets": targets,
                                     "stage": STAGE_TRANSFER_RBW, "client": self.client.holder,
                                     "min_len": self.bytes_acked})
            reply = wire.recv_message(sock)
        if reply.get("status") != "SUCCESS":
            raise IOError(f"transfer of block {self.block['block']} from {src} to {targets}: "
                          f"{reply.get('message')}")
