"""One call of the learner's function and the judgement of what it did.

Split from engine.py, which runs a whole check (the cases, the remembered counterexample,
shrinking): calling the learner once, judging that attempt against the references, choosing
the failure a report shows and turning an outcome into a Report are what the notebook's check
and the grader's verdicts (grading/verdicts.py) share, and the grader needs them without
Hypothesis or the frameworks' references.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from autograder.harness import MethodNotFollowed, learner_traceback, plain_call, raised_in
from autograder.judging.cases import Case
from autograder.judging.compare import compare_outputs
from autograder.judging.exercise import Evidence, Exercise, KnownOutputs, Outputs, Raised
from autograder.judging.report import FAILED, NOT_ANSWERED, PASSED, Failure, Report
from autograder.locale import localize, say

PRINTED_LIMIT = 2000
# Other failing cases a known mistake must also reproduce before its hint is shown: on one
# (shrunk) case two different mistakes often give the same output.
EVIDENCE = 4
SHAPE_ERRORS = {"ValueError", "IndexError", "AxisError", "InvalidArgumentError"}
# Errors that say nothing about the case they were met on: the code cannot run at all. No
# case is shown for them (nor for a method not followed: see method_failure).
INPUT_INDEPENDENT = {
    "NameError",
    "ImportError",
    "ModuleNotFoundError",
    "SyntaxError",
    "IndentationError",
    "TabError",
    "FrameworkUsed",
    "CourseCodeUsed",
}


@dataclass(frozen=True)
class Attempt:
    """What one call of the learner's function did."""

    value: Any = None
    error: BaseException | None = None
    traceback: str = ""
    printed: str = ""
    raised_in: str = ""  # the learner's function that raised the error (the innermost frame)
    method: str = ""  # why the value was not computed the way the exercise asks ("" if it was)


def call_learner(fn: Callable[..., Any], case: Case, exercise: Exercise | None = None) -> Attempt:
    """Call `fn` on fresh copies of the case's inputs, capturing prints and exceptions.

    The exercise's invoker decides how (a plain call, or e.g. under a GradientTape).
    """
    invoke = exercise.invoker() if exercise is not None else plain_call
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            value = invoke(fn, *case.fresh_values())
    except MethodNotFollowed as error:  # the value is judged; the method only if it is right
        return Attempt(value=error.value, printed=_cut(printed), method=str(error))
    except Exception as error:
        return Attempt(
            error=error,
            traceback=learner_traceback(error),
            printed=_cut(printed),
            raised_in=raised_in(error),
        )
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


def verdict(
    exercise: Exercise,
    function: str,
    cases_checked: int,
    failure: Failure | None,
    *,
    unanswered: bool = False,
    stub: str = "",
) -> Report:
    """The one way the outcome of a run becomes a Report, in the notebook and the grader.
    `stub` names the function whose NotImplementedError was met, when it is not `function`
    itself (soft_threshold's JVP rule, soft_threshold_jvp)."""
    report = Report(exercise.name, function, PASSED, cases_checked, exercise.references_text)
    if unanswered:
        return replace(report, status=NOT_ANSWERED, cases_checked=0, stub=stub)
    if failure is None:
        return report
    return replace(report, status=FAILED, failure=failure)


def raised_message(type_name: str, error: BaseException | str | None) -> str:
    """ "raised ValueError: ..." with the exception's own message verbatim (learners search it)."""
    text = str(error) if error is not None else ""
    if not text:
        return say("raised {type_name}", type_name=type_name)
    # The harness's own message (English, from the child) is translated; a framework's stays.
    return say("raised {type_name}: {error}", type_name=type_name, error=localize(text))


def failure_message(exercise: Exercise, attempt: Attempt, expected: Outputs) -> str | None:
    """What is wrong with the attempt (None: nothing), without the hint, which runs every
    known mistake on the case: cheap enough for every candidate while shrinking."""
    if attempt.error is not None:
        return raised_message(error_type(attempt), attempt.error)
    mismatch = compare_outputs(exercise.outputs, attempt.value, expected)
    return None if mismatch is None else mismatch.message


def fails(exercise: Exercise, attempt: Attempt, expected: Outputs) -> bool:
    """Whether the attempt is wrong, without looking for a hint (cheap, for scanning)."""
    return failure_message(exercise, attempt, expected) is not None


def judge(
    exercise: Exercise,
    case: Case,
    attempt: Attempt,
    expected: Outputs,
    others: Sequence[Evidence] = (),
    known: KnownOutputs | None = None,
) -> Failure | None:
    """None when the attempt matches the reference; otherwise a Failure with a hint, naming a
    known mistake only if it reproduces the `others` (other failing cases) too, run or `known`."""
    if attempt.error is not None:
        type_name = error_type(attempt)
        # Many mistakes raise the same shape error: only one alone is named; else the
        # exercise's hint for this exception, written for it.
        named = exercise.mistake_hint([(case, Raised(type_name)), *others], False, known)
        return Failure(
            case=case,
            message=raised_message(type_name, attempt.error),
            hint=named or dtype_crash_hint(case, others) or exception_hint(exercise, type_name),
            traceback=attempt.traceback,
            printed=attempt.printed,
            input_independent=type_name in INPUT_INDEPENDENT,
        )
    mismatch = compare_outputs(exercise.outputs, attempt.value, expected)
    if mismatch is None:
        return method_failure(case, attempt)
    return Failure(
        case=case,
        message=mismatch.message,
        hint=exercise.diagnose(case, attempt.value, mismatch, others, known=known),
        expected=expected,
        got=attempt.value,
        output_names=exercise.outputs,
        printed=attempt.printed,
        tolerance=mismatch.tolerance,
    )


def result_of(attempt: Attempt) -> Any:
    """What the learner's function gave, for recognising a mistake: its value, or the type of
    the exception it raised."""
    return Raised(error_type(attempt)) if attempt.error is not None else attempt.value


def others_than(case: Case, evidence: Sequence[Evidence]) -> list[Evidence]:
    """Up to EVIDENCE failing cases other than `case`, for naming a mistake."""
    return [(other, got) for other, got in evidence if other is not case][:EVIDENCE]


def method_failure(case: Case, attempt: Attempt) -> Failure | None:
    """A right value computed another way than the exercise asks: the message says how."""
    if not attempt.method:
        return None
    return Failure(
        case=case,
        message=attempt.method,
        printed=attempt.printed,
        input_independent=True,
        method=True,
    )


def float_dtype(case: Case) -> str:
    """The one floating dtype of the case's arrays ("" when it has none, or several)."""
    found = {str(a.dtype) for a in case.arrays().values() if np.issubdtype(a.dtype, np.floating)}
    return found.pop() if len(found) == 1 else ""


def dtype_crash_hint(case: Case, others: Sequence[Evidence]) -> str:
    """When the function raised on this case's dtype but ran, and was wrong, on another dtype:
    the crash is then one mistake (constants or casts fixed to one dtype, the usual cause)
    hiding a second, and the exercise's hint for an exception, written for code that cannot
    run at all, would send the learner the wrong way. Decided from what the function did on
    the failing cases seen, never from the exception's message. "" when that is not the case."""
    crashed = float_dtype(case)
    ran = {
        float_dtype(other)
        for other, got in others
        if not isinstance(got, Raised) and float_dtype(other) not in ("", crashed)
    }
    raised_elsewhere = any(
        isinstance(got, Raised) and float_dtype(other) != crashed for other, got in others
    )
    if not crashed or len(ran) != 1 or raised_elsewhere:
        return ""
    return say(
        "Your function raised on this {crashed} case, while on {ran} cases it ran and returned "
        "wrong values: the crash hides a second mistake. A crash at one dtype usually comes from "
        "mixing dtypes, such as a constant or a cast fixed to {ran} meeting {crashed} inputs: "
        "make every constant follow the inputs' dtype (x.dtype). Until your function runs on "
        "{crashed}, nothing after the crash, your gradient included, is tested there; fix the "
        "crash, and the next check shows what is wrong with the values.",
        crashed=crashed,
        ran=ran.pop(),
    )


def exception_hint(exercise: Exercise, type_name: str) -> str:
    """A hint for this exception type (`exception:TypeError`), else the shape-error hint
    (`exception`) for a shape-like error, else the exercise's fallback for any exception
    (`error`): what to look at, chosen by the exception's type, never by its message."""
    hints = exercise.hints_by_kind
    keys = [
        f"exception:{type_name}",
        *(["exception"] if type_name in SHAPE_ERRORS else []),
        "error",
    ]
    return say(next((hints[key] for key in keys if key in hints), ""))


def failure_to_show(
    exercise: Exercise,
    failing: list[tuple[Case, Attempt, Outputs]],
    preferred: tuple[Case, Attempt, Outputs] | None = None,
    known: KnownOutputs | None = None,
) -> Failure | None:
    """The failure a report shows, the same rule in the notebook and in the grader: an error
    that does not depend on the case (a NameError: every case fails alike) first; else the
    caller's `preferred` failing case (the notebook's, which it shrinks from), else the
    smallest; its hint names a mistake only if that mistake reproduces the other failing
    cases too. (A method not followed is shown only when no case fails: the callers' rule.)"""
    if not failing:
        return None
    independent = [failed for failed in failing if error_type(failed[1]) in INPUT_INDEPENDENT]
    if independent:
        case, attempt, expected = independent[0]
    else:
        case, attempt, expected = preferred or min(failing, key=lambda f: f[0].size())
    evidence = [(other, result_of(other_attempt)) for other, other_attempt, _ in failing]
    return judge(exercise, case, attempt, expected, others_than(case, evidence), known)
