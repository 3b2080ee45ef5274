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


@functools.lru_cache(maxsize=1024)
def _shift_tables_np(len2: int):
    """Multiplication by x^(8*len2) mod P as four 256-entry tables, one per byte of the
    operand (the product of a sum is the sum of the products), in a (4, 256) uint32
    array. Built from the 32 images of single bits: the entry of a byte is the XOR of the
    images of its set bits."""
    import numpy as np
    op = _x8nmodp(len2)
    images = np.array([_multmodp(op, 1 << i) for i in range(32)], dtype=np.uint32)
    byte = np.arange(256, dtype=np.uint32)
    tables = np.zeros((4, 256), dtype=np.uint32)
    for k in range(4):
        for i in range(8):
            tables[k] ^= np.where((byte >> i) & 1, images[8 * k + i], np.uint32(0))
    return tables


@functools.lru_cache(maxsize=64)
def _shift_tables(len2: int) -> tuple[tuple[int, ...], ...]:
    """_shift_tables_np as tuples of Python ints, for the one-file loop below."""
    return tuple(tuple(row) for row in _shift_tables_np(len2).tolist())


# A length used this often in one call pays for its tables.
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


def _int_array(values):
    """`values` as an int64 array, or None when one is missing (None, or NaN: how Arrow
    hands over a null in an array of integers)."""
    import numpy as np
    a = np.asarray(values)
    if a.dtype == object:
        if any(v is None for v in a):
            return None
    elif a.dtype.kind == "f" and np.isnan(a).any():
        return None
    return a.astype(np.int64, copy=False)


def crc32_of_ranges_many(lens_per_file, crcs_per_file) -> list:
    """crc32_of_ranges for many files at once: file i's ranges are lens_per_file[i] and
    crcs_per_file[i] (sequences of equal length, in file order; None for a file gives
    None). The files are combined side by side, one range of each per step, with numpy:
    a step costs a few array operations per distinct range length among the files
    instead of a Python loop iteration per range. Memory is that of the ranges (kept in
    one flat array, the files longest first, so the files still going at a step are the
    first ones), whatever the mix of long and short files."""
    import numpy as np
    n = len(lens_per_file)
    out: list = [None] * n
    arrays = {}
    for i in range(n):
        if lens_per_file[i] is None or crcs_per_file[i] is None:
            continue
        pair = (_int_array(lens_per_file[i]), _int_array(crcs_per_file[i]))
        if pair[0] is None or pair[1] is None:    # a length or CRC missing: no CRC
            continue
        if len(pair[0]) != len(pair[1]):
            raise ValueError(f"file {i}: {len(pair[0])} lengths but {len(pair[1])} CRCs")
        arrays[i] = pair
    todo = sorted(arrays, key=lambda i: -len(arrays[i][0]))
    if not todo:
        return out
    counts = np.array([len(arrays[i][0]) for i in todo], dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    lens = np.concatenate([arrays[i][0] for i in todo])
    parts = (np.concatenate([arrays[i][1] for i in todo]) & 0xFFFFFFFF).astype(np.uint32)
    crc = np.zeros(len(todo), dtype=np.uint32)
    going = len(todo)
    for step in range(int(counts[0])):
        while counts[going - 1] <= step:     # the shortest files have no range left
            going -= 1
        at = starts[:going] + step
        col = lens[at]
        for length in np.unique(col):
            if length <= 0:                  # an empty range adds nothing
                continue
            rows = np.nonzero(col == length)[0]
            t = _shift_tables_np(int(length))
            c = crc[rows]
            crc[rows] = (t[0][c & 0xFF] ^ t[1][(c >> 8) & 0xFF] ^ t[2][(c >> 16) & 0xFF]
                         ^ t[3][c >> 24] ^ parts[at[rows]])
    for row, i in enumerate(todo):
        out[i] = int(crc[row])
    return out
