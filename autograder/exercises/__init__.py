"""Every exercise of the course, by the name of the function the learner writes.

Each chapter's module (`ch<NN>_<topic>.py`) defines `EXERCISES` (and may define
`PREDICTIONS`, the guesses asked before its traps); they are found here by name, so adding a
chapter touches no shared file.
"""

from __future__ import annotations

import importlib
import pkgutil

from autograder.judging.declaration import declaration_problems
from autograder.judging.exercise import Exercise
from autograder.judging.prediction import Prediction
from autograder.locale import say


def _chapter_modules() -> list:
    return [
        importlib.import_module(f"{__name__}.{module.name}")
        for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name)
        if module.name.startswith("ch")
    ]


def _discover() -> tuple[Exercise, ...]:
    """Every module's EXERCISES, in module order; an exercise listed by two modules of a
    chapter counts once, where it first comes (chapter 02's engine module lists its rules'
    exercises, from ch02_rules.py, before its own, in the order the notebook asks them)."""
    found: list[Exercise] = []
    for module in _chapter_modules():
        found += [
            exercise for exercise in module.EXERCISES if not any(exercise is seen for seen in found)
        ]
    return tuple(found)


def _predictions(exercises: dict[str, Exercise]) -> dict[str, Prediction]:
    """A chapter's `PREDICTIONS` (optional): `check.predict(name, guess)` looks them up, so a
    name may be neither another prediction's nor an exercise's."""
    named: dict[str, Prediction] = {}
    for module in _chapter_modules():
        for prediction in getattr(module, "PREDICTIONS", ()):
            if prediction.name in named or prediction.name in exercises:
                raise ValueError(f"Prediction name {prediction.name!r} is used twice; rename one.")
            named[prediction.name] = prediction
    return named


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

PREDICTIONS: dict[str, Prediction] = _predictions(EXERCISES)


def for_chapter(chapter: str) -> list[Exercise]:
    """The exercises of one chapter ("03"), in the order the notebook asks them."""
    return [exercise for exercise in _ALL if exercise.chapter == chapter]


def no_such_exercise(name: str) -> str:
    """What a name that is no exercise's gets (`check.<name>`, `check.hint`, `reset`): the
    names there are. Here, beside EXERCISES, so that saying it imports nothing more."""
    return say(
        "There is no exercise called {name}. Exercises: {known}.",
        name=repr(name),
        known=", ".join(sorted(EXERCISES)),
    )
