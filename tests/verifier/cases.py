"""The hand-written logs that prove the oracles: for every check a run where it must
pass, runs that violate it (must fail) and a run where it must skip.

`CASES` maps a run id to a function building its Run; `EXPECTED` lists (run id, check,
status). All runs are loaded and checked together, once per test session.
"""

from __future__ import annotations

import zlib

from builders import (C1, C2, NNH, PIPE, Run, close, crc, data, end, final_state, happy,
                      lease_recovery, open_create, pipeline_recovery, replica, start, write)

CASES: dict = {}
EXPECTED: list[tuple[str, str, str]] = []


def case(run_id: str, *expect: tuple[str, str]):
    """Register a builder as run `run_id`, with (check, status) expectations."""
    def deco(fn):
        CASES[run_id] = lambda: fn(run_id)
        for check, status in expect:
            EXPECTED.append((run_id, check, status))
        return fn
    return deco


# -- the three base stories -----------------------------------------------------------------

ALL_SKIP_IN_HAPPY = ["P1", "P2", "P3", "P4", "P5", "P6", "P7", "L2", "L3", "L4", "L5", "L6",
                     "B1", "B2", "B3", "B4", "B5", "B6"]


@case("happy", *[(c, "skip") for c in ALL_SKIP_IN_HAPPY],
      ("I1", "pass"), ("L1", "pass"), ("H1", "pass"), ("D1", "pass"), ("D2", "pass"),
      ("D3", "pass"), ("D4", "pass"))
def _happy(rid):
    return happy(rid)


@case("pipeline-recovery", ("I1", "pass"), ("P1", "pass"), ("P2", "pass"), ("P3", "pass"),
      ("P4", "pass"), ("P5", "pass"), ("P6", "skip"), ("L1", "pass"), ("B1", "skip"), ("D1", "pass"),
      ("D2", "pass"), ("D3", "pass"), ("D4", "pass"))
def _pipe(rid):
    return pipeline_recovery(rid)


@case("lease-recovery", ("I1", "pass"), ("L1", "pass"), ("L2", "pass"), ("L3", "skip"),
      ("L4", "pass"), ("L5", "pass"), ("L6", "skip"), ("B1", "pass"), ("B2", "pass"), ("B3", "pass"),
      ("B4", "skip"), ("B5", "pass"), ("D1", "pass"), ("D2", "pass"), ("D3", "pass"),
      ("D4", "pass"), ("P1", "skip"), ("P5", "skip"))
def _lease(rid):
    return lease_recovery(rid)


# -- I1 logs complete ---------------------------------------------------------------------------
# Every run is judged (there is always a folder to look at): I1 has no skip case.

@case("I1-no-events", ("I1", "fail"))
def _(rid):
    r = happy(rid)
    r.no_events = True
    return r


@case("I1-process-left-no-log", ("I1", "fail"))
def _(rid):
    r = happy(rid)
    r.lines.pop("dn4")
    return r


@case("I1-seq-gap", ("I1", "fail"))
def _(rid):
    """Lines lost inside dn1's log (a torn write, not a kill: the log goes on after)."""
    r = happy(rid)
    r.renumber = False
    del r.lines["dn1"][1]
    return r


@case("I1-seq-not-from-zero", ("I1", "fail"))
def _(rid):
    r = happy(rid)
    r.renumber = False
    del r.lines["dn2"][0]
    return r


@case("I1-seq-repeated", ("I1", "fail"))
def _(rid):
    r = happy(rid)
    r.renumber = False
    r.lines["c1"].append(r.lines["c1"][-1])
    return r


def _reseq(r, node: str, lost: tuple, repeated: tuple):
    """The node's log without the lines of seqs `lost`, and the line of each seq in
    `repeated` once more per time it is named there (right after it): seqs as logged."""
    r.renumber = False
    out = []
    for seq, line in enumerate(r.lines[node]):
        if seq not in lost:
            out += [line] * (1 + repeated.count(seq))
    r.lines[node] = out
    return r


# Each of these keeps the log's line count, first and last seq, the sum of its seqs and
# the sum of their squares: only seqs counted one by one tell them from a whole log.
@case("I1-seq-lost-and-repeated", ("I1", "fail"))
def _(rid):
    """A hand-made NameNode log: seqs 1, 5 and 6 lost, 2, 3 and 7 twice."""
    return _reseq(happy(rid), "nn", (1, 5, 6), (2, 3, 7))


@case("I1-seq-repeated-thrice-gaps-elsewhere", ("I1", "fail"))
def _(rid):
    """c1's seq 3 three times and its last seq 10 twice; 1, 6 and 9 lost."""
    return _reseq(happy(rid), "c1", (1, 6, 9), (3, 3, 10))


@case("I1-seq-two-gaps-four-repeats", ("I1", "fail"))
def _(rid):
    """nn's seqs 1..2 and 9..10 lost, 0, 4, 7 and 11 twice (equal sums of cubes too)."""
    return _reseq(happy(rid), "nn", (1, 2, 9, 10), (0, 4, 7, 11))


@case("I1-killed-log-ends-early", ("I1", "pass"))
def _(rid):
    """dn2 was SIGKILLed: its log simply stops (no dn.stop): that is no gap."""
    return pipeline_recovery(rid)


@case("I1-malformed-line", ("I1", "fail"))
def _(rid):
    return happy(rid).garbage("dn3", '{"ts": 1700000001.5, "node": "dn3", "se')


@case("I1-no-final-state", ("I1", "fail"))
def _(rid):
    r = happy(rid)
    r.final = None
    return r


@case("I1-run-timed-out", ("I1", "fail"))
def _(rid):
    return happy(rid).edit("harness.run.end", {}, status="timeout")


@case("I1-not-quiescent", ("I1", "fail"))
def _(rid):
    """The cluster never settled (a stale replica never deleted): final_state.json is a
    snapshot of a cluster still moving, so a pass on it would prove nothing."""
    return happy(rid).edit("harness.quiescent", {}, reached=False,
                           reason="stale replicas of blk 1000 on dn2 not yet invalidated")


@case("I1-quiescent", ("I1", "pass"))
def _(rid):
    return happy(rid).edit("harness.quiescent", {}, reached=True, reason=None)


@case("I1-no-run-end", ("I1", "fail"))
def _(rid):
    return happy(rid).drop("harness.run.end")


@case("I1-runner-completed", ("I1", "pass"))
def _(rid):
    """The runner writes `completed` for a run that went through: that is ok."""
    return happy(rid).edit("harness.run.end", {}, status="completed")


# -- P1 rebuild -------------------------------------------------------------------------------

@case("P1-no-recovered", ("P1", "fail"))
def _(rid):
    return pipeline_recovery(rid).drop("client.pipeline.recovered")


@case("P1-same-gs", ("P1", "fail"))
def _(rid):
    return pipeline_recovery(rid).edit("client.pipeline.recovered", {}, gs=1001)


@case("P1-bad-node-kept", ("P1", "fail"))
def _(rid):
    return pipeline_recovery(rid).edit("client.pipeline.recovered", {},
                                       pipeline=["dn1", "dn2", "dn4"])


@case("P1-setup-create-error", ("P1", "skip"))
def _(rid):
    """A setup error of a new block is handled by abandonBlock + addBlock: no recovery."""
    r = happy(rid)
    r.ev(1.012, "c1", "client.pipeline.error", path="/f", block=1000, gs=1000,
         stage="PIPELINE_SETUP_CREATE", pipeline=["dn2", "dn1", "dn3"], error_index=0,
         bad_node="dn2", acked=0, error="ConnectException")
    r.ev(1.013, "c1", "client.pipeline.abandon", path="/f", block=1000, gs=1000, bad_node="dn2")
    return r


@case("P1-failed-close-without-recovery", ("P1", "fail"))
def _(rid):
    """The error comes after the last ack; the stream then closes (unsuccessfully) with
    no recovery and no failure for good: it went on without rebuilding."""
    r = happy(rid).drop("client.close").drop("client.op.end")
    r.ev(1.25, "c1", "client.pipeline.error", path="/f", block=1001, gs=1001,
         stage="DATA_STREAMING", pipeline=PIPE, error_index=1, bad_node="dn2", acked=1024,
         error="IOException")
    r.ev(1.4, "c1", "client.close", path="/f", len=1024, ok=False, error="IOException")
    return r


@case("P1-write-after-error-without-recovery", ("P1", "fail"))
def _(rid):
    r = happy(rid)
    r.ev(1.19, "c1", "client.pipeline.error", path="/f", block=1001, gs=1001,
         stage="DATA_STREAMING", pipeline=PIPE, error_index=1, bad_node="dn2", acked=512,
         error="IOException")
    return r.drop("client.ack", acked=1024).drop("client.close")


@case("P1-failed-for-good", ("P1", "skip"), ("P6", "pass"))
def _(rid):
    """The same error, then client.stream.error: the stream did not go on (P6's case)."""
    r = happy(rid).drop("client.close").drop("client.op.end")
    r.ev(1.25, "c1", "client.pipeline.error", path="/f", block=1001, gs=1001,
         stage="DATA_STREAMING", pipeline=["dn1"], error_index=0, bad_node="dn1", acked=1024,
         error="IOException")
    r.ev(1.26, "c1", "client.stream.error", path="/f", error="AllDatanodesBad")
    r.ev(1.4, "c1", "client.close", path="/f", len=1024, ok=False, error="AllDatanodesBad")
    return r


@case("P1-null-gs", ("P1", "fail"))
def _(rid):
    return pipeline_recovery(rid).edit("client.pipeline.recovered", {}, gs=None)


@case("P1-null-bad-node", ("P1", "fail"))
def _(rid):
    return pipeline_recovery(rid).edit("client.pipeline.error", {}, bad_node=None)


# -- P2 policy --------------------------------------------------------------------------------

@case("P2-not-replaced", ("P2", "fail"))
def _(rid):
    """DEFAULT with r=3, n=2, hflushed needs a new node (mutant replace-default-ignores-hflush)."""
    return pipeline_recovery(rid).edit("client.pipeline.replace", {}, decision="not_needed",
                                       new_node=None)


@case("P2-new-node-missing", ("P2", "fail"))
def _(rid):
    return pipeline_recovery(rid).edit("client.pipeline.recovered", {}, pipeline=["dn1", "dn3"])


@case("P2-never-added", ("P2", "fail"))
def _(rid):
    return pipeline_recovery(rid).edit("client.pipeline.replace", {}, policy="NEVER")


@case("P2-default-not-needed", ("P2", "pass"))
def _(rid):
    """DEFAULT, r=3, n=2, not hflushed: floor(3/2)=1 < 2, so no replacement is right."""
    r = pipeline_recovery(rid).edit("client.pipeline.replace", {}, hflushed=False,
                                    decision="not_needed", new_node=None)
    return r.edit("client.pipeline.recovered", {}, pipeline=["dn1", "dn3"])


@case("P2-closing-not-added", ("P2", "fail"))
def _(rid):
    """DEFAULT, r=3, n=2, hflushed, the pipeline closing: 3.4 adds a node there too; a
    release that does not has HDFS-16146."""
    r = pipeline_recovery(rid).edit("client.pipeline.replace", {}, decision="not_needed",
                                    new_node=None, stage="PIPELINE_CLOSE_RECOVERY",
                                    reason="pipeline closing")
    return r.edit("client.pipeline.recovered", {}, pipeline=["dn1", "dn3"])


@case("P2-streaming-not-added", ("P2", "fail"))
def _(rid):
    """The same decision while streaming is a violation too."""
    r = pipeline_recovery(rid).edit("client.pipeline.replace", {}, decision="not_needed",
                                    new_node=None, stage="PIPELINE_SETUP_STREAMING_RECOVERY")
    return r.edit("client.pipeline.recovered", {}, pipeline=["dn1", "dn3"])


def _create_setup_recovery(rid: str, last_acked_seqno=-1) -> Run:
    """HDFS-17299's recipe on 3.4.2 with the agent: the new block's pipeline setup fails
    twice (dn2, then dn3 refuse) and 3.4.1's setupPipelineForCreate recovers it on dn1
    alone. With one node left DEFAULT asks for a replacement, but nothing was written
    yet (stage PIPELINE_SETUP_CREATE, no packet acked: lastAckedSeqno -1), so
    DataStreamer.addDatanode2ExistingPipeline returns without a node: not_needed."""
    r = Run(rid)
    start(r)
    open_create(r, 1.0)
    r.drop("client.pipeline.setup")
    gs = 1001
    for t, pipe, bad in ((1.1, PIPE, 1), (1.2, ["dn1", "dn3"], 1)):
        r.ev(t, "c1", "client.pipeline.error", path="/f", block=1001, gs=gs,
             stage="PIPELINE_SETUP_CREATE", pipeline=pipe, error_index=bad, bad_node=pipe[bad],
             acked=None)
        left = [d for d in pipe if d != pipe[bad]]
        r.ev(t + 0.01, "c1", "client.pipeline.replace", path="/f", block=1001, gs=gs,
             policy="DEFAULT", replication=3, remaining=len(left), hflushed=False,
             append=False, best_effort=False, policy_says=len(left) <= 1,
             stage="PIPELINE_SETUP_CREATE", last_acked_seqno=last_acked_seqno,
             decision="not_needed", new_node=None, pipeline=left, source="hadoop-agent")
        r.ev(t + 0.02, "nn", "nn.block.gs_bump", block=1001, old_gs=gs, gs=gs + 1,
             reason="pipeline")
        gs += 1
    r.ev(1.25, "dn1", "dn.replica.state", block=1001, gs=1003, len=0, state="RBW")
    r.ev(1.26, "nn", "nn.block.update_pipeline", block=1001, old_gs=1002, gs=1003,
         pipeline=["dn1"], holder=C1)
    r.ev(1.27, "c1", "client.pipeline.recovered", path="/f", block=1001, old_gs=1002,
         gs=1003, pipeline=["dn1"])
    write(r, 1.3, 0, 512)
    close(r, 1.4, 512, gs=1003, pipeline=["dn1"])
    end(r, 2.0)
    r.final = final_state(
        [{"path": "/f", "closed": True, "len": 512, "replication": 3,
          "blocks": [{"block": 1001, "gs": 1003, "len": 512, "state": "COMPLETE",
                      "locations": ["dn1"]}]}],
        {"dn1": [replica(1001, 1003, 512)], "dn2": [], "dn3": [], "dn4": []},
        readback={"/f": {"len": 512, "crc": crc("/f", 0, 512)}})
    return r


@case("P2-nothing-written-not-added", ("P2", "pass"))
def _(rid):
    """Hadoop's own return without a node (the shape of HDFS-17299's 3.4.2 run)."""
    return _create_setup_recovery(rid)


@case("P2-new-block-after-acks-not-added", ("P2", "fail"))
def _(rid):
    """The same setup failure once a packet of the stream was acked (a later block):
    3.4 does not return early there, so a pipeline of one kept without a node is a
    missed replacement."""
    return _create_setup_recovery(rid, last_acked_seqno=3)


@case("P2-nothing-written-but-added", ("P2", "fail"))
def _(rid):
    """With nothing written Hadoop adds no node: a client that added one did not do
    what 3.4 does."""
    return _create_setup_recovery(rid).edit(
        "client.pipeline.replace", {"remaining": 1}, decision="added", new_node="dn4")


@case("P2-create-stage-without-seqno", ("P2", "fail"))
def _(rid):
    """A create-stage event without last_acked_seqno cannot be judged: a failure that
    says so, not a pass."""
    return _create_setup_recovery(rid).edit("client.pipeline.replace", {"remaining": 1},
                                            last_acked_seqno=None)


# -- P3 no acked byte lost ----------------------------------------------------------------------

@case("P3-short-replica", ("P3", "fail"))
def _(rid):
    r = pipeline_recovery(rid).edit("dn.transfer", {}, len=0)
    return r.edit("dn.replica.state", {"block": 1001, "gs": 1002, "state": "RBW", "node": "dn4"},
                  len=0)


@case("P3-member-without-replica", ("P3", "fail"))
def _(rid):
    """dn4 is in the new pipeline but never logged the replica at GS 1002."""
    return pipeline_recovery(rid).drop("dn.replica.state", node="dn4", gs=1002)


# -- P4 NameNode agrees -----------------------------------------------------------------------

@case("P4-no-update", ("P4", "fail"))
def _(rid):
    return pipeline_recovery(rid).drop("nn.block.update_pipeline")


@case("P4-other-nodes", ("P4", "fail"))
def _(rid):
    return pipeline_recovery(rid).edit("nn.block.update_pipeline", {},
                                       pipeline=["dn1", "dn2", "dn3"])


@case("P4-bump-reason", ("P4", "fail"))
def _(rid):
    return pipeline_recovery(rid).edit("nn.block.gs_bump", {}, reason="recovery")


# -- P5 stale replicas --------------------------------------------------------------------------

@case("P5-stale-location", ("P5", "fail"))
def _(rid):
    r = pipeline_recovery(rid)
    r.final["files"][0]["blocks"][0]["locations"] = ["dn1", "dn2", "dn3", "dn4"]
    return r


# -- P6 honest failure --------------------------------------------------------------------------

def all_bad(rid: str, close_ok: bool, report: bool = True, op_end_first: bool = False) -> Run:
    """Replication 1: the only DataNode fails mid-block; the client then closes and ends
    the operation (`op_end_first`: the operation's end comes before the close)."""
    r = Run(rid, {"dfs.replication": 1})
    start(r)
    open_create(r, 1.0, pipeline=["dn1"])
    write(r, 1.1, 0, 512)
    r.ev(1.2, "harness", "harness.node.kill", target="dn1")
    r.ev(1.3, "c1", "client.pipeline.error", path="/f", block=1001, gs=1001,
         stage="DATA_STREAMING", pipeline=["dn1"], error_index=0, bad_node="dn1", acked=512,
         error="IOException")
    if report:
        r.ev(1.31, "c1", "client.stream.error", path="/f", error="AllDatanodesBad")
    error = None if close_ok else "AllDatanodesBad"
    op_end = dict(op_id="w1", op="write", path="/f", ok=close_ok, error=error)
    if op_end_first:
        r.ev(1.35, "c1", "client.op.end", **op_end)
    r.ev(1.4, "c1", "client.close", path="/f", len=512, ok=close_ok, error=error)
    if not op_end_first:
        r.ev(1.41, "c1", "client.op.end", **op_end)
    end(r, 3.0)
    return r


@case("P6-honest", ("P6", "pass"), ("P1", "skip"))
def _(rid):
    return all_bad(rid, close_ok=False)


@case("P6-lies", ("P6", "fail"))
def _(rid):
    return all_bad(rid, close_ok=True, report=False)


@case("P6-lies-op-end-first", ("P6", "fail"))
def _(rid):
    """The operation's end reports success before the close does: the evidence names the
    first success (client.op.end) and its time, from the same event."""
    return all_bad(rid, close_ok=True, report=False, op_end_first=True)


@case("P6-silent", ("P6", "fail"))
def _(rid):
    return all_bad(rid, close_ok=False, report=False).drop("client.close").drop("client.op.end")


@case("P6-restart-wait", ("P6", "skip"), ("P1", "pass"))
def _(rid):
    """The only DataNode restarts and is waited for (RESTART OOB ack): the error names no
    bad node, the same pipeline is rebuilt and the write succeeds; nothing failed."""
    r = Run(rid, {"dfs.replication": 1})
    start(r)
    open_create(r, 1.0, pipeline=["dn1"])
    write(r, 1.1, 0, 512)
    r.ev(1.2, "c1", "client.pipeline.restart_wait", path="/f", block=1001, dn="dn1", timeout=30.0)
    r.ev(1.21, "c1", "client.pipeline.error", path="/f", block=1001, gs=1001,
         stage="DATA_STREAMING", pipeline=["dn1"], error_index=-1, bad_node=None, acked=512,
         error="IOException", restarting="dn1")
    r.ev(1.5, "c1", "client.pipeline.recovered", path="/f", block=1001, old_gs=1001, gs=1002,
         pipeline=["dn1"], acked=512)
    r.ev(1.6, "c1", "client.close", path="/f", len=512, ok=True, error=None)
    r.ev(1.61, "c1", "client.op.end", op_id="w1", op="write", path="/f", ok=True, error=None)
    end(r, 3.0)
    return r


# -- P7 setup errors blame the right node ------------------------------------------------------

def setup_failure(rid: str, failed: list, dn_setup: dict, blamed: str, excluded: list,
                  pipeline: list) -> Run:
    """Block 1000's pipeline `failed` cannot be set up: each DataNode of `dn_setup` logs
    its setup (status, firstBadLink); the client blames `blamed`, abandons the block and
    gets block 1001 on `pipeline` with `excluded`; then it writes 1024 bytes."""
    r = Run(rid)
    start(r)
    r.ev(0.99, "nn", "nn.block.allocate", path="/f", block=1000, gs=1000, pipeline=failed,
         holder=C1, excluded=[])
    for i, (dn, (status, fbl)) in enumerate(dn_setup.items()):
        r.ev(0.9905 + 0.0001 * i, dn, "dn.pipeline.setup", block=1000, gs=1000,
             stage="PIPELINE_SETUP_CREATE", pipeline=failed[failed.index(dn):],
             status=status, first_bad_link=fbl)
    r.ev(0.992, "c1", "client.pipeline.error", path="/f", block=1000, gs=1000,
         stage="PIPELINE_SETUP_CREATE", pipeline=failed, error_index=failed.index(blamed)
         if blamed in failed else -1, bad_node=blamed, acked=0, error="IOException")
    r.ev(0.993, "c1", "client.pipeline.abandon", path="/f", block=1000, gs=1000,
         bad_node=blamed)
    r.ev(0.994, "nn", "nn.block.abandon", path="/f", block=1000, gs=1000, holder=C1)
    open_create(r, 1.0, pipeline=pipeline)
    r.edit("nn.block.allocate", {"block": 1001}, excluded=excluded)
    write(r, 1.1, 0, 512)
    r.ev(1.15, "c1", "client.hflush", path="/f", offset=512)
    write(r, 1.2, 512, 512)
    close(r, 1.3, 1024, pipeline=pipeline)
    end(r, 2.0)
    r.final = final_state(
        [{"path": "/f", "closed": True, "len": 1024, "replication": 3,
          "blocks": [{"block": 1001, "gs": 1001, "len": 1024, "state": "COMPLETE",
                      "locations": pipeline}]}],
        {dn: ([replica(1001, 1001, 1024)] if dn in pipeline else [])
         for dn in ["dn1", "dn2", "dn3", "dn4"]},
        readback={"/f": {"len": 1024, "crc": crc("/f", 0, 1024)}})
    return r


BAD_LINK = {"dn1": ("ERROR", "dn3"), "dn2": ("ERROR", "dn3")}


@case("P7-first-bad-link", ("P7", "pass"), ("P1", "skip"), ("I1", "pass"), ("D2", "pass"))
def _(rid):
    """dn2 cannot reach dn3: both answer ERROR with firstBadLink dn3; the client blames
    dn3 (index 2), not the node that answered."""
    return setup_failure(rid, PIPE, BAD_LINK, "dn3", ["dn3"], ["dn1", "dn2", "dn4"])


@case("P7-blames-the-answerer", ("P7", "fail"))
def _(rid):
    return setup_failure(rid, PIPE, BAD_LINK, "dn2", ["dn2"], ["dn1", "dn3", "dn4"])


@case("P7-could-not-connect", ("P7", "pass"))
def _(rid):
    """dn1 never logs the setup: the client could not reach it and blames it."""
    return setup_failure(rid, PIPE, {}, "dn1", ["dn1"], ["dn2", "dn3", "dn4"])


@case("P7-could-not-connect-blames-other", ("P7", "fail"))
def _(rid):
    return setup_failure(rid, PIPE, {}, "dn2", ["dn2"], ["dn1", "dn3", "dn4"])


@case("P7-not-excluded", ("P7", "fail"))
def _(rid):
    return setup_failure(rid, PIPE, BAD_LINK, "dn3", [], ["dn1", "dn2", "dn4"])


@case("P7-placed-again", ("P7", "fail"))
def _(rid):
    return setup_failure(rid, PIPE, BAD_LINK, "dn3", ["dn3"], ["dn3", "dn2", "dn4"])


@case("P7-first-node-succeeded", ("P7", "skip"))
def _(rid):
    """dn1 reports SUCCESS: the setup failed elsewhere (a lost ack): nothing to judge."""
    return setup_failure(rid, PIPE, {"dn1": ("SUCCESS", None)}, "dn1", ["dn1"],
                         ["dn2", "dn3", "dn4"])


@case("P7-setup-cut-by-block-recovery", ("P7", "skip"))
def _(rid):
    """A lease recovery of the block being set up stops dn1's writer (the primary's
    initReplicaRecovery): dn1 logs ERROR with firstBadLink dn3 (its mirror connection was
    shut), but its answer never reached the client, which blames dn1, the node it lost
    (found by the explorer)."""
    r = setup_failure(rid, PIPE, BAD_LINK, "dn1", ["dn1"], ["dn2", "dn3", "dn4"])
    r.ev(0.9901, "nn", "nn.recovery.start", path="/f", block=1000, gs=1000, recovery_id=1002,
         primary="dn2", pipeline=PIPE)
    return r


def create_recovery_then_abandon(rid: str, next_pipeline: list, excluded=None) -> Run:
    """3.4.1's setupPipelineForCreate (HDFS-17299's recipe on 3.4.2): none of block
    1000's nodes dn2, dn3, dn4 accepts the client's connection. The setup is recovered
    on the survivors twice (GS 1000 -> 1001 -> 1002; dn2, then dn3 leave the pipeline),
    then, with dn4 alone failing, the block is abandoned and the next one allocated on
    `next_pipeline` (`excluded` as the NameNode logged it; Hadoop's log gives none)."""
    r = Run(rid)
    start(r)
    chain = [["dn2", "dn3", "dn4"], ["dn3", "dn4"], ["dn4"]]
    r.ev(0.99, "nn", "nn.block.allocate", path="/f", block=1000, gs=1000, pipeline=chain[0],
         holder=C1, excluded=[])
    for i, pipe in enumerate(chain):
        gs = 1000 + i
        r.ev(0.991 + 0.001 * i, "c1", "client.pipeline.error", path="/f", block=1000, gs=gs,
             stage="PIPELINE_SETUP_CREATE", pipeline=pipe, error_index=0, bad_node=pipe[0],
             acked=None, error="ConnectException")
        if i < len(chain) - 1:
            r.ev(0.9915 + 0.001 * i, "nn", "nn.block.gs_bump", block=1000, old_gs=gs,
                 gs=gs + 1, reason="pipeline")
    r.ev(0.995, "c1", "client.pipeline.abandon", path="/f", block=1000, gs=1002,
         bad_node="dn4")
    r.ev(0.996, "nn", "nn.block.abandon", path="/f", block=1000, gs=1002, holder=C1)
    open_create(r, 1.0, pipeline=next_pipeline)
    r.edit("nn.block.allocate", {"block": 1001}, excluded=excluded)
    write(r, 1.1, 0, 512)
    write(r, 1.2, 512, 512)
    close(r, 1.3, 1024, pipeline=next_pipeline)
    end(r, 2.0)
    r.final = final_state(
        [{"path": "/f", "closed": True, "len": 1024, "replication": 3,
          "blocks": [{"block": 1001, "gs": 1001, "len": 1024, "state": "COMPLETE",
                      "locations": next_pipeline}]}],
        {dn: ([replica(1001, 1001, 1024)] if dn in next_pipeline else [])
         for dn in ["dn1", "dn2", "dn3", "dn4"]},
        readback={"/f": {"len": 1024, "crc": crc("/f", 0, 1024)}})
    return r


@case("P7-recovered-setups-not-excluded", ("P7", "pass"))
def _(rid):
    """dn2 and dn3 left the pipeline by recovery, not by abandonBlock + addBlock: the
    next block may be placed on them; dn4, blamed for the setup the block was abandoned
    after, is not placed again."""
    return create_recovery_then_abandon(rid, ["dn1", "dn2", "dn3"], excluded=["dn4"])


@case("P7-abandoned-after-recovery-placed-again", ("P7", "fail"))
def _(rid):
    """The setup the block was abandoned after named dn4, which the next block is placed
    on again (what Hadoop 3.4.2 does when it excludes an earlier node instead:
    setupPipelineForCreate indexes the allocation's nodes with the shrunk pipeline's bad
    index)."""
    return create_recovery_then_abandon(rid, ["dn4", "dn3", "dn1"])


# -- L1 one writer ------------------------------------------------------------------------------

@case("L1-two-writers", ("L1", "fail"))
def _(rid):
    r = happy(rid)
    r.ev(1.25, "nn", "nn.lease.add", holder=C2, path="/f")
    return r


@case("L1-no-leases", ("L1", "skip"), ("D4", "skip"))
def _(rid):
    r = Run(rid)
    start(r)
    end(r, 1.0)
    r.final = final_state([], {"dn1": [], "dn2": []})
    return r


# -- L2 soft limit ------------------------------------------------------------------------------

@case("L2-early-takeover", ("L2", "fail"))
def _(rid):
    r = lease_recovery(rid)
    r.ev(3.0, "nn", "nn.lease.renew", holder=C1)    # renewed at 3.0, taken over at 4.5
    return r


@case("L2-wrong-rejection", ("L2", "fail"))
def _(rid):
    return lease_recovery(rid).edit("nn.lease.recover", {"result": "error"}, error="FileNotFound")


@case("L2-java-style-rejection", ("L2", "pass"))
def _(rid):
    return lease_recovery(rid).edit("nn.lease.recover", {"result": "error"},
                                    error="AlreadyBeingCreatedException")


@case("L2-takeover-renews-the-holder", ("L2", "pass"))
def _(rid):
    """The takeover's internalReleaseLease renews c1's lease and logs it (HDFS renews the
    lease a recovery leaves behind) just before its nn.lease.recover: that is no renewal
    before the takeover."""
    r = lease_recovery(rid)
    r.ev(4.4995, "nn", "nn.lease.renew", holder=C1, path="/f", reason="lease_recovery")
    return r


@case("L2-takeover-soon-after-a-recovery-renewal", ("L2", "fail"))
def _(rid):
    """A first takeover at 3.1 (2.05 s after c1's last renewal) started block recovery and
    renewed c1's lease; the second at 4.5 comes 1.4 s after that renewal, before the soft
    limit (2 s), and still takes the file."""
    r = lease_recovery(rid)
    r.ev(3.0995, "nn", "nn.lease.renew", holder=C1, path="/f", reason="lease_recovery")
    r.ev(3.1, "nn", "nn.lease.recover", path="/f", holder=C1, requester=C2, force=False,
         result="recovering")
    r.ev(4.4995, "nn", "nn.lease.renew", holder=C1, path="/f", reason="lease_recovery")
    return r


# -- L3 hard limit ------------------------------------------------------------------------------

def _writer_killed_at_1_2(rid: str) -> Run:
    """c1 writes 512 bytes of /f and is killed at 1.2 s; hard limit 5 s, monitor every
    500 ms."""
    r = Run(rid, {"lease.soft-limit": "1s", "lease.hard-limit": "5s",
                  "dfs.namenode.lease-recheck-interval-ms": 500})
    start(r)
    open_create(r, 1.0)
    write(r, 1.1, 0, 512)
    r.ev(1.2, "harness", "harness.node.kill", target="c1")
    return r


def crashed_writer(rid: str, recover_at: float | None, expired_at: float | None = None) -> Run:
    """c1 crashes holding /f; hard limit 5 s, monitor every 500 ms."""
    r = _writer_killed_at_1_2(rid)
    if expired_at is not None:
        r.ev(expired_at, "nn", "nn.lease.expired", holder=C1, limit="hard")
    if recover_at is not None:
        r.ev(recover_at, "nn", "nn.lease.expired", holder=C1, limit="hard")
        r.ev(recover_at + 0.001, "nn", "nn.lease.reassign", path="/f", old_holder=C1, holder=NNH)
        r.ev(recover_at + 0.1, "nn", "nn.file.close", path="/f", len=512, reason="lease_recovery")
        r.ev(recover_at + 0.101, "nn", "nn.lease.remove", holder=NNH, path="/f", reason="recovery")
    end(r, 15.0)
    return r


@case("L3-recovered-in-time", ("L3", "pass"))
def _(rid):
    return crashed_writer(rid, recover_at=6.2)


@case("L3-never-recovered", ("L3", "fail"))
def _(rid):
    return crashed_writer(rid, recover_at=None)


@case("L3-expired-early", ("L3", "fail"))
def _(rid):
    return crashed_writer(rid, recover_at=6.2, expired_at=3.0)


def restarted_into_safe_mode(rid: str, leave_at: float, recover_at: float) -> Run:
    """c1 crashes holding /f (hard limit 5 s, monitor every 500 ms); the NameNode restarts
    at 2 s into startup safe mode (no lease released in it) and leaves it at `leave_at`."""
    r = _writer_killed_at_1_2(rid)
    r.ev(2.0, "harness", "harness.node.stop", target="nn")
    r.ev(2.01, "nn", "nn.stop")
    r.ev(2.5, "harness", "harness.node.start", target="nn")
    r.ev(2.5, "nn", "nn.start", files=1, blocks=1, open_files=1)
    r.ev(2.501, "nn", "nn.lease.add", holder=C1, path="/f", reason="restart")
    r.ev(2.502, "nn", "nn.safemode.enter", safe_blocks=0, total_blocks=2, threshold_blocks=1,
         live_datanodes=0, min_datanodes=0)
    r.ev(leave_at, "nn", "nn.safemode.leave", waited=leave_at - 2.5, safe_blocks=2,
         total_blocks=2, threshold_blocks=1, live_datanodes=3, min_datanodes=0)
    r.ev(recover_at, "nn", "nn.lease.expired", holder=C1, limit="hard")
    r.ev(recover_at + 0.001, "nn", "nn.lease.reassign", path="/f", old_holder=C1, holder=NNH)
    r.ev(recover_at + 0.1, "nn", "nn.file.close", path="/f", len=512, reason="lease_recovery")
    r.ev(recover_at + 0.101, "nn", "nn.lease.remove", holder=NNH, path="/f", reason="recovery")
    end(r, 15.0)
    return r


@case("L3-safe-mode-holds-the-monitor", ("L3", "pass"))
def _(rid):
    # 7 s after the restart's renewal, but 0.5 s after safe mode ended
    return restarted_into_safe_mode(rid, leave_at=9.0, recover_at=9.5)


@case("L3-late-after-safe-mode", ("L3", "fail"))
def _(rid):
    # the hard limit (7.5 s) passed in safe mode, left at 8 s: due by 9.5 s (+ slack)
    return restarted_into_safe_mode(rid, leave_at=8.0, recover_at=12.0)


def recovering_holder(rid: str, repeat_result: str, log_renewals: bool = False) -> Run:
    """c1 crashes holding /f; c2 calls recoverLease at 1.5 s and is handed the lease, but
    the block recovery never ends (its DataNodes are paused), so c2 calls again every
    second until the run ends at 13 s (hard limit 5 s). Each repeated call that answers
    `recovering` renews c2's lease (HDFS's reassignLease to the same holder -> addLease);
    one that answers with an error does not. Renewed, the lease never outlives the hard
    limit: L3 has nothing to judge (skip), where it read an unrenewed lease (fail)."""
    r = _writer_killed_at_1_2(rid)
    r.ev(1.5, "nn", "nn.lease.reassign", path="/f", old_holder=C1, holder=C2)
    r.ev(1.501, "nn", "nn.lease.recover", path="/f", holder=C1, requester=C2, force=True,
         result="recovering")
    for i in range(11):
        t = 2.5 + i
        if repeat_result == "recovering":
            if log_renewals:
                r.ev(t - 0.0005, "nn", "nn.lease.renew", holder=C2, path="/f",
                     reason="lease_recovery")
            r.ev(t, "nn", "nn.lease.recover", path="/f", holder=C2, requester=C2, force=True,
                 result="recovering")
        else:
            r.ev(t, "nn", "nn.lease.recover", path="/f", holder=C2, requester=C2, force=True,
                 result="error", error="RecoveryInProgressException")
    end(r, 13.0)
    return r


@case("L3-recovering-holder-renews-by-recover-lease", ("L3", "skip"))
def _(rid):
    return recovering_holder(rid, "recovering")


@case("L3-recovering-holder-refused", ("L3", "fail"))
def _(rid):
    return recovering_holder(rid, "error")


@case("L3-recovery-renewals-logged", ("L3", "skip"))
def _(rid):
    """As L3-recovering-holder-renews-by-recover-lease, with the renewal each repeated
    call makes logged (nn.lease.renew reason lease_recovery) before its nn.lease.recover."""
    return recovering_holder(rid, "recovering", log_renewals=True)


def failed_release(rid: str, retries: bool) -> Run:
    """c1 crashes holding /f with its penultimate block COMMITTED and unreported: from
    6.2 s the monitor's internalReleaseLease fails (AlreadyBeingCreated) and the lease
    stays c1's (3.x checkLeases); retried every round (500 ms) or only once, until the
    reports arrive and the round at 9.2 s closes the file."""
    r = _writer_killed_at_1_2(rid)
    for t in ([6.2 + 0.5 * i for i in range(6)] if retries else [6.2]):
        r.ev(t, "nn", "nn.lease.expired", holder=C1, limit="hard")
        r.ev(t + 0.001, "nn", "nn.lease.recover", path="/f", holder=C1, requester=NNH,
             force=False, result="error", error="AlreadyBeingCreatedException")
    r.ev(9.2, "nn", "nn.lease.expired", holder=C1, limit="hard")
    r.ev(9.201, "nn", "nn.file.close", path="/f", len=512, reason="lease_recovery")
    r.ev(9.202, "nn", "nn.lease.remove", holder=C1, path="/f", reason="lease_recovery")
    r.ev(9.203, "nn", "nn.lease.recover", path="/f", holder=C1, requester=NNH, force=False,
         result="closed")
    end(r, 15.0)
    return r


@case("L3-failed-release-retried", ("L3", "pass"))
def _(rid):
    return failed_release(rid, retries=True)


@case("L3-failed-release-not-retried", ("L3", "fail"))
def _(rid):
    return failed_release(rid, retries=False)


# -- L4 closed in the end -----------------------------------------------------------------------

@case("L4-left-open", ("L4", "fail"))
def _(rid):
    r = lease_recovery(rid)
    r.final["files"][0]["closed"] = False
    return r


@case("L4-lease-left", ("L4", "fail"))
def _(rid):
    r = lease_recovery(rid)
    r.final["leases"] = [{"holder": NNH, "paths": ["/f"]}]
    return r


# -- L5 old holder shut out ---------------------------------------------------------------------

def back_from_partition(rid: str, accepted: bool) -> Run:
    """c1 is cut off (not killed), its lease is recovered, then it tries to complete."""
    r = lease_recovery(rid).drop("harness.node.kill").drop("harness.fault.inject")
    r.ev(7.0, "nn", "nn.file.complete", path="/f", holder=C1, ok=accepted)
    if not accepted:
        r.ev(7.0, "nn", "nn.rpc.reject", op="complete", path="/f", holder=C1, error="LeaseExpired")
    r.ev(7.01, "c1", "client.close", path="/f", len=1024, ok=accepted,
         error=None if accepted else "LeaseExpired")
    return r


@case("L5-rejected", ("L5", "pass"))
def _(rid):
    return back_from_partition(rid, accepted=False)


@case("L5-accepted", ("L5", "fail"))
def _(rid):
    return back_from_partition(rid, accepted=True)


@case("L5-client-claims-close", ("L5", "fail"))
def _(rid):
    r = back_from_partition(rid, accepted=False)
    return r.edit("client.close", {"node": "c1"}, ok=True, error=None)


def late_holder_op(rid: str, event: str, **fields) -> Run:
    """After c1's lease on /f was recovered, the NameNode accepts `event` from c1."""
    r = back_from_partition(rid, accepted=False)
    r.ev(6.5, "nn", event, holder=C1, **fields)
    return r


@case("L5-old-addblock", ("L5", "fail"))
def _(rid):
    return late_holder_op(rid, "nn.block.allocate", path="/f", block=1002, gs=1003,
                          pipeline=PIPE, excluded=[])


@case("L5-old-update-pipeline", ("L5", "fail"))
def _(rid):
    """update_pipeline names the block only: its path comes from the block's allocation."""
    return late_holder_op(rid, "nn.block.update_pipeline", block=1001, old_gs=1002, gs=1003,
                          pipeline=PIPE)


@case("L5-old-abandon", ("L5", "fail"))
def _(rid):
    return late_holder_op(rid, "nn.block.abandon", path="/f", block=1001, gs=1002)


# -- L6 renewals --------------------------------------------------------------------------------

def long_writer(rid: str, renew_every: float) -> Run:
    """soft limit 2 s: c1 keeps /f open for 6 s, renewing every `renew_every` s."""
    r = Run(rid, {"lease.soft-limit": "2s", "lease.hard-limit": "60s"})
    start(r)
    open_create(r, 1.0)
    t = 1.0 + renew_every
    while t < 7.0:
        r.ev(t, "c1", "client.lease.renew", holder=C1)
        r.ev(t + 0.001, "nn", "nn.lease.renew", holder=C1)
        t += renew_every
    write(r, 6.9, 0, 512)
    close(r, 7.0, 512)
    end(r, 8.0)
    return r


@case("L6-renewing", ("L6", "pass"), ("L3", "skip"))
def _(rid):
    return long_writer(rid, 1.0)


@case("L6-silent", ("L6", "fail"))
def _(rid):
    return long_writer(rid, 2.5)


@case("L6-slow-link", ("L6", "pass"))
def _(rid):
    """The renewals are late, but c1's link to the NameNode is slowed by a fault."""
    r = long_writer(rid, 2.5)
    r.ev(0.5, "harness", "harness.fault.inject", fault="slow-nn", kind="latency",
         target=["c1->nn"], params={"latency": 1.0})
    return r


def writer_across_nn_restart(rid: str, renew_after_leave: bool,
                             renewals_before=(2.0, 3.0)) -> Run:
    """soft limit 2 s: c1 keeps /f open from 1 s to 11 s, renewing every second. The
    NameNode stops at 3.5 s, starts at 4 s in startup safe mode and leaves it at 8 s:
    c1's renewals are refused (SafeModeException) every 0.25 s until then. With
    `renew_after_leave` c1 renews again 0.25 s after safe mode ended, else never."""
    r = Run(rid, {"lease.soft-limit": "2s", "lease.hard-limit": "60s"})
    start(r)
    open_create(r, 1.0)
    for t in renewals_before:
        r.ev(t, "c1", "client.lease.renew", holder=C1)
        r.ev(t + 0.001, "nn", "nn.lease.renew", holder=C1)
    r.ev(3.5, "harness", "harness.node.stop", target="nn")
    r.ev(3.51, "nn", "nn.stop")
    r.ev(4.0, "harness", "harness.node.start", target="nn")
    r.ev(4.0, "nn", "nn.start", files=1, blocks=1, open_files=1)
    # in the same millisecond as nn.start, as a Hadoop log may have it
    r.ev(4.0, "nn", "nn.safemode.enter", safe_blocks=0, total_blocks=0, threshold_blocks=0,
         live_datanodes=0, min_datanodes=1)
    r.ev(4.001, "nn", "nn.lease.add", holder=C1, path="/f", reason="restart")
    t = 4.25
    while t < 8.0:
        r.ev(t, "nn", "nn.rpc.reject", op="renewLease", path=None, holder=C1,
             error="SafeModeException", reason=f"Cannot renew lease for {C1}. Name node is "
                                               "in safe mode.")
        t += 0.25
    r.ev(8.0, "nn", "nn.safemode.leave", waited=4.0, safe_blocks=0, total_blocks=0,
         threshold_blocks=0, live_datanodes=4, min_datanodes=1)
    if renew_after_leave:
        for t in (8.25, 9.25, 10.25):
            r.ev(t, "c1", "client.lease.renew", holder=C1)
            r.ev(t + 0.001, "nn", "nn.lease.renew", holder=C1)
    write(r, 10.9, 0, 512)
    close(r, 11.0, 512)
    end(r, 12.0)
    return r


@case("L6-renewals-refused-in-safe-mode", ("L6", "pass"))
def _(rid):
    """The NameNode was down, then refused every renewal in safe mode: no gap of c1's."""
    return writer_across_nn_restart(rid, renew_after_leave=True)


@case("L6-silent-after-safe-mode", ("L6", "fail"))
def _(rid):
    """Safe mode excuses nothing after it ends: c1 goes 3 s without a renewal."""
    return writer_across_nn_restart(rid, renew_after_leave=False)


@case("L6-silent-before-nn-stop", ("L6", "fail"))
def _(rid):
    """The restart excuses nothing before the stop: c1 went 2.5 s without a renewal."""
    return writer_across_nn_restart(rid, renew_after_leave=True, renewals_before=())


def writer_left_open(rid: str, renewals) -> Run:
    """soft limit 2 s: c1 keeps /f open (close: false) from 1 s until the harness stops it
    at 7 s, as it stops every client still running when it heals; c1 renews at `renewals`."""
    r = Run(rid, {"lease.soft-limit": "2s", "lease.hard-limit": "60s"})
    start(r)
    open_create(r, 1.0)
    write(r, 1.1, 0, 512)
    for t in renewals:
        r.ev(t, "c1", "client.lease.renew", holder=C1)
        r.ev(t + 0.001, "nn", "nn.lease.renew", holder=C1)
    r.ev(7.0, "harness", "harness.node.stop", target="c1")
    end(r, 8.0)
    return r


@case("L6-left-open-renewing", ("L6", "pass"))
def _(rid):
    """A live writer that keeps its file open renews until it is stopped: no gap."""
    return writer_left_open(rid, [2.0, 3.0, 4.0, 5.0, 6.0])


@case("L6-left-open-silent", ("L6", "fail"))
def _(rid):
    """c1's renewer stops after 2 s and c1 logs nothing more, though it lives on with the
    file open until 7 s: its silence is a 5 s gap, not the end of its open period."""
    return writer_left_open(rid, [2.0])


# -- B1 recovery id -----------------------------------------------------------------------------

@case("B1-stale-id", ("B1", "fail"))
def _(rid):
    return lease_recovery(rid).edit("nn.recovery.start", {}, recovery_id=1001)


@case("B1-foreign-primary", ("B1", "fail"))
def _(rid):
    return lease_recovery(rid).edit("nn.recovery.start", {}, primary="dn9")


# -- B2 length rule -----------------------------------------------------------------------------

@case("B2-max-length", ("B2", "fail"))
def _(rid):
    """The longest RBW replica picked (mutant sync-length-max)."""
    return lease_recovery(rid).edit("dn.recovery.sync", {}, len=1024)


@case("B2-finalized-wins", ("B2", "pass"))
def _(rid):
    """FINALIZED 768 wins; dn3's RBW of exactly 768 takes part, dn2's 512 does not."""
    return lease_recovery(rid, answers=[("dn1", "FINALIZED", 768), ("dn2", "RBW", 512),
                                        ("dn3", "RBW", 768)], final_len=768) \
        .edit("dn.recovery.sync", {}, rule="finalized", pipeline=["dn1", "dn3"])


@case("B2-wrong-participants", ("B2", "fail"))
def _(rid):
    """Right rule and length, but dn2's shorter RBW replica is made a participant."""
    return lease_recovery(rid, answers=[("dn1", "FINALIZED", 768), ("dn2", "RBW", 512),
                                        ("dn3", "RBW", 768)], final_len=768) \
        .edit("dn.recovery.sync", {}, rule="finalized")


@case("B2-participant-missing", ("B2", "fail"))
def _(rid):
    """min_rbw of three RBW answers, but only two take part."""
    return lease_recovery(rid).edit("dn.recovery.sync", {}, pipeline=["dn1", "dn2"])


@case("B2-finalized-ignored", ("B2", "fail"))
def _(rid):
    return lease_recovery(rid, answers=[("dn1", "FINALIZED", 768), ("dn2", "RBW", 512),
                                        ("dn3", "RBW", 768)], final_len=512)


@case("B2-rwr-min", ("B2", "pass"))
def _(rid):
    return lease_recovery(rid, answers=[("dn1", "RWR", 1024), ("dn2", "RWR", 512)]) \
        .edit("dn.recovery.sync", {}, rule="min_rwr")


@case("B2-truncate", ("B2", "pass"))
def _(rid):
    return lease_recovery(rid).edit("dn.recovery.sync", {}, rule="truncate", len=512, new_len=512)


# -- B3 agreement -------------------------------------------------------------------------------

@case("B3-participant-disagrees", ("B3", "fail"))
def _(rid):
    return lease_recovery(rid).edit("dn.replica.state", {"node": "dn3", "gs": 1002}, len=1024)


@case("B3-namenode-disagrees", ("B3", "fail"))
def _(rid):
    return lease_recovery(rid).edit("nn.block.state", {"gs": 1002}, len=1024)


@case("B3-not-closed", ("B3", "fail"))
def _(rid):
    r = lease_recovery(rid).drop("nn.file.close")
    r.final["files"][0]["closed"] = False
    return r


@case("B3-commit-gs-not-recovery-id", ("B3", "fail"))
def _(rid):
    """Everyone agrees on GS 1003, but the recovery id was 1002."""
    r = lease_recovery(rid).edit("nn.recovery.commit", {}, gs=1003)
    r.edit("dn.replica.state", {"gs": 1002}, gs=1003)
    r.edit("nn.block.state", {"gs": 1002}, gs=1003)
    r.final["files"][0]["blocks"][0]["gs"] = 1003
    for reps in r.final["datanodes"].values():
        for rep in reps:
            rep["gs"] = 1003
    return r


# -- B4 empty block -----------------------------------------------------------------------------

def empty_block(rid: str, removed: bool) -> Run:
    """c1 crashes before any byte reached a DataNode: every answer has length 0."""
    r = lease_recovery(rid, answers=[("dn1", "RBW", 0), ("dn2", "RBW", 0), ("dn3", "RBW", 0)],
                       final_len=0)
    if removed:
        r.edit("dn.recovery.sync", {}, rule="remove", len=0)
        r.drop("nn.recovery.commit").drop("nn.block.state", gs=1002)
        r.ev(5.031, "nn", "nn.block.state", path="/f", block=1001, gs=1002, len=0, state="REMOVED")
        r.final["files"][0]["blocks"] = []
    return r


@case("B4-no-replica-anywhere", ("B4", "pass"))
def _(rid):
    """No DataNode ever got the block: no answer at all, and the block is removed."""
    r = empty_block(rid, removed=True)
    r.drop("dn.recovery.init_replica").drop("dn.recovery.update_replica")
    return r.edit("dn.recovery.sync", {}, answers=[], pipeline=[])


@case("B4-no-replica-committed", ("B4", "fail"))
def _(rid):
    r = empty_block(rid, removed=False)
    return r.edit("dn.recovery.sync", {}, answers=[], pipeline=[], rule="min_rbw", len=0)


@case("B4-superseded-recovery-found-nothing", ("B4", "skip"))
def _(rid):
    """An older recovery's primary found no replica left to sync (the newer recovery had
    taken them): its "remove" is refused by the NameNode, the newer one committed."""
    r = lease_recovery(rid)
    r.ev(5.5, "dn2", "dn.recovery.sync", block=1001, recovery_id=1001, rule="remove", len=0,
         answers=[], pipeline=[], new_len=None, ignored=[])
    return r


@case("B4-removed", ("B4", "pass"))
def _(rid):
    return empty_block(rid, removed=True)


@case("B4-committed", ("B4", "fail"))
def _(rid):
    return empty_block(rid, removed=False)


# -- B5 old generation --------------------------------------------------------------------------

@case("B5-old-location", ("B5", "fail"))
def _(rid):
    r = lease_recovery(rid, answers=[("dn1", "RBW", 1024), ("dn3", "RBW", 512)])
    r.final["files"][0]["blocks"][0]["locations"] = ["dn1", "dn2", "dn3"]
    r.final["datanodes"]["dn2"] = [replica(1001, 1001, 1024, state="FINALIZED")]
    return r


@case("B5-namenode-goes-back", ("B5", "fail"))
def _(rid):
    r = lease_recovery(rid)
    r.ev(5.8, "nn", "nn.block.state", path="/f", block=1001, gs=1001, len=1024, state="COMPLETE")
    return r


# -- H1 COMPLETE needs replicas (hdfs-chaos's addition) ----------------------------------------

@case("H1-complete-without-reports", ("H1", "fail"))
def _(rid):
    """The NameNode makes block 1001 COMPLETE though no DataNode reported it FINALIZED."""
    return happy(rid).drop("nn.replica.reported")


@case("H1-reports-of-another-gs", ("H1", "fail"))
def _(rid):
    """The reports name GS 1000, not the block's 1001: they do not count."""
    return happy(rid).edit("nn.replica.reported", {}, gs=1000)


@case("H1-reports-before-nn-restart", ("H1", "fail"))
def _(rid):
    """The reports went to a NameNode process that has since restarted: the one that
    made the block COMPLETE had heard of no replica."""
    r = happy(rid)
    r.ev(1.3035, "nn", "nn.start")
    return r


@case("H1-two-needed", ("H1", "fail"))
def _(rid):
    """dfs.namenode.replication.min 2, one report: not enough."""
    r = Run(rid, {"dfs.namenode.replication.min": 2})
    start(r)
    open_create(r, 1.0)
    write(r, 1.1, 0, 1024)
    close(r, 1.3, 1024, pipeline=["dn1"])
    end(r, 2.0)
    return r


@case("H1-complete-at-recovery-commit", ("H1", "pass"))
def _(rid):
    """Block recovery commits with close: the NameNode completes the block at once (3.x
    commitOrCompleteLastBlock), before any DataNode reported the recovered replica."""
    return lease_recovery(rid).drop("nn.replica.reported")


@case("H1-complete-at-another-length-than-committed", ("H1", "fail"))
def _(rid):
    """The recovery committed 512 bytes; a COMPLETE of 1024 bytes has no such excuse."""
    r = lease_recovery(rid).drop("nn.replica.reported")
    return r.edit("nn.block.state", {"state": "COMPLETE"}, len=1024)


@case("H1-nothing-complete", ("H1", "skip"))
def _(rid):
    return happy(rid).drop("nn.block.state", state="COMPLETE")


# -- B6 restart makes RWR ------------------------------------------------------------------------

def dn_restart(rid: str, back_as: str | None = "RWR") -> Run:
    """The pipeline-recovery story; dn2 (killed holding an RBW replica of 512 bytes at GS
    1001) starts again at 2.0 and logs the replica as `back_as` (None: not at all)."""
    r = pipeline_recovery(rid)
    r.ev(2.0, "harness", "harness.node.start", target="dn2")
    r.ev(2.0, "dn2", "dn.start", replicas=1)
    if back_as:
        r.ev(2.0001, "dn2", "dn.replica.state", block=1001, gs=1001, len=512, state=back_as,
             reason="restart")
    return r


@case("B6-restart-rwr", ("B6", "pass"), ("I1", "pass"))
def _(rid):
    return dn_restart(rid)


@case("B6-back-as-rbw", ("B6", "fail"))
def _(rid):
    return dn_restart(rid, back_as="RBW")


@case("B6-never-logged", ("B6", "fail"))
def _(rid):
    return dn_restart(rid, back_as=None)


@case("B6-saved-for-restart", ("B6", "skip"))
def _(rid):
    """dn2 was shut down for a restart (dn.stop restart=true after the RESTART OOB ack)
    and its saved RBW replica comes back as RBW (HDFS-5585): not B6's case."""
    r = pipeline_recovery(rid)
    r.ev(1.9, "dn2", "dn.stop", restart=True)
    r.ev(2.0, "harness", "harness.node.start", target="dn2")
    r.ev(2.0, "dn2", "dn.start", replicas=1)
    r.ev(2.0001, "dn2", "dn.replica.state", block=1001, gs=1001, len=512, state="RBW",
         reason="restart_saved")
    return r


@case("B6-saved-after-a-crash", ("B6", "fail"))
def _(rid):
    """The same RBW line after a crash (no shutdown for restart): it should be RWR."""
    r = pipeline_recovery(rid)
    r.ev(2.0, "harness", "harness.node.start", target="dn2")
    r.ev(2.0, "dn2", "dn.start", replicas=1)
    r.ev(2.0001, "dn2", "dn.replica.state", block=1001, gs=1001, len=512, state="RBW",
         reason="restart_saved")
    return r


@case("B6-rejoins-as-rbw", ("B6", "fail"))
def _(rid):
    r = dn_restart(rid)
    r.ev(2.1, "dn2", "dn.replica.state", block=1001, gs=1003, len=512, state="RBW")
    return r


@case("B6-answers-as-rbw", ("B6", "fail"))
def _(rid):
    r = dn_restart(rid)
    r.ev(2.2, "dn2", "dn.recovery.init_replica", block=1001, recovery_id=1003, state="RBW",
         len=512, gs=1001, result="ok")
    return r


@case("B6-answers-as-rwr", ("B6", "pass"))
def _(rid):
    r = dn_restart(rid)
    r.ev(2.2, "dn2", "dn.recovery.init_replica", block=1001, recovery_id=1003, state="RWR",
         len=512, gs=1001, result="ok")
    return r


# -- D1 hflush durable --------------------------------------------------------------------------

@case("D1-lost-hflush", ("D1", "fail"))
def _(rid):
    r = happy(rid)
    r.final["files"][0]["len"] = 256
    r.final["readback"]["/f"] = {"len": 256, "crc": crc("/f", 0, 256)}
    return r


@case("D1-no-hflush", ("D1", "skip"), ("D2", "pass"))
def _(rid):
    return happy(rid, hflush=False)


def after_hflush(rid: str, final_path: str, final_len: int, *ops) -> Run:
    """The happy story (hflush at 512, 1024 bytes closed), then NameNode operations on
    the file ((ts, event, fields)...), ending as `final_path` with `final_len` bytes (or
    no file at all when `final_path` is None)."""
    r = happy(rid)
    for t, event, fields in ops:
        r.ev(t, "nn", event, **fields)
    if final_path is None:
        r.final["files"], r.final["readback"] = [], {}
        return r
    f = r.final["files"][0]
    f["path"], f["len"] = final_path, final_len
    f["blocks"][0]["len"] = final_len
    r.final["readback"] = {final_path: {"len": final_len, "crc": crc("/f", 0, final_len)}}
    return r


TRUNC = (1.5, "nn.file.truncate", {"path": "/f", "len": 256, "ok": True})
RENAME = (1.6, "nn.file.rename", {"path": "/f", "dst": "/g"})


@case("D1-truncated-after-hflush", ("D1", "pass"))
def _(rid):
    """Truncated to 256 after hflushing 512: 256 bytes must survive."""
    return after_hflush(rid, "/f", 256, TRUNC)


@case("D1-truncated-then-lost", ("D1", "fail"))
def _(rid):
    return after_hflush(rid, "/f", 100, TRUNC)


@case("D1-renamed-after-hflush", ("D1", "pass"))
def _(rid):
    return after_hflush(rid, "/g", 1024, RENAME)


@case("D1-renamed-then-lost", ("D1", "fail"))
def _(rid):
    return after_hflush(rid, "/g", 256, RENAME)


@case("D1-truncated-renamed-then-lost", ("D1", "fail"))
def _(rid):
    return after_hflush(rid, "/g", 200, TRUNC, RENAME)


@case("D1-deleted-after-hflush", ("D1", "skip"))
def _(rid):
    return after_hflush(rid, None, 0, (1.6, "nn.file.delete", {"path": "/f"}))


# -- D2 content ---------------------------------------------------------------------------------

@case("D2-corrupt", ("D2", "fail"))
def _(rid):
    r = happy(rid)
    r.final["readback"]["/f"]["crc"] ^= 0x1
    return r


@case("D2-unwritten-tail", ("D2", "fail"))
def _(rid):
    r = happy(rid)
    r.final["readback"]["/f"] = {"len": 1536, "crc": crc("/f", 0, 1536)}
    r.final["files"][0]["len"] = 1536
    return r


@case("D2-append-after-recovery", ("D2", "pass"), ("L1", "pass"))
def _(rid):
    """After recovery cut /f at 512, c2 appends 512 bytes at offset 512 (over c1's lost
    range): the file is c1's first 512 bytes then c2's."""
    r = lease_recovery(rid)
    r.ev(7.0, "nn", "nn.file.append", path="/f", holder=C2)
    r.ev(7.001, "nn", "nn.lease.add", holder=C2, path="/f")
    r.open_stream(7.002, "c2", "/f", C2, "append", offset=512)
    other = 0x5A5A5A5A
    r.write_of(7.1, "c2", 512, 512, crc=other)
    r.ev(7.2, "nn", "nn.file.close", path="/f", len=1024, reason="complete")
    r.ev(7.21, "nn", "nn.lease.remove", holder=C2, path="/f", reason="close")
    r.ev(7.22, "c2", "client.close", path="/f", len=1024, ok=True)
    from harness.reconcile.crc import crc32_combine
    whole = crc32_combine(crc("/f", 0, 512), other, 512)
    r.final["files"][0]["len"] = 1024
    r.final["readback"]["/f"] = {"len": 1024, "crc": whole}
    return r


@case("D2-cut-mid-write", ("D2", "pass"))
def _(rid):
    """Recovery kept 700 bytes: the second write is cut in its middle; its first 188
    bytes are regenerated from the stream's content generator and checked."""
    return lease_recovery(rid, answers=[("dn1", "RBW", 1024), ("dn2", "RBW", 700),
                                        ("dn3", "RBW", 1024)], final_len=700)


def _flip(path: str, length: int, at: int) -> int:
    """The CRC of data(path, 0, length) with the byte at `at` changed."""
    b = bytearray(data(path, 0, length))
    b[at] ^= 0x01
    return zlib.crc32(bytes(b))


@case("D2-cut-mid-write-wrong-byte", ("D2", "fail"))
def _(rid):
    """As D2-cut-mid-write, but byte 650 read back (inside the cut write) is not the
    writer's."""
    r = lease_recovery(rid, answers=[("dn1", "RBW", 1024), ("dn2", "RBW", 700),
                                     ("dn3", "RBW", 1024)], final_len=700)
    r.final["readback"]["/f"]["crc"] = _flip("/f", 700, 650)
    return r


@case("D2-cut-mid-write-no-generator", ("D2", "fail"))
def _(rid):
    """A tail cut mid-write whose stream names no content generator: bytes 512..700
    cannot be checked, which fails D2 (never a silent pass)."""
    r = lease_recovery(rid, answers=[("dn1", "RBW", 1024), ("dn2", "RBW", 700),
                                     ("dn3", "RBW", 1024)], final_len=700)
    return r.edit("client.stream.open", {"node": "c1"}, content=None)


def _two_writers(rid: str, second_crc_ok: bool = True) -> Run:
    """c1 writes /f (1024 bytes) and closes; c2 appends 512 bytes and closes."""
    r = happy(rid)
    r.ev(3.0, "c2", "client.start", holder=C2)
    r.ev(3.001, "nn", "nn.file.append", path="/f", holder=C2)
    r.ev(3.002, "nn", "nn.lease.add", holder=C2, path="/f")
    r.open_stream(3.003, "c2", "/f", C2, "append", offset=1024)
    r.write_of(3.1, "c2", 1024, 512)
    r.ev(3.2, "nn", "nn.file.close", path="/f", len=1536, reason="complete")
    r.ev(3.21, "nn", "nn.lease.remove", holder=C2, path="/f", reason="close")
    r.ev(3.22, "c2", "client.close", path="/f", len=1536, ok=True)
    r.final["files"][0]["len"] = 1536
    r.final["readback"]["/f"] = {"len": 1536, "crc": crc("/f", 0, 1536) if second_crc_ok
                                 else _flip("/f", 1536, 1200)}
    return r


@case("D2-two-writers", ("D2", "pass"))
def _(rid):
    return _two_writers(rid)


@case("D2-two-writers-wrong-append", ("D2", "fail"))
def _(rid):
    """The second writer's appended bytes read back are not what it wrote."""
    return _two_writers(rid, second_crc_ok=False)


def _truncated(rid: str, read_crc_ok: bool = True) -> Run:
    """c1 writes /f (1024 bytes), then the file is truncated to 700 (mid-write)."""
    r = happy(rid)
    r.ev(3.0, "nn", "nn.file.truncate", path="/f", len=700, ok=True)
    r.final["files"][0]["len"] = 700
    r.final["readback"]["/f"] = {"len": 700, "crc": crc("/f", 0, 700) if read_crc_ok
                                 else _flip("/f", 700, 600)}
    return r


@case("D2-truncate", ("D2", "pass"))
def _(rid):
    return _truncated(rid)


@case("D2-truncate-wrong-content", ("D2", "fail"))
def _(rid):
    """After a truncate to 700, byte 600 read back is not the writer's."""
    return _truncated(rid, read_crc_ok=False)


@case("D2-recreated", ("D2", "pass"))
def _(rid):
    """/f written, then created anew (overwrite) and written with 300 bytes: only the
    second stream's bytes count."""
    r = happy(rid)
    r.ev(3.0, "nn", "nn.file.create", path="/f", holder=C1)
    r.open_stream(3.001, "c1", "/f", C1, "create")
    r.write_of(3.1, "c1", 0, 300)
    r.final["files"][0]["len"] = 300
    r.final["readback"]["/f"] = {"len": 300, "crc": crc("/f", 0, 300)}
    return r


@case("D2-readback-error", ("D2", "fail"))
def _(rid):
    """The read-back of /f failed: D2 fails for the file instead of dropping it."""
    r = happy(rid)
    r.final["readback"]["/f"] = {"len": None, "crc": None,
                                 "error": "IOException: no live replica of block 1001"}
    return r


@case("D2-writes-without-stream", ("D2", "fail"))
def _(rid):
    """Writes logged without `stream`/`stream_crc` (an older writer): the bytes cannot
    be checked, which fails D2."""
    r = happy(rid)
    return r.edit("client.write", {}, stream=None, stream_crc=None)


@case("D2-no-readback", ("D2", "skip"), ("D3", "skip"), ("D4", "skip"))
def _(rid):
    r = happy(rid)
    r.final = None
    return r


# -- D3 replicas agree --------------------------------------------------------------------------

@case("D3-divergent", ("D3", "fail"))
def _(rid):
    r = happy(rid)
    r.final["datanodes"]["dn2"][0]["crc"] ^= 0xFF
    return r


# -- D4 replication -----------------------------------------------------------------------------

@case("D4-under-replicated", ("D4", "fail"))
def _(rid):
    r = happy(rid)
    r.final["datanodes"]["dn3"] = []
    return r


@case("D4-dead-node-ok", ("D4", "pass"))
def _(rid):
    """dn3 and dn4 are dead at the end: 2 live DataNodes can hold only 2 replicas."""
    r = happy(rid)
    r.ev(1.9, "harness", "harness.node.kill", target="dn3")
    r.ev(1.91, "harness", "harness.node.kill", target="dn4")
    r.final["datanodes"]["dn3"] = []
    return r


# -- expect blocks, malformed lines (used by test_verdict.py) -----------------------------------

@case("expect-ok")
def _(rid):
    return lease_recovery(rid, expect={
        "checks": "all",
        "files": {"/f": {"closed": True, "min_len": "hflushed", "len": 512,
                         "lease_recovered": True}},
        "recoveries": {"pipeline": 0, "block": 1, "lease": ">=1", "replacements": "<=0"},
        "max_recovery": "15s",
        "workload": {"w2": "ok"}})


@case("expect-bad")
def _(rid):
    return lease_recovery(rid, expect={
        "files": {"/f": {"closed": False, "len": "4MiB", "lease_recovered": False,
                         "min_len": "1KiB"},
                  "/missing": {"closed": True}},
        "recoveries": {"pipeline": ">=1", "block": "<=0"},
        "max_recovery": "1ms",
        "workload": {"w2": "error", "w9": "ok"}})


@case("expect-must-fail")
def _(rid):
    r = lease_recovery(rid, expect={"checks": "all", "must_fail": ["B2"]})
    return r.edit("dn.recovery.sync", {}, len=1024)


@case("expect-must-fail-unmet")
def _(rid):
    return happy(rid, expect={"checks": "all", "must_fail": ["P2"]})


@case("expect-subset")
def _(rid):
    r = happy(rid, expect={"checks": ["D1", "D2"]})
    r.ev(1.25, "nn", "nn.lease.add", holder=C2, path="/f")
    return r


@case("expect-none")
def _(rid):
    r = happy(rid)
    r.final["readback"]["/f"]["crc"] ^= 0x1
    return r


MALFORMED_LINES = 5


@case("malformed", ("L1", "pass"), ("D2", "pass"))
def _(rid):
    r = happy(rid)
    r.garbage("nn", "this is not json")
    r.garbage("nn", "[1, 2, 3]")
    r.garbage("dn1", '{"node": "dn1", "role": "datanode"}')                      # no ts, no event
    r.garbage("c1", '{"ts": 1700000001.5, "node": "c1", "role": "client", "seq": 9, "ev')  # torn
    r.garbage("nn", '{"ts": 1700000001.9, "node": "nn", "role": "namenode", "seq": "nine", '
                    '"event": "nn.dn.register", "dn": "dn9"}')                  # seq mistyped: kept
    r.ev(1.95, "nn", "nn.dn.register", dn="dn8", shelf="/s9", zone={"a": 1})   # unknown fields
    return r


@case("expect-listed-but-skipped")
def _(rid):
    """P3 is listed but nothing in the run exercises it: the verdict fails."""
    return happy(rid, expect={"checks": ["P3", "D2"]})


@case("expect-listed-and-exercised")
def _(rid):
    return pipeline_recovery(rid, expect={"checks": ["I1", "P1", "P2", "P3", "P4", "D1"]})


@case("expect-listed-must-fail-skips")
def _(rid):
    """A check that must fail and is listed, yet skips: must_fail reports it once."""
    return happy(rid, expect={"checks": ["P2", "D2"], "must_fail": ["P2"]})


@case("expect-listed-torn-log")
def _(rid):
    """I1 is not listed, yet a torn log fails the verdict: a list cannot excuse it."""
    r = happy(rid, expect={"checks": ["D1", "D2"]})
    r.renumber = False
    del r.lines["dn1"][1]
    return r
