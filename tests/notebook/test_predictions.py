"""`check.predict` / `check.reveal`: a guess is kept, compared, and a stale claim fails."""

from __future__ import annotations

import pytest

from autograder import check
from autograder.exercises import EXERCISES, PREDICTIONS
from autograder.judging.prediction import Prediction
from autograder.locale import speaking
from autograder.notebook import predictions

CHOICE = Prediction(
    name="test_choice",
    question="Which?",
    answer="b",
    why="Because b.",
    choices={"a": "the first", "b": "the second"},
)
NUMBER = Prediction(name="test_number", question="How many ms?", answer=10.0, why="Measured.")


@pytest.fixture(autouse=True)
def _declared(monkeypatch):
    monkeypatch.setitem(PREDICTIONS, CHOICE.name, CHOICE)
    monkeypatch.setitem(PREDICTIONS, NUMBER.name, NUMBER)
    monkeypatch.setattr(predictions, "_GUESSES", {})


def test_no_guess_shows_the_choices_and_what_to_do():
    shown = repr(check.predict("test_choice", None))
    assert "'a': the first" in shown and "No guess yet" in shown


def test_a_right_and_a_wrong_guess_are_told_apart_after_the_run():
    check.predict("test_choice", "b")
    assert repr(check.reveal("test_choice", "b")).startswith("Right.")
    check.predict("test_choice", "a")
    assert "Not quite: you guessed 'a'" in repr(check.reveal("test_choice", "b"))


def test_a_choice_prints_as_the_options_do_in_each_language():
    """The key of a choice is shown as the option list shows it: 'a' in English, （a） in
    Chinese (no ASCII quotes in a Chinese sentence)."""
    with speaking("zh-CN"):
        options = repr(check.predict("test_choice", None))
        check.predict("test_choice", "a")
        revealed = repr(check.reveal("test_choice", "b"))
    assert "（a）" in options and "（a）" in revealed and "（b）" in revealed, revealed
    assert "'a'" not in revealed and "'b'" not in revealed, revealed
    assert "The run shows 'b' (the second)" in repr(check.reveal("test_choice", "b"))


def test_a_number_is_right_within_its_tolerance():
    check.predict("test_number", 10.4)
    assert repr(check.reveal("test_number", 9.9)).startswith("Right.")
    check.predict("test_number", 20)
    assert repr(check.reveal("test_number", 9.9)).startswith("Not quite")


def test_a_guess_that_is_no_choice_is_refused_and_not_kept():
    shown = repr(check.predict("test_choice", "c"))
    assert "not one of the choices" in shown
    assert "Not quite" not in repr(check.reveal("test_choice", "b"))


def test_a_run_that_contradicts_the_course_fails_as_the_course_s_error():
    with pytest.raises(predictions.CourseClaimError, match="course is out of date"):
        check.reveal("test_choice", "a")


def test_an_unknown_name_lists_the_predictions():
    with pytest.raises(KeyError, match="test_choice"):
        check.predict("no_such_prediction", "a")


def test_every_declared_prediction_is_answerable_and_named_once():
    for name, prediction in PREDICTIONS.items():
        assert name not in EXERCISES
        assert prediction.why and prediction.question
        if prediction.choices:
            assert prediction.answer in prediction.choices, name
        assert prediction.agrees(prediction.answer), name


def test_every_declared_prediction_is_asked_and_revealed_in_a_notebook():
    import json
    from pathlib import Path

    sources = "".join(
        "".join(cell["source"])
        for path in sorted(Path("solutions").glob("[0-9]*.ipynb"))
        for cell in json.loads(path.read_text())["cells"]
    )
    for name in set(PREDICTIONS) - {CHOICE.name, NUMBER.name}:
        assert f'check.predict("{name}"' in sources, f"{name} is declared but never asked"
        assert f'check.reveal("{name}"' in sources, f"{name} is asked but never revealed"
