"""BlockPlacementPolicyDefault (seed 001): where the replicas of a new block go.

First replica on the writer's node if the writer is a DataNode (else a random node),
the second on another rack, the third on the second's rack, the rest random; excluded,
stale and dead nodes are never chosen. The pipeline is then ordered by network
distance, starting from the writer.
"""

from __future__ import annotations

import random


def distance(rack_of: dict[str, str], a: str, b: str) -> int:
    """Network distance as Hadoop's NetworkTopology: same node 0, same rack 2, else 4."""
    if a == b:
        return 0
    ra, rb = rack_of.get(a), rack_of.get(b)
    return 2 if ra is not None and ra == rb else 4


class BlockPlacementPolicy:
    def __init__(self, rng: random.Random | None = None):
        self.rng = rng or random.Random()

    def choose_targets(self, writer: str, num: int, candidates: dict[str, str],
                       chosen: list[str] = (), excluded: set[str] = frozenset(),
                       rack_of: dict[str, str] | None = None) -> list[str]:
        """Choose `num` more nodes from `candidates` (node -> rack, the good nodes), given
        the nodes already `chosen` (for getAdditionalDatanode; `rack_of` knows their racks)."""
        pool = {n: r for n, r in candidates.items() if n not in excluded and n not in chosen}
        result = list(chosen)
        new: list[str] = []

        def take(options: list[str]) -> bool:
            options = [n for n in options if n in pool]
            if not options:
                return False
            node = self.rng.choice(sorted(options))
            del pool[node]
            result.append(node)
            new.append(node)
            return True

        racks = {**(rack_of or {}), **candidates}
        while len(new) < num and pool:
            k = len(result)
            if k == 0:
                if not (writer in pool and take([writer])):
                    take(list(pool))
            elif k == 1:
                first_rack = racks.get(result[0])
                if not take([n for n, r in pool.items() if r != first_rack]):
                    take(list(pool))
            elif k == 2:
                r0, r1 = racks.get(result[0]), racks.get(result[1])
                if r0 == r1:
                    ok = take([n for n, r in pool.items() if r != r0])
                else:
                    ok = take([n for n, r in pool.items() if r == r1])
                if not ok:
                    take(list(pool))
            else:
                take(list(pool))
        return new

    def pipeline_order(self, writer: str, nodes: list[str], rack_of: dict[str, str]) -> list[str]:
        """Order nodes as a pipeline: from the writer, always to the nearest remaining node."""
        remaining = list(nodes)
        order: list[str] = []
        current = writer
        while remaining:
            nxt = min(remaining, key=lambda n: (distance(rack_of, current, n), remaining.index(n)))
            order.append(nxt)
            remaining.remove(nxt)
            current = nxt
        return order
