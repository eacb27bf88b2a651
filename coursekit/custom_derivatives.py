"""Measurements for chapter 05: a fixed point differentiated two ways, and compiled memory.

`fixed_point_unrolled` differentiates through every iteration of the solver (JAX keeps each
iteration's residuals); `fixed_point_implicit` differentiates the equation x = f(a, x) at the
solution instead (implicit function theorem), so its memory does not grow with the number of
iterations. The function `f` is a static argument, which is what `nondiff_argnums` is for.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

Map = Callable[[Any, Any], Any]


def iterate(f: Map, a: Any, iterations: int) -> Any:
    """x_{k+1} = f(a, x_k) from x_0 = 0, a fixed number of times (a differentiable loop)."""
    return jax.lax.fori_loop(0, iterations, lambda _, x: f(a, x), jnp.zeros_like(a))


def fixed_point_unrolled(f: Map, a: Any, iterations: int) -> Any:
    """The solver itself; reverse mode goes back through every iteration."""
    return iterate(f, a, iterations)


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 2))
def fixed_point_implicit(f: Map, a: Any, iterations: int) -> Any:
    """The same solution, with a VJP from the implicit function theorem."""
    return iterate(f, a, iterations)


def _implicit_fwd(f: Map, a: Any, iterations: int) -> tuple[Any, tuple[Any, Any]]:
    x = iterate(f, a, iterations)
    return x, (a, x)


def _implicit_bwd(f: Map, iterations: int, residuals: tuple[Any, Any], g: Any) -> tuple:
    """The cotangent of a, (df/da)^T u, where u = g + (df/dx)^T u (solved by the same
    iteration)."""
    a, x = residuals
    _, vjp_x = jax.vjp(lambda x: f(a, x), x)
    u = jax.lax.fori_loop(0, iterations, lambda _, u: g + vjp_x(u)[0], g)
    _, vjp_a = jax.vjp(lambda a: f(a, x), a)
    return vjp_a(u)


fixed_point_implicit.defvjp(_implicit_fwd, _implicit_bwd)


def compiled_temp_bytes(fn: Callable[..., Any], *args: Any) -> int:
    """Scratch memory XLA plans for `jax.jit(fn)(*args)` (arguments and outputs excluded)."""
    stats = jax.jit(fn).lower(*args).compile().memory_analysis()
    return int(stats.temp_size_in_bytes)
