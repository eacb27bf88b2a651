"""By how much an answer misses the references: the worst ratio of error to tolerance.

A wrong answer that fails only barely (2.3e-4 against 1e-4) would pass on a slightly
different draw or with a slightly looser tolerance; the cases must make each known wrong
answer fail by a clear margin. Tests assert that margin with `worst_excess`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from autograder.judging.attempts import call_learner
from autograder.judging.cases import NOTEBOOK, Case, Profile, draw_cases
from autograder.judging.compare import compare_array
from autograder.judging.exercise import Exercise
from autograder.judging.references import reference_outputs

CLEAR_MARGIN = 10.0


def of_dtype(dtype: Any) -> Callable[[Case], bool]:
    """Selects the cases whose arrays are all of this dtype (each dtype has its tolerance)."""
    return lambda case: all(a.dtype == dtype for a in case.arrays().values())


def checked_cases(exercise: Exercise, profile: Profile = NOTEBOOK) -> list[Case]:
    """The cases a check of this profile runs: the edge cases, then the drawn ones."""
    return exercise.edge_cases() + draw_cases(exercise.strategy(profile), profile)


def worst_excess(
    exercise: Exercise,
    fn: Callable[..., Any],
    profile: Profile = NOTEBOOK,
    keep: Callable[[Case], bool] = lambda case: True,
) -> float:
    """The largest ratio of an entry's error to its tolerance, over the cases `keep` selects
    and every output; infinite when an output is missing, of another shape or dtype, or not
    finite where the reference is, and when the function raises."""
    cases = [case for case in checked_cases(exercise, profile) if keep(case)]
    worst = 0.0
    for case, expected in zip(cases, reference_outputs(exercise, cases), strict=True):
        attempt = call_learner(fn, case, exercise)
        if attempt.error is not None:
            return math.inf
        got = (attempt.value,) if len(exercise.outputs) == 1 else attempt.value
        for name, value, reference in zip(exercise.outputs, got, expected, strict=True):
            mismatch = compare_array(name, value, reference)
            if mismatch is not None:
                worst = max(worst, mismatch.excess if mismatch.kind == "value" else math.inf)
    return worst
