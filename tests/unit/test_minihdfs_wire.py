"""The wire format: message frames, packets with per-chunk checksums, pipeline acks,
over real socket pairs; malformed frames raise MalformedFrame."""

from __future__ import annotations

import json
import os
import socket
import struct
import threading
import zlib

import pytest

from minihdfs import wire

BPC = 512


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    a.settimeout(10)
    b.settimeout(10)
    yield a, b
    a.close()
    b.close()


def send_in_thread(sock: socket.socket, data: bytes, close: bool = False) -> threading.Thread:
    """Large frames do not fit a socket buffer: write them while the test reads."""
    def run():
        try:
            sock.sendall(data)
            if close:
                sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


@pytest.fixture(params=["recv_packet", "FrameReader-small", "FrameReader"])
def read_packet(request):
    """The two ways to read packets: one exact frame at a time, or a stream through a
    FrameReader (one per socket; a small one must grow and move its bytes)."""
    if request.param == "recv_packet":
        return wire.recv_packet
    readers: dict = {}
    capacity = 100 if request.param == "FrameReader-small" else 256 * 1024

    def read(sock, bpc):
        return readers.setdefault(sock, wire.FrameReader(sock, capacity)).packet(bpc)
    return read


@pytest.fixture(params=["recv_ack", "FrameReader"])
def read_ack(request):
    if request.param == "recv_ack":
        return wire.recv_ack
    readers: dict = {}
    return lambda sock: readers.setdefault(sock, wire.FrameReader(sock, 64)).ack()


def packet(seqno: int, offset: int, data: bytes, flags: int = 0, fn=zlib.crc32) -> wire.Packet:
    return wire.Packet(seqno, offset, data, wire.chunk_checksums(data, BPC, fn), flags)


# -- checksums -------------------------------------------------------------------------

def test_chunk_checksums_are_one_big_endian_crc_per_chunk():
    data = os.urandom(3 * BPC + 100)
    sums = wire.chunk_checksums(data, BPC)
    assert len(sums) == 4 * 4
    expected = [zlib.crc32(data[i:i + BPC]) for i in range(0, len(data), BPC)]
    assert list(struct.unpack(">4I", sums)) == expected
    assert wire.chunk_checksums(b"", BPC) == b""


def test_crc32c_known_answer():
    assert wire.crc32c(b"123456789") == 0xE3069283
    assert wire.crc32c(b"") == 0
    assert wire.checksum_fn("CRC32") is zlib.crc32
    assert wire.checksum_fn("CRC32C") is wire.crc32c


def test_first_bad_chunk_finds_the_corrupt_chunk():
    data = bytearray(os.urandom(5 * BPC))
    sums = wire.chunk_checksums(bytes(data), BPC)
    assert wire.first_bad_chunk(bytes(data), sums, BPC) == -1
    assert wire.first_bad_chunk(memoryview(bytes(data)), memoryview(sums), BPC) == -1
    data[3 * BPC + 7] ^= 0xFF
    assert wire.first_bad_chunk(bytes(data), sums, BPC) == 3
    data[BPC] ^= 0x01
    assert wire.first_bad_chunk(bytes(data), sums, BPC) == 1
    # a bad checksum rather than bad data is found the same way
    good = bytes(os.urandom(2 * BPC))
    bad_sums = bytearray(wire.chunk_checksums(good, BPC))
    bad_sums[5] ^= 0x10
    assert wire.first_bad_chunk(good, bytes(bad_sums), BPC) == 1


def test_first_bad_chunk_with_crc32c():
    data = bytearray(os.urandom(2 * BPC + 3))
    sums = wire.chunk_checksums(bytes(data), BPC, wire.crc32c)
    assert wire.first_bad_chunk(bytes(data), sums, BPC, wire.crc32c) == -1
    data[-1] ^= 0x80
    assert wire.first_bad_chunk(bytes(data), sums, BPC, wire.crc32c) == 2


# -- message frames --------------------------------------------------------------------

def test_message_round_trip(pair):
    a, b = pair
    msg = {"op": "WRITE_BLOCK", "block": 1073741825, "targets": ["dn2", "dn3"], "é": "ü"}
    wire.send_message(a, msg)
    wire.send_message(a, {})
    assert wire.recv_message(b) == msg
    assert wire.recv_message(b) == {}


def test_message_too_large_is_malformed(pair):
    a, b = pair
    a.sendall(struct.pack(">I", wire.MAX_MESSAGE + 1))
    with pytest.raises(wire.MalformedFrame):
        wire.recv_message(b)


@pytest.mark.parametrize("body", [b"not json at all", b"\xff\xfe\x00garbage",
                                  b'["a", "list"]', b"42", b'{"unterminated": '])
def test_message_that_is_not_a_json_object_is_malformed(pair, body):
    a, b = pair
    a.sendall(struct.pack(">I", len(body)) + body)
    with pytest.raises(wire.MalformedFrame):
        wire.recv_message(b)


def test_message_cut_short_is_a_closed_connection(pair):
    a, b = pair
    body = json.dumps({"op": "x"}).encode()
    a.sendall(struct.pack(">I", len(body) + 50) + body)
    a.shutdown(socket.SHUT_WR)
    with pytest.raises(wire.ConnectionClosed):
        wire.recv_message(b)


def test_connection_closed_between_frames(pair):
    a, b = pair
    a.shutdown(socket.SHUT_WR)
    with pytest.raises(wire.ConnectionClosed):
        wire.recv_message(b)
    assert issubclass(wire.ConnectionClosed, EOFError)


# -- packets ---------------------------------------------------------------------------

def test_packet_round_trip(read_packet, pair):
    a, b = pair
    data = os.urandom(64 * 1024 + 300)                 # not a whole number of chunks
    sent = [packet(0, 0, data), packet(1, len(data), b"tail", wire.FLAG_SYNC),
            packet(wire.HEARTBEAT_SEQNO, 0, b""), packet(2, len(data) + 4, b"", wire.FLAG_LAST)]
    t = send_in_thread(a, b"".join(p.encode() for p in sent))
    for want in sent:
        got, raw = read_packet(b, BPC)
        assert (got.seqno, got.offset, got.flags) == (want.seqno, want.offset, want.flags)
        assert bytes(got.data) == want.data and bytes(got.sums) == want.sums
        assert bytes(raw) == want.encode()              # forwarded as is to the mirror
        assert got.end == want.offset + len(want.data)
        assert wire.first_bad_chunk(got.data, got.sums, BPC) == -1
    t.join(10)
    got = sent[1]
    assert got.sync and not got.last and sent[3].last and not sent[3].sync


def test_corrupt_packet_data_is_caught_by_first_bad_chunk(read_packet, pair):
    a, b = pair
    data = os.urandom(4 * BPC)
    frame = bytearray(packet(5, 1024, data).encode())
    frame[-10] ^= 0x55                                   # a byte of the 4th chunk
    a.sendall(bytes(frame))
    got, _ = read_packet(b, BPC)
    assert wire.first_bad_chunk(got.data, got.sums, BPC) == 3
    assert got.offset + 3 * BPC == 1024 + 1536


def test_packet_frame_too_large_is_malformed(read_packet, pair):
    a, b = pair
    a.sendall(struct.pack(">I", wire.MAX_PACKET + 1))
    with pytest.raises(wire.MalformedFrame):
        read_packet(b, BPC)


def test_packet_frame_shorter_than_its_header_is_malformed(read_packet, pair):
    a, b = pair
    a.sendall(struct.pack(">I", 5) + b"12345")
    with pytest.raises(wire.MalformedFrame):
        read_packet(b, BPC)


@pytest.mark.parametrize("case", ["data_len_too_big", "data_len_too_small", "sums_missing",
                                  "negative_offset", "unknown_flags"])
def test_inconsistent_packet_header_is_malformed(read_packet, pair, case):
    a, b = pair
    data = os.urandom(1000)
    sums = wire.chunk_checksums(data, BPC)
    seqno, offset, flags, dlen = 3, 0, 0, len(data)
    if case == "data_len_too_big":
        dlen += 1
    elif case == "data_len_too_small":
        dlen -= 600
    elif case == "sums_missing":
        sums = sums[:4]
    elif case == "negative_offset":
        offset = -512
    elif case == "unknown_flags":
        flags = 0x80
    header = struct.pack(">qqBI", seqno, offset, flags, dlen)
    body = header + sums + data
    a.sendall(struct.pack(">I", len(body)) + body)
    with pytest.raises(wire.MalformedFrame):
        read_packet(b, BPC)


def test_packet_cut_short_is_a_closed_connection(read_packet, pair):
    a, b = pair
    frame = packet(0, 0, os.urandom(2000)).encode()
    a.sendall(frame[:len(frame) // 2])
    a.shutdown(socket.SHUT_WR)
    with pytest.raises(wire.ConnectionClosed):
        read_packet(b, BPC)


# -- acks ------------------------------------------------------------------------------

def test_ack_round_trip(read_ack, pair):
    a, b = pair
    for seqno, statuses in ((0, [wire.SUCCESS]), (7, [wire.SUCCESS, wire.ERROR, wire.SUCCESS]),
                            (wire.HEARTBEAT_SEQNO, [wire.SUCCESS] * 3),
                            (2 ** 40, [wire.ERROR_CHECKSUM]), (9, [wire.OOB_RESTART]), (10, [])):
        a.sendall(wire.encode_ack(seqno, statuses))
        assert read_ack(b) == (seqno, statuses)


@pytest.mark.parametrize("frame", [
    struct.pack(">I", 3) + b"abc",                                      # shorter than a header
    struct.pack(">I", 5000),                                            # too large
    struct.pack(">I", 9 + 2) + struct.pack(">qB", 1, 3) + b"\x00\x00",  # says 3, carries 2
])
def test_malformed_acks(read_ack, pair, frame):
    a, b = pair
    a.sendall(frame)
    with pytest.raises(wire.MalformedFrame):
        read_ack(b)


def test_frame_reader_takes_frames_from_one_recv_and_across_recvs(pair):
    """Several packets and acks in one burst, then a packet dribbled in 7-byte pieces:
    the reader hands out each frame whole, in order."""
    a, b = pair
    data = os.urandom(3 * BPC)
    burst = [packet(i, i * len(data), data) for i in range(3)]
    a.sendall(b"".join(p.encode() for p in burst) + wire.encode_ack(4, [wire.SUCCESS]))
    reader = wire.FrameReader(b, 8 * 1024)
    for want in burst:
        got, raw = reader.packet(BPC)
        assert bytes(raw) == want.encode()
    assert reader.ack() == (4, [wire.SUCCESS])
    frame = packet(9, 0, data, wire.FLAG_SYNC).encode()

    def dribble():
        for i in range(0, len(frame), 7):
            a.sendall(frame[i:i + 7])
    t = threading.Thread(target=dribble, daemon=True)
    t.start()
    got, raw = reader.packet(BPC)
    t.join(10)
    assert (got.seqno, bytes(got.data), got.sync) == (9, data, True)


def test_frame_reader_closed_between_frames_and_mid_frame(pair):
    a, b = pair
    frame = packet(0, 0, os.urandom(1000)).encode()
    a.sendall(frame + frame[:10])
    a.shutdown(socket.SHUT_WR)
    reader = wire.FrameReader(b)
    reader.packet(BPC)
    with pytest.raises(wire.ConnectionClosed, match="10 of"):
        reader.packet(BPC)


def test_parse_addr():
    assert wire.parse_addr("127.0.0.1:9000") == ("127.0.0.1", 9000)
    for bad in ("127.0.0.1", ":9000", "host:port", ""):
        with pytest.raises(ValueError):
            wire.parse_addr(bad)
