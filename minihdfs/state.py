"""The cluster's state as the verifier sees it: fsck of one file and final_state.json
(spec/EVENTS.md), from the NameNode's view, every DataNode's disk, and a read-back."""

from __future__ import annotations

import os
import re
import zlib

from .client import DFSClient
from .routing import Routes
from .rpc import RpcClient

_META = re.compile(r"^blk_(\d+)_(\d+)\.meta$")


def datanode_replicas(routes: Routes, dn: str, storage: str | None = None) -> list[dict] | None:
    """A DataNode's replicas: asked over RPC, or read from its storage folder when it is down."""
    peer = RpcClient(routes.addr(dn, "rpc"), 3.0, 30.0)
    try:
        return peer.call("getReplicas", with_crc=True)
    except (OSError, EOFError):
        return scan_storage(storage) if storage else None
    finally:
        peer.close()


def scan_storage(storage: str) -> list[dict]:
    """The replicas on a stopped DataNode's disk (read only; nothing is changed)."""
    out = []
    for folder, state in (("finalized", "FINALIZED"), ("rbw", "RBW")):
        path = os.path.join(storage, "current", folder)
        if not os.path.isdir(path):
            continue
        for name in sorted(os.listdir(path)):
            m = _META.match(name)
            data = os.path.join(path, f"blk_{m.group(1)}") if m else None
            if not m or not os.path.exists(data):
                continue
            with open(data, "rb") as f:
                body = f.read()
            out.append({"block": int(m.group(1)), "gs": int(m.group(2)), "len": len(body),
                        "state": state, "crc": zlib.crc32(body), "offline": True})
    return out


def fsck(client: DFSClient, path: str, storages: dict[str, str] | None = None) -> dict:
    """The NameNode's view of each block of `path`, and each DataNode's view of its replica."""
    state = client.nn_call("getClusterState")
    entry = next((f for f in state["files"] if f["path"] == path), None)
    if entry is None:
        raise FileNotFoundError(f"{path} does not exist")
    views = {dn: datanode_replicas(client.routes, dn, (storages or {}).get(dn))
             for dn in client.routes.nodes("dn")}
    blocks = []
    for b in entry["blocks"]:
        replicas = []
        for dn, reps in sorted(views.items()):
            for r in reps or []:
                if r["block"] == b["block"]:
                    replicas.append({"dn": dn, "state": r["state"], "gs": r["gs"], "len": r["len"],
                                     "crc": r.get("crc")})
        blocks.append({"block": b["block"], "gs": b["gs"], "len": b["len"], "state": b["state"],
                       "locations": b["locations"], "replicas": replicas})
    return {"path": path, "closed": entry["closed"], "len": entry["len"],
            "holder": entry["holder"], "blocks": blocks}


def final_state(client: DFSClient, storages: dict[str, str] | None = None,
                read_back: bool = True) -> dict:
    """final_state.json: files, leases, every DataNode's replicas, and each file read back."""
    state = client.nn_call("getClusterState")
    files = [{"path": f["path"], "closed": f["closed"], "len": f["len"],
              "replication": f["replication"], "holder": f["holder"],
              "blocks": [{k: b[k] for k in ("block", "gs", "len", "state", "locations")}
                         for b in f["blocks"]]} for f in state["files"]]
    datanodes = {dn: datanode_replicas(client.routes, dn, (storages or {}).get(dn)) or []
                 for dn in client.routes.nodes("dn")}
    readback = {}
    if read_back:
        for f in state["files"]:
            try:
                data = client.read(f["path"])
                readback[f["path"]] = {"len": len(data), "crc": zlib.crc32(data)}
            except (OSError, EOFError) as e:
                readback[f["path"]] = {"len": None, "crc": None, "error": str(e)}
    return {"files": files, "leases": state["leases"], "datanodes": datanodes,
            "datanode_report": state["datanodes"], "readback": readback}
