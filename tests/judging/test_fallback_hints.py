"""Feedback falls back to a hint that says what to look at: every exercise has one for an
exception (chosen by the exception's type, never by its message, which changes between
releases) and one for wrong values; and a declared mistake is named only when the answer
agrees with it everywhere, NaN and Inf positions included."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

from autograder import check
from autograder.exercises import EXERCISES
from autograder.exercises.ch01_chain_rule import PER_EXAMPLE_GRADIENTS
from autograder.exercises.ch04_custom_gradient_tf import TANH_LAYER
from autograder.exercises.ch07_jacobians import GAUSS_NEWTON, JACOBIAN_VIA_VJP
from autograder.judging.attempts import exception_hint
from autograder.judging.compare import outputs_close, outputs_match
from autograder.judging.engine import check_function


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_every_exercise_has_a_fallback_for_exceptions_and_for_wrong_values(name):
    exercise = EXERCISES[name]
    assert exercise.hints_by_kind.get("error"), name
    assert exception_hint(exercise, "KeyError") == exercise.hints_by_kind["error"], name
    assert exercise.hints_by_kind.get("value"), name


@pytest.mark.parametrize(
    ("exercise", "type_name", "words"),
    [
        (GAUSS_NEWTON, "ValueError", "the shape and dtype of its primal"),
        (PER_EXAMPLE_GRADIENTS, "RuntimeError", "keep the tape persistent"),
        (JACOBIAN_VIA_VJP, "TypeError", "jnp.reshape"),
    ],
)
def test_a_learners_typical_exception_gets_a_hint_by_its_type(exercise, type_name, words):
    assert words in exception_hint(exercise, type_name)


def test_an_unmatched_nan_is_not_the_mistakes_nan():
    wrong = (np.array([np.nan, 2.0], np.float32),)
    finite = (np.array([5.0, 2.0], np.float32),)
    assert outputs_close(finite[0], wrong, ("g",))  # a reference's NaN is skipped
    assert not outputs_match(finite[0], wrong, ("g",))  # a mistake's NaN is not
    assert outputs_match(np.array([np.nan, 2.0], np.float32), wrong, ("g",))
    assert not outputs_match(np.array([np.inf, 2.0], np.float32), wrong, ("g",))


def gauss_newton_tangent_of_wrong_shape(f, loss, x, v):
    z, pullback = jax.vjp(f, x)
    u = jax.jvp(f, (x,), (v.reshape(-1),))[1]
    return pullback(jax.jvp(jax.grad(loss), (z,), (u,))[1])[0]


def jacobian_cotangents_of_x_shape(f, x):
    y, pullback = jax.vjp(f, x)
    rows = [pullback(e.reshape(x.shape))[0] for e in jnp.eye(y.size, dtype=y.dtype)]
    return np.asarray(jnp.stack(rows).reshape(y.shape + x.shape))


@pytest.mark.parametrize(
    ("name", "fn"),
    [
        ("gauss_newton_product", gauss_newton_tangent_of_wrong_shape),
        ("jacobian_via_vjp", jacobian_cotangents_of_x_shape),
    ],
)
def test_an_exception_gets_a_hint(name, fn):
    report = getattr(check, name)(fn)
    assert report.status == "failed" and "raised" in report.failure.message, str(report)
    assert report.failure.hint, str(report)


@tf.custom_gradient
def tanh_halved_weight_gradient(x, w):
    y = tf.tanh(x @ w)

    def grad(g, variables=None):
        g_z = g * (1 - y * y)
        return g_z @ tf.transpose(w), [tf.transpose(x) @ g_z / 2]

    return y, grad


@jax.custom_jvp
def bessel_small_x(x):
    shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
    return jax.pure_callback(
        lambda v: (np.exp(-np.abs(v)) * np.i0(v)).astype(v.dtype),
        shape,
        x,
        vmap_method="expand_dims",
    )


@bessel_small_x.defjvp
def _bessel_small_x_jvp(primals, tangents):
    (x,), (t,) = primals, tangents  # i0e'(x) ~ -sign(x) + x / 2 only near 0
    return bessel_small_x(x), (x / 2 - jnp.sign(x)) * t


def test_wrong_values_get_the_value_hint():
    report = check_function(TANH_LAYER, tanh_halved_weight_gradient)
    assert report.failure.hint == TANH_LAYER.hints_by_kind["value"], str(report)
    report = check.bessel_i0e(bessel_small_x)
    assert report.failure.hint == EXERCISES["bessel_i0e"].hints_by_kind["value"], str(report)
