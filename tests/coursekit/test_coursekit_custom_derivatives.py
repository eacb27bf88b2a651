"""The chapter 05 measurement helpers: both fixed-point gradients are right, and the implicit
one plans less memory than differentiating through the loop."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from coursekit.custom_derivatives import (
    compiled_temp_bytes,
    fixed_point_implicit,
    fixed_point_unrolled,
)


def _map(a, x):
    return a / (1 + x)


def _closed_form_grad(a):
    return 1 / np.sqrt(1 + 4 * a)


def test_both_gradients_match_the_closed_form():
    a = jnp.linspace(0.1, 10.0, 7)
    for solver in (fixed_point_unrolled, fixed_point_implicit):
        grad = jax.grad(lambda a, solver=solver: solver(_map, a, 200).sum())(a)
        np.testing.assert_allclose(grad, _closed_form_grad(np.asarray(a)), rtol=1e-5)


def test_implicit_gradient_works_under_jit_and_vmap():
    a = jnp.linspace(0.1, 10.0, 5)
    grad = jax.jit(jax.vmap(jax.grad(lambda a: fixed_point_implicit(_map, a, 200))))(a)
    np.testing.assert_allclose(grad, _closed_form_grad(np.asarray(a)), rtol=1e-5)


def test_implicit_plans_less_memory_than_the_unrolled_loop():
    a = jnp.ones(4096)

    def loss(solver):
        return lambda a: solver(_map, a, 50).sum()

    unrolled = compiled_temp_bytes(jax.grad(loss(fixed_point_unrolled)), a)
    implicit = compiled_temp_bytes(jax.grad(loss(fixed_point_implicit)), a)
    assert unrolled > 5 * implicit
