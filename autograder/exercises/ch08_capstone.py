"""Chapter 08 exercises: the rules that extend the learner's chapter-02 tape so it trains the
capstone's network, and the guess asked before the chapter's trap (`PREDICTIONS`).

* `capstone_broadcast_rule(op, g, x, y)`: the tape's `add` and `mul` when the operands
  broadcast against each other (chapter 03's unbroadcast, applied inside a rule).
* `capstone_matmul_rule(g, a, b)`: the tape's `matmul` with all of `np.matmul`'s operands:
  batch axes that broadcast, and 1-D operands (a vector is promoted, then its axis removed).
* `capstone_xent_vjp(logits, labels, g)`: the VJP of the mean softmax cross-entropy over every
  leading axis, which the learner derives from its forward definition.

The references are the frameworks' own VJPs (`tf.GradientTape` with `output_gradients`,
`jax.vjp`); the private helpers below only build the known wrong answers.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.exercises.common import rng_array
from autograder.judging.cases import Case, Profile, dtypes, float_arrays
from autograder.judging.derived import two_references, vjp_reference
from autograder.judging.exercise import Exercise, Mistake
from autograder.judging.prediction import Prediction

Pair = tuple[np.ndarray, np.ndarray]


def _sum_to(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    summed = g.sum(axis=tuple(range(g.ndim - len(shape))))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and summed.shape[i] != 1)
    return np.asarray(summed.sum(axis=stretched, keepdims=True))


# ---------------------------------------------------------------- the broadcasting add and mul


@st.composite
def _broadcast_case(draw: st.DrawFn, profile: Profile) -> Case:
    shapes = draw(hnp.mutually_broadcastable_shapes(
        num_shapes=2, min_dims=0, max_dims=profile.max_dims, max_side=profile.max_side))
    dtype = draw(dtypes())
    x_shape, y_shape = shapes.input_shapes
    return Case((("op", draw(st.sampled_from(("add", "mul")))),
                 ("g", draw(float_arrays(dtype, shapes.result_shape))),
                 ("x", draw(float_arrays(dtype, x_shape))),
                 ("y", draw(float_arrays(dtype, y_shape)))))


def _broadcast_edges() -> list[Case]:
    rng = np.random.default_rng(8)
    rows = [
        ("add", (4, 5, 16), (16,), np.float64, "the capstone's bias: (4, 5, 16) + (16,)"),
        ("mul", (4, 5, 16), (16,), np.float32, "a scale shared by a batch"),
        ("mul", (3, 1), (1, 4), np.float32, "both operands broadcast"),
        ("add", (2, 1, 3), (5, 1), np.float64, "missing and size-1 axes, on both sides"),
        ("mul", (), (2, 3), np.float32, "a 0-d operand"),
        ("add", (2, 3), (2, 3), np.float32, "nothing was broadcast"),
    ]
    cases = []
    for op, x_shape, y_shape, dtype, label in rows:
        x, y = rng_array(rng, x_shape, dtype), rng_array(rng, y_shape, dtype)
        g = rng_array(rng, np.broadcast_shapes(x_shape, y_shape), dtype)
        cases.append(Case((("op", op), ("g", g), ("x", x), ("y", y)), label=label))
    return cases


def _local(op: str, g: np.ndarray, x: np.ndarray, y: np.ndarray) -> Pair:
    """Chapter 02's rules: each cotangent has the OUTPUT's shape."""
    return (g, g) if op == "add" else (g * y, g * x)


def _chapter02_rule(op: str, g: np.ndarray, x: np.ndarray, y: np.ndarray) -> Pair:
    return _local(op, g, x, y)


def _leading_axes_only(op: str, g: np.ndarray, x: np.ndarray, y: np.ndarray) -> Pair:
    g_x, g_y = _local(op, g, x, y)
    return (g_x.sum(axis=tuple(range(g_x.ndim - x.ndim))),
            g_y.sum(axis=tuple(range(g_y.ndim - y.ndim))))


def _mean_instead_of_sum(op: str, g: np.ndarray, x: np.ndarray, y: np.ndarray) -> Pair:
    g_x, g_y = _local(op, g, x, y)
    return (_sum_to(g_x, x.shape) * x.size / max(g_x.size, 1),
            _sum_to(g_y, y.shape) * y.size / max(g_y.size, 1))


def _mul_not_swapped(op: str, g: np.ndarray, x: np.ndarray, y: np.ndarray) -> Pair:
    g_x, g_y = (g, g) if op == "add" else (g * x, g * y)
    return _sum_to(g_x, x.shape), _sum_to(g_y, y.shape)


CAPSTONE_BROADCAST_RULE = Exercise(
    signature="capstone_broadcast_rule(op, g, x, y) -> (grad_x, grad_y)",
    outputs=("grad_x", "grad_y"),
    cases=_broadcast_case,
    edges=_broadcast_edges,
    reference=vjp_reference(
        lambda xp, op, x, y: xp.add(x, y) if op == "add" else xp.multiply(x, y),
        wrt=("x", "y")),
    references_text="tf.GradientTape of tf.add / tf.multiply and jax.vjp of jnp.add / jnp.multiply",
    invoke="course_helpers:invoke_own_code",  # refuses coursekit's broadcast_plan
    mistakes=(
        Mistake("chapter02_rule", "These are chapter 02's rules, written for operands of one "
                "shape: each cotangent comes back with the OUTPUT's shape. A primal that "
                "broadcasting stretched was used once per copy, so its cotangent is the sum over "
                "those copies: reduce each cotangent to its primal's shape (chapter 03's "
                "unbroadcast).", _chapter02_rule),
        Mistake("leading_axes_only", "You summed the leading axes a primal lacks, but not the axes"
                " where it has size 1 (a (3, 1) operand against a (3, 4) output): sum those too, "
                "with keepdims=True.", _leading_axes_only),
        Mistake("mean_instead_of_sum", "You averaged over the broadcast axes. Each copy of a "
                "broadcast value contributes its full share of the cotangent: sum them.",
                _mean_instead_of_sum),
        Mistake("mul_not_swapped", "For out = x * y, a change in x moves out by that change times "
                "y: the cotangent of x is g times the OTHER operand, y (and the cotangent of y is"
                " g times x).", _mul_not_swapped),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised. g has the output's shape,"
                 " np.broadcast_shapes(x.shape, y.shape); each cotangent must end with its "
                 "primal's shape. Print the shapes on that line.",
        "shape": "grad_x must have x's shape and grad_y y's shape: sum the output-shaped cotangent"
                 " over the axes broadcasting added or stretched.",
        "value": "Right shapes, wrong values: work out, for one element of x, which elements of "
                 "the output it reached, and what each contributes (for mul: times the other "
                 "operand at that position).",
    },
)


# ---------------------------------------------------------------- matmul, as np.matmul has it


@st.composite
def _matmul_case(draw: st.DrawFn, profile: Profile) -> Case:
    shapes = draw(hnp.mutually_broadcastable_shapes(
        signature="(m?,n),(n,p?)->(m?,p?)", min_dims=0, max_dims=max(profile.max_dims - 2, 1),
        max_side=profile.max_side))
    dtype = draw(dtypes())
    a_shape, b_shape = shapes.input_shapes
    return Case((("g", draw(float_arrays(dtype, shapes.result_shape))),
                 ("a", draw(float_arrays(dtype, a_shape))),
                 ("b", draw(float_arrays(dtype, b_shape)))))


def _matmul_edges() -> list[Case]:
    rng = np.random.default_rng(9)
    rows = [
        ((4, 5, 2), (2, 16), np.float64, "the capstone's layer: (4, 5, 2) @ (2, 16)"),
        ((3,), (3, 4), np.float32, "a vector times a matrix"),
        ((2, 3), (3,), np.float32, "a matrix times a vector"),
        ((5, 2, 3), (3,), np.float64, "a batch of matrices times one vector"),
        ((3,), (2, 3, 4), np.float32, "one vector times a batch of matrices"),
        ((4,), (4,), np.float64, "two vectors: a 0-d output"),
        ((3, 1, 2, 4), (5, 4, 2), np.float32, "batch axes broadcast on both sides"),
    ]
    cases = []
    for a_shape, b_shape, dtype, label in rows:
        a, b = rng_array(rng, a_shape, dtype), rng_array(rng, b_shape, dtype)
        g = rng_array(rng, np.matmul(a, b).shape, dtype)
        cases.append(Case((("g", g), ("a", a), ("b", b)), label=label))
    return cases


def _swap(x: np.ndarray) -> np.ndarray:
    return np.swapaxes(x, -1, -2)


def _promoted(g: np.ndarray, a: np.ndarray, b: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """a as (1, n) and b as (n, 1) when 1-D, and g with the axes np.matmul removed put back."""
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    g2 = g[..., None] if b.ndim == 1 else g  # b's axis first: two vectors give a 0-d g
    return (g2[..., None, :] if a.ndim == 1 else g2), a2, b2


def _batched(g: np.ndarray, a: np.ndarray, b: np.ndarray, transpose: Any = _swap) -> Pair:
    g2, a2, b2 = _promoted(g, a, b)
    return (_sum_to(g2 @ transpose(b2), a2.shape).reshape(a.shape),
            _sum_to(transpose(a2) @ g2, b2.shape).reshape(b.shape))


def _chapter03_rule(g: np.ndarray, a: np.ndarray, b: np.ndarray) -> Pair:
    # Chapter 03's batched rule, which assumes both operands are at least 2-D.
    return _sum_to(g @ _swap(b), a.shape), _sum_to(_swap(a) @ g, b.shape)


def _vector_kept_promoted(g: np.ndarray, a: np.ndarray, b: np.ndarray) -> Pair:
    g2, a2, b2 = _promoted(g, a, b)
    return _sum_to(g2 @ _swap(b2), a2.shape), _sum_to(_swap(a2) @ g2, b2.shape)


def _matmul_batch_not_summed(g: np.ndarray, a: np.ndarray, b: np.ndarray) -> Pair:
    g2, a2, b2 = _promoted(g, a, b)
    g_a, g_b = g2 @ _swap(b2), _swap(a2) @ g2
    return (g_a[..., 0, :] if a.ndim == 1 else g_a), (g_b[..., 0] if b.ndim == 1 else g_b)


def _matmul_all_axes_transposed(g: np.ndarray, a: np.ndarray, b: np.ndarray) -> Pair:
    return _batched(g, a, b, transpose=np.transpose)


def _matmul_swapped_outputs(g: np.ndarray, a: np.ndarray, b: np.ndarray) -> Pair:
    g_a, g_b = _batched(g, a, b)
    return g_b, g_a


CAPSTONE_MATMUL_RULE = Exercise(
    signature="capstone_matmul_rule(g, a, b) -> (grad_a, grad_b)",
    outputs=("grad_a", "grad_b"),
    cases=_matmul_case,
    edges=_matmul_edges,
    reference=vjp_reference(lambda xp, a, b: xp.matmul(a, b), wrt=("a", "b")),
    references_text="jax.vjp(jnp.matmul) and tf.GradientTape(tf.experimental.numpy.matmul)",
    mistakes=(
        Mistake("chapter03_rule", "Right for operands of two axes or more, but np.matmul also "
                "takes vectors: a 1-D a is treated as a (1, n) row and a 1-D b as an (n, 1) "
                "column, and that axis is removed from the output. Put the removed axis back into"
                " g, apply your rule, then remove the added axis from the cotangent.",
                _chapter03_rule),
        Mistake("vector_kept_promoted", "For a 1-D operand your cotangent keeps the axis you added"
                " to it ((1, n) or (n, 1)): remove it again, so the cotangent has the vector's "
                "shape.", _vector_kept_promoted),
        Mistake("batch_not_summed", "The cotangent of an operand whose batch axes were broadcast "
                "(the capstone's weights, shared by every batch) still has the batch axes: sum it"
                " down to the operand's shape, as the broadcasting add does.",
                _matmul_batch_not_summed),
        Mistake("all_axes_transposed", "np.transpose(x) and x.T reverse ALL axes; a batch of "
                "matrices must transpose only its last two: np.swapaxes(x, -1, -2).",
                _matmul_all_axes_transposed),
        Mistake("swapped_outputs", "You returned (grad_b, grad_a). Return the cotangent of a "
                "first.", _matmul_swapped_outputs),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised. Print the shapes of g, a "
                 "and b there: which axes did np.matmul remove from the output, and which did it "
                 "broadcast?",
        "exception": "A matmul shape error inside the rule: check the 1-D cases (np.matmul removes"
                     " a vector's promoted axis from the output, so g lacks it), that a transpose "
                     "swaps only the last two axes, and the order of each product.",
        "shape": "grad_a must have a's shape and grad_b b's shape: sum over broadcast batch axes, "
                 "and give a 1-D operand a 1-D cotangent.",
        "value": "Right shapes, wrong values: check the order of each product and that the "
                 "transpose swaps only the last two axes.",
    },
)


# ---------------------------------------------------------------- the softmax cross-entropy


def _softmax(logits: np.ndarray, axis: int = -1) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=axis, keepdims=True))
    return shifted / shifted.sum(axis=axis, keepdims=True)


def _one_hot(classes: np.ndarray, k: int, dtype: Any) -> np.ndarray:
    return np.eye(k, dtype=dtype)[classes]


def _rows(logits: np.ndarray) -> int:
    return int(np.prod(logits.shape[:-1]))


@st.composite
def _xent_case(draw: st.DrawFn, profile: Profile) -> Case:
    dtype = draw(dtypes())
    leading = tuple(draw(st.lists(st.integers(1, profile.max_side + 1), min_size=1,
                                  max_size=max(profile.max_dims - 1, 1))))
    k = draw(st.integers(2, profile.max_side + 1))
    logits = draw(float_arrays(dtype, (*leading, k)))
    classes = np.array(draw(st.lists(st.integers(0, k - 1), min_size=int(np.prod(leading)),
                                     max_size=int(np.prod(leading))))).reshape(leading)
    g = draw(float_arrays(dtype, ()))
    return Case((("logits", logits), ("labels", _one_hot(classes, k, dtype)), ("g", g)))


def _xent_edges() -> list[Case]:
    rng = np.random.default_rng(7)
    rows = [
        ((4, 5, 2), np.float64, 1.0, 3.0, "the capstone's layout: 4 batches of 5, two classes"),
        ((8, 3), np.float32, -0.5, 3.0, "one batch axis, a negative cotangent"),
        ((1, 4), np.float32, 2.0, 3.0, "a batch of one"),
        ((2, 3, 3), np.float32, 0.25, 300.0, "large logits (softmax must not overflow)"),
    ]
    cases = []
    for shape, dtype, g, scale, label in rows:
        logits = rng.uniform(-scale, scale, size=shape).round(1).astype(dtype)
        labels = _one_hot(rng.integers(0, shape[-1], size=shape[:-1]), shape[-1], dtype)
        cases.append(Case((("logits", logits), ("labels", labels), ("g", np.asarray(g, dtype))),
                          label=label))
    smooth = np.full((3, 4), 0.1 / 4) + 0.9 * _one_hot(np.array([0, 3, 1]), 4, np.float64)
    cases.append(Case((("logits", rng_array(rng, (3, 4), np.float64)), ("labels", smooth),
                       ("g", np.asarray(1.5))), label="smoothed labels (each row sums to 1)"))
    return cases


def _xent_tf(tf: Any, case: Case) -> tuple[np.ndarray]:
    logits, labels, g = (tf.constant(v) for v in case.values())
    with tf.GradientTape() as tape:
        tape.watch(logits)
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels, logits))
    return (tape.gradient(loss, logits, output_gradients=g).numpy(),)


def _xent_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    labels = arrays["labels"]

    def loss(logits: Any) -> Any:
        return -(labels * jax.nn.log_softmax(logits, axis=-1)).sum(axis=-1).mean()

    _, vjp = jax.vjp(loss, arrays["logits"])
    return vjp(arrays["g"])


def _no_mean(logits: np.ndarray, labels: np.ndarray, g: np.ndarray) -> np.ndarray:
    return g * (_softmax(logits) - labels)


def _first_axis_mean(logits: np.ndarray, labels: np.ndarray, g: np.ndarray) -> np.ndarray:
    return g * (_softmax(logits) - labels) / logits.shape[0]


def _ignores_cotangent(logits: np.ndarray, labels: np.ndarray, g: np.ndarray) -> np.ndarray:
    return (_softmax(logits) - labels) / _rows(logits)


def _sign_flipped(logits: np.ndarray, labels: np.ndarray, g: np.ndarray) -> np.ndarray:
    return g * (labels - _softmax(logits)) / _rows(logits)


def _no_softmax(logits: np.ndarray, labels: np.ndarray, g: np.ndarray) -> np.ndarray:
    return g * (logits - labels) / _rows(logits)


def _softmax_over_batch(logits: np.ndarray, labels: np.ndarray, g: np.ndarray) -> np.ndarray:
    return g * (_softmax(logits, axis=0) - labels) / _rows(logits)


def _log_softmax_derivative_only(logits: np.ndarray, labels: np.ndarray, g: np.ndarray
                                 ) -> np.ndarray:
    # -labels / p: the derivative of -log p, taken as if the probabilities p were the input
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return -g * labels / _softmax(logits) / _rows(logits)


CAPSTONE_XENT_VJP = Exercise(
    signature="capstone_xent_vjp(logits, labels, g) -> ndarray",
    outputs=("grad_logits",),
    cases=_xent_case,
    edges=_xent_edges,
    reference=two_references(
        tf=_xent_tf, jax=_xent_jax,
        why="neither NumPy API has a log-softmax: each framework's own fused cross-entropy "
            "(tf.nn.softmax_cross_entropy_with_logits, jax.nn.log_softmax) is the reference"),
    references_text=(
        "tf.GradientTape of reduce_mean(tf.nn.softmax_cross_entropy_with_logits) and "
        "jax.vjp of the mean of -labels * jax.nn.log_softmax"
    ),
    mistakes=(
        Mistake("no_mean", "The loss is the MEAN over every row, so each row's share is divided by"
                " the number of rows. Your result is that many times too large.", _no_mean),
        Mistake("first_axis_mean", "You divided by logits.shape[0], the size of the first axis "
                "only. The mean runs over every leading axis: divide by the number of rows, the "
                "product of all axes but the last.", _first_axis_mean),
        Mistake("ignores_cotangent", "Your result does not depend on g (it is the gradient for g ="
                " 1). A VJP multiplies by the incoming cotangent: scale by g.", _ignores_cotangent),
        Mistake("sign_flipped", "The sign is flipped. Raising one logit raises its own "
                "probability: for the true class that lowers the loss, so that entry of the "
                "gradient is negative.", _sign_flipped),
        Mistake("no_softmax", "You used the logits where probabilities belong: differentiate the "
                "log of the normaliser, log sum_j exp(logits_j), and see what it gives.",
                _no_softmax),
        Mistake("softmax_over_batch", "Your softmax normalises down axis 0 (across examples). Each"
                " example's probabilities sum to one along its own row: the last axis, "
                "keepdims=True.", _softmax_over_batch),
        Mistake("log_derivative_only", "You stopped at the derivative of -log p with respect to p."
                " The logits reach the loss through the softmax too, and every logit of a row "
                "moves every p of that row: follow the chain through log softmax(z)_k = z_k - log"
                " sum_j exp(z_j).", _log_softmax_derivative_only),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised. logits and labels have "
                 "shape (..., K); the result has logits' shape. Print the shapes on that line.",
        "nonfinite": "np.exp overflows for large logits. Subtract each row's maximum first (logits"
                     " - logits.max(axis=-1, keepdims=True)): softmax does not change.",
        "shape": "The result must have the shape of logits.",
        "value": "Right shape, wrong values. Derive it in steps: write one row's loss as -sum_k "
                 "labels_k * (z_k - log sum_j exp(z_j)); differentiate with respect to z_i (the "
                 "derivative of log sum_j exp(z_j) is a softmax); use that each row of labels sums"
                 " to one; then account for the mean over all rows and for g.",
    },
)

EXERCISES = (CAPSTONE_BROADCAST_RULE, CAPSTONE_MATMUL_RULE, CAPSTONE_XENT_VJP)


# ---------------------------------------------------------------- predictions, before the trap

PREDICTIONS = (
    Prediction(
        name="capstone_bias_after_sgd_step",
        question=(
            "The hidden layer adds a bias b1 of shape (16,) to X @ W1 of shape (4, 50, 16). "
            "With chapter 02's add rule, which returns (g, g), the tape gives b1 a cotangent; "
            "then one SGD step computes b1 - lr * that cotangent. What happens?"
        ),
        choices={
            "a": "the SGD step raises a shape error",
            "b": "b1 silently becomes a (4, 50, 16) array: one bias per data point",
            "c": "b1 keeps its shape (16,) but gets wrong values",
        },
        answer="b",
        why=(
            "The cotangent has the output's shape, (4, 50, 16), and numpy broadcasts "
            "(16,) - (4, 50, 16) without a word. The network now has a bias per point; only "
            "an accumulating backward (`grad += c`) would have raised."
        ),
    ),
)
