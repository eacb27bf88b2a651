"""The last counterexample reported for each exercise, kept for the kernel's lifetime.

A re-run check cell tries it first: the same wrong code then answers in well under a second
(engine.py). It is keyed by the exercise's chapter, name and invoke with the profile: two
declarations of one name (chapter 02's `grad` and the engine check's `grad`) call differently
laid-out cases and must never share one, while a copy made by `dataclasses.replace` (the
check run with the learner's own helpers) shares its original's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from autograder.judging.cases import Case, Profile
from autograder.judging.report import Failure

if TYPE_CHECKING:
    from autograder.judging.exercise import Exercise, Outputs


@dataclass(frozen=True)
class Counterexample:
    """The last failure reported for an exercise, with the fingerprint of the function it was
    found for: its case, the references both frameworks agreed on, and the failure shown."""

    case: Case
    expected: Outputs
    failure: Failure
    source: str | None


Key = tuple[str, str, str, Profile]
_LAST: dict[Key, Counterexample] = {}


def key(exercise: Exercise, profile: Profile) -> Key:
    """Which remembered counterexample belongs to this exercise and profile."""
    return exercise.chapter, exercise.name, exercise.invoke, profile


def remembered(exercise: Exercise, profile: Profile) -> Counterexample | None:
    return _LAST.get(key(exercise, profile))


def remember(exercise: Exercise, profile: Profile, counterexample: Counterexample | None) -> None:
    """Keep it as the exercise's last counterexample; None forgets the one kept."""
    if counterexample is None:
        _LAST.pop(key(exercise, profile), None)
    else:
        _LAST[key(exercise, profile)] = counterexample


def forget_counterexamples() -> None:
    """Drop every remembered counterexample (tests, and a fresh start)."""
    _LAST.clear()
