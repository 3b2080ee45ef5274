"""The mutants of the mini-HDFS: each one a small patch that breaks one named rule of
the seeds (../shared/seeds, 000-004) or of MINIHDFS.md, so that a scenario library that
really tests that rule fails when it runs against the mutated tree.

A mutant is (file, exact original snippet, replacement): applying it fails loudly
unless the snippet occurs exactly once, so code that moved under a mutant shows up in
tests/unit/test_mutants.py instead of producing a mutant that silently changes nothing.
Snippets are kept short and distinctive (one line where possible) to survive edits
around them. `scenarios` lists the scenarios of the library expected to kill the
mutant (`--targeted` runs only those); the full library is the real test.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Mutant:
    name: str                 # kebab-case, what the mutant does wrong
    rule: str                 # the rule it breaks, in HDFS terms
    seed: str                 # where the rule comes from (seed section, MINIHDFS.md, Hadoop)
    file: str                 # path relative to the repository root
    original: str             # exact snippet, must occur exactly once in `file`
    replacement: str
    scenarios: tuple[str, ...] = field(default=())   # expected killers (scenario names)
    checks: tuple[str, ...] = field(default=())      # checks its killers failed when measured
    #                                                 (empty: the expect block or the harness's
    #                                                 quiescence wait caught it, not a check)


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        name="sync-length-max",
        rule="syncBlock length rule: RBW replicas are synchronised to the MINIMUM length (B2)",
        seed="seed 000/002 block recovery; MINIHDFS.md 3 step 4",
        file="minihdfs/datanode.py",
        original='length = min(a["len"] for a in same)',
        replacement='length = max(a["len"] for a in same)',
        scenarios=("block-recovery-different-lengths",), checks=("B2",)),
    Mutant(
        name="pipeline-recovery-keeps-gs",
        rule="pipeline recovery bumps the generation stamp (updateBlockForPipeline returns a new GS)",
        seed="seed 003 pipeline recovery; MINIHDFS.md 2",
        file="minihdfs/namenode.py",
        original='return {"block": info.id, "gs": self.next_gs(), "len": info.num_bytes}',
        replacement='return {"block": info.id, "gs": info.gs, "len": info.num_bytes}',
        scenarios=("dn-crash-first-in-pipeline", "dn-crash-middle-in-pipeline")),
    Mutant(
        name="checklease-ignores-holder",
        rule="checkLease compares the caller with the file's lease holder",
        seed="seed 000 checkLease, Q1",
        file="minihdfs/namenode.py",
        original="if inode.client_name != holder:",
        replacement="if False and inode.client_name != holder:",
        scenarios=("zombie-writer-during-append",), checks=("D1",)),
    Mutant(
        name="replace-default-ignores-hflush",
        rule="replace-datanode-on-failure DEFAULT replaces when r >= 3 and (r/2 >= n or hflushed/appended)",
        seed="seed 003 ReplaceDatanodeOnFailure",
        file="minihdfs/client.py",
        original="(replication // 2 >= remaining or hflushed_or_appended)",
        replacement="(replication // 2 >= remaining)",
        scenarios=("replace-default-after-hflush",), checks=("P2",)),
    Mutant(
        name="resume-without-transfer",
        rule="a replacement DataNode receives the acked bytes (TRANSFER_RBW) before the pipeline resumes",
        seed="seed 003 addDatanode2ExistingPipeline",
        file="minihdfs/client.py",
        original="self._transfer(src, [new_node])",
        replacement="pass   # mutant: the new node never receives the replica",
        scenarios=("replace-default-after-hflush", "replace-always")),
    Mutant(
        name="restart-keeps-rbw",
        rule="a DataNode restart turns its RBW replicas into RWR",
        seed="seed 004 1.3 (RWR); MINIHDFS.md 5",
        file="minihdfs/fsdataset.py",
        original='(("finalized", FINALIZED), ("rbw", RWR))',
        replacement='(("finalized", FINALIZED), ("rbw", RBW))',
        # a crash and a restart (dn-restart-during-write is a shutdown *for* restart now,
        # whose saved replicas rightly come back RBW)
        scenarios=("dn-crash-middle-in-pipeline",), checks=("B6",)),
    Mutant(
        name="complete-without-min-replicas",
        rule="a COMMITTED block becomes COMPLETE only with dfs.namenode.replication.min matching FINALIZED replicas",
        seed="seed 004 2.3-2.4",
        file="minihdfs/namenode.py",
        original='len(info.finalized_matching()) >= self.conf["dfs.namenode.replication.min"]',
        replacement='len(info.finalized_matching()) >= 0',
        scenarios=("complete-waits-for-block-report",), checks=("H1",)),
    Mutant(
        name="recovery-id-reuses-gs",
        rule="block recovery's recovery id is a fresh generation stamp",
        seed="seed 000 internalReleaseLease; MINIHDFS.md 3 step 1",
        file="minihdfs/namenode.py",
        original="info.recovery_id = self.next_gs()",
        replacement="info.recovery_id = info.gs",
        scenarios=("client-crash-after-hflush", "client-crash-before-hflush"), checks=("L4", "B1")),
    Mutant(
        name="hard-limit-newest-first",
        rule="the hard-limit monitor walks leases oldest renewal first and stops at the first unexpired one",
        seed="seed 000 LeaseManager.Monitor (sortedLeases)",
        file="minihdfs/leases.py",
        original="for lease in self.sorted_leases():",
        replacement="for lease in reversed(list(self.sorted_leases())):",
        scenarios=("hard-limit-two-writers",), checks=("L3",)),
    Mutant(
        name="hflush-skips-ack-wait",
        rule="hflush returns only after every pipeline node acked the bytes written so far",
        seed="seed 003 hflush; CHECKS.md D1",
        file="minihdfs/client.py",
        original="while self.acked_file_offset < target and self.error is None:",
        replacement="while False:",
        scenarios=("block-recovery-different-lengths", "client-crash-after-hflush"),
        checks=("D1",)),
    Mutant(
        name="first-bad-link-marks-first",
        rule="a failed setup names the bad node by firstBadLink's index in the pipeline",
        seed="seed 003 createBlockOutputStream",
        file="minihdfs/client.py",
        original="return nodes.index(bad) if bad in nodes else 0",
        replacement="return 0",
        scenarios=("setup-first-bad-link",), checks=("P7",)),
    Mutant(
        name="init-recovery-keeps-writer",
        rule="initReplicaRecovery stops the replica's writer before recovery",
        seed="seed 000 Q1; MINIHDFS.md 3 step 3",
        file="minihdfs/fsdataset.py",
        original="self._stop_writer(replica, stop_timeout)",
        replacement="pass   # mutant: the old writer keeps writing",
        scenarios=("recover-lease-mid-block",), checks=("D1", "D4")),
    Mutant(
        name="restart-forgets-leases",
        rule="a NameNode restart restores the leases of files under construction",
        seed="seed 004 5",
        file="minihdfs/namenode.py",
        original="self.leases.add(inode.client_name, inode.path)",
        replacement="pass   # mutant: open files lose their lease",
        scenarios=("nn-restart-open-file",), checks=("L3", "D1")),
    Mutant(
        name="renewal-not-recorded",
        rule="renewLease records the renewal (the lease's last update moves)",
        seed="seed 000 renewLease",
        file="minihdfs/namenode.py",
        original='self.leases.renew(lease)\n                self.emit("nn.lease.renew", holder=holder)',
        replacement='self.emit("nn.lease.renew", holder=holder)',
        # a writer that renews within the run: c2 renews every second (soft limit 2 s) and
        # its unrecorded renewals let its lease expire under it. Not
        # second-writer-before-soft-limit: it runs with Hadoop's 60 s soft limit, under
        # which no client renews before the run ends, so the mutant changes nothing there
        scenarios=("hard-limit-two-writers",), checks=("L3",)),
    Mutant(
        name="stale-replica-kept",
        rule="a replica with an older GS than a COMMITTED/COMPLETE block is invalidated",
        seed="seed 004 2.4; MINIHDFS.md 4",
        file="minihdfs/namenode.py",
        original="if gs < info.gs or (state ==",
        replacement="if False and (state ==",
        scenarios=("dn-crash-first-in-pipeline", "dn-restart-during-write")),
    Mutant(
        name="dn-ignores-invalidate",
        rule="a DataNode deletes the replicas the NameNode invalidates (stale GS, excess, corrupt)",
        seed="seed 004 2.4; MINIHDFS.md 4",
        file="minihdfs/datanode.py",
        original='if replica is not None and self.data.invalidate(item["block"], item["gs"]):',
        replacement="if False:",
        scenarios=("dn-crash-first-in-pipeline", "dn-restart-during-write")),
    Mutant(
        name="pipeline-keeps-bad-node",
        rule="pipeline recovery removes the bad node from the pipeline",
        seed="seed 003 setupPipelineForAppendOrRecovery",
        file="minihdfs/client.py",
        original="bad = self.nodes.pop(self.bad_index)",
        replacement="bad = self.nodes[self.bad_index]",
        scenarios=("dn-crash-middle-in-pipeline",)),
    Mutant(
        name="soft-limit-ignored",
        rule="another client takes a file over only after the holder's soft limit expired",
        seed="seed 002 recoverLeaseInternal",
        file="minihdfs/namenode.py",
        original="if self.leases.expired_soft(original):",
        replacement="if True:",
        scenarios=("second-writer-before-soft-limit",), checks=("L2",)),
    Mutant(
        name="bad-ack-marks-first-node",
        rule="an ack's first non-SUCCESS status (scanned from the last node) names the bad node",
        seed="seed 003 ResponseProcessor",
        file="minihdfs/client.py",
        original="index=i)",
        replacement="index=0)",
        scenarios=("dn-crash-middle-in-pipeline", "dn-crash-last-in-pipeline")),
)

BY_NAME: dict[str, Mutant] = {m.name: m for m in MUTANTS}
