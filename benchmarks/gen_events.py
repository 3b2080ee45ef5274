"""Synthetic but consistent run folders for the verifier benchmark.

Each run is a small story that every check of spec/CHECKS.md accepts: clients c1 and c2
write files through 3-DataNode pipelines in packets (client.write + client.ack, hflush
every 16 packets, lease renewals every second); every second run loses dn2 in the middle
of a block (pipeline recovery with a DEFAULT-policy replacement by dn4, RBW transfer, GS
bump, dn2 restarted); every third run crashes c2 in its last block, and c1 takes the
file over after the soft limit (lease recovery, block recovery to the min RBW length).
final_state.json agrees with the events (lengths, GS, locations, replica CRCs, and the
read-back CRC combined from the written ranges).

    python benchmarks/gen_events.py OUT_DIR --events 1000000 [--per-run 10000] [--procs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from multiprocessing import Pool

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from harness.reconcile.crc import _shift_tables, crc32_of_ranges  # noqa: E402

PACKET = 64 * 1024
# crc32_combine(x, c, PACKET) = SHIFT applied to x, xor c: the writers' running stream_crc
SHIFT = _shift_tables(PACKET)
FILES = 4
BLOCKS = 3
T0 = 1_790_000_000.0
ROLE = {"nn": "namenode", "harness": "harness", "c1": "client", "c2": "client",
        "dn1": "datanode", "dn2": "datanode", "dn3": "datanode", "dn4": "datanode"}


class Log:
    """Lines per node, written as JSON without json.dumps per event (fast enough for 10M)."""

    def __init__(self):
        self.lines = {n: [] for n in ROLE}
        self.seq = dict.fromkeys(ROLE, 0)
        self.count = 0

    def ev(self, t: float, node: str, event: str, **f) -> None:
        body = ",".join(f'"{k}":{_j(v)}' for k, v in f.items())
        self.lines[node].append(
            f'{{"ts":{T0 + t:.6f},"node":"{node}","role":"{ROLE[node]}","seq":{self.seq[node]},'
            f'"event":"{event}"{"," + body if body else ""}}}\n')
        self.seq[node] += 1
        self.count += 1


def _j(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if v is None:
        return "null"
    if isinstance(v, str):
        return '"' + v + '"'
    return json.dumps(v, separators=(",", ":"))


def gen_run(args: tuple) -> int:
    """Write one run folder; returns the number of events written."""
    root, index, packets = args
    rng = random.Random(index)
    run_id = f"bench-{index:06d}"
    d = os.path.join(root, run_id)
    os.makedirs(os.path.join(d, "events"), exist_ok=True)
    log = Log()
    recover_pipeline = index % 2 == 1
    crash = index % 3 == 2
    holders = {"c1": f"DFSClient_c1_{100 + index}", "c2": f"DFSClient_c2_{200 + index}"}
    t = 0.0
    log.ev(t, "harness", "harness.run.start", scenario="bench", seed=index)
    log.ev(t, "nn", "nn.start")
    for i, dn in enumerate(["dn1", "dn2", "dn3", "dn4"]):
        log.ev(t + 0.001 * i, dn, "dn.start", replicas=0)
        log.ev(t + 0.001 * i, "nn", "nn.dn.register", dn=dn)
    for c in ("c1", "c2"):
        log.ev(0.01, c, "client.start", holder=holders[c])
    gs = 1000
    block_id = 1_073_741_824
    files, replicas, readback = [], {dn: [] for dn in ("dn1", "dn2", "dn3", "dn4")}, {}
    t = 0.1
    last_renew = {"c1": 0.0, "c2": 0.0}
    streams = {"c1": 0, "c2": 0}
    pipeline_done = False
    for fi in range(FILES):
        client = "c1" if fi % 2 == 0 else "c2"
        holder = holders[client]
        path = f"/bench/f{fi}"
        crash_here = crash and fi == FILES - 1
        op = f"w{fi}"
        log.ev(t, client, "client.op.start", op_id=op, op="write", path=path)
        log.ev(t + 0.0001, "nn", "nn.file.create", path=path, holder=holder)
        log.ev(t + 0.0002, "nn", "nn.lease.add", holder=holder, path=path)
        stream = streams[client]
        streams[client] += 1
        log.ev(t + 0.0003, client, "client.stream.open", path=path, holder=holder, mode="create",
               stream=stream, offset=0, content=None)
        stream_crc = 0        # CRC-32 of the stream's bytes so far (client.write stream_crc)
        last_renew[client] = t
        t += 0.001
        writes = []           # (offset, len, crc) in file order
        blocks = []
        offset = 0
        for bi in range(BLOCKS):
            block_id += 1
            gs += 1
            bgs = gs
            pipe = ["dn1", "dn2", "dn3"]
            log.ev(t, "nn", "nn.block.allocate", path=path, block=block_id, gs=bgs, pipeline=pipe)
            log.ev(t, "nn", "nn.block.state", path=path, block=block_id, gs=bgs, len=0,
                   state="UNDER_CONSTRUCTION")
            for dn in pipe:
                log.ev(t + 0.0002, dn, "dn.replica.state", block=block_id, gs=bgs, len=0, state="RBW")
                log.ev(t + 0.0002, dn, "dn.pipeline.setup", block=block_id, gs=bgs,
                       stage="PIPELINE_SETUP_CREATE", pipeline=pipe, status="SUCCESS")
            log.ev(t + 0.0004, client, "client.pipeline.setup", path=path, block=block_id, gs=bgs,
                   stage="PIPELINE_SETUP_CREATE", pipeline=pipe)
            t += 0.001
            block_start = offset
            fail_at = packets // 2 if (recover_pipeline and not pipeline_done and fi == 0 and bi == 1) else -1
            last_block_of_crash = crash_here and bi == BLOCKS - 1
            crash_at = packets // 2 if last_block_of_crash else -1
            acked = 0
            for p in range(packets):
                if p == fail_at:
                    bgs, pipe = _pipeline_recovery(log, t, client, path, block_id, bgs, acked, gs)
                    gs = bgs
                    pipeline_done = True
                    t += 0.05
                c = rng.getrandbits(32)
                log.ev(t, client, "client.write", path=path, offset=offset, len=PACKET, crc=c,
                       stream=stream, stream_crc=stream_crc)
                stream_crc = (SHIFT[0][stream_crc & 0xFF] ^ SHIFT[1][(stream_crc >> 8) & 0xFF]
                              ^ SHIFT[2][(stream_crc >> 16) & 0xFF] ^ SHIFT[3][stream_crc >> 24]
                              ^ c)
                writes.append((offset, PACKET, c))
                offset += PACKET
                if p == crash_at:
                    break     # written, never acked: lost with the client
                acked += PACKET
                log.ev(t + 0.0002, client, "client.ack", path=path, block=block_id, seqno=p,
                       acked=acked)
                if (p + 1) % 16 == 0:
                    log.ev(t + 0.0003, client, "client.hflush", path=path, offset=offset)
                t += 0.0005
                if t - last_renew[client] >= 1.0:
                    log.ev(t, client, "client.lease.renew", holder=holder)
                    log.ev(t + 0.0001, "nn", "nn.lease.renew", holder=holder)
                    last_renew[client] = t
            if last_block_of_crash:
                t, final = _crash_and_recover(log, t, holders, path, block_id, bgs, acked, gs,
                                              block_start + acked)
                gs = final["gs"]
                blocks.append({"block": block_id, "gs": gs, "len": acked, "state": "COMPLETE",
                               "locations": ["dn1", "dn2", "dn3"]})
                for dn in ("dn1", "dn2", "dn3"):
                    replicas[dn].append(_replica(block_id, gs, acked))
                offset = block_start + acked
                break
            blen = offset - block_start
            for dn in pipe:
                log.ev(t, dn, "dn.replica.state", block=block_id, gs=bgs, len=blen, state="FINALIZED")
                log.ev(t + 0.0001, "nn", "nn.replica.reported", dn=dn, block=block_id, gs=bgs,
                       len=blen, state="FINALIZED")
                replicas[dn].append(_replica(block_id, bgs, blen))
            log.ev(t + 0.0002, "nn", "nn.block.state", path=path, block=block_id, gs=bgs, len=blen,
                   state="COMPLETE")
            blocks.append({"block": block_id, "gs": bgs, "len": blen, "state": "COMPLETE",
                           "locations": list(pipe)})
            t += 0.001
        final_len = offset
        if not crash_here:
            log.ev(t, "nn", "nn.file.complete", path=path, holder=holder, ok=True)
            log.ev(t + 0.0001, "nn", "nn.file.close", path=path, len=final_len, reason="complete")
            log.ev(t + 0.0002, "nn", "nn.lease.remove", holder=holder, path=path, reason="close")
            log.ev(t + 0.0003, client, "client.close", path=path, len=final_len, ok=True)
            log.ev(t + 0.0004, client, "client.op.end", op_id=op, op="write", path=path, ok=True,
                   len=final_len)
            t += 0.001
        kept = [(ln, c) for o, ln, c in writes if o + ln <= final_len]
        files.append({"path": path, "closed": True, "len": final_len, "replication": 3,
                      "blocks": blocks})
        readback[path] = {"len": final_len, "crc": crc32_of_ranges(kept)}
    log.ev(t + 0.01, "harness", "harness.quiescent", waited=0.01)
    log.ev(t + 0.02, "harness", "harness.run.end", status="completed")
    for node, lines in log.lines.items():
        if lines:
            with open(os.path.join(d, "events", f"{node}.jsonl"), "w") as f:
                f.writelines(lines)
    with open(os.path.join(d, "final_state.json"), "w") as f:
        json.dump({"files": files, "leases": [], "datanodes": replicas, "readback": readback}, f)
    with open(os.path.join(d, "scenario.yaml"), "w") as f:
        f.write("name: bench\ncluster:\n  datanodes: 4\n  config:\n"
                "    dfs.replication: 3\n    lease.soft-limit: 2s\n    lease.hard-limit: 20s\n"
                f"    dfs.blocksize: {packets * PACKET}\n")
    return log.count


def _replica(block: int, gs: int, length: int) -> dict:
    return {"block": block, "gs": gs, "len": length, "state": "FINALIZED",
            "crc": (block * 2654435761 + length) & 0xFFFFFFFF}


def _pipeline_recovery(log: Log, t: float, client: str, path: str, block: int, gs: int,
                       acked: int, counter: int):
    """dn2 dies; DEFAULT policy (r=3, n=2, hflushed) adds dn4; GS -> counter + 1."""
    new_gs = counter + 1
    old, new = ["dn1", "dn2", "dn3"], ["dn1", "dn3", "dn4"]
    log.ev(t, "harness", "harness.fault.inject", fault="kill-dn2", kind="kill", target="dn2",
           params={})
    log.ev(t, "harness", "harness.node.kill", target="dn2")
    log.ev(t + 0.01, client, "client.pipeline.error", path=path, block=block, gs=gs,
           stage="DATA_STREAMING", pipeline=old, error_index=1, bad_node="dn2", acked=acked,
           error="IOException")
    log.ev(t + 0.011, client, "client.pipeline.replace", path=path, block=block, policy="DEFAULT",
           replication=3, remaining=2, hflushed=True, decision="added", new_node="dn4")
    log.ev(t + 0.012, "dn1", "dn.transfer", block=block, gs=gs, len=acked, target="dn4",
           stage="TRANSFER_RBW")
    log.ev(t + 0.013, "dn4", "dn.replica.state", block=block, gs=gs, len=acked, state="TEMPORARY")
    log.ev(t + 0.014, "nn", "nn.block.gs_bump", block=block, old_gs=gs, gs=new_gs, reason="pipeline")
    for dn in new:
        log.ev(t + 0.015, dn, "dn.replica.state", block=block, gs=new_gs, len=acked, state="RBW")
        log.ev(t + 0.015, dn, "dn.pipeline.setup", block=block, gs=new_gs,
               stage="PIPELINE_SETUP_STREAMING_RECOVERY", pipeline=new, status="SUCCESS")
    log.ev(t + 0.016, "nn", "nn.block.update_pipeline", block=block, old_gs=gs, gs=new_gs,
           pipeline=new)
    log.ev(t + 0.017, client, "client.pipeline.recovered", path=path, block=block, old_gs=gs,
           gs=new_gs, pipeline=new)
    log.ev(t + 0.03, "harness", "harness.node.start", target="dn2")
    log.ev(t + 0.031, "dn2", "dn.start", replicas=1)
    # killed with the replica RBW: it comes back waiting to be recovered (check B6)
    log.ev(t + 0.0311, "dn2", "dn.replica.state", block=block, gs=gs, len=acked, state="RWR")
    log.ev(t + 0.032, "nn", "nn.replica.invalidate", dn="dn2", block=block, gs=gs)
    return new_gs, new


def _crash_and_recover(log: Log, t: float, holders: dict, path: str, block: int, gs: int,
                       acked: int, counter: int, file_len: int):
    """c2 dies mid-block; after the soft limit c1 takes the file over: block recovery with
    recovery id counter + 1 syncs the three RBW replicas to the acked length."""
    c2, c1 = holders["c2"], holders["c1"]
    log.ev(t, "harness", "harness.fault.inject", fault="crash-c2", kind="crash_client",
           target="c2", params={})
    log.ev(t, "harness", "harness.node.kill", target="c2")
    t += 2.5
    rid = counter + 1
    log.ev(t, "c1", "client.op.start", op_id="r1", op="recover_lease", path=path)
    log.ev(t + 0.001, "nn", "nn.lease.recover", path=path, holder=c2, requester=c1, force=False,
           result="recovering")
    log.ev(t + 0.002, "nn", "nn.block.state", path=path, block=block, gs=gs, len=acked,
           state="UNDER_RECOVERY")
    log.ev(t + 0.003, "nn", "nn.block.gs_bump", block=block, old_gs=gs, gs=rid, reason="recovery")
    log.ev(t + 0.004, "nn", "nn.recovery.start", path=path, block=block, gs=gs, recovery_id=rid,
           primary="dn1", pipeline=["dn1", "dn2", "dn3"])
    log.ev(t + 0.005, "nn", "nn.lease.reassign", path=path, old_holder=c2, holder="HDFS_NameNode")
    lens = {"dn1": acked + PACKET, "dn2": acked, "dn3": acked + PACKET}
    answers = []
    for dn, ln in lens.items():
        log.ev(t + 0.2, dn, "dn.recovery.init_replica", block=block, recovery_id=rid, state="RBW",
               len=ln, gs=gs, result="ok")
        answers.append({"dn": dn, "state": "RBW", "len": ln, "gs": gs})
    log.ev(t + 0.21, "dn1", "dn.recovery.sync", block=block, recovery_id=rid, answers=answers,
           rule="min_rbw", len=acked, pipeline=["dn1", "dn2", "dn3"])
    for dn in lens:
        log.ev(t + 0.22, dn, "dn.recovery.update_replica", block=block, recovery_id=rid, len=acked)
        log.ev(t + 0.22, dn, "dn.replica.state", block=block, gs=rid, len=acked, state="FINALIZED")
        # the NameNode completes the block once a FINALIZED replica is reported (check H1)
        log.ev(t + 0.225, "nn", "nn.replica.reported", dn=dn, block=block, gs=rid, len=acked,
               state="FINALIZED")
    log.ev(t + 0.23, "nn", "nn.recovery.commit", block=block, recovery_id=rid, gs=rid, len=acked,
           pipeline=["dn1", "dn2", "dn3"], close=True, delete=False)
    log.ev(t + 0.231, "nn", "nn.block.state", path=path, block=block, gs=rid, len=acked,
           state="COMPLETE")
    log.ev(t + 0.232, "nn", "nn.file.close", path=path, len=file_len, reason="block_recovery")
    log.ev(t + 0.233, "nn", "nn.lease.remove", holder="HDFS_NameNode", path=path, reason="recovery")
    log.ev(t + 0.3, "c1", "client.recover_lease", path=path, result=True)
    log.ev(t + 0.301, "c1", "client.op.end", op_id="r1", op="recover_lease", path=path, ok=True)
    return t + 0.31, {"gs": rid}


def generate(root: str, events: int, per_run: int = 10_000, procs: int = 2) -> tuple[list[str], int]:
    """Write about `events` events as runs of about `per_run`; returns (run dirs, count)."""
    overhead = 260
    packets = max(8, (per_run - overhead) // (FILES * BLOCKS * 2))
    per = FILES * BLOCKS * packets * 2 + overhead
    n_runs = max(1, round(events / per))
    os.makedirs(root, exist_ok=True)
    jobs = [(root, i, packets) for i in range(n_runs)]
    with Pool(procs) as pool:
        counts = pool.map(gen_run, jobs, chunksize=max(1, n_runs // (procs * 8)))
    return [os.path.join(root, f"bench-{i:06d}") for i in range(n_runs)], sum(counts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--per-run", type=int, default=10_000)
    ap.add_argument("--procs", type=int, default=os.cpu_count() or 2)
    a = ap.parse_args(argv)
    t = time.perf_counter()
    dirs, n = generate(a.out, a.events, a.per_run, a.procs)
    print(f"{n} events in {len(dirs)} runs written to {a.out} in {time.perf_counter() - t:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
