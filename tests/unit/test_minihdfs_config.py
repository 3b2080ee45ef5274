"""Configuration of the mini-HDFS: Hadoop keys and defaults, human units, and refusals
that name the key and what would be accepted."""

from __future__ import annotations

import pytest

from hdfs_contract.config import (KEYS, Config, ConfigError, parse_bool, parse_duration,
                             parse_size)


@pytest.mark.parametrize("text,expected", [
    (512, 512), ("512", 512), ("64KiB", 64 * 1024), ("64k", 64 * 1024), ("64kb", 64000),
    ("4MiB", 4 << 20), ("4m", 4 << 20), ("1g", 1 << 30), ("1GiB", 1 << 30), ("2gb", 2 * 10 ** 9),
    ("1.5KiB", 1536), (" 3 MiB ", 3 << 20), ("0", 0), (1024.0, 1024), ("1t", 1 << 40),
    ("7b", 7),
])
def test_sizes(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["lots", "-1", -1, "1.3", "1.0001KiB", "12 parsecs", "",
                                  True, "MiB", "1e6", None])
def test_bad_sizes(text):
    with pytest.raises(ConfigError):
        parse_size(text, "dfs.blocksize")


@pytest.mark.parametrize("text,bare,expected", [
    ("500ms", "s", 0.5), ("2s", "s", 2.0), ("1.5min", "s", 90.0), ("1h", "s", 3600.0),
    ("1d", "s", 86400.0), ("250us", "s", 0.00025), ("3", "s", 3.0), (3, "s", 3.0),
    (2000, "ms", 2.0), ("2000", "ms", 2.0), ("2s", "ms", 2.0), (".5s", "s", 0.5),
    ("2m", "s", 120.0), ("1 sec", "s", 1.0),
])
def test_durations(text, bare, expected):
    assert parse_duration(text, bare_unit=bare) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["soon", "-2s", -1, "2 fortnights", "", False, "s"])
def test_bad_durations(text):
    with pytest.raises(ConfigError):
        parse_duration(text, "dfs.heartbeat.interval")


def test_bools():
    for yes in (True, "true", "TRUE", "yes", "on", "1", 1):
        assert parse_bool(yes) is True
    for no in (False, "false", "No", "off", "0", 0):
        assert parse_bool(no) is False
    with pytest.raises(ConfigError):
        parse_bool("maybe", "x")


def test_defaults_are_hadoops():
    conf = Config()
    assert conf["dfs.blocksize"] == 128 << 20
    assert conf["dfs.replication"] == 3
    assert conf["dfs.heartbeat.interval"] == 3.0
    assert conf["dfs.namenode.heartbeat.recheck-interval"] == 300.0
    assert conf["dfs.namenode.lease-recheck-interval-ms"] == 2.0
    assert conf["lease.soft-limit"] == 60.0 and conf["lease.hard-limit"] == 1200.0   # 3.x: 20 min
    assert conf["dfs.client-write-packet-size"] == 64 * 1024
    assert conf["dfs.bytes-per-checksum"] == 512
    assert conf["dfs.checksum.type"] == "CRC32"
    assert conf["dfs.client.block.write.replace-datanode-on-failure.policy"] == "DEFAULT"
    assert conf["dfs.client.block.write.replace-datanode-on-failure.enable"] is True
    assert conf["dfs.client.block.write.replace-datanode-on-failure.best-effort"] is False
    assert conf["dfs.namenode.replication.min"] == 1
    assert conf.dead_interval == 2 * 300 + 10 * 3
    for name, key in KEYS.items():          # every default parses with its own parser
        key.parse(key.default, name)


def test_bare_numbers_take_the_keys_unit_and_human_units_work():
    conf = Config({"dfs.heartbeat.interval": 1, "dfs.namenode.lease-recheck-interval-ms": 500,
                   "dfs.namenode.heartbeat.recheck-interval": "1s", "dfs.blocksize": "1MiB",
                   "dfs.client-write-packet-size": "16k", "lease.soft-limit": "2s",
                   "lease.hard-limit": "1min", "dfs.checksum.type": "crc32c",
                   "dfs.client.block.write.replace-datanode-on-failure.best-effort": "true"})
    assert conf["dfs.heartbeat.interval"] == 1.0
    assert conf["dfs.namenode.lease-recheck-interval-ms"] == 0.5
    assert conf["dfs.namenode.heartbeat.recheck-interval"] == 1.0
    assert conf["dfs.blocksize"] == 1 << 20
    assert conf["dfs.client-write-packet-size"] == 16384
    assert conf["lease.hard-limit"] == 60.0
    assert conf["dfs.checksum.type"] == "CRC32C"
    assert conf["dfs.client.block.write.replace-datanode-on-failure.best-effort"] is True
    assert conf.dead_interval == 2 * 1 + 10 * 1


def test_unknown_key_is_refused_with_a_suggestion():
    with pytest.raises(ConfigError) as e:
        Config({"dfs.blocksise": "1MiB"})
    assert "dfs.blocksise" in str(e.value) and "did you mean 'dfs.blocksize'" in str(e.value)
    with pytest.raises(ConfigError, match="unknown configuration key 'zzz'"):
        Config({"zzz": 1})


@pytest.mark.parametrize("key,value", [
    ("dfs.blocksize", "lots"), ("dfs.replication", "three"), ("dfs.replication", 0),
    ("dfs.replication", "2.5"), ("dfs.heartbeat.interval", "soon"),
    ("dfs.checksum.type", "MD5"), ("dfs.client.block.write.replace-datanode-on-failure.policy",
                                   "SOMETIMES"),
    ("dfs.client.block.write.replace-datanode-on-failure.enable", "perhaps"),
    ("dfs.replication", True), ("dfs.client.block.write.retries", -1),
])
def test_bad_values_name_the_key(key, value):
    with pytest.raises(ConfigError) as e:
        Config({key: value})
    assert key in str(e.value)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("values,words", [
    ({"dfs.bytes-per-checksum": 512, "dfs.client-write-packet-size": 100},
     "dfs.client-write-packet-size"),
    ({"dfs.blocksize": 1000}, "dfs.blocksize"),
    ({"dfs.bytes-per-checksum": 0}, "dfs.client-write-packet-size"),
])
def test_inconsistent_values_are_refused(values, words):
    with pytest.raises(ConfigError, match=words):
        Config(values)


def test_a_hard_limit_below_the_soft_limit_is_taken_as_hadoop_34_takes_it():
    # the library runs the mini-HDFS with Hadoop's 60 s soft limit and a 5 s hard limit
    conf = Config({"lease.hard-limit": "5s"})
    assert conf["lease.soft-limit"] == 60.0 and conf["lease.hard-limit"] == 5.0


def test_from_pairs_and_json_round_trip():
    conf = Config.from_pairs(["dfs.blocksize=1MiB", " dfs.replication = 2 ",
                              "dfs.client.socket-timeout=4s"])
    assert conf["dfs.blocksize"] == 1 << 20 and conf["dfs.replication"] == 2
    assert conf["dfs.client.socket-timeout"] == 4.0
    again = Config.from_json(conf.to_json())
    assert again.raw == conf.raw and again["dfs.blocksize"] == 1 << 20
    assert Config.from_json("")["dfs.replication"] == 3
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        Config.from_pairs(["dfs.blocksize"])
    with pytest.raises(ConfigError, match="did you mean"):
        Config.from_pairs(["dfs.replicaton=2"])


def test_dead_interval_reads_the_heartbeat_in_whole_seconds():
    """3.x DatanodeManager: heartbeatExpireInterval = 2 x recheck + 10 x 1000 x the
    heartbeat read with getTimeDuration(..., SECONDS), so 300 ms counts 0 s, 1.5 s 1 s."""
    conf = Config({"dfs.heartbeat.interval": "300ms",
                   "dfs.namenode.heartbeat.recheck-interval": "5s"})
    assert conf.heartbeat_seconds == 0 and conf.dead_interval == 10
    conf = Config({"dfs.heartbeat.interval": "1500ms",
                   "dfs.namenode.heartbeat.recheck-interval": "5s"})
    assert conf.heartbeat_seconds == 1 and conf.dead_interval == 20


def test_stale_interval_is_raised_to_three_whole_heartbeats():
    """3.x DatanodeManager.getStaleIntervalFromConf: the stale interval is at least
    dfs.namenode.stale.datanode.minimum.interval (3) x the heartbeat in whole seconds."""
    assert Config().stale_interval == 30                                   # defaults: 30 s >= 9 s
    assert Config({"dfs.heartbeat.interval": "1s",
                   "dfs.namenode.stale.datanode.interval": "2s"}).stale_interval == 3
    assert Config({"dfs.heartbeat.interval": 3,
                   "dfs.namenode.stale.datanode.interval": "5s"}).stale_interval == 9
    assert Config({"dfs.heartbeat.interval": "300ms",               # floor 0: as given
                   "dfs.namenode.stale.datanode.interval": "1s"}).stale_interval == 1
