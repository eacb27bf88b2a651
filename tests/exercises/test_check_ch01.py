"""The chapter 01 checks: right answers written in different ways pass, each wrong answer learners
write fails with the hint that names it, and the references agree with finite differences."""

from __future__ import annotations

import os
import re

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import jax
import jax.numpy as jnp
import nbformat
import numpy as np
import pytest
import tensorflow as tf

from autograder import check
from autograder.exercises import for_chapter
from autograder.exercises.ch01_chain_rule import (
    PER_EXAMPLE_GRADIENTS,
    PREDICT_TAPE_GRADIENT,
    QA_GRADIENTS,
    TO_NUMPY_INVOKE,
)
from autograder.harness import invoker
from autograder.judging.attempts import call_learner, judge
from autograder.judging.cases import NOTEBOOK, draw_cases
from autograder.judging.compare import compare_outputs

# ---------------------------------------------------------------- predict_tape_gradient


def predict_by_reshape(jacobian, x_shape):
    return jacobian.reshape((-1, *x_shape)).sum(axis=0)


def predict_by_ones_cotangent(jacobian, x_shape):
    y_shape = jacobian.shape[: jacobian.ndim - len(x_shape)]
    ones = np.ones(y_shape, dtype=jacobian.dtype)
    return np.asarray(np.tensordot(ones, jacobian, axes=len(y_shape)))


def predict_by_loop(jacobian, x_shape):
    while jacobian.ndim > len(x_shape):
        jacobian = jacobian.sum(axis=0)
    return np.asarray(jacobian)


@pytest.mark.parametrize("fn", [predict_by_reshape, predict_by_ones_cotangent, predict_by_loop])
def test_right_predictions_pass(fn):
    report = check.predict_tape_gradient(fn)
    assert report.passed, str(report)
    assert report.cases_checked >= 25


# The declared mistakes are run by tests/judging/test_mistakes.py; these get a hint by their kind.


def upcasts(jacobian, x_shape):
    y_shape = jacobian.shape[: jacobian.ndim - len(x_shape)]
    return np.asarray(np.tensordot(np.ones(y_shape), jacobian, axes=len(y_shape)))


def returns_list(jacobian, x_shape):
    return predict_by_reshape(jacobian, x_shape).tolist()


PREDICT_BUGS = [
    (upcasts, "upcasts float32 to float64"),
    (returns_list, "numpy array"),
]


@pytest.mark.parametrize(("fn", "hint"), PREDICT_BUGS, ids=[f.__name__ for f, _ in PREDICT_BUGS])
def test_wrong_prediction_fails_with_its_hint(fn, hint):
    report = check.predict_tape_gradient(fn)
    assert report.status == "failed"
    assert hint in str(report), str(report)


def test_prediction_cases_cover_scalars_and_both_dtypes():
    cases = PREDICT_TAPE_GRADIENT.edge_cases() + draw_cases(
        PREDICT_TAPE_GRADIENT.strategy(NOTEBOOK), NOTEBOOK
    )
    x_ranks = {len(c.arg("x_shape")) for c in cases}
    y_ranks = {c.arg("jacobian").ndim - len(c.arg("x_shape")) for c in cases}
    assert x_ranks == {0, 1, 2} and y_ranks == {0, 1, 2}
    assert {c.arg("jacobian").dtype for c in cases} == {np.dtype(np.float32), np.dtype(np.float64)}


def test_prediction_is_a_numpy_exercise():
    assert PREDICT_TAPE_GRADIENT.frameworks == ()
    assert PREDICT_TAPE_GRADIENT.invoke == ""


# ---------------------------------------------------------------- qa_gradients


def _tf(*arrays):
    return tuple(tf.constant(a) for a in arrays)


def qa_split_tf(x, W, b, y0):
    x, W, b, y0 = _tf(x, W, b, y0)
    h = x @ W + b
    with tf.GradientTape() as tape:
        tape.watch(h)
        loss = tf.reduce_mean(tf.square(tf.tanh(h) - y0))
    g_h = tape.gradient(loss, h)
    with tf.GradientTape() as tape:
        tape.watch([W, b])
        h = x @ W + b
    return tape.gradient(h, [W, b], output_gradients=g_h)  # a list of tensors


def qa_split_jax(x, W, b, y0):
    h, pullback_h = jax.vjp(lambda W, b: x @ W + b, W, b)
    g_h = jax.grad(lambda h: jnp.mean(jnp.square(jnp.tanh(h) - y0)))(h)
    return pullback_h(g_h)


def qa_split_grad_ys(x, W, b, y0):
    @tf.function
    def both_parts(x, W, b, y0):
        h = x @ W + b
        loss = tf.reduce_mean(tf.square(tf.tanh(h) - y0))
        (g_h,) = tf.gradients(loss, h)
        return tf.gradients(h, [W, b], grad_ys=g_h)

    grad_W, grad_b = both_parts(*_tf(x, W, b, y0))
    return grad_W.numpy(), grad_b.numpy()


def qa_by_hand(x, W, b, y0):
    """The right values without any gradient call: the wrong answers below build on it (by
    hand, it fails on the method: see test_method.py)."""
    y = np.tanh(x @ W + b)
    g_h = 2 * (y - y0) / y.size * (1 - y**2)
    return x.T @ g_h, g_h.sum(axis=0)


@pytest.mark.parametrize("fn", [qa_split_tf, qa_split_jax, qa_split_grad_ys])
def test_right_qa_gradients_pass(fn):
    report = check.qa_gradients(fn)
    assert report.passed, str(report)


def _two_calls(x, W, b, y0):
    """What the Q&A did: g_h = dloss/dh and dh_dW, dh_db as two plain gradient calls."""
    x, W, b, y0 = _tf(x, W, b, y0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([W, b])
        h = x @ W + b
        y = tf.tanh(h)
        loss = tf.reduce_mean(tf.square(y - y0))
    return tape, h, y, loss, W, b


def multiplies_summed_gradients(x, W, b, y0):
    tape, h, _, loss, W, b = _two_calls(x, W, b, y0)
    g_h = tf.reduce_sum(tape.gradient(loss, h), axis=0)  # made to fit W's last axis
    return (g_h * tape.gradient(h, W)).numpy(), (g_h * tape.gradient(h, b)).numpy()


def multiplies_in_tensorflow(x, W, b, y0):
    tape, h, _, loss, W, b = _two_calls(x, W, b, y0)
    g_h = tape.gradient(loss, h)
    return (g_h * tape.gradient(h, W)).numpy(), (g_h * tape.gradient(h, b)).numpy()


def multiplies_in_numpy(x, W, b, y0):
    tape, h, _, loss, W, b = _two_calls(x, W, b, y0)
    g_h = tape.gradient(loss, h).numpy()
    return g_h * tape.gradient(h, W).numpy(), (g_h * tape.gradient(h, b).numpy()).sum(axis=0)


def forgets_the_cotangent(x, W, b, y0):
    tape, h, _, _, W, b = _two_calls(x, W, b, y0)
    return tape.gradient(h, W).numpy(), tape.gradient(h, b).numpy()


def cotangent_at_y(x, W, b, y0):
    tape, h, y, loss, W, b = _two_calls(x, W, b, y0)
    g_h = tape.gradient(loss, y)
    grad_W, grad_b = tape.gradient(h, [W, b], output_gradients=g_h)
    return grad_W.numpy(), grad_b.numpy()


def returns_one_array(x, W, b, y0):
    return qa_by_hand(x, W, b, y0)[0]


QA_BUGS = [
    (multiplies_summed_gradients, "multiplied gradients that had already been summed"),
    (multiplies_in_tensorflow, "summed over h"),
    (multiplies_in_numpy, "summed over h"),
    (forgets_the_cotangent, "does not depend on the loss"),
    (cotangent_at_y, "cotangent at tanh's OUTPUT"),
    (returns_one_array, "should return a tuple (grad_W, grad_b)"),
]


@pytest.mark.parametrize(("fn", "hint"), QA_BUGS, ids=[f.__name__ for f, _ in QA_BUGS])
def test_wrong_qa_gradients_fail_with_their_hint(fn, hint):
    report = check.qa_gradients(fn)
    assert report.status == "failed"
    assert hint in str(report), str(report)


def copies_the_cotangents_cell(x, W, b, y0):
    """The notebook's nearest cell computing gradients (the cotangents of every primal in one
    tape.gradient call), made into the exercise: right values, not in two parts."""
    x, W, b, y0 = _tf(x, W, b, y0)
    with tf.GradientTape() as tape:
        tape.watch([x, W, b])
        h = x @ W + b
        y = tf.tanh(h)
        loss = tf.reduce_mean(tf.square(y - y0))
    cotangents = dict(zip("yhWb", tape.gradient(loss, [y, h, W, b]), strict=True))
    return cotangents["W"].numpy(), cotangents["b"].numpy()


COPIED_DEMOS = [
    (multiplies_in_tensorflow, "already been summed"),  # the question's cell: g_h * dh_dW
    (copies_the_cotangents_cell, "two parts through a cotangent"),
]


@pytest.mark.parametrize(("fn", "message"), COPIED_DEMOS, ids=[f.__name__ for f, _ in COPIED_DEMOS])
def test_the_nearest_demo_cells_copied_fail(fn, message):
    """The chapter shows the trap and what flows backward, never the split itself: a learner
    who copies the cells above exercise 2 fails, with a message that points to the idea."""
    report = check.qa_gradients(fn)
    assert report.status == "failed"
    assert message in str(report), str(report)


def test_the_notebook_shows_no_split_through_a_cotangent_before_exercise_2():
    from pathlib import Path

    for folder in ("solutions", "course"):
        cells = nbformat.read(Path(folder) / "01_chain_rule.ipynb", as_version=4).cells
        before = cells[: next(i for i, c in enumerate(cells) if "Exercise 2" in c.source)]
        code = "\n".join(c.source for c in before if c.cell_type == "code")
        assert not re.search(r"gradients?\(h\w*, \[W", code), folder  # a VJP of h for W, b
        assert not re.search(r"(output_gradients|grad_ys)=g_h|\(g_h\)", code), folder


def test_products_of_summed_gradients_are_named_where_they_have_a_shape():
    """Where batch == inputs, g_h * dh_dW runs and is silently wrong: the hint names it."""
    case = next(c for c in QA_GRADIENTS.edge_cases() if "g_h * dh_dW" in c.label)
    expected = qa_by_hand(*case.values())
    got = multiplies_in_numpy(*case.values())
    assert got[0].shape == expected[0].shape
    mismatch = compare_outputs(QA_GRADIENTS.outputs, got, expected)
    assert mismatch is not None
    assert "already been summed" in QA_GRADIENTS.diagnose(case, got, mismatch)


def test_the_qa_shape_error_is_explained_on_the_qa_case():
    """TensorFlow's own error for g_h * dh_dW gets the hint that tells the Q&A's story."""
    case = QA_GRADIENTS.edge_cases()[0]
    assert "Q&A" in case.label
    attempt = call_learner(multiplies_in_tensorflow, case, QA_GRADIENTS)
    failure = judge(QA_GRADIENTS, case, attempt, QA_GRADIENTS.tf_reference(tf, case))
    assert "Incompatible shapes" in failure.message
    assert "Q&A's own trap" in failure.hint
    assert "g_h * tape.gradient(h, W)" in failure.traceback  # the learner's own line


def _loss64(x, W, b, y0):
    return np.mean((np.tanh(x @ W + b) - y0) ** 2)


def _central_difference(fn, array, step=1e-6):
    grad = np.zeros_like(array)
    for index in np.ndindex(array.shape):
        up, down = array.copy(), array.copy()
        up[index] += step
        down[index] -= step
        grad[index] = (fn(up) - fn(down)) / (2 * step)
    return grad


@pytest.mark.parametrize("index", range(5))
def test_qa_references_agree_with_finite_differences(index):
    case = QA_GRADIENTS.edge_cases()[index]
    x, W, b, y0 = (v.astype(np.float64) for v in case.values())
    grad_W, grad_b = QA_GRADIENTS.tf_reference(tf, case)
    fd_W = _central_difference(lambda w: _loss64(x, w, b, y0), W)
    fd_b = _central_difference(lambda c: _loss64(x, W, c, y0), b)
    np.testing.assert_allclose(grad_W, fd_W, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(grad_b, fd_b, rtol=1e-4, atol=1e-5)


def test_qa_cases_include_the_shapes_that_hide_mistakes():
    cases = QA_GRADIENTS.edge_cases() + draw_cases(QA_GRADIENTS.strategy(NOTEBOOK), NOTEBOOK)
    shapes = [(c.arg("x").shape, c.arg("W").shape) for c in cases]
    assert any(x[0] == x[1] and x[0] > 1 for x, _ in shapes)  # batch == n
    assert any(w[0] == w[1] and w[0] > 1 for _, w in shapes)  # n == m
    assert any(x[0] > 1 and x[0] != w[0] for x, w in shapes)  # g_h * dh_dW cannot be formed
    assert all(c.arg(name).dtype == np.float32 for c in cases for name in ("x", "W", "b", "y0"))


# ---------------------------------------------------------------- per_example_gradients


def _losses_tf(x, W, b, y0):
    return tf.reduce_mean(tf.square(tf.tanh(x @ W + b) - y0), axis=-1)


def per_example_tf(x, W, b, y0):
    x, W, b, y0 = (tf.constant(v) for v in (x, W, b, y0))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([W, b])
        losses = _losses_tf(x, W, b, y0)
    batch = losses.shape[0]
    grads = [
        tape.gradient(losses, [W, b], output_gradients=tf.one_hot(i, batch)) for i in range(batch)
    ]
    return tuple(tf.stack([g[k] for g in grads]) for k in range(2))


def _pullback(x, W, b, y0):
    def losses_of(W, b):
        return jnp.mean((jnp.tanh(x @ W + b) - y0) ** 2, axis=-1)

    return jax.vjp(losses_of, jnp.asarray(W), jnp.asarray(b))


def per_example_jax(x, W, b, y0):
    losses, pullback = _pullback(x, W, b, y0)
    return jax.vmap(pullback)(jnp.eye(losses.shape[0], dtype=losses.dtype))


@pytest.mark.parametrize("fn", [per_example_tf, per_example_jax])
def test_right_per_example_gradients_pass(fn):
    report = check.per_example_gradients(fn)
    assert report.passed, str(report)


def per_example_without_cotangent(x, W, b, y0):
    x, W, b, y0 = (tf.constant(v) for v in (x, W, b, y0))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([W, b])
        losses = _losses_tf(x, W, b, y0)
    grads = [tape.gradient(losses, [W, b]) for _ in range(losses.shape[0])]
    return tuple(tf.stack([g[k] for g in grads]).numpy() for k in range(2))


def per_example_summed_outputs(x, W, b, y0):
    def losses_of(W, b):
        return jnp.sum((jnp.tanh(x @ W + b) - y0) ** 2, axis=-1)

    losses, pullback = jax.vjp(losses_of, jnp.asarray(W), jnp.asarray(b))
    return jax.vmap(pullback)(jnp.eye(losses.shape[0], dtype=losses.dtype))


def per_example_in_float64(x, W, b, y0):
    return tuple(np.asarray(g, np.float64) for g in per_example_jax(x, W, b, y0))


PER_EXAMPLE_BUGS = [
    (per_example_without_cotangent, "Every example's gradient is the same"),
    (per_example_summed_outputs, "m times too large"),
    (per_example_in_float64, "Keep float32"),
]


@pytest.mark.parametrize(
    ("fn", "hint"), PER_EXAMPLE_BUGS, ids=[f.__name__ for f, _ in PER_EXAMPLE_BUGS]
)
def test_wrong_per_example_gradients_fail_with_their_hint(fn, hint):
    report = check.per_example_gradients(fn)
    assert report.status == "failed"
    assert hint in str(report), str(report)


def per_example_with_doubled_cotangents(x, W, b, y0):
    losses, pullback = _pullback(x, W, b, y0)
    return jax.vmap(pullback)(2 * jnp.eye(losses.shape[0], dtype=losses.dtype))


def per_example_flattened(x, W, b, y0):
    return tuple(jnp.ravel(g) for g in per_example_jax(x, W, b, y0))


THE_COTANGENT = ("one-hot", "one_hot", "eye(", "e_i")  # what the learner is to work out


@pytest.mark.parametrize(
    ("fn", "kind", "idea"),
    [
        (per_example_with_doubled_cotangents, "value", "every other example's loss were weighted"),
        (per_example_flattened, "shape", "Example i's gradient goes at index i of the first axis"),
    ],
)
def test_per_example_hints_point_at_the_idea_not_at_the_cotangent(fn, kind, idea):
    """The hints say what an example's gradient is; which cotangent gives it is the
    exercise, so no hint a wrong answer gets names it."""
    report = check.per_example_gradients(fn)
    assert report.status == "failed", str(report)
    assert idea in report.failure.hint, str(report)
    for kind_hint in PER_EXAMPLE_GRADIENTS.hints_by_kind.values():
        assert not [word for word in THE_COTANGENT if word in kind_hint], kind_hint
    assert not [word for word in THE_COTANGENT if word in report.failure.hint], str(report)


@pytest.mark.parametrize("index", range(4))
def test_per_example_references_agree_with_compute_gradient(index):
    """Example i's reference gradients against finite differences of loss_i alone."""
    case = PER_EXAMPLE_GRADIENTS.edge_cases()[index]
    x, W, b, y0 = (tf.constant(v.astype(np.float64)) for v in case.values())
    g_w, g_b = PER_EXAMPLE_GRADIENTS.tf_reference(tf, case)
    for i in range(x.shape[0]):
        _, numerical = tf.test.compute_gradient(
            lambda W, b, i=i: _losses_tf(x, W, b, y0)[i : i + 1], [W, b]
        )
        np.testing.assert_allclose(g_w[i].ravel(), numerical[0].ravel(), rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(g_b[i], numerical[1].ravel(), rtol=1e-3, atol=1e-4)


def test_the_examples_gradients_add_up_to_the_batch_gradient():
    """What the statement says: the batch loss's gradient is the mean of the examples'."""
    case = PER_EXAMPLE_GRADIENTS.edge_cases()[0]
    g_w, g_b = PER_EXAMPLE_GRADIENTS.tf_reference(tf, case)
    grad_w, grad_b = QA_GRADIENTS.tf_reference(tf, case)
    np.testing.assert_allclose(g_w.mean(axis=0), grad_w, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(g_b.mean(axis=0), grad_b, rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------- the chapter as a whole


def test_chapter_lists_its_exercises_in_notebook_order():
    assert [e.name for e in for_chapter("01")] == [
        "predict_tape_gradient",
        "qa_gradients",
        "per_example_gradients",
    ]
    assert QA_GRADIENTS.frameworks == PER_EXAMPLE_GRADIENTS.frameworks == ("jax", "tensorflow")


def test_invoke_converts_tensors_only():
    invoke = invoker(TO_NUMPY_INVOKE)
    out = invoke(lambda a: (tf.constant(a), jnp.asarray(a), [1.0]), np.ones(2, np.float32))
    assert isinstance(out[0], np.ndarray) and isinstance(out[1], np.ndarray)
    assert out[0].dtype == out[1].dtype == np.float32
    assert out[2] == [1.0]  # a list stays a list: the check reports it as a wrong type


def test_invoke_reports_framework_shape_errors_as_value_errors():
    invoke = invoker(TO_NUMPY_INVOKE)
    with pytest.raises(ValueError, match=r"^InvalidArgumentError: Incompatible shapes"):
        invoke(lambda: tf.ones((4, 2)) * tf.ones((3, 2)))
    with pytest.raises(ValueError, match="TypeError"):
        invoke(lambda: jnp.ones((4, 2)) * jnp.ones((3, 2)))
    with pytest.raises(ZeroDivisionError):  # other errors pass through unchanged
        invoke(lambda: 1 / 0)
