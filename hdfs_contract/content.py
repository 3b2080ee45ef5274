"""The workload's content: the bytes a writer puts at each offset of a path, a function
of (seed, path, offset), so the verifier can regenerate what any client wrote."""

from __future__ import annotations

import random

PAGE = 64 * 1024


# the name client.stream.open gives this generator (`content`): with harness.run.start's
# seed, Content(seed).get(path, offset, n) is every byte a workload client writes
CONTENT_NAME = "workload"


class Content:
    """The bytes a writer puts at each offset of a path: a function of (seed, path, offset)."""

    def __init__(self, seed: int):
        self.seed = seed
        self._cache: dict[tuple[str, int], bytes] = {}

    def page(self, path: str, index: int) -> bytes:
        key = (path, index)
        page = self._cache.get(key)
        if page is None:
            if len(self._cache) > 64:
                self._cache.clear()
            page = random.Random(f"{self.seed}:{path}:{index}").randbytes(PAGE)
            self._cache[key] = page
        return page

    def get(self, path: str, offset: int, n: int) -> bytes:
        out = bytearray()
        while n > 0:
            index, start = divmod(offset, PAGE)
            piece = self.page(path, index)[start:start + n]
            out += piece
            offset += len(piece)
            n -= len(piece)
        return bytes(out)
