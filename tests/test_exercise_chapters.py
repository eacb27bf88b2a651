"""An exercise's chapter comes from its module's file name (ch03_unbroadcasting.py -> "03"):
it must be the chapter whose notebook asks for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.exercise import chapter_of
from autograder.exercises import EXERCISES

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", list(EXERCISES))
def test_the_derived_chapter_is_the_notebook_that_checks_the_exercise(name: str) -> None:
    (notebook,) = (ROOT / "solutions").glob(f"{EXERCISES[name].chapter}_*.ipynb")
    assert f"check.{name}({name})" in notebook.read_text()


def test_a_module_without_a_chapter_number_must_declare_one() -> None:
    assert chapter_of("autograder.exercises.ch06_jacobians") == "06"
    with pytest.raises(ValueError, match="declare the exercise's chapter"):
        chapter_of("tests.test_exercise_chapters")
