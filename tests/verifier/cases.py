"""The hand-written logs that prove the oracles: for every check a run where it must
pass, runs that violate it (must fail) and a run where it must skip.

`CASES` maps a run id to a function building its Run; `EXPECTED` lists (run id, check,
status). All runs are loaded and checked together, once per test session.
"""

from __future__ import annotations

from builders import (C1, C2, NEW_PIPE, NNH, PIPE, Run, close, crc, end, final_state, happy,
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

ALL_SKIP_IN_HAPPY = ["P1", "P2", "P3", "P4", "P5", "P6", "L2", "L3", "L4", "L5", "L6",
                     "B1", "B2", "B3", "B4", "B5"]


@case("happy", *[(c, "skip") for c in ALL_SKIP_IN_HAPPY],
      ("L1", "pass"), ("D1", "pass"), ("D2", "pass"), ("D3", "pass"), ("D4", "pass"))
def _happy(rid):
    return happy(rid)


@case("pipeline-recovery", ("P1", "pass"), ("P2", "pass"), ("P3", "pass"), ("P4", "pass"),
      ("P5", "pass"), ("P6", "skip"), ("L1", "pass"), ("B1", "skip"), ("D1", "pass"),
      ("D2", "pass"), ("D3", "pass"), ("D4", "pass"))
def _pipe(rid):
    return pipeline_recovery(rid)


@case("lease-recovery", ("L1", "pass"), ("L2", "pass"), ("L3", "skip"), ("L4", "pass"),
      ("L5", "pass"), ("L6", "skip"), ("B1", "pass"), ("B2", "pass"), ("B3", "pass"),
      ("B4", "skip"), ("B5", "pass"), ("D1", "pass"), ("D2", "pass"), ("D3", "pass"),
      ("D4", "pass"), ("P1", "skip"), ("P5", "skip"))
def _lease(rid):
    return lease_recovery(rid)


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


@case("P2-closing-not-added", ("P2", "pass"))
def _(rid):
    """DEFAULT, r=3, n=2, hflushed, but the pipeline is closing: Hadoop adds no node then."""
    r = pipeline_recovery(rid).edit("client.pipeline.replace", {}, decision="not_needed",
                                    new_node=None, stage="PIPELINE_CLOSE_RECOVERY",
                                    reason="pipeline closing")
    return r.edit("client.pipeline.recovered", {}, pipeline=["dn1", "dn3"])


@case("P2-streaming-not-added", ("P2", "fail"))
def _(rid):
    """The same decision while streaming is a violation: only closing exempts it."""
    r = pipeline_recovery(rid).edit("client.pipeline.replace", {}, decision="not_needed",
                                    new_node=None, stage="PIPELINE_SETUP_STREAMING_RECOVERY")
    return r.edit("client.pipeline.recovered", {}, pipeline=["dn1", "dn3"])


# -- P3 no acked byte lost ----------------------------------------------------------------------

@case("P3-short-replica", ("P3", "fail"))
def _(rid):
    r = pipeline_recovery(rid).edit("dn.transfer", {}, len=0)
    return r.edit("dn.replica.state", {"block": 1001, "gs": 1002, "state": "RBW", "node": "dn4"},
                  len=0)


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

def all_bad(rid: str, close_ok: bool, report: bool = True) -> Run:
    """Replication 1: the only DataNode fails mid-block."""
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
    r.ev(1.4, "c1", "client.close", path="/f", len=512, ok=close_ok,
         error=None if close_ok else "AllDatanodesBad")
    r.ev(1.41, "c1", "client.op.end", op_id="w1", op="write", path="/f", ok=close_ok,
         error=None if close_ok else "AllDatanodesBad")
    end(r, 3.0)
    return r


@case("P6-honest", ("P6", "pass"), ("P1", "skip"))
def _(rid):
    return all_bad(rid, close_ok=False)


@case("P6-lies", ("P6", "fail"))
def _(rid):
    return all_bad(rid, close_ok=True, report=False)


@case("P6-silent", ("P6", "fail"))
def _(rid):
    return all_bad(rid, close_ok=False, report=False).drop("client.close").drop("client.op.end")


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


# -- L3 hard limit ------------------------------------------------------------------------------

def crashed_writer(rid: str, recover_at: float | None, expired_at: float | None = None) -> Run:
    """c1 crashes holding /f; hard limit 5 s, monitor every 500 ms."""
    r = Run(rid, {"lease.soft-limit": "1s", "lease.hard-limit": "5s",
                  "dfs.namenode.lease-recheck-interval-ms": 500})
    start(r)
    open_create(r, 1.0)
    write(r, 1.1, 0, 512)
    r.ev(1.2, "harness", "harness.node.kill", target="c1")
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
    return lease_recovery(rid, answers=[("dn1", "FINALIZED", 768), ("dn2", "RBW", 512),
                                        ("dn3", "RBW", 768)], final_len=768) \
        .edit("dn.recovery.sync", {}, rule="finalized")


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
    r.ev(7.002, "c2", "client.stream.open", path="/f", holder=C2, mode="append")
    other = 0x5A5A5A5A
    r.ev(7.1, "c2", "client.write", path="/f", offset=512, len=512, crc=other)
    r.ev(7.2, "nn", "nn.file.close", path="/f", len=1024, reason="complete")
    r.ev(7.21, "nn", "nn.lease.remove", holder=C2, path="/f", reason="close")
    r.ev(7.22, "c2", "client.close", path="/f", len=1024, ok=True)
    from harness.reconcile.crc import crc32_combine
    whole = crc32_combine(crc("/f", 0, 512), other, 512)
    r.final["files"][0]["len"] = 1024
    r.final["readback"]["/f"] = {"len": 1024, "crc": whole}
    return r


@case("D2-cut-mid-write", ("D2", "skip"))
def _(rid):
    """Recovery kept 700 bytes: the second write is cut in its middle, so its CRC cannot
    be checked (reported unverifiable, not failed)."""
    r = lease_recovery(rid, answers=[("dn1", "RBW", 1024), ("dn2", "RBW", 700),
                                     ("dn3", "RBW", 1024)], final_len=700)
    return r


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
    r = happy(rid, expect={"checks": ["P1", "D2"]})
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
