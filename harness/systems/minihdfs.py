"""The mini-HDFS (minihdfs/) as a system under test: what the runner and the local
backend imported from minihdfs directly before the seam, behind SystemUnderTest, with
the same behaviour. minihdfs itself imports nothing of the harness.

Every call that reaches the cluster from the harness side (quiescence, final state, a
block's id) goes through a harness client over the backend's direct routes, so the
docker backend (which has no local cluster object) uses the same code.
"""

from __future__ import annotations

import os

from faults.base import FaultError
from hdfs_contract.events import EventLog
from minihdfs import cluster as local_cluster
from minihdfs import state as cluster_state
from minihdfs.client import DFSClient
from minihdfs.cluster import LocalCluster
from minihdfs.routing import Routes
from minihdfs.rpc import RpcClient

from . import SystemUnderTest


class MiniHdfs(SystemUnderTest):
    name = "minihdfs"

    def make_cluster(self, backend) -> LocalCluster:
        sc = backend.scenario
        return LocalCluster(backend.work_dir, sc.cluster.datanodes, dict(sc.cluster.config),
                            dict(sc.cluster.racks), seed=backend.seed,
                            events_dir=os.path.join(backend.run_dir, "events"),
                            logs_dir=os.path.join(backend.run_dir, "logs"))

    def listen(self, cluster: LocalCluster) -> dict:
        return cluster.direct_routes()

    def make_mesh(self, api, cluster, clients):
        from faults.network import LinkMesh
        return LinkMesh(api, self.listen(cluster), clients)

    def wait_healthy(self, cluster: LocalCluster, timeout: float = 1.0) -> None:
        cluster.wait_healthy(timeout=timeout)

    def start_client(self, backend, client_id: str, ops: list[dict]) -> None:
        backend.cluster.start_client(client_id, ops, seed=backend.seed,
                                     gate_dir=os.path.join(backend.work_dir, "gates"))

    # -- the harness's own client --------------------------------------------------------

    def harness_client(self, backend) -> DFSClient:
        return DFSClient("harness", Routes(backend.host_routes()),
                         backend.scenario.hadoop_config(), EventLog(None, "harness", "client"),
                         holder="hdfs-chaos-harness")

    def not_quiet(self, backend) -> str | None:
        client = self.harness_client(backend)
        try:
            return not_quiet(client.nn_call("getClusterState", retries=0))
        finally:
            client.close()

    def final_state(self, backend) -> dict:
        client = self.harness_client(backend)
        try:
            storages = {dn: backend.storage_path(dn) for dn in backend.scenario.datanode_ids}
            return cluster_state.final_state(client, storages)
        finally:
            client.close()

    def block_of(self, backend, path: str, index: int) -> int:
        client = self.harness_client(backend)
        try:
            blocks = client.nn_call("getBlockLocations", path=path)["blocks"]
        finally:
            client.close()
        try:
            return blocks[index]["block"]
        except IndexError:
            raise FaultError(f"{path} has {len(blocks)} blocks; there is no block {index}") from None


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
