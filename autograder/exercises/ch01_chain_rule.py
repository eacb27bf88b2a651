"""Chapter 01 exercises: what `tape.gradient` returns for a vector output, the Q&A gradient
computed in two parts through a cotangent, and each example's gradient from one cotangent each.

`predict_tape_gradient` is a numpy exercise. `qa_gradients` and `per_example_gradients` are done
with TensorFlow or JAX (either may be used), so their `invoke`
(autograder/harness/ch01_chain_rule.py) turns returned tensors into numpy arrays. The private
helpers below only build the known wrong answers; verdicts always come from TensorFlow and JAX.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
from hypothesis import strategies as st

from autograder.exercises.common import rng_array, seeded_arrays
from autograder.judging.cases import Case, Profile, Shape, dtypes, shape_menu
from autograder.judging.derived import two_references, vjp_reference
from autograder.judging.exercise import Exercise, Mistake
from autograder.judging.prediction import Prediction

F32 = np.dtype(np.float32)

# Tensors become arrays, shape errors ValueError.
TO_NUMPY_INVOKE = "ch01_chain_rule:invoke_to_numpy"
QA_INVOKE = "ch01_chain_rule:invoke_qa"  # the same, and the method: two parts through a cotangent
# the same, and the method: one VJP with a cotangent per example, no Jacobian builder
PER_EXAMPLE_INVOKE = "ch01_chain_rule:invoke_per_example"


def _rng_array(rng: np.random.Generator, shape: Shape, dtype: Any) -> np.ndarray:
    return rng_array(rng, shape, dtype, bound=1.5, decimals=2)


# ---------------------------------------------------------------- predict_tape_gradient


# (y's shape, x's shape): a scalar y, a scalar x, vectors, y of two axes (summing only the
# first is wrong), equal shapes, size-1 axes; grading adds larger ones.
TAPE_SHAPES: tuple[tuple[Shape, Shape], ...] = (
    ((), (3,)),
    ((2,), ()),
    ((3,), (4,)),
    ((2, 3), (3,)),
    ((2, 2), (2, 2)),
    ((1, 4), (2, 1)),
)
TAPE_GRADING: tuple[tuple[Shape, Shape], ...] = (((4, 5), (5, 2)), ((6,), (3, 1)))


@st.composite
def _tape_case(draw: st.DrawFn, profile: Profile) -> Case:
    y_shape, x_shape = draw(shape_menu(profile, TAPE_SHAPES, TAPE_GRADING))
    (jacobian,) = seeded_arrays(draw, [y_shape + x_shape], draw(dtypes()), 3.0, decimals=2)
    return Case((("jacobian", jacobian), ("x_shape", x_shape)))


def _tape_edges() -> list[Case]:
    rng = np.random.default_rng(1)
    shapes = [
        ((3,), (4,), np.float32, "a vector y of 3 entries, a vector x of 4"),
        ((7, 5), (7, 6), np.float32, "tape.jacobian's (7, 5, 7, 6): y's axes first"),
        ((2, 2), (2, 2), np.float64, "y and x of the same shape"),
        ((), (2, 3), np.float64, "a scalar y: the plain gradient"),
        ((2, 3), (), np.float32, "a scalar x"),
    ]
    return [
        Case((("jacobian", _rng_array(rng, y + x, dt)), ("x_shape", x)), label=label)
        for y, x, dt, label in shapes
    ]


def _linear(xp: Any, jacobian: Any, x: Any, x_shape: Shape) -> Any:
    """y = J x, the Jacobian read as a matrix (entries of y, entries of x)."""
    y_shape = tuple(jacobian.shape[: len(jacobian.shape) - len(x_shape)])
    rows, cols = int(np.prod(y_shape, dtype=int)), int(np.prod(x_shape, dtype=int))
    return xp.reshape(
        xp.matmul(xp.reshape(jacobian, (rows, cols)), xp.reshape(x, (cols,))), y_shape
    )


PREDICT_TAPE_GRADIENT = Exercise(
    signature="predict_tape_gradient(jacobian, x_shape) -> ndarray",
    nudge=(
        "For a y with several entries, the tape gives the gradient of the sum of y's entries. Which"
        " axes of the Jacobian belong to y, and what does that sum do to them?"
    ),
    outputs=("gradient",),
    cases=_tape_case,
    edges=_tape_edges,
    reference=vjp_reference(
        _linear,
        wrt=("x",),
        cotangent=None,
        inputs={"x": lambda xp, jacobian, x_shape: xp.zeros(x_shape, jacobian.dtype)},
    ),
    references_text=(
        "tf.GradientTape.gradient(y, x) without output_gradients, and jax.vjp with a ones "
        "cotangent, for y = J x"
    ),
    mistakes=(
        Mistake(
            "sums_x_axes",
            "You summed over x's axes, so your result has y's shape (for a scalar y, a single "
            "number). That is J @ ones, a Jacobian-VECTOR product (a JVP with a tangent of ones). "
            "tape.gradient is a VECTOR-Jacobian product: ones^T J, a sum over y's axes (the "
            "leading ones), with x's shape.",
            lambda jacobian, x_shape: jacobian.sum(axis=tuple(range(-len(x_shape), 0))),
        ),
        Mistake(
            "whole_jacobian",
            "You returned the Jacobian itself (for a scalar x it has y's shape). tape.gradient "
            "never returns a Jacobian, nor anything shaped like y: it returns one array shaped "
            "like x, the gradient of reduce_sum(y), the sum of the Jacobian over y's axes.",
            lambda jacobian, x_shape: jacobian,
        ),
        Mistake(
            "first_axis_only",
            "You summed over the first axis only. y may have several axes: sum over ALL of them, "
            "the leading jacobian.ndim - len(x_shape) axes of the Jacobian.",
            lambda jacobian, x_shape: jacobian.sum(axis=0),
        ),
        Mistake(
            "first_output",
            "That is the gradient of the first entry of y only. tape.gradient differentiates "
            "reduce_sum(y): it adds the gradients of ALL entries of y.",
            lambda jacobian, x_shape: jacobian.reshape((-1, *x_shape))[0],
        ),
        Mistake(
            "mean",
            "You averaged over y's entries. The implicit cotangent is ones, so the gradients of "
            "y's entries are added up, not averaged (averaging would be the gradient of "
            "reduce_mean(y)).",
            lambda jacobian, x_shape: jacobian.mean(
                axis=tuple(range(jacobian.ndim - len(x_shape)))
            ).astype(jacobian.dtype),
        ),
        Mistake(
            "sums_everything",
            "You summed every axis and got a single number. Sum only y's axes (the leading "
            "jacobian.ndim - len(x_shape) ones): the gradient has x's shape.",
            lambda jacobian, x_shape: np.asarray(jacobian.sum()),
        ),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised. jacobian is a numpy array "
        "of shape y.shape + x_shape and x_shape a tuple; sum jacobian over its leading "
        "jacobian.ndim - len(x_shape) axes (np.sum with a tuple of axes).",
        "shape": "The result has x's shape. jacobian.shape is y.shape + x_shape (y's axes first, "
        "as in tape.jacobian), so sum over the first jacobian.ndim - len(x_shape) axes.",
        "value": "Right shape, wrong values: tape.gradient(y, x) is ones^T J, the sum of J over "
        "y's axes (the leading ones).",
    },
)


# ---------------------------------------------------------------- the Q&A network


# Sizes come from menus: a learner's TensorFlow or JAX code traces or compiles once per
# new shape. (batch, inputs, outputs): ones, equal sizes that let a transpose keep its
# shape, and distinct ones; grading adds larger.
QA_SIZES: tuple[Shape, ...] = ((1, 1, 1), (1, 3, 2), (3, 3, 2), (2, 3, 3), (4, 2, 5))
QA_GRADING: tuple[Shape, ...] = ((6, 4, 3), (5, 6, 1))


@st.composite
def _qa_case(draw: st.DrawFn, profile: Profile) -> Case:
    batch, n, m = draw(shape_menu(profile, QA_SIZES, QA_GRADING))
    x, w, b = seeded_arrays(draw, [(batch, n), (n, m), (m,)], F32, 1.5, decimals=2)
    (y0,) = seeded_arrays(draw, [(batch, m)], F32, 1.0, decimals=2)
    return Case((("x", x), ("W", w), ("b", b), ("y0", y0)))


def _qa_edges() -> list[Case]:
    rng = np.random.default_rng(2)
    sizes = [
        (4, 3, 2, "the Q&A sizes: a batch of 4, 3 inputs, 2 outputs"),
        (3, 3, 2, "batch = inputs: g_h * dh_dW has a shape, and wrong values"),
        (2, 3, 3, "inputs = outputs: a transposed grad_W has W's shape"),
        (1, 3, 2, "a single example"),
        (5, 2, 1, "a single output unit"),
    ]
    cases = []
    for batch, n, m, label in sizes:
        x, w, b, y0 = (_rng_array(rng, s, F32) for s in ((batch, n), (n, m), (m,), (batch, m)))
        cases.append(Case((("x", x), ("W", w), ("b", b), ("y0", y0)), label=label))
    return cases


def _qa(x: np.ndarray, W: np.ndarray, b: np.ndarray, y0: np.ndarray) -> SimpleNamespace:
    """What the wrong answers are made of, in float64: g_y = dloss/dy and g_h = dloss/dh for
    y = tanh(h), h = x @ W + b; the right grad_W and grad_b; and summed_W, summed_b, what
    tape.gradient(h, W) and (h, b) give without a cotangent, the gradients of reduce_sum(h)
    (row j of summed_W: the batch's sum of x[:, j]; summed_b: the batch size, everywhere)."""
    x64, w64, b64, y0_64 = (v.astype(np.float64) for v in (x, W, b, y0))
    y = np.tanh(x64 @ w64 + b64)
    g_y = 2 * (y - y0_64) / y.size
    g_h = g_y * (1 - y**2)
    return SimpleNamespace(
        x=x,
        y0=y0,
        g_y=g_y,
        g_h=g_h,
        grad_W=x.T @ g_h,
        grad_b=g_h.sum(axis=0),
        summed_W=np.broadcast_to(x64.sum(axis=0)[:, None], W.shape),
        summed_b=np.full(b.shape, float(x.shape[0])),
    )


Part = Callable[[SimpleNamespace], np.ndarray] | None  # a wrong gradient of _qa's; None: right


def _qa_mistakes(name: str, hint: str, w_parts: list[Part], b_parts: list[Part]) -> tuple:
    """One Mistake per combination of a grad_W and a grad_b of the same family of mistakes
    (None standing for the right gradient), all but the combination that is right."""

    def combination(w_part: Part, b_part: Part) -> Callable[..., tuple]:
        def qa_gradients(
            x: np.ndarray, W: np.ndarray, b: np.ndarray, y0: np.ndarray
        ) -> tuple[np.ndarray, np.ndarray]:
            q = _qa(x, W, b, y0)
            grad_w = q.grad_W if w_part is None else w_part(q)
            grad_b = q.grad_b if b_part is None else b_part(q)
            return grad_w.astype(F32), grad_b.astype(F32)

        return qa_gradients

    return tuple(
        Mistake(f"{name}_{i}_{j}", hint, combination(w_part, b_part))
        for i, w_part in enumerate(w_parts)
        for j, b_part in enumerate(b_parts)
        if (w_part, b_part) != (None, None)
    )


# g_h times what tape.gradient(h, W) or (h, b) gives: a product of the sums, or of the arrays
# (which broadcasts, or raises, as the learner's product does).
TIMES_SUMMED_W: list[Part] = [
    lambda q: q.g_h.sum(axis=0)[None, :] * q.summed_W,
    lambda q: q.g_h * q.summed_W,
]
TIMES_SUMMED_B: list[Part] = [
    lambda q: q.g_h.sum(axis=0) * q.summed_b,
    lambda q: q.g_h * q.summed_b,
]

SUMMED_HINT = (
    "You multiplied gradients that had already been summed over h. tape.gradient(h, W) (like "
    "tf.gradients(h, W)) is the gradient of reduce_sum(h): it no longer says which entry of h each "
    "contribution came from, so no product of it with g_h = dloss/dh can give dloss/dW. Pass g_h "
    "as the cotangent instead: tape.gradient(h, [W, b], output_gradients=g_h), or call the "
    "pullback of jax.vjp on g_h."
)

QA_GRADIENTS = Exercise(
    signature="qa_gradients(x, W, b, y0) -> (grad_W, grad_b)",
    nudge=(
        "Cut the computation at h: first find the loss's cotangent at h, then hand that cotangent "
        "to the second gradient as its upstream gradient, instead of multiplying two gradients that"
        " were each already summed."
    ),
    outputs=("grad_W", "grad_b"),
    cases=_qa_case,
    edges=_qa_edges,
    reference=vjp_reference(
        lambda xp, x, W, b, y0: xp.mean(xp.square(xp.tanh(x @ W + b) - y0)),
        wrt=("W", "b"),
        cotangent=None,
    ),
    references_text=(
        "tf.GradientTape and jax.grad of loss = mean((tanh(x @ W + b) - y0)**2), each "
        "differentiated in one piece"
    ),
    mistakes=(
        *_qa_mistakes(
            "product_of_summed_gradients",
            SUMMED_HINT,
            [*TIMES_SUMMED_W, None],
            [*TIMES_SUMMED_B, None],
        ),
        *_qa_mistakes(
            "b_not_summed",
            "grad_b has h's shape (B, m) instead of b's (m,). b is broadcast over the batch, so "
            "its cotangent is g_h summed over axis 0 (passing g_h as output_gradients for b does "
            "that for you). Multiplying g_h by tape.gradient(h, b) cannot: that gradient was "
            "already summed over h.",
            [None, *TIMES_SUMMED_W],
            [lambda q: q.g_h],
        ),
        *_qa_mistakes(
            "no_cotangent",
            "Your gradient does not depend on the loss at all: the second part was differentiated "
            "without a cotangent, so it is the gradient of reduce_sum(h). Pass g_h = dloss/dh as "
            "output_gradients (or to jax.vjp's pullback).",
            [lambda q: q.summed_W, None],
            [lambda q: q.summed_b, None],
        ),
        *_qa_mistakes(
            "cotangent_at_y",
            "You passed g_y = dloss/dy, the cotangent at tanh's OUTPUT, through h = x @ W + b. The "
            "cut is at h: g_h must be dloss/dh = g_y * (1 - y**2), so take the first gradient with "
            "respect to h (watch h, compute y = tanh(h) on the tape).",
            [lambda q: q.x.T @ q.g_y, None],
            [lambda q: q.g_y.sum(axis=0), None],
        ),
        *_qa_mistakes(
            "sum_not_mean",
            "Your gradients are too large by the number of entries of y: the loss is the MEAN of "
            "the squared errors over all of them (tf.reduce_mean / jnp.mean), not their sum.",
            [lambda q: q.grad_W * q.y0.size, None],
            [lambda q: q.grad_b * q.y0.size, None],
        ),
        *_qa_mistakes(
            "batch_mean",
            "Your gradients are too large by the number of outputs m: you divided by the batch "
            "size only. The loss is the MEAN over all B * m entries of y (tf.reduce_mean / "
            "jnp.mean over every axis), not a sum over the outputs averaged over the batch.",
            [lambda q: q.grad_W * q.y0.shape[1], None],
            [lambda q: q.grad_b * q.y0.shape[1], None],
        ),
        *_qa_mistakes(
            "transposed",
            "grad_W is transposed: W has shape (n, m), so grad_W = x^T @ g_h (n by m), not g_h^T @ "
            "x (m by n).",
            [lambda q: q.g_h.T @ q.x],
            [None],
        ),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised. qa_gradients returns "
        "numpy arrays (grad_W, grad_b): call .numpy() on the tensors tape.gradient gives, and "
        "watch the inputs (or make them tf.Variables) before the forward pass.",
        "shape": "grad_W has W's shape (n, m) and grad_b has b's shape (m,). b was broadcast over "
        "the batch, so its cotangent is g_h summed over axis 0; a framework does that for you when "
        "you pass g_h as output_gradients for both W and b.",
        "exception": "A shape error here is the Q&A's own trap: g_h = dloss/dh has h's shape (B, "
        "m), while tape.gradient(h, W), already summed over h, has W's shape (n, m), so they "
        "cannot be multiplied. Pass g_h as the cotangent of h instead (output_gradients=g_h, or "
        "jax.vjp's pullback).",
        "value": "Right shapes, wrong values. Check that the loss is mean((tanh(x @ W + b) - "
        "y0)**2) and that g_h is the gradient with respect to h (before tanh).",
        "dtype": "Keep float32: create tensors from the inputs as they are (tf.constant(x)).",
    },
    invoke=QA_INVOKE,
    frameworks=("jax", "tensorflow"),
)


# ---------------------------------------------------------------- per_example_gradients


# (batch, inputs, outputs): one example, the Q&A's sizes, batch = inputs (a transposed stack
# keeps its shape), one output unit, a larger batch; grading adds larger ones.
PER_EXAMPLE_SIZES: tuple[Shape, ...] = ((1, 3, 2), (4, 3, 2), (3, 3, 3), (5, 2, 1), (6, 2, 3))
PER_EXAMPLE_GRADING: tuple[Shape, ...] = ((8, 4, 3), (7, 5, 2))


@st.composite
def _per_example_case(draw: st.DrawFn, profile: Profile) -> Case:
    batch, n, m = draw(shape_menu(profile, PER_EXAMPLE_SIZES, PER_EXAMPLE_GRADING))
    x, w, b = seeded_arrays(draw, [(batch, n), (n, m), (m,)], F32, 1.5, decimals=2)
    (y0,) = seeded_arrays(draw, [(batch, m)], F32, 1.0, decimals=2)
    return Case((("x", x), ("W", w), ("b", b), ("y0", y0)))


def _per_example_edges() -> list[Case]:
    rng = np.random.default_rng(7)
    sizes = [
        (4, 3, 2, "the Q&A sizes: a batch of 4, 3 inputs, 2 outputs"),
        (1, 3, 2, "a single example: its gradient is the batch gradient"),
        (3, 3, 3, "batch = inputs = outputs: a stack along the wrong axis has the right shape"),
        (5, 2, 1, "a single output unit"),
    ]
    cases = []
    for batch, n, m, label in sizes:
        x, w, b, y0 = (_rng_array(rng, s, F32) for s in ((batch, n), (n, m), (m,), (batch, m)))
        cases.append(Case((("x", x), ("W", w), ("b", b), ("y0", y0)), label=label))
    return cases


def _per_example_losses(xp: Any, x: Any, W: Any, b: Any, y0: Any) -> Any:
    """loss_i = mean over k of (tanh(x @ W + b) - y0)[i, k] ** 2: one entry per example."""
    return xp.mean(xp.square(xp.tanh(xp.matmul(x, W) + b) - y0), axis=-1)


def _per_example_tf(tf: Any, case: Case) -> tuple[np.ndarray, ...]:
    """Row i: the gradient of example i's loss alone, from a forward pass of that example
    alone (B tapes; not the exercise's method, which the check asks of an answer). Eager:
    `tape.jacobian` traced a pfor tf.function for every case, about 0.27 s each, over half
    of preparing chapter 01's references."""
    x, W, b, y0 = (tf.constant(v) for v in case.values())
    rows = []
    for i in range(int(x.shape[0])):
        with tf.GradientTape() as tape:
            tape.watch([W, b])
            (loss,) = _per_example_losses(tf.experimental.numpy, x[i : i + 1], W, b, y0[i : i + 1])
        rows.append(tape.gradient(loss, [W, b]))
    return tuple(np.stack([row[k].numpy() for row in rows]) for k in range(2))


def _per_example_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    x, y0 = arrays["x"], arrays["y0"]
    losses = functools.partial(_per_example_losses, jax.numpy, x)
    return jax.jacrev(lambda W, b: losses(W, b, y0), argnums=(0, 1))(arrays["W"], arrays["b"])


def _per_example_parts(
    x: np.ndarray, W: np.ndarray, b: np.ndarray, y0: np.ndarray, tanh: bool
) -> tuple[np.ndarray, np.ndarray]:
    """What the wrong answers are made of, in float64: x, and row i of each example's g_h
    (B, m) for its own loss, the mean of its m squared errors (without tanh's derivative
    when `tanh` is False)."""
    x64, w64, b64, y0_64 = (v.astype(np.float64) for v in (x, W, b, y0))
    y = np.tanh(x64 @ w64 + b64)
    g_h = 2 * (y - y0_64) / y.shape[-1] * ((1 - y**2) if tanh else 1)
    return x64, g_h


def _per_example_answer(
    scale: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] | None,
    tanh: bool = True,
) -> Callable[..., tuple[np.ndarray, np.ndarray]]:
    """A learner's per_example_gradients, always a wrong one (the module holds no answer):
    `scale(per_w, per_b)` maps the (B, n, m) and (B, m) stacks to the wrong ones, or None
    with `tanh` False, which leaves tanh's derivative out."""
    if scale is None and tanh:
        raise ValueError("_per_example_answer makes mistakes only")

    def per_example_gradients(
        x: np.ndarray, W: np.ndarray, b: np.ndarray, y0: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        x64, g_h = _per_example_parts(x, W, b, y0, tanh)
        per_w = x64[:, :, None] * g_h[:, None, :]  # example i: outer(x[i], g_h[i])
        per_w, per_b = (per_w, g_h) if scale is None else scale(per_w, g_h)
        return per_w.astype(F32), per_b.astype(F32)

    return per_example_gradients


def _repeated(stack: np.ndarray) -> np.ndarray:
    return np.broadcast_to(stack.sum(axis=0), stack.shape)


PER_EXAMPLE_GRADIENTS = Exercise(
    signature="per_example_gradients(x, W, b, y0) -> (g_W, g_b)",
    nudge=(
        "The gradient of a vector of losses is the gradient of their sum. What cotangent on that "
        "vector keeps one example's loss and drops the others, and how many pullbacks does the "
        "batch take from one forward pass?"
    ),
    outputs=("g_W", "g_b"),
    cases=_per_example_case,
    edges=_per_example_edges,
    reference=two_references(
        tf=_per_example_tf,
        jax=_per_example_jax,
        why="the Jacobian of the vector of per-example losses with respect to two parameters, "
        "W and b, at once (one tape per example in TensorFlow, jax.jacrev in JAX); "
        "jacobian_reference takes one",
    ),
    references_text=(
        "tf.GradientTape.jacobian and jax.jacrev of the per-example losses "
        "mean((tanh(x @ W + b) - y0)**2, axis=-1) with respect to W and b"
    ),
    mistakes=(
        Mistake(
            "batch_gradient_repeated",
            "Every example's gradient is the same: the sum of all of them, what tape.gradient of "
            "the vector of losses gives without output_gradients (a cotangent of ones). Example "
            "i's gradient comes from a cotangent that weights loss_i by 1 and every other loss "
            "by 0.",
            _per_example_answer(lambda w, b: (_repeated(w), _repeated(b))),
        ),
        Mistake(
            "sum_over_outputs",
            "Your gradients are m times too large: an example's loss is the MEAN of its m squared "
            "errors (reduce over the last axis with tf.reduce_mean / jnp.mean), not their sum.",
            _per_example_answer(lambda w, b: (w * b.shape[-1], b * b.shape[-1])),
        ),
        Mistake(
            "batch_mean",
            "Your gradients are B times too small: you divided by the batch size too. Each "
            "example's loss is the mean of its own m squared errors; the batch loss of exercise 2 "
            "is the mean of these B losses, so it is your answer averaged over the batch, not "
            "each example's.",
            _per_example_answer(lambda w, b: (w / b.shape[0], b / b.shape[0])),
        ),
        Mistake(
            "without_tanh",
            "The derivative of tanh is missing: h = x @ W + b goes through y = tanh(h) before the "
            "loss, so each example's g_h is its g_y times (1 - y**2). Differentiate the loss of "
            "tanh(x @ W + b) itself.",
            _per_example_answer(None, tanh=False),
        ),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised. per_example_gradients "
        "returns numpy arrays (g_W, g_b): call .numpy() on tensors, and watch W and b (or make "
        "them tf.Variables) before the forward pass; keep the tape persistent to call "
        "tape.gradient more than once.",
        "shape": "g_W stacks B arrays of W's shape: (B, n, m); g_b stacks B arrays of b's shape: "
        "(B, m). Example i's gradient goes at index i of the first axis.",
        "value": "Right shapes, wrong values. Example i's loss is mean((tanh(x[i] @ W + b) - "
        "y0[i])**2) over its m outputs, and its gradient is what the batch gradient would be if "
        "every other example's loss were weighted by 0.",
        "dtype": "Keep float32: create tensors from the inputs as they are (tf.constant(x)), and "
        "build the cotangents in the losses' dtype.",
    },
    invoke=PER_EXAMPLE_INVOKE,
    frameworks=("jax", "tensorflow"),
)


EXERCISES = (PREDICT_TAPE_GRADIENT, QA_GRADIENTS, PER_EXAMPLE_GRADIENTS)


# ---------------------------------------------------------------- predictions, in notebook order

PREDICTIONS = (
    Prediction(
        name="ch01_tape_gradient_of_a_vector",
        question=(
            "y has shape (4,) and depends on x of shape (3,). What does tape.gradient(y, x) return?"
        ),
        choices={
            "a": "the (4, 3) Jacobian, one row per entry of y",
            "b": "a (3,) array: the Jacobian's rows added up, the gradient of reduce_sum(y)",
            "c": "a (3,) array: the gradient of y[0], the first entry only",
            "d": "an error: y is not a scalar",
        },
        answer="b",
        why=(
            "Without output_gradients, tape.gradient is a VJP with a cotangent of ones: ones^T J, "
            "the rows of the Jacobian added up, shaped like x."
        ),
    ),
    Prediction(
        name="ch01_gradients_of_a_list",
        question=(
            "At x = [0.5, -1.0, 2.0], tape.gradient(y, x) is [0, 2.5, -1.416]. Inside a "
            "tf.function, tf.gradients([y, 2 * y], x) returns a list. What is the entry for x[1] "
            "of its first array?"
        ),
        answer=7.5,
        rel_tolerance=0.01,
        why=(
            "tf.gradients differentiates the SUM of its ys: the entries of each tensor are added "
            "up, and so are the tensors of the list, so the gradient is 2.5 + 2 * 2.5. It returns "
            "one gradient per x, never one per y."
        ),
    ),
    Prediction(
        name="ch01_product_of_two_gradient_calls",
        question=(
            "g_h = tape.gradient(loss, h) has h's shape (4, 2). A second call gives dh_dW = "
            "tape.gradient(h, W), with W of shape (3, 2). What does g_h * dh_dW give?"
        ),
        choices={
            "a": "dloss/dW: the chain rule, in two gradient calls",
            "b": "an error",
            "c": "an array of W's shape with wrong values",
        },
        answer="b",
        why=(
            "dh_dW is not the Jacobian dh/dW: h is not a scalar, so tape.gradient(h, W) is the "
            "gradient of reduce_sum(h), shaped like W (3, 2), and (4, 2) times (3, 2) does not "
            "broadcast."
        ),
    ),
)
