"""Apache Hadoop log4j lines -> spec/EVENTS.md events (owns the mapping, one table per release).

Hadoop's daemons and its DFSClient write log4j text, not our event contract. This module
parses one line of the agreed layout

    %d{ISO8601} %p [%t] %c{1}/%C{1}: %m%n       (the `/Caller` part is optional)

and turns the lines that carry a write-path fact (block allocation with its pipeline,
GS bumps, updatePipeline, fsync, lease expiry / recovery, internalReleaseLease and its
recovery id, initReplicaRecovery, syncBlock's choice, commitBlockSynchronization,
replica state changes, the client's pipeline errors and rebuilt pipelines, file
completion, the NameNode's startup safe mode) into contract events. Every adapted event carries `source: "hadoop-log"`
and `logger` (the raw `%c{1}/%C{1}` of its line) so a reader can tell it from a
mini-HDFS event and find the line it came from.

A `LogMapper` is per process (one role, one node): some facts span lines (the new GS
of a bump is on the updatePipeline line; syncBlock's answers are on the syncList line
before the bestState line; a lease's holder is named on the recoverLease line, its
path on the internalReleaseLease line), so the mapper keeps that little state.

`TABLES` holds one table of rules per Hadoop release line; a release whose lines
differ from 3.4 gets its own table (the others share 3.4's). `DEBUG_LOGGERS` lists the
loggers raised to DEBUG because a fact a check needs is only logged there.
`OBSERVABLE` says, per check of spec/CHECKS.md, whether the mapped events let the
verifier judge it on Hadoop, and if not, what is missing.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
from typing import Callable, Iterable

SOURCE = "hadoop-log"
# how long a request line's events wait for the handler thread's next line (the
# exception of a refused call follows within milliseconds)
HOLD_S = 1.0
# Lines a create/append handler logs while it recovers the old holder's lease inside the
# call (FSNamesystem.recoverLeaseInternal, internalReleaseLease): they decide nothing about
# the call, which goes on only if the recovery closed the file at once
_IN_CALL_RECOVERY = re.compile(r"^(startFile: recover \[Lease|Recovering \[Lease|"
                               r"DIR\* NameSystem\.internalReleaseLease|BLOCK\* \{UCState=)")
# The NameNode's own lease holder while it recovers a lease (HdfsServerConstants).
NAMENODE_HOLDER = "HDFS_NameNode"
DEFAULT_RELEASE = "3.4.2"

# Loggers raised to DEBUG in every Hadoop JVM of a run (hadoop-sut writes
# `log4j.logger.<name>=DEBUG` for each). Each buys a fact that INFO does not log:
# - org.apache.hadoop.hdfs.StateChange (NameNode): startFile / appendFile with the
#   holder (nn.file.create, nn.file.append, nn.lease.add) and abandonBlock. A few lines
#   per file operation and per block, none per packet. Also prepareFileForTruncate, which
#   marks the next `recovery started` line as a truncate's (nn.recovery.start).
# - org.apache.hadoop.hdfs.DataStreamer (client): `pipeline = [...], blk_<id>_<gs>`
#   after every pipeline setup, the only line that names the rebuilt pipeline and its
#   new GS (client.pipeline.setup / client.pipeline.recovered, check P1). It also logs
#   two lines per packet (send, ack): about 2 x 4096 lines for 256 MiB of 64 KiB packets.
# - org.apache.hadoop.hdfs.client.impl.LeaseRenewer (client): one line per renewal
#   (client.lease.renew, check L6), every soft limit / 2.
# - BlockStateChange (NameNode): `BLOCK* <block> recovery started, primary=<dn>`, the only
#   line naming the primary DataNode of a block recovery (nn.recovery.start, check B1).
#   Also a few lines per replica received or invalidated, none per packet.
# Not raised: org.apache.hadoop.hdfs.server.datanode.DataNode (BlockReceiver,
# DataXceiver, BlockRecoveryWorker log through it): at DEBUG it writes several lines per
# packet on every DataNode, and the recovery facts it would add are already at INFO.
DEBUG_LOGGERS: list[str] = [
    "org.apache.hadoop.hdfs.StateChange",
    "BlockStateChange",
    "org.apache.hadoop.hdfs.DataStreamer",
    "org.apache.hadoop.hdfs.client.impl.LeaseRenewer",
]

# Per check of spec/CHECKS.md (+ H1 of docs/events.md): None if the mapped events let the
# verifier judge it on Hadoop 3.x, else the reason the check skips with.
OBSERVABLE: dict[str, str | None] = {
    "I1": None,
    "P1": None,   # client Error Recovery (INFO) + DataStreamer DEBUG `pipeline = `
    "P2": "needs client.pipeline.replace with its inputs (policy, replication, remaining, "
          "hflushed): Hadoop logs only the failures (client.pipeline.replace_failed)",
    "P3": "needs dn.replica.state with the new GS of each replica after a pipeline "
          "recovery and dn.transfer: Hadoop logs recoverRbw with the old GS only",
    "P4": None,   # NameNode updatePipeline + bumpBlockGenerationStamp (INFO)
    "P5": None,   # final_state.json only
    "P6": None,   # the Java workload client's own client.close / client.op.end
    "P7": "needs dn.pipeline.setup with the first bad link and the client's excluded "
          "nodes: Hadoop logs them only at DEBUG of the DataNode logger (per packet)",
    "L1": None,   # nn.lease.add (StateChange DEBUG), remove / reassign (INFO)
    "L2": "needs nn.lease.recover by another requester with force=false: Hadoop's "
          "recoverLease RPC is always forced and its log line names the old holder only",
    "L3": None,   # LeaseManager `has expired hard limit` + internalReleaseLease; the
                  # renewals from the clients' LeaseRenewer lines (nn.lease.renew)
    "L4": None,   # final_state.json + nn.lease.recover / reassign
    "L5": None,   # holder on allocate (from the lease), update_pipeline, nn.rpc.reject
    "L6": None,   # LeaseRenewer DEBUG `Lease renewed for client`
    "B1": None,   # internalReleaseLease RecoveryId + `recovery started, primary=`
    "B2": None,   # BlockRecoveryWorker syncList + bestState lines (INFO)
    "B3": None,   # commitBlockSynchronization + updateReplica (INFO)
    "B4": None,   # commitBlockSynchronization deleteBlock=true
    "B5": None,   # final_state.json
    "B6": "needs dn.replica.state RWR at DataNode start: Hadoop does not log each "
          "replica it loads as RWR",
    "D1": None,
    "D2": None,
    "D3": None,
    "D4": None,
    "H1": "needs nn.block.state COMPLETE: Hadoop logs no line when a block completes",
}


# The checks the Hadoop agent (agent.py; on by default on 3.x) makes observable,
# with the agent rule that gives each its missing event.
AGENT_OBSERVES: dict[str, str] = {
    "P2": "replace_policy / replace_done: client.pipeline.replace with the policy's inputs",
    "L2": "recover_lease_entry / _exit / _error: nn.lease.recover with requester and force",
    "B6": "replica_loaded: dn.replica.state of each rbw replica loaded at DataNode start",
    "H1": "block_complete: nn.block.state COMPLETE",
    "P3": "replica_created / _recover_rbw / _append / _recover_append / _recover_close / "
          "_transfer_rbw: dn.replica.state of each replica at its new GS (with the acked "
          "bytes of client.pipeline.error from the client's ack lines, and dn.transfer from "
          "the DataNode's DataTransfer line)",
    "P7": "setup_failed: client.pipeline.error of a new block's failed setup and the node it "
          "excludes; setup_ack / setup_mirror_failed: dn.pipeline.setup with the first bad link",
}


def skip_reason(check: str, release: str = DEFAULT_RELEASE, agent: bool = False) -> str | None:
    """The verifier's skip reason for `check` on Hadoop `release` (with the agent on or
    not), None if observable."""
    if agent and check in AGENT_OBSERVES:
        return None
    why = OBSERVABLE.get(check)
    return None if why is None else f"not observable on hadoop {release}: {why}"


# -- the layout ------------------------------------------------------------------------

_HEAD = re.compile(r"^(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[,.]\d{3})\s+([A-Z]+)\s+\[")
_LOGGER = re.compile(r"\s*([\w$.]+)(?:/([\w$.]+))?: ")


@dataclasses.dataclass
class LogLine:
    ts: float
    level: str
    thread: str
    logger: str        # `%c{1}` or `%c{1}/%C{1}` as written
    msg: str


def parse_line(line: str) -> LogLine | None:
    """One log4j line of the agreed layout, or None (a stack-trace or other text line)."""
    line = line.rstrip("\r\n")
    m = _HEAD.match(line)
    if not m:
        return None
    # the thread name may hold brackets itself ("... [Receiving block BP-..:blk_..]"):
    # it ends at the bracket that closes the first one
    depth, i = 1, m.end()
    while i < len(line) and depth:
        c = line[i]
        depth += (c == "[") - (c == "]")
        i += 1
    if depth:
        return None
    thread = line[m.end():i - 1]
    lg = _LOGGER.match(line, i)
    if not lg:
        return None
    stamp = m.group(1).replace("T", " ").replace(",", ".")
    # log4j writes the JVM's local time; the adapter runs on the same machine
    ts = datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S.%f").timestamp()
    logger = lg.group(1) + (f"/{lg.group(2)}" if lg.group(2) else "")
    return LogLine(ts, m.group(2), thread, logger, line[lg.end():])


# -- pieces of Hadoop's text -----------------------------------------------------------

_BLK = r"(?:BP-[\w.\-]+:)?blk_(-?\d+)_(\d+)"
_BLK_RE = re.compile(_BLK)
_DNINFO = re.compile(r"DatanodeInfoWithStorage\[([^,\]]+)")
_ADDR = re.compile(r"([\w.\-]+:\d+)")


def _blk(text: str) -> tuple[int, int] | None:
    m = _BLK_RE.search(text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _exception_name(text: str) -> str:
    name = text.split(":", 1)[0].strip()
    return name.rsplit(".", 1)[-1].rstrip(")")


@dataclasses.dataclass
class Rule:
    """A line of one release: `pattern` searched in the message (or, for an exception
    line without the layout's head, the whole line); `handler(mapper, match, line)`
    returns the events (dicts without the envelope's node/role/seq)."""
    name: str
    role: str                      # namenode | datanode | client
    pattern: re.Pattern
    handler: Callable
    bare: bool = False             # matches a line without the layout (stack trace text)


class LogMapper:
    """Maps the log lines of one Hadoop process to contract events."""

    def __init__(self, role: str, release: str = DEFAULT_RELEASE,
                 hosts: dict[str, str] | None = None):
        if role not in ("namenode", "datanode", "client"):
            raise ValueError(f"role {role!r}: use namenode, datanode or client")
        self.role, self.release = role, release
        self.hosts = dict(hosts or {})
        self._by_port: dict[str, str] = {}
        for addr, node in self.hosts.items():
            port = addr.rsplit(":", 1)[-1]
            self._by_port[port] = node if self._by_port.get(port, node) == node else ""
        self.rules = [r for r in table_for(release) if r.role == role]
        # state across lines
        self.path_holder: dict[str, str] = {}            # path -> lease holder
        self.block_path: dict[int, str] = {}             # block -> file
        self.block_pipeline: dict[int, list[str]] = {}   # block -> last known pipeline
        self.pending_bump: dict[int, tuple[float, str, str]] = {}   # block -> ts, holder, logger
        self.pending_update: dict[tuple[int, int], dict] = {}
        self.pending_commit: dict[int, dict] = {}
        self.pending_primary: dict[str, tuple] = {}      # thread -> primary, replicas
        self.block_gs: dict[int, int] = {}               # NN: block -> GS it holds
        self.truncating: dict[str, str] = {}             # NN: thread -> path it truncates
        self.truncate_prep: dict[str, tuple] = {}        # NN: thread -> path, ts of the cut
        self.recovering_paths: set[str] = set()          # NN: lease recovery under way
        self.recovery_ctx: dict[int, dict] = {}          # DN: block -> initReplicaRecovery facts
        self.sync_lists: dict[int, tuple[list[dict], bool]] = {}
        self.recovery_ids: dict[int, int] = {}           # DN primary: block -> recovery id
        self.pending_setup: dict[int, dict] = {}         # client: append / recovery under way
        self.candidate: dict[int, list[str]] = {}        # client: pipeline being set up
        self.announced: set[tuple[int, int]] = set()     # client: (block, gs) setups logged
        self.stage: dict[int, str] = {}                  # client: block -> last stage seen
        self.setup_failed: set[int] = set()              # client: new blocks that failed setup
        self.last_acked: dict[int, int] = {}             # client: block -> bytes acked by all
        self.packet_end: dict[tuple[int, int], int] = {}  # client: (block, seqno) -> last byte
        self.bad_node: dict[int, str] = {}               # client: block -> node it blamed
        self.replace_failed: set[tuple[int, int]] = set()
        self.last_error_block: tuple[int, int] | None = None
        self._last: LogLine | None = None
        self.cont_block: int | None = None     # the replica a continuation line describes
        self.pending_call: str | None = None   # NN: the RPC whose exception the next line names
        self.pending_complete: dict[str, tuple] = {}   # NN: thread -> complete()'s path, holder, ts
        self.pending_start = False
        self.pending_nn_start = False          # NN: started, namespace not loaded yet
        self.ordered_transfers: set[tuple[int, int]] = set()   # DN: DNA_TRANSFER blocks
        self.formatting = False
        self.stopping_for_restart = False   # datanode: shutdownDatanode(upgrade=true) seen
        self.safemode = False                  # NN: in startup safe mode (BlockManagerSafeMode)
        self.safemode_leaving = False          # NN: `Safe mode is OFF` seen, its secs line next
        self.pending_safemode: dict | None = None   # NN: enter / extension, its tip lines next
        # NN: events of a request line (fsync, startFile, appendFile) that the handler
        # logs *before* checking the lease: held per handler thread until that thread
        # logs something else (kept) or the call's exception (dropped), or HOLD_S pass
        self.held: dict[str, tuple[float, list[dict]]] = {}

    # -- names ---------------------------------------------------------------------------

    def node_of(self, addr: str) -> str:
        """A Hadoop address (`127.0.0.1:10010`, `dn1.hdfs:10010`, `localhost:10010`) as a
        node id through `hosts`; an address `hosts` does not know stays as it is."""
        addr = addr.strip().lstrip("/")
        if addr in self.hosts:
            return self.hosts[addr]
        host, _, port = addr.rpartition(":")
        if "/" in host:                     # "dn1.hdfs/127.1.0.1:10010"
            for h in host.split("/"):
                if f"{h}:{port}" in self.hosts:
                    return self.hosts[f"{h}:{port}"]
        if host in ("127.0.0.1", "localhost") and self._by_port.get(port):
            return self._by_port[port]
        return addr

    def nodes_in(self, text: str) -> list[str]:
        infos = _DNINFO.findall(text)
        addrs = infos if infos else _ADDR.findall(text)
        return [self.node_of(a) for a in addrs]

    # -- feeding -------------------------------------------------------------------------

    def feed(self, raw: str) -> list[dict]:
        """The events of one raw log line (possibly none)."""
        line = parse_line(raw)
        if line is None:
            text = raw.strip()
            if not text or self._last is None:
                return []
            # a line of a message's continuation (a stack trace): keep the time and
            # thread of the line it continues
            base = self._last
            line = LogLine(base.ts, base.level, base.thread, base.logger, text)
            bare = True
        else:
            self._last = line
            self.cont_block = None
            if self.pending_call is not None and "call Call#" not in line.msg:
                self.pending_call = None
            bare = False
        out: list[dict] = self._release(line) if self.held and not bare else []
        if not bare and self.pending_safemode is not None:
            out.insert(0, self._safemode_done())
        for rule in self.rules:
            if rule.bare != bare:
                continue
            m = rule.pattern.search(line.msg)
            if m:
                for ev in rule.handler(self, m, line) or ():
                    if not ev.pop("_keep", False):
                        ev = {"ts": round(line.ts, 6), **ev, "source": SOURCE,
                              "logger": line.logger}
                    out.append(ev)
                break
        return out

    def hold(self, ln: LogLine, events: list[dict]) -> list[dict]:
        """Keep a request line's events until the call is known not to have failed."""
        self.held[ln.thread] = (ln.ts, [{"ts": round(ln.ts, 6), **e, "source": SOURCE,
                                         "logger": ln.logger} for e in events])
        return []

    def _released(self, events: list[dict]) -> list[dict]:
        for e in events:
            if e["event"] in ("nn.lease.add", "nn.file.fsync"):
                self.path_holder[e["path"]] = e["holder"]
        return events

    def _release(self, line: LogLine) -> list[dict]:
        out = []
        for thread, (ts, events) in list(self.held.items()):
            if thread == line.thread:
                if "call Call#" in line.msg:           # the call failed: it did not happen
                    del self.held[thread]
                elif _IN_CALL_RECOVERY.match(line.msg):
                    continue                           # not decided yet
                elif line.level not in ("WARN", "ERROR"):
                    out += self.held.pop(thread)[1]    # the call went on
            elif line.ts - ts > HOLD_S:
                out += self.held.pop(thread)[1]
        return self._released(out)

    def _safemode_done(self) -> dict:
        ev, self.pending_safemode = self.pending_safemode, None
        return ev

    def release_older(self, now: float) -> list[dict]:
        """Held events older than HOLD_S at wall-clock `now` (a log gone quiet)."""
        out = []
        if self.pending_safemode is not None and now - self.pending_safemode["ts"] > HOLD_S:
            out.append(self._safemode_done())
        for thread, (ts, events) in list(self.held.items()):
            if now - ts > HOLD_S:
                out += self.held.pop(thread)[1]
        return self._released(out)

    def flush(self) -> list[dict]:
        """Events still held (the end of a log)."""
        out = [e for _, events in self.held.values() for e in events]
        self.held.clear()
        if self.pending_safemode is not None:
            out.insert(0, self._safemode_done())
        return self._released(out)

    def feed_all(self, lines: Iterable[str]) -> list[dict]:
        out: list[dict] = []
        for raw in lines:
            out.extend(self.feed(raw))
        return out + self.flush()


def _ev(name: str, **fields) -> dict:
    return {"event": name, **fields}


# -- NameNode ----------------------------------------------------------------------------

def _nn_allocate(mp: LogMapper, m: re.Match, ln: LogLine):
    block, gs, path = int(m.group(1)), int(m.group(2)), m.group(4)
    pipeline = mp.nodes_in(m.group(3))
    mp.block_path[block] = path
    mp.block_pipeline[block] = pipeline
    mp.block_gs[block] = gs
    return [_ev("nn.block.allocate", path=path, block=block, gs=gs, pipeline=pipeline,
                holder=mp.path_holder.get(path))]


def _nn_fsync(mp: LogMapper, m: re.Match, ln: LogLine):
    # logged before checkLease: a fenced writer's refused fsync logs it too
    path, holder = m.group(1), m.group(2)
    return mp.hold(ln, [_ev("nn.file.fsync", path=path, holder=holder)])


def _nn_start_file(mp: LogMapper, m: re.Match, ln: LogLine):
    # logged before the lease checks: a refused create (AlreadyBeingCreated) logs it too
    path, holder = m.group(1), m.group(2)
    return mp.hold(ln, [_ev("nn.file.create", path=path, holder=holder),
                        _ev("nn.lease.add", holder=holder, path=path)])


def _nn_append_file(mp: LogMapper, m: re.Match, ln: LogLine):
    path, holder = m.group(1), m.group(2)
    return mp.hold(ln, [_ev("nn.file.append", path=path, holder=holder),
                        _ev("nn.lease.add", holder=holder, path=path)])


def _nn_complete(mp: LogMapper, m: re.Match, ln: LogLine):
    path, holder = m.group(1), m.group(2)
    mp.pending_complete.pop(ln.thread, None)
    mp.path_holder.pop(path, None)
    return [_ev("nn.file.complete", path=path, holder=holder, ok=True),
            _ev("nn.file.close", path=path, len=None, reason="complete"),
            _ev("nn.lease.remove", holder=holder, path=path, reason="complete")]


def _nn_abandon(mp: LogMapper, m: re.Match, ln: LogLine):
    block, gs, path = int(m.group(1)), int(m.group(2)), m.group(3)
    return [_ev("nn.block.abandon", path=path, block=block, gs=gs,
                holder=mp.path_holder.get(path))]


def _nn_bump(mp: LogMapper, m: re.Match, ln: LogLine):
    # the new GS is not on this line: the updatePipeline that follows names it
    block = int(m.group(1))
    mp.pending_bump[block] = (ln.ts, m.group(3), ln.logger)
    return []


def _nn_update_request(mp: LogMapper, m: re.Match, ln: LogLine):
    block, old_gs = int(m.group(1)), int(m.group(2))
    mp.pending_update[(block, old_gs)] = dict(
        ts=ln.ts, gs=int(m.group(3)), len=int(m.group(4)), pipeline=mp.nodes_in(m.group(5)),
        holder=m.group(6))
    return []


def _nn_update_success(mp: LogMapper, m: re.Match, ln: LogLine):
    block, old_gs, new_gs = int(m.group(1)), int(m.group(2)), int(m.group(4))
    req = mp.pending_update.pop((block, old_gs), None) or {}
    out = []
    bump = mp.pending_bump.pop(block, None)
    if bump is not None:
        out.append({"ts": round(bump[0], 6), "event": "nn.block.gs_bump", "block": block,
                    "old_gs": old_gs, "gs": new_gs, "reason": "pipeline", "holder": bump[1],
                    "source": SOURCE, "logger": bump[2]})
    pipeline = req.get("pipeline")
    if pipeline is not None:
        mp.block_pipeline[block] = pipeline
    mp.block_gs[block] = new_gs
    return [*_own_time(out), _ev(
        "nn.block.update_pipeline", path=mp.block_path.get(block), block=block, old_gs=old_gs,
        gs=new_gs, len=req.get("len"), pipeline=pipeline, holder=req.get("holder"))]


def _nn_update_success_implied(mp: LogMapper, m: re.Match, ln: LogLine):
    # before 3.4, updateBlockForPipeline (the bump) logs nothing at INFO: the GS the
    # updatePipeline request names was bumped for it, by the same client, just before
    block, old_gs = int(m.group(1)), int(m.group(2))
    req = mp.pending_update.get((block, old_gs))
    if block not in mp.pending_bump and req is not None:
        mp.pending_bump[block] = (req["ts"], req["holder"], ln.logger)
    return _nn_update_success(mp, m, ln)


def _own_time(events: list[dict]) -> list[dict]:
    # events that carry their own ts/source/logger (an earlier line's) keep them
    return [dict(e, _keep=True) for e in events]


def _nn_expired(mp: LogMapper, m: re.Match, ln: LogLine):
    return [_ev("nn.lease.expired", holder=m.group(1), limit=m.group(2))]


def _nn_recover_lease(mp: LogMapper, m: re.Match, ln: LogLine):
    holder, path = m.group(1), m.group(2)
    if path not in mp.recovering_paths:
        mp.path_holder[path] = holder
    # the recoverLease RPC always forces (FSNamesystem.recoverLease); the line's "from
    # client" names the lease's holder, not the caller, so the requester is unknown
    return [_ev("nn.lease.recover", path=path, holder=holder, requester=None, force=True,
                result="recovering", error=None)]


def _nn_release_start(mp: LogMapper, m: re.Match, ln: LogLine):
    if m.group(2) not in mp.recovering_paths:
        mp.path_holder[m.group(2)] = m.group(1)
    return []


_TRUNCATE_BLOCK = re.compile(r"\btruncateBlock=blk_(-?\d+)_(\d+)")
_REPLICA_UC = re.compile(r"ReplicaUC\[\[[^\]]*\][^:\s]*:[A-Z_]+:([^|\]]+)\|(\w+)\]")


def _nn_recovery_primary(mp: LogMapper, m: re.Match, ln: LogLine):
    # BlockUnderConstructionFeature names no block id: the internalReleaseLease line
    # that the same thread logs next does
    replicas = [mp.node_of(a) for a, _ in _REPLICA_UC.findall(m.group(1))]
    primary = [mp.node_of(a) for a, _ in _REPLICA_UC.findall(m.group(2))]
    prep = mp.truncate_prep.pop(ln.thread, None)
    cut = _TRUNCATE_BLOCK.search(m.group(0))
    if prep is not None and cut is not None and ln.ts - prep[1] <= 1.0:
        # 3.x FSDirTruncateOp.prepareFileForTruncate starts a truncate's recovery itself
        # (no internalReleaseLease line): its truncateBlock is the block at the recovery id
        block, rid = int(cut.group(1)), int(cut.group(2))
        return [_ev("nn.recovery.start", path=prep[0] or mp.block_path.get(block), block=block,
                    gs=mp.block_gs.get(block), recovery_id=rid,
                    primary=primary[0] if primary else None,
                    pipeline=replicas or mp.block_pipeline.get(block))]
    mp.pending_primary[ln.thread] = (primary[0] if primary else None, replicas, ln.ts)
    return []


def _nn_release_recovery(mp: LogMapper, m: re.Match, ln: LogLine):
    path, rid, block, gs = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
    old = mp.path_holder.get(path)
    mp.block_path[block] = path
    # the primary line of the same call, just before; a leftover of a truncate's
    # recovery on the same handler thread (no internalReleaseLease line) is too old
    primary, replicas, at = mp.pending_primary.pop(ln.thread, (None, None, 0.0))
    if ln.ts - at > 1.0:
        primary, replicas = None, None
    out = [_ev("nn.recovery.start", path=path, block=block, gs=gs, recovery_id=rid,
               primary=primary, pipeline=replicas or mp.block_pipeline.get(block)),
           _ev("nn.block.gs_bump", block=block, old_gs=gs, gs=rid, reason="recovery")]
    if path not in mp.recovering_paths:
        # internalReleaseLease hands the lease to the recovering holder: the NameNode
        # itself when its lease monitor found the hard limit expired, else the caller of
        # recoverLease, whose name the NameNode does not log (holder null)
        new = NAMENODE_HOLDER if "LeaseManager$Monitor" in ln.thread else None
        out.append(_ev("nn.lease.reassign", path=path, old_holder=old, holder=new))
        mp.path_holder[path] = new
        mp.recovering_paths.add(path)
    return out


def _nn_release_closed(mp: LogMapper, m: re.Match, ln: LogLine):
    path = m.group(1)
    holder = mp.path_holder.pop(path, None)
    mp.recovering_paths.discard(path)
    return [_ev("nn.file.close", path=path, len=None, reason="lease_recovery"),
            _ev("nn.lease.remove", holder=holder, path=path, reason="lease_recovery")]


def _nn_commit_request(mp: LogMapper, m: re.Match, ln: LogLine):
    block = int(m.group(1))
    mp.pending_commit[block] = dict(
        old_gs=int(m.group(2)), gs=int(m.group(3)), len=int(m.group(4)),
        pipeline=mp.nodes_in(m.group(5)), close=m.group(6) == "true", delete=m.group(7) == "true")
    return []


def _nn_commit_success(mp: LogMapper, m: re.Match, ln: LogLine):
    block = int(m.group(1))
    req = mp.pending_commit.pop(block, None)
    if req is None:
        return []
    path = m.group(3) or mp.block_path.get(block)
    out = [_ev("nn.recovery.commit", path=path, block=block, recovery_id=req["gs"], gs=req["gs"],
               old_gs=req["old_gs"], len=req["len"], pipeline=req["pipeline"],
               close=req["close"], delete=req["delete"])]
    if req["delete"]:
        out.append(_ev("nn.block.state", path=path, block=block, gs=req["old_gs"], len=0,
                       state="REMOVED"))
    else:
        mp.block_pipeline[block] = req["pipeline"]
        mp.block_gs[block] = req["gs"]
        # "successful": the NameNode now holds the block at the recovery's GS and length
        # (commitOrCompleteLastBlock), whatever a later append makes of it
        out.append(_ev("nn.block.state", path=path, block=block, gs=req["gs"], len=req["len"],
                       state="COMMITTED"))
    if req["close"] and path:
        holder = mp.path_holder.pop(path, None)
        mp.recovering_paths.discard(path)
        out += [_ev("nn.file.close", path=path, len=None, reason="block_recovery"),
                _ev("nn.lease.remove", holder=holder, path=path, reason="block_recovery")]
    return out


def _nn_stored(mp: LogMapper, m: re.Match, ln: LogLine):
    # a finalized replica added at its GS: the GS the NameNode holds (an append's bump
    # is logged nowhere else)
    mp.block_gs[int(m.group(2))] = int(m.group(3))
    return [_ev("nn.replica.reported", dn=mp.node_of(m.group(1)), block=int(m.group(2)),
                gs=int(m.group(3)), len=int(m.group(4)), state="FINALIZED")]


def _nn_complete_request(mp: LogMapper, m: re.Match, ln: LogLine):
    # completeFile's DEBUG line, before the call's answer on the same handler thread
    mp.pending_complete[ln.thread] = (m.group(1), m.group(2), ln.ts)
    return []


def _nn_committed(mp: LogMapper, m: re.Match, ln: LogLine):
    block, gs, path = int(m.group(1)), int(m.group(2)), m.group(3)
    out = []
    call = mp.pending_complete.pop(ln.thread, None)
    if call is not None and call[0] == path and ln.ts - call[2] <= HOLD_S:
        # checkFileProgress inside completeFile: complete() answers false ("not yet")
        out.append(_ev("nn.file.complete", path=path, holder=call[1], ok=False))
    return out + [_ev("nn.block.state", path=path, block=block, gs=gs, len=None,
                      state="COMMITTED")]


def _nn_register(mp: LogMapper, m: re.Match, ln: LogLine):
    return [_ev("nn.dn.register", dn=mp.node_of(m.group(1)))]


def _nn_dead(mp: LogMapper, m: re.Match, ln: LogLine):
    return [_ev("nn.dn.dead", dn=mp.node_of(m.group(1)))]


def _nn_reject(mp: LogMapper, m: re.Match, ln: LogLine):
    op, error, text = m.group(1), m.group(2), m.group(3)
    path = re.search(r"(/[^\s:(]*)", text)
    holder = re.search(r"(?:Client \(=|holder |Holder )(\S+?)[),\s]", text)
    return [_ev("nn.rpc.reject", op=op, path=path.group(1) if path else None,
                holder=holder.group(1) if holder else None, error=error, reason=text[:500])]


def _nn_truncate(mp: LogMapper, m: re.Match, ln: LogLine):
    # whether the cut was done at once or needs a truncate recovery is not on this
    # line (ok: null); the recovery's own events follow
    mp.truncating[ln.thread] = m.group(1)
    return [_ev("nn.file.truncate", path=m.group(1), len=int(m.group(2)), ok=None)]


def _nn_truncate_prepare(mp: LogMapper, m: re.Match, ln: LogLine):
    # the in-place cut: the `recovery started` line this thread logs next is the
    # truncate's recovery (a copy-on-truncate, under a snapshot or upgrade, is not mapped)
    mp.truncate_prep[ln.thread] = (mp.truncating.pop(ln.thread, None), ln.ts)
    return []


def _nn_audit(mp: LogMapper, m: re.Match, ln: LogLine):
    cmd, src, dst = m.group(1), m.group(2), m.group(3)
    if cmd == "delete":
        return [_ev("nn.file.delete", path=src)]
    return [_ev("nn.file.rename", path=src, dst=dst)]


def _nn_call_failed(mp: LogMapper, m: re.Match, ln: LogLine):
    # the exception follows on the next line (with its stack trace)
    mp.pending_call = m.group(1)
    return []


def _nn_call_exception(mp: LogMapper, m: re.Match, ln: LogLine):
    op, mp.pending_call = mp.pending_call, None
    if op is None:
        return []
    fake = re.match(r"(\w+) (\w+) (.*)", f"{op} {m.group(1)} {m.group(2)}", re.S)
    return _nn_reject(mp, fake, ln)


def _startup(mp: LogMapper, m: re.Match, ln: LogLine):
    # the daemon's banner; its args line (next) tells a real start from `-format`
    mp.pending_start = True
    return []


def _startup_args(mp: LogMapper, m: re.Match, ln: LogLine):
    if not mp.pending_start:
        return []
    mp.pending_start = False
    if "-format" in m.group(1):
        mp.formatting = True
        return []
    if mp.role == "namenode":
        mp.safemode = mp.safemode_leaving = False      # a new NameNode process
        # nn.start waits for the namespace: Hadoop restores the open files' leases, their
        # renewal time "now", while it replays the edits, seconds after the JVM started
        mp.pending_nn_start = True
        return []
    return [_ev("dn.start", replicas=None)]


def _nn_loaded(mp: LogMapper, m: re.Match, ln: LogLine):
    if not mp.pending_nn_start:
        return []
    mp.pending_nn_start = False
    return [_ev("nn.start")]


def _shutdown(mp: LogMapper, m: re.Match, ln: LogLine):
    if mp.formatting:       # the end of `NameNode -format`, not of a daemon
        mp.formatting = False
        return []
    if mp.role == "datanode":
        # a shutdown for restart saved the RBW replicas (B6 lets them load back as RBW)
        restart, mp.stopping_for_restart = mp.stopping_for_restart, False
        return [_ev("dn.stop", restart=restart)]
    return [_ev("nn.stop")]


def _dn_shutdown_command(mp: LogMapper, m: re.Match, ln: LogLine):
    # DataNode.shutdownDatanode: `dfsadmin -shutdownDatanode <ipc> upgrade`, the harness's
    # graceful restart; its SHUTDOWN_MSG follows
    mp.stopping_for_restart = m.group(1) == "true"
    return []


# -- NameNode startup safe mode (BlockManagerSafeMode) -------------------------------------
# reportStatus logs `STATE* Safe mode ON. ` / `STATE* Safe mode extension entered. ` and
# then getSafeModeTip on the following lines; the event waits for those lines' counts.
_SAFEMODE_NULLS = dict(safe_blocks=None, total_blocks=None, threshold_blocks=None,
                       live_datanodes=None, min_datanodes=None)
_TIP_NEED = re.compile(r"The reported blocks (\d+) needs additional (\d+) blocks to reach "
                       r"the threshold [\d.]+ of total blocks (\d+)\.")
_TIP_REACHED = re.compile(r"The reported blocks (\d+) has reached the threshold [\d.]+ of "
                          r"total blocks (\d+)\.")
_TIP_DN_NEED = re.compile(r"The number of live datanodes (\d+) needs an additional \d+ live "
                          r"datanodes to reach the minimum number (\d+)\.")
_TIP_DN_REACHED = re.compile(r"The number of live datanodes (\d+) has reached the minimum "
                             r"number (\d+)\.")


def _nn_safemode_on(mp: LogMapper, m: re.Match, ln: LogLine):
    # checkSafeMode logs the same line again (every 20 s at most) while in safe mode:
    # only the first one of a NameNode process enters it
    if mp.safemode:
        return []
    mp.safemode = True
    mp.pending_safemode = {"ts": round(ln.ts, 6), "event": "nn.safemode.enter",
                           **_SAFEMODE_NULLS, "source": SOURCE, "logger": ln.logger}
    return []


def _nn_safemode_extension(mp: LogMapper, m: re.Match, ln: LogLine):
    # the extension's length is in the NameNode's conf, not in the log (the tip's
    # "in N seconds" is the time left, rounded down)
    mp.safemode = True
    mp.pending_safemode = {"ts": round(ln.ts, 6), "event": "nn.safemode.extension",
                           "extension": None, **_SAFEMODE_NULLS, "source": SOURCE,
                           "logger": ln.logger}
    return []


def _nn_safemode_tip(mp: LogMapper, m: re.Match, ln: LogLine):
    ev = mp.pending_safemode
    if ev is None:
        return []
    text = ln.msg
    if (t := _TIP_NEED.search(text)):
        ev.update(safe_blocks=int(t.group(1)), total_blocks=int(t.group(3)),
                  threshold_blocks=int(t.group(1)) + int(t.group(2)))
    elif (t := _TIP_REACHED.search(text)):
        ev.update(safe_blocks=int(t.group(1)), total_blocks=int(t.group(2)))
    if (t := _TIP_DN_NEED.search(text) or _TIP_DN_REACHED.search(text)):
        ev.update(live_datanodes=int(t.group(1)), min_datanodes=int(t.group(2)))
    elif "The minimum number of live datanodes is not required" in text:
        ev.update(min_datanodes=0)
    # the tip's last sentence
    if "Safe mode will be turned off automatically" in text or "-safemode forceExit." in text:
        return [{**mp._safemode_done(), "_keep": True}]
    return []


def _nn_safemode_off(mp: LogMapper, m: re.Match, ln: LogLine):
    # logged only when safe mode was on; `Leaving safe mode after N secs` follows (that
    # one also when activate found the thresholds met and never entered)
    mp.safemode_leaving = mp.safemode
    return []


def _nn_safemode_left(mp: LogMapper, m: re.Match, ln: LogLine):
    if not mp.safemode_leaving:
        return []
    mp.safemode = mp.safemode_leaving = False
    return [_ev("nn.safemode.leave", waited=int(m.group(1)), **_SAFEMODE_NULLS)]


# -- DataNode ----------------------------------------------------------------------------

def _dn_init_header(mp: LogMapper, m: re.Match, ln: LogLine):
    block = int(m.group(1))
    mp.recovery_ctx[block] = dict(gs=int(m.group(2)), recovery_id=int(m.group(3)), len=None)
    mp.cont_block = block
    return []


def _dn_num_bytes(mp: LogMapper, m: re.Match, ln: LogLine):
    # "getNumBytes()     = N" continues the initReplicaRecovery line's replica
    ctx = mp.recovery_ctx.get(mp.cont_block) if mp.cont_block is not None else None
    if ctx is not None and ctx.get("len") is None:
        ctx["len"] = int(m.group(1))
    return []


def _dn_init_change(mp: LogMapper, m: re.Match, ln: LogLine):
    block, gs, old_state, new_state = int(m.group(1)), int(m.group(2)), m.group(3), m.group(4)
    ctx = mp.recovery_ctx.get(block, {})
    ctx["done"] = True
    return [_ev("dn.recovery.init_replica", block=block, gs=gs, recovery_id=ctx.get("recovery_id"),
                state=old_state, len=ctx.get("len"), result="ok"),
            _ev("dn.replica.state", block=block, gs=gs, len=ctx.get("len"), state=new_state,
                reason="init_replica_recovery")]


def _dn_recover_command(mp: LogMapper, m: re.Match, ln: LogLine):
    block, gs = int(m.group(1)), int(m.group(2))
    mp.recovery_ids[block] = int(m.group(4))
    return [_ev("dn.recovery.command", block=block, gs=gs, recovery_id=int(m.group(4)),
                pipeline=mp.nodes_in(m.group(3)))]


_REPLICA = re.compile(r"block:blk_(-?\d+)_(\d+)\[numBytes=(\d+),originalReplicaState=(\w+)\]\s*"
                      r"node:DatanodeInfoWithStorage\[([^,\]]+)")


def _answers(mp: LogMapper, text: str) -> list[dict]:
    return [{"dn": mp.node_of(r[4]), "state": r[3], "len": int(r[2]), "gs": int(r[1])}
            for r in _REPLICA.findall(text)]


def _dn_sync_list(mp: LogMapper, m: re.Match, ln: LogLine):
    block, gs, truncate = int(m.group(1)), int(m.group(2)), m.group(3) == "true"
    answers = _answers(mp, m.group(4))
    mp.sync_lists[block] = (answers, truncate)
    if not answers:
        # no replica with data: syncBlock commits the removal (deleteBlock=true)
        # without a bestState line
        return [_ev("dn.recovery.sync", block=block, gs=gs, recovery_id=mp.recovery_ids.get(block),
                    answers=[], rule="remove", len=0, pipeline=[], new_len=None)]
    return []


_RULE = {"FINALIZED": "finalized", "RBW": "min_rbw", "RWR": "min_rwr"}


def _dn_sync_best(mp: LogMapper, m: re.Match, ln: LogLine):
    block = int(m.group(1))
    best, new_gs, new_len = m.group(3), int(m.group(5)), int(m.group(6))
    participants = _answers(mp, m.group(7))
    answers, truncate = mp.sync_lists.pop(block, (participants, False))
    return [_ev("dn.recovery.sync", block=block, gs=int(m.group(2)), recovery_id=new_gs,
                answers=answers, rule="truncate" if truncate else _RULE.get(best, best.lower()),
                len=new_len, pipeline=[a["dn"] for a in participants],
                new_len=new_len if truncate else None, best_state=best)]


def _dn_update_replica(mp: LogMapper, m: re.Match, ln: LogLine):
    block, gs, rid, length = int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4))
    mp.recovery_ctx.pop(block, None)
    # FsDatasetSpi.updateReplicaUnderRecovery: "Update replica's generation stamp and
    # length and finalize it" -- the replica is FINALIZED at the recovery id
    return [_ev("dn.recovery.update_replica", block=block, gs=gs, recovery_id=rid, len=length),
            _ev("dn.replica.state", block=block, gs=rid, len=length, state="FINALIZED",
                reason="update_replica")]


def _dn_recover_rbw(mp: LogMapper, m: re.Match, ln: LogLine):
    return [_ev("dn.replica.recover_rbw", block=int(m.group(1)), gs=int(m.group(2)),
                state=m.group(3))]


def _dn_truncate(mp: LogMapper, m: re.Match, ln: LogLine):
    return [_ev("dn.replica.truncate", block=int(m.group(1)), gs=int(m.group(2)),
                old_len=int(m.group(3)), len=int(m.group(4)))]


def _dn_clienttrace_write(mp: LogMapper, m: re.Match, ln: LogLine):
    # PacketResponder logs HDFS_WRITE after finalizeBlock: bytes = the replica's length
    block, gs = int(m.group(3)), int(m.group(4))
    return [_ev("dn.replica.state", block=block, gs=gs, len=int(m.group(1)), state="FINALIZED",
                holder=m.group(2), reason="write")]


def _dn_write_stage(mp: LogMapper, m: re.Match, ln: LogLine):
    b = _blk(ln.thread)
    return [_ev("dn.pipeline.stage", block=b[0] if b else None, gs=b[1] if b else None,
                stage=m.group(1), holder=m.group(2))]


def _dn_receiving(mp: LogMapper, m: re.Match, ln: LogLine):
    return [_ev("dn.pipeline.receive", block=int(m.group(1)), gs=int(m.group(2)),
                upstream=m.group(3))]


# -- client ------------------------------------------------------------------------------

_STREAMER_THREAD = re.compile(r"DataStreamer for file (\S+)(?: block " + _BLK + ")?")


def _path_from_thread(mp: LogMapper, ln: LogLine) -> str | None:
    # "DataStreamer for file /p block BP-..:blk_.." while streaming a block,
    # "DataStreamer for file /p" between blocks
    t = _STREAMER_THREAD.search(ln.thread)
    if t:
        if t.group(2):
            mp.block_path[int(t.group(2))] = t.group(1)
        return t.group(1)
    return None


def _cl_error_recovery(mp: LogMapper, m: re.Match, ln: LogLine):
    block, gs = int(m.group(1)), int(m.group(2))
    path = _path_from_thread(mp, ln) or mp.block_path.get(block)
    pipeline = mp.nodes_in(m.group(3))
    index = int(m.group(4))
    bad = mp.node_of(m.group(5))
    if path:
        mp.block_path[block] = path
    # a new block whose setup failed is abandoned, not recovered (its own stage tells
    # the verifier so); otherwise the stage the DEBUG lines last showed for the block
    stage = "PIPELINE_SETUP_CREATE" if block in mp.setup_failed else mp.stage.get(block)
    if block not in mp.setup_failed:
        mp.pending_setup[block] = dict(kind="recovery", old_gs=gs, bad=bad, path=path,
                                       pipeline=pipeline)
    mp.bad_node[block] = bad
    mp.last_error_block = (block, gs)
    # acked: the bytes of the block its last SUCCESS ack covered (DataStreamer DEBUG),
    # as the ResponseProcessor had counted them when the pipeline failed; None if no ack
    # of the block was logged
    return [_ev("client.pipeline.error", path=path, block=block, gs=gs, stage=stage,
                pipeline=pipeline, error_index=index, bad_node=bad,
                acked=mp.last_acked.get(block))]


def _dn_transfer_ordered(mp: LogMapper, m: re.Match, ln: LogLine):
    # the NameNode's DNA_TRANSFER (re-replication of a FINALIZED replica)
    mp.ordered_transfers.add((int(m.group(1)), int(m.group(2))))
    return []


def _dn_transmitted(mp: LogMapper, m: re.Match, ln: LogLine):
    # a finished DataTransfer (INFO): a copy the NameNode ordered (TRANSFER_FINALIZED)
    # or one a writer asked for to replace a pipeline node (TRANSFER_RBW); the target
    # is named by host name and proxy address, which node_of resolves
    block, gs = int(m.group(1)), int(m.group(2))
    ordered = (block, gs) in mp.ordered_transfers
    mp.ordered_transfers.discard((block, gs))
    return [_ev("dn.transfer", block=block, gs=gs, len=int(m.group(3)),
                target=mp.node_of(m.group(4)),
                stage="TRANSFER_FINALIZED" if ordered else "TRANSFER_RBW")]


def _cl_restarting(mp: LogMapper, m: re.Match, ln: LogLine):
    # ErrorState: an OOB RESTART ack from pipeline node N; the client waits up to
    # dfs.client.datanode-restart.timeout for it and rebuilds the pipeline with it
    # (no node is bad: error_index -1), as the mini-HDFS's restart_wait + error do
    b = _blk(ln.thread)
    if b is None:
        return []
    block, gs = b
    path = mp.block_path.get(block)
    dn = mp.node_of(m.group(2))
    mp.pending_setup[block] = dict(kind="recovery", old_gs=gs, bad=None, path=path)
    return [_ev("client.pipeline.restart_wait", path=path, block=block, dn=dn),
            _ev("client.pipeline.error", path=path, block=block, gs=gs,
                stage=mp.stage.get(block), pipeline=mp.block_pipeline.get(block),
                error_index=-1, bad_node=None, acked=mp.last_acked.get(block),
                reason=f"A datanode is restarting: {dn}", restarting=dn)]


def _cl_restart_timeout(mp: LogMapper, m: re.Match, ln: LogLine):
    # the restarting node is not back within dfs.client.datanode-restart.timeout: the
    # client marks it bad (a node error, no longer a restart) and recovers without it
    t = _STREAMER_THREAD.search(ln.thread)
    if not t or t.group(2) is None:
        return []
    block, gs = int(t.group(2)), int(t.group(3))
    path = t.group(1)
    dn = mp.node_of(m.group(3))
    timeout = int(m.group(2)) / 1000
    mp.bad_node[block] = dn
    pending = mp.pending_setup.get(block)
    if pending is not None:
        pending["bad"] = dn
    pipeline = mp.block_pipeline.get(block)
    return [_ev("client.pipeline.restart_timeout", path=path, block=block, dn=dn,
                timeout=timeout),
            _ev("client.pipeline.error", path=path, block=block, gs=gs,
                stage="PIPELINE_SETUP_STREAMING_RECOVERY", pipeline=pipeline,
                error_index=int(m.group(1)), bad_node=dn, acked=None,
                reason=f"did not restart within {timeout:g}s: {dn}")]


def _cl_sending(mp: LogMapper, m: re.Match, ln: LogLine):
    # the bytes of the block a packet ends at: what its ack, logged by the
    # ResponseProcessor with the seqno only, says is acked by every node
    _path_from_thread(mp, ln)
    mp.packet_end[(int(m.group(1)), int(m.group(3)))] = int(m.group(4))
    return []


def _cl_ack(mp: LogMapper, m: re.Match, ln: LogLine):
    b = _blk(ln.thread)
    if b is None:
        return []
    seqno = int(m.group(1))
    acked = mp.packet_end.pop((b[0], seqno), None)
    if acked is None:
        return []   # a heartbeat (seqno -1) or a packet sent before the log was read
    mp.last_acked[b[0]] = acked
    return [_ev("client.ack", path=mp.block_path.get(b[0]), block=b[0], seqno=seqno,
                acked=acked)]


def _cl_append(mp: LogMapper, m: re.Match, ln: LogLine):
    mp.pending_setup[int(m.group(1))] = dict(kind="append", old_gs=int(m.group(2)))
    return []


def _cl_pipeline(mp: LogMapper, m: re.Match, ln: LogLine):
    # createBlockOutputStream logs the nodes with the block's GS *before* an append or
    # a recovery bumps it: the setup is announced by the first line that shows the
    # block streaming (`nodes [...]` or `stage=...`), which has the GS it got
    mp.candidate[int(m.group(2))] = mp.nodes_in(m.group(1))
    return []


def _cl_streaming(mp: LogMapper, block: int, gs: int, path: str | None,
                  pipeline: list[str] | None):
    pending = mp.pending_setup.get(block)
    cand = pipeline or mp.candidate.get(block)
    if pending is not None:
        if gs <= pending["old_gs"] or cand is None:
            return []
        del mp.pending_setup[block]
        mp.candidate.pop(block, None)
        mp.announced.add((block, gs))
        if pending["kind"] == "recovery":
            path = path or pending.get("path")
            return _inferred_replacements(pending, path, block, cand) + [
                _ev("client.pipeline.recovered", path=path, block=block,
                    old_gs=pending["old_gs"], gs=gs, pipeline=cand)]
        return [_ev("client.pipeline.setup", path=path, block=block, gs=gs,
                    stage="PIPELINE_SETUP_APPEND", pipeline=cand)]
    if (block, gs) in mp.announced or cand is None:
        return []
    mp.announced.add((block, gs))
    mp.candidate.pop(block, None)
    mp.block_pipeline[block] = cand
    return [_ev("client.pipeline.setup", path=path, block=block, gs=gs,
                stage="PIPELINE_SETUP_CREATE", pipeline=cand)]


def _inferred_replacements(pending: dict, path: str | None, block: int,
                           rebuilt: list[str]) -> list[dict]:
    """client.pipeline.replace `added` for each node of the rebuilt pipeline that was not in
    the failed one. Hadoop logs a successful replacement nowhere (only its failures), but a
    new node can enter a recovered pipeline only through addDatanode2ExistingPipeline
    (getAdditionalDatanode). The policy's inputs are not logged: policy, replication and
    hflushed stay null (P2 is not observable on Hadoop); `inferred` says where it came from."""
    before = pending.get("pipeline")
    if not before:
        return []
    remaining = len([n for n in before if n != pending.get("bad")])
    return [_ev("client.pipeline.replace", path=path, block=block, policy=None,
                replication=None, remaining=remaining, hflushed=None, decision="added",
                new_node=n, inferred=True) for n in rebuilt if n not in before]


def _cl_closing(mp: LogMapper, m: re.Match, ln: LogLine):
    # endBlock's `Closing old block`: a pipeline rebuilt while closing the block
    # (PIPELINE_CLOSE_RECOVERY finalizes during its setup) sends no packet at its new GS,
    # so this line is the first to show the block at that GS
    block, gs = int(m.group(1)), int(m.group(2))
    return _cl_streaming(mp, block, gs, _path_from_thread(mp, ln) or mp.block_path.get(block),
                         None)


def _cl_nodes(mp: LogMapper, m: re.Match, ln: LogLine):
    t = _STREAMER_THREAD.search(ln.thread)
    if not t:
        return []
    path, block, gs = t.group(1), int(t.group(2)), int(t.group(3))
    mp.block_path[block] = path
    return _cl_streaming(mp, block, gs, path, mp.nodes_in(m.group(1)))


def _cl_stage(mp: LogMapper, m: re.Match, ln: LogLine):
    block, gs = int(m.group(2)), int(m.group(3))
    mp.stage[block] = m.group(1)
    return _cl_streaming(mp, block, gs, _path_from_thread(mp, ln) or mp.block_path.get(block),
                         None)


def _cl_create_failed(mp: LogMapper, m: re.Match, ln: LogLine):
    mp.setup_failed.add(int(m.group(1)))
    return []


def _cl_abandon(mp: LogMapper, m: re.Match, ln: LogLine):
    block, gs = int(m.group(1)), int(m.group(2))
    return [_ev("client.pipeline.abandon", path=_path_from_thread(mp, ln) or mp.block_path.get(block),
                block=block, gs=gs, bad_node=mp.bad_node.get(block))]


def _cl_bad_ack(mp: LogMapper, m: re.Match, ln: LogLine):
    block, gs = int(m.group(2)), int(m.group(3))
    return [_ev("client.pipeline.ack_error", path=mp.block_path.get(block), block=block, gs=gs,
                status=m.group(1), dn=mp.node_of(m.group(4)))]


def _cl_replace_failed(mp: LogMapper, m: re.Match, ln: LogLine):
    key = mp.last_error_block
    best_effort = "best-effort is set to true" in ln.msg
    if not best_effort:
        # the same exception is logged again wherever it is caught: one event per block
        if key in mp.replace_failed:
            return []
        mp.replace_failed.add(key)
    block, gs = key if key else (None, None)
    policy = m.group(2) if m.lastindex and m.lastindex >= 2 else None
    pipeline = mp.nodes_in(m.group(1)) if m.group(1) else None
    return [_ev("client.pipeline.replace_failed", path=mp.block_path.get(block), block=block,
                gs=gs, policy=policy, pipeline=pipeline, best_effort=best_effort)]


def _cl_renew(mp: LogMapper, m: re.Match, ln: LogLine):
    # logged once renewLease returned: the NameNode renewed the lease then. The
    # NameNode logs no line of its own for a renewal, and check L3 needs them, so the
    # client's line also stands for the NameNode's renewal (`observed_by: client`)
    return [_ev("client.lease.renew", holder=m.group(1)),
            _ev("nn.lease.renew", holder=m.group(1), observed_by="client")]


def _r(name, role, pattern, handler, bare=False) -> Rule:
    return Rule(name, role, re.compile(pattern), handler, bare)


# The 3.4 table: the lines of Hadoop 3.4.1 / 3.4.2 (hadoop-3.4.1-log-lines.md, and the
# message texts of the 3.4.2 jars). Rules are tried in order; the first match wins.
TABLE_3_4: list[Rule] = [
    # NameNode
    _r("allocate", "namenode", r"^BLOCK\* allocate " + _BLK + r", replicas=(.*) for (/\S*)$",
       _nn_allocate),
    _r("fsync", "namenode", r"^BLOCK\* fsync: (/\S*) for (\S+)", _nn_fsync),
    _r("start_file", "namenode", r"^DIR\* NameSystem\.startFile: src=(/\S*?), holder=([^,]+),",
       _nn_start_file),
    _r("append_file", "namenode",
       r"^DIR\* NameSystem\.appendFile: src=(/\S*?), holder=([^,]+),", _nn_append_file),
    _r("complete", "namenode", r"^DIR\* completeFile: (/\S*) is closed by (\S+)", _nn_complete),
    _r("complete_request", "namenode", r"^DIR\* NameSystem\.completeFile: (/\S*) for (\S+)",
       _nn_complete_request),
    _r("truncate", "namenode", r"^DIR\* NameSystem\.truncate: src=(/\S*) newLength=(\d+)",
       _nn_truncate),
    # StateChange DEBUG, just before the truncate's initializeBlockRecovery on its thread
    _r("truncate_prepare", "namenode",
       r"^BLOCK\* prepareFileForTruncate: \{.*\} Scheduling in-place block truncate",
       _nn_truncate_prepare),
    # the audit log (INFO): namespace changes the write path does not log elsewhere
    _r("audit", "namenode", r"^allowed=true\s.*?\bcmd=(delete|rename)\s+src=(\S+)\s+dst=(\S+)",
       _nn_audit),
    _r("abandon", "namenode", r"^BLOCK\* NameSystem\.abandonBlock: " + _BLK + r" of file (/\S*)",
       _nn_abandon),
    _r("bump", "namenode", r"^bumpBlockGenerationStamp\(" + _BLK + r", client=(\S+?)\) success",
       _nn_bump),
    _r("update_pipeline", "namenode",
       r"^updatePipeline\(" + _BLK + r", newGS=(\d+), newLength=(\d+), newNodes=\[(.*?)\], "
       r"client=(\S+?)\)$", _nn_update_request),
    _r("update_pipeline_ok", "namenode",
       r"^updatePipeline\(" + _BLK + r" => " + _BLK + r"\) success", _nn_update_success),
    _r("lease_expired", "namenode",
       r"^\[Lease\.\s+Holder: (\S+?), pending creates: \d+\] has expired (hard|soft) limit",
       _nn_expired),
    _r("recover_lease", "namenode",
       r"^recoverLease: \[Lease\.\s+Holder: (\S+?), pending creates: \d+\], src=(/\S*) from client",
       _nn_recover_lease),
    _r("release_start", "namenode",
       r"^Recovering \[Lease\.\s+Holder: (\S+?), pending creates: \d+\], src=(/\S*)",
       _nn_release_start),
    _r("recovery_primary", "namenode",
       r"^BLOCK\* \{.*replicas=\[(.*)\]\} recovery started, primary=(.*)$",
       _nn_recovery_primary),
    _r("release_recovery", "namenode",
       r"internalReleaseLease: File (/\S*) has not been closed\. Lease recovery is in progress\. "
       r"RecoveryId = (\d+) for block " + _BLK, _nn_release_recovery),
    _r("release_closed", "namenode",
       r"^BLOCK\* internalReleaseLease: (?:All existing blocks are COMPLETE|Committed blocks are "
       r"minimally replicated|Removed empty last block and closed file).*?(/\S*?)(?: closed\.)?$",
       _nn_release_closed),
    _r("commit_request", "namenode",
       r"^commitBlockSynchronization\(oldBlock=" + _BLK + r", newgenerationstamp=(\d+), "
       r"newlength=(\d+), newtargets=\[(.*?)\], closeFile=(true|false), deleteBlock=(true|false)\)",
       _nn_commit_request),
    _r("commit_success", "namenode",
       r"^commitBlockSynchronization\(oldBlock=" + _BLK + r"(?:, file=(/\S*?))?(?:,.*)?\) successful$",
       _nn_commit_success),
    _r("add_stored", "namenode",
       r"^BLOCK\* addStoredBlock: (\S+) is added to blk_(-?\d+)_(\d+) \(size=(\d+)\)", _nn_stored),
    _r("committed", "namenode",
       r"^BLOCK\* blk_(-?\d+)_(\d+) is COMMITTED but not COMPLETE\(.*\) in file (/\S*)",
       _nn_committed),
    _r("register", "namenode", r"^BLOCK\* registerDatanode: from DatanodeRegistration\(([^,\s]+)",
       _nn_register),
    _r("dead", "namenode", r"^BLOCK\* removeDeadDatanode: lost heartbeat from ([^,\s]+)", _nn_dead),
    _r("rpc_call_failed", "namenode",
       r"call Call#\d+ Retry#\d+ \S*?\.(\w+) from \S+$", _nn_call_failed),
    _r("rpc_call_exception", "namenode",
       r"^(?:[\w.$]+\.)?(\w+(?:Exception|Error)): (.*)$", _nn_call_exception, bare=True),
    _r("rpc_reject", "namenode",
       r"call Call#\d+ Retry#\d+ \S*?\.(\w+) from .*?: (?:[\w.]+\.)?(\w+(?:Exception|Error)): (.*)$",
       _nn_reject),
    # startup safe mode (BlockManagerSafeMode; the tip lines continue the first two)
    _r("safemode_on", "namenode", r"^STATE\* Safe mode ON\.\s*$", _nn_safemode_on),
    _r("safemode_extension", "namenode", r"^STATE\* Safe mode extension entered\.\s*$",
       _nn_safemode_extension),
    _r("safemode_tip", "namenode",
       r"^(?:The reported blocks|The number of live datanodes|The minimum number of live "
       r"datanodes|Safe mode will be turned off|Name node detected blocks)", _nn_safemode_tip,
       bare=True),
    _r("safemode_off", "namenode", r"^STATE\* Safe mode is OFF$", _nn_safemode_off),
    _r("safemode_left", "namenode", r"^STATE\* Leaving safe mode after (\d+) secs",
       _nn_safemode_left),
    # NameNode and DataNode: the start-up / shut-down banners (continuation lines)
    _r("startup_nn", "namenode", r"^STARTUP_MSG: Starting NameNode", _startup, bare=True),
    _r("startup_args_nn", "namenode", r"^STARTUP_MSG:\s+args = \[(.*)\]", _startup_args,
       bare=True),
    _r("shutdown_nn", "namenode", r"^SHUTDOWN_MSG: Shutting down NameNode", _shutdown, bare=True),
    # the image load starts before any lease is restored (FSImage.loadFSImage; the image's
    # and the edits' open files get their renewal time while they load); fallback: its end
    _r("namespace_loading", "namenode", r"^Planning to load image: ", _nn_loaded),
    _r("namespace_loaded", "namenode", r"^Finished loading FSImage in \d+ msecs", _nn_loaded),
    _r("startup_dn", "datanode", r"^STARTUP_MSG: Starting DataNode", _startup, bare=True),
    _r("startup_args_dn", "datanode", r"^STARTUP_MSG:\s+args = \[(.*)\]", _startup_args,
       bare=True),
    _r("shutdown_dn", "datanode", r"^SHUTDOWN_MSG: Shutting down DataNode", _shutdown, bare=True),
    _r("shutdown_command", "datanode",
       r"^shutdownDatanode command received \(upgrade=(\w+)\)", _dn_shutdown_command),
    # DataNode
    _r("init_replica_header", "datanode",
       r"^initReplicaRecovery: blk_(-?\d+)_(\d+), recoveryId=(\d+), replica=", _dn_init_header),
    _r("init_replica_change", "datanode",
       r"^initReplicaRecovery: changing replica state for blk_(-?\d+)_(\d+) from (\w+) to (\w+)",
       _dn_init_change),
    _r("num_bytes", "datanode", r"^getNumBytes\(\)\s*=\s*(\d+)", _dn_num_bytes, bare=True),
    _r("recover_block", "datanode",
       r"calls recoverBlock\(" + _BLK + r", targets=\[(.*)\], newGenerationStamp=(\d+),",
       _dn_recover_command),
    _r("sync_list", "datanode",
       r"^BlockRecoveryWorker: block=" + _BLK + r" \(length=\d+\), isTruncateRecovery=(\w+), "
       r"syncList=\[(.*)\]$", _dn_sync_list),
    _r("sync_best", "datanode",
       r"^BlockRecoveryWorker: block=" + _BLK + r" \(length=\d+\), bestState=(\w+), newBlock="
       + _BLK + r" \(length=(\d+)\), participatingList=\[(.*)\]$",
       _dn_sync_best),
    _r("update_replica", "datanode",
       r"^updateReplica: " + _BLK + r"(?:\[[^\]]*\])?, recoveryId=(\d+), length=(\d+), replica=",
       _dn_update_replica),
    _r("recover_rbw", "datanode", r"Recovering ReplicaBeingWritten, blk_(-?\d+)_(\d+), (\w+)",
       _dn_recover_rbw),
    _r("truncate", "datanode",
       r"^truncateBlock: blockFile=\S+, metaFile=\S*?blk_(-?\d+)_(\d+)\.meta, oldlen=(\d+), newlen=(\d+)",
       _dn_truncate),
    _r("clienttrace_write", "datanode",
       r"bytes: (\d+), op: HDFS_WRITE, cliID: (\S+?), offset: \d+, srvID: \S+, blockid: " + _BLK,
       _dn_clienttrace_write),
    _r("write_stage", "datanode", r"^opWriteBlock: stage=(\w+), clientname=(\S+)", _dn_write_stage),
    _r("transfer_ordered", "datanode", r"\) Starting thread to transfer " + _BLK + r" to ",
       _dn_transfer_ordered),
    _r("transmitted", "datanode",
       r"^DataTransfer, at \S+: Transmitted " + _BLK + r" \(numBytes=(\d+)\) to (\S+)",
       _dn_transmitted),
    _r("receiving", "datanode", r"^Receiving " + _BLK + r" src: (\S+) dest: ", _dn_receiving),
    # client
    _r("error_recovery", "client",
       r"^Error Recovery for " + _BLK + r" in pipeline \[(.*)\]: datanode (\d+)\("
       r"DatanodeInfoWithStorage\[([^,\]]+)", _cl_error_recovery),
    _r("restarting", "client",
       r"^Datanode (\d+) is restarting: DatanodeInfoWithStorage\[([^,\]]+)", _cl_restarting),
    _r("restart_timeout", "client",
       r"^Datanode (\d+) did not restart within (\d+)ms: DatanodeInfoWithStorage\[([^,\]]+)",
       _cl_restart_timeout),
    _r("pipeline", "client", r"^pipeline = \[(.*)\], " + _BLK + r"\s*$", _cl_pipeline),
    _r("append_block", "client", r"^Append to block " + _BLK, _cl_append),
    _r("create_failed", "client", r"^Exception in createBlockOutputStream " + _BLK,
       _cl_create_failed),
    _r("abandon_block", "client", r"^Abandoning " + _BLK, _cl_abandon),
    _r("streaming_nodes", "client", r"^nodes \[(.*?)\] storageTypes", _cl_nodes),
    _r("streaming_stage", "client", r"^stage=(\w+), " + _BLK, _cl_stage),
    _r("closing_old_block", "client", r"^Closing old block " + _BLK, _cl_closing),
    _r("replace_best_effort", "client",
       r"^Failed to replace datanode\. Continue with the remaining datanodes since ()",
       _cl_replace_failed),
    _r("renew", "client", r"^Lease renewed for client (\S+)", _cl_renew),
    # DataStreamer DEBUG, once a packet: its end in the block, then its ack when every
    # node of the pipeline replied SUCCESS (client.ack, which scenarios trigger on)
    _r("sending_packet", "client",
       r"^blk_(-?\d+)_(\d+) sending packet seqno: (\d+) offsetInBlock: \d+ "
       r"lastPacketInBlock: \w+ lastByteOffsetInBlock: (\d+)", _cl_sending),
    _r("ack", "client", r"^DFSClient seqno: (\d+) reply: SUCCESS(?: reply: SUCCESS)* "
       r"downstreamAckTimeNanos", _cl_ack),
    # client: exception text lines (a stack trace's first line, or the message of a
    # WARN line that carries the exception)
    _r("bad_ack", "client",
       r"Bad response (\w+) for " + _BLK + r" from datanode DatanodeInfoWithStorage\[([^,\]]+)",
       _cl_bad_ack, bare=True),
    _r("replace_failed", "client",
       r"Failed to replace a bad datanode on the existing pipeline due to no more good datanodes "
       r"being available to try\. \(Nodes: current=\[(.*?)\], original=.*The current failed "
       r"datanode replacement policy is (\w+)", _cl_replace_failed, bare=True),
]


def _also_bare(table: list[Rule]) -> list[Rule]:
    """Exception texts can also sit in a WARN line's message: each bare rule also as a
    layout rule."""
    out = list(table)
    for r in table:
        if r.bare:
            out.append(dataclasses.replace(r, name=r.name + "_inline", bare=False))
    return out


TABLE_3_4 = _also_bare(TABLE_3_4)


def _override(table: list[Rule], **handlers) -> list[Rule]:
    """A copy of `table` with the handlers of the named rules replaced."""
    return [dataclasses.replace(r, handler=handlers[r.name]) if r.name in handlers else r
            for r in table]


# 3.3.6 and 3.2.4, as seen in real runs of both (tests/integration/test_hadoop_client.py
# with HDFS_CHAOS_HADOOP_VERSION): every line of the 3.4 table reads the same except
# that bumpBlockGenerationStamp logs no `success` line (added in 3.4), so the pipeline GS
# bump is taken from the updatePipeline that names the new GS.
TABLE_3_3: list[Rule] = _override(TABLE_3_4, update_pipeline_ok=_nn_update_success_implied)
TABLE_3_2: list[Rule] = TABLE_3_3

TABLES: dict[str, list[Rule]] = {"3.4": TABLE_3_4, "3.3": TABLE_3_3, "3.2": TABLE_3_2}


def table_for(release: str) -> list[Rule]:
    """The table of `release` ("3.4.2" -> the 3.4 table); an unknown line gets 3.4's."""
    parts = release.split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        raise ValueError(f"hadoop release {release!r}: give it as MAJOR.MINOR[.PATCH], e.g. 3.4.2")
    return TABLES.get(".".join(parts[:2]), TABLE_3_4)


def map_lines(lines: Iterable[str], role: str, release: str = DEFAULT_RELEASE,
              hosts: dict[str, str] | None = None) -> list[dict]:
    """All events of a whole log (for a log read after the run)."""
    return LogMapper(role, release, hosts).feed_all(lines)
