"""harness.reconcile.crc: the CRC-32 of a file from the CRCs of its written ranges, as
the D2 content check combines them, against zlib over the real bytes."""

import random
import zlib

import numpy as np
import pytest

from harness.reconcile.crc import crc32_combine, crc32_of_ranges, crc32_of_ranges_many


def _file(rng, n, sizes):
    data = [rng.randbytes(rng.choice(sizes)) for _ in range(n)]
    return b"".join(data), [len(d) for d in data], [zlib.crc32(d) for d in data]


def test_combine_two_parts_matches_zlib():
    rng = random.Random(1)
    for _ in range(50):
        a, b = rng.randbytes(rng.randrange(0, 300)), rng.randbytes(rng.randrange(0, 300))
        assert crc32_combine(zlib.crc32(a), zlib.crc32(b), len(b)) == zlib.crc32(a + b)


def test_ranges_one_file_and_many_files_match_zlib():
    rng = random.Random(2)
    files = [_file(rng, 0, [1])]                              # an empty file: CRC 0
    files.append(_file(rng, 100, [7]))                        # one length 100 times (tables)
    files.append(_file(rng, 90, [7, 64, 65]))                 # a few recurring lengths
    files += [_file(rng, rng.randrange(1, 40), [0, 1, 3, 500, 4096]) for _ in range(20)]
    want = [zlib.crc32(data) for data, _, _ in files]
    assert [crc32_of_ranges(zip(lens, crcs)) for _, lens, crcs in files] == want
    assert crc32_of_ranges_many([f[1] for f in files], [f[2] for f in files]) == want


def test_many_files_without_a_length_or_crc_get_none():
    rng = random.Random(3)
    data, lens, crcs = _file(rng, 5, [10, 20])
    got = crc32_of_ranges_many([lens, None, lens, [10, None], lens],
                               [crcs, crcs, None, [1, 2], [None] * 5])
    assert got == [zlib.crc32(data), None, None, None, None]
    assert crc32_of_ranges_many([], []) == []
    # a null in an array of integers reaches a pandas UDF as NaN in a float array
    nan = np.array([10.0, np.nan])
    assert crc32_of_ranges_many([nan, np.array(lens, dtype=float)],
                                [np.array([1, 2]), np.array(crcs)]) == [None, zlib.crc32(data)]


def test_many_files_with_unequal_lengths_and_crcs_is_an_error():
    with pytest.raises(ValueError, match="2 lengths but 1 CRCs"):
        crc32_of_ranges_many([[1, 2]], [[5]])
