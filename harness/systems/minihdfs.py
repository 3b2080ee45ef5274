"""The mini-HDFS (minihdfs/) as a system under test: what the runner and the local
backend imported from minihdfs directly before the seam, behind SystemUnderTest, with
the same behaviour. minihdfs itself imports nothing of the harness.

Every call that reaches the cluster from the harness side (quiescence, final state, a
block's id) goes through a harness client over the run's direct routes
(`RunContext.host_routes`), so the docker backend (which has no local cluster object)
uses the same code.
"""

from __future__ import annotations

import os

from faults.base import FaultError
from hdfs_contract.config import KEYS
from hdfs_contract.events import EventLog
from minihdfs import cluster as local_cluster
from minihdfs import state as cluster_state
from minihdfs.client import DFSClient
from minihdfs.cluster import LocalCluster
from minihdfs.routing import Routes
from minihdfs.rpc import RpcClient

from . import Capabilities, RunContext, SystemUnderTest

# keys only Hadoop reads: the mini-HDFS has nothing they set, so a scenario that runs
# on it may not set them
_HADOOP_ONLY = {key: "only Hadoop reads it, the mini-HDFS has nothing it sets; declare "
                     "`systems: [hadoop]` with a reason"
                for key, spec in KEYS.items() if spec.hadoop_only}


class MiniHdfs(SystemUnderTest):
    name = "minihdfs"
    # a run mostly waits (its CPU is a small share of its wall time): three a core
    # (benchmarks/RESULTS.md, the explorer's rate by workers)
    runs_per_core = 3

    def __init__(self, version: str | None = None):
        super().__init__(None)   # one implementation, no releases

    def capabilities(self, run_fields=None) -> Capabilities:
        # its processes wait at their event log for a hold (harness/exact.py); its events
        # feed every check; its containers are the docker backend's image
        return Capabilities(exact_injection=True, backends=frozenset({"local", "docker"}),
                            refused_config=_HADOOP_ONLY)

    def make_cluster(self, ctx: RunContext) -> LocalCluster:
        sc = ctx.scenario
        return LocalCluster(ctx.work_dir, sc.cluster.datanodes, dict(sc.cluster.config),
                            dict(sc.cluster.racks), seed=ctx.seed,
                            events_dir=ctx.events_dir, logs_dir=ctx.logs_dir)

    def listen(self, cluster: LocalCluster) -> dict:
        return cluster.direct_routes()

    def make_mesh(self, api, cluster, clients):
        from faults.network import LinkMesh
        return LinkMesh(api, self.listen(cluster), clients)

    def wait_healthy(self, cluster: LocalCluster, timeout: float = 1.0) -> None:
        cluster.wait_healthy(timeout=timeout)

    def start_client(self, ctx: RunContext, client_id: str, ops: list[dict]) -> None:
        ctx.cluster.start_client(client_id, ops, seed=ctx.seed,
                                 gate_dir=os.path.join(ctx.work_dir, "gates"))

    # -- the harness's own client --------------------------------------------------------

    def harness_client(self, ctx: RunContext) -> DFSClient:
        return DFSClient("harness", Routes(ctx.host_routes()),
                         ctx.scenario.hadoop_config(), EventLog(None, "harness", "client"),
                         holder="hdfs-chaos-harness")

    def not_quiet(self, ctx: RunContext) -> str | None:
        client = self.harness_client(ctx)
        try:
            return not_quiet(client.nn_call("getClusterState", retries=0))
        finally:
            client.close()

    def final_state(self, ctx: RunContext) -> dict:
        client = self.harness_client(ctx)
        try:
            storages = {dn: ctx.storage_path(dn) for dn in ctx.scenario.datanode_ids}
            return cluster_state.final_state(client, storages)
        finally:
            client.close()

    def block_of(self, ctx: RunContext, path: str, index: int) -> int:
        client = self.harness_client(ctx)
        try:
            blocks = client.nn_call("getBlockLocations", path=path)["blocks"]
        finally:
            client.close()
        try:
            return blocks[index]["block"]
        except IndexError:
            raise FaultError(f"{path} has {len(blocks)} blocks; there is no block {index}") from None


SYSTEM = MiniHdfs


def not_quiet(st: dict) -> str | None:
    """Why the cluster is not quiescent yet, or None when it is."""
    live = {d["dn"] for d in st.get("datanodes", []) if d["state"] == "live"}
    busy = {k: v for k, v in st.get("pending", {}).items() if v}
    if busy:
        return "the NameNode still has work queued: " + ", ".join(f"{v} {k}" for k, v in busy.items())
    for f in st["files"]:
        if not f["closed"]:
            return f"{f['path']} is still open (lease {f['holder']})"
        for b in f["blocks"]:
            valid = [dn for dn in b["locations"] if dn in live]
            if b["state"] == "COMPLETE" and len(valid) < min(f["replication"], len(live)):
                return f"block {b['block']} of {f['path']} has {len(valid)} of {f['replication']} replicas"
            if b["state"] != "COMPLETE":
                return f"block {b['block']} of {f['path']} is {b['state']}"
            stale = [dn for dn, r in b.get("replicas", {}).items()
                     if dn in live and dn not in b["locations"]]
            if stale:
                return f"stale replicas of block {b['block']} on {stale} not yet invalidated"
    return None


# -- what the harness needs of the mini-HDFS outside a SystemUnderTest ---------------------

def nn_rpc_client(addr: str, connect_timeout: float, timeout: float) -> RpcClient:
    """An RPC client of the NameNode at `addr` (the docker backend's health check)."""
    return RpcClient(addr, connect_timeout, timeout)


def use_package_root(root: str) -> None:
    """Cluster processes started from this process import the mini-HDFS from `root` (a
    mutant's copy, tools/mutants/apply.py) rather than from this repository."""
    local_cluster.PACKAGE_ROOT = root
