"""Chapter 02's VJP rules, one exercise per operation: right rules pass (written here, never in
the package a learner's kernel imports), the same rules pass when they return a learner's
Tensor, a rule that breaks the tuple convention is told so, and maximum's tie convention is
JAX's (and not TensorFlow's, which the test measures). Each declared mistake failing with its
own hint is tests/judging/test_mistakes.py's, for every exercise."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from autograder.exercises import EXERCISES
from autograder.exercises.ch02_rules import EXERCISES as RULES
from autograder.judging.engine import check_function
from autograder.judging.references import jax_module, tensorflow
from autograder.judging.report import FAILED, PASSED


def _unbroadcast(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    summed = g.sum(axis=tuple(range(g.ndim - len(shape))))
    ones = tuple(i for i, n in enumerate(shape) if n == 1 and summed.shape[i] != 1)
    return np.asarray(summed.sum(axis=ones, keepdims=True), g.dtype)


def _swap(x: np.ndarray) -> np.ndarray:
    return np.swapaxes(x, -1, -2)


def vjp_add(g, a, b):
    return _unbroadcast(g, a.shape), _unbroadcast(g, b.shape)


def vjp_sub(g, a, b):
    return _unbroadcast(g, a.shape), _unbroadcast(-g, b.shape)


def vjp_mul(g, a, b):
    return _unbroadcast(g * b, a.shape), _unbroadcast(g * a, b.shape)


def vjp_div(g, a, b):
    return _unbroadcast(g / b, a.shape), _unbroadcast(-g * a / b**2, b.shape)


def vjp_neg(g, x):
    return (-g,)


def vjp_power(g, x, exponent):
    return (g * exponent * x ** (exponent - 1),)


def vjp_exp(g, x):
    return (g * np.exp(x),)


def vjp_log(g, x):
    return (g / x,)


def vjp_tanh(g, x):
    return (g * (1 - np.tanh(x) ** 2),)


def vjp_relu(g, x):
    return (np.where(x > 0, g, 0).astype(g.dtype),)


def vjp_maximum(g, a, b):
    share_a = np.where(a > b, 1.0, np.where(a == b, 0.5, 0.0)).astype(g.dtype)
    return _unbroadcast(g * share_a, a.shape), _unbroadcast(g * (1 - share_a), b.shape)


def _spread(g, x, axis, keepdims):
    if not keepdims:
        g = np.expand_dims(g, tuple(range(x.ndim)) if axis is None else axis)
    return np.broadcast_to(g, x.shape)


def vjp_sum(g, x, axis=None, keepdims=False):
    return (_spread(g, x, axis, keepdims),)


def vjp_mean(g, x, axis=None, keepdims=False):
    return (_spread(g, x, axis, keepdims) / (x.size // g.size),)


def vjp_reshape(g, x, shape):
    return (g.reshape(x.shape),)


def vjp_transpose(g, x, axes):
    return (np.transpose(g, np.argsort(axes)),)


def vjp_broadcast_to(g, x, shape):
    return (_unbroadcast(g, x.shape),)


def vjp_index(g, x, key):
    grad = np.zeros_like(x)
    np.add.at(grad, key, g)
    return (grad,)


def vjp_matmul(g, a, b):
    return _unbroadcast(g @ _swap(b), a.shape), _unbroadcast(_swap(a) @ g, b.shape)


def vjp_log_softmax(g, x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return (g - e / e.sum(axis=axis, keepdims=True) * g.sum(axis=axis, keepdims=True),)


RIGHT = {
    fn.__name__: fn
    for fn in (
        vjp_add,
        vjp_sub,
        vjp_mul,
        vjp_div,
        vjp_neg,
        vjp_power,
        vjp_exp,
        vjp_log,
        vjp_tanh,
        vjp_relu,
        vjp_maximum,
        vjp_sum,
        vjp_mean,
        vjp_reshape,
        vjp_transpose,
        vjp_broadcast_to,
        vjp_index,
        vjp_matmul,
        vjp_log_softmax,
    )
}
NAMES = [exercise.name for exercise in RULES]


def test_every_rule_has_a_right_answer_here_and_is_a_chapter_02_exercise():
    assert set(RIGHT) == set(NAMES)
    assert all(EXERCISES[name].chapter == "02" for name in NAMES)
    assert all(2 <= len(EXERCISES[name].mistakes) <= 4 for name in NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_the_right_rule_passes(name: str) -> None:
    report = check_function(EXERCISES[name], RIGHT[name])
    assert report.status == PASSED, str(report)


class Tensor:
    """A learner's Tensor, as far as a rule's result is read: its `.value`."""

    def __init__(self, value: Any) -> None:
        self.value = np.asarray(value)


def _as_tensors(rule: Callable[..., tuple]) -> Callable[..., tuple]:
    def tensor_rule(*args: Any) -> tuple:
        return tuple(Tensor(c) for c in rule(*args))

    tensor_rule.__name__ = rule.__name__
    return tensor_rule


@pytest.mark.parametrize("name", ["vjp_mul", "vjp_tanh", "vjp_index"])
def test_a_rule_may_return_the_learners_tensors(name: str) -> None:
    report = check_function(EXERCISES[name], _as_tensors(RIGHT[name]))
    assert report.status == PASSED, str(report)


def test_a_unary_rule_returns_a_one_tuple_and_is_told_so() -> None:
    report = check_function(EXERCISES["vjp_exp"], lambda g, x: g * np.exp(x))
    assert report.status == FAILED and report.failure is not None
    assert "(g_x,)" in str(report)


def test_a_rule_that_hands_back_the_courses_own_code_is_refused() -> None:
    from autograder.harness import ch02_rules

    report = check_function(EXERCISES["vjp_neg"], ch02_rules._array)
    assert report.status == FAILED and "the course's own code" in str(report)


# ---------------------------------------------------------------- maximum at a tie


def _tie_gradients() -> dict[str, tuple[np.ndarray, ...]]:
    """Each framework's VJP of maximum(a, b) with a cotangent g, where a == b at entry 0."""
    a, b, g = np.array([1.0, 2.0]), np.array([1.0, 3.0]), np.array([10.0, 20.0])
    jax = jax_module()
    _, pullback = jax.vjp(jax.numpy.maximum, a, b)
    tf = tensorflow()
    ta, tb = tf.constant(a), tf.constant(b)
    with tf.GradientTape() as tape:
        tape.watch([ta, tb])
        y = tf.maximum(ta, tb)
    tf_grads = tape.gradient(y, [ta, tb], output_gradients=tf.constant(g))
    return {
        "jax": tuple(np.asarray(t) for t in pullback(g)),
        "tf": tuple(t.numpy() for t in tf_grads),
        "course": vjp_maximum(g, a, b),
    }


def test_at_a_tie_jax_splits_tensorflow_gives_all_to_a_and_the_course_follows_jax() -> None:
    found = _tie_gradients()
    np.testing.assert_array_equal(found["jax"][0], [5.0, 0.0])
    np.testing.assert_array_equal(found["jax"][1], [5.0, 20.0])
    np.testing.assert_array_equal(found["tf"][0], [10.0, 0.0])
    np.testing.assert_array_equal(found["tf"][1], [0.0, 20.0])
    for ours, theirs in zip(found["course"], found["jax"], strict=True):
        np.testing.assert_array_equal(ours, theirs)
    assert any(case.label.startswith("a tie") for case in EXERCISES["vjp_maximum"].edge_cases())


def test_tensorflows_tie_convention_fails_with_the_hint_that_names_it() -> None:
    def tf_convention(g, a, b):
        return (_unbroadcast(g * (a >= b), a.shape), _unbroadcast(g * (a < b), b.shape))

    report = check_function(EXERCISES["vjp_maximum"], tf_convention)
    assert report.status == FAILED and report.failure is not None
    assert "TensorFlow's convention" in report.failure.hint


def test_relu_is_0_at_0_in_both_frameworks_as_the_exercise_states() -> None:
    x, g = np.array([0.0]), np.array([7.0])
    jax = jax_module()
    (jax_grad,) = jax.vjp(jax.nn.relu, x)[1](g)
    tf = tensorflow()
    tx = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(tx)
        y = tf.nn.relu(tx)
    assert float(jax_grad[0]) == 0.0
    assert float(tape.gradient(y, tx, output_gradients=tf.constant(g)).numpy()[0]) == 0.0
