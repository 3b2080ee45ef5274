"""Everything that breaks things: the Toxiproxy link mesh and its network faults, node
faults, disk faults. Each fault is data first, then inject() and heal().

Nothing here knows about scenarios; the kinds a scenario names (harness.scenario.model,
registered in faults.kinds) build these from them.
"""

from faults.base import Fault, FaultError, harness_log
from faults.disk import CorruptReplica, DeleteReplica, ReplicaFiles, find_replicas
from faults.grudge import (Grudge, as_links, bridge, complete_grudge, directed, isolate,
                           links_between, links_from, merge)
from faults.network import (Bandwidth, CutAfterBytes, LinkMesh, Latency, MeshProxy,
                            Partition, ProxySpec, ResetPeer, Slicer, plan_proxies,
                            routing_maps)
from faults.process import (CrashClient, Kill, LocalProcessControl, NodeControl, Pause,
                            Restart, Resume)
from faults.toxiproxy_server import (ToxiproxyAPI, ToxiproxyError, ToxiproxyNotFound,
                                     ToxiproxyServer, ensure_binary)

__all__ = [
    "Fault", "FaultError", "harness_log",
    "CorruptReplica", "DeleteReplica", "ReplicaFiles", "find_replicas",
    "Grudge", "as_links", "bridge", "complete_grudge", "directed", "isolate",
    "links_between", "links_from", "merge",
    "Bandwidth", "CutAfterBytes", "LinkMesh", "Latency", "MeshProxy", "Partition",
    "ProxySpec", "ResetPeer", "Slicer", "plan_proxies", "routing_maps",
    "CrashClient", "Kill", "LocalProcessControl", "NodeControl", "Pause", "Restart",
    "Resume",
    "ToxiproxyAPI", "ToxiproxyError", "ToxiproxyNotFound", "ToxiproxyServer", "ensure_binary",
]
