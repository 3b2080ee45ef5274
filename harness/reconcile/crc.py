"""CRC-32 of a concatenation from the CRC-32s of its parts (zlib's crc32_combine).

`client.write` events carry the CRC-32 (zlib.crc32) of each range a writer handed to its
stream; `final_state.json` carries the CRC-32 of the whole file as read back. To compare
the two without the data, the range CRCs are combined in file order:
crc(A + B) = crc(A) * x^(8*len(B)) mod P  xor  crc(B), over GF(2), in zlib's reflected
bit order. `x^(8n) mod P` is built from a table of x^(2^k) by repeated multiplication
(zlib 1.2.12's x2nmodp) and cached per length, since writers use few distinct sizes.
"""

from __future__ import annotations

import functools
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


def crc32_of_ranges(ranges: Iterable[tuple[int, int]]) -> int:
    """CRC-32 of consecutive ranges given as (length, crc) in file order."""
    crc = 0
    for length, part in ranges:
        crc = crc32_combine(crc, part, length)
    return crc
