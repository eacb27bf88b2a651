"""Chapter 00 exercise: a warm-up, `warmup_cube_vjp(g, x)`, the VJP of y = x**3.

It exists to show how an exercise, its check cell and the check's feedback work; the
references are `jax.vjp` and `tf.GradientTape(...).gradient(..., output_gradients=g)` of
an elementwise cube, like every later chapter's. The chapter's demo computes the VJP of
x**2, so the warm-up asks for another function: copying the demo is a named mistake.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.judging.cases import Case, Profile, dtypes, float_arrays
from autograder.judging.derived import two_references
from autograder.judging.exercise import Exercise, Mistake
from autograder.judging.prediction import Prediction

WHY = "TODO(issue 41): written before references were derived from one forward"


@st.composite
def _cube_case(draw: st.DrawFn, profile: Profile) -> Case:
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=profile.max_dims, max_side=profile.max_side))
    dtype = draw(dtypes())
    g = draw(float_arrays(dtype, shape))
    x = draw(float_arrays(dtype, shape))
    return Case((("g", g), ("x", x)))


def _cube_edges() -> list[Case]:
    rng = np.random.default_rng(0)
    cases = [
        Case(
            (
                ("g", np.array([1.0, 1.0, 1.0], np.float32)),
                ("x", np.array([1.0, 2.0, 3.0], np.float32)),
            ),
            label="a cotangent of ones",
        ),
        Case((("g", np.array(0.5)), ("x", np.array(-3.0))), label="a scalar (0-d array)"),
    ]
    g = rng.uniform(-3, 3, size=(2, 3)).round(1).astype(np.float32)
    x = rng.uniform(-3, 3, size=(2, 3)).round(1).astype(np.float32)
    cases.append(Case((("g", g), ("x", x)), label="a 2-D float32 array"))
    return cases


def _cube_tf(tf: Any, case: Case) -> tuple[np.ndarray]:
    g, x = (tf.constant(v) for v in case.values())
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x * x
    return (tape.gradient(y, x, output_gradients=g).numpy(),)


def _cube_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    _, vjp = jax.vjp(lambda x: x * x * x, arrays["x"])
    return vjp(arrays["g"])


def _derivative_only(g: np.ndarray, x: np.ndarray) -> np.ndarray:
    return 3 * x**2


def _copied_square_demo(g: np.ndarray, x: np.ndarray) -> np.ndarray:
    return g * 2 * x


def _forgot_the_power_factor(g: np.ndarray, x: np.ndarray) -> np.ndarray:
    return g * x**2


WARMUP_CUBE_VJP = Exercise(
    signature="warmup_cube_vjp(g, x) -> ndarray",
    outputs=("grad_x",),
    cases=_cube_case,
    edges=_cube_edges,
    reference=two_references(tf=_cube_tf, jax=_cube_jax, why=WHY),
    references_text="jax.vjp and tf.GradientTape of x * x * x, with output_gradients=g",
    mistakes=(
        Mistake(
            "derivative_only",
            "You returned the derivative of x**3 but did not multiply by the incoming cotangent "
            "g. A VJP is the cotangent times the derivative, elementwise.",
            _derivative_only,
        ),
        Mistake(
            "copied_square_demo",
            "You returned g * 2 * x: that is the demo's VJP, of y = x**2. Here y = x**3: "
            "differentiate x**3 and multiply by g.",
            _copied_square_demo,
        ),
        Mistake(
            "forgot_the_power_factor",
            "You returned g * x**2: the derivative of x**n brings the exponent n down as a "
            "factor (the power rule).",
            _forgot_the_power_factor,
        ),
    ),
    hints_by_kind={
        "error": (
            "The traceback names the line of your code that raised. warmup_cube_vjp(g, x) gets "
            "two numpy arrays of the same shape and returns one array of that shape."
        ),
        "shape": "The cotangent of x has x's shape: the rule is elementwise, no sum.",
        "value": (
            "For y = x**3 elementwise, the VJP is the cotangent g times the derivative of x**3, "
            "elementwise."
        ),
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
