"""Chapter 03 exercises: `unbroadcast(g, shape)` and `matmul_vjp(g, a, b)`, and the guesses
asked before the chapter's traps (`PREDICTIONS`).

The references are the frameworks' own VJPs of `broadcast_to` and of a batched `matmul`,
each written once (`vjp_reference`). The private `_sum_to` and `_matmul_rule` below only build
the known wrong answers (learner functions with one piece broken); verdicts always come from
TensorFlow and JAX. Neither is an answer a learner could import: `_sum_to` takes an array of
the target shape, not the shape, and `_matmul_rule` needs its transpose named
(tests/exercises/test_no_importable_answers.py).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from hypothesis import strategies as st

from autograder.exercises.common import broadcast_cases, broadcastable_shapes, rng_array
from autograder.judging.cases import Case, Profile, dtypes, float_arrays
from autograder.judging.derived import vjp_reference
from autograder.judging.exercise import Exercise, Mistake
from autograder.judging.prediction import Prediction


def _sum_to(g: np.ndarray, like: np.ndarray) -> np.ndarray:
    """g summed to the shape of the array `like`."""
    shape = like.shape
    leading = g.ndim - len(shape)
    summed = g.sum(axis=tuple(range(leading)))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and summed.shape[i] != 1)
    return summed.sum(axis=stretched, keepdims=True)


def _swap(x: np.ndarray) -> np.ndarray:
    return np.swapaxes(x, -1, -2)


def _matmul_rule(
    g: np.ndarray, a: np.ndarray, b: np.ndarray, t: Callable[[np.ndarray], np.ndarray]
) -> tuple[np.ndarray, ...]:
    """(g @ t(b), t(a) @ g), each summed to its operand's shape: right with `t` = _swap."""
    return _sum_to(g @ t(b), a), _sum_to(t(a) @ g, b)


def _size_one_axes(shape: tuple[int, ...], offset: int = 0) -> tuple[int, ...]:
    return tuple(offset + i for i, n in enumerate(shape) if n == 1)


# ---------------------------------------------------------------- unbroadcast


@st.composite
def _unbroadcast_case(draw: st.DrawFn, profile: Profile) -> Case:
    shapes = draw(broadcastable_shapes(profile))
    g = draw(float_arrays(draw(dtypes()), shapes.result_shape))
    return Case((("g", g), ("shape", shapes.input_shapes[0])))


def _unbroadcast_edges() -> list[Case]:
    rng = np.random.default_rng(3)
    pairs = [
        ((4, 8, 8), (8, 8), np.float32, "a weight shared by a batch"),
        ((5, 4, 3, 2), (4, 1, 2), np.float32, "missing and size-1 axes together"),
        ((2, 3), (), np.float64, "a scalar"),
        ((2, 3), (1, 1), np.float32, "only size-1 axes"),
        ((3,), (3,), np.float32, "nothing was broadcast"),
    ]
    return [
        Case((("g", rng_array(rng, g_shape, dtype)), ("shape", shape)), label=label)
        for g_shape, shape, dtype, label in pairs
    ]


def _mean_instead_of_sum(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    averaged = g.mean(axis=tuple(range(g.ndim - len(shape))))
    return averaged.mean(axis=_size_one_axes(shape), keepdims=True).astype(g.dtype)


def _no_keepdims(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    # Self-contained, as a learner's cell is: tests/submissions.py grades this source.
    leading = g.ndim - len(shape)
    ones = tuple(leading + i for i, n in enumerate(shape) if n == 1)
    return g.sum(axis=tuple(range(leading)) + ones)


def _left_aligned(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    summed = g.sum(axis=tuple(range(len(shape), g.ndim)))
    return summed.sum(axis=_size_one_axes(shape), keepdims=True)


def _left_aligned_reshaped(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    # Self-contained, as a learner's cell is. Published rules written this way sum where
    # `shape` has 1 counting g's axes from the left, sum g's trailing axes away, and force the
    # shape: a reshape that raises wherever the sizes no longer fit.
    ones = tuple(i for i, n in enumerate(shape) if n == 1)
    summed = g.sum(axis=ones, keepdims=True)
    return summed.sum(axis=tuple(range(len(shape), g.ndim))).reshape(shape)


UNBROADCAST = Exercise(
    signature="unbroadcast(g, shape) -> ndarray",
    nudge=(
        "Broadcasting lines shapes up from the right and stretches size-1 axes. Which axes of g did"
        " it add, which did it stretch, and what does a VJP do with the copies it made?"
    ),
    outputs=("result",),
    cases=_unbroadcast_case,
    edges=_unbroadcast_edges,
    reference=vjp_reference(
        lambda xp, x, g: xp.broadcast_to(x, g.shape),
        wrt=("x",),
        inputs={"x": lambda xp, g, shape: xp.zeros(shape, g.dtype)},
    ),
    references_text="jax.vjp and tf.GradientTape of broadcast_to(x, g.shape)",
    invoke="course_helpers:invoke_own_code",  # refuses coursekit's broadcast_plan
    mistakes=(
        Mistake(
            "leading_only",
            "You summed away the missing leading axes but not the size-1 axes. Where `shape` has 1 "
            "and g has n > 1, that input was stretched too: sum over that axis with keepdims=True.",
            lambda g, shape: g.sum(axis=tuple(range(g.ndim - len(shape)))),
        ),
        Mistake(
            "no_keepdims",
            "You summed over the right axes but dropped the size-1 ones. Sum those with "
            "keepdims=True so the result has exactly `shape`.",
            _no_keepdims,
        ),
        Mistake(
            "ignores_cotangent",
            "Your result does not depend on the values in g (it equals unbroadcasting a cotangent "
            "of ones). Sum the incoming cotangent itself.",
            lambda g, shape: _sum_to(np.ones_like(g), np.empty(shape)),
        ),
        Mistake(
            "mean",
            "You averaged instead of summing. Each copy made by broadcasting contributes its own "
            "cotangent, and the VJP adds them up.",
            _mean_instead_of_sum,
        ),
        Mistake(
            "left_aligned",
            "You lined the shapes up from the left. Broadcasting aligns shapes from the right: the "
            "axes g has in addition are its leading ones.",
            _left_aligned,
        ),
        Mistake(
            "left_aligned_reshaped",
            "You did sum, but over the wrong axes: you lined the shapes up from the left, then "
            "reshaped to `shape`, which raises where the sizes no longer fit. Broadcasting "
            "aligns shapes from the right: g's extra axes are its leading ones, and axis i of "
            "`shape` is axis i + (g.ndim - len(shape)) of g.",
            _left_aligned_reshaped,
        ),
        # Section 2's line for (6, 4, 5) -> (4, 1), copied: the axes of one pair of shapes.
        Mistake(
            "copied_hand_computation",
            "You summed fixed axes (0, then 1 with keepdims=True): that is section 2's computation "
            "for broadcasting (4, 1) to (6, 4, 5) only. Work the axes out from g.ndim and `shape`: "
            "how many leading axes `shape` lacks, and where it has 1.",
            lambda g, shape: g.sum(axis=0).sum(axis=1, keepdims=True),
        ),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised. Sum g over its extra "
        "leading axes, then over every axis where `shape` has a 1 (keepdims=True), and return an "
        "array of exactly `shape`.",
        "exception": "g cannot simply be reshaped or indexed to `shape`: its extra axes hold "
        "contributions that must be added up (summed). If you did sum, check over which axes: "
        "broadcasting aligns shapes from the right, so g's extra axes are its leading ones.",
        "shape": "The result must have exactly `shape`: sum away g's extra leading axes, then sum "
        "with keepdims=True every axis where `shape` has 1 and g does not.",
        "value": "The shape is right but the values are not: sum (do not average, do not pick) "
        "over exactly the broadcast axes.",
    },
    reference_implementation="ch03_unbroadcasting:unbroadcast",  # matmul_vjp is checked with it
)


# ---------------------------------------------------------------- matmul_vjp


def _matmul_edges() -> list[Case]:
    rng = np.random.default_rng(4)
    qa_x = np.array([[[1, 1], [2, 3]], [[4, 5], [6, 7]]], dtype=np.float32)
    qa_y = np.array([[3, -7], [-1, 5]], dtype=np.float32)
    cases = [
        Case(
            (("g", rng_array(rng, (2, 2, 2), np.float32)), ("a", qa_x), ("b", qa_y)),
            label="the Q&A case, (2,2,2) @ (2,2)",
        )
    ]
    shapes = [
        ((4, 4, 8), (8, 8), np.float32, "a batch times a shared weight"),
        ((6, 6, 5, 4), (4, 3), np.float32, "two batch axes"),
        ((3, 1, 2, 4), (5, 4, 2), np.float64, "batch axes broadcast on both sides"),
        ((2, 3), (3, 2), np.float32, "plain 2-D"),
    ]
    for a_shape, b_shape, dtype, label in shapes:
        a, b = rng_array(rng, a_shape, dtype), rng_array(rng, b_shape, dtype)
        g = rng_array(rng, np.matmul(a, b).shape, dtype)
        cases.append(Case((("g", g), ("a", a), ("b", b)), label=label))
    return cases


def _first_axis_loop(g: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
    # Section 3's per-matrix rule copied (a loop over the first axis, `.T` on the slices),
    # then unbroadcast: right for a 3-D a times a 2-D b only.
    g_a = np.stack([g_i @ b.T for g_i in g])
    g_b = np.stack([a_i.T @ g_i for a_i, g_i in zip(a, g, strict=True)])
    return _sum_to(g_a, a), _sum_to(g_b, b)


MATMUL_VJP = Exercise(
    signature="matmul_vjp(g, a, b) -> (g_a, g_b)",
    nudge=(
        "Let the shapes guide you: for each operand, which product of g with the other operand has "
        "exactly that operand's shape? Only the last two axes are the matrices, and batch axes may "
        "have been broadcast."
    ),
    outputs=("g_a", "g_b"),
    cases=broadcast_cases("g", "a", "b", signature="(m,n),(n,p)->(m,p)"),
    edges=_matmul_edges,
    reference=vjp_reference(lambda xp, a, b: xp.matmul(a, b), wrt=("a", "b")),
    references_text="jax.vjp(jnp.matmul) and tf.GradientTape(tf.linalg.matmul)",
    mistakes=(
        Mistake(
            "batch_not_summed",
            "The cotangent of an operand whose batch axes were broadcast still has the batch axes: "
            'TensorFlow.js would stop here with "Error in gradient for op BatchMatMul. The '
            "gradient of input 'b' has shape …, which does not match the shape of the input …\". "
            "Reduce each cotangent to its operand's shape with your unbroadcast.",
            lambda g, a, b: (g @ _swap(b), _swap(a) @ g),
        ),
        Mistake(
            "all_axes_transposed",
            "np.transpose(x) and x.T reverse ALL axes; a batch of matrices must transpose only the "
            "last two. Use np.swapaxes(x, -1, -2) (or x.mT).",
            lambda g, a, b: _matmul_rule(g, a, b, np.transpose),
        ),
        Mistake(
            "ignores_cotangent",
            "Your cotangents do not depend on the values in g (they equal what a cotangent of ones "
            "gives). Multiply by the incoming cotangent g.",
            lambda g, a, b: _matmul_rule(np.ones_like(g), a, b, _swap),
        ),
        Mistake(
            "swapped_outputs",
            "You returned (g_b, g_a). Return the cotangent of a first.",
            lambda g, a, b: _matmul_rule(g, a, b, _swap)[::-1],
        ),
        Mistake(
            "first_axis_loop",
            "You looped over the first axis, as the per-matrix demo of section 3 does: that is "
            "right only for a 3-D a times a 2-D b. Batch axes may be several, on either operand, "
            "and size-1 ones broadcast: transpose every matrix of the batch at once (the last two "
            "axes), multiply, then unbroadcast each cotangent.",
            _first_axis_loop,
        ),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised. g_a = g @ "
        "np.swapaxes(b, -1, -2) and g_b = np.swapaxes(a, -1, -2) @ g (the last two axes only), "
        "each then unbroadcast to its input's shape; print the shapes of the product that failed.",
        "exception": "A matmul shape error inside the rule usually means one of two things: "
        "np.transpose(x) and x.T reverse ALL axes, while a batch of matrices must swap only the "
        "last two (np.swapaxes(x, -1, -2) or x.mT); or a product in the wrong order (g_a = g @ "
        "b^T, g_b = a^T @ g).",
        "shape": "g_a must have a's shape and g_b b's shape. For y = a @ b: g_a = g @ b^T "
        "and g_b = a^T @ g with ^T swapping the last two axes, then each reduced to its "
        "operand's shape (unbroadcast) over broadcast batch axes.",
        "value": "Right shapes, wrong values: check the order of each product (g @ b^T, a^T @ g) "
        "and that ^T swaps only the last two axes.",
    },
    depends_on=("unbroadcast",),  # checked with the reference unbroadcast in its place
)

EXERCISES = (UNBROADCAST, MATMUL_VJP)

# ---------------------------------------------------------------- predictions, before the traps

PREDICTIONS = (
    Prediction(
        name="unbroadcasting_per_matrix_shape",
        question=(
            "x has shape (4, 4, 8) and W (8, 8). The 2-D rule is applied to each product x[i] @ W "
            "and the results are stacked. What shape does W's cotangent come back with? (a shape, "
            "e.g. (8, 8))"
        ),
        answer=(4, 8, 8),
        why=(
            "One (8, 8) cotangent per copy of W that broadcasting made: W is one variable, so its "
            "cotangent is their sum, and nothing in a per-matrix rule adds them up."
        ),
    ),
    Prediction(
        name="unbroadcasting_tape_with_dot_T",
        question=(
            "Our tape's matmul rule is the 2-D rule written with `.T`. On x:(2, 2, 2), y:(2, 2), "
            "z:(2, 2, 2), its gradient for y will:"
        ),
        choices={
            "a": "equal TensorFlow's and JAX's",
            "b": "raise a shape error",
            "c": "come back with y's shape (2, 2), but other numbers",
        },
        answer="c",
        why=(
            "With square matrices every product still has matching shapes, so nothing raises; the "
            "numbers are wrong all the same. The next cells show why."
        ),
    ),
    Prediction(
        name="unbroadcasting_dot_T_shape",
        question=(
            "t has shape (5, 4, 3): a batch of five 4x3 matrices. What shape does t.T have? (a "
            "shape, e.g. (5, 3, 4))"
        ),
        answer=(3, 4, 5),
        why=(
            "`.T` (like np.transpose with no axes) reverses all the axes, batch axes included; it "
            "is the matrix transpose only for a 2-D array."
        ),
    ),
)
