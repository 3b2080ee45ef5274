"""Live log adapters on a real Hadoop NameNode, three DataNodes and the Java workload
client: a DataNode of the writer's pipeline, chosen from the NameNode's adapted
`nn.block.allocate` event as the run goes (as a trigger would), is SIGKILLed mid-write;
the client rebuilds its pipeline without it. The adapted events show the error with the
bad node, the recovered pipeline with a greater GS, and the NameNode's matching GS bump
and updatePipeline (checks P1, P4); the lag from a log line's own time to its event read
by LogTailer is measured."""

from __future__ import annotations

import json
import shutil
import os
import signal
import statistics
import subprocess
import time

import pytest

from harness.systems.hadoop.adapter import LogAdapter
from harness.triggers import LogTailer
from tests import hadoop_support as hs

pytestmark = [pytest.mark.integration, pytest.mark.hadoop,
              pytest.mark.skipif(hs.missing() is not None, reason=hs.missing() or "")]

MiB = 1024 * 1024
SIZE = 48 * MiB
SEED = 5


def test_kill_a_pipeline_datanode_mid_write(tmp_path):
    classes = hs.build_client(str(tmp_path / "classes"))
    cluster = hs.HadoopCluster(str(tmp_path / "cluster"), datanodes=3,
                               conf={"dfs.replication": "2", "dfs.blocksize": str(16 * MiB),
                                     "dfs.client.socket-timeout": "5000"})
    events_dir = tmp_path / "events"
    adapters = {}
    client = None
    try:
        # adapters first: the logs do not exist yet, each adapter waits for its file
        for node, role in (("nn", "namenode"), ("dn1", "datanode"), ("dn2", "datanode"),
                           ("dn3", "datanode"), ("c1", "client")):
            adapters[node] = LogAdapter(cluster.log_of(node), node, role, hs.RELEASE,
                                        str(events_dir / f"{node}-log.jsonl"),
                                        cluster.hosts).start()
        cluster.start()
        ops = tmp_path / "c1.json"
        ops.write_text(json.dumps([{"id": "w", "op": "write", "path": "/t/p", "size": SIZE,
                                    "hflush_every": MiB // 2, "close": True, "gated": False}]))
        cmd = cluster.client_command(classes, "c1", str(ops), str(events_dir / "c1.jsonl"),
                                     seed=SEED)
        client = subprocess.Popen(cmd, stdout=open(tmp_path / "c1.out", "wb"),
                                  stderr=subprocess.STDOUT, start_new_session=True)
        tailer = LogTailer([events_dir])
        tailing_since = time.time()
        seen: list[tuple[dict, float]] = []
        victim = None
        flushed = False
        deadline = time.monotonic() + 120
        while client.poll() is None and time.monotonic() < deadline:
            for e in tailer.read_new():
                seen.append((e, time.time()))
                flushed |= e["event"] == "client.hflush" and e["offset"] >= 2 * MiB
                # the trigger: 2 MiB of the first 16 MiB block hflushed: kill a node of
                # the pipeline the NameNode's adapted allocate named (the client's and the
                # NameNode's logs are adapted apart: whichever event comes last fires it)
                allocs = [x for x, _ in seen if x["event"] == "nn.block.allocate"
                          and x["path"] == "/t/p"]
                if victim is None and flushed and allocs:
                    victim = allocs[-1]["pipeline"][-1]
                    os.kill(cluster.procs[victim].pid, signal.SIGKILL)
            time.sleep(0.01)
        assert client.wait(30) == 0, (tmp_path / "c1.out").read_text()[-3000:]
        time.sleep(0.5)
        for e in tailer.read_new():
            seen.append((e, time.time()))
        tailer.close()
    finally:
        if client is not None and client.poll() is None:
            client.kill()
        cluster.stop()
        for a in adapters.values():
            a.stop()
    assert victim is not None, "the write ended before the trigger fired"
    events = [e for e, _ in seen]
    mine = [e for e in events if e["node"] == "c1" and "source" not in e]
    [close] = [e for e in mine if e["event"] == "client.close"]
    assert close["ok"] is True and close["len"] == SIZE
    # the client's log: the error names the killed node, the rebuilt pipeline leaves it out
    errs = [e for e in events if e["event"] == "client.pipeline.error"]
    recs = [e for e in events if e["event"] == "client.pipeline.recovered"]
    assert errs and errs[0]["bad_node"] == victim and errs[0]["path"] == "/t/p"
    assert recs, [e["event"] for e in events if e.get("source")]
    rec = recs[0]
    assert rec["block"] == errs[0]["block"] and rec["gs"] > errs[0]["gs"]
    assert victim not in rec["pipeline"] and len(rec["pipeline"]) >= 1
    # the NameNode agrees (P4): the same block, GS and nodes, and a pipeline GS bump
    upd = [e for e in events if e["event"] == "nn.block.update_pipeline"
           and e["block"] == rec["block"] and e["gs"] == rec["gs"]]
    assert upd and upd[0]["pipeline"] == rec["pipeline"] and upd[0]["old_gs"] == rec["old_gs"]
    assert any(e["event"] == "nn.block.gs_bump" and e["reason"] == "pipeline"
               and e["block"] == rec["block"] and e["gs"] == rec["gs"] for e in events)
    # every adapted file is a clean contract log: seq from 0 without a gap
    for name in os.listdir(events_dir):
        lines = [json.loads(x) for x in open(events_dir / name)]
        assert [x["seq"] for x in lines] == list(range(len(lines))), name
    # lag: a log line's own time (ms) to the moment LogTailer returned its event, for
    # the lines logged once the tailer was reading (the bump keeps its earlier line's ts)
    timed = sorted(((t - e["ts"], e["node"], e["event"]) for e, t in seen
                    if e.get("source") == "hadoop-log" and e["event"] != "nn.block.gs_bump"
                    and e["ts"] >= tailing_since),
                   reverse=True)
    lags = [x[0] for x in timed]
    print(f"\nlive adapter lag (log4j line time -> read by LogTailer): median "
          f"{statistics.median(lags) * 1000:.0f} ms, max {max(lags) * 1000:.0f} ms, "
          f"{len(lags)} events; slowest: {timed[:3]}")
    assert statistics.median(lags) < 1.0


def test_hard_limit_recovery_after_a_writer_crash(tmp_path):
    """The writer SIGKILLed with a file open: the NameNode's lease monitor expires the
    lease at the hard limit, hands it to HDFS_NameNode and recovers the last block; the
    adapted events say so in the order the checks L1, L3, B1, B2 read them."""
    classes = hs.build_client(str(tmp_path / "classes"))
    cluster = hs.HadoopCluster(str(tmp_path / "cluster"), datanodes=2,
                               conf={"dfs.replication": "2",
                                     "dfs.namenode.lease-hard-limit-sec": "4"})
    events_dir = tmp_path / "events"
    adapters = {}
    client = None
    try:
        for node, role in (("nn", "namenode"), ("dn1", "datanode"), ("dn2", "datanode"),
                           ("c1", "client")):
            out = events_dir / (f"{node}.jsonl" if node != "c1" else "c1.hadoop.jsonl")
            adapters[node] = LogAdapter(cluster.log_of(node), node, role, hs.RELEASE, str(out),
                                        cluster.hosts).start()
        cluster.start()
        ops = tmp_path / "c1.json"
        ops.write_text(json.dumps([{"id": "w", "op": "write", "path": "/t/h", "size": 3 * MiB // 2,
                                    "hflush_every": MiB // 2, "close": False, "gated": False}]))
        client = subprocess.Popen(
            cluster.client_command(classes, "c1", str(ops), str(events_dir / "c1.jsonl"), seed=SEED),
            stdout=open(tmp_path / "c1.out", "wb"), stderr=subprocess.STDOUT,
            start_new_session=True)
        tailer = LogTailer([events_dir])
        seen: list[dict] = []
        deadline = time.monotonic() + 90
        killed_at = None
        while time.monotonic() < deadline:
            seen += tailer.read_new()
            if killed_at is None and any(e["event"] == "client.hflush"
                                         and e["offset"] == 3 * MiB // 2 for e in seen):
                client.kill()                       # crash_client: SIGKILL of the JVM
                client.wait(10)
                killed_at = time.time()
            if any(e["event"] == "nn.file.close" and e["path"] == "/t/h" for e in seen):
                break
            time.sleep(0.02)
        tailer.close()
    finally:
        if client is not None and client.poll() is None:
            client.kill()
        cluster.stop()
        for a in adapters.values():
            a.stop()
    assert killed_at is not None
    holder = [e for e in seen if e["event"] == "client.start"][0]["holder"]
    nn = [e for e in seen if e["node"] == "nn"]
    names = [e["event"] for e in nn]
    assert [e["event"] for e in nn if e.get("path") == "/t/h" or e.get("holder") == holder][:2] == [
        "nn.file.create", "nn.lease.add"]
    [exp] = [e for e in nn if e["event"] == "nn.lease.expired"]
    assert exp["holder"] == holder and exp["limit"] == "hard"
    assert exp["ts"] - killed_at < 4 + 3, "expired later than the hard limit + 2 monitor runs"
    [re_] = [e for e in nn if e["event"] == "nn.lease.reassign"]
    assert (re_["old_holder"], re_["holder"]) == (holder, "HDFS_NameNode")
    [start] = [e for e in nn if e["event"] == "nn.recovery.start"]
    assert start["primary"] in ("dn1", "dn2") and start["recovery_id"] > start["gs"]
    [commit] = [e for e in nn if e["event"] == "nn.recovery.commit"]
    assert commit["recovery_id"] == start["recovery_id"] and commit["close"] is True
    [close] = [e for e in nn if e["event"] == "nn.file.close"]
    assert close["reason"] == "block_recovery"
    [remove] = [e for e in nn if e["event"] == "nn.lease.remove" and e["path"] == "/t/h"]
    assert remove["holder"] == "HDFS_NameNode"
    assert names.index("nn.lease.expired") < names.index("nn.recovery.start") < names.index(
        "nn.recovery.commit")
    syncs = [e for e in seen if e["event"] == "dn.recovery.sync"]
    # the last block (1 MiB blocks) held the last hflushed half MiB: none of it lost
    assert len(syncs) == 1 and syncs[0]["len"] == commit["len"] == MiB // 2
    shutil.copytree(events_dir, tmp_path / "kept-events")
