"""Running a learner's function on every case and judging it against the references.

The in-notebook flow: draw the cases, compute both references (cached), call the learner's
function on each, and for the first failure among generated cases let Hypothesis shrink it
to the smallest failing case, which is then confirmed against both frameworks again.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from hypothesis import Phase

from . import references
from .cases import NOTEBOOK, Case, Profile, draw_cases, run_property
from .compare import compare_outputs
from .exercise import Exercise, Outputs
from .fingerprint import fingerprint
from .harness import learner_traceback, plain_call
from .references import reference_outputs
from .report import ERROR, FAILED, NOT_ANSWERED, PASSED, Failure, Report

PRINTED_LIMIT = 2000
SHAPE_ERRORS = {"ValueError", "IndexError", "AxisError", "InvalidArgumentError"}


@dataclass(frozen=True)
class Attempt:
    """What one call of the learner's function did."""

    value: Any = None
    error: BaseException | None = None
    traceback: str = ""
    printed: str = ""


def call_learner(fn: Callable[..., Any], case: Case, exercise: Exercise | None = None) -> Attempt:
    """Call `fn` on fresh copies of the case's inputs, capturing prints and exceptions.

    The exercise's invoker decides how (a plain call, or e.g. under a GradientTape).
    """
    invoke = exercise.invoker() if exercise is not None else plain_call
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            value = invoke(fn, *case.fresh_values())
    except Exception as error:
        return Attempt(error=error, traceback=learner_traceback(error), printed=_cut(printed))
    return Attempt(value=value, printed=_cut(printed))


def _cut(buffer: io.StringIO) -> str:
    text = buffer.getvalue()
    return text if len(text) <= PRINTED_LIMIT else text[:PRINTED_LIMIT] + "\n... (cut)"


def error_type(attempt: Attempt) -> str:
    """The name of the exception the attempt raised ("" if none), wherever it was raised:
    errors from a grading child arrive as RemoteError carrying the original type name."""
    if attempt.error is None:
        return ""
    return getattr(attempt.error, "type_name", type(attempt.error).__name__)


def not_answered(attempt: Attempt) -> bool:
    """The exercise stub's NotImplementedError: the learner has not answered yet."""
    return error_type(attempt) == "NotImplementedError"


def verdict(exercise: Exercise, function: str, cases_checked: int,
            failure: Failure | None, *, unanswered: bool = False) -> Report:
    """The one way the outcome of a run becomes a Report, in the notebook and the grader."""
    report = Report(exercise.name, function, PASSED, cases_checked, exercise.references_text)
    if unanswered:
        return replace(report, status=NOT_ANSWERED, cases_checked=0)
    if failure is None:
        return report
    return replace(report, status=FAILED, failure=failure)


def failure_message(exercise: Exercise, attempt: Attempt, expected: Outputs) -> str | None:
    """What is wrong with the attempt (None: nothing), without the hint, which runs every
    known mistake on the case: cheap enough for every candidate while shrinking."""
    if attempt.error is not None:
        return f"raised {error_type(attempt)}: {attempt.error}".rstrip(": ")
    mismatch = compare_outputs(exercise.outputs, attempt.value, expected)
    return None if mismatch is None else mismatch.message


def judge(exercise: Exercise, case: Case, attempt: Attempt, expected: Outputs) -> Failure | None:
    """None when the attempt matches the reference; otherwise a Failure with a hint."""
    if attempt.error is not None:
        type_name = error_type(attempt)
        return Failure(
            case=case,
            message=failure_message(exercise, attempt, expected) or "",
            hint=exception_hint(exercise, type_name),
            traceback=attempt.traceback,
            printed=attempt.printed,
        )
    mismatch = compare_outputs(exercise.outputs, attempt.value, expected)
    if mismatch is None:
        return None
    return Failure(
        case=case,
        message=mismatch.message,
        hint=exercise.diagnose(case, attempt.value, mismatch),
        expected=expected,
        got=attempt.value,
        output_names=exercise.outputs,
        printed=attempt.printed,
    )


def exception_hint(exercise: Exercise, type_name: str) -> str:
    """A hint for this exception type (`exception:TypeError`), else the shape-error hint
    (`exception`) for a shape-like error, else the exercise's fallback for any exception
    (`error`): what to look at, chosen by the exception's type, never by its message."""
    hints = exercise.hints_by_kind
    keys = [f"exception:{type_name}", *(["exception"] if type_name in SHAPE_ERRORS else []),
            "error"]
    return next((hints[key] for key in keys if key in hints), "")


@cache
def _notebook_cases(exercise: Exercise, profile: Profile) -> tuple[list[Case], int]:
    """The edge cases, then the drawn ones, and how many are edge cases (drawn once)."""
    edge = exercise.edge_cases()
    return edge + draw_cases(exercise.strategy(profile), profile), len(edge)


def notebook_case_count(exercise: Exercise, profile: Profile = NOTEBOOK) -> int:
    """How many cases a check runs: drawing them is quick, their references are not."""
    return len(_notebook_cases(exercise, profile)[0])


@cache
def _notebook_table(exercise: Exercise, profile: Profile) -> tuple[list[Case], list[Outputs], int]:
    """Cases and references for a profile, computed once per process (they never change)."""
    cases, edge_count = _notebook_cases(exercise, profile)
    return cases, reference_outputs(exercise, cases), edge_count


@dataclass(frozen=True)
class Counterexample:
    """The last failure reported for an exercise, with the fingerprint of the function it was
    found for: its case, the references both frameworks agreed on, and the failure shown."""

    case: Case
    expected: Outputs
    failure: Failure
    source: str | None


# (exercise name, profile) -> its last counterexample, for this kernel's lifetime.
_LAST: dict[tuple[str, Profile], Counterexample] = {}


def check_function(exercise: Exercise, fn: Any, profile: Profile = NOTEBOOK) -> Report:
    """Check a learner's function on every case of the profile; never raises for a wrong answer.

    The exercise's last counterexample is tried first. If it still fails for the same code,
    it is reported again without shrinking again: a re-run check cell answers in well under
    a second. For new code, a failing counterexample only saves the search for a failure;
    the new function's own smallest case is still shrunk, so its report is the one it gets
    in a fresh kernel (unless only the remembered case shows that it is wrong).
    """
    name = getattr(fn, "__name__", exercise.name)
    if not callable(fn):
        note = (
            f"pass the function itself, e.g. check.{exercise.name}({exercise.name}), "
            f"not the result of calling it (got a {type(fn).__name__})."
        )
        base = Report(exercise.name, name, PASSED, 0, exercise.references_text)
        return replace(base, status=ERROR, note=note)
    cases = _notebook_table(exercise, profile)[0]
    source = fingerprint(fn)
    known = _LAST.get((exercise.name, profile))
    if known is None:
        return _full_check(exercise, fn, profile, source)
    attempt = call_learner(fn, known.case, exercise)
    if not_answered(attempt):
        return verdict(exercise, name, 0, None, unanswered=True)
    if failure_message(exercise, attempt, known.expected) is None:
        return _full_check(exercise, fn, profile, source)
    if source is not None and source == known.source:
        return verdict(exercise, name, len(cases), _again(exercise, known, attempt))
    if not known.failure.shrunk:  # an edge case: the loop over the table finds it again
        return _full_check(exercise, fn, profile, source)
    shrunk = shrink_with_references(exercise, fn, profile)
    if shrunk is not None:
        return _remember(exercise, name, profile, source, len(cases), *shrunk)
    report = _full_check(exercise, fn, profile, source)  # what it reports without history
    if report.passed:  # ... but a case it fails is known: a wrong answer must not pass
        failure = _judged_again(exercise, known, attempt)
        return _remember(exercise, name, profile, source, len(cases), failure, known.expected)
    return report


def _judged_again(exercise: Exercise, known: Counterexample, attempt: Attempt) -> Failure:
    """A failure on the remembered case, judged for this function (not shrunk for it)."""
    fresh = judge(exercise, known.case, attempt, known.expected)
    return replace(fresh, shrunk=False) if fresh else known.failure


def _again(exercise: Exercise, known: Counterexample, attempt: Attempt) -> Failure:
    """The remembered failure when the function does the same wrong thing; else it is judged
    afresh on the same case (the same code can read changed state)."""
    same = (failure_message(exercise, attempt, known.expected) == known.failure.message
            and attempt.printed == known.failure.printed)
    if same:
        return known.failure
    fresh = judge(exercise, known.case, attempt, known.expected)
    return replace(fresh, shrunk=known.failure.shrunk) if fresh else known.failure


def _full_check(exercise: Exercise, fn: Any, profile: Profile, source: str | None) -> Report:
    """Every case of the table; the first failure among generated cases is shrunk, else the
    first failing edge case is reported."""
    name = getattr(fn, "__name__", exercise.name)
    cases, outputs, edge_count = _notebook_table(exercise, profile)
    first_edge: tuple[Failure, Outputs] | None = None
    for index, (case, expected) in enumerate(zip(cases, outputs, strict=True)):
        if index < edge_count and first_edge is not None:
            continue  # only the first failing edge case is reported
        attempt = call_learner(fn, case, exercise)
        if not_answered(attempt):
            return verdict(exercise, name, 0, None, unanswered=True)
        if failure_message(exercise, attempt, expected) is None:
            continue
        found = judge(exercise, case, attempt, expected)
        if index < edge_count:
            first_edge = (found, expected)
            continue
        failure, expected = shrink_with_references(exercise, fn, profile) or (found, expected)
        return _remember(exercise, name, profile, source, len(cases), failure, expected)
    failure, expected = first_edge or (None, ())
    return _remember(exercise, name, profile, source, len(cases), failure, expected)


def _remember(exercise: Exercise, name: str, profile: Profile, source: str | None,
              cases_checked: int, failure: Failure | None, expected: Outputs) -> Report:
    """The report, after keeping its failure (if any) as the exercise's last counterexample."""
    if failure is not None:
        _LAST[exercise.name, profile] = Counterexample(failure.case, expected, failure, source)
    return verdict(exercise, name, cases_checked, failure)


def forget_counterexamples() -> None:
    """Drop every remembered counterexample (tests, and a fresh start)."""
    _LAST.clear()


def warm_up(profile: Profile = NOTEBOOK) -> int:
    """Draw every exercise's notebook cases and compile their references once.

    The notebook cases are the same on every machine, so `make lab` (and Binder's postBuild)
    run this to fill JAX's persistent compilation cache: a learner's first check then loads
    compiled references instead of compiling them. Returns the number of cases prepared.
    """
    from .exercises import EXERCISES

    return sum(len(_notebook_table(exercise, profile)[0]) for exercise in EXERCISES.values())


class _Failed(Exception):
    def __init__(self, case: Case) -> None:
        super().__init__("failed")
        self.case = case


def shrink(exercise: Exercise, fn: Callable[..., Any], profile: Profile) -> Failure | None:
    """The smallest failing case Hypothesis finds, confirmed with both frameworks."""
    found = shrink_with_references(exercise, fn, profile)
    return found[0] if found else None


def shrink_with_references(
    exercise: Exercise, fn: Callable[..., Any], profile: Profile
) -> tuple[Failure, Outputs] | None:
    """Let Hypothesis find the smallest failing case; confirm it with both frameworks.

    Candidates are judged against TensorFlow alone (fast, no compilation) and only for
    pass/fail: the hint (which runs every known mistake) is worked out once, for the final
    case, after JAX agrees. Returns None if shrinking could not reproduce a failure (a
    function that is not deterministic), so the caller keeps the failure it found.
    """

    def body(case: Case) -> None:
        expected = references.tensorflow_references(exercise.tf_reference, [case])[0]
        if failure_message(exercise, call_learner(fn, case, exercise), expected) is not None:
            raise _Failed(case)

    try:
        run_property(
            exercise.strategy(profile), body, profile, phases=(Phase.generate, Phase.shrink)
        )
    except _Failed as found:
        expected = reference_outputs(exercise, [found.case])[0]
        confirmed = judge(exercise, found.case, call_learner(fn, found.case, exercise), expected)
        return (replace(confirmed, shrunk=True), expected) if confirmed else None
    except Exception:  # Hypothesis reports flakiness and similar as its own errors
        return None
    return None
