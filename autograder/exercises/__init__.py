"""Every exercise of the course, by the name of the function the learner writes."""

from __future__ import annotations

from ..exercise import Exercise
from . import ch03_unbroadcasting

_ALL: tuple[Exercise, ...] = ch03_unbroadcasting.EXERCISES

EXERCISES: dict[str, Exercise] = {exercise.name: exercise for exercise in _ALL}


def for_chapter(chapter: str) -> list[Exercise]:
    """The exercises of one chapter ("03"), in the order the notebook asks them."""
    return [exercise for exercise in _ALL if exercise.chapter == chapter]
