"""An exercise's verdict carries its status: whether it was answered is decided by that
status, never by the (translated) words its feedback starts with."""

from __future__ import annotations

from autograder.exercises import EXERCISES
from autograder.grading.verdicts import (
    NOT_ANSWERED_TEXT,
    ExerciseResult,
    exercise_result,
    judge_outputs,
    with_dependencies,
)
from autograder.judging.report import NOT_ANSWERED
from autograder.locale import say

MATMUL_VJP = EXERCISES["matmul_vjp"]  # calls unbroadcast (depends_on)


def _stub_report(count: int) -> dict:
    """What the child writes for a function that still raises the notebook's stub error."""
    error = {
        "kind": "error",
        "type": "NotImplementedError",
        "message": "",
        "function": MATMUL_VJP.name,
    }
    return {
        "missing": False,
        "defined": [MATMUL_VJP.name],
        "timeout": False,
        "cases": [error] * count,
    }


def test_a_stub_is_not_answered_and_gets_no_note_about_what_it_calls():
    cases = MATMUL_VJP.edge_cases()[:2]
    result = judge_outputs(MATMUL_VJP, cases, [None] * len(cases), _stub_report(len(cases)), {})
    assert result.status == NOT_ANSWERED and not result.passed
    wrong_dependency = exercise_result(EXERCISES["unbroadcast"], False, "Failed 1 of 2 cases.")
    verdicts = {MATMUL_VJP.name: result, "unbroadcast": wrong_dependency}
    assert with_dependencies(MATMUL_VJP, verdicts) == result


def test_the_status_decides_not_the_words_the_feedback_starts_with():
    """A failed answer whose feedback happens to begin like a not-answered one still says
    which exercises it calls were wrong."""
    failed = exercise_result(MATMUL_VJP, False, say(NOT_ANSWERED_TEXT) + " ...")
    assert failed.status == "failed"
    wrong_dependency = exercise_result(EXERCISES["unbroadcast"], False, "Failed 1 of 2 cases.")
    verdicts = {MATMUL_VJP.name: failed, "unbroadcast": wrong_dependency}
    noted = with_dependencies(MATMUL_VJP, verdicts)
    assert noted.output != failed.output and "unbroadcast" in noted.output
    assert ExerciseResult("unbroadcast", 1.0, 1.0, True, "").status == "passed"
