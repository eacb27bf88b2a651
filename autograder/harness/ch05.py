"""Chapter 05's invokes: the learner's custom-derivative function under JAX's transformations.

Each invoke runs the learner's function under `jax.jit`, `jax.jvp`/`jax.vjp`, `jax.vmap` and
`jax.grad` (twice for the custom_jvp ones) and returns numpy arrays. When JAX refuses a
transformation, it raises a ValueError naming the transformation and the likely mistake (a
rule not linear in the tangent, residuals closing over tracers, a bwd returning the wrong
structure, ...).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

Fn = Callable[..., Any]


@contextlib.contextmanager
def double_precision() -> Iterator[None]:
    """float64 on every thread while the learner's function runs; the old setting returns.

    jax.enable_x64 alone holds on this thread only. On a GPU, jax.pure_callback runs its
    Python on a host-callback thread, which would then see float32, turn float64 inputs
    into float32 and refuse the callback's float64 result ("CpuCallback error").
    """
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        with jax.enable_x64(True):
            yield
    finally:
        jax.config.update("jax_enable_x64", before)


_NOT_LINEAR = (
    "your JVP rule is not linear in the tangent. JAX transposes the tangent part to get "
    "reverse mode, so it must be (something of the primals) * tangent: no t * t, sin(t), "
    "abs(t) or where() on the tangent."
)
_CLOSED_OVER_TRACERS = (
    "your residuals close over tracers: fwd stored a value outside itself (a global, "
    "nonlocal, list or attribute) and bwd read it from there. Everything bwd needs must "
    "travel in the residuals fwd returns."
)
LIKELY_MISTAKES = (
    ("nondiff_argnums", "an array (a traced value) was passed in a `nondiff_argnums` "
     "position. Pass arrays as ordinary arguments (bwd returns a cotangent for them, or "
     "zeros) and keep nondiff_argnums for static Python values such as functions."),
    ("Transpose rule", _NOT_LINEAR),
    ("AssertionError", _NOT_LINEAR),
    ("Custom VJP bwd rule must produce", "bwd returned the wrong structure. It must return "
     "a TUPLE with one cotangent per differentiable argument of the primal function, in "
     "order (for one argument: `return (g_x,)`), and nothing for nondiff_argnums."),
    ("unexpected JAX type", "your function changed the dtype (for example float32 in, "
     "float64 out, after mixing in a float64 numpy array). Keep x's dtype: use "
     "jnp.zeros_like(x) or plain Python floats for constants."),
    ("Custom JVP rule must produce", "the JVP rule must return a pair "
     "(primal_out, tangent_out) with matching shapes and dtypes."),
    ("No constant handler", _CLOSED_OVER_TRACERS),
    ("UnexpectedTracerError", _CLOSED_OVER_TRACERS),
    ("Pure callbacks do not support JVP", "JAX cannot differentiate through "
     "jax.pure_callback. Give the function a jax.custom_jvp rule, and write the rule itself "
     "in jax.numpy (not with another callback) so it can be differentiated again."),
    ("vmap_method", "jax.pure_callback needs a vmap_method to work under jax.vmap; for an "
     "elementwise numpy routine, vmap_method='expand_dims' (or 'broadcast_all')."),
    ("while_loop", "reverse mode cannot differentiate through lax.while_loop. That is what "
     "the custom_vjp rule is for: differentiate the fixed-point equation, not the loop."),
    ("Tracer", "a traced value was used where JAX needs a concrete one (a Python if, "
     "float(), or numpy on a traced value). Use jnp functions, jnp.where or lax control flow."),
)


def explain(stage: str, error: Exception) -> str:
    """What failed at this stage, and the likely mistake when JAX's message gives it away."""
    text = f"{type(error).__name__}: {error}"
    first = text.strip().splitlines()[0][:300]
    for needle, cause in LIKELY_MISTAKES:
        if needle in text:
            return f"{stage} failed ({first}). Likely mistake: {cause}"
    return f"{stage} failed ({first})."


def run(stage: str, thunk: Callable[[], Any]) -> np.ndarray:
    """thunk(), with JAX's refusal turned into a ValueError that names the transformation."""
    return _guarded(stage, lambda: np.asarray(thunk()))


def run_pair(stage: str, thunk: Callable[[], Any]) -> tuple[np.ndarray, np.ndarray]:
    """run() for jax.jvp and jax.vjp, which give (primal_out, tangent or cotangent): the
    primal comes from the learner's rule (the JVP rule, or fwd), not from the function, so
    it is compared too."""
    return _guarded(stage, lambda: tuple(np.asarray(v) for v in thunk()))


def _guarded(stage: str, thunk: Callable[[], Any]) -> Any:
    try:
        return thunk()
    except NotImplementedError as error:
        if str(error).startswith("Exercise "):  # the learner copy's stub: not answered yet
            raise
        raise ValueError(explain(stage, error)) from None
    except Exception as error:
        raise ValueError(explain(stage, error)) from None


def vjp_of(fn: Fn, x: Any, g: Any) -> tuple[Any, Any]:
    """(primal_out, cotangent of x) from jax.vjp: the primal out of fwd, or of the JVP rule."""
    y, pullback = jax.vjp(fn, x)
    return y, pullback(g)[0]


# jax.vjp builds a new linearized program on every call, which JAX then lowers (and looks up
# in its compilation cache) again: under jit it is traced once per (function, shape, dtype).
@functools.partial(jax.jit, static_argnums=0)
def vjp_jit(fn: Fn, x: Any, g: Any) -> tuple[Any, Any]:
    """vjp_of(jax.jit(fn), x, g), compiled once per function, shape and dtype."""
    return vjp_of(jax.jit(fn), x, g)


def elementwise(transform: Fn, x: Any) -> Any:
    """transform applied to every element of x through jax.vmap, in x's shape."""
    return jax.vmap(transform)(x.reshape(-1)).reshape(x.shape)


# Compiled once per (function, shape, dtype): fn is a static argument.
@functools.partial(jax.jit, static_argnums=0)
def jvp_jit(fn: Fn, x: Any, t: Any) -> Any:
    return jax.jvp(fn, (x,), (t,))


@functools.partial(jax.jit, static_argnums=0)
def grad_vmap_jit(fn: Fn, x: Any) -> Any:
    return elementwise(jax.grad(fn), x)


@functools.partial(jax.jit, static_argnums=0)
def second_vmap_jit(fn: Fn, x: Any) -> Any:
    return elementwise(jax.grad(jax.grad(fn)), x)


# ---------------------------------------------------------------- one invoke per exercise


def invoke_log1pexp(fn: Fn, x: Any, t: Any, g: Any) -> tuple[np.ndarray, ...]:
    with double_precision():
        x, t, g = jnp.asarray(x), jnp.asarray(t), jnp.asarray(g)
        f = jax.jit(fn)
        return (
            run("jax.jit(fn)(x)", lambda: f(x)),
            *run_pair("jax.jit(jax.jvp(fn))", lambda: jvp_jit(fn, x, t)),
            *run_pair("jax.vjp(jax.jit(fn))", lambda: vjp_jit(fn, x, g)),
            run("jax.jit(jax.vmap(jax.grad(fn)))", lambda: grad_vmap_jit(fn, x)),
            run("jax.jit(jax.vmap(jax.grad(jax.grad(fn))))", lambda: second_vmap_jit(fn, x)),
        )


@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def _clip_value_jit(fn: Fn, lo: float, hi: float, x: Any) -> Any:
    return fn(lo, hi, x)


@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def _clip_vjp_jit(fn: Fn, lo: float, hi: float, x: Any, g: Any) -> Any:
    return vjp_of(lambda v: _clip_value_jit(fn, lo, hi, v), x, g)


@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def _clip_rows_vjp_jit(fn: Fn, lo: float, hi: float, x: Any, g: Any) -> Any:
    def row_vjp(row: Any, row_g: Any) -> Any:
        return jax.vjp(lambda v: fn(lo, hi, v), row)[1](row_g)[0]

    return jax.vmap(row_vjp)(x, g)


@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def _clip_chained_grad_jit(fn: Fn, lo: float, hi: float, x: Any, g: Any) -> Any:
    return jax.grad(lambda v: jnp.sum(g * jnp.sin(fn(lo, hi, 3 * v))))(x)


def invoke_clip_gradient(fn: Fn, lo: float, hi: float, x: Any, g: Any
                         ) -> tuple[np.ndarray, ...]:
    with double_precision():
        x, g = jnp.asarray(x), jnp.asarray(g)
        return (
            run("jax.jit(fn)(lo, hi, x)", lambda: _clip_value_jit(fn, lo, hi, x)),
            *run_pair("jax.vjp(jax.jit(fn))", lambda: _clip_vjp_jit(fn, lo, hi, x, g)),
            run("jax.jit(jax.vmap(VJP of each row))",
                lambda: _clip_rows_vjp_jit(fn, lo, hi, x, g)),
            run("jax.jit(jax.grad(sum(g * sin(fn(lo, hi, 3 * x)))))",
                lambda: _clip_chained_grad_jit(fn, lo, hi, x, g)),
        )


def invoke_fixed_point(fn: Fn, a: Any, g: Any) -> tuple[np.ndarray, ...]:
    with double_precision():
        a, g = jnp.asarray(a), jnp.asarray(g)
        f = jax.jit(fn)
        return (
            run("jax.jit(fn)(a)", lambda: f(a)),
            *run_pair("jax.vjp(jax.jit(fn))", lambda: vjp_jit(fn, a, g)),
            run("jax.jit(jax.vmap(jax.grad(fn)))", lambda: grad_vmap_jit(fn, a)),
        )


def invoke_bessel_i0(fn: Fn, x: Any, t: Any) -> tuple[np.ndarray, ...]:
    with double_precision():
        x, t = jnp.asarray(x), jnp.asarray(t)
        f = jax.jit(fn)
        return (
            run("jax.jit(fn)(x)", lambda: f(x)),
            *run_pair("jax.jit(jax.jvp(fn))", lambda: jvp_jit(fn, x, t)),
            run("jax.jit(jax.vmap(jax.grad(fn)))", lambda: grad_vmap_jit(fn, x)),
            run("jax.jit(jax.vmap(jax.grad(jax.grad(fn))))", lambda: second_vmap_jit(fn, x)),
        )
