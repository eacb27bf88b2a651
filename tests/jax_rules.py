"""What the JAX custom-rule chapters' tests share (chapters 05 and 06): the references on a
chapter's own cases, a central difference, and the checks every custom rule must meet."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autograder.judging.cases import NOTEBOOK, draw_cases
from autograder.judging.exercise import Exercise
from autograder.judging.references import reference_outputs


def reference_table(exercise: Exercise) -> tuple[list, list]:
    """The exercise's notebook cases and the frameworks' outputs on each."""
    cases = exercise.edge_cases() + draw_cases(exercise.strategy(NOTEBOOK), NOTEBOOK)
    return cases, reference_outputs(exercise, cases)


def central_difference(f: Callable[[Any], Any], x: Any, v: Any, h: float = 1e-6) -> Any:
    """The derivative of f at x along v, to O(h^2): what a reference is held to."""
    return (f(x + h * v) - f(x - h * v)) / (2 * h)


def assert_primals_are_the_value(exercise: Exercise) -> None:
    """jax.jvp and jax.vjp return the primal of the learner's rule (the JVP rule, or fwd),
    which may differ from the function's; the references expect the function's value."""
    primals = [name for name in exercise.outputs if name.endswith("_primal")]
    assert primals, exercise.name
    for outputs in reference_table(exercise)[1]:
        for name in primals:
            np.testing.assert_array_equal(outputs[exercise.outputs.index(name)], outputs[0])


def assert_jax_chapter(exercises: Sequence[Exercise], chapter: str, harness: str) -> None:
    """Every exercise of the chapter imports JAX only and is called by the chapter's harness."""
    for exercise in exercises:
        assert exercise.frameworks == ("jax",)
        assert exercise.invoker().__wrapped__.__module__ == f"autograder.harness.{harness}"
        assert exercise.chapter == chapter
