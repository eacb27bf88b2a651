"""Every exercise of the course, by the name of the function the learner writes.

Each chapter's module (`ch<NN>_<topic>.py`) defines `EXERCISES`; they are found here by
name, so adding a chapter touches no shared file.
"""

from __future__ import annotations

import importlib
import pkgutil

from autograder.judging.exercise import Exercise, declaration_problems


def _discover() -> tuple[Exercise, ...]:
    found: list[Exercise] = []
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if module.name.startswith("ch"):
            found += importlib.import_module(f"{__name__}.{module.name}").EXERCISES
    return tuple(found)


def _by_name(exercises: tuple[Exercise, ...]) -> dict[str, Exercise]:
    """`check.<name>` must mean one exercise: two chapters may not reuse a name."""
    named: dict[str, Exercise] = {}
    for exercise in exercises:
        if exercise.name in named:
            raise ValueError(
                f"Exercise name {exercise.name!r} is used by chapters "
                f"{named[exercise.name].chapter} and {exercise.chapter}; rename one."
            )
        named[exercise.name] = exercise
    problems = declaration_problems(exercises, read_harness=False)  # the rest: a test
    if problems:
        raise ValueError("\n".join(problems))
    return named


_ALL = _discover()

EXERCISES: dict[str, Exercise] = _by_name(_ALL)


def for_chapter(chapter: str) -> list[Exercise]:
    """The exercises of one chapter ("03"), in the order the notebook asks them."""
    return [exercise for exercise in _ALL if exercise.chapter == chapter]
