"""The catalogue of event names every process may log (spec/EVENTS.md, plus our additions).

Triggers in scenarios may only name events listed here; the harness checks that before
a run starts. The names of spec/EVENTS.md are a contract and never change; the
additions are marked.
"""

NAMENODE = {
    "nn.start", "nn.stop",
    "nn.file.create", "nn.file.append", "nn.file.complete", "nn.file.close",
    "nn.block.allocate", "nn.block.state", "nn.block.gs_bump", "nn.block.update_pipeline",
    "nn.lease.add", "nn.lease.renew", "nn.lease.remove", "nn.lease.reassign",
    "nn.lease.expired", "nn.lease.recover",
    "nn.recovery.start", "nn.recovery.commit",
    "nn.rpc.reject",
    "nn.dn.register", "nn.dn.stale", "nn.dn.dead",
    "nn.replica.reported",
    "nn.replication.schedule", "nn.replica.invalidate",
    # additions
    "nn.file.delete",          # {path}
    "nn.file.rename",          # {path, dst}
    "nn.file.truncate",        # {path, len, ok}
    "nn.file.fsync",           # {path, holder, block, len}: the last block's length as kept
    "nn.block.abandon",        # {path, block, gs, holder}
    # fields added to contract events: nn.block.allocate also carries `excluded` (the
    # nodes the client asked to leave out, sorted) next to `holder`
    "nn.replica.corrupt",      # {dn, block, gs, reason}
    "nn.dn.alive",             # {dn}: a stale or dead node heard from again
    "nn.internal_error",       # {reason}: a bug caught, the daemon goes on
    "nn.rpc.malformed",        # {op, error, reason}: a request refused before any handler
                               # ran (bad frame, unknown op, arguments not fitting the op)
    "nn.hold.timeout",         # {held_event, held_seq, timeout}: exact injection gave up
    # startup safe mode (BlockManagerSafeMode), each with the counts {safe_blocks,
    # total_blocks, threshold_blocks, live_datanodes, min_datanodes}
    "nn.safemode.enter",       # the NameNode started with thresholds not met
    "nn.safemode.extension",   # {extension}: thresholds met, safe mode ends after this
    "nn.safemode.leave",       # {waited}: safe mode is off, seconds since the start
    # fields added to contract events: nn.lease.add carries `reason: restart` for a
    # lease restored at NameNode start
    # fields added to contract events: nn.lease.renew carries `path` and `reason:
    # lease_recovery` for the renewal made inside internalReleaseLease
    # fields added by the Hadoop log adapter (harness/systems/hadoop/logmap.py): every
    # adapted event carries `source: "hadoop-log"` and `logger` (the log4j logger/caller
    # of its line); nn.lease.renew carries `observed_by: "client"` when it comes from the
    # client's "Lease renewed" line (the NameNode logs no renewal); nn.recovery.commit
    # carries `old_gs`
}

DATANODE = {
    "dn.start", "dn.stop",
    "dn.replica.state",
    "dn.pipeline.setup", "dn.pipeline.error",
    "dn.checksum.error",
    "dn.recovery.init_replica", "dn.recovery.sync", "dn.recovery.update_replica",
    "dn.transfer",
    # additions
    "dn.register",             # {nn}
    "dn.block_report",         # {count, full}
    "dn.recovery.command",     # {block, recovery_id, pipeline}: recover-block received
    "dn.recovery.error",       # {block, recovery_id, error}
    "dn.replica.invalidate",   # {block, gs}
    "dn.replica.invalidate_failed",  # {block, gs, replica_gs, state, reason}: a deletion
    #                            of another GS than the replica's, not carried out
    "dn.replica.short",        # {block, gs, len, offset}: data file shorter than recorded
    "dn.internal_error",       # {reason}: a bug caught, the daemon goes on
    "dn.rpc.malformed",        # {op, error, reason}: as nn.rpc.malformed, DataNode RPC
    "dn.xfer.malformed",       # {op, error, reason}: a data-transfer op header refused
    "dn.pipeline.oob",         # {block, gs, upstream, status}: OOB RESTART ack sent
    # adapted from Hadoop's DataNode log (harness/systems/hadoop/logmap.py)
    "dn.replica.recover_rbw",  # {block, gs, state}: recoverRbw of a pipeline recovery (old GS)
    "dn.replica.truncate",     # {block, gs, old_len, len}: an RBW cut to the acked length
    "dn.pipeline.stage",       # {block, gs, stage, holder}: opWriteBlock's stage (DEBUG)
    "dn.pipeline.receive",     # {block, gs, upstream}: "Receiving <block> src: .. dest: .."
    # fields added to contract events: dn.recovery.sync carries `best_state` (Hadoop's
    # bestState) when adapted from Hadoop's log
    "dn.hold.timeout",         # {held_event, held_seq, timeout}: exact injection gave up
    # fields added to contract events: dn.stop carries `restart`; dn.replica.state has
    # `reason: restart_saved` for an RBW replica saved by a shutdown for restart;
    # dn.recovery.sync carries `ignored` (answers left out: length 0 or an older GS)
}

CLIENT = {
    "client.stream.open", "client.write", "client.pipeline.setup", "client.pipeline.error",
    "client.pipeline.replace", "client.pipeline.recovered", "client.ack", "client.hflush",
    "client.close", "client.lease.renew", "client.recover_lease",
    # additions
    "client.start",            # {holder}
    "client.op.start",         # {op_id, op, path}
    "client.op.end",           # {op_id, op, path, ok, error, len}
    "client.pipeline.abandon", # {path, block, gs, bad_node}
    "client.stream.error",     # {path, error}: the stream failed for good
    "client.read",             # {path, offset, len, crc}
    "client.checksum.error",   # {path, block, dn, offset}
    "client.pipeline.restart_wait",     # {path, block, dn, timeout}: OOB RESTART ack
    "client.pipeline.restart_timeout",  # {path, block, dn, timeout}: not back in time
    # adapted from Hadoop's DFSClient log (harness/systems/hadoop/logmap.py)
    "client.pipeline.ack_error",        # {path, block, gs, status, dn}: "Bad response .. from datanode"
    "client.pipeline.replace_failed",   # {path, block, gs, policy, pipeline, best_effort}
    "client.hold.timeout",     # {held_event, held_seq, timeout}: exact injection gave up
    # fields added to contract events: client.pipeline.replace also carries `stage` (the
    # recovery stage it was decided in; a closing pipeline adds no node) and `reason`;
    # client.stream.open also carries `stream` (the client's number of the output stream,
    # from 0), `offset` (the file offset the stream starts at) and `content` (the name of
    # the generator of the bytes written, "workload": hdfs_contract.content.Content with
    # harness.run.start's seed; null when none); client.write also carries `stream` and
    # `stream_crc` (CRC-32 of the stream's bytes before this write, from its start offset)
    # harness.run.start also carries `system` (minihdfs | hadoop) and `system_version`
    # (the Hadoop release; null for the mini-HDFS): the verifier's skip reasons read them
}

HARNESS = {
    "harness.run.start", "harness.run.end",
    "harness.fault.inject", "harness.fault.heal",
    "harness.node.kill", "harness.node.start", "harness.node.pause", "harness.node.resume",
    "harness.quiescent",
    # additions
    "harness.node.stop",       # {target}: a graceful stop (restart)
    "harness.workload.start",  # {op_id, client}
    "harness.trigger",         # {fault, event_ts, lag}: a trigger fired
    "harness.hold.release",    # {held_node, held_seq, held_event, fired, late}: exact
                               # injection done, the held process let go
    # fields added to contract events: client.pipeline.replace from the Hadoop log adapter
    # carries `inferred: true` (a new node seen in the rebuilt pipeline; inputs null)
    # fields added to contract events: harness.fault.inject carries `resolved`
    # (["c1.pipeline[1]=dn3", ...]) when the scenario named its target by pipeline position
}

EVENTS = NAMENODE | DATANODE | CLIENT | HARNESS
