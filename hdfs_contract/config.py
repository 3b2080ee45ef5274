"""Configuration of a system under test: Hadoop's keys, Hadoop's defaults, human units.

Every key a process understands is declared here once, with its type, its default and
the unit a bare number has (Hadoop's: `dfs.heartbeat.interval: 3` means 3 seconds,
`dfs.namenode.lease-recheck-interval-ms: 2000` means 2000 ms). Values may also be given
in human units: sizes as `64KiB`, `4MiB`, `1g`; durations as `500ms`, `2s`, `1.5min`.
An unknown key or a value that does not parse is refused with a `ConfigError` whose
message names the key and what would be accepted.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
from typing import Any, Callable

SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 1024, "kb": 1000, "kib": 1024,
    "m": 1024 ** 2, "mb": 1000 ** 2, "mib": 1024 ** 2,
    "g": 1024 ** 3, "gb": 1000 ** 3, "gib": 1024 ** 3,
    "t": 1024 ** 4, "tb": 1000 ** 4, "tib": 1024 ** 4,
}
DURATION_UNITS = {
    "us": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0,
    "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0,
}
_NUMBER_UNIT = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([a-zA-Z]*)\s*$")


class ConfigError(ValueError):
    """A configuration key or value that cannot be accepted."""


def parse_size(value: Any, what: str = "size") -> int:
    """Parse a size in bytes: an int, or a string such as `64KiB`, `4MiB`, `1g`, `512`."""
    if isinstance(value, bool):
        raise ConfigError(f"{what}: expected a size such as 64KiB or 4MiB, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ConfigError(f"{what}: a size cannot be negative ({value})")
        return value
    if isinstance(value, float) and value.is_integer():
        return parse_size(int(value), what)
    m = _NUMBER_UNIT.match(str(value))
    unit = m.group(2).lower() if m else None
    if not m or unit not in SIZE_UNITS:
        raise ConfigError(f"{what}: expected a size such as 64KiB, 4MiB or 1048576, got {value!r}")
    size = float(m.group(1)) * SIZE_UNITS[unit]
    if not size.is_integer():
        raise ConfigError(f"{what}: {value!r} is not a whole number of bytes")
    return int(size)


def parse_duration(value: Any, what: str = "duration", bare_unit: str = "s") -> float:
    """Parse a duration in seconds: `500ms`, `2s`, `1.5min`, `1h`; a bare number is in `bare_unit`."""
    if isinstance(value, bool):
        raise ConfigError(f"{what}: expected a duration such as 500ms or 2s, got {value!r}")
    if isinstance(value, (int, float)):
        if value < 0:
            raise ConfigError(f"{what}: a duration cannot be negative ({value})")
        return float(value) * DURATION_UNITS[bare_unit]
    m = _NUMBER_UNIT.match(str(value))
    unit = (m.group(2).lower() or bare_unit) if m else None
    if not m or unit not in DURATION_UNITS:
        raise ConfigError(f"{what}: expected a duration such as 500ms, 2s or 1min, got {value!r}")
    return float(m.group(1)) * DURATION_UNITS[unit]


def parse_bool(value: Any, what: str = "flag") -> bool:
    if isinstance(value, bool):
        return value
    if str(value).strip().lower() in ("true", "yes", "on", "1"):
        return True
    if str(value).strip().lower() in ("false", "no", "off", "0"):
        return False
    raise ConfigError(f"{what}: expected true or false, got {value!r}")


def _choice(*options: str) -> Callable[[Any, str], str]:
    def parse(value: Any, what: str) -> str:
        text = str(value).strip().upper()
        if text not in options:
            raise ConfigError(f"{what}: expected one of {', '.join(options)}, got {value!r}")
        return text
    return parse


def _int(minimum: int = 0) -> Callable[[Any, str], int]:
    def parse(value: Any, what: str) -> int:
        if isinstance(value, bool):
            raise ConfigError(f"{what}: expected a whole number, got {value!r}")
        try:
            number = int(str(value).strip())
        except ValueError:
            raise ConfigError(f"{what}: expected a whole number, got {value!r}") from None
        if number < minimum:
            raise ConfigError(f"{what}: must be at least {minimum}, got {number}")
        return number
    return parse


def _float(value: Any, what: str) -> float:
    if isinstance(value, bool):
        raise ConfigError(f"{what}: expected a number such as 0.999, got {value!r}")
    try:
        return float(str(value).strip())
    except ValueError:
        raise ConfigError(f"{what}: expected a number such as 0.999, got {value!r}") from None


def _size(value: Any, what: str) -> int:
    return parse_size(value, what)


def _seconds(value: Any, what: str) -> float:
    return parse_duration(value, what, "s")


def _millis(value: Any, what: str) -> float:
    return parse_duration(value, what, "ms")


def _flag(value: Any, what: str) -> bool:
    return parse_bool(value, what)


@dataclasses.dataclass(frozen=True)
class Key:
    name: str
    parse: Callable[[Any, str], Any]
    default: Any
    help: str
    kind: str  # size | duration | int | float | bool | choice, for the JSON Schema
    hadoop_only: bool = False   # only Hadoop reads it: a scenario run on the mini-HDFS may not set it


KEYS: dict[str, Key] = {k.name: k for k in [
    Key("dfs.blocksize", _size, "128MiB", "block size of new files", "size"),
    Key("dfs.replication", _int(1), 3, "replication of new files", "int"),
    Key("dfs.namenode.replication.min", _int(1), 1,
        "FINALIZED replicas a block needs to become COMPLETE", "int"),
    Key("dfs.heartbeat.interval", _seconds, 3, "DataNode heartbeat period", "duration"),
    Key("dfs.namenode.heartbeat.recheck-interval", _millis, 300000,
        "dead after 2 x this + 10 x heartbeat interval", "duration"),
    Key("dfs.namenode.stale.datanode.interval", _millis, 30000,
        "a DataNode silent for this long is stale", "duration"),
    Key("dfs.namenode.lease-recheck-interval-ms", _millis, 2000,
        "period of the LeaseManager monitor", "duration"),
    Key("lease.soft-limit", _seconds, 60, "after this another client may take a file over",
        "duration"),
    # 3.x HdfsClientConfigKeys.DFS_LEASE_HARDLIMIT_DEFAULT: 20 min (2.x hard-coded 1 h)
    Key("lease.hard-limit", _seconds, 1200, "after this the NameNode recovers the lease",
        "duration"),
    Key("dfs.namenode.redundancy.interval.seconds", _seconds, 3,
        "period of the re-replication and invalidation scan", "duration"),
    Key("dfs.namenode.startup.delay.block.deletion.sec", _seconds, 0,
        "the NameNode sends no replica deletions for this long after it starts",
        "duration"),
    # BlockManagerSafeMode: after a start the NameNode refuses changes (addBlock, recovery,
    # re-replication, deletions) until this share of the COMPLETE blocks has
    # dfs.namenode.replication.min live replicas and enough DataNodes are live, then
    # waits the extension. Hadoop's extension default is 30s; 0 here, the value the
    # harness gives its Hadoop clusters too (harness/systems/hadoop/conf.py BASE)
    Key("dfs.namenode.safemode.threshold-pct", _float, 0.999,
        "share of the COMPLETE blocks that must be reported before safe mode ends "
        "(<= 0: no safe mode; > 1: it never ends by itself)", "float"),
    Key("dfs.namenode.safemode.min.datanodes", _int(0), 0,
        "live DataNodes needed before safe mode ends", "int"),
    Key("dfs.namenode.safemode.extension", _millis, 0,
        "safe mode lasts this long after its thresholds are met (Hadoop's default: 30s)",
        "duration"),
    Key("dfs.blockreport.intervalMsec", _millis, 21600000, "period of full block reports",
        "duration"),
    Key("dfs.client-write-packet-size", _size, "64KiB", "data bytes per packet", "size"),
    Key("dfs.bytes-per-checksum", _size, 512, "bytes per checksum chunk", "size"),
    Key("dfs.checksum.type", _choice("CRC32", "CRC32C"), "CRC32", "chunk checksum", "choice"),
    Key("dfs.client.block.write.retries", _int(0), 3,
        "addBlock attempts after a pipeline setup error", "int"),
    Key("dfs.client.block.write.locateFollowingBlock.retries", _int(1), 5,
        "complete() attempts while the last block is not COMPLETE", "int"),
    Key("dfs.client.pipeline.recovery.max-retries", _int(1), 5,
        "pipeline recovery attempts for one block", "int"),
    Key("dfs.client.block.write.replace-datanode-on-failure.enable", _flag, True,
        "replace a failed DataNode in the pipeline", "bool"),
    Key("dfs.client.block.write.replace-datanode-on-failure.policy",
        _choice("NEVER", "DEFAULT", "ALWAYS"), "DEFAULT", "when to replace", "choice"),
    Key("dfs.client.block.write.replace-datanode-on-failure.best-effort", _flag, False,
        "go on with fewer nodes when replacement fails", "bool"),
    # 3.x DataStreamer.setupPipelineInternal: with fewer nodes than this a new block's
    # pipeline is abandoned instead of recovered (0: always abandoned, as before 3.4.1)
    Key("dfs.client.block.write.replace-datanode-on-failure.min-replication", _int(0), 0,
        "nodes a pipeline needs to go on after a failure without a replacement", "int"),
    Key("dfs.client.socket-timeout", _millis, 60000,
        "client read timeout on pipelines and reads", "duration"),
    Key("ipc.client.connect.timeout", _millis, 20000, "TCP connect timeout", "duration"),
    # read by Hadoop only (DfsClientConf, DNConf): the mini-HDFS has no socket write timeout
    Key("dfs.datanode.socket.write.timeout", _millis, 480000,
        "Hadoop's write timeout on pipeline sockets; a 3.3.1+ client also gives up an hflush "
        "or close that waits this long (+5 s per pipeline node) for an ack", "duration",
        hadoop_only=True),
    Key("ipc.client.rpc-timeout.ms", _millis, 60000, "RPC reply timeout", "duration"),
    Key("dfs.client.datanode-restart.timeout", _seconds, 30,
        "how long a client waits for a restarting DataNode", "duration"),
    Key("dfs.datanode.restart.replica.expiration", _seconds, 50,
        "an RBW replica saved at a restart shutdown loads as RBW if back within this",
        "duration"),
    Key("dfs.datanode.xceiver.stop.timeout.millis", _millis, 60000,
        "how long initReplicaRecovery waits for a writer to stop", "duration"),
]}


# Hadoop's dfs.namenode.stale.datanode.minimum.interval (default 3), not settable here
STALE_MINIMUM_HEARTBEATS = 3


def suggest(name: str, options) -> str:
    close = difflib.get_close_matches(name, list(options), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


class Config:
    """Parsed configuration: `conf["dfs.blocksize"]` is always in bytes, durations in seconds."""

    def __init__(self, values: dict[str, Any] | None = None):
        self.raw: dict[str, Any] = {}
        self._values: dict[str, Any] = {
            name: key.parse(key.default, name) for name, key in KEYS.items()}
        for name, value in (values or {}).items():
            self.set(name, value)
        self.validate()

    def set(self, name: str, value: Any) -> None:
        key = KEYS.get(name)
        if key is None:
            raise ConfigError(f"unknown configuration key {name!r}{suggest(name, KEYS)}")
        self._values[name] = key.parse(value, name)
        self.raw[name] = value

    def validate(self) -> None:
        # A hard limit below the soft limit is allowed, as in Hadoop 3.4
        # (dfs.namenode.lease-hard-limit-sec is not checked against the soft limit): a
        # writer then loses its lease after the hard limit unless it renews sooner.
        bpc, packet = self["dfs.bytes-per-checksum"], self["dfs.client-write-packet-size"]
        if bpc <= 0 or packet < bpc:
            raise ConfigError("dfs.client-write-packet-size must be at least dfs.bytes-per-checksum")
        if self["dfs.blocksize"] % bpc:
            raise ConfigError("dfs.blocksize must be a multiple of dfs.bytes-per-checksum")

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    @property
    def heartbeat_seconds(self) -> int:
        """The heartbeat interval as the NameNode reads it for the intervals it derives from
        it: in whole seconds (getTimeDuration(..., SECONDS): 300 ms is 0, 1.5 s is 1)."""
        return int(self["dfs.heartbeat.interval"])

    @property
    def dead_interval(self) -> float:
        # 3.x DatanodeManager.<init>: heartbeatExpireInterval = 2 x recheck + 10 x heartbeat seconds
        return 2 * self["dfs.namenode.heartbeat.recheck-interval"] + 10 * self.heartbeat_seconds

    @property
    def stale_interval(self) -> float:
        """dfs.namenode.stale.datanode.interval, raised to at least
        STALE_MINIMUM_HEARTBEATS whole heartbeat seconds (Hadoop warns and resets it)."""
        # 3.x DatanodeManager.getStaleIntervalFromConf: max(interval, minimum.interval x heartbeat seconds)
        return max(self["dfs.namenode.stale.datanode.interval"],
                   STALE_MINIMUM_HEARTBEATS * self.heartbeat_seconds)

    def to_json(self) -> str:
        return json.dumps(self.raw, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "Config":
        return cls(json.loads(text) if text.strip() else {})

    @classmethod
    def from_pairs(cls, pairs: list[str]) -> "Config":
        """Build from `KEY=VALUE` strings, as given on a command line."""
        values = {}
        for pair in pairs:
            if "=" not in pair:
                raise ConfigError(f"--config {pair!r}: expected KEY=VALUE, e.g. dfs.blocksize=1MiB")
            name, value = pair.split("=", 1)
            values[name.strip()] = value.strip()
        return cls(values)
