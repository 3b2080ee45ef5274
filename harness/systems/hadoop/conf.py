"""Hadoop configuration of one run: the scenario's keys rendered for a given release.

The scenario's config keys are already Hadoop's (hdfs_contract/config.py declares them with
Hadoop's names, defaults and units); they pass through, with values turned from human
units into what Hadoop parses (sizes in bytes, durations as a bare number in the key's
own unit or with an `ms` suffix, which Hadoop's getTimeDuration accepts). Two keys are
the mini-HDFS's own: `lease.hard-limit` becomes `dfs.namenode.lease-hard-limit-sec`
where the release has it (3.4 and later); `lease.soft-limit` is a constant in every
release (HdfsConstants.LEASE_SOFTLIMIT_PERIOD, 60 s). With the Byteman agent on, both
limits are set as Hadoop's own tests set them (`agent_lease_periods`: LeaseManager.
setLeasePeriod in the NameNode, LeaseRenewer.setRenewalTime in the clients); without it,
a scenario asking for another soft limit cannot run on Hadoop: `config_issues` says so
in one line.

Owns also the XML and log4j.properties writers and the base settings a small loopback
cluster needs (short heartbeats, no safe-mode wait, small heaps are in cluster.py).
"""

from __future__ import annotations

import os
from typing import Any
from xml.sax.saxutils import escape

from hdfs_contract.config import KEYS, ConfigError

SOFT_LIMIT_S = 60.0   # HdfsConstants.LEASE_SOFTLIMIT_PERIOD in every release
HARD_LIMIT_S = 1200.0  # HdfsConstants.LEASE_HARDLIMIT_PERIOD before 3.4 (20 min)

LOG_PATTERN = "%d{ISO8601} %p [%t] %c{1}/%C{1}: %m%n"   # agreed with hadoop-logs

# Settings of every Hadoop run: a small cluster on loopback, quick to start and to
# notice a dead node; a scenario's keys override them.
BASE = {
    "dfs.heartbeat.interval": "1",
    "dfs.namenode.heartbeat.recheck-interval": "5000",
    "dfs.namenode.stale.datanode.interval": "5000",
    "dfs.namenode.lease-recheck-interval-ms": "1000",
    "dfs.namenode.safemode.extension": "0",
    "dfs.namenode.safemode.min.datanodes": "0",
    "dfs.namenode.datanode.registration.ip-hostname-check": "false",
    "dfs.blockreport.initialDelay": "0",
    "dfs.namenode.redundancy.interval.seconds": "1",
    # a re-replication whose target never confirms is retried after this, as the
    # mini-HDFS retries after max(10 s, 5 redundancy intervals); Hadoop's 300 s outlasts
    # a run: the NameNode may pick a DataNode killed a second ago (it is dead to it only
    # after 2 recheck intervals + 10 heartbeats) and the block stayed under-replicated
    "dfs.namenode.reconstruction.pending.timeout-sec": "10",
    "dfs.namenode.fs-limits.min-block-size": "512",
    "dfs.permissions.enabled": "false",
    "dfs.client.use.datanode.hostname": "true",
    "dfs.datanode.use.datanode.hostname": "true",
    # the harness reads /jmx over HTTP; nothing else of the web UI is needed
    "dfs.webhdfs.enabled": "false",
    "hadoop.security.authentication": "simple",
    # a DataNode's disk check would otherwise fail a tiny tmpfs or full disk run
    "dfs.datanode.du.reserved": "0",
    "dfs.namenode.resource.du.reserved": "0",
    "dfs.namenode.resource.checked.volumes.minimum": "0",
}

# Keys Hadoop reads with getLong/getInt, not getTimeDuration: a unit suffix would
# break them, so they are always written as a whole number of their unit.
_BARE_ONLY = {"dfs.namenode.lease-recheck-interval-ms", "dfs.blockreport.intervalMsec",
              "dfs.client.socket-timeout", "ipc.client.connect.timeout",
              "ipc.client.rpc-timeout.ms", "dfs.datanode.xceiver.stop.timeout.millis",
              "dfs.namenode.redundancy.interval.seconds",
              "dfs.namenode.startup.delay.block.deletion.sec",
              "dfs.datanode.socket.write.timeout"}


def version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.replace("-", ".").split("."):
        if not piece.isdigit():
            break
        parts.append(int(piece))
    return tuple(parts)


def has_hard_limit_key(version: str) -> bool:
    """dfs.namenode.lease-hard-limit-sec exists from 3.4.0 (HDFS-15808)."""
    return version_tuple(version) >= (3, 4)


def config_issues(config: dict[str, Any], version: str, agent: bool = False) -> list[str]:
    """One line per scenario key this release cannot honour (empty: all fine); with the
    agent (`agent`) every lease limit can be honoured."""
    issues = []
    for key, raw in config.items():
        spec = KEYS.get(key)
        if spec is None:
            continue
        try:
            value = spec.parse(raw, key)
        except ConfigError as e:
            issues.append(str(e))
            continue
        if agent:
            continue
        if key == "lease.soft-limit" and abs(value - SOFT_LIMIT_S) > 1e-9:
            issues.append(f"lease.soft-limit: hadoop {version} hard-codes the soft limit at "
                          f"60s (HdfsConstants.LEASE_SOFTLIMIT_PERIOD); turn on "
                          f"cluster.hadoop_agent (it sets the limit), drop the key or declare "
                          f"`systems: [minihdfs]` with a reason")
        if key == "lease.hard-limit" and not has_hard_limit_key(version) \
                and abs(value - HARD_LIMIT_S) > 1e-9:
            issues.append(f"lease.hard-limit: hadoop {version} hard-codes the hard limit at "
                          f"20min (no dfs.namenode.lease-hard-limit-sec before 3.4); turn on "
                          f"cluster.hadoop_agent, use --hadoop-version 3.4.2 or declare "
                          f"`systems: [minihdfs]` with a reason")
    return issues


def agent_lease_periods(config: dict[str, Any], version: str) -> tuple[float, float] | None:
    """(soft, hard) in seconds for the agent to set (agent.lease_rules), when the scenario
    asks for limits the release's configuration cannot give: a soft limit other than
    60 s, or a hard limit before 3.4. None when the configuration says it all."""
    soft = KEYS["lease.soft-limit"].parse(config.get("lease.soft-limit", SOFT_LIMIT_S),
                                          "lease.soft-limit")
    hard_raw = config.get("lease.hard-limit")
    hard = HARD_LIMIT_S if hard_raw is None \
        else KEYS["lease.hard-limit"].parse(hard_raw, "lease.hard-limit")
    if abs(soft - SOFT_LIMIT_S) < 1e-9 and (has_hard_limit_key(version)
                                           or abs(hard - HARD_LIMIT_S) < 1e-9):
        return None
    return soft, hard


def _render(key: str, value: Any, raw: Any) -> str:
    spec = KEYS[key]
    if spec.kind == "size":
        return str(int(value))
    if spec.kind == "bool":
        return "true" if value else "false"
    if spec.kind == "duration":
        # minihdfs parses durations to seconds; Hadoop wants the key's own bare unit
        bare_ms = spec.parse(1, key) < 0.5          # a bare number of this key is in ms
        number = value * 1000 if bare_ms else value
        if abs(number - round(number)) < 1e-9:
            return str(int(round(number)))
        if key in _BARE_ONLY:   # read with getLong: the nearest whole unit, at least 1
            return str(max(1, int(round(number))))
        return f"{int(round(value * 1000))}ms"
    return str(value)


def hadoop_keys(config: dict[str, Any], version: str) -> dict[str, str]:
    """The scenario's keys as Hadoop configuration properties for `version`."""
    out: dict[str, str] = {}
    for key, raw in config.items():
        spec = KEYS.get(key)
        if spec is None:        # a key the mini-HDFS does not know: Hadoop's own, as given
            out[key] = str(raw).lower() if isinstance(raw, bool) else str(raw)
            continue
        value = spec.parse(raw, key)
        if key == "lease.soft-limit":
            continue            # a constant in Hadoop (config_issues reports a difference)
        if key == "lease.hard-limit":
            if has_hard_limit_key(version):
                out["dfs.namenode.lease-hard-limit-sec"] = str(max(1, int(round(value))))
            continue
        out[key] = _render(key, value, raw)
    return out


def write_site(path: str, props: dict[str, str]) -> None:
    lines = ['<?xml version="1.0"?>', "<configuration>"]
    for k in sorted(props):
        lines.append(f"  <property><name>{escape(k)}</name><value>{escape(str(props[k]))}"
                     f"</value></property>")
    lines.append("</configuration>")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, path)


def write_log4j(path: str, log_file: str, debug_loggers: list[str] = ()) -> None:
    """Every line of the JVM into `log_file` (appended across restarts), in the agreed
    layout; the loggers of `debug_loggers` at DEBUG (hadoop-logs chooses them)."""
    lines = [
        "log4j.rootLogger=INFO,F",
        "log4j.appender.F=org.apache.log4j.FileAppender",
        f"log4j.appender.F.File={log_file}",
        "log4j.appender.F.Append=true",
        "log4j.appender.F.ImmediateFlush=true",
        "log4j.appender.F.layout=org.apache.log4j.PatternLayout",
        f"log4j.appender.F.layout.ConversionPattern={LOG_PATTERN}",
        # the audit log and metrics chatter are not events
        "log4j.logger.FSNamesystem.audit=WARN",
        "log4j.logger.org.apache.hadoop.metrics2=WARN",
        "log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR",
    ]
    lines += [f"log4j.logger.{name}=DEBUG" for name in debug_loggers]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
