"""Judging what a child reported, read as untrusted data, with the engine the notebook
check uses: one verdict per exercise, all or nothing, with the smallest failing case."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from autograder.grading import untrusted
from autograder.judging.attempts import (
    Attempt,
    error_type,
    fails,
    failure_to_show,
    method_failure,
    not_answered,
    verdict,
)
from autograder.judging.cases import Case
from autograder.judging.exercise import Exercise, KnownOutputs, Outputs
from autograder.judging.report import FAILED, NOT_ANSWERED, PASSED, Report, dependency_note
from autograder.locale import say
from autograder.sandbox.confined import wire

NOT_ANSWERED_TEXT = "Not answered:"


class RemoteError(Exception):
    """An exception raised inside the child, known only by its type name and message."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(message)
        self.type_name = type_name


# An exercise's verdict: a wrong or crashed answer is "failed"; "not answered" is one whose
# function (or a helper it calls) still raises the notebook's NotImplementedError.
Status = Literal["passed", "failed", "not answered"]


@dataclass
class ExerciseResult:
    name: str
    score: float
    max_score: float
    passed: bool
    output: str
    # What the child says its cases took: only a trusted run's (prepare --warm-with) is used,
    # to balance the exercises between parts (split_exercises).
    seconds: float = 0.0
    # None: "passed" or "failed", as `passed` says.
    status: Status | None = None

    def __post_init__(self) -> None:
        if self.status is None:
            self.status = PASSED if self.passed else FAILED


def read_outputs(out: Path, name: str) -> tuple[dict | None, dict[str, np.ndarray]]:
    """The child's report and arrays, read as untrusted data; anything refused reads as None."""
    try:
        report_file, arrays_file = wire.output_files(out, name)
        report = wire.validated_report(untrusted.read_json(report_file))
        arrays = untrusted.read_packed_npz(arrays_file)
    except (untrusted.Untrusted, ValueError):
        return None, {}
    return report, arrays


def _item(record: Any, arrays: dict[str, np.ndarray]) -> Any:
    if not isinstance(record, dict):
        return None
    if record.get("kind") == "array" and record.get("key") in arrays:
        array = arrays[record["key"]]
        return array[()] if record.get("generic") else array
    return type(str(record.get("type", "object")), (), {"__module__": str(record.get("module"))})()


def attempt_from(record: Any, arrays: dict[str, np.ndarray]) -> Attempt:
    if not isinstance(record, dict):
        return Attempt(error=RemoteError("MissingResult", "no result was recorded"))
    if record.get("kind") == "error":
        error = RemoteError(str(record.get("type")), str(record.get("message")))
        return Attempt(
            error=error,
            traceback=str(record.get("traceback", ""))[-3000:],
            raised_in=str(record.get("function", ""))[:100],
        )
    method = str(record.get("method", ""))[:2000]
    if record.get("kind") == "sequence":
        items = [_item(item, arrays) for item in record.get("items", [])]
        return Attempt(
            value=tuple(items) if record.get("type") == "tuple" else items, method=method
        )
    return Attempt(value=_item(record, arrays), method=method)


def exercise_result(
    exercise: Exercise, passed: bool, output: str, status: Status | None = None
) -> ExerciseResult:
    return ExerciseResult(exercise.name, 1.0 if passed else 0.0, 1.0, passed, output, status=status)


def cases_run(records: list[dict], total: int) -> int:
    """How many cases the child ran: all of them, or fewer when its last case raised an
    error that ends the run (wire.STOPPING_ERRORS). Only an error can end it early, so a
    child that stops on its own can only fail."""
    last = records[-1] if records else {}
    if (
        len(records) < total
        and last.get("kind") == "error"
        and last.get("type") in wire.STOPPING_ERRORS
    ):
        return len(records)
    return total


def judge_outputs(
    exercise: Exercise,
    cases: list[Case],
    refs: list[Outputs],
    report: dict,
    arrays: dict[str, np.ndarray],
    known: KnownOutputs | None = None,
) -> ExerciseResult:
    """All-or-nothing per exercise; feedback shows the smallest failing case. `known`: what
    the exercise's mistakes give on these cases, as `prepare` stored them (Assignment.known)."""
    if report["missing"]:
        defined = ", ".join(report["defined"]) or say("none")
        return exercise_result(
            exercise,
            False,
            say(
                "No function named `{name}` was found after running the notebook. Keep the "
                "exercise's name and signature `{signature}`. Functions defined: {defined}.",
                name=exercise.name,
                signature=exercise.signature,
                defined=defined,
            ),
        )
    records = report["cases"]
    ran = cases_run(records, len(cases))
    cases, refs = cases[:ran], refs[:ran]
    attempts = [
        attempt_from(records[i] if i < len(records) else None, arrays) for i in range(len(cases))
    ]
    framework = next((a for a in attempts if error_type(a) == "FrameworkUsed"), None)
    if framework is not None:
        return exercise_result(
            exercise,
            False,
            say(
                "`{name}` calls TensorFlow or JAX. This is a numpy exercise: the gradient rule "
                "must be your own code, so it scores 0. ({error})",
                name=exercise.name,
                error=framework.error,
            ),
        )
    checked = len(cases)
    if report["timeout"]:
        return exercise_result(
            exercise,
            False,
            say(
                "`{name}` did not finish its {checked} cases within the time limit (finished "
                "{finished}). Look for an endless loop.",
                name=exercise.name,
                checked=checked,
                finished=len(records),
            ),
        )
    failing = [
        (case, attempt, expected)
        for case, attempt, expected in zip(cases, attempts, refs, strict=True)
        if fails(exercise, attempt, expected)
    ]
    unanswered = bool(failing) and all(not_answered(attempt) for _, attempt, _ in failing)
    # A wrong value or an error first; a method not followed only when every value is right.
    # Not answered needs neither (nor the mistakes that name a failure, which would bring
    # the exercise's framework into this process).
    shown = (
        None
        if unanswered
        else failure_to_show(exercise, failing, known=known)
        or next(
            (
                method_failure(case, attempt)
                for case, attempt in zip(cases, attempts, strict=False)
                if attempt.method
            ),
            None,
        )
    )
    stub = failing[0][1].raised_in if unanswered else ""
    feedback = verdict(exercise, exercise.name, checked, shown, unanswered=unanswered, stub=stub)
    text = _grader_text(exercise, feedback, len(failing))
    return exercise_result(
        exercise, feedback.passed, text, NOT_ANSWERED if feedback.status == NOT_ANSWERED else None
    )


def _grader_text(exercise: Exercise, report: Report, failed: int) -> str:
    """The verdict in the grader's words: hidden cases, and how many of them failed."""
    if report.status == NOT_ANSWERED:
        where = (
            say("`{stub}` (called by `{exercise}`)", stub=report.stub, exercise=exercise.name)
            if report.stub and report.stub != exercise.name
            else f"`{exercise.name}`"
        )
        return (
            say(NOT_ANSWERED_TEXT)
            + " "
            + say(
                "{where} still raises NotImplementedError. Replace that line with your code.",
                where=where,
            )
        )
    if report.passed:
        return say("Passed all {count} cases (hidden cases included).", count=report.cases_checked)
    return (
        say("Failed {failed} of {count} cases.", failed=failed, count=report.cases_checked)
        + f" {report}"
    )


def with_dependencies(exercise: Exercise, verdicts: dict[str, ExerciseResult]) -> ExerciseResult:
    """The exercise's result, saying which exercises it calls failed: it was graded with
    correct ones in their place, so their mistakes cost their own points only."""
    result = verdicts[exercise.name]
    if result.status == NOT_ANSWERED:
        return result
    wrong = [name for name in exercise.depends_on if name in verdicts and not verdicts[name].passed]
    note = dependency_note(exercise.name, wrong)
    return replace(result, output=f"{result.output}\n{note}") if note else result
