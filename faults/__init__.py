"""Everything that breaks things: the Toxiproxy link mesh and its network faults, node
faults, disk faults. Each fault is data first, then inject() and heal().

Nothing here knows about scenarios; the kinds a scenario names (harness.scenario.model,
registered in faults.kinds) build these from them.
"""

import importlib

# Each name from the submodule that defines it, imported on first use (PEP 562): the
# registry of kinds (faults.kinds) is read by every command, the Toxiproxy client and its
# HTTP library (faults.network) only by one that injects a network fault.
_WHERE = {
    "base": ("Fault", "FaultError", "harness_log"),
    "disk": ("CorruptReplica", "DeleteReplica", "ReplicaFiles", "find_replicas"),
    "grudge": ("Grudge", "as_links", "bridge", "complete_grudge", "directed", "isolate",
               "links_between", "links_from", "merge"),
    "network": ("Bandwidth", "CutAfterBytes", "LinkMesh", "Latency", "MeshProxy", "Partition",
                "ProxySpec", "ResetPeer", "Slicer", "plan_proxies", "routing_maps"),
    "process": ("CrashClient", "Kill", "LocalProcessControl", "NodeControl", "Pause",
                "Restart", "Resume"),
    "toxiproxy_server": ("ToxiproxyAPI", "ToxiproxyError", "ToxiproxyNotFound",
                         "ToxiproxyServer", "ensure_binary"),
}
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}


def __getattr__(name: str):
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'faults' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"faults.{module}"), name)
    globals()[name] = value
    return value


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
