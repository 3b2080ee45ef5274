"""Apache Hadoop HDFS as a system under test (issue 18): the `Hadoop` implementation
of harness/systems.SystemUnderTest, on the local backend.

The pieces, one module each: fetch.py (a release's jars into a per-version cache),
conf.py (the scenario's keys per release, the log4j layout), cluster.py (a NameNode and
DataNodes as separate JVMs, kill/restart/pause/resume on the JVM's pid, readiness by
JMX), mesh.py (every directed link through its own Toxiproxy proxy at 127.1.x.y,
reached through per-JVM hosts files), state.py (final_state.json from the NameNode and
the DataNodes' storage folders), logmap.py/adapter.py (log4j lines -> contract events)
and java/ (the workload client HdfsChaosClient, built by `java/build.sh`).
"""

from __future__ import annotations

import os
import subprocess

from . import fetch
from .conf import config_issues

# `--no-hadoop-agent` (harness/cli.py) sets it to "off": no agent in any run of the
# command, whatever the scenarios say; set in the environment so spawned workers see it
AGENT_ENV = "HDFS_CHAOS_HADOOP_AGENT"

JAVA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "java")
CLIENT_CLASS = "HdfsChaosClient"

from hdfs_contract.errors import ClusterError

from harness.errors import BackendError
from harness.systems import Capabilities, RunContext, SystemError_, SystemUnderTest


def _debug_loggers() -> list[str]:
    from .logmap import DEBUG_LOGGERS
    return list(DEBUG_LOGGERS)


# FSNamesystem JMX counters that change when the namespace, a replica or a node does
# (a missing one reads None, the same in every poll)
QUIET_FINGERPRINT = ("LastWrittenTransactionId", "FilesTotal", "BlocksTotal",
                     "NumFilesUnderConstruction", "NumLiveDataNodes", "NumDeadDataNodes",
                     "StaleDataNodes", "CapacityUsed", "TotalLoad", "CorruptBlocks",
                     "MissingBlocks", "ExcessBlocks", "PendingDataNodeMessageCount",
                     "PostponedMisreplicatedBlocks", "UnderReplicatedBlocks")
QUIET_REUSE_S = 10.0


class Hadoop(SystemUnderTest):
    name = "hadoop"
    # a poll of a NameNode whose JMX counters did not move reuses the state tool's last
    # answer (not_quiet): one JMX request, so a run whose fault can no longer come ends
    # two seconds after the cluster settled, not ten
    settle_poll_seconds = 1.0

    def __init__(self, version: str | None = None):
        super().__init__(version or fetch.DEFAULT_VERSION)
        self.adapters: list = []
        self._quiet_memo: tuple | None = None     # not_quiet: (JMX key, when, answer)

    # -- what it can do ------------------------------------------------------------------

    def capabilities(self, run_fields=None) -> Capabilities:
        # with the agent on, its JVMs can be held at the agent's events (agent.holdable;
        # without it, faults fire on the adapted log line); it runs as local JVMs only; a
        # check whose inputs this release's logs (and the agent, when it ran) do not
        # expose is skipped with logmap's reason
        from . import logmap
        agent = bool((run_fields or {}).get("hadoop_agent"))
        unobservable = {}
        for check in logmap.OBSERVABLE:
            why = logmap.skip_reason(check, self.version, agent=agent)
            if why is not None:
                unobservable[check] = why
        return Capabilities(exact_injection=agent, backends=frozenset({"local"}), needs_java=True,
                            unobservable=unobservable)

    def config_issues(self, config, agent: bool | None = None) -> list[str]:
        """`agent`: whether the run has the agent (it sets any lease limit); None: where
        this release has a rule table and --no-hadoop-agent is not given."""
        if agent is None:
            agent = self._agent_default()
        return config_issues(dict(config), self.version, agent=agent)

    def _agent_default(self) -> bool:
        """On unless --no-hadoop-agent, where this release has a rule table (2.x: none,
        the logs alone)."""
        return os.environ.get(AGENT_ENV) != "off" and self._has_table()

    def _has_table(self) -> bool:
        from .agent import table_for
        try:
            table_for(self.version)
        except ValueError:
            return False
        return True

    def prepare(self) -> None:
        """The release's jars and the workload client, built once: two runs building the
        client at once would write the same class files."""
        try:
            fetch.fetch(self.version)
        except fetch.FetchError as e:
            raise SystemError_(str(e)) from None
        self.client_classes()

    # -- validation ----------------------------------------------------------------------

    def issues(self, scenario) -> list[str]:
        out = self.config_issues(scenario.cluster.config, agent=self.agent_on(scenario))
        if "hadoop" not in tuple(getattr(scenario, "systems", ("hadoop",))):
            out.append(f"scenario {scenario.name} does not run on hadoop: "
                       f"{getattr(scenario, 'systems_reason', '') or 'see its systems:'}")
        if self.agent_asked(scenario):
            # asked for in so many words: a release without rules, or an exact trigger the
            # agent cannot hold, is an error (on by default, they are passed over)
            from .agent import table_for
            try:
                table_for(self.version)
            except ValueError as e:
                out.append(f"cluster.hadoop_agent: {e}")
            else:
                out += self.hold_issues(scenario)
        if scenario.cluster.racks:
            out.append("cluster.racks: racks are not configured on hadoop yet "
                       "(no topology script); drop them or declare `systems: [minihdfs]`")
        return out

    def agent_asked(self, scenario) -> bool:
        """The scenario says `hadoop_agent: true` and no --no-hadoop-agent overrides it."""
        return os.environ.get(AGENT_ENV) != "off" \
            and getattr(scenario.cluster, "hadoop_agent", None) is True

    def agent_on(self, scenario) -> bool:
        """Whether the run's JVMs get the agent: off with --no-hadoop-agent, else the
        scenario's `hadoop_agent`, else (None) on where this release has a rule table."""
        asked = getattr(scenario.cluster, "hadoop_agent", None)
        if asked is None or os.environ.get(AGENT_ENV) == "off":
            return self._agent_default()
        return asked is True

    def can_hold(self, trigger) -> bool:
        """Whether the agent can hold an exact trigger (an event only its rules make)."""
        from .agent import hold_rules
        try:
            hold_rules(self.version, trigger.event, dict(trigger.where), trigger.node)
        except ValueError:
            return False
        return True

    def hold_issues(self, scenario) -> list[str]:
        """An exact trigger the agent cannot hold (an event only the logs make), one line
        each: the hold would never come and the fault never fire."""
        from .agent import hold_rules
        out = []
        for fault in scenario.faults:
            at = fault.at
            if getattr(at, "exact", False) and getattr(at, "event", None):
                try:
                    hold_rules(self.version, at.event, dict(at.where), at.node)
                except ValueError as e:
                    out.append(f"fault {fault.id}: {e}")
        return out

    def hold_hooks(self, cluster_of) -> dict:
        """What harness.exact.HoldServer needs to hold this system's JVMs (the agent's
        lines instead of contract records, the rules each hold listens to)."""
        from .agent import HoldRecords, hold_rules
        return {"records_of": HoldRecords(self.version, cluster_of),
                "rules_of": lambda t: hold_rules(self.version, t.event, dict(t.where), t.node)}

    def run_fields(self, scenario) -> dict:
        # the agent makes checks observable that the logs alone cannot feed
        return {"hadoop_agent": self.agent_on(scenario)}

    # -- the cluster ---------------------------------------------------------------------

    def make_cluster(self, ctx: RunContext):
        from .cluster import HadoopCluster
        sc = ctx.scenario
        from hdfs_contract.hold import ENV
        from .agent import spec_hold_rules
        agent = self.agent_on(sc)
        try:
            fetch.fetch(self.version)
            if agent:
                fetch.fetch_agent()
        except fetch.FetchError as e:
            raise BackendError(str(e)) from e
        # the runner's hold spec (harness.exact, set in the environment before the cluster
        # starts) names the rules the JVMs hold at
        return HadoopCluster(ctx.work_dir, self.version, sc.cluster.datanodes,
                             dict(sc.cluster.config), logs_dir=ctx.logs_dir,
                             debug_loggers=_debug_loggers(), agent=agent,
                             hold_rules=spec_hold_rules(os.environ.get(ENV)) if agent
                             else frozenset())

    def listen(self, cluster) -> dict:
        return cluster.listen()

    def make_mesh(self, api, cluster, clients):
        from .mesh import HadoopLinkMesh
        return HadoopLinkMesh(api, cluster.listen(), clients)

    def set_routes(self, cluster, routes_of) -> None:
        def routes_for(node: str) -> dict:
            try:
                return routes_of(node)
            except ValueError:      # a node the mesh does not know (the harness's client)
                return {}
        cluster.routes_for = routes_for

    def start(self, cluster) -> None:
        cluster.start(wait=False)

    def wait_healthy(self, cluster, timeout: float = 1.0) -> None:
        cluster.wait_healthy(timeout=timeout)

    # -- the workload --------------------------------------------------------------------

    def client_classes(self) -> str:
        """HdfsChaosClient compiled for this release (java/build.sh)."""
        build = os.path.join(JAVA_DIR, "build.sh")
        sources = sorted(os.path.join(JAVA_DIR, n) for n in os.listdir(JAVA_DIR)
                         if n.endswith((".java", ".sh")))
        out = fetch.build_dir(self.version, "classes-client", sources)
        built = os.path.join(out, f"{CLIENT_CLASS}.class")
        # rebuilt when missing or older than its source (an edited client is not stale)
        if not os.path.isfile(built) or \
                os.path.getmtime(built) < max(os.path.getmtime(p) for p in sources):
            subprocess.run(["bash", build, str(fetch.lib_dir(self.version)), out], check=True,
                           capture_output=True)
        return out

    def client_command(self, ctx: RunContext, client_id: str, ops_path: str, events_path: str,
                       gate_dir: str) -> list[str]:
        """The workload client's command line (HADOOP-SHARED.md), as this JVM runs it."""
        cluster = ctx.cluster
        cluster.add_client(client_id)
        classes = self.client_classes()
        return cluster.java_command(client_id, CLIENT_CLASS,
                                    ["--node", client_id, "--ops", ops_path, "--events",
                                     events_path, "--gate-dir", gate_dir,
                                     "--seed", str(ctx.seed), "--fs", cluster.fs_uri],
                                    [classes])

    def start_client(self, ctx: RunContext, client_id: str, ops: list[dict]) -> None:
        import json
        cluster = ctx.cluster
        work = os.path.join(ctx.work_dir, "workload")
        gates = os.path.join(ctx.work_dir, "gates")
        os.makedirs(work, exist_ok=True)
        os.makedirs(gates, exist_ok=True)
        ops_path = os.path.join(work, f"{client_id}.json")
        with open(ops_path, "w") as f:
            json.dump(ops, f, indent=1)
        events = os.path.join(ctx.events_dir, f"{client_id}.jsonl")
        cmd = self.client_command(ctx, client_id, ops_path, events, gates)
        # the client's own events go to <client>.jsonl; its DFSClient's log4j lines
        # (pipeline errors, recovery) are adapted into a log of their own
        self._adapt(ctx, client_id, "client",
                    os.path.join(ctx.events_dir, f"{client_id}-dfsclient.jsonl"))
        self._adapt_agent(ctx, client_id, "client")
        cluster._spawn(client_id, cmd)

    def client_running(self, ctx: RunContext, client_id: str) -> bool:
        return ctx.cluster.running(client_id)

    # -- events --------------------------------------------------------------------------

    def start_event_sources(self, ctx: RunContext) -> None:
        """One LogAdapter (hadoop-logs) per daemon log, into events/<node>.jsonl."""
        for node, spec in ctx.cluster.nodes.items():
            if spec["role"] != "client":
                self._adapt(ctx, node, spec["role"],
                            os.path.join(ctx.events_dir, f"{node}.jsonl"))
                self._adapt_agent(ctx, node, spec["role"])

    def _adapt(self, ctx: RunContext, node: str, role: str, events_out: str) -> None:
        from .adapter import LogAdapter
        from .agent import REPLACES
        cluster = ctx.cluster
        # with the agent on, a fact it reports is not taken from the log as well
        drop = REPLACES.get(role, frozenset()) if cluster.agent_flag else frozenset()
        a = LogAdapter(raw_log=cluster.nodes[node]["log"], node=node, role=role,
                       release=self.version, events_out=events_out, hosts=cluster.address_map(),
                       drop=drop)
        a.start()
        self.adapters.append(a)

    def _adapt_agent(self, ctx: RunContext, node: str, role: str) -> None:
        """The agent's lines of `node`'s JVM (cluster.nodes[node]['agent_out']) into a log
        of their own, events/<node>-agent.jsonl, with its own seq (check I1)."""
        from .adapter import LogAdapter
        from .agent import AgentMapper
        cluster = ctx.cluster
        if not cluster.agent_flag:
            return
        a = LogAdapter(raw_log=cluster.nodes[node]["agent_out"], node=node, role=role,
                       release=self.version,
                       events_out=os.path.join(ctx.events_dir, f"{node}-agent.jsonl"),
                       mapper=AgentMapper(role, self.version, cluster.address_map()))
        a.start()
        self.adapters.append(a)

    def catch_up_events(self) -> None:
        # each adapter polls its log every 20 ms: without this, a fault resolving
        # c1.pipeline[0] on the NameNode's close could miss the client's recovery
        # logged 4 ms before it (HDFS-16146 on 3.3.6 killed the wrong node once in 5)
        for adapter in list(self.adapters):
            adapter.catch_up()

    def stop_event_sources(self, ctx: RunContext) -> None:
        if ctx.cluster is not None:
            # the run is over: the teardown's stops need no dfsadmin JVM per DataNode
            ctx.cluster.upgrade_stops = False
        while self.adapters:
            self.adapters.pop().stop()
        drop_empty_client_logs(ctx.events_dir)

    # -- the end of a run ----------------------------------------------------------------

    def not_quiet(self, ctx: RunContext) -> str | None:
        """Why the cluster is not quiescent (None: it is). The files and blocks come from
        the state tool, a JVM; its answer is reused while the NameNode's JMX counters
        (`QUIET_FINGERPRINT`: the last transaction, the files, blocks, replicas' space,
        live nodes, transfers) stay the same, for QUIET_REUSE_S at most: the runner's
        second, confirming poll and the polls of a run waiting for a lease to expire
        would otherwise each start a JVM for the same answer."""
        cluster = ctx.cluster
        bean = cluster.jmx("nn", "Hadoop:service=NameNode,name=FSNamesystem")
        # not UnderReplicatedBlocks: a block below its replication with no live node to
        # take a copy (a DataNode of three killed) stays there; the view's check of each
        # block against min(replication, live nodes) judges it, as on the mini-HDFS
        busy = {k: bean.get(k) for k in ("PendingReplicationBlocks", "PendingDeletionBlocks",
                                         "ScheduledReplicationBlocks")
                if bean.get(k)}
        if busy:
            self._quiet_memo = None
            return "the NameNode still has work queued: " + ", ".join(
                f"{v} {k}" for k, v in busy.items())
        import time
        key = (cluster.dir, *(bean.get(k) for k in QUIET_FINGERPRINT))
        memo = self._quiet_memo
        if memo is not None and memo[0] == key and time.monotonic() - memo[1] < QUIET_REUSE_S:
            return memo[2]
        from .state import namenode_view
        # every file closed: read them back now, as the final state would right after
        read = bean.get("NumFilesUnderConstruction") == 0
        view = namenode_view(cluster, read_back=read)
        why = self._not_quiet_view(view)
        self._quiet_memo = (key, time.monotonic(), why, view if read else None)
        return why

    def _reusable_view(self, cluster) -> dict | None:
        """The read-back view of the last quiet poll, while the NameNode's counters did not
        move since (QUIET_REUSE_S at most), else None."""
        import time
        memo = self._quiet_memo
        if memo is None or memo[2] is not None or memo[3] is None \
                or time.monotonic() - memo[1] >= QUIET_REUSE_S:
            return None
        try:
            bean = cluster.jmx("nn", "Hadoop:service=NameNode,name=FSNamesystem")
        except (OSError, ValueError, KeyError, ClusterError):
            return None
        key = (cluster.dir, *(bean.get(k) for k in QUIET_FINGERPRINT))
        return memo[3] if key == memo[0] else None

    def _not_quiet_view(self, view: dict) -> str | None:
        live = {d["dn"] for d in view.get("datanode_report", []) if d["state"] == "live"}
        for f in view["files"]:
            if not f["closed"]:
                return f"{f['path']} is still open (lease {f['holder']})"
            for b in f["blocks"]:
                if b["state"] != "COMPLETE":
                    return f"block {b['block']} of {f['path']} is {b['state']}"
                valid = [dn for dn in b["locations"] if dn in live]
                if len(valid) < min(f["replication"], len(live)):
                    return (f"block {b['block']} of {f['path']} has {len(valid)} of "
                            f"{f['replication']} replicas")
        return None

    def final_state(self, ctx: RunContext) -> dict:
        """final_state.json; the NameNode's view and read-back of the quiet poll just
        before when nothing moved since (one state-tool JVM fewer a run)."""
        from .state import final_state
        return final_state(ctx.cluster, view=self._reusable_view(ctx.cluster))

    def block_of(self, ctx: RunContext, path: str, index: int) -> int:
        from faults.base import FaultError

        from .state import namenode_view
        view = namenode_view(ctx.cluster, read_back=False, path=path)
        blocks = [b for f in view["files"] for b in f["blocks"]]
        try:
            return blocks[index]["block"]
        except IndexError:
            raise FaultError(f"{path} has {len(blocks)} blocks; there is no block {index}") from None


SYSTEM = Hadoop


def drop_empty_client_logs(events_dir: str) -> None:
    """Remove each client's adapted DFSClient log and each agent log that holds no event: a
    client that only called recoverLease logs no pipeline line, a DataNode may hit no agent
    rule, and the verifier's I1 would take the empty file for a process that left no log
    (<node>.jsonl is each process's log)."""
    try:
        names = os.listdir(events_dir)
    except OSError:
        return
    for name in names:
        path = os.path.join(events_dir, name)
        if name.endswith(("-dfsclient.jsonl", "-agent.jsonl")) and os.path.getsize(path) == 0:
            os.remove(path)
