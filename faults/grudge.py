"""Grudges and links: who can no longer reach whom, as plain data.

A grudge (the word is Jepsen's) maps each node to the set of nodes it cannot reach.
`{"dn1": {"dn2"}}` means dn1's attempts to reach dn2 fail; it says nothing about dn2
reaching dn1. Grudges are built here without touching any network, so they can be
printed, compared, logged and unit-tested; `faults.network.Partition` applies one.

A link is a directed pair `(src, dst)`: the connections `src` opens to `dst`. Scenario
YAML gives links as two-element lists; `as_links` turns those into tuples.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

Link = tuple[str, str]


class Grudge(Mapping[str, frozenset[str]]):
    """An immutable map node -> nodes it cannot reach (nodes with no grudge are left out).

    Compares equal to a plain dict of sets with the same content, prints sorted, and
    converts to JSON-able data with `to_json()`.
    """

    def __init__(self, grudges: Mapping[str, Iterable[str]] | None = None):
        data: dict[str, frozenset[str]] = {}
        for node, rejected in (grudges or {}).items():
            _check_node(node)
            if isinstance(rejected, str):
                raise ValueError(f"grudge of {node!r} must be a collection of nodes, "
                                 f"not the string {rejected!r}")
            targets = frozenset(rejected)
            for other in targets:
                _check_node(other)
            if node in targets:
                raise ValueError(f"node {node!r} cannot hold a grudge against itself")
            if targets:
                data[node] = targets
        self._data = data

    def __getitem__(self, node: str) -> frozenset[str]:
        return self._data[node]

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._data))

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        return hash(frozenset(self._data.items()))

    def __repr__(self) -> str:
        inner = ", ".join(f"{n!r}: {sorted(self._data[n])!r}" for n in self)
        return f"Grudge({{{inner}}})"

    def links(self) -> list[Link]:
        """Every directed link this grudge cuts, sorted."""
        return sorted((src, dst) for src, targets in self._data.items() for dst in targets)

    def nodes(self) -> frozenset[str]:
        """Every node the grudge names, on either side."""
        return frozenset(self._data).union(*self._data.values()) if self._data else frozenset()

    def to_json(self) -> dict[str, list[str]]:
        """`{node: [sorted nodes]}`, for event logs and reports."""
        return {n: sorted(self._data[n]) for n in self}

    def __or__(self, other: Mapping[str, Iterable[str]]) -> "Grudge":
        return merge(self, other)


def _check_node(node: Any) -> None:
    if not isinstance(node, str) or not node:
        raise ValueError(f"a node id must be a non-empty string, got {node!r}")


def as_links(links: Iterable[Iterable[str]]) -> list[Link]:
    """Normalises `[[src, dst], ...]` (lists or tuples) into sorted unique link tuples.

    Raises ValueError on anything but pairs of two different node ids.
    """
    out = set()
    for link in links:
        if isinstance(link, str):
            raise ValueError(f"a link must be a pair [src, dst], got the string {link!r}")
        pair = tuple(link)
        if len(pair) != 2:
            raise ValueError(f"a link must be a pair [src, dst], got {list(pair)!r}")
        src, dst = pair
        _check_node(src)
        _check_node(dst)
        if src == dst:
            raise ValueError(f"a link must join two different nodes, got [{src}, {dst}]")
        out.add((src, dst))
    return sorted(out)


def _as_groups(groups: Iterable[Iterable[str]]) -> list[frozenset[str]]:
    out: list[frozenset[str]] = []
    seen: dict[str, int] = {}
    for i, group in enumerate(groups):
        if isinstance(group, str):
            raise ValueError(f"a group must be a list of nodes, got the string {group!r}")
        members = frozenset(group)
        if not members:
            raise ValueError(f"group {i} is empty")
        for node in members:
            _check_node(node)
            if node in seen:
                raise ValueError(f"node {node!r} is in group {seen[node]} and group {i}; "
                                 f"groups must not overlap")
            seen[node] = i
        out.append(members)
    return out


def links_between(groups: Iterable[Iterable[str]]) -> list[Link]:
    """Every directed link from a node of one group to a node of another group.

    `links_between([["dn1"], ["dn2", "dn3"]])` gives dn1->dn2, dn1->dn3, dn2->dn1 and
    dn3->dn1: both directions, never within a group. Groups must not overlap.
    """
    parts = _as_groups(groups)
    return sorted((src, dst) for i, a in enumerate(parts) for j, b in enumerate(parts)
                  if i != j for src in a for dst in b)


def links_from(sources: Iterable[str], targets: Iterable[str]) -> list[Link]:
    """Every directed link from one of `sources` to one of `targets` (self-links skipped)."""
    return as_links((s, t) for s in set(sources) for t in set(targets) if s != t)


def complete_grudge(groups: Iterable[Iterable[str]]) -> Grudge:
    """Splits the nodes into `groups` that cannot reach each other in either direction.

    Every node of one group rejects every node of all other groups; nodes within a group
    still talk. Nodes named in no group are untouched.
    """
    grudge: dict[str, set[str]] = {}
    for src, dst in links_between(groups):
        grudge.setdefault(src, set()).add(dst)
    return Grudge(grudge)


def directed(links: Iterable[Iterable[str]]) -> Grudge:
    """A one-way grudge: for each link [src, dst], src can no longer reach dst."""
    grudge: dict[str, set[str]] = {}
    for src, dst in as_links(links):
        grudge.setdefault(src, set()).add(dst)
    return Grudge(grudge)


def isolate(node: str, others: Iterable[str]) -> Grudge:
    """Isolates a single node from the rest of the network, both ways."""
    rest = [o for o in others if o != node]
    if not rest:
        raise ValueError(f"isolating {node!r} needs at least one other node")
    return complete_grudge([[node], rest])


def bridge(nodes: Iterable[str]) -> Grudge:
    """Cuts the nodes in half but keeps the middle node talking to both halves.

    As Jepsen's `bridge`: the nodes are split at the middle (in the order given); the
    first node of the second half is the bridge, reachable from and reaching everyone,
    while the two halves cannot reach each other.
    """
    ordered = list(dict.fromkeys(nodes))
    if len(ordered) < 3:
        raise ValueError(f"a bridge needs at least 3 nodes, got {ordered}")
    mid = len(ordered) // 2
    left, right = ordered[:mid], ordered[mid + 1:]  # ordered[mid] is the bridge
    return complete_grudge([left, right])


def merge(*grudges: Mapping[str, Iterable[str]]) -> Grudge:
    """The union of several grudges: a node rejects whatever any of them says it rejects."""
    out: dict[str, set[str]] = {}
    for grudge in grudges:
        for node, rejected in grudge.items():
            out.setdefault(node, set()).update(rejected)
    return Grudge(out)
