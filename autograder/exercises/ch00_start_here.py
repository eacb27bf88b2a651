"""Chapter 00 exercise: a warm-up, `warmup_cube_vjp(g, x)`, the VJP of y = x**3.

It exists to show how an exercise, its check cell and the check's feedback work; the
references are `jax.vjp` and `tf.GradientTape(...).gradient(..., output_gradients=g)` of
an elementwise cube, like every later chapter's. The chapter's demo computes the VJP of
x**2, so the warm-up asks for another function: copying the demo is a named mistake.
"""

from __future__ import annotations

import numpy as np

from autograder.exercises.common import rng_array, same_shape_arrays
from autograder.judging.cases import Case
from autograder.judging.derived import vjp_reference
from autograder.judging.exercise import Exercise, Mistake
from autograder.judging.prediction import Prediction


def _cube_edges() -> list[Case]:
    rng = np.random.default_rng(0)
    ones = np.array([1.0, 1.0, 1.0], np.float32), np.array([1.0, 2.0, 3.0], np.float32)
    scalar = np.array(0.5), np.array(-3.0)
    random = rng_array(rng, (2, 3), np.float32), rng_array(rng, (2, 3), np.float32)
    return [
        Case((("g", g), ("x", x)), label=label)
        for (g, x), label in (
            (ones, "a cotangent of ones"),
            (scalar, "a scalar (0-d array)"),
            (random, "a 2-D float32 array"),
        )
    ]


WARMUP_CUBE_VJP = Exercise(
    signature="warmup_cube_vjp(g, x) -> ndarray",
    nudge=(
        "A VJP chains two things: the derivative of the cube at each entry of x, and the cotangent "
        "g arriving at y. Look at how the frameworks' VJP of the square above combined the two."
    ),
    outputs=("g_x",),
    cases=same_shape_arrays("g", "x"),
    edges=_cube_edges,
    reference=vjp_reference(lambda xp, x: x * x * x, wrt=("x",)),
    references_text="jax.vjp and tf.GradientTape of x * x * x, with output_gradients=g",
    mistakes=(
        Mistake(
            "derivative_only",
            "You returned the derivative of x**3 but did not multiply by "
            "the incoming cotangent g. A VJP is the cotangent times the derivative, "
            "elementwise.",
            lambda g, x: 3 * x**2,
        ),
        Mistake(
            "copied_square_demo",
            "You returned g * 2 * x: that is the demo's VJP, of y = "
            "x**2. Here y = x**3: differentiate x**3 and multiply by g.",
            lambda g, x: g * 2 * x,
        ),
        Mistake(
            "forgot_the_power_factor",
            "You returned g * x**2: the derivative of x**n brings "
            "the exponent n down as a factor (the power rule).",
            lambda g, x: g * x**2,
        ),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised. warmup_cube_vjp(g, x) "
        "gets two numpy arrays of the same shape and returns one array of that shape.",
        "shape": "The cotangent of x has x's shape: the rule is elementwise, no sum.",
        "value": "For y = x**3 elementwise, the VJP is the cotangent g times the derivative of "
        "x**3, elementwise.",
    },
)

EXERCISES = (WARMUP_CUBE_VJP,)

PREDICTIONS = (
    Prediction(
        name="ones_cotangent_hides_a_bug",
        question=(
            "forgets_the_cotangent returns the derivative 3 * x**2 and ignores g. With a "
            "cotangent of ones it gives the right VJP. Will the check catch it?"
        ),
        choices={
            "a": "no: it passes, the derivative is what a VJP returns",
            "b": "yes: the check's cotangents are random, so g matters",
        },
        answer="b",
        why=(
            "A VJP is g times the derivative; with g = 1 the two agree, so a check that only "
            "used ones would pass this bug. Every check in the course draws random cotangents."
        ),
    ),
)
