"""`check.hint("unbroadcast")`: a nudge before the first failing check, mistakes' hints after.

Many of a mistake's hints state the answer ("b's cotangent is -g * a / b**2"): they are meant
for a learner whose code made that mistake. So until the exercise's check has failed in this
kernel (the judging engine remembers its last counterexample, judging/counterexamples.py),
`check.hint(name)` shows only the exercise's `nudge`, which points at the idea and never at the
answer, and says that the hints for specific mistakes come with a failing check. After one,
the hints are the exercise's own declared mistakes (`Exercise.mistakes`), the same text a
failing check shows when a learner's answer reproduces that mistake, so a hint asked for and a
hint earned by failing never disagree. Several mistakes may share one hint (chapter 01's
variants); each distinct hint is offered once, in declaration order, one at a time:
`check.hint(name, 2)` is the next.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from autograder.exercises import EXERCISES, no_such_exercise
from autograder.judging.cases import NOTEBOOK
from autograder.judging.counterexamples import remembered
from autograder.judging.report import PROSE
from autograder.locale import say


def exercise_hints(name: str) -> tuple[str, ...]:
    """The distinct hints of the exercise's declared mistakes, in the order declared."""
    if name not in EXERCISES:
        raise KeyError(no_such_exercise(name))
    return tuple(dict.fromkeys(mistake.hint for mistake in EXERCISES[name].mistakes))


def has_failed(name: str) -> bool:
    """Whether a check of exercise `name` has failed in this kernel (its counterexample is
    kept): from then on the mistakes' hints are open."""
    return remembered(EXERCISES[name], NOTEBOOK) is not None


@dataclass(frozen=True)
class Hint:
    """Hint `number` (from 1) of an exercise's hints, or (number 0) its nudge; text in a
    terminal, wrapping HTML in Jupyter."""

    exercise: str
    number: int
    hints: tuple[str, ...]
    nudge: str = ""

    def text(self) -> str:
        if self.number:
            return say(self.hints[self.number - 1])
        if self.nudge:
            return say(self.nudge)
        return say(
            "{exercise} declares no hints: run its check, whose report describes what it finds.",
            exercise=self.exercise,
        )

    def footer(self) -> str:
        if not self.number:
            return self._nudge_footer()
        if self.number < len(self.hints):
            return say(
                "Hint {number} of {count}. Another: check.hint({exercise}, {next})",
                number=self.number,
                count=len(self.hints),
                exercise=repr(self.exercise),
                next=self.number + 1,
            )
        return say("Hint {number} of {count}.", number=self.number, count=len(self.hints))

    def _nudge_footer(self) -> str:
        if not self.nudge:
            return ""
        if not self.hints:
            return say(
                "This is a nudge, not the answer; the check's report describes what it finds."
            )
        return say(
            "This is a nudge, not the answer. Hints about specific mistakes come with a failing "
            "check: its report shows the one your answer matches, and then check.hint({exercise}) "
            "lists them.",
            exercise=repr(self.exercise),
        )

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
    """Exercise `name`'s nudge until its check has failed in this kernel; then its mistakes'
    hint `number`, saying how many there are when asked for too many."""
    hints = exercise_hints(name)
    nudge = EXERCISES[name].nudge
    if not has_failed(name) or not hints:
        return Hint(name, 0, hints, nudge)
    if not 1 <= number <= len(hints):
        raise ValueError(
            say(
                "{name} has {count} hints: ask for check.hint({quoted}, n) with n from 1 to "
                "{count}.",
                name=name,
                count=len(hints),
                quoted=repr(name),
            )
        )
    return Hint(name, number, hints, nudge)
