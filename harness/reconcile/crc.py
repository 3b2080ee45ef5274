"""CRC-32 of a concatenation from the CRC-32s of its parts (zlib's crc32_combine).

`client.write` events carry the CRC-32 (zlib.crc32) of each range a writer handed to its
stream; `final_state.json` carries the CRC-32 of the whole file as read back. To compare
the two without the data, the range CRCs are combined in file order:
crc(A + B) = crc(A) * x^(8*len(B)) mod P  xor  crc(B), over GF(2), in zlib's reflected
bit order. `x^(8n) mod P` is built from a table of x^(2^k) by repeated multiplication
(zlib 1.2.12's x2nmodp) and cached per length, since writers use few distinct sizes.
Multiplying by a fixed x^(8n) is linear over GF(2), so for a length that recurs (every
packet of a stream has the same size) it becomes four table look-ups, one per byte.
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import Iterable

POLY = 0xEDB88320  # CRC-32 (IEEE 802.3), reflected


def _multmodp(a: int, b: int) -> int:
    """a(x) * b(x) mod P(x), reflected: bit 31 is x^0."""
    m = 1 << 31
    p = 0
    while True:
        if a & m:
            p ^= b
            if (a & (m - 1)) == 0:
                break
        m >>= 1
        b = (b >> 1) ^ POLY if b & 1 else b >> 1
    return p


def _x2n_table() -> list[int]:
    table = [0] * 64
    p = 1 << 30  # x^1
    table[0] = p
    for n in range(1, 64):
        p = _multmodp(p, p)
        table[n] = p
    return table


_X2N = _x2n_table()


@functools.lru_cache(maxsize=4096)
def _x8nmodp(n: int) -> int:
    """x^(8n) mod P."""
    p = 1 << 31  # x^0
    k = 3
    while n:
        if n & 1:
            p = _multmodp(_X2N[k & 63], p)
        n >>= 1
        k += 1
    return p


def crc32_combine(crc1: int, crc2: int, len2: int) -> int:
    """CRC-32 of A+B from crc1 = crc32(A), crc2 = crc32(B) and len2 = len(B)."""
    if len2 <= 0:
        return crc1 & 0xFFFFFFFF
    return (_multmodp(_x8nmodp(len2), crc1 & 0xFFFFFFFF) ^ crc2) & 0xFFFFFFFF


@functools.lru_cache(maxsize=64)
def _shift_tables(len2: int) -> tuple[tuple[int, ...], ...]:
    """Multiplication by x^(8*len2) mod P as four 256-entry tables, one per byte of the
    operand (the product of a sum is the sum of the products)."""
    op = _x8nmodp(len2)
    return tuple(tuple(_multmodp(op, b << (8 * k)) for b in range(256)) for k in range(4))


# A length used this often in one call pays for its tables (1024 multiplications).
_TABLE_MIN_USES = 64


def crc32_of_ranges(ranges: Iterable[tuple[int, int]]) -> int:
    """CRC-32 of consecutive ranges given as (length, crc) in file order."""
    ranges = list(ranges)
    uses = Counter(length for length, _ in ranges)
    tables = {n: _shift_tables(n) for n, k in uses.items()
              if k >= _TABLE_MIN_USES and n is not None and n > 0}
    crc = 0
    for length, part in ranges:
        t = tables.get(length)
        if t is None:
            crc = crc32_combine(crc, part, length)
        else:
            crc = (t[0][crc & 0xFF] ^ t[1][(crc >> 8) & 0xFF] ^ t[2][(crc >> 16) & 0xFF]
                   ^ t[3][crc >> 24] ^ part) & 0xFFFFFFFF
    return crc
