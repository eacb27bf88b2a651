"""Wrong answers fail by a clear margin, not barely: the worst error over its tolerance is
at least CLEAR_MARGIN on the cases a notebook check runs (a backward pass with too
few fixed-point iterations was off by 2.3e-4 against 1e-4 allowed).

Each wrong answer here is written as a learner would write it; the cases that
catch it (large a for the fixed point, asymmetric bounds, several limits) are the ones the
strategies draw, so a narrower strategy makes these tests fail."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

from autograder.exercises.ch01_chain_rule import PREDICT_TAPE_GRADIENT
from autograder.exercises.ch04_custom_gradient_tf import CLIP_COTANGENT_NORM
from autograder.exercises.ch05_custom_derivatives_jax import SOFT_THRESHOLD
from autograder.exercises.ch06_implicit_callbacks_checkpointing import FIXED_POINT
from autograder.exercises.ch07_jacobians import BATCH_JACOBIAN
from tests.margins import CLEAR_MARGIN, of_dtype, worst_excess

# ---------------------------------------------------------------- fixed_point, too few iterations


def _map(a, x):
    return a / (1 + x)


def _solve(a):
    return jax.lax.fori_loop(0, 300, lambda i, x: _map(a, x), jnp.zeros_like(a))


@functools.cache
def fixed_point_iterating_bwd(iterations: int):
    """bwd solves u = g + u df/dx by iterating, as the right general answer does, but
    stops after `iterations` (the map contracts by x / (1 + x), slowly for large a)."""

    @jax.custom_vjp
    def fixed_point(a):
        return _solve(a)

    def fwd(a):
        x = _solve(a)
        return x, (a, x)

    def bwd(residuals, g):
        a, x = residuals
        _, vjp_x = jax.vjp(lambda x: _map(a, x), x)
        u = jax.lax.fori_loop(0, iterations, lambda i, u: g + vjp_x(u)[0], g)
        return jax.vjp(lambda a: _map(a, x), a)[1](u)

    fixed_point.defvjp(fwd, bwd)
    return fixed_point


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_too_few_fixed_point_iterations_fail_clearly_in_each_dtype(dtype):
    excess = worst_excess(FIXED_POINT, fixed_point_iterating_bwd(40), keep=of_dtype(dtype))
    assert excess >= CLEAR_MARGIN, excess


def test_enough_fixed_point_iterations_pass():
    """The same bwd with as many iterations as the solver is right: the margin above comes
    from the iteration count, not from the way the answer is written."""
    assert worst_excess(FIXED_POINT, fixed_point_iterating_bwd(300)) <= 1


# ---------------------------------------------------------------- soft_threshold, live kinks


@jax.custom_jvp
def soft_threshold_live_ends(x):
    return jnp.sign(x) * jnp.maximum(jnp.abs(x) - 1, 0)


@soft_threshold_live_ends.defjvp
def _live_ends_jvp(primals, tangents):
    """Slope 1 on the kinks x = +-1 too: right everywhere but there."""
    (x,), (t,) = primals, tangents
    return soft_threshold_live_ends(x), jnp.where(jnp.abs(x) >= 1, t, jnp.zeros_like(t))


def test_a_rule_with_live_kinks_fails_clearly_on_drawn_cases():
    """Only x = +-1 exactly tells it apart, so the drawn cases (the hand-picked ones left
    out) must land on the kinks."""
    excess = worst_excess(SOFT_THRESHOLD, soft_threshold_live_ends, keep=lambda c: not c.label)
    assert excess >= CLEAR_MARGIN, excess


# ---------------------------------------------------------------- clip_cotangent_norm, fixed


def clip_cotangent_norm_fixed_limit(x, max_norm):
    @tf.custom_gradient
    def identity(x):
        return tf.identity(x), lambda g: tf.clip_by_norm(g, 1.0)

    return identity(x)


def test_a_hard_coded_limit_fails_clearly():
    excess = worst_excess(CLIP_COTANGENT_NORM, clip_cotangent_norm_fixed_limit)
    assert excess >= CLEAR_MARGIN, excess


# ---------------------------------------------------------------- batch_jacobian, rows alone


def batch_rows_alone(f, x):
    """Each row's Jacobian from f of that row as a batch of one: right only when rows are
    independent (batch normalisation of one row is all zeros)."""
    rows = [jax.jacrev(f)(x[b : b + 1])[0, :, 0, :] for b in range(x.shape[0])]
    full = jax.jacrev(f)(x)
    off = full * (1 - jnp.eye(x.shape[0], dtype=x.dtype))[:, None, :, None]
    return jnp.stack(rows), bool(jnp.all(off == 0))


def test_rows_as_batches_of_one_fail_clearly():
    excess = worst_excess(BATCH_JACOBIAN, batch_rows_alone)
    assert excess >= CLEAR_MARGIN, excess


# ---------------------------------------------------------------- predict_tape_gradient


def test_summing_the_first_axis_only_fails_clearly():
    """Right when y has one axis; the menu has scalar and two-axis y as well."""
    excess = worst_excess(PREDICT_TAPE_GRADIENT, lambda jacobian, x_shape: jacobian.sum(axis=0))
    assert excess >= CLEAR_MARGIN, excess
