"""Chapter 08 exercise: `capstone_xent_vjp(logits, labels, g)`.

The VJP of the mean softmax cross-entropy that ends the capstone's network. The references
are the frameworks' own gradients of that loss (`tf.nn.softmax_cross_entropy_with_logits`
and `jax.nn.log_softmax`); the private helpers below only build the known wrong answers.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from autograder.judging.cases import Case, Profile, dtypes, float_arrays
from autograder.judging.exercise import Exercise, Mistake


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def _one_hot(classes: np.ndarray, k: int, dtype: Any) -> np.ndarray:
    return np.eye(k, dtype=dtype)[classes]


@st.composite
def _xent_case(draw: st.DrawFn, profile: Profile) -> Case:
    dtype = draw(dtypes())
    n = draw(st.integers(1, profile.max_side + 2))
    k = draw(st.integers(2, profile.max_side + 1))
    logits = draw(float_arrays(dtype, (n, k)))
    classes = np.array(draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)))
    g = draw(float_arrays(dtype, ()))
    return Case((("logits", logits), ("labels", _one_hot(classes, k, dtype)), ("g", g)))


def _xent_edges() -> list[Case]:
    rng = np.random.default_rng(7)
    rows = [
        (8, 2, np.float64, 1.0, "the capstone's two classes, g = 1"),
        (5, 3, np.float32, -0.5, "three classes, a negative cotangent"),
        (1, 4, np.float32, 2.0, "a batch of one"),
        (6, 3, np.float32, 0.25, "large logits (softmax must not overflow)"),
    ]
    cases = []
    for n, k, dtype, g, label in rows:
        scale = 300.0 if "large" in label else 3.0
        logits = (rng.uniform(-scale, scale, size=(n, k))).round(1).astype(dtype)
        labels = _one_hot(rng.integers(0, k, size=n), k, dtype)
        cases.append(Case((("logits", logits), ("labels", labels), ("g", np.asarray(g, dtype))),
                          label=label))
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


def _ignores_cotangent(logits: np.ndarray, labels: np.ndarray, g: np.ndarray) -> np.ndarray:
    return (_softmax(logits) - labels) / logits.shape[0]


def _sign_flipped(logits: np.ndarray, labels: np.ndarray, g: np.ndarray) -> np.ndarray:
    return g * (labels - _softmax(logits)) / logits.shape[0]


def _no_softmax(logits: np.ndarray, labels: np.ndarray, g: np.ndarray) -> np.ndarray:
    return g * (logits - labels) / logits.shape[0]


def _softmax_over_batch(logits: np.ndarray, labels: np.ndarray, g: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=0, keepdims=True))
    return g * (shifted / shifted.sum(axis=0, keepdims=True) - labels) / logits.shape[0]


CAPSTONE_XENT_VJP = Exercise(
    name="capstone_xent_vjp",
    returns="ndarray",
    outputs=("grad_logits",),
    strategy=_xent_case,
    edge_cases=_xent_edges,
    tf_reference=_xent_tf,
    jax_reference=_xent_jax,
    references_text=(
        "tf.GradientTape of reduce_mean(tf.nn.softmax_cross_entropy_with_logits) and "
        "jax.vjp of the mean of -labels * jax.nn.log_softmax"
    ),
    mistakes=(
        Mistake(
            "no_mean",
            "The loss is the MEAN over the batch, so each row's cotangent is divided by the "
            "batch size N = logits.shape[0]. Your result is N times too large.",
            _no_mean,
        ),
        Mistake(
            "ignores_cotangent",
            "Your result does not depend on g (it is the gradient for g = 1). A VJP multiplies "
            "by the incoming cotangent: scale by g.",
            _ignores_cotangent,
        ),
        Mistake(
            "sign_flipped",
            "The sign is flipped: the gradient of cross-entropy with respect to the logits is "
            "softmax(logits) - labels (probabilities minus targets), not the other way round.",
            _sign_flipped,
        ),
        Mistake(
            "no_softmax",
            "You used the logits where the probabilities belong: the rule is "
            "softmax(logits) - labels, with the softmax taken along each row.",
            _no_softmax,
        ),
        Mistake(
            "softmax_over_batch",
            "Your softmax normalises down the columns (axis=0, across examples). Each example's "
            "probabilities sum to one along its row: use axis=-1 with keepdims=True.",
            _softmax_over_batch,
        ),
    ),
    hints_by_kind={
        "error": (
            "The traceback names the line of your code that raised. logits and labels (one-hot) "
            "have shape (N, K); the result has logits' shape: g * (softmax(logits) - labels) / N. "
            "Print the shapes on that line."
        ),
        "nonfinite": (
            "np.exp overflows for large logits. Subtract each row's maximum first "
            "(logits - logits.max(axis=-1, keepdims=True)): softmax does not change."
        ),
        "shape": "The result must have the shape of logits, (N, K).",
        "value": (
            "Right shape, wrong values: the rule is g * (softmax(logits) - labels) / N, the "
            "softmax along each row, N the number of rows."
        ),
    },
)

EXERCISES = (CAPSTONE_XENT_VJP,)
