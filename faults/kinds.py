"""The registry of fault kinds: every kind a scenario may name, by its YAML name.

A kind is one class (harness.scenario.model.Fault and its subclasses): its YAML fields,
their validation (`check`), and `inject(ctx)`, which builds the fault's effect (a
faults.base.Fault: the per-run state, healed by its `heal()`) and starts it. A class
joins the registry with `@register("name")`, as a Toxiproxy toxic does with
`toxics.Register`; the loader, the JSON Schema, the runner, the explorer and the checks
all take kinds from `KINDS`, so a new kind is one class and nothing else. A class also
says which of its fields name nodes (`node_fields`: the runner resolves pipeline
positions there) and how the explorer tries it (`explore`, `explore_order`).

This module knows nothing about scenarios: it holds classes and the run-side context
they act through.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

KINDS: dict[str, type] = {}
"""Every registered kind class, by its YAML name, in the order they were registered."""


def register(name: str) -> Callable[[type], type]:
    """Class decorator: `@register("partition")` sets the class's `kind` and adds it to
    KINDS. Registering a name twice is an error (two classes would claim one YAML name)."""
    def add(cls: type) -> type:
        if name in KINDS and KINDS[name] is not cls:
            raise ValueError(f"fault kind {name!r} is already registered by "
                             f"{KINDS[name].__qualname__}")
        cls.kind = name
        KINDS[name] = cls
        return cls
    return add


@dataclass(frozen=True)
class ExploreVariant:
    """One way the explorer (harness.explore) tries a kind: on which targets, with which
    YAML fields besides the target. `on` holds roles: "datanode", "client", "namenode"
    (the NameNode itself) or "link" (a directed link near the point)."""

    on: tuple[str, ...]
    params: tuple[tuple[str, Any], ...] = ()


def explored_kinds(role: str) -> list[tuple[str, ExploreVariant]]:
    """(kind name, variant) for every variant of a registered kind on targets of `role`:
    the kinds in their `explore_order` (ties: the order they were registered), each
    kind's variants in the order it lists them. The explorer's schedules, their ids
    and their order follow from this order."""
    ranked = sorted(enumerate(KINDS.items()),
                    key=lambda item: (getattr(item[1][1], "explore_order", 0), item[0]))
    return [(name, variant) for _, (name, cls) in ranked
            for variant in getattr(cls, "explore", ()) if role in variant.on]


def unregister(name: str) -> None:
    """Removes a kind (tests that define a kind of their own clean up with it)."""
    KINDS.pop(name, None)


def kind_names(**flags: Any) -> frozenset[str]:
    """The names of the kinds whose class attributes equal `flags`, e.g.
    `kind_names(ends_node=True)`: the kinds after which their target is gone."""
    return frozenset(name for name, cls in KINDS.items()
                     if all(getattr(cls, flag, None) == value for flag, value in flags.items()))


@dataclass
class FaultContext:
    """What a kind's inject() acts through on one run: the harness log, the link mesh,
    the node control, the backend (storage folders, docker networks), the run's seed,
    the NameNode's block lookup, and the faults now active (for kinds that end others)."""

    log: Any
    mesh: Any = None
    control: Any = None
    backend: Any = None
    seed: int = 0
    block_of: Callable[[str, int], int] | None = None
    active: Mapping[str, Any] = field(default_factory=dict)
    # heal_active(fault_id, by): heals the active fault fault_id on behalf of fault `by`,
    # an error recorded for the run rather than raised
    heal_active: Callable[[str, str], None] | None = None
