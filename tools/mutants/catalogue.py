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
    equivalent: str = ""     # why no run can tell it from the unmutated tree (a survivor
    #                          with a reason is reported "equivalent"); empty for the others


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
        rule="a replica with an older GS than a COMMITTED/COMPLETE block is invalidated "
             "(marked corrupt, deleted at once with min replication met)",
        seed="seed 004 2.4; MINIHDFS.md 4; 3.x BlockManager.markBlockAsCorrupt",
        file="minihdfs/namenode.py",
        # markBlockAsCorrupt's case 3 (corruptedDuringWrite) forgotten: the old-GS replica
        # is kept as corrupt instead of deleted at report time
        original="or (min_ok and info.gs > gs)",
        replacement="or False",
        scenarios=("close-stage-partition", "dn-crash-first-in-pipeline"),
        equivalent="the RedundancyMonitor invalidates every older-GS replica on a live node "
                   "each interval: skipping it at report time changes only when it goes"),
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

    # -- issue 28: one mutant per rule of MINIHDFS.md and Hadoop 3.x -------------------
    # lease
    Mutant(
        name="renewer-period-soft-limit",
        rule="the client's LeaseRenewer renews every soft limit / 2 while it has files open",
        seed="seed 000 LeaseRenewer; CHECKS.md L6",
        file="minihdfs/client.py",
        original='self.period = client.conf["lease.soft-limit"] / 2',
        replacement='self.period = client.conf["lease.soft-limit"]',
        # killed by L6 in writer-renews-every-half-soft-limit: at a 4 s soft limit its
        # bound is 3 s, and c1 (no fault on it) keeps a file open for 14 s, renewing
        # every 4-5 s instead of 2 s. At the 1-2 s soft limits of the other scenarios
        # the bound equals the soft limit, so renewals every soft limit pass L6.
        scenarios=("writer-renews-every-half-soft-limit", "hard-limit-two-writers",
                   "writer-renews-after-lease-taken"), checks=("L6",)),
    Mutant(
        name="monitor-uses-soft-limit",
        rule="the LeaseManager monitor recovers only leases past the HARD limit (a writer "
             "past the soft limit keeps its file until another client asks for it)",
        seed="seed 000 LeaseManager.Monitor / checkLeases",
        file="minihdfs/leases.py",
        original="if not lease.expired(self.hard_limit, now):",
        replacement="if not lease.expired(self.soft_limit, now):",
        scenarios=("second-writer-after-soft-limit", "old-writer-complete-during-recovery"),
        checks=("L3",)),
    # NameNode block states
    Mutant(
        name="complete-needs-one-more-replica",
        rule="a COMMITTED block becomes COMPLETE with dfs.namenode.replication.min (not one "
             "more) FINALIZED replicas of its GS and length",
        seed="seed 004 2.3-2.4; BlockManager.commitOrCompleteLastBlock",
        file="minihdfs/namenode.py",
        original='finalized_matching()) >= self.conf["dfs.namenode.replication.min"]:',
        replacement='finalized_matching()) > self.conf["dfs.namenode.replication.min"]:',
        # killed by dn-restart-during-write's expect and quiescence (replication 1: the
        # block never completes, w1 fails, the file stays open); with replication 3
        # (complete-waits-for-block-report) two FINALIZED replicas come soon enough
        scenarios=("dn-restart-during-write",)),
    Mutant(
        name="commit-during-recovery",
        rule="a block UNDER_RECOVERY cannot be committed or completed by the old writer",
        seed="HDFS-10240 BlockManager.commitOrCompleteLastBlock; seeds 000, 002",
        file="minihdfs/namenode.py",
        original="if info.state == UNDER_RECOVERY:\n            # BlockManager.commitOrCompleteLastBlock",
        replacement="if False:\n            # BlockManager.commitOrCompleteLastBlock",
        # the old writer's complete commits GS 1001 while recovery bumps the replicas:
        # the file closes with a GS no replica has (0 of 3 valid replicas)
        scenarios=("old-writer-complete-during-recovery",), checks=("D2", "D4")),
    Mutant(
        name="complete-retry-ignores-gs",
        rule="a retried complete() of a closed file succeeds only if its last block has the "
             "file's last block id AND GS (HDFS-3031; a recovered writer is refused)",
        seed="HDFS-3031 FSNamesystem.completeFileInternal",
        file="minihdfs/namenode.py",
        original='return info.id == int(last["block"]) and info.gs == int(last.get("gs", -1))',
        replacement='return info.id == int(last["block"])',
        # killed by L5 (and the expectation w1 error) in complete-after-lease-recovery-
        # refused: c1 is frozen exactly at the ack of its end-of-block packet, before
        # complete(); c2's recoverLease closes the file with a new GS, and c1's complete
        # with the old GS is taken for a retry (accepted, w1 ok). The other recovered
        # writers of the library fail earlier (updateBlockForPipeline, UNDER_RECOVERY).
        scenarios=("complete-after-lease-recovery-refused", "old-writer-complete-during-recovery",
                   "hard-limit-zombie-writer"), checks=("L5",)),
    Mutant(
        name="no-check-file-progress",
        rule="checkFileProgress: addBlock is refused (NotReplicatedYet) while the penultimate "
             "block is not COMPLETE",
        seed="seed 001 addBlock; seed 004 2.3",
        file="minihdfs/namenode.py",
        original="if len(inode.blocks) >= 2 and self.blocks[inode.blocks[-2]].state != COMPLETE:",
        replacement="if False:",
        # killed by add-block-waits-for-penultimate-block's expectations (w1 error, the
        # file closed by lease recovery): no block report reaches the NameNode until
        # block 3 is allocated, so the check refuses block 3 until c1 gives up; without
        # it block 3 is allocated, the reports arrive and c1 closes its file (w1 ok).
        scenarios=("add-block-waits-for-penultimate-block", "complete-waits-for-block-report")),
    Mutant(
        name="refused-add-block-commits-previous",
        rule="a refused addBlock (NotReplicatedYet) leaves the previous block UNDER_CONSTRUCTION: "
             "3.x validateAddBlock refuses before storeAllocatedBlock commits it",
        seed="seed 001 addBlock; 3.x FSDirWriteFileOp.validateAddBlock",
        file="minihdfs/namenode.py",
        original="            # checkFileProgress: the penultimate block must be COMPLETE\n",
        replacement="            if previous is not None:   # mutant: commit before the check\n"
                    "                self._commit_block(\"addBlock\", inode, previous, holder)\n",
        # killed by add-block-waits-for-penultimate-block's expectations: block 2, committed
        # by the refused addBlock, completes on its reports, and the lease recovery closes
        # the file without the block recovery Hadoop runs (recoveries block: 1)
        scenarios=("add-block-waits-for-penultimate-block",)),
    Mutant(
        name="append-keeps-block-complete",
        rule="append turns a COMPLETE partial last block back into UNDER_CONSTRUCTION",
        seed="seed 004 2.2 (append)",
        file="minihdfs/namenode.py",
        original="self._set_state(info, UNDER_CONSTRUCTION)",
        replacement="pass   # mutant: the appended block stays COMPLETE",
        # c2's append fails at updateBlockForPipeline (the block is COMPLETE), so w3
        # errs, the file stays open, and c1 (resumed on c2's first hflush) never runs on:
        # the run always ends at the timeout
        scenarios=("zombie-writer-during-append",)),
    # block recovery
    Mutant(
        name="update-replica-keeps-gs",
        rule="updateReplicaUnderRecovery finalizes the replica with the recovery id as its GS",
        seed="seed 002 updateReplicaUnderRecovery; MINIHDFS.md 3 step 5",
        file="minihdfs/fsdataset.py",
        original="self._move(replica, FINALIZED, recovery_id)",
        replacement="self._move(replica, FINALIZED, replica.gs)",
        scenarios=("client-crash-after-hflush", "block-recovery-different-lengths"),
        checks=("B3", "B5", "D2")),
    Mutant(
        name="update-replica-no-truncate",
        rule="updateReplicaUnderRecovery truncates the replica to the synchronised length",
        seed="seed 002 updateReplicaUnderRecovery; MINIHDFS.md 3 step 5",
        file="minihdfs/fsdataset.py",
        original="self._truncate(replica, new_len)",
        replacement="pass   # mutant: the replica keeps its longer tail",
        scenarios=("block-recovery-different-lengths",), checks=("B3", "D3", "D4")),
    Mutant(
        name="empty-block-not-removed",
        rule="block recovery with no replica holding data removes the block (commit with "
             "delete) instead of committing it",
        seed="seed 000 Q2; HDFS-8344 BlockRecoveryWorker; CHECKS.md B4",
        file="minihdfs/datanode.py",
        original='if rule == "remove":',
        replacement='if rule == "removed":',
        scenarios=("client-crash-empty-last-block",), checks=("L4", "B4", "D2")),
    Mutant(
        name="primary-may-be-stale",
        rule="the recovery primary is chosen among live NON-STALE locations, and the command "
             "lists only fresh ones when two or more are fresh",
        seed="seed 002; BlockManager / BlockUnderConstructionFeature.initializeBlockRecovery",
        file="minihdfs/namenode.py",
        original="fresh = [dn for dn in alive if not self.datanodes[dn].stale]",
        replacement="fresh = list(alive)",
        # the primary is still a fresh node (the most recent heartbeat), but the stale
        # dn1 takes part and gets the new GS: nothing is re-replicated onto it, so w3
        # (started by that transfer) never runs and the run times out, every time
        scenarios=("stale-datanode-recovery-primary",)),
    # pipeline recovery
    Mutant(
        name="unacked-packets-dropped",
        rule="processDatanodeError moves the unacked packets of the ackQueue back to the "
             "front of the dataQueue",
        seed="seed 003 processDatanodeError",
        file="minihdfs/client.py",
        original="s.data_queue.appendleft(s.ack_queue.pop())",
        replacement="s.ack_queue.pop()",
        scenarios=("dn-crash-middle-in-pipeline", "dn-crash-first-in-pipeline"),
        checks=("P5", "D2")),
    Mutant(
        name="close-recovery-as-streaming",
        rule="an error in the close stage rebuilds the pipeline with PIPELINE_CLOSE_RECOVERY "
             "(replicas finalized at setup), not STREAMING_RECOVERY",
        seed="seed 003 BlockConstructionStage",
        file="minihdfs/client.py",
        original="if self.stage in (STAGE_CLOSE, STAGE_CLOSE_RECOVERY):\n            return STAGE_CLOSE_RECOVERY",
        replacement="if self.stage in (STAGE_CLOSE, STAGE_CLOSE_RECOVERY):\n            return STAGE_STREAMING_RECOVERY",
        # the finalized replicas refuse STREAMING_RECOVERY (recoverRbw wants RBW): no
        # pipeline recovers, w1 fails and the file stays open (expect and quiescence)
        scenarios=("close-stage-partition",)),
    Mutant(
        name="recovery-skips-update-pipeline",
        rule="a recovered pipeline is reported to the NameNode with updatePipeline (new GS, "
             "new nodes)",
        seed="seed 003 setupPipelineForAppendOrRecovery; CHECKS.md P4",
        file="minihdfs/client.py",
        original="if recovery or stage == STAGE_APPEND:",
        replacement="if stage == STAGE_APPEND:",
        scenarios=("dn-crash-first-in-pipeline", "dn-crash-last-in-pipeline"), checks=("P4",)),
    Mutant(
        name="never-policy-replaces",
        rule="replace-datanode-on-failure NEVER never asks for a replacement",
        seed="seed 003 ReplaceDatanodeOnFailure",
        file="minihdfs/client.py",
        original='remaining >= replication or policy == "NEVER":',
        replacement="remaining >= replication:",
        scenarios=("replace-never",), checks=("P2",)),
    Mutant(
        name="always-policy-needs-hflush",
        rule="replace-datanode-on-failure ALWAYS replaces whenever r > n, hflushed or not",
        seed="seed 003 ReplaceDatanodeOnFailure",
        file="minihdfs/client.py",
        original='if policy == "ALWAYS":\n        return True',
        replacement='if policy == "ALWAYS":\n        return hflushed_or_appended',
        scenarios=("replace-always",), checks=("P2",)),
    Mutant(
        name="best-effort-ignored",
        rule="with replace-datanode-on-failure.best-effort a failed replacement lets the "
             "stream go on with the survivors",
        seed="seed 003 ReplaceDatanodeOnFailure best-effort",
        file="minihdfs/client.py",
        original="if self.best_effort:",
        replacement="if False:",
        scenarios=("replace-best-effort",), checks=("P2",)),
    Mutant(
        name="mirror-error-not-acked",
        rule="a DataNode whose mirror (downstream node) failed acks ERROR for it upstream, "
             "so the client learns which node to drop",
        seed="seed 003 PacketResponder / error detection",
        file="minihdfs/datanode.py",
        original="downstream = [wire.ERROR]",
        replacement="downstream = []",
        # the client sees only SUCCESS and never recovers the pipeline (expect: 1
        # recovery, P1-P5 not exercised); the dead node's stale replica or the missing
        # third replica keeps the cluster from settling (D4 on the middle crash)
        scenarios=("dn-crash-last-in-pipeline", "dn-crash-middle-in-pipeline"),
        checks=("D4",)),
    # placement and setup
    Mutant(
        name="placement-ignores-excluded",
        rule="BlockPlacementPolicy never chooses an excluded node (addBlock's excludedNodes, "
             "getAdditionalDatanode's failed nodes)",
        seed="seed 001 chooseTarget excludedNodes",
        file="minihdfs/placement.py",
        original="if n not in excluded and n not in chosen}",
        replacement="if n not in chosen}",
        scenarios=("setup-datanode-unreachable", "setup-first-bad-link"), checks=("P7",)),
    Mutant(
        name="abandoned-node-not-excluded",
        rule="after a failed setup the client abandons the block and asks addBlock again "
             "EXCLUDING the bad node",
        seed="seed 003 nextBlockOutputStream; seed 001 addBlock",
        file="minihdfs/client.py",
        original="excluded.append(bad_node)",
        replacement="pass   # mutant: the bad node may be chosen again",
        scenarios=("setup-datanode-unreachable", "setup-first-bad-link"), checks=("P7",)),
    # replica states and restart
    Mutant(
        name="restart-forgets-saved-rbw",
        rule="an RBW replica saved at a shutdown for restart loads as RBW when the DataNode "
             "is back before its deadline (so the writer can resume on it)",
        seed="seed 003 restartingNodeIndex; MINIHDFS.md 5; BlockReceiver restart meta",
        file="minihdfs/fsdataset.py",
        original="if state == RWR and block in restart_ok:",
        replacement="if False:",
        # the saved replica comes back RWR: the writer's recovery on it is refused, w1
        # fails and the file stays open (expect and quiescence)
        scenarios=("dn-restart-during-write",), checks=("D2",)),
    # heartbeats
    Mutant(
        name="never-stale",
        rule="a DataNode silent for dfs.namenode.stale.datanode.interval is marked stale "
             "(before it is dead)",
        seed="seed 002 stale DataNodes; HeartbeatManager / DatanodeManager.isStale",
        file="minihdfs/namenode.py",
        original="elif not d.stale and not d.dead and silent > stale_after:",
        replacement="elif not d.stale and not d.dead and silent > dead_after:",
        # as primary-may-be-stale: dn1 is never stale, takes part in the recovery and
        # needs no re-replication, so w3 (started by that transfer) never runs: timeout
        scenarios=("stale-datanode-recovery-primary",)),
    Mutant(
        name="dead-node-heartbeat-accepted",
        rule="a DataNode declared dead must re-register (and send a full block report) "
             "before its heartbeats count again",
        seed="DatanodeManager.handleHeartbeat (UnregisteredNodeException); seed 004 4",
        file="minihdfs/namenode.py",
        original="if d.dead:\n                # a node declared dead must re-register",
        replacement="if False:\n                # a node declared dead must re-register",
        # killed by D4 in dead-datanode-returns-re-registers: dn3, frozen past the dead
        # interval while c1 writes on dn1 and dn2, is resumed; its heartbeats are taken
        # but it never re-registers, so the NameNode keeps it dead and never copies the
        # block to it (2 valid replicas, 3 live DataNodes).
        scenarios=("dead-datanode-returns-re-registers", "dead-datanode-drops-deletions",
                   "replace-best-effort"), checks=("D4",)),
    Mutant(
        name="dead-interval-in-ms",
        rule="a DataNode silent for 2 x heartbeat.recheck-interval + 10 x heartbeat.interval "
             "is declared dead (its replicas stop counting, its queued deletions are dropped)",
        seed="DatanodeManager.heartbeatExpireInterval; HeartbeatManager.heartbeatCheck",
        file="minihdfs/namenode.py",
        original="if not d.dead and silent > dead_after:",
        replacement="if not d.dead and silent > dead_after * 1000:   # mutant: seconds read as ms",
        # the deletion queued for the killed dn3 stays queued: no quiescence. Killed in 1
        # of 2 runs: in the other dn3's "receiving" report had not reached the NameNode
        # before the kill, no deletion was queued and the scenario judged nothing
        scenarios=("dead-datanode-drops-deletions",)),
    # re-replication
    Mutant(
        name="re-replication-one-short",
        rule="the redundancy monitor schedules replication - valid - pending new replicas "
             "of an under-replicated COMPLETE block",
        seed="seed 004 (D4); BlockManager.computeReconstructionWork",
        file="minihdfs/namenode.py",
        original="missing = inode.replication - len(valid) - len(pending)",
        replacement="missing = inode.replication - len(valid) - len(pending) - 1",
        scenarios=("replace-never", "replace-best-effort"), checks=("D4",)),
    # checksums
    Mutant(
        name="reader-skips-checksum",
        rule="a reader verifies every chunk's checksum and refuses a corrupt replica",
        seed="seed 003 checksums; DFSInputStream / BlockReader",
        file="minihdfs/client.py",
        original="if bad >= 0:\n                    raise ChecksumMismatch",
        replacement="if False:\n                    raise ChecksumMismatch",
        # the corrupt bytes are read as good and never reported: D3 sees the replicas'
        # CRCs differ, and the re-replication the workload waits for never comes
        scenarios=("corrupt-replica-read",), checks=("D3",)),
    Mutant(
        name="bad-block-not-reported",
        rule="a reader that finds a corrupt replica reports it (reportBadBlocks) so the "
             "NameNode replaces it",
        seed="seed 003 checksums; DFSInputStream.reportCheckSumFailure",
        file="minihdfs/client.py",
        original='self.nn_call("reportBadBlocks", blocks=[{"block": blk["block"], "dn": dn}])',
        replacement="pass   # mutant: the corrupt replica is never reported",
        # the corrupt replica stays a location (D3) and is never replaced, so w3
        # (started by that re-replication) never runs: timeout
        scenarios=("corrupt-replica-read",), checks=("D3",)),
    # Hadoop 3.x rules of lease and block recovery (MINIHDFS.md 2 and 3)
    Mutant(
        name="recovery-attempts-not-pending",
        rule="one block recovery at a time: a new attempt only once the pending one timed "
             "out (30 x heartbeat)",
        seed="MINIHDFS.md 3; 3.x BlockManager.addBlockRecoveryAttempt, PendingRecoveryBlocks",
        file="minihdfs/namenode.py",
        original="if timeout_at is not None and now <= timeout_at:",
        replacement="if False and timeout_at is not None and now <= timeout_at:",
        scenarios=("recover-lease-one-recovery-at-a-time",)),
    Mutant(
        name="committed-no-fall-through",
        rule="internalReleaseLease: a COMMITTED last block without min replicas, its "
             "penultimate fine, goes to block recovery",
        seed="MINIHDFS.md 2 LeaseManager; 3.x FSNamesystem.internalReleaseLease",
        file="minihdfs/namenode.py",
        original="            if not pen_ok:\n                raise AlreadyBeingCreatedException(",
        replacement="            if True:\n                raise AlreadyBeingCreatedException(",
        scenarios=("hard-limit-committed-last-block",)),
    Mutant(
        name="recovered-block-left-committed",
        rule="commitBlockSynchronization with close makes the recovered last block COMPLETE",
        seed="MINIHDFS.md 3 step 6; 3.x BlockManager.commitOrCompleteLastBlock",
        file="minihdfs/namenode.py",
        original='# forcibly"), so the file closes with a COMPLETE last block\n'
                 '                    self._set_state(info, COMPLETE)',
        replacement='# forcibly"), so the file closes with a COMPLETE last block\n'
                    '                    pass   # mutant: left COMMITTED until reports arrive',
        # killed in recovery-one-target-below-min-replication (no quiescence, I1: the
        # block stays COMMITTED): the recovery has one target with replication.min 2.
        # With as many live targets as replication.min (append-right-after-block-
        # recovery) the targets, stored as FINALIZED locations, complete the block anyway.
        scenarios=("recovery-one-target-below-min-replication",
                   "append-right-after-block-recovery")),
    Mutant(
        name="lease-monitor-ignores-safe-mode",
        rule="the lease monitor releases no lease while the NameNode is in startup safe "
             "mode (its block map is still empty)",
        seed="MINIHDFS.md 2; 3.x LeaseManager.Monitor, BlockManagerSafeMode",
        file="minihdfs/namenode.py",
        original="continue   # LeaseManager.Monitor: no lease released in safe mode",
        replacement="pass   # mutant: the monitor runs in safe mode",
        scenarios=("nn-restart-slow-block-reports",)),
    Mutant(
        name="renewer-gives-up-on-refusal",
        rule="the client's LeaseRenewer retries a failed renewal at its next tick (the "
             "NameNode down, or refusing renewLease in startup safe mode)",
        seed="Hadoop LeaseRenewer.run (IOException: retry shortly); 3.x "
             "FSNamesystem.renewLease checkNameNodeSafeMode; CHECKS.md L6",
        file="minihdfs/client.py",
        original=("if time.monotonic() - self.last_renewal > self.hard_limit:\n"
                  "                        self._abort_all()"),
        replacement="return   # mutant: the renewer stops after a failed renewal",
        # killed by L6: c1's renewals stop as the NameNode stops, while c1 lives on with
        # the file open until the harness stops it
        scenarios=("nn-restart-live-writer-renews",)),
    Mutant(
        name="truncate-recovery-pending",
        rule="truncate's block recovery is no pending recovery attempt: a recoverLease "
             "during it starts its own recovery at once",
        seed="3.x FSDirTruncateOp.prepareFileForTruncate (no "
             "BlockManager.addBlockRecoveryAttempt; only internalReleaseLease calls it)",
        file="minihdfs/namenode.py",
        original="# 3.x FSDirTruncateOp.prepareFileForTruncate: no BlockManager.addBlockRecoveryAttempt\n",
        replacement="self._add_block_recovery_attempt(cut)   # mutant: registered as pending\n",
        # one recovery instead of two (expect recoveries block: 2); the unit test
        # test_truncate_recovery_is_no_pending_attempt_a_lease_recovery_starts_its_own too
        scenarios=("truncate-then-recover-lease",)),
    Mutant(
        name="recovery-command-fixed-at-queue-time",
        rule="a recover-block command is built when the primary's heartbeat takes it: the "
             "block's recovery id, locations and truncate length of that moment, the block "
             "queued once per primary",
        seed="3.x DatanodeManager.getBlockRecoveryCommand, "
             "DatanodeDescriptor.addBlockToBeRecovered",
        file="minihdfs/namenode.py",
        original=("if all(b.id != info.id for b in queue):\n"
                  "            queue.append(info)"),
        replacement=("if True:   # mutant: a snapshot, the command fixed at queue time\n"
                     "            queue.append(__import__(\"copy\").copy(info))"),
        # survives that scenario: the truncate's primary runs the stale recovery id, c2's
        # the new one, and the outcome is the same (the stale commit is refused); only
        # the dn.recovery.command events differ, which no check compares with the
        # block's latest nn.recovery.start. The unit tests of
        # test_minihdfs_lease_recovery.py (getBlockRecoveryCommand section) kill it
        scenarios=("truncate-then-recover-lease",)),
    Mutant(
        name="close-stage-no-replacement",
        rule="a pipeline recovery in the close stage applies the replace-datanode policy "
             "too (no early return: the block is not closed on fewer replicas)",
        seed="3.4.0 DataStreamer.addDatanode2ExistingPipeline (HDFS-16146)",
        file="minihdfs/client.py",
        original="        # 3.4.0 DataStreamer.addDatanode2ExistingPipeline adds a node in the close stage\n",
        replacement=("        if stage == STAGE_CLOSE_RECOVERY:   # mutant: 3.3's early return\n"
                     "            self.emit(\"client.pipeline.replace\", decision=\"not_needed\", "
                     "new_node=None, reason=\"pipeline closing\", **base)\n"
                     "            return\n"),
        # the known-bug scenario, run on the mini-HDFS (known-bugs/, not scenarios/):
        # python -m tools.mutants run --targeted --scenarios 'known-bugs/*.yaml' ...
        scenarios=("HDFS-16146",), checks=("P2", "D2", "D4")),
    Mutant(
        name="failed-hflush-keeps-stream",
        rule="a failed hflush closes the stream for good and ends its file's lease in the "
             "client (the renewer stops renewing it)",
        seed="3.x DFSOutputStream.flushOrSync, setClosed (endFileLease)",
        file="minihdfs/client.py",
        original="                self.fail(e)\n                self.abort()\n                raise",
        replacement="                raise   # mutant: the stream stays open, nothing logged",
        scenarios=("nn-restart-fails-first-hflush",), checks=("L6",)),
)

BY_NAME: dict[str, Mutant] = {m.name: m for m in MUTANTS}
