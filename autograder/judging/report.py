"""The report a check returns: `.passed`, and feedback as text or as HTML in Jupyter.

Feedback leads with what helps: the headline says what is wrong in the learner's words (which
output, how many entries, the worst one got against expected), then come the smallest failing
case and the hint, then the inputs and the expected and got arrays, and last the tolerance
arithmetic, which explains a verdict but rarely changes what to fix. Nothing in it depends on
timing, so stored notebook outputs stay comparable by nbval.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import numpy as np

from autograder.judging.cases import Case
from autograder.locale import localize, say

PASSED, FAILED, NOT_ANSWERED, ERROR = "passed", "failed", "not answered", "error"


@dataclass(frozen=True)
class Failure:
    """The smallest case found where the learner's function is wrong, and why."""

    case: Case
    message: str
    hint: str = ""
    expected: tuple[np.ndarray, ...] | None = None
    got: Any = None
    output_names: tuple[str, ...] = ()
    traceback: str = ""
    printed: str = ""
    shrunk: bool = False
    # The error does not depend on the case (a NameError, a method not followed): no case
    # is shown, as none would say anything about it.
    input_independent: bool = False
    method: bool = False  # the values are right, the method the exercise asks is not followed
    tolerance: str = ""  # the arithmetic behind a value mismatch, shown last (Mismatch.tolerance)


@dataclass(frozen=True)
class Report:
    """The verdict on one learner function; `passed` is what scripts and graders read."""

    exercise: str
    function: str
    status: str
    cases_checked: int
    references: str
    failure: Failure | None = None
    note: str = ""
    stub: str = ""  # the function still raising NotImplementedError, when not `function`
    dependencies: str = ""  # which exercises it calls are wrong, and what was used instead

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    def headline(self) -> str:
        if self.status == PASSED:
            return say(
                "PASSED {function}: matches {references} on all {count} cases.",
                function=self.function,
                references=localize(self.references),
                count=self.cases_checked,
            )
        if self.status == NOT_ANSWERED:
            where = (
                say("{stub} (called by {function})", stub=self.stub, function=self.function)
                if self.stub and self.stub != self.function
                else self.function
            )
            return say(
                "NOT ANSWERED YET {where}: replace the `raise NotImplementedError(...)` "
                "line with your code, then run this cell again.",
                where=where,
            )
        if self.status == ERROR:
            return say(
                "CANNOT CHECK {function}: {note}", function=self.function, note=localize(self.note)
            )
        return say(
            "FAILED {function}: {message}",
            function=self.function,
            message=localize(self.failure.message) if self.failure else "",
        )

    def sections(self) -> list[tuple[str, str]]:
        """(title, body) pairs shared by the text and HTML renderings, in the order a learner
        uses them: the failing case and the hint, the arrays, what the function raised or
        printed, the note on other exercises, and the tolerance last."""
        notes = (
            [(say("Your other exercises"), localize(self.dependencies))]
            if self.dependencies
            else []
        )
        failure = self.failure
        if failure is None or self.status != FAILED:
            return notes
        tolerance = [(say("Tolerance"), localize(failure.tolerance))] if failure.tolerance else []
        return self.failure_sections(failure) + notes + tolerance

    def failure_sections(self, failure: Failure) -> list[tuple[str, str]]:
        """The failure's own sections: the case and the hint first, since they say what to
        change; then the inputs, expected and got, the traceback and what was printed."""
        case = [] if failure.input_independent else _case_sections(failure)
        parts = case[:1]
        if failure.hint:
            parts.append((say("Hint"), localize(failure.hint)))
        parts += case[1:] + _comparison(failure)
        if failure.traceback:
            parts.append((say("Your function raised"), failure.traceback))
        if failure.printed:
            parts.append((say("Your function printed"), failure.printed))
        return parts

    def __str__(self) -> str:
        lines = [self.headline()]
        for title, body in self.sections():
            lines.append(say("{title}:", title=title))
            lines.extend("  " + line for line in body.splitlines())
        return "\n".join(lines)

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        colour = {PASSED: "#1a7f37", NOT_ANSWERED: "#9a6700"}.get(self.status, "#cf222e")
        # Plain divs, not <dl>: JupyterLab gives <dt> a narrow floated column that splits
        # "Smallest failing case" mid-word.
        rows = "".join(
            f"<div class='autograder-title' style='font-weight:bold;margin-top:.4em;{PROSE}'>"
            f"{html.escape(title)}</div>"
            f"<div style='margin-left:1em'>{_html_body(title, body)}</div>"
            for title, body in self.sections()
        )
        return (
            f"<div class='autograder-report' style='border-left:4px solid {colour};"
            f"padding:.3em .8em;{PROSE}'>"
            f"<div class='autograder-headline' style='color:{colour};font-weight:bold;{PROSE}'>"
            f"{html.escape(self.headline())}</div>"
            f"<div style='margin:.2em 0'>{rows}</div></div>"
        )


# JupyterLab styles output <pre> with `word-break: break-all`, which splits words anywhere.
# Prose wraps between words; arrays and tracebacks keep their columns and scroll sideways.
PROSE = "white-space:normal;word-break:normal;overflow-wrap:break-word"
FIXED = "margin:0;white-space:pre;word-break:normal;overflow-x:auto;max-width:100%"
PROSE_SECTIONS = ("Hint", "Your other exercises", "Tolerance")


def _html_body(title: str, body: str) -> str:
    """A section's body: wrapping prose for sentences, a scrolling fixed-width block else."""
    if title in {say(section) for section in PROSE_SECTIONS}:
        return f"<div class='autograder-prose' style='{PROSE}'>{html.escape(body)}</div>"
    return f"<pre class='autograder-fixed' style='{FIXED}'>{html.escape(body)}</pre>"


def _show(value: Any) -> str:
    if isinstance(value, np.ndarray | np.generic):
        return np.array2string(np.asarray(value), precision=4, threshold=200, suppress_small=True)
    return repr(value)


def _case_sections(failure: Failure) -> list[tuple[str, str]]:
    title = say("Smallest failing case") if failure.shrunk else say("Failing case")
    if failure.case.label:
        title += say(" ({label})", label=localize(failure.case.label))
    parts = [(title, failure.case.describe())]
    parts += [
        (say("input {name}", name=name), _show(value))
        for name, value in failure.case.arrays().items()
    ]
    parts += [(say("input {name}", name=k), repr(v)) for k, v in failure.case.params().items()]
    return parts


def _comparison(failure: Failure) -> list[tuple[str, str]]:
    if failure.expected is None:
        return []
    names = failure.output_names
    got = failure.got if len(names) > 1 else (failure.got,)
    parts = []
    if not isinstance(got, tuple | list):
        parts.append((say("got (the whole return value)"), _show(got)))
    for index, (name, expected) in enumerate(zip(names, failure.expected, strict=True)):
        parts.append((say("expected {name}", name=name), _show(expected)))
        if isinstance(got, tuple | list) and index < len(got):
            parts.append((say("got {name}", name=name), _show(got[index])))
    return parts


def dependency_note(exercise: str, wrong: list[str]) -> str:
    """What to say when exercises this one calls are wrong: it was judged with correct
    ones in their place, so their mistakes cost their own exercises only."""
    if not wrong:
        return ""
    names = say(" and ").join(wrong)
    if len(wrong) == 1:
        return say(
            "Your {names} is not right yet (see its own check). {exercise} calls "
            "{names}, so it was checked with a correct {names} in place of yours: this "
            "verdict is about {exercise} alone.",
            names=names,
            exercise=exercise,
        )
    return say(
        "Your {names} are not right yet (see their own check). {exercise} calls "
        "{names}, so it was checked with a correct {names} in place of yours: this "
        "verdict is about {exercise} alone.",
        names=names,
        exercise=exercise,
    )
