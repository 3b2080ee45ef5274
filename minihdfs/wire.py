"""The wire format of the mini-HDFS, kept in this one module so it can be replaced later.

Two kinds of frames travel over TCP, both length-prefixed (4 bytes, big endian):
- message frames: a UTF-8 JSON object (RPC requests and replies, data-transfer op
  headers, connect-acks);
- packet frames (the data streaming protocol of DataTransferProtocol): a fixed binary
  header (seqno, offset in block, flags, data length), one checksum per chunk, then the
  data; and pipeline acks (seqno and one status per DataNode, binary).

A malformed frame raises `MalformedFrame`; servers answer it with an error or close the
connection and go on serving.
"""

from __future__ import annotations

import json
import socket
import struct
import zlib

MAX_MESSAGE = 16 * 1024 * 1024
MAX_PACKET = 64 * 1024 * 1024

_LEN = struct.Struct(">I")
_PACKET_HEADER = struct.Struct(">qqBI")   # seqno, offset in block, flags, data length
_ACK_HEADER = struct.Struct(">qB")        # seqno, number of statuses

FLAG_LAST = 1
FLAG_SYNC = 2
HEARTBEAT_SEQNO = -1
OOB_SEQNO = -2                # an out-of-band ack (Hadoop's PipelineAck.UNKOWN_SEQNO)

# Pipeline ack statuses (Hadoop's DataTransferProtos.Status, the ones we use)
SUCCESS = 0
ERROR = 1
ERROR_CHECKSUM = 2
OOB_RESTART = 8
STATUS_NAMES = {SUCCESS: "SUCCESS", ERROR: "ERROR", ERROR_CHECKSUM: "ERROR_CHECKSUM",
                OOB_RESTART: "OOB_RESTART"}

# Checksum types, as in the meta file header
CHECKSUM_CRC32 = 1
CHECKSUM_CRC32C = 2


class MalformedFrame(Exception):
    """The peer sent bytes that are not a frame of this protocol."""


class ConnectionClosed(EOFError):
    """The peer closed the connection (cleanly, at a frame boundary, or in the middle)."""


def recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        r = sock.recv_into(view[got:], n - got)
        if r == 0:
            raise ConnectionClosed(f"connection closed after {got} of {n} bytes")
        got += r
    return bytes(buf)


def send_message(sock: socket.socket, obj: dict) -> None:
    body = json.dumps(obj, separators=(",", ":")).encode()
    sock.sendall(_LEN.pack(len(body)) + body)


def recv_message(sock: socket.socket) -> dict:
    (n,) = _LEN.unpack(recv_exact(sock, 4))
    if n > MAX_MESSAGE:
        raise MalformedFrame(f"message frame of {n} bytes exceeds {MAX_MESSAGE}")
    body = recv_exact(sock, n)
    try:
        obj = json.loads(body)
    except (UnicodeDecodeError, ValueError) as e:
        raise MalformedFrame(f"message frame is not JSON: {e}") from None
    if not isinstance(obj, dict):
        raise MalformedFrame("message frame is not a JSON object")
    return obj


# -- checksums -------------------------------------------------------------------------

def _crc32c_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC32C (Castagnoli) in pure Python: correct but slow; CRC32 is the fast default."""
    c = 0xFFFFFFFF
    t = _CRC32C
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def checksum_fn(kind: str):
    return zlib.crc32 if kind == "CRC32" else crc32c


_CUTS: dict[tuple[int, int], list[slice]] = {}
_SUMS: dict[int, struct.Struct] = {}


def chunk_checksums(data: bytes | memoryview, bpc: int, fn=zlib.crc32) -> bytes:
    """One 4-byte big-endian checksum per `bpc`-byte chunk of `data`."""
    view = memoryview(data)
    key = (-(-len(view) // bpc), bpc)   # (chunks, bpc): a short last chunk is cut short
    cuts = _CUTS.get(key)
    if cuts is None:   # the chunk slices, made once per chunk count
        cuts = _CUTS.setdefault(key, [slice(i * bpc, (i + 1) * bpc) for i in range(key[0])])
    packer = _SUMS.get(len(cuts))
    if packer is None:
        packer = _SUMS.setdefault(len(cuts), struct.Struct(f">{len(cuts)}I"))
    return packer.pack(*map(fn, map(view.__getitem__, cuts)))


def first_bad_chunk(data: bytes | memoryview, sums: bytes | memoryview, bpc: int,
                    fn=zlib.crc32) -> int:
    """Index of the first chunk whose checksum does not match, or -1."""
    mine = chunk_checksums(data, bpc, fn)
    if mine == sums:
        return -1
    sums = bytes(sums)
    for k in range(0, max(len(mine), len(sums)), 4):
        if mine[k:k + 4] != sums[k:k + 4]:
            return k // 4
    return -1


# -- packets ---------------------------------------------------------------------------

class Packet:
    """One packet of the streaming protocol: a run of chunks of one block, with their checksums."""

    __slots__ = ("seqno", "offset", "flags", "data", "sums")

    def __init__(self, seqno: int, offset: int, data: bytes, sums: bytes, flags: int = 0):
        self.seqno, self.offset, self.data, self.sums, self.flags = seqno, offset, data, sums, flags

    @property
    def last(self) -> bool:
        return bool(self.flags & FLAG_LAST)

    @property
    def sync(self) -> bool:
        return bool(self.flags & FLAG_SYNC)

    @property
    def end(self) -> int:
        return self.offset + len(self.data)

    def encode(self) -> bytes:
        return b"".join(self.parts())

    def parts(self) -> list:
        """The frame as pieces, for sendmsg: the data is not copied into a new buffer."""
        header = _PACKET_HEADER.pack(self.seqno, self.offset, self.flags, len(self.data))
        return [_LEN.pack(len(header) + len(self.sums) + len(self.data)) + header + self.sums,
                self.data]

    def send(self, sock: socket.socket) -> None:
        parts = self.parts()
        total = len(parts[0]) + len(parts[1])
        sent = sock.sendmsg(parts)
        if sent < total:   # a partial send: the rest the ordinary way
            sock.sendall(b"".join(parts)[sent:])

    def __repr__(self) -> str:
        return f"Packet(seqno={self.seqno}, offset={self.offset}, len={len(self.data)}, flags={self.flags})"


class FrameReader:
    """Reads the binary frames (packets, acks) of one connection through one reusable
    buffer: a single recv usually brings a whole packet, often the start of the next too,
    and nothing is allocated per frame. A frame it returns stays valid (and its length
    fixed) only until the next read; the caller writes or forwards it before then.

    The reader owns the connection's incoming bytes from its first read on: it may read
    ahead, so nothing else may read the socket after it."""

    def __init__(self, sock: socket.socket, capacity: int = 256 * 1024):
        self.sock = sock
        self.buf = bytearray(capacity)
        self.view = memoryview(self.buf)
        self.start = self.end = 0

    def _fill(self, need: int, what: str) -> None:
        """Make `need` bytes from `start` available (the buffer grows for a larger frame)."""
        if self.start + need > len(self.buf):
            pending = self.buf[self.start:self.end]   # a copy: the move never overlaps itself
            if need > len(self.buf):
                self.buf = bytearray(max(need, 2 * len(self.buf)))
                self.view = memoryview(self.buf)
            self.buf[:len(pending)] = pending
            self.start, self.end = 0, len(pending)
        while self.end - self.start < need:
            r = self.sock.recv_into(self.view[self.end:], len(self.buf) - self.end)
            if r == 0:
                raise ConnectionClosed(f"connection closed after {self.end - self.start} of "
                                       f"{need} bytes of {what}")
            self.end += r

    def frame(self, low: int, high: int, what: str) -> memoryview:
        """The next length-prefixed frame, prefix included; its body is low..high bytes."""
        self._fill(4, what)
        (n,) = _LEN.unpack_from(self.buf, self.start)
        if n < low or n > high:
            raise MalformedFrame(f"{what} frame of {n} bytes")
        self._fill(4 + n, what)
        frame = self.view[self.start:self.start + 4 + n]
        self.start += 4 + n
        if self.start == self.end:
            self.start = self.end = 0
        return frame

    def packet(self, bpc: int) -> tuple[Packet, memoryview]:
        """recv_packet through this reader."""
        return _parse_packet(self.frame(_PACKET_HEADER.size, MAX_PACKET, "packet"), bpc)

    def ack(self) -> tuple[int, list[int]]:
        """recv_ack through this reader."""
        return _parse_ack(self.frame(_ACK_HEADER.size, 1024, "ack"))


def recv_packet(sock: socket.socket, bpc: int) -> tuple[Packet, memoryview]:
    """Read one packet, and not a byte more; returns it and its raw frame (for forwarding
    to the mirror as is). Streams of packets go through a FrameReader."""
    raw_len = recv_exact(sock, 4)
    (n,) = _LEN.unpack(raw_len)
    if n < _PACKET_HEADER.size or n > MAX_PACKET:
        raise MalformedFrame(f"packet frame of {n} bytes")
    frame = bytearray(4 + n)
    frame[:4] = raw_len
    view = memoryview(frame)
    got = 4
    while got < len(frame):   # receive straight into the frame we forward to the mirror
        r = sock.recv_into(view[got:], len(frame) - got)
        if r == 0:
            raise ConnectionClosed(f"connection closed after {got - 4} of {n} packet bytes")
        got += r
    return _parse_packet(view, bpc)


def _parse_packet(view: memoryview, bpc: int) -> tuple[Packet, memoryview]:
    n = len(view) - 4
    seqno, offset, flags, dlen = _PACKET_HEADER.unpack_from(view, 4)
    nsums = 4 * ((dlen + bpc - 1) // bpc)
    if _PACKET_HEADER.size + nsums + dlen != n or offset < 0 or flags & ~3:
        raise MalformedFrame(f"inconsistent packet header (len {n}, data {dlen}, offset {offset})")
    h = 4 + _PACKET_HEADER.size
    return Packet(seqno, offset, view[h + nsums:], view[h:h + nsums], flags), view


# -- pipeline acks ---------------------------------------------------------------------

def encode_ack(seqno: int, statuses: list[int]) -> bytes:
    body = _ACK_HEADER.pack(seqno, len(statuses)) + bytes(statuses)
    return _LEN.pack(len(body)) + body


def recv_ack(sock: socket.socket) -> tuple[int, list[int]]:
    (n,) = _LEN.unpack(recv_exact(sock, 4))
    if n < _ACK_HEADER.size or n > 1024:
        raise MalformedFrame(f"ack frame of {n} bytes")
    return _parse_ack(_LEN.pack(n) + recv_exact(sock, n))


def _parse_ack(frame: bytes | memoryview) -> tuple[int, list[int]]:
    seqno, count = _ACK_HEADER.unpack_from(frame, 4)
    if 4 + _ACK_HEADER.size + count != len(frame):
        raise MalformedFrame("inconsistent ack frame")
    return seqno, list(frame[4 + _ACK_HEADER.size:])


# -- addresses -------------------------------------------------------------------------

def parse_addr(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"address {text!r}: expected HOST:PORT")
    return host, int(port)


def connect(addr: str, timeout: float) -> socket.socket:
    host, port = parse_addr(addr)
    sock = socket.create_connection((host, port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock
