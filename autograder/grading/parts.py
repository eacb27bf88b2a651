"""How a submission's exercises are shared out on the child slots it has: parts, each in
folders of its own, or workers of one child that imports a framework once."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from autograder.judging.cases import Case
from autograder.judging.exercise import Exercise

if TYPE_CHECKING:
    from autograder.grading.assignment import Assignment


class SpareSlots:
    """A count of idle child slots, shared by the threads that grade submissions."""

    def __init__(self, free: int = 0) -> None:
        self._free = free
        self._lock = threading.Lock()

    def take(self, wanted: int) -> int:
        """Up to `wanted` slots, without waiting: how many were taken."""
        with self._lock:
            taken = max(0, min(wanted, self._free))
            self._free -= taken
            return taken

    def give(self, count: int) -> None:
        with self._lock:
            self._free += count


def round_workers(workers: list[list[str]], names: list[str]) -> list[list[str]]:
    """The workers' lists cut to this round's exercises; none unless they hold them all."""
    kept = [cut for worker in workers if (cut := [name for name in worker if name in names])]
    return kept if sorted(name for cut in kept for name in cut) == sorted(names) else []


def parts_and_workers(
    assignment: Assignment, slots: int
) -> tuple[list[list[Exercise]], list[list[str]], int]:
    """How a submission's exercises run on `slots` child slots: (its parts, each in a box of
    its own; the workers of its framework part, each a list of exercise names; the slots
    used).

    When its framework exercises all need one framework, they are one part, whose child
    imports it once and runs them in up to `slots` workers (child.fork_workers); its numpy
    exercises, if any, are another part, whose child takes a tenth of a second beside them.
    Otherwise each part runs in a child of its own (split_exercises)."""
    exercises, cases, costs = assignment.exercises, assignment.cases, assignment.costs
    framework = [e for e in exercises if e.frameworks]
    if (
        slots > 1
        and len(framework) > 1
        and len({tuple(sorted(e.frameworks)) for e in framework}) == 1
    ):
        workers = split_exercises(framework, cases, slots, costs)
        numpy_part = [e for e in exercises if not e.frameworks]
        return (
            [framework, *([numpy_part] if numpy_part else [])],
            [[e.name for e in worker] for worker in workers],
            len(workers),
        )
    parts = split_exercises(exercises, cases, slots, costs)
    return parts, [], len(parts)


# What a part pays once per group of exercises it runs, in seconds: a child's start-up, which
# for a framework group is the framework's import; and an exercise's cost per hidden case
# when no trusted run measured it.
GROUP_START_UP = {False: 0.1, True: 2.5}


SECONDS_PER_CASE = 0.01


def split_exercises(
    exercises: list[Exercise],
    cases: dict[str, list[Case]],
    count: int,
    costs: dict[str, float] | None = None,
) -> list[list[Exercise]]:
    """At most `count` parts of about equal work, each in the exercises' own order.

    An exercise's work is what its cases took when a solution was graded (`costs`), else
    its number of cases; a part also pays the start-up of each group's child it runs (so a
    part that already imports TensorFlow takes the next TensorFlow exercise first)."""
    costs = costs or {}
    loads = [0.0] * max(1, min(count, len(exercises)))
    parts: list[list[Exercise]] = [[] for _ in loads]

    def work(exercise: Exercise) -> float:
        return costs.get(exercise.name) or len(cases[exercise.name]) * SECONDS_PER_CASE

    for exercise in sorted(exercises, key=lambda e: -work(e)):

        def load_with(i: int, exercise: Exercise = exercise) -> float:
            group = tuple(sorted(exercise.frameworks))
            new_group = all(tuple(sorted(e.frameworks)) != group for e in parts[i])
            return loads[i] + work(exercise) + (GROUP_START_UP[bool(group)] if new_group else 0)

        best = min(range(len(loads)), key=load_with)
        loads[best] = load_with(best)
        parts[best].append(exercise)
    order = {e.name: i for i, e in enumerate(exercises)}
    return [sorted(part, key=lambda e: order[e.name]) for part in parts if part]
