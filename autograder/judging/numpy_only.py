"""A numpy exercise answered with TensorFlow or JAX: refused before any case runs.

The grader's child lets a numpy exercise import a framework and raises FrameworkUsed at any
use, so such an answer scores 0 there; the notebook check reads the answer's code (and that of
the learner's functions it calls) for a framework and fails it the same way, with the grader's
words, so both sides give one verdict and no numpy exercise passes by copying a demo's
framework call.
"""

from __future__ import annotations

from autograder.harness.course_helpers import frameworks_used
from autograder.judging.exercise import Exercise
from autograder.judging.report import FAILED, Failure, Report
from autograder.locale import say

__all__ = ["framework_refused", "frameworks_used"]


def framework_refused(exercise: Exercise, function: str, used: list[str]) -> Report:
    """The failed report of a numpy exercise whose answer reaches TensorFlow or JAX by `used`."""
    message = say(
        "`{name}` calls TensorFlow or JAX. This is a numpy exercise: the gradient "
        "rule must be your own code, so it scores 0. ({error})",
        name=exercise.name,
        error=say("it uses {names}", names=", ".join(sorted(set(used)))),
    )
    cases = exercise.edge_cases()
    failure = Failure(
        case=cases[0] if cases else None, message=message, input_independent=True, method=True
    )
    return Report(exercise.name, function, FAILED, 0, exercise.references_text, failure=failure)
