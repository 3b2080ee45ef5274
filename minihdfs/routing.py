"""Per-process routing maps: node id -> service -> address (MINIHDFS.md section 1).

Protocol messages name nodes by id only; a process turns an id into an address through
its own map. The harness gives each process a map in which peer Y is the Toxiproxy
proxy of the directed link X -> Y, so every link can be broken on its own.
"""

from __future__ import annotations

import json


class Routes:
    def __init__(self, table: dict[str, dict[str, str]]):
        self.table = table

    @classmethod
    def load(cls, path: str) -> "Routes":
        with open(path) as f:
            return cls(json.load(f))

    def addr(self, node: str, service: str) -> str:
        try:
            return self.table[node][service]
        except KeyError:
            raise KeyError(f"no route to {node}.{service}") from None

    def nodes(self, prefix: str = "") -> list[str]:
        return sorted((n for n in self.table if n.startswith(prefix)), key=_natural)


def _natural(node: str):
    head = node.rstrip("0123456789")
    tail = node[len(head):]
    return head, int(tail) if tail else 0
