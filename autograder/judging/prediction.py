"""A prediction: the quick guess a learner commits before a cell shows a trap.

"Predict, then run": the cell before a surprising result asks for a choice or a number
(`check.predict(name, guess)`), the cell that shows the result ends with
`check.reveal(name, observed)`. The answer is declared here, as data, beside the chapter's
exercises, and `reveal` asserts that the run still shows it, so a framework release that
changes the behaviour fails the notebook's own cell (nbval) instead of teaching a stale claim.
Not graded: a guess is for the learner, right or wrong.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from autograder.locale import say


@dataclass(frozen=True)
class Prediction:
    """One question: `choices` maps a key ("a") to its text, or is empty for a number."""

    name: str
    question: str
    answer: Any
    why: str
    choices: Mapping[str, str] = field(default_factory=dict)
    rel_tolerance: float = 0.05  # for a number: how close a guess counts as right

    def valid_guess_problem(self, guess: Any) -> str | None:
        """Why `guess` is not an answer to this question, or None when it is one."""
        if self.choices:
            if guess not in self.choices:
                keys = ", ".join(repr(key) for key in self.choices)
                return say(
                    "Your guess {guess} is not one of the choices: {keys}.",
                    guess=repr(guess),
                    keys=keys,
                )
            return None
        if isinstance(guess, bool) or not isinstance(guess, int | float | tuple):
            return say(
                "Your guess {guess} is not a number; write one, e.g. `prediction = 3`.",
                guess=repr(guess),
            )
        return None

    def agrees(self, value: Any) -> bool:
        """Whether `value` (a guess, or what a run observed) is this question's answer."""
        if isinstance(self.answer, float) and isinstance(value, int | float):
            return math.isclose(value, self.answer, rel_tol=self.rel_tolerance)
        if isinstance(self.answer, tuple) and isinstance(value, list | tuple):
            return tuple(value) == self.answer
        return value == self.answer

    def guess_text(self, value: Any) -> str:
        """A guess or an answer as the learner wrote it: a choice's key as the options print
        it ('a' in English, （a） in Chinese), anything else as Python writes it."""
        if self.choices and value in self.choices:
            return say("'{key}'", key=value)
        return repr(value)

    def answer_text(self, value: Any = None) -> str:
        value = self.answer if value is None else value
        if self.choices and value in self.choices:
            return say(
                "{key} ({choice})", key=self.guess_text(value), choice=say(self.choices[value])
            )
        return repr(value)
