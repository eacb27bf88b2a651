"""`check.hint(name)`: hints drawn from the exercise's own declared mistakes, once a check of
the exercise has failed in this kernel (before that, its nudge: test_hint_nudges.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from autograder import check
from autograder.exercises import EXERCISES
from autograder.judging.cases import NOTEBOOK
from autograder.judging.counterexamples import Counterexample, forget_counterexamples, remember
from autograder.judging.report import PROSE


@pytest.fixture(autouse=True)
def every_check_failed() -> Iterator[None]:
    """Every exercise as after a failing check: its last counterexample is kept (what the
    judging engine does; which case it was does not matter to the hints)."""
    for exercise in EXERCISES.values():
        remember(exercise, NOTEBOOK, Counterexample(None, (), None, None))  # type: ignore[arg-type]
    yield
    forget_counterexamples()


def test_first_hint_is_the_first_declared_mistake():
    for name, exercise in EXERCISES.items():
        if exercise.mistakes:
            assert check.hint(name).text() == exercise.mistakes[0].hint, name


def test_every_distinct_hint_is_offered_once_in_order():
    exercise = max(EXERCISES.values(), key=lambda e: len(e.mistakes))
    distinct = list(dict.fromkeys(m.hint for m in exercise.mistakes))
    assert len(distinct) < len(exercise.mistakes)  # this exercise repeats a hint
    offered = [check.hint(exercise.name, n).text() for n in range(1, len(distinct) + 1)]
    assert offered == distinct
    assert f"check.hint({exercise.name!r}, 2)" in str(check.hint(exercise.name))


def test_asking_for_too_many_says_how_many_there_are():
    name = next(n for n, e in EXERCISES.items() if e.mistakes)
    count = len({m.hint for m in EXERCISES[name].mistakes})
    with pytest.raises(ValueError, match=f"{name} has {count} hints"):
        check.hint(name, count + 1)


def test_an_unknown_exercise_lists_the_known_ones():
    with pytest.raises(KeyError, match="unbroadcast"):
        check.hint("unbroadcats")


def test_hint_renders_as_wrapping_prose():
    rendered = check.hint("unbroadcast")._repr_html_()
    assert "<pre" not in rendered and PROSE in rendered


def test_no_exercise_is_shadowed_by_a_check_helper():
    assert not {"hint", "progress"} & set(EXERCISES)
