"""final_state.json of a Hadoop run, in the mini-HDFS's format (minihdfs/state.py,
harness/reconcile/schema.py FINAL_STATE_SCHEMA): the NameNode's view of every file
(blocks, GS, lengths, locations as node ids, holder), the leases, every DataNode's
replicas read from its storage folders, and every file read back.

The NameNode's view and the read-back come from one client JVM running
javatools/HdfsChaosState.java (compiled once per release into the jar cache); the
replicas are read straight from disk, which works whether the DataNode is up or not:
`current/BP-*/current/finalized/subdir*/subdir*/blk_<id>` with `blk_<id>_<gs>.meta`
beside it (FINALIZED), and `.../rbw/` (RBW; after a restart Hadoop loads these as RWR,
which the disk does not tell apart). The CRC is zlib's CRC-32 of the data file, as the
mini-HDFS reports it.

`datanode_space` is each running DataNode's space from its JMX (bean DataNodeInfo,
attribute VolumeInfo, summed over its volumes); a DataNode that does not answer is null.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import zlib

from hdfs_contract.errors import ClusterError

from harness.waits import retrying

from . import fetch

SOURCES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "javatools")
STATE_CLASS = "HdfsChaosState"
_META = re.compile(r"^blk_(-?\d+)_(\d+)\.meta$")


def tools_dir(version: str) -> str:
    """The compiled javatools of `version`, built with javac when missing (each release
    compiles against its own jars). One folder per source content: checkouts sharing
    the release cache never run each other's tools, whatever the files' times."""
    sources = sorted(os.path.join(SOURCES, n) for n in os.listdir(SOURCES) if n.endswith(".java"))
    out = fetch.build_dir(version, "classes-sut", sources)
    stamp = os.path.join(out, ".built")
    if os.path.isfile(stamp):
        return out
    os.makedirs(out, exist_ok=True)
    proc = subprocess.run(["javac", "-nowarn", "-d", out, "-cp",
                           os.path.join(str(fetch.lib_dir(version)), "*"), *sources],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise ClusterError(f"javac of {SOURCES} for hadoop {version} failed: "
                           f"{proc.stderr.strip()[-400:]} (is a JDK installed? "
                           f"sudo apt-get install openjdk-17-jdk-headless)")
    with open(stamp, "w"):
        pass
    return out


def scan_storage(storage: str) -> list[dict]:
    """The replicas in a DataNode's storage folder (read only)."""
    out = []
    for root, _dirs, names in os.walk(storage):
        parts = root.split(os.sep)
        if "finalized" in parts:
            state = "FINALIZED"
        elif "rbw" in parts:
            state = "RBW"
        else:
            continue
        for name in sorted(names):
            m = _META.match(name)
            data = os.path.join(root, f"blk_{m.group(1)}") if m else None
            if not m or not os.path.exists(data):
                continue
            crc, length = 0, 0
            with open(data, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    crc = zlib.crc32(chunk, crc)
                    length += len(chunk)
            out.append({"block": int(m.group(1)), "gs": int(m.group(2)), "len": length,
                        "state": state, "crc": crc, "offline": True})
    return sorted(out, key=lambda r: (r["block"], r["gs"]))


# DataNodeInfo.VolumeInfo's keys per volume -> ours (DataNode.getVolumeInfo, every 3.x)
VOLUME_KEYS = {"reservedSpaceForReplicas": "reserved_for_replicas", "freeSpace": "free",
               "usedSpace": "used", "reservedSpace": "reserved"}


def volume_space(volume_info: str) -> dict:
    """One DataNode's space summed over its volumes, from the JSON text of its
    DataNodeInfo bean's VolumeInfo ({volume: {usedSpace, freeSpace, reservedSpace,
    reservedSpaceForReplicas, numBlocks, storageType}})."""
    volumes = json.loads(volume_info)
    if not isinstance(volumes, dict):
        raise ClusterError(f"VolumeInfo is not a map of volumes: {volume_info[:200]!r}")
    out = {ours: 0 for ours in VOLUME_KEYS.values()}
    for name, vol in volumes.items():
        for theirs, ours in VOLUME_KEYS.items():
            if not isinstance(vol, dict) or not isinstance(vol.get(theirs), int):
                raise ClusterError(f"VolumeInfo of volume {name} has no {theirs}")
            out[ours] += vol[theirs]
    out["volumes"] = len(volumes)
    return out


def datanode_space(cluster, attempts: int = 3, timeout: float = 10.0,
                   pause: float = 1.0) -> dict:
    """dn -> its space from JMX (volume_space), or None for a DataNode that does not answer
    `attempts` times (down, or paused); a loaded machine may keep a DataNode's HTTP server
    from answering within a couple of seconds, hence the retries and the long timeout."""
    errors = (OSError, ValueError, KeyError, ClusterError)

    def space(dn: str) -> dict:
        bean = cluster.jmx(dn, "Hadoop:service=DataNode,name=DataNodeInfo", timeout=timeout)
        return volume_space(bean["VolumeInfo"])

    out = {}
    for dn in cluster.datanodes():
        try:
            out[dn] = retrying(errors, attempts=attempts, interval=pause)(space, dn)
        except errors:
            out[dn] = None
    return out


def java_failure(stderr: str, limit: int = 600) -> str:
    """A JVM's failure in short: its first exception line (the message, which a stack
    trace's tail leaves out) and the last lines of what it printed."""
    text = stderr.strip()
    lines = text.splitlines()
    first = next((ln.strip() for ln in lines
                  if re.match(r"(Exception in thread \S+ )?[\w.$]+(Exception|Error)\b", ln.strip())),
                 "")
    tail = text[-limit:]
    if not first or first in tail:
        return tail
    return f"{first[:limit]} ... {tail[-(limit // 2):]}"


def namenode_view(cluster, read_back: bool = True, client_id: str = "harness",
                  path: str | None = None, timeout: float = 120.0) -> dict:
    """The NameNode's files, leases and DataNodes (and the read-back), locations as ids."""
    out = os.path.join(cluster.dir, f"state-{client_id}.json")
    args = ["--out", out] + ([] if read_back else ["--no-read"]) + (["--path", path] if path else [])
    cluster.add_client(client_id)
    classes = tools_dir(cluster.version)
    proc = subprocess.run(cluster.java_command(client_id, STATE_CLASS, args, [classes]),
                          capture_output=True, text=True, timeout=timeout, cwd=cluster.dir)
    if proc.returncode != 0 or not os.path.exists(out):
        raise ClusterError(f"{STATE_CLASS} failed (exit {proc.returncode}): "
                           f"{java_failure(proc.stderr)}")
    with open(out) as f:
        doc = json.load(f)
    os.unlink(out)
    names = cluster.address_map()
    for f in doc["files"]:
        for b in f["blocks"]:
            b["locations"] = [names.get(a, a) for a in b["locations"]]
    for d in doc.get("datanode_report", []):
        d["dn"] = names.get(d["xfer"], d["xfer"])
    # one lease per holder with all its paths, as the mini-HDFS's NameNode reports them
    leases: dict[str, list[str]] = {}
    for lease in doc.get("leases", []):
        leases.setdefault(lease["holder"], []).extend(lease["paths"])
    doc["leases"] = [{"holder": h, "paths": sorted(p)} for h, p in sorted(leases.items())]
    return doc


def final_state(cluster, read_back: bool = True, view: dict | None = None) -> dict:
    """final_state.json: files, leases, every DataNode's replicas, each file read back.
    `view`: a namenode_view of the same state taken already (read back if `read_back`)."""
    if view is None:
        view = namenode_view(cluster, read_back=read_back)
    datanodes = {dn: scan_storage(cluster.nodes[dn]["storage"]) for dn in cluster.datanodes()}
    return {"files": view["files"], "leases": view["leases"], "datanodes": datanodes,
            "datanode_report": view.get("datanode_report", []),
            "datanode_space": datanode_space(cluster),
            "readback": view["readback"] if read_back else {}, "system": "hadoop",
            "hadoop_version": cluster.version}
