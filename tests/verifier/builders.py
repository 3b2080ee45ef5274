"""Compact builders of hand-written run folders (events/<node>.jsonl, final_state.json,
scenario.yaml) for the verifier's tests. Field names follow spec/EVENTS.md exactly.

A `Run` collects events per node at explicit times (seconds from the run start); the
scenario helpers below write the three stories the tests mutate: a plain write, a
pipeline recovery with a replaced DataNode, and a client crash followed by lease and
block recovery.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import zlib
from collections import defaultdict
from typing import Callable

import yaml

from hdfs_contract.content import CONTENT_NAME, Content

T0 = 1_700_000_000.0
C1 = "DFSClient_c1_100"
C2 = "DFSClient_c2_200"
NNH = "HDFS_NameNode-2026-11-26 09:30:00,000+0000"   # 3.x LeaseManager.getInternalLeaseHolder
ROLES = {"nn": "namenode", "harness": "harness"}


def role_of(node: str) -> str:
    if node in ROLES:
        return ROLES[node]
    return "datanode" if node.startswith("dn") else "client"


SEED = 1        # harness.run.start's seed in every hand-written run (`start`)


def data(path: str, offset: int, length: int) -> bytes:
    """Deterministic file content: what a workload client writes at these offsets of
    `path` with the run's seed (minihdfs.workload.Content, the generator the streams
    name, so that D2 may regenerate a write cut mid-way)."""
    return Content(SEED).get(path, offset, length)


def crc(path: str, offset: int, length: int) -> int:
    return zlib.crc32(data(path, offset, length))


_crc = crc


class Run:
    """One run folder under construction."""

    def __init__(self, run_id: str, config: dict | None = None, expect: dict | None = None,
                 name: str | None = None):
        self.run_id = run_id
        self.lines: dict[str, list[str]] = defaultdict(list)
        self.seq: dict[str, int] = defaultdict(int)
        self.scenario = {"name": name or run_id, "cluster": {"datanodes": 4,
                                                              "config": dict(config or {})}}
        if expect is not None:
            self.scenario["expect"] = expect
        self.final: dict | None = None
        self.raw_lines: dict[str, list[str]] = defaultdict(list)
        self.garbage_lines: set[str] = set()
        # write() numbers each log's seq 0, 1, ... in file order, so that a case that
        # drops or adds events still has whole logs (check I1); False keeps the seqs as
        # logged, for the cases that tear a log on purpose
        self.renumber = True
        self.no_events = False
        # each client's open output stream: (number, path, start offset); and how many
        self.stream: dict[str, tuple[int, str, int]] = {}
        self.streams: dict[str, int] = defaultdict(int)

    def open_stream(self, t: float, node: str, path: str, holder: str, mode: str,
                    offset: int = 0, content: str | None = CONTENT_NAME) -> "Run":
        """client.stream.open of the client's next stream, from `offset`."""
        n = self.streams[node]
        self.streams[node] += 1
        self.stream[node] = (n, path, offset)
        return self.ev(t, node, "client.stream.open", path=path, holder=holder, mode=mode,
                       stream=n, offset=offset, content=content)

    def write_of(self, t: float, node: str, offset: int, length: int,
                 crc: int | None = None) -> "Run":
        """client.write of `length` bytes at `offset` on the client's open stream, with
        the stream fields; `crc` (default: that of data()) may lie about the bytes."""
        n, path, start = self.stream[node]
        return self.ev(t, node, "client.write", path=path, offset=offset, len=length,
                       crc=crc if crc is not None else _crc(path, offset, length), stream=n,
                       stream_crc=_crc(path, start, offset - start))

    def ev(self, t: float, node: str, event: str, **fields) -> "Run":
        rec = {"ts": round(T0 + t, 6), "node": node, "role": role_of(node),
               "seq": self.seq[node], "event": event}
        rec.update(fields)
        self.seq[node] += 1
        self.lines[node].append(json.dumps(rec, separators=(",", ":")))
        return self

    def garbage(self, node: str, line: str) -> "Run":
        """A raw line appended to the node's log as it is (for malformed-line tests)."""
        self.lines[node].append(line)
        self.garbage_lines.add(line)
        return self

    def drop(self, event: str, **match) -> "Run":
        """Remove every event named `event` whose fields match."""
        for node, lines in self.lines.items():
            self.lines[node] = [l for l in lines if not _matches(l, event, match)]
        return self

    def edit(self, event: str, match: dict, **changes) -> "Run":
        """Change fields of every event named `event` whose fields match."""
        for node, lines in self.lines.items():
            out = []
            for l in lines:
                if _matches(l, event, match):
                    rec = json.loads(l)
                    rec.update(changes)
                    l = json.dumps(rec, separators=(",", ":"))
                out.append(l)
            self.lines[node] = out
        return self

    def write(self, root: str) -> str:
        d = os.path.join(root, self.run_id)
        if not self.no_events:
            os.makedirs(os.path.join(d, "events"), exist_ok=True)
        else:
            os.makedirs(d, exist_ok=True)
        for node, lines in ({} if self.no_events else self.lines).items():
            if self.renumber:
                lines = self._numbered(lines)
            with open(os.path.join(d, "events", f"{node}.jsonl"), "w") as f:
                f.write("".join(l + "\n" for l in lines))
        with open(os.path.join(d, "scenario.yaml"), "w") as f:
            yaml.safe_dump(self.scenario, f, sort_keys=False)
        if self.final is not None:
            with open(os.path.join(d, "final_state.json"), "w") as f:
                json.dump(self.final, f, indent=1)
        return d


    def _numbered(self, lines: list[str]) -> list[str]:
        out, seq = [], 0
        for l in lines:
            if l not in self.garbage_lines:
                rec = json.loads(l)
                rec["seq"] = seq
                seq += 1
                l = json.dumps(rec, separators=(",", ":"))
            out.append(l)
        return out


def _matches(line: str, event: str, match: dict) -> bool:
    try:
        rec = json.loads(line)
    except ValueError:
        return False
    return rec.get("event") == event and all(rec.get(k) == v for k, v in match.items())


def final_state(files: list[dict], datanodes: dict, leases=None, readback=None) -> dict:
    return {"files": files, "leases": leases or [], "datanodes": datanodes,
            "readback": readback or {}}


def replica(block: int, gs: int, length: int, path: str = "/f", state: str = "FINALIZED"):
    return {"block": block, "gs": gs, "len": length, "state": state, "crc": crc(path, 0, length)}


# -- stories -------------------------------------------------------------------------------

PIPE = ["dn1", "dn2", "dn3"]


def start(r: Run, t: float = 0.0):
    r.ev(t, "harness", "harness.run.start", scenario=r.scenario["name"], seed=SEED)
    r.ev(t, "nn", "nn.start")
    for i, dn in enumerate(["dn1", "dn2", "dn3", "dn4"]):
        r.ev(t + 0.01 * (i + 1), dn, "dn.start", replicas=0)
        r.ev(t + 0.01 * (i + 1) + 0.001, "nn", "nn.dn.register", dn=dn)
    for node in ["nn", "dn1", "dn2", "dn3", "dn4"]:
        r.ev(t + 0.05, "harness", "harness.node.start", target=node)


def open_create(r: Run, t: float, client="c1", holder=C1, path="/f", block=1001, gs=1001,
                pipeline=PIPE, op_id="w1"):
    r.ev(t - 0.001, "harness", "harness.node.start", target=client)
    r.ev(t, client, "client.start", holder=holder)
    r.ev(t + 0.001, client, "client.op.start", op_id=op_id, op="write", path=path)
    r.ev(t + 0.002, "nn", "nn.file.create", path=path, holder=holder)
    r.ev(t + 0.003, "nn", "nn.lease.add", holder=holder, path=path)
    r.open_stream(t + 0.004, client, path, holder, "create")
    r.ev(t + 0.005, "nn", "nn.block.allocate", path=path, block=block, gs=gs, pipeline=pipeline,
         holder=holder, excluded=[])
    r.ev(t + 0.006, "nn", "nn.block.state", path=path, block=block, gs=gs, len=0,
         state="UNDER_CONSTRUCTION")
    for i, dn in enumerate(pipeline):
        r.ev(t + 0.007 + i * 0.001, dn, "dn.replica.state", block=block, gs=gs, len=0, state="RBW")
        r.ev(t + 0.007 + i * 0.001, dn, "dn.pipeline.setup", block=block, gs=gs,
             stage="PIPELINE_SETUP_CREATE", pipeline=pipeline, status="SUCCESS")
    r.ev(t + 0.011, client, "client.pipeline.setup", path=path, block=block, gs=gs,
         stage="PIPELINE_SETUP_CREATE", pipeline=pipeline)


def write(r: Run, t: float, offset: int, length: int, client="c1", path="/f", block=1001,
          block_start: int = 0, ack=True):
    r.write_of(t, client, offset, length)
    if ack:
        r.ev(t + 0.002, client, "client.ack", path=path, block=block, seqno=offset // 512,
             acked=offset + length - block_start)


def close(r: Run, t: float, length: int, client="c1", holder=C1, path="/f", block=1001,
          gs=1001, pipeline=PIPE, op_id="w1"):
    for i, dn in enumerate(pipeline):
        r.ev(t + 0.001 * i, dn, "dn.replica.state", block=block, gs=gs, len=length,
             state="FINALIZED")
        r.ev(t + 0.001 * i + 0.0005, "nn", "nn.replica.reported", dn=dn, block=block, gs=gs,
             len=length, state="FINALIZED")
    r.ev(t + 0.004, "nn", "nn.block.state", path=path, block=block, gs=gs, len=length,
         state="COMPLETE")
    r.ev(t + 0.005, "nn", "nn.file.complete", path=path, holder=holder, ok=True)
    r.ev(t + 0.006, "nn", "nn.file.close", path=path, len=length, reason="complete")
    r.ev(t + 0.007, "nn", "nn.lease.remove", holder=holder, path=path, reason="close")
    r.ev(t + 0.008, client, "client.close", path=path, len=length, ok=True)
    r.ev(t + 0.009, client, "client.op.end", op_id=op_id, op="write", path=path, ok=True,
         len=length)


def end(r: Run, t: float):
    r.ev(t, "harness", "harness.quiescent", waited=0.1)
    r.ev(t + 0.01, "harness", "harness.run.end", status="ok")


def happy(run_id: str, config=None, expect=None, hflush=True) -> Run:
    """c1 writes 1024 bytes to /f through dn1,dn2,dn3 (hflush at 512) and closes."""
    r = Run(run_id, config, expect)
    start(r)
    open_create(r, 1.0)
    write(r, 1.1, 0, 512)
    if hflush:
        r.ev(1.15, "c1", "client.hflush", path="/f", offset=512)
    write(r, 1.2, 512, 512)
    close(r, 1.3, 1024)
    end(r, 2.0)
    r.final = final_state(
        [{"path": "/f", "closed": True, "len": 1024, "replication": 3,
          "blocks": [{"block": 1001, "gs": 1001, "len": 1024, "state": "COMPLETE",
                      "locations": PIPE}]}],
        {dn: [replica(1001, 1001, 1024)] for dn in ["dn1", "dn2", "dn3"]} | {"dn4": []},
        readback={"/f": {"len": 1024, "crc": crc("/f", 0, 1024)}})
    return r


NEW_PIPE = ["dn1", "dn3", "dn4"]


def pipeline_recovery(run_id: str, config=None, expect=None) -> Run:
    """dn2 fails after 512 bytes were acked (and hflushed); DEFAULT policy with r=3, n=2
    and hflushed -> dn4 is added, the RBW replica transferred, GS 1001 -> 1002."""
    r = Run(run_id, config, expect)
    start(r)
    open_create(r, 1.0)
    write(r, 1.1, 0, 512)
    r.ev(1.15, "c1", "client.hflush", path="/f", offset=512)
    r.ev(1.5, "harness", "harness.fault.inject", fault="kill-dn2", kind="kill", target="dn2",
         params="{}")
    r.ev(1.5, "harness", "harness.node.kill", target="dn2")
    r.ev(1.6, "c1", "client.pipeline.error", path="/f", block=1001, gs=1001,
         stage="DATA_STREAMING", pipeline=PIPE, error_index=1, bad_node="dn2", acked=512,
         error="IOException")
    r.ev(1.61, "c1", "client.pipeline.replace", path="/f", block=1001, policy="DEFAULT",
         replication=3, remaining=2, hflushed=True, decision="added", new_node="dn4")
    r.ev(1.62, "dn1", "dn.transfer", block=1001, gs=1001, len=512, target="dn4",
         stage="TRANSFER_RBW")
    r.ev(1.63, "dn4", "dn.replica.state", block=1001, gs=1001, len=512, state="TEMPORARY")
    r.ev(1.64, "nn", "nn.block.gs_bump", block=1001, old_gs=1001, gs=1002, reason="pipeline")
    for i, dn in enumerate(NEW_PIPE):
        r.ev(1.65 + 0.001 * i, dn, "dn.replica.state", block=1001, gs=1002, len=512, state="RBW")
        r.ev(1.65 + 0.001 * i, dn, "dn.pipeline.setup", block=1001, gs=1002,
             stage="PIPELINE_SETUP_STREAMING_RECOVERY", pipeline=NEW_PIPE, status="SUCCESS")
    r.ev(1.66, "nn", "nn.block.update_pipeline", block=1001, old_gs=1001, gs=1002,
         pipeline=NEW_PIPE, holder=C1)
    r.ev(1.67, "c1", "client.pipeline.recovered", path="/f", block=1001, old_gs=1001, gs=1002,
         pipeline=NEW_PIPE)
    write(r, 1.7, 512, 512)
    close(r, 1.8, 1024, gs=1002, pipeline=NEW_PIPE)
    r.ev(1.9, "nn", "nn.replica.invalidate", dn="dn2", block=1001, gs=1001)
    end(r, 2.5)
    r.final = final_state(
        [{"path": "/f", "closed": True, "len": 1024, "replication": 3,
          "blocks": [{"block": 1001, "gs": 1002, "len": 1024, "state": "COMPLETE",
                      "locations": NEW_PIPE}]}],
        {"dn1": [replica(1001, 1002, 1024)], "dn2": [replica(1001, 1001, 512, state="RBW")],
         "dn3": [replica(1001, 1002, 1024)], "dn4": [replica(1001, 1002, 1024)]},
        readback={"/f": {"len": 1024, "crc": crc("/f", 0, 1024)}})
    return r


def lease_recovery(run_id: str, config=None, expect=None, answers=None, final_len=512) -> Run:
    """c1 writes 1024 bytes (hflush at 512) and crashes; 3 s later c2 asks for the file
    (soft limit 2 s): block recovery with recovery id 1002 syncs to the min RBW length."""
    conf = {"lease.soft-limit": "2s", "lease.hard-limit": "20s"}
    conf.update(config or {})
    r = Run(run_id, conf, expect)
    start(r)
    open_create(r, 1.0)
    r.ev(1.05, "c1", "client.lease.renew", holder=C1)
    r.ev(1.05, "nn", "nn.lease.renew", holder=C1)
    write(r, 1.1, 0, 512)
    r.ev(1.15, "c1", "client.hflush", path="/f", offset=512)
    write(r, 1.2, 512, 512, ack=False)
    r.ev(1.3, "harness", "harness.fault.inject", fault="crash", kind="crash_client",
         target="c1", params="{}")
    r.ev(1.3, "harness", "harness.node.kill", target="c1")
    r.ev(1.999, "harness", "harness.node.start", target="c2")
    r.ev(2.0, "c2", "client.start", holder=C2)
    r.ev(2.0, "c2", "client.op.start", op_id="w2", op="recover_lease", path="/f")
    r.ev(2.1, "nn", "nn.lease.recover", path="/f", holder=C1, requester=C2, force=False,
         result="error", error="AlreadyBeingCreated")
    r.ev(2.1, "nn", "nn.rpc.reject", op="create", path="/f", holder=C2,
         error="AlreadyBeingCreated")
    t = 4.5
    r.ev(t, "nn", "nn.lease.recover", path="/f", holder=C1, requester=C2, force=False,
         result="recovering")
    r.ev(t + 0.001, "nn", "nn.block.state", path="/f", block=1001, gs=1001, len=512,
         state="UNDER_RECOVERY")
    r.ev(t + 0.0015, "nn", "nn.block.gs_bump", block=1001, old_gs=1001, gs=1002,
         reason="recovery", path="/f")
    r.ev(t + 0.002, "nn", "nn.recovery.start", path="/f", block=1001, gs=1001, recovery_id=1002,
         primary="dn1", pipeline=PIPE)
    r.ev(t + 0.003, "nn", "nn.lease.reassign", path="/f", old_holder=C1, holder=NNH)
    answers = answers or [("dn1", "RBW", 1024), ("dn2", "RBW", 512), ("dn3", "RBW", 1024)]
    for i, (dn, st, ln) in enumerate(answers):
        r.ev(t + 0.5 + 0.001 * i, dn, "dn.recovery.init_replica", block=1001, recovery_id=1002,
             state=st, len=ln, gs=1001, result="ok")
        r.ev(t + 0.5 + 0.001 * i, dn, "dn.replica.state", block=1001, gs=1001, len=ln, state="RUR")
    r.ev(t + 0.51, "dn1", "dn.recovery.sync", block=1001, recovery_id=1002,
         answers=[{"dn": dn, "state": st, "len": ln, "gs": 1001} for dn, st, ln in answers],
         rule="min_rbw", len=final_len, pipeline=[a[0] for a in answers])
    for i, (dn, st, ln) in enumerate(answers):
        r.ev(t + 0.52 + 0.001 * i, dn, "dn.recovery.update_replica", block=1001,
             recovery_id=1002, len=final_len)
        r.ev(t + 0.52 + 0.001 * i, dn, "dn.replica.state", block=1001, gs=1002, len=final_len,
             state="FINALIZED")
        r.ev(t + 0.5205 + 0.001 * i, "nn", "nn.replica.reported", dn=dn, block=1001, gs=1002,
             len=final_len, state="FINALIZED")
    r.ev(t + 0.53, "nn", "nn.recovery.commit", block=1001, recovery_id=1002, gs=1002,
         len=final_len, pipeline=[a[0] for a in answers], close=True, delete=False)
    r.ev(t + 0.531, "nn", "nn.block.state", path="/f", block=1001, gs=1002, len=final_len,
         state="COMPLETE")
    r.ev(t + 0.532, "nn", "nn.file.close", path="/f", len=final_len, reason="block_recovery")
    r.ev(t + 0.533, "nn", "nn.lease.remove", holder=NNH, path="/f", reason="recovery")
    r.ev(t + 0.6, "nn", "nn.lease.recover", path="/f", holder=None, requester=C2, force=False,
         result="closed")
    r.ev(t + 0.6, "c2", "client.recover_lease", path="/f", result=True)
    r.ev(t + 0.61, "c2", "client.op.end", op_id="w2", op="recover_lease", path="/f", ok=True)
    end(r, 6.0)
    dns = [a[0] for a in answers]
    r.final = final_state(
        [{"path": "/f", "closed": True, "len": final_len, "replication": 3,
          "blocks": [{"block": 1001, "gs": 1002, "len": final_len, "state": "COMPLETE",
                      "locations": dns}]}],
        {dn: [replica(1001, 1002, final_len)] for dn in dns} | {"dn4": []},
        readback={"/f": {"len": final_len, "crc": crc("/f", 0, final_len)}})
    return r


def write_logs(run_dir: str, logs: dict[str, list[dict]], **common) -> None:
    """events/<node>.jsonl for each node's records, as given, each with `common` and its
    seq added."""
    for node, recs in logs.items():
        with open(os.path.join(run_dir, "events", f"{node}.jsonl"), "w") as out:
            for seq, r in enumerate(recs):
                out.write(json.dumps({**r, **common, "seq": seq}) + "\n")


@contextlib.contextmanager
def random_runs(spark, root: str, seed: int, count: int,
                make: Callable[[str, random.Random, int], str]):
    """`count` run folders written by make(root, rng, i) from one seeded generator,
    loaded together into a RunSet (released afterwards): for the tests that compare two
    forms of a table on random histories."""
    from harness.reconcile.load import load_runs
    rng = random.Random(seed)
    runs = load_runs([make(root, rng, i) for i in range(count)], spark)
    try:
        yield runs
    finally:
        runs.close()
