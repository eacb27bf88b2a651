"""Chapter 00 exercise: a warm-up, `warmup_square_vjp(g, x)`, the VJP of y = x**2.

It exists to show how an exercise, its check cell and the check's feedback work; the
references are `jax.vjp` and `tf.GradientTape(...).gradient(..., output_gradients=g)` of
an elementwise square, like every later chapter's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.judging.cases import Case, Profile, dtypes, float_arrays
from autograder.judging.exercise import Exercise, Mistake


@st.composite
def _square_case(draw: st.DrawFn, profile: Profile) -> Case:
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=profile.max_dims, max_side=profile.max_side))
    dtype = draw(dtypes())
    g = draw(float_arrays(dtype, shape))
    x = draw(float_arrays(dtype, shape))
    return Case((("g", g), ("x", x)))


def _square_edges() -> list[Case]:
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


def _square_tf(tf: Any, case: Case) -> tuple[np.ndarray]:
    g, x = (tf.constant(v) for v in case.values())
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    return (tape.gradient(y, x, output_gradients=g).numpy(),)


def _square_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    _, vjp = jax.vjp(lambda x: x * x, arrays["x"])
    return vjp(arrays["g"])


def _derivative_only(g: np.ndarray, x: np.ndarray) -> np.ndarray:
    return 2 * x


def _forgot_two(g: np.ndarray, x: np.ndarray) -> np.ndarray:
    return g * x


WARMUP_SQUARE_VJP = Exercise(
    name="warmup_square_vjp",
    returns="ndarray",
    outputs=("grad_x",),
    strategy=_square_case,
    edge_cases=_square_edges,
    tf_reference=_square_tf,
    jax_reference=_square_jax,
    references_text="jax.vjp and tf.GradientTape of x * x, with output_gradients=g",
    mistakes=(
        Mistake(
            "derivative_only",
            "You returned the derivative 2*x but did not multiply by the incoming cotangent g. "
            "A VJP is g times the derivative: g * 2 * x.",
            _derivative_only,
        ),
        Mistake(
            "forgot_two",
            "You returned g * x: the derivative of x**2 is 2*x, so the VJP is g * 2 * x.",
            _forgot_two,
        ),
    ),
    hints_by_kind={
        "error": (
            "The traceback names the line of your code that raised. warmup_square_vjp(g, x) gets "
            "two numpy arrays of the same shape and returns one array: g * 2 * x."
        ),
        "shape": "The cotangent of x has x's shape: multiply elementwise, g * 2 * x.",
        "value": (
            "For y = x**2 elementwise, the VJP is g * 2 * x (the cotangent times the derivative)."
        ),
    },
)

EXERCISES = (WARMUP_SQUARE_VJP,)
