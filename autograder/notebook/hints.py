"""`check.hint("unbroadcast")`: an optional hint before any check fails.

The hints are the exercise's own declared mistakes (`Exercise.mistakes`), the same text a
failing check shows when a learner's answer reproduces that mistake, so a hint asked for
early and a hint earned by failing never disagree. Several mistakes may share one hint
(chapter 01's variants); each distinct hint is offered once, in declaration order, one at a
time: `check.hint(name, 2)` is the next.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from autograder.exercises import EXERCISES
from autograder.judging.report import PROSE
from autograder.locale import say


def exercise_hints(name: str) -> tuple[str, ...]:
    """The distinct hints of the exercise's declared mistakes, in the order declared."""
    if name not in EXERCISES:
        known = ", ".join(sorted(EXERCISES))
        raise KeyError(f"There is no exercise called {name!r}. Exercises: {known}.")
    return tuple(dict.fromkeys(mistake.hint for mistake in EXERCISES[name].mistakes))


@dataclass(frozen=True)
class Hint:
    """Hint `number` (from 1) of an exercise's hints; text in a terminal, wrapping HTML in
    Jupyter."""

    exercise: str
    number: int
    hints: tuple[str, ...]

    def text(self) -> str:
        if not self.hints:
            return say(
                "{exercise} declares no hints: run its check, whose report describes "
                "what it finds.",
                exercise=self.exercise,
            )
        return say(self.hints[self.number - 1])

    def footer(self) -> str:
        if not self.hints:
            return ""
        if self.number < len(self.hints):
            return say(
                "Hint {number} of {count}. Another: check.hint({exercise}, {next})",
                number=self.number,
                count=len(self.hints),
                exercise=repr(self.exercise),
                next=self.number + 1,
            )
        return say("Hint {number} of {count}.", number=self.number, count=len(self.hints))

    def __str__(self) -> str:
        title = say("Hint for {exercise}", exercise=self.exercise)
        header = say("{title}: {text}", title=title, text=self.text())  # "：" takes no space
        return f"{header}\n{self.footer()}".rstrip()

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        return (
            f"<div class='autograder-hint' style='border-left:4px solid #0969da;"
            f"padding:.3em .8em;{PROSE}'><b>"
            + say("Hint for {exercise}", exercise=f"<code>{html.escape(self.exercise)}</code>")
            + f"</b><div style='{PROSE}'>{html.escape(self.text())}</div>"
            f"<div style='color:#57606a;{PROSE}'>{html.escape(self.footer())}</div></div>"
        )


def hint(name: str, number: int = 1) -> Hint:
    """Hint `number` of exercise `name`; says how many there are when asked for too many."""
    hints = exercise_hints(name)
    if hints and not 1 <= number <= len(hints):
        raise ValueError(
            say(
                "{name} has {count} hints: ask for check.hint({quoted}, n) with n from 1 to "
                "{count}.",
                name=name,
                count=len(hints),
                quoted=repr(name),
            )
        )
    return Hint(name, number if hints else 0, hints)
