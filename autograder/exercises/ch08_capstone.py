"""Chapter 08 exercises: the capstone's loss and its training loop, and the guess asked before
the chapter's trap (`PREDICTIONS`).

* `cross_entropy(logits, labels)`: the mean softmax cross-entropy, written with the learner's
  own engine (its `log_softmax`, `sum` and `mean`); the check runs it on that engine and
  compares the loss and its gradient with the frameworks' own fused cross-entropies.
* `train_epoch(loss_and_grads, params, x, y, order, lr, batch_size)`: one epoch of mini-batch
  stochastic gradient descent; the check trains a linear least-squares model with it
  (autograder/harness/ch08_capstone.py) and compares every step's loss and the final
  parameters with the same epoch trained by `jax.grad` and by `tf.GradientTape`.

The package holds no engine, model, loss or loop that passes these checks: the known wrong
losses run on JAX's autodiff (capstone_mistakes.py), the known wrong loops are below.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st

from autograder.exercises import capstone_mistakes as wrong
from autograder.exercises.common import rng_array
from autograder.judging.cases import Case, Profile, float_arrays, shape_menu
from autograder.judging.derived import two_references
from autograder.judging.exercise import Exercise, Mistake
from autograder.judging.prediction import Prediction

F64 = np.dtype(np.float64)  # the capstone runs in float64, so three libraries agree tightly
Params = dict[str, np.ndarray]
Step = Callable[[Params, np.ndarray, np.ndarray], tuple[float, Params]]

# ---------------------------------------------------------------- cross_entropy


def _one_hot(classes: Any, k: int) -> np.ndarray:
    return np.eye(k, dtype=F64)[np.asarray(classes)]


@st.composite
def _loss_case(draw: st.DrawFn, profile: Profile) -> Case:
    rows, k = draw(shape_menu(profile, [(4, 3), (1, 2), (3, 10), (5, 2)], [(8, 10), (6, 5)]))
    classes = draw(st.lists(st.integers(0, k - 1), min_size=rows, max_size=rows))
    return Case((("logits", draw(float_arrays(F64, (rows, k)))), ("labels", _one_hot(classes, k))))


def _loss_edges() -> list[Case]:
    rng = np.random.default_rng(8)
    rows = [
        ((8, 10), 3.0, "a batch of digits: 8 examples, 10 classes"),
        ((1, 3), 3.0, "one example"),
        ((3, 4), 1000.0, "large logits (a softmax computed directly overflows)"),
    ]
    cases = []
    for (n, k), scale, label in rows:
        logits = rng.uniform(-scale, scale, size=(n, k)).round(1)
        cases.append(
            Case((("logits", logits), ("labels", _one_hot(rng.integers(0, k, n), k))), label=label)
        )
    smooth = np.full((3, 4), 0.1 / 4) + 0.9 * _one_hot([0, 3, 1], 4)
    cases.append(
        Case(
            (("logits", rng_array(rng, (3, 4), F64)), ("labels", smooth)),
            label="smoothed labels (each row sums to 1)",
        )
    )
    return cases


def _loss_tf(tf: Any, case: Case) -> tuple[np.ndarray, np.ndarray]:
    logits, labels = (tf.constant(v) for v in case.values())
    with tf.GradientTape() as tape:
        tape.watch(logits)
        loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels, logits))
    return loss.numpy(), tape.gradient(loss, logits).numpy()


def _loss_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    labels = arrays["labels"]

    def loss(logits: Any) -> Any:
        return -(labels * jax.nn.log_softmax(logits, axis=-1)).sum(axis=-1).mean()

    return tuple(jax.value_and_grad(loss)(arrays["logits"]))


CROSS_ENTROPY = Exercise(
    signature="cross_entropy(logits, labels) -> scalar Tensor",
    nudge=(
        "Work per example first: the classes lie along one axis and the labels are one-hot. Which "
        "stable operation gives the log-probabilities, and how are the examples combined so that "
        "the loss does not grow with the batch?"
    ),
    outputs=("loss", "g_logits"),
    cases=_loss_case,
    edges=_loss_edges,
    reference=two_references(
        tf=_loss_tf,
        jax=_loss_jax,
        why="neither NumPy API has a log-softmax: each framework's own fused cross-entropy "
        "(tf.nn.softmax_cross_entropy_with_logits, jax.nn.log_softmax) is the reference",
    ),
    references_text=(
        "tf.GradientTape of reduce_mean(tf.nn.softmax_cross_entropy_with_logits) "
        "and jax.value_and_grad of the mean of -labels * jax.nn.log_softmax"
    ),
    invoke="ch08_capstone:invoke_loss",
    namespace_reads=("Tensor", "grad"),
    mistakes=(
        Mistake(
            "sum_over_batch",
            "You summed over the examples too. The loss is the MEAN over "
            "the batch of each example's cross-entropy, so that it (and the size of a step)"
            " does not grow with the batch: sum over the classes (axis=-1), then take the "
            "mean.",
            wrong.on_jax(wrong.sum_over_batch),
        ),
        Mistake(
            "mean_over_classes_too",
            "You took the mean over every entry, the classes "
            "included, which divides by the number of classes once too often: sum over the "
            "classes (axis=-1), then take the mean over the examples.",
            wrong.on_jax(wrong.mean_over_classes_too),
        ),
        Mistake(
            "minus_forgotten",
            "The sign: the cross-entropy is MINUS the log-probability of "
            "the true class, a positive number that is zero for a sure right answer.",
            wrong.on_jax(wrong.minus_forgotten),
        ),
        Mistake(
            "softmax_over_batch",
            "log_softmax normalises along the axis you give it: an "
            "example's classes lie along the last axis (axis=-1), not across the examples "
            "(axis=0).",
            wrong.on_jax(wrong.softmax_over_batch),
        ),
        Mistake(
            "log_of_softmax",
            "exp(logits) overflows for large logits (exp(1000.0) is inf) "
            "and the probabilities become inf / inf: use log_softmax, which subtracts each "
            "row's maximum before it exponentiates.",
            wrong.on_jax(wrong.log_of_softmax),
        ),
    ),
    hints_by_kind={
        "error": "The traceback names the line that raised, in your cross_entropy or in your "
        "engine. logits and labels are Tensors of shape (N, K); return a scalar "
        "Tensor.",
        "nonfinite": "A softmax computed as exp(z) / sum(exp(z)) overflows for large logits: "
        "use your engine's log_softmax, which subtracts each row's maximum first.",
        "shape": "The loss is a scalar: the mean over the N examples of each example's loss.",
        "value": "For each example (row), -sum over the classes of labels * log_softmax(logits,"
        " axis=-1); then the mean over the rows.",
        "value:g_logits": "The loss is right but its gradient is not: look at the rules of "
        "your engine that this loss uses (log_softmax, sum, mean, * and "
        "unary minus); chapter 02's checks test each one alone.",
    },
)


# ---------------------------------------------------------------- train_epoch

# (examples, features, outputs, batch_size, lr): a last batch that is smaller, batches of one,
# one batch of everything, one feature or one output.
_EPOCHS = [
    (10, 3, 2, 4, 0.5),
    (7, 2, 1, 3, 0.1),
    (5, 2, 2, 1, 0.1),
    (6, 1, 3, 6, 0.5),
    (9, 3, 3, 2, 0.1),
]
_GRADING_EPOCHS = [(13, 4, 3, 5, 0.1), (12, 2, 2, 12, 0.5)]


def _epoch(
    x: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    b: np.ndarray,
    order: np.ndarray,
    lr: float,
    batch_size: int,
    label: str = "",
) -> Case:
    return Case(
        (
            ("W", w),
            ("b", b),
            ("x", x),
            ("y", y),
            ("order", order),
            ("lr", lr),
            ("batch_size", batch_size),
        ),
        label=label,
    )


@st.composite
def _epoch_case(draw: st.DrawFn, profile: Profile) -> Case:
    n, d, k, batch_size, lr = draw(shape_menu(profile, _EPOCHS, _GRADING_EPOCHS))
    arrays = [draw(float_arrays(F64, shape, bound=1.0)) for shape in ((n, d), (n, k), (d, k))]
    order = np.array(draw(st.permutations(range(n))), dtype=np.int64)
    return _epoch(*arrays, draw(float_arrays(F64, (k,), bound=1.0)), order, lr, batch_size)


def _epoch_edges() -> list[Case]:
    rng = np.random.default_rng(12)
    rows = [
        ((10, 3, 2), 4, 0.5, "10 examples in batches of 4: the last batch holds 2"),
        ((5, 2, 2), 1, 0.1, "batches of one example"),
        ((6, 1, 3), 6, 0.5, "one batch holds every example"),
    ]
    cases = []
    for (n, d, k), batch_size, lr, label in rows:
        x, y = rng.uniform(-1, 1, (n, d)), rng.uniform(-1, 1, (n, k))
        w, b = rng.uniform(-1, 1, (d, k)), rng.uniform(-1, 1, k)
        cases.append(_epoch(x, y, w, b, rng.permutation(n), lr, batch_size, label))
    return cases


def _batches(order: Any, batch_size: int) -> list[Any]:
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]


def _epoch_tf(tf: Any, case: Case) -> tuple[np.ndarray, ...]:
    w, b, x, y, order, lr, batch_size = case.values()
    w, b, x, y = (tf.constant(v) for v in (w, b, x, y))
    losses = []
    for batch in _batches(order, batch_size):
        xb, yb = tf.gather(x, batch), tf.gather(y, batch)
        with tf.GradientTape() as tape:
            tape.watch([w, b])
            loss = 0.5 * tf.reduce_mean(tf.reduce_sum((xb @ w + b - yb) ** 2, axis=-1))
        g_w, g_b = tape.gradient(loss, [w, b])
        w, b = w - lr * g_w, b - lr * g_b
        losses.append(loss.numpy())
    return w.numpy(), b.numpy(), np.array(losses)


def _epoch_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    """The full batches in one lax.scan (compiled once, not once per step), then the last,
    smaller batch if there is one."""
    jnp, lr, batch_size = jax.numpy, params["lr"], params["batch_size"]
    w, b, x, y, order = (arrays[name] for name in ("W", "b", "x", "y", "order"))

    def loss(w: Any, b: Any, batch: Any) -> Any:
        return 0.5 * jnp.mean(jnp.sum((x[batch] @ w + b - y[batch]) ** 2, axis=-1))

    def step(carry: tuple, batch: Any) -> tuple:
        value, (g_w, g_b) = jax.value_and_grad(loss, argnums=(0, 1))(*carry, batch)
        return (carry[0] - lr * g_w, carry[1] - lr * g_b), value

    full = len(order) // batch_size
    (w, b), losses = jax.lax.scan(step, (w, b), order[: full * batch_size].reshape(full, -1))
    if len(order) % batch_size:
        (w, b), last = step((w, b), order[full * batch_size :])
        losses = jnp.append(losses, last)
    return w, b, losses


def _full_batch(
    loss_and_grads: Step,
    params: Params,
    x: np.ndarray,
    y: np.ndarray,
    order: np.ndarray,
    lr: float,
    batch_size: int,
) -> tuple[Params, list]:
    loss, grads = loss_and_grads(params, x, y)
    return {name: params[name] - lr * grads[name] for name in params}, [loss]


def _whole_data_each_step(
    loss_and_grads: Step,
    params: Params,
    x: np.ndarray,
    y: np.ndarray,
    order: np.ndarray,
    lr: float,
    batch_size: int,
) -> tuple[Params, list]:
    losses = []
    for _ in range(0, len(x), batch_size):
        loss, grads = loss_and_grads(params, x, y)
        params = {name: params[name] - lr * grads[name] for name in params}
        losses.append(loss)
    return params, losses


def _in_stored_order(
    loss_and_grads: Step,
    params: Params,
    x: np.ndarray,
    y: np.ndarray,
    order: np.ndarray,
    lr: float,
    batch_size: int,
) -> tuple[Params, list]:
    losses = []
    for start in range(0, len(x), batch_size):
        batch = slice(start, start + batch_size)
        loss, grads = loss_and_grads(params, x[batch], y[batch])
        params = {name: params[name] - lr * grads[name] for name in params}
        losses.append(loss)
    return params, losses


def _last_batch_dropped(
    loss_and_grads: Step,
    params: Params,
    x: np.ndarray,
    y: np.ndarray,
    order: np.ndarray,
    lr: float,
    batch_size: int,
) -> tuple[Params, list]:
    losses = []
    for start in range(0, len(x) - batch_size + 1, batch_size):
        batch = order[start : start + batch_size]
        loss, grads = loss_and_grads(params, x[batch], y[batch])
        params = {name: params[name] - lr * grads[name] for name in params}
        losses.append(loss)
    return params, losses


def _uphill(
    loss_and_grads: Step,
    params: Params,
    x: np.ndarray,
    y: np.ndarray,
    order: np.ndarray,
    lr: float,
    batch_size: int,
) -> tuple[Params, list]:
    losses = []
    for start in range(0, len(x), batch_size):
        batch = order[start : start + batch_size]
        loss, grads = loss_and_grads(params, x[batch], y[batch])
        params = {name: params[name] + lr * grads[name] for name in params}
        losses.append(loss)
    return params, losses


def _gradients_at_the_start(
    loss_and_grads: Step,
    params: Params,
    x: np.ndarray,
    y: np.ndarray,
    order: np.ndarray,
    lr: float,
    batch_size: int,
) -> tuple[Params, list]:
    start_params, losses = params, []
    for start in range(0, len(x), batch_size):
        batch = order[start : start + batch_size]
        loss, grads = loss_and_grads(start_params, x[batch], y[batch])
        params = {name: params[name] - lr * grads[name] for name in params}
        losses.append(loss)
    return params, losses


TRAIN_EPOCH = Exercise(
    signature="train_epoch(loss_and_grads, params, x, y, order, lr, batch_size) -> "
    "(params, losses)",
    nudge=(
        "One step per mini-batch, taking the examples in the order given, each step starting from "
        "the parameters the previous one left. What happens to a last batch that is smaller?"
    ),
    outputs=("W", "b", "losses"),
    cases=_epoch_case,
    edges=_epoch_edges,
    reference=two_references(
        tf=_epoch_tf,
        jax=_epoch_jax,
        why="a training loop, not one function's VJP: the same epoch with each framework's own "
        "gradient at every step",
    ),
    references_text="the same epoch trained with tf.GradientTape and with jax.value_and_grad",
    invoke="ch08_capstone:invoke_train_epoch",
    mistakes=(
        Mistake(
            "full_batch",
            "One step on the whole data set is full-batch gradient descent. "
            "Stochastic (mini-batch) gradient descent takes one step per batch: the "
            "examples order[0:batch_size], then the next batch_size of them, and so on, "
            "each step from the parameters the step before left.",
            _full_batch,
        ),
        Mistake(
            "whole_data_each_step",
            "Every step uses all of x and y, not its batch: that is full-batch gradient "
            "descent, however many steps it takes. A step sees only its batch's examples, "
            "x[batch] and y[batch], with batch = order[start:start + batch_size].",
            _whole_data_each_step,
        ),
        Mistake(
            "in_stored_order",
            "Your batches take the examples in the order they are stored."
            " The epoch's order is `order`, a shuffled permutation: the first batch is "
            "x[order[0:batch_size]], the next x[order[batch_size:2 * batch_size]], and so "
            "on.",
            _in_stored_order,
        ),
        Mistake(
            "last_batch_dropped",
            "When len(x) is not a multiple of batch_size, the last "
            "batch is smaller, and it still counts: an epoch uses every example once.",
            _last_batch_dropped,
        ),
        Mistake(
            "uphill",
            "You stepped uphill: gradient descent SUBTRACTS lr times the gradient.",
            _uphill,
        ),
        Mistake(
            "gradients_at_the_start",
            "Each step's gradient is taken at the parameters the "
            "step before produced, not at the parameters the epoch started from.",
            _gradients_at_the_start,
        ),
    ),
    hints_by_kind={
        "error": "The traceback names the line that raised. loss_and_grads(params, xb, yb) "
        "returns (loss, grads), grads a dict with the keys of params; return "
        "(params, losses), the new dict and the list of every step's loss.",
        "shape:losses": "losses holds one loss per step, and an epoch takes one step per batch: "
        "len(x) / batch_size steps, rounded up.",
        "value": "Check the order of the examples (order), the size of each batch (the last "
        "may be smaller), and that each step starts from the previous step's "
        "parameters and subtracts lr times the gradient.",
    },
)

EXERCISES = (CROSS_ENTROPY, TRAIN_EPOCH)


# ---------------------------------------------------------------- predictions, before the trap

PREDICTIONS = (
    Prediction(
        name="capstone_softmax_overflow",
        question=(
            "Two classes, logits z = [1000, 0], and the true class is the second. The loss "
            "-log p[1] is computed as written on paper: p = exp(z) / exp(z).sum(), in float64. "
            "What comes out?"
        ),
        choices={
            "a": "1000.0, the right answer",
            "b": "inf",
            "c": "nan",
        },
        answer="b",
        why=(
            "exp(1000) overflows to inf, so p[1] = 1 / inf rounds to 0 and -log 0 is inf "
            "(p[0] = inf / inf is nan). log_softmax never exponentiates a large number: "
            "log_softmax(z)[1] = (0 - 1000) - log(exp(0) + exp(-1000)) = -1000, so the loss "
            "is 1000."
        ),
    ),
)
