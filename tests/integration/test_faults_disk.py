"""Disk faults on a temporary DataNode storage folder laid out as the mini-HDFS
DataNode writes it: current/{finalized,rbw,tmp}/blk_<id> and blk_<id>_<gs>.meta."""

import struct
import zlib

import pytest

from faults.base import FaultError, harness_log
from faults.disk import CorruptReplica, DeleteReplica, find_replicas
from hdfs_contract.events import read_events

pytestmark = pytest.mark.integration

CHUNK = 512


def write_replica(storage, state, block, gs, data):
    folder = storage / "current" / state
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"blk_{block}").write_bytes(data)
    header = struct.pack(">HBI", 1, 2, CHUNK)  # 7 bytes: version, checksum type, chunk
    crcs = b"".join(struct.pack(">I", zlib.crc32(data[i:i + CHUNK]))
                    for i in range(0, len(data), CHUNK))
    (folder / f"blk_{block}_{gs}.meta").write_bytes(header + crcs)


def bad_chunks(storage, state, block, gs):
    folder = storage / "current" / state
    data = (folder / f"blk_{block}").read_bytes()
    meta = (folder / f"blk_{block}_{gs}.meta").read_bytes()[7:]
    return [i // CHUNK for i in range(0, len(data), CHUNK)
            if struct.unpack(">I", meta[i // CHUNK * 4:i // CHUNK * 4 + 4])[0]
            != zlib.crc32(data[i:i + CHUNK])]


@pytest.fixture
def storage(tmp_path):
    root = tmp_path / "dn1"
    for state in ("finalized", "rbw", "tmp"):
        (root / "current" / state).mkdir(parents=True)
    write_replica(root, "finalized", 1073741825, 1001, bytes(range(256)) * 20)  # 5120 B
    write_replica(root, "rbw", 1073741826, 1003, b"x" * 700)
    write_replica(root, "finalized", 10737418250, 1001, b"other block, similar id")
    return root


@pytest.fixture
def log(tmp_path):
    return harness_log(str(tmp_path / "harness.jsonl"))


def test_find_replicas_matches_the_exact_block_id(storage):
    [replica] = find_replicas(storage, 1073741825)
    assert replica.state_dir == "finalized" and replica.gs == 1001
    assert replica.meta.name == "blk_1073741825_1001.meta"
    [rbw] = find_replicas(storage, 1073741826)
    assert rbw.state_dir == "rbw" and rbw.gs == 1003
    assert find_replicas(storage, 42) == []


def test_corrupt_replica_flips_data_bytes_so_checksums_fail(storage, log):
    block, meta = 1073741825, storage / "current/finalized/blk_1073741825_1001.meta"
    meta_before = meta.read_bytes()
    data_before = (storage / "current/finalized/blk_1073741825").read_bytes()
    fault = CorruptReplica(storage, block, node="dn1", nbytes=3, seed=7, log=log)
    fault.inject()
    data_after = (storage / "current/finalized/blk_1073741825").read_bytes()
    assert len(data_after) == len(data_before)
    changed = [i for i, (a, b) in enumerate(zip(data_before, data_after)) if a != b]
    assert changed == fault.offsets and len(changed) == 3
    assert meta.read_bytes() == meta_before  # the checksums are left as they were
    assert bad_chunks(storage, "finalized", block, 1001)
    fault.heal()  # permanent: heal does not restore
    assert (storage / "current/finalized/blk_1073741825").read_bytes() == data_after
    inject = read_events(log.path)[0]
    assert inject["event"] == "harness.fault.inject" and inject["target"] == "dn1"
    assert inject["params"]["block"] == block and inject["params"]["offsets"] == changed
    assert inject["params"]["state_dirs"] == ["finalized"] and inject["params"]["gs"] == 1001


def test_corruption_positions_are_deterministic_from_the_seed(tmp_path):
    def positions(seed, where):
        write_replica(tmp_path / where, "finalized", 5, 1, bytes(4096))
        fault = CorruptReplica(tmp_path / where, 5, nbytes=4, seed=seed)
        fault.inject()
        return fault.offsets

    assert positions(3, "a") == positions(3, "b")
    assert positions(3, "c") != positions(4, "d")


def test_corrupt_an_rbw_replica(storage):
    CorruptReplica(storage, 1073741826).inject()
    assert bad_chunks(storage, "rbw", 1073741826, 1003) == [0]


def test_delete_replica_removes_data_and_meta_only_of_that_block(storage, log):
    fault = DeleteReplica(storage, 1073741825, node="dn1", log=log)
    fault.inject()
    assert find_replicas(storage, 1073741825) == []
    names = sorted(p.name for p in (storage / "current" / "finalized").iterdir())
    assert names == ["blk_10737418250", "blk_10737418250_1001.meta"]
    fault.heal()
    assert find_replicas(storage, 1073741825) == []
    assert [e["event"] for e in read_events(log.path)] == ["harness.fault.inject",
                                                           "harness.fault.heal"]


def test_a_block_not_on_this_datanode_is_a_clear_error(storage, log):
    with pytest.raises(FaultError, match="dn1 has no replica of block 99"):
        DeleteReplica(storage, 99, node="dn1", log=log).inject()
    with pytest.raises(FaultError, match="no replica of block 99"):
        CorruptReplica(storage, 99, log=log).inject()
    assert read_events(log.path) == []  # nothing injected, nothing logged


def test_an_empty_replica_cannot_be_corrupted(storage):
    write_replica(storage, "tmp", 77, 1, b"")
    with pytest.raises(FaultError, match="empty"):
        CorruptReplica(storage, 77).inject()
