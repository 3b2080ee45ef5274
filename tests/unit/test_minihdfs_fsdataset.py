"""A DataNode's FsDataset on a temporary storage folder: replicas written through the
dataset, then a restart (a new FsDataset on the same folder) loads them by the rules of
seed 004: finalized -> FINALIZED, rbw -> RWR with its length checked against the
checksums (a torn last chunk is cut), tmp deleted; the GS lives in the meta file name."""

from __future__ import annotations

import os
import struct
import zlib

import pytest

from minihdfs import wire
from minihdfs.fsdataset import FsDataset
from minihdfs.rpc import ReplicaAlreadyExistsException, ReplicaNotFoundException

BPC = 512
HEADER = 7


class Events(list):
    def __call__(self, event, **fields):
        self.append(dict(fields, event=event))
        return fields


def dataset(storage) -> FsDataset:
    return FsDataset(str(storage), BPC, "CRC32", Events())


def restart(storage) -> FsDataset:
    ds = dataset(storage)
    ds.load()
    return ds


def write(ds: FsDataset, replica, data: bytes, offset: int = 0) -> None:
    fds = ds.open_for_write(replica)
    try:
        ds.write_packet(replica, fds[0], fds[1], offset, data,
                        wire.chunk_checksums(data, BPC))
    finally:
        for fd in fds:
            os.close(fd)


def files(storage, folder: str) -> list[str]:
    return sorted(os.listdir(os.path.join(str(storage), "current", folder)))


def meta_sums(path) -> list[int]:
    body = open(path, "rb").read()[HEADER:]
    return list(struct.unpack(f">{len(body) // 4}I", body))


def crcs(data: bytes) -> list[int]:
    return [zlib.crc32(data[i:i + BPC]) for i in range(0, len(data), BPC)]


def test_written_replicas_have_data_and_meta_files(tmp_path):
    ds = dataset(tmp_path)
    r = ds.create_rbw(1001, 5001)
    data = os.urandom(3 * BPC + 100)
    write(ds, r, data[:1000])
    write(ds, r, data[1000:], offset=1000)       # a packet not on a chunk boundary
    assert r.num_bytes == len(data)
    assert files(tmp_path, "rbw") == ["blk_1001", "blk_1001_5001.meta"]
    assert open(r.data_path, "rb").read() == data
    header = open(r.meta_path, "rb").read()[:HEADER]
    assert struct.unpack(">HBI", header) == (1, wire.CHECKSUM_CRC32, BPC)
    assert meta_sums(r.meta_path) == crcs(data)
    ds.finalize(r)
    assert r.state == "FINALIZED"
    assert files(tmp_path, "finalized") == ["blk_1001", "blk_1001_5001.meta"]
    assert files(tmp_path, "rbw") == []
    states = [(e["state"], e["gs"], e["len"]) for e in ds.emit if e["event"] == "dn.replica.state"]
    assert states == [("RBW", 5001, 0), ("FINALIZED", 5001, len(data))]
    with pytest.raises(ReplicaAlreadyExistsException):
        ds.create_rbw(1001, 5002)


def test_restart_loads_finalized_as_finalized(tmp_path):
    ds = dataset(tmp_path)
    r = ds.create_rbw(7, 1001)
    data = os.urandom(5000)
    write(ds, r, data)
    ds.finalize(r)
    ds2 = restart(tmp_path)
    [loaded] = ds2.replicas.values()
    assert (loaded.block, loaded.gs, loaded.state, loaded.num_bytes) == (7, 1001, "FINALIZED", 5000)
    assert loaded.visible_length == 5000
    assert ds2.replica_crc(loaded) == zlib.crc32(data)
    assert ds2.report() == [{"block": 7, "gs": 1001, "len": 5000, "state": "FINALIZED"}]


def test_restart_turns_rbw_into_rwr_with_its_whole_length(tmp_path):
    ds = dataset(tmp_path)
    r = ds.create_rbw(8, 1002)
    data = os.urandom(2 * BPC + 77)
    write(ds, r, data)
    ds2 = restart(tmp_path)
    loaded = ds2.get(8)
    assert (loaded.state, loaded.gs, loaded.num_bytes) == ("RWR", 1002, len(data))
    assert loaded.bytes_acked == len(data)
    assert files(tmp_path, "rbw") == ["blk_8", "blk_8_1002.meta"]


def test_restart_cuts_a_torn_last_chunk_whose_checksum_does_not_match(tmp_path):
    ds = dataset(tmp_path)
    r = ds.create_rbw(9, 1003)
    good = os.urandom(2 * BPC + 100)
    write(ds, r, good)
    # a crash while writing the next packet: data reached the disk, its checksum did not
    with open(r.data_path, "ab") as f:
        f.write(os.urandom(300))
    ds2 = restart(tmp_path)
    loaded = ds2.get(9)
    assert loaded.state == "RWR"
    assert loaded.num_bytes == 2 * BPC       # the last chunk no longer matches: cut
    assert open(loaded.data_path, "rb").read() == good[:2 * BPC]
    assert meta_sums(loaded.meta_path) == crcs(good[:2 * BPC])


def test_restart_cuts_data_beyond_the_checksums(tmp_path):
    ds = dataset(tmp_path)
    r = ds.create_rbw(10, 1004)
    good = os.urandom(3 * BPC)
    write(ds, r, good)
    with open(r.data_path, "ab") as f:       # a whole chunk more data, no checksum at all
        f.write(os.urandom(BPC))
    loaded = restart(tmp_path).get(10)
    assert loaded.num_bytes == 3 * BPC
    assert os.path.getsize(loaded.data_path) == 3 * BPC
    assert meta_sums(loaded.meta_path) == crcs(good)


def test_restart_cuts_checksums_beyond_the_data(tmp_path):
    ds = dataset(tmp_path)
    r = ds.create_rbw(11, 1005)
    data = os.urandom(3 * BPC)
    write(ds, r, data)
    with open(r.data_path, "r+b") as f:      # the data of the last chunk was lost
        f.truncate(2 * BPC + 10)
    loaded = restart(tmp_path).get(11)
    # the checksum of chunk 2 covered 512 bytes; only 10 are left: cut to 2 chunks
    assert loaded.num_bytes == 2 * BPC
    assert open(loaded.data_path, "rb").read() == data[:2 * BPC]
    assert meta_sums(loaded.meta_path) == crcs(data[:2 * BPC])


def test_restart_of_an_empty_rbw_replica(tmp_path):
    ds = dataset(tmp_path)
    ds.create_rbw(12, 1006)
    loaded = restart(tmp_path).get(12)
    assert (loaded.state, loaded.num_bytes) == ("RWR", 0)


def test_restart_deletes_temporary_replicas(tmp_path):
    ds = dataset(tmp_path)
    t = ds.create_temporary(13, 1007)
    write(ds, t, os.urandom(700))
    assert files(tmp_path, "tmp") == ["blk_13", "blk_13_1007.meta"]
    ds2 = restart(tmp_path)
    assert ds2.get(13) is None
    assert files(tmp_path, "tmp") == []


def test_gs_is_in_the_meta_file_name_and_a_bump_renames_it(tmp_path):
    ds = dataset(tmp_path)
    r = ds.create_rbw(14, 1008)
    data = os.urandom(1500)
    write(ds, r, data)
    r.bytes_acked = 1000
    ds.recover_rbw(14, 1008, 1010, min_bytes=1000, max_bytes=1500)   # pipeline recovery
    assert r.gs == 1010 and r.num_bytes == 1000 and r.state == "RBW"
    assert files(tmp_path, "rbw") == ["blk_14", "blk_14_1010.meta"]
    assert meta_sums(r.meta_path) == crcs(data[:1000])          # last partial chunk re-summed
    ds.recover_close(14, 1011, expected_len=1000)
    assert r.state == "FINALIZED" and r.gs == 1011
    assert files(tmp_path, "finalized") == ["blk_14", "blk_14_1011.meta"]
    loaded = restart(tmp_path).get(14)
    assert (loaded.gs, loaded.state, loaded.num_bytes) == (1011, "FINALIZED", 1000)


def test_append_reopens_a_finalized_replica_with_a_new_gs(tmp_path):
    ds = dataset(tmp_path)
    r = ds.create_rbw(15, 1000)
    write(ds, r, b"x" * 600)
    ds.finalize(r)
    with pytest.raises(ReplicaNotFoundException):
        ds.append(15, 999, 1001, 600)                        # wrong GS
    with pytest.raises(ReplicaNotFoundException):
        ds.append(15, 1000, 1001, 601)                       # wrong length
    ds.append(15, 1000, 1001, 600)
    assert (r.state, r.gs) == ("RBW", 1001)
    write(ds, r, b"y" * 100, offset=600)
    assert files(tmp_path, "rbw") == ["blk_15", "blk_15_1001.meta"]
    loaded = restart(tmp_path).get(15)
    assert (loaded.state, loaded.gs, loaded.num_bytes) == ("RWR", 1001, 700)
    assert open(loaded.data_path, "rb").read() == b"x" * 600 + b"y" * 100


def test_restart_keeps_the_newest_of_two_meta_files(tmp_path):
    ds = dataset(tmp_path)
    r = ds.create_rbw(16, 1000)
    data = os.urandom(1024)
    write(ds, r, data)
    ds.finalize(r)
    # a crash in the middle of a GS bump: an old meta file is left behind
    folder = os.path.join(str(tmp_path), "current", "finalized")
    with open(os.path.join(folder, "blk_16_999.meta"), "wb") as f:
        f.write(open(r.meta_path, "rb").read())
    loaded = restart(tmp_path).get(16)
    assert loaded.gs == 1000
    assert files(tmp_path, "finalized") == ["blk_16", "blk_16_1000.meta"]


def test_restart_drops_a_meta_file_without_data(tmp_path):
    folder = tmp_path / "current" / "rbw"
    folder.mkdir(parents=True)
    (folder / "blk_17_1000.meta").write_bytes(struct.pack(">HBI", 1, 1, BPC))
    ds = restart(tmp_path)
    assert ds.get(17) is None and files(tmp_path, "rbw") == []


def test_finalized_copy_wins_over_a_stale_rbw_copy(tmp_path):
    ds = dataset(tmp_path)
    r = ds.create_rbw(18, 1000)
    write(ds, r, b"z" * 512)
    ds.finalize(r)
    rbw = tmp_path / "current" / "rbw"
    (rbw / "blk_18").write_bytes(b"z" * 100)
    (rbw / "blk_18_999.meta").write_bytes(struct.pack(">HBI", 1, 1, BPC)
                                          + struct.pack(">I", zlib.crc32(b"z" * 100)))
    ds2 = restart(tmp_path)
    assert ds2.get(18).state == "FINALIZED" and ds2.get(18).num_bytes == 512
    assert files(tmp_path, "rbw") == []


def test_invalidate_deletes_only_the_named_generation(tmp_path):
    """FsDatasetImpl.invalidate: the GS must match exactly, older or newer."""
    ds = dataset(tmp_path)
    r = ds.create_rbw(19, 1005)
    write(ds, r, b"a" * 10)
    ds.finalize(r)
    assert ds.invalidate(19, 1004) is False       # an older GS: the replica is newer
    assert ds.invalidate(19, 1006) is False       # a newer GS: the replica is older
    assert ds.get(19) is r and len(files(tmp_path, "finalized")) == 2
    failed = [e for e in ds.emit if e["event"] == "dn.replica.invalidate_failed"]
    assert [(e["gs"], e["replica_gs"]) for e in failed] == [(1004, 1005), (1006, 1005)]
    assert ds.invalidate(19, 1005) is True
    assert ds.get(19) is None and files(tmp_path, "finalized") == []
    assert ds.emit[-1]["state"] == "DELETED"


class _Writer:
    """A BlockReceiver stand-in that records whether anyone stopped it."""

    def __init__(self):
        self.stopped = False

    def stop(self, timeout):
        self.stopped = True


def test_invalidate_leaves_the_writer_running_and_its_finalize_fails(tmp_path):
    """FsDatasetImpl.invalidate takes the replica out of the map and deletes its files,
    without stopping its BlockReceiver: the writer writes on into the deleted files, and
    finalizeBlock fails (ReplicaNotFoundException) as the replica is no longer mapped."""
    ds = dataset(tmp_path)
    r = ds.create_rbw(20, 1001)
    r.writer = writer = _Writer()
    fds = ds.open_for_write(r)
    try:
        ds.write_packet(r, fds[0], fds[1], 0, b"b" * 512, wire.chunk_checksums(b"b" * 512, BPC))
        assert ds.invalidate(20, 1001) is True
        assert not writer.stopped and r.writer is writer
        assert ds.get(20) is None and files(tmp_path, "rbw") == []
        # the writer goes on: its open files take the next packet
        ds.write_packet(r, fds[0], fds[1], 512, b"c" * 512, wire.chunk_checksums(b"c" * 512, BPC))
        assert r.num_bytes == 1024
    finally:
        for fd in fds:
            os.close(fd)
    with pytest.raises(ReplicaNotFoundException, match="replica not found"):
        ds.finalize(r)
    assert files(tmp_path, "finalized") == [] and ds.get(20) is None
