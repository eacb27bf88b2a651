"""`check.predict` and `check.reveal`: a guess committed before a trap, compared after it.

The guess is kept in this kernel only (a dict), so `reveal` can say whether it was right;
nothing is saved or graded. `reveal` is also the course's own assertion: it raises
`CourseClaimError` when a run no longer shows the declared answer, so nbval fails there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from autograder.exercises import PREDICTIONS
from autograder.judging.prediction import Prediction
from autograder.locale import say

_GUESSES: dict[str, Any] = {}


class CourseClaimError(AssertionError):
    """The course's declared answer is not what this run shows: the course is wrong here,
    not the learner (a framework release changed the behaviour)."""


@dataclass(frozen=True)
class Shown:
    """Text shown under a prediction cell (plain text: the same in every front end)."""

    text: str

    def __repr__(self) -> str:
        return self.text


def _prediction(name: str) -> Prediction:
    if name not in PREDICTIONS:
        known = ", ".join(sorted(PREDICTIONS))
        raise KeyError(f"There is no prediction called {name!r}. Predictions: {known}.")
    return PREDICTIONS[name]


def _question(prediction: Prediction) -> str:
    lines = [say(prediction.question)]
    lines += [
        say("  '{key}': {choice}", key=key, choice=say(text))  # Chinese: "  （a）…"
        for key, text in prediction.choices.items()
    ]
    return "\n".join(lines)


def predict(name: str, guess: Any) -> Shown:
    """Commit `guess` for the question `name`; the next cell shows what happens."""
    prediction = _prediction(name)
    _GUESSES.pop(name, None)
    if guess is None:
        return Shown(
            _question(prediction)
            + "\n"
            + say(
                "No guess yet: set `prediction` above to your "
                "guess, run this cell, then run the next one."
            )
        )
    problem = prediction.valid_guess_problem(guess)
    if problem:
        return Shown(f"{_question(prediction)}\n{problem}")
    _GUESSES[name] = guess
    return Shown(
        say("Your guess: {guess}. Now run the next cell.", guess=prediction.answer_text(guess))
    )


def reveal(name: str, observed: Any) -> Shown:
    """What the run shows, against the learner's guess; raises CourseClaimError when the run
    contradicts the course's declared answer."""
    prediction = _prediction(name)
    if not prediction.agrees(observed):
        raise CourseClaimError(
            f"Prediction {name!r}: the course says {prediction.answer_text()}, but this run "
            f"shows {observed!r}. The course is out of date here (not your answer); please "
            "report it."
        )
    answer = prediction.answer_text(observed)
    if name not in _GUESSES:
        return Shown(say("The run shows {answer}. {why}", answer=answer, why=say(prediction.why)))
    guess = _GUESSES[name]
    if prediction.agrees(guess):
        return Shown(
            say("Right. The run shows {answer}. {why}", answer=answer, why=say(prediction.why))
        )
    return Shown(
        say(
            "Not quite: you guessed {guess}. The run shows {answer}. {why}",
            guess=prediction.guess_text(guess),
            answer=answer,
            why=say(prediction.why),
        )
    )
