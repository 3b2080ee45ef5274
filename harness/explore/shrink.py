"""Shrinking a failing schedule to a smaller reproducer, FATE/QuickCheck style.

Three moves, each tried in turn, each kept only if the smaller schedule still fails
with the same finding signature: drop a fault; move a fault to an earlier point of the
same event on the same node (an earlier occurrence, or the same event on an earlier
block); run a smaller workload (the base's sizes halved). `candidates(...)` gives the
next round of smaller schedules (pure); the engine runs them and keeps the first that
still fails, until no move helps or the shrink budget is spent.
"""

from __future__ import annotations

import dataclasses

from .points import FailurePoint
from .schedules import Schedule

MIN_SCALE = 0.25
EARLIER_TRIES = 2


def drop_fault(schedule: Schedule) -> list[Schedule]:
    """Each schedule with one fault fewer (none for a single fault: that is the base run)."""
    if schedule.depth < 2:
        return []
    return [dataclasses.replace(schedule, steps=schedule.steps[:i] + schedule.steps[i + 1:])
            for i in range(schedule.depth)]


def earlier_points(schedule: Schedule, points: list[FailurePoint]) -> list[Schedule]:
    """The schedule with one fault moved to an earlier point of the same event and node:
    the first occurrence with the same fields, then the same event on the earliest block
    (`points`: the points of the run the fault's point was recorded from)."""
    out: list[Schedule] = []
    for i, step in enumerate(schedule.steps):
        p = step.point
        options: list[FailurePoint] = []
        if p.nth > 1:
            options.append(dataclasses.replace(p, nth=1))
        same = sorted((q for q in points if q.event == p.event and q.node == p.node
                       and q.index < p.index and q.key() != p.key() and q.nth == 1),
                      key=lambda q: q.index)
        options += [q for q in same if dict(q.where).keys() == dict(p.where).keys()][:1]
        for q in options[:EARLIER_TRIES]:
            steps = list(schedule.steps)
            steps[i] = dataclasses.replace(step, point=q)
            out.append(dataclasses.replace(schedule, steps=tuple(steps)))
    return out


def smaller_workload(schedule: Schedule) -> list[Schedule]:
    scale = schedule.scale / 2
    return [dataclasses.replace(schedule, scale=scale)] if scale >= MIN_SCALE else []


MOVES = (("drop a fault", drop_fault), ("earlier point", None), ("smaller workload",
                                                                 smaller_workload))


def candidates(schedule: Schedule, points: list[FailurePoint]) -> list[tuple[str, list[Schedule]]]:
    """The moves in order, each with its smaller schedules (moves with none left out)."""
    out = []
    for name, move in MOVES:
        found = earlier_points(schedule, points) if move is None else move(schedule)
        if found:
            out.append((name, found))
    return out


def shrink(schedule: Schedule, points: list[FailurePoint], still_fails, max_runs: int = 8
           ) -> tuple[Schedule, list[str]]:
    """Shrink `schedule` while `still_fails(list of schedules) -> list of bools` says the
    smaller ones fail the same way; at most `max_runs` schedules run. Returns the
    smallest failing schedule and the moves that were kept."""
    kept: list[str] = []
    runs = 0
    current = schedule
    progress = True
    while progress and runs < max_runs:
        progress = False
        for name, options in candidates(current, points):
            options = options[:max_runs - runs]
            if not options:
                break
            results = still_fails(options)
            runs += len(options)
            winner = next((s for s, failed in zip(options, results) if failed), None)
            if winner is not None:
                current = winner
                kept.append(name)
                progress = True
                break
    return current, kept
