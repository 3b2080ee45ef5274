"""The DataNode: data transfer (BlockReceiver, PacketResponder, reads, transfers), the
BPServiceActor (register, heartbeats, block reports, commands), and the DataNode side of
block recovery (BlockRecoveryWorker, initReplicaRecovery, updateReplicaUnderRecovery).
"""

from __future__ import annotations

import queue
import socket
import threading
import time
import traceback

from . import wire
from hdfs_contract.config import Config
from hdfs_contract.events import EventLog
from .fsdataset import (FINALIZED, RBW, RWR, STATE_ORDER, TEMPORARY, FsDataset, ReplicaInfo)
from .routing import Routes
from .rpc import HdfsError, RpcClient, RpcServer, UnregisteredNodeException

STAGE_CREATE = "PIPELINE_SETUP_CREATE"
STAGE_APPEND = "PIPELINE_SETUP_APPEND"
STAGE_STREAMING = "DATA_STREAMING"
STAGE_CLOSE = "PIPELINE_CLOSE"
STAGE_STREAMING_RECOVERY = "PIPELINE_SETUP_STREAMING_RECOVERY"
STAGE_APPEND_RECOVERY = "PIPELINE_SETUP_APPEND_RECOVERY"
STAGE_CLOSE_RECOVERY = "PIPELINE_CLOSE_RECOVERY"
STAGE_TRANSFER_RBW = "TRANSFER_RBW"
STAGE_TRANSFER_FINALIZED = "TRANSFER_FINALIZED"
STAGES = (STAGE_CREATE, STAGE_APPEND, STAGE_STREAMING, STAGE_CLOSE, STAGE_STREAMING_RECOVERY,
          STAGE_APPEND_RECOVERY, STAGE_CLOSE_RECOVERY, STAGE_TRANSFER_RBW,
          STAGE_TRANSFER_FINALIZED)


def read_timeout_extension(socket_timeout: float) -> float:
    """Hadoop adds 5 s per downstream node to pipeline read timeouts, so that the node
    nearest a failure times out first and names it; scaled down for short timeouts."""
    return min(5.0, socket_timeout / 4)


class DataNode:
    def __init__(self, node_id: str, rpc_addr: str, xfer_addr: str, routes: Routes,
                 conf: Config, storage: str, events: EventLog, rack: str = "/default-rack"):
        self.id, self.rack, self.routes, self.conf = node_id, rack, routes, conf
        self.events = events
        self.emit = events.emit
        self.data = FsDataset(storage, conf["dfs.bytes-per-checksum"], conf["dfs.checksum.type"],
                              self.emit)
        self.socket_timeout = conf["dfs.client.socket-timeout"]
        self.connect_timeout = conf["ipc.client.connect.timeout"]
        self._rpc_addr, self._xfer_addr = rpc_addr, xfer_addr
        self._peers: dict[str, RpcClient] = {}
        self._peers_lock = threading.Lock()
        self._ibr: list[dict] = []
        self._ibr_cond = threading.Condition()
        self._deletions: "queue.Queue[list[dict]]" = queue.Queue()
        self._stopped = threading.Event()
        self._recoveries: dict[int, int] = {}   # block -> recovery id this DN is primary for
        self.receivers: set[BlockReceiver] = set()   # the BlockReceivers running now
        self._receivers_lock = threading.Lock()
        self.restarting = False                 # shutting down for a restart
        self.registered = False

    # -- life cycle --------------------------------------------------------------------

    def start(self) -> None:
        self.data.load()
        self.emit("dn.start", replicas=len(self.data.replicas), rack=self.rack)
        for r in self.data.replicas.values():
            if r.state == RWR:
                self.emit("dn.replica.state", block=r.block, gs=r.gs, len=r.num_bytes, state=RWR,
                          reason="restart")
            elif r.state == RBW:   # saved by a shutdown for restart, back in time
                self.emit("dn.replica.state", block=r.block, gs=r.gs, len=r.num_bytes, state=RBW,
                          reason="restart_saved")
        host, port = wire.parse_addr(self._rpc_addr)
        self.rpc_server = RpcServer(host, port, self, self._log_internal,
                                    lambda op, error, reason: self.emit(
                                        "dn.rpc.malformed", op=op, error=error, reason=reason))
        self.rpc_server.serve_forever()
        xhost, xport = wire.parse_addr(self._xfer_addr)
        self.xfer_sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.xfer_sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.xfer_sock.bind((xhost, xport))
        self.xfer_sock.listen(128)
        threading.Thread(target=self._xfer_accept, daemon=True, name="xceiver-accept").start()
        threading.Thread(target=self._bp_service_actor, daemon=True, name="bpservice").start()

    def stop(self, restart: bool = False) -> None:
        """Stop; `restart`: a shutdown for restart (Hadoop's shutdownDatanode ...
        upgrade), where every BlockReceiver saves its RBW replica to load as RBW again
        and sends its writer the out-of-band RESTART ack before its sockets close."""
        if restart:
            self.restarting = True
            with self._receivers_lock:
                receivers = list(self.receivers)
            told = [r for r in receivers if r.send_restart_oob()]
            if told:
                # Hadoop's BlockReceiver waits before closing, so that the writer reads
                # the OOB ack before it notices the connection closing
                time.sleep(1.0)
            for receiver in told:
                receiver.stop(1.0)
        self._stopped.set()
        self.emit("dn.stop", restart=restart)
        self.rpc_server.close()
        try:
            self.xfer_sock.close()
        except OSError:
            pass

    def _log_internal(self, message: str) -> None:
        self.emit("dn.internal_error", reason=message[-2000:])

    def nn(self) -> RpcClient:
        return self.peer("nn")

    def peer(self, node: str) -> RpcClient:
        with self._peers_lock:
            client = self._peers.get(node)
            if client is None:
                client = RpcClient(self.routes.addr(node, "rpc"), self.connect_timeout,
                                   self.conf["ipc.client.rpc-timeout.ms"])
                self._peers[node] = client
            return client

    # -- BPServiceActor: registration, heartbeats, reports, commands --------------------

    def _bp_service_actor(self) -> None:
        hb_interval = self.conf["dfs.heartbeat.interval"]
        report_interval = self.conf["dfs.blockreport.intervalMsec"]
        threading.Thread(target=self._ibr_sender, daemon=True, name="ibr").start()
        threading.Thread(target=self._deleter, daemon=True, name="deleter").start()
        last_hb = last_report = 0.0
        while not self._stopped.is_set():
            try:
                if not self.registered:
                    self.nn().call("registerDatanode", dn=self.id, rack=self.rack)
                    self.registered = True
                    self.emit("dn.register", nn="nn")
                    last_report = 0.0
                now = time.monotonic()
                if now - last_report >= report_interval or last_report == 0.0:
                    self._full_block_report()
                    last_report = now
                if now - last_hb >= hb_interval:
                    last_hb = now
                    reply = self.nn().call("sendHeartbeat", dn=self.id,
                                           replicas=len(self.data.replicas))
                    for cmd in reply.get("commands", []):
                        self._process_command(cmd)
                    if reply.get("report"):
                        last_report = 0.0
            except UnregisteredNodeException:
                self.registered = False
                continue
            except (OSError, EOFError, HdfsError):
                pass   # the NameNode is down or unreachable: try again next interval
            self._stopped.wait(min(hb_interval, 0.5) if self.registered else 0.2)

    def _full_block_report(self) -> None:
        replicas = self.data.report()
        self.nn().call("blockReport", dn=self.id, replicas=replicas)
        self.emit("dn.block_report", count=len(replicas), full=True)

    def notify_nn(self, replica: ReplicaInfo, kind: str) -> None:
        """Queue an incremental block report (kind: receiving | received | deleted)."""
        with self._ibr_cond:
            self._ibr.append(dict(replica.describe(), kind=kind))
            self._ibr_cond.notify()

    def _ibr_sender(self) -> None:
        while not self._stopped.is_set():
            with self._ibr_cond:
                while not self._ibr and not self._stopped.is_set():
                    self._ibr_cond.wait(1.0)
                batch, self._ibr = self._ibr, []
            if not batch:
                continue
            try:
                if not self.registered:
                    raise OSError("not registered")
                self.nn().call("blockReceivedAndDeleted", dn=self.id, reports=batch)
                self.emit("dn.block_report", count=len(batch), full=False)
            except (OSError, EOFError, HdfsError):
                with self._ibr_cond:          # keep them for the next attempt
                    self._ibr = batch + self._ibr
                self._stopped.wait(0.5)

    def _process_command(self, cmd: dict) -> None:
        kind = cmd.get("type")
        if kind == "recover":
            threading.Thread(target=self.recover_block, args=(cmd,), daemon=True,
                             name=f"recovery-{cmd['block']}").start()
        elif kind == "transfer":
            threading.Thread(target=self._transfer_for_replication, args=(cmd,), daemon=True,
                             name=f"transfer-{cmd['block']}").start()
        elif kind == "invalidate":
            # off the heartbeat thread, as HDFS deletes (FsDatasetAsyncDiskService): disk
            # work on the heartbeat thread delays heartbeats (found by the explorer)
            self._deletions.put(cmd["blocks"])

    def _deleter(self) -> None:
        while not self._stopped.is_set():
            try:
                blocks = self._deletions.get(timeout=1.0)
            except queue.Empty:
                continue
            for item in blocks:
                try:
                    replica = self.data.get(item["block"])
                    if replica is not None and self.data.invalidate(item["block"], item["gs"]):
                        self.emit("dn.replica.invalidate", block=item["block"], gs=item["gs"])
                        self.notify_nn(replica, "deleted")
                except Exception:   # one failed deletion does not stop the others
                    self._log_internal(traceback.format_exc())

    # -- RPC (inter-DataNode and tools) -------------------------------------------------

    def rpc_initReplicaRecovery(self, block: int, gs: int, recovery_id: int) -> dict:
        timeout = self.conf["dfs.datanode.xceiver.stop.timeout.millis"]
        replica = self.data.get(block)
        before = replica.describe() if replica else {"state": None, "len": 0, "gs": 0}
        try:
            info = self.data.init_replica_recovery(block, gs, recovery_id, timeout)
        except HdfsError as e:
            self.emit("dn.recovery.init_replica", block=block, recovery_id=recovery_id,
                      state=before["state"], len=before["len"], gs=before["gs"],
                      result="error", error=type(e).__name__, reason=str(e))
            raise
        self.emit("dn.recovery.init_replica", block=block, recovery_id=recovery_id,
                  state=info["state"], len=info["len"], gs=info["gs"], result="ok")
        return info

    def rpc_updateReplicaUnderRecovery(self, block: int, recovery_id: int, new_len: int) -> dict:
        info = self.data.update_replica_under_recovery(block, recovery_id, new_len)
        self.emit("dn.recovery.update_replica", block=block, recovery_id=recovery_id,
                  len=new_len, gs=info["gs"])
        self.notify_nn(self.data.get(block), "received")
        return info

    def rpc_getReplicaVisibleLength(self, block: int) -> int:
        replica = self.data.get(block)
        if replica is None or replica.state in (TEMPORARY, RWR):
            raise HdfsError(f"no replica of block {block} with a visible length")
        return replica.visible_length

    def rpc_getReplicas(self, with_crc: bool = True) -> list[dict]:
        out = []
        with self.data.lock:
            replicas = list(self.data.replicas.values())
        for r in replicas:
            item = r.describe()
            if with_crc:
                try:
                    item["crc"] = self.data.replica_crc(r)
                except OSError:
                    item["crc"] = None
            out.append(item)
        return out

    def rpc_ping(self) -> dict:
        return {"id": self.id, "registered": self.registered}

    # -- block recovery (BlockRecoveryWorker) ------------------------------------------

    def _call_dn(self, dn: str, op: str, **args):
        if dn == self.id:
            return getattr(self, f"rpc_{op}")(**args)
        return self.peer(dn).call(op, **args)

    def recover_block(self, cmd: dict) -> None:
        """The primary's part of block recovery (MINIHDFS.md section 3, steps 3 to 6)."""
        block, gs, rid = cmd["block"], cmd["gs"], cmd["recovery_id"]
        locations, new_len = cmd["locations"], cmd.get("new_len")
        self.emit("dn.recovery.command", block=block, recovery_id=rid, pipeline=locations, gs=gs)
        try:
            answers, failed = [], 0
            for dn in locations:
                try:
                    info = self._call_dn(dn, "initReplicaRecovery", block=block, gs=gs,
                                         recovery_id=rid)
                except (HdfsError, OSError, EOFError, KeyError) as e:
                    self.emit("dn.recovery.error", block=block, recovery_id=rid, peer=dn,
                              error=type(e).__name__, reason=str(e))
                    if type(e).__name__ == "RecoveryInProgressException":
                        raise
                    if type(e).__name__ != "ReplicaNotFoundException":
                        failed += 1
                    continue
                answers.append(dict(info, dn=dn))
            # 3.x BlockRecoveryWorker.recover: only when every location failed does the
            # recovery abort; the others' answers (none at all, too) go on to syncBlock
            if failed == len(locations):
                raise OSError(f"All datanodes failed: block={block}, datanodeids={locations}")
            # No location has the replica (the writer died between addBlock and its
            # first packet): like all-zero-length replicas, the block is removed and the
            # file closed (Hadoop's BlockRecoveryWorker, HDFS-8344).
            self._sync_block(block, rid, answers, new_len, block_gs=gs)
        except Exception as e:
            self.emit("dn.recovery.error", block=block, recovery_id=rid,
                      error=type(e).__name__, reason=str(e))

    def _sync_block(self, block: int, rid: int, answers: list[dict], new_len: int | None,
                    block_gs: int = 0) -> None:
        # BlockRecoveryWorker: only replicas with data and a GS no older than the
        # block's take part; the others are ignored (an empty list removes the block)
        candidates = [a for a in answers if a["len"] > 0 and a["gs"] >= block_gs]
        # ... and of those only RWR or better (a TEMPORARY replica put under recovery is not)
        valid = [a for a in candidates if a["state"] in STATE_ORDER]
        ignored = [a for a in answers if a not in valid]
        if candidates and not valid:
            raise OSError(f"Found {len(candidates)} replica(s) for block {block} but none is "
                          f"in RWR or better state. datanodeids={[a['dn'] for a in answers]}")
        rule, length, participants = sync_length(valid, new_len)
        self.emit("dn.recovery.sync", block=block, recovery_id=rid, rule=rule, len=length,
                  answers=[{k: a[k] for k in ("dn", "state", "len", "gs")} for a in valid],
                  pipeline=participants, new_len=new_len,
                  ignored=[{k: a[k] for k in ("dn", "state", "len", "gs")} for a in ignored])
        if rule == "remove":
            self.nn().call("commitBlockSynchronization", block=block, recovery_id=rid,
                           new_gs=rid, new_len=0, close=True, delete=True, targets=[])
            return
        done = []
        for dn in participants:
            try:
                self._call_dn(dn, "updateReplicaUnderRecovery", block=block, recovery_id=rid,
                              new_len=length)
                done.append(dn)
            except (HdfsError, OSError, EOFError, KeyError) as e:
                self.emit("dn.recovery.error", block=block, recovery_id=rid, peer=dn,
                          error=type(e).__name__, reason=str(e))
        if not done:   # syncBlock: abort only if every participant failed
            raise OSError(f"Cannot recover block {block}, the following datanodes failed: "
                          f"{[dn for dn in participants if dn not in done]}")
        self.nn().call("commitBlockSynchronization", block=block, recovery_id=rid, new_gs=rid,
                       new_len=length, close=True, delete=False, targets=done)

    # -- data transfer (DataXceiver) ---------------------------------------------------

    def _xfer_accept(self) -> None:
        while not self._stopped.is_set():
            try:
                conn, _ = self.xfer_sock.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._xceiver, args=(conn,), daemon=True,
                             name="xceiver").start()

    # The fields of each data-transfer op header and their JSON types (bool is not int):
    # checked before the op runs, so a header with "block": "7" is refused, not coerced.
    _HEADER_FIELDS = {
        "READ_BLOCK": {"block": int, "offset": int, "len": int, "gs": (int, None)},
        "WRITE_BLOCK": {"block": int, "gs": int, "stage": str, "targets": (list, None),
                        "client": (str, None), "src": (str, None), "bpc": (int, None),
                        "min_bytes": (int, None), "max_bytes": (int, None), "old_gs": (int, None)},
        "TRANSFER_BLOCK": {"block": int, "gs": int, "targets": list, "stage": str,
                           "client": (str, None), "min_len": (int, None)},
    }

    @classmethod
    def check_header(cls, header: dict) -> None:
        """ValueError naming the first field of an op header that is missing or of the
        wrong type (None marks an optional field)."""
        op = header.get("op")
        fields = cls._HEADER_FIELDS.get(op) if isinstance(op, str) else None
        if fields is None:
            raise ValueError(f"unknown op {op!r}")
        for name, want in fields.items():
            types_ = want if isinstance(want, tuple) else (want,)
            optional = None in types_
            types_ = tuple(t for t in types_ if t is not None)
            if name not in header or header[name] is None:
                if optional:
                    continue
                raise ValueError(f"{op}: field {name} is missing")
            value = header[name]
            if isinstance(value, bool) or not isinstance(value, types_):
                raise ValueError(f"{op}: field {name} must be "
                                 f"{'/'.join(t.__name__ for t in types_)}, "
                                 f"not {type(value).__name__}")
        if "targets" in header and header["targets"] is not None and \
                not all(isinstance(t, str) for t in header["targets"]):
            raise ValueError(f"{op}: targets must be node names")

    def _xceiver(self, conn: socket.socket) -> None:
        conn.settimeout(self.socket_timeout)
        op = None
        try:
            header = wire.recv_message(conn)
            op = header.get("op")
            self.check_header(header)
            if op == "WRITE_BLOCK":
                BlockReceiver(self, conn, header).run()
            elif op == "READ_BLOCK":
                self._read_block(conn, header)
            elif op == "TRANSFER_BLOCK":
                self._transfer_block(conn, header)
            else:
                raise ValueError(f"unknown op {op!r}")
        except (wire.MalformedFrame, KeyError, TypeError, ValueError) as e:
            self.emit("dn.xfer.malformed", op=op if isinstance(op, str) else None,
                      error=type(e).__name__, reason=str(e)[:500])
            try:
                wire.send_message(conn, {"status": "ERROR", "message": f"bad request: {e}"})
            except OSError:
                pass
        except (OSError, EOFError):
            pass
        except Exception:
            self._log_internal(traceback.format_exc())
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def _read_block(self, conn: socket.socket, h: dict) -> None:
        """READ_BLOCK: send chunks of [offset, offset+len) with their checksums."""
        block, offset, length = int(h["block"]), int(h["offset"]), int(h["len"])
        replica = self.data.get(block)
        # TEMPORARY replicas are invisible; RWR ones have no visible length (seed 004 1.3)
        if replica is None or replica.state in (TEMPORARY, RWR) or replica.gs < int(h.get("gs", 0)):
            wire.send_message(conn, {"status": "ERROR", "message": f"no readable replica of {block}"})
            return
        visible = replica.visible_length
        if offset < 0 or offset > visible:
            wire.send_message(conn, {"status": "ERROR", "message": f"offset {offset} > {visible}"})
            return
        length = min(length, visible - offset)
        wire.send_message(conn, {"status": "SUCCESS", "len": length, "bpc": self.data.bpc})
        step = 64 * 1024
        pos, seq = offset, 0
        while pos < offset + length:
            n = min(step, offset + length - pos)
            data, sums, start = self._read_some(replica, pos, n)
            wire.Packet(seq, start, data, sums).send(conn)
            pos, seq = start + len(data), seq + 1
        conn.sendall(wire.Packet(seq, pos, b"", b"", wire.FLAG_LAST).encode())

    def _read_some(self, replica: ReplicaInfo, pos: int, n: int):
        """read_chunks that fails when the replica on disk is shorter than we think
        (a truncated or damaged file): never an endless run of empty packets."""
        data, sums, start = self.data.read_chunks(replica, pos, n)
        if start + len(data) <= pos:
            self.emit("dn.replica.short", block=replica.block, gs=replica.gs,
                      len=replica.num_bytes, offset=pos)
            raise OSError(f"replica of block {replica.block} ends before offset {pos} "
                          f"(expected {replica.num_bytes} bytes)")
        return data, sums, start

    def _transfer_block(self, conn: socket.socket, h: dict) -> None:
        """TRANSFER_BLOCK from a client: copy our replica to `targets` (pipeline recovery)."""
        block, targets = int(h["block"]), list(h["targets"])
        replica = self.data.get(block)
        if replica is None or replica.state not in (FINALIZED, RBW):
            wire.send_message(conn, {"status": "ERROR", "message": f"no replica of {block} to transfer"})
            return
        if replica.gs < int(h["gs"]) or replica.visible_length < int(h.get("min_len", 0)):
            wire.send_message(conn, {"status": "ERROR",
                                     "message": f"replica gs {replica.gs} len {replica.visible_length}"})
            return
        # 3.x DataNode.transferReplicaForPipelineRecovery: the stage follows our replica
        stage = STAGE_TRANSFER_FINALIZED if replica.state == FINALIZED else STAGE_TRANSFER_RBW
        try:
            self.transfer(replica, targets, stage, h.get("client", ""))
        except (OSError, EOFError, HdfsError, wire.MalformedFrame) as e:
            wire.send_message(conn, {"status": "ERROR", "message": f"transfer failed: {e}"})
            return
        wire.send_message(conn, {"status": "SUCCESS", "len": replica.visible_length})

    def _transfer_for_replication(self, cmd: dict) -> None:
        replica = self.data.get(cmd["block"])
        if replica is None or replica.state != FINALIZED or replica.gs != cmd["gs"]:
            return
        try:
            self.transfer(replica, cmd["targets"], STAGE_TRANSFER_FINALIZED, "")
        except (OSError, EOFError, HdfsError, wire.MalformedFrame) as e:
            self.emit("dn.pipeline.error", block=replica.block, gs=replica.gs,
                      peer=cmd["targets"][0], error=type(e).__name__, reason=str(e))

    def transfer(self, replica: ReplicaInfo, targets: list[str], stage: str, client: str) -> None:
        """DataTransfer: stream the replica's visible bytes to targets[0] (and on)."""
        length, gs = replica.visible_length, replica.gs
        sock = wire.connect(self.routes.addr(targets[0], "xfer"), self.connect_timeout)
        ext = read_timeout_extension(self.socket_timeout)
        sock.settimeout(self.socket_timeout + ext * len(targets))
        with sock:
            wire.send_message(sock, {"op": "WRITE_BLOCK", "block": replica.block, "gs": gs,
                                     "stage": stage, "targets": targets[1:], "client": client,
                                     "src": self.id, "min_bytes": 0, "max_bytes": length,
                                     "bpc": self.data.bpc})
            ack = wire.recv_message(sock)
            if ack.get("status") != "SUCCESS":
                raise OSError(f"transfer to {targets[0]}: {ack.get('message') or ack}")
            step = 64 * 1024
            pos, seq = 0, 0
            while pos < length:
                n = min(step, length - pos)
                data, sums, start = self._read_some(replica, pos, n)
                wire.Packet(seq, start, data, sums).send(sock)
                pos, seq = start + len(data), seq + 1
            sock.sendall(wire.Packet(seq, pos, b"", b"", wire.FLAG_LAST).encode())
            acks = wire.FrameReader(sock, 4096)
            while True:
                got, statuses = acks.ack()
                if any(s != wire.SUCCESS for s in statuses):
                    raise OSError(f"transfer to {targets[0]}: ack {statuses}")
                if got == seq:
                    break
        self.emit("dn.transfer", block=replica.block, gs=gs, len=length, target=targets[0],
                  stage=stage)


def sync_length(answers: list[dict], new_len: int | None):
    """syncBlock's length rule (MINIHDFS.md section 3 step 4): (rule, length, participants)."""
    if not answers or (new_len is None and all(a["len"] == 0 for a in answers)):
        return "remove", 0, []
    best = max((a for a in answers if a["state"] in STATE_ORDER),
               key=lambda a: STATE_ORDER[a["state"]], default=None)
    if best is None:
        raise OSError(f"no replica in a recoverable state: {answers}")
    state = best["state"]
    if state == FINALIZED:
        finalized = [a for a in answers if a["state"] == FINALIZED]
        length = finalized[0]["len"]
        if any(a["len"] != length for a in finalized):
            raise OSError(f"inconsistent sizes of finalized replicas: {finalized}")
        rule = "finalized"
        participants = [a["dn"] for a in answers if a["state"] == FINALIZED
                        or (a["state"] == RBW and a["len"] == length)]
    else:
        same = [a for a in answers if a["state"] == state]
        length = min(a["len"] for a in same)
        rule = "min_rbw" if state == RBW else "min_rwr"
        participants = [a["dn"] for a in same]
    if new_len is not None:
        rule, length = "truncate", new_len
        participants = [a["dn"] for a in answers if a["len"] >= new_len
                        and a["state"] in STATE_ORDER]
    return rule, length, participants


class BlockReceiver:
    """Receives one block's packets from upstream, mirrors them downstream, verifies,
    writes them, and (through its PacketResponder) acks them upstream."""

    def __init__(self, dn: DataNode, conn: socket.socket, h: dict):
        self.dn, self.conn, self.h = dn, conn, h
        self.block, self.gs, self.stage = int(h["block"]), int(h["gs"]), h["stage"]
        if self.stage not in STAGES:
            raise ValueError(f"unknown stage {self.stage!r}")
        self.targets = list(h.get("targets", []))
        self.client = h.get("client", "")
        self.src = h.get("src", "")
        self.bpc = dn.data.bpc
        if int(h.get("bpc", self.bpc)) != self.bpc:
            raise ValueError(f"bytes per checksum {h.get('bpc')} != {self.bpc}")
        # Hadoop's shouldVerifyChecksum: the last node of a pipeline verifies, and every
        # node does when the writer is a DataNode (transfers, re-replication).
        self.verify = not self.targets or self.stage in (STAGE_TRANSFER_RBW,
                                                         STAGE_TRANSFER_FINALIZED)
        self.mirror: socket.socket | None = None
        self.mirror_error = False
        self.replica: ReplicaInfo | None = None
        self.acks: queue.SimpleQueue = queue.SimpleQueue()   # C-implemented: no Condition per packet
        self._stopped = threading.Event()
        self._done = threading.Event()
        self.responder: threading.Thread | None = None
        self.fds: tuple[int, int] | None = None
        self.up_lock = threading.Lock()        # acks upstream come from two threads

    # Called by recovery (stop the writer, seed 000 Q1) or invalidation.
    def stop(self, timeout: float) -> None:
        self._stopped.set()
        for s in (self.conn, self.mirror):
            if s is not None:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        self._done.wait(timeout)

    def send_restart_oob(self) -> bool:
        """The DataNode stops for a restart: save the replica and tell the upstream node
        (or the client) with an OOB RESTART ack. True if this receiver was writing."""
        replica = self.replica
        if replica is None or self._done.is_set() or self.fds is None:
            return False
        self.dn.data.save_for_restart(replica,
                                      self.dn.conf["dfs.datanode.restart.replica.expiration"])
        self.dn.emit("dn.pipeline.oob", block=self.block, gs=self.gs, upstream=self.src,
                     status="OOB_RESTART")
        try:
            with self.up_lock:
                self.conn.sendall(wire.encode_ack(wire.OOB_SEQNO, [wire.OOB_RESTART]))
        except OSError:
            pass
        return True

    def _setup_replica(self) -> ReplicaInfo:
        data, h, stage = self.dn.data, self.h, self.stage
        min_bytes, max_bytes = int(h.get("min_bytes", 0)), int(h.get("max_bytes", 0))
        if stage == STAGE_CREATE:
            # a create-stage recovery (3.4.1) sends the failed setup's GS as old_gs
            return data.create_rbw(self.block, self.gs,
                                   recreate=int(h.get("old_gs", self.gs)) != self.gs)
        if stage == STAGE_APPEND:
            return data.append(self.block, int(h["old_gs"]), self.gs, min_bytes)
        if stage == STAGE_STREAMING_RECOVERY:
            return data.recover_rbw(self.block, int(h.get("old_gs", self.gs)), self.gs,
                                    min_bytes, max_bytes)
        if stage == STAGE_APPEND_RECOVERY:
            return data.recover_append(self.block, self.gs, min_bytes)
        if stage == STAGE_CLOSE_RECOVERY:
            return data.recover_close(self.block, self.gs, min_bytes)
        if stage in (STAGE_TRANSFER_RBW, STAGE_TRANSFER_FINALIZED):
            return data.create_temporary(self.block, self.gs)
        raise ValueError(f"stage {stage} cannot open a replica")

    def _connect_mirror(self) -> str:
        """Connect downstream and forward the request; returns firstBadLink ('' if fine)."""
        target = self.targets[0]
        try:
            self.mirror = wire.connect(self.dn.routes.addr(target, "xfer"), self.dn.connect_timeout)
            ext = read_timeout_extension(self.dn.socket_timeout)
            self.mirror.settimeout(self.dn.socket_timeout + ext * len(self.targets))
            fwd = dict(self.h, targets=self.targets[1:], src=self.dn.id)
            wire.send_message(self.mirror, fwd)
            ack = wire.recv_message(self.mirror)
        except (OSError, EOFError, KeyError, wire.MalformedFrame) as e:
            self.dn.emit("dn.pipeline.error", block=self.block, gs=self.gs, peer=target,
                         error=type(e).__name__, reason=f"connect to mirror: {e}")
            return target
        if ack.get("status") != "SUCCESS":
            return ack.get("first_bad_link") or target
        return ""

    def run(self) -> None:
        with self.dn._receivers_lock:
            self.dn.receivers.add(self)
        try:
            self._run()
        finally:
            with self.dn._receivers_lock:
                self.dn.receivers.discard(self)

    def _run(self) -> None:
        dn = self.dn
        pipeline = [dn.id] + self.targets
        try:
            self.replica = self._setup_replica()
        except (HdfsError, OSError) as e:
            dn.emit("dn.pipeline.setup", block=self.block, gs=self.gs, stage=self.stage,
                    pipeline=pipeline, upstream=self.src, status="ERROR",
                    downstream=self.targets[0] if self.targets else None,
                    error=type(e).__name__, reason=str(e))
            wire.send_message(self.conn, {"status": "ERROR", "first_bad_link": dn.id,
                                          "message": f"{type(e).__name__}: {e}"})
            return
        self.replica.writer = self
        if self.stage in (STAGE_CREATE, STAGE_APPEND, STAGE_STREAMING_RECOVERY,
                          STAGE_APPEND_RECOVERY):
            # reported at once, as Hadoop does, so that a replica of a setup that fails
            # downstream is known to the NameNode and invalidated with its abandoned block
            dn.notify_nn(self.replica, "receiving")
        bad_link = self._connect_mirror() if self.targets else ""
        status = "ERROR" if bad_link else "SUCCESS"
        dn.emit("dn.pipeline.setup", block=self.block, gs=self.gs, stage=self.stage,
                pipeline=pipeline, upstream=self.src,
                downstream=self.targets[0] if self.targets else None, status=status,
                first_bad_link=bad_link or None)
        if bad_link:
            self._close_mirror()
            self.replica.writer = None
            if self.replica.state == TEMPORARY:
                dn.data.unfinalize_failed(self.replica)
            wire.send_message(self.conn, {"status": "ERROR", "first_bad_link": bad_link,
                                          "message": f"could not set up the pipeline to {bad_link}"})
            return
        wire.send_message(self.conn, {"status": "SUCCESS", "first_bad_link": ""})
        if self.stage == STAGE_CLOSE_RECOVERY:
            dn.notify_nn(self.replica, "received")
        self.fds = dn.data.open_for_write(self.replica)
        self.responder = threading.Thread(target=self._packet_responder, daemon=True,
                                          name=f"responder-{self.block}")
        self.responder.start()
        try:
            self._receive_packets()
        except (OSError, EOFError, wire.MalformedFrame, HdfsError) as e:   # HdfsError: a
            # packet at an offset beyond the bytes on disk (fsdataset.write_packet)
            if not self._stopped.is_set():
                dn.emit("dn.pipeline.error", block=self.block, gs=self.gs, peer=self.src,
                        error=type(e).__name__, reason=f"receive: {e}")
        finally:
            self.acks.put(None)
            self.responder.join(self.dn.socket_timeout * 2)
            self._close_mirror()
            os_close(self.fds)
            if self.replica.writer is self:
                self.replica.writer = None
            if self.replica.state == TEMPORARY:
                dn.data.unfinalize_failed(self.replica)
            self._done.set()

    def _receive_packets(self) -> None:
        data, replica, fn = self.dn.data, self.replica, self.dn.data.crc
        # One reused buffer: the packet is forwarded and written before the next read;
        # the responder only looks at its seqno, flags and lengths.
        reader = wire.FrameReader(self.conn)
        while not self._stopped.is_set():
            packet, raw = reader.packet(self.bpc)
            if self.mirror is not None and not self.mirror_error:
                try:
                    self.mirror.sendall(raw)
                except OSError as e:
                    self._mirror_failed(e)
            if packet.seqno != wire.HEARTBEAT_SEQNO and packet.data:
                bad = wire.first_bad_chunk(packet.data, packet.sums, self.bpc, fn) \
                    if self.verify else -1
                if bad >= 0:
                    self.dn.emit("dn.checksum.error", block=self.block,
                                 offset=packet.offset + bad * self.bpc, peer=self.src)
                    self.acks.put((packet, wire.ERROR_CHECKSUM))
                    raise OSError(f"checksum error in packet {packet.seqno}")
                with data.lock:
                    if self._stopped.is_set():
                        return
                    data.write_packet(replica, self.fds[0], self.fds[1], packet.offset,
                                      packet.data, packet.sums)
            self.acks.put((packet, wire.SUCCESS))
            if packet.last:
                return

    def _mirror_failed(self, e: Exception) -> None:
        if not self.mirror_error:
            self.mirror_error = True
            self.dn.emit("dn.pipeline.error", block=self.block, gs=self.gs, peer=self.targets[0],
                         error=type(e).__name__, reason=f"mirror: {e}")
            self._close_mirror()

    def _close_mirror(self) -> None:
        if self.mirror is not None:
            try:
                self.mirror.close()
            except OSError:
                pass

    def _packet_responder(self) -> None:
        """PacketResponder: for each packet, wait for the downstream ack, then ack upstream
        with our status followed by the downstream ones ([SUCCESS, ERROR] when the mirror
        failed, so the client learns which node to drop)."""
        mirror_acks = wire.FrameReader(self.mirror, 4096) if self.mirror is not None else None
        while True:
            item = self.acks.get()
            if item is None:
                return
            packet, my_status = item
            downstream: list[int] = []
            if self.targets and my_status == wire.SUCCESS:
                if not self.mirror_error:
                    try:
                        seqno, downstream = mirror_acks.ack()
                        while seqno == wire.OOB_SEQNO:
                            # a downstream node restarts: pass its OOB ack on at once
                            with self.up_lock:
                                self.conn.sendall(wire.encode_ack(
                                    seqno, [wire.SUCCESS] + downstream))
                            seqno, downstream = mirror_acks.ack()
                        if seqno != packet.seqno:
                            raise OSError(f"ack for seqno {seqno}, expected {packet.seqno}")
                    except (OSError, EOFError, wire.MalformedFrame) as e:
                        if self._stopped.is_set():
                            return
                        self._mirror_failed(e)
                if self.mirror_error:
                    downstream = [wire.ERROR]
            if my_status == wire.SUCCESS and packet.seqno != wire.HEARTBEAT_SEQNO:
                if packet.last and not any(s != wire.SUCCESS for s in downstream):
                    try:
                        self._finish_block()
                    except HdfsError as e:
                        # the replica was invalidated while being written: as Hadoop's
                        # PacketResponder, no ack for the last packet, the stream closes
                        self.dn.emit("dn.pipeline.error", block=self.block, gs=self.gs,
                                     peer=self.src, error=type(e).__name__,
                                     reason=f"finalize: {e}")
                        return
                elif packet.data and not any(s != wire.SUCCESS for s in downstream):
                    # BlockReceiver: bytesAcked advances only on an all-SUCCESS ack
                    self.replica.bytes_acked = max(self.replica.bytes_acked,
                                                   min(packet.end, self.replica.num_bytes))
            try:
                with self.up_lock:
                    self.conn.sendall(wire.encode_ack(packet.seqno, [my_status] + downstream))
            except OSError:
                return
            if packet.last or my_status != wire.SUCCESS:
                return

    def _finish_block(self) -> None:
        dn, replica = self.dn, self.replica
        if self.stage == STAGE_TRANSFER_RBW:
            dn.data.convert_temporary_to_rbw(replica)
            dn.notify_nn(replica, "receiving")
            return
        if replica.state != FINALIZED:
            dn.data.finalize(replica)
        dn.notify_nn(replica, "received")


def os_close(fds) -> None:
    import os
    if fds:
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass
