"""Chapter 05's invokes: the learner's custom-derivative function under JAX's transformations.

Chapter 06's invokes (ch06_implicit_callbacks_checkpointing) reuse its stages and helpers.

Each invoke runs the learner's function under `jax.jit`, `jax.jvp`/`jax.vjp`, `jax.vmap` and
`jax.grad` (twice for the custom_jvp one) and returns numpy arrays. When JAX refuses a
transformation, it raises a ValueError naming the transformation and the likely mistake (a
rule not linear in the tangent, residuals closing over tracers, a bwd returning the wrong
structure, ...). soft_threshold's and softmax_entropy's invokes then look for the custom rule
in the traced program (`custom_rules`) and, where there is none, raise MethodNotFollowed with
the values: both can be had from a formula JAX differentiates by itself, and the rule is the
exercise.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import jax
import numpy as np

from . import english
from .compiling import fast_jit
from .method import MethodNotFollowed

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


_NOT_LINEAR = english(
    "your JVP rule is not linear in the tangent. JAX transposes the tangent part to get "
    "reverse mode, so it must be (something of the primals) * tangent: no t * t, sin(t), "
    "abs(t) or where() on the tangent."
)
_CLOSED_OVER_TRACERS = english(
    "your residuals close over tracers: fwd stored a value outside itself (a global, "
    "nonlocal, list or attribute) and bwd read it from there. Everything bwd needs must "
    "travel in the residuals fwd returns."
)
LIKELY_MISTAKES = (
    (
        "nondiff_argnums",
        english(
            "an array (a traced value) was passed in a `nondiff_argnums` "
            "position. Pass arrays as ordinary arguments (bwd returns a cotangent for them, or "
            "zeros) and keep nondiff_argnums for static Python values such as functions."
        ),
    ),
    ("Transpose rule", _NOT_LINEAR),
    ("AssertionError", _NOT_LINEAR),
    (
        "Custom VJP bwd rule must produce",
        english(
            "bwd returned the wrong structure. It must return "
            "a TUPLE with one cotangent per differentiable argument of the primal function, in "
            "order (for one argument: `return (g_x,)`), and nothing for nondiff_argnums."
        ),
    ),
    (
        "unexpected JAX type",
        english(
            "your function changed the dtype (for example float32 in, "
            "float64 out, after mixing in a float64 numpy array). Keep x's dtype: use "
            "jnp.zeros_like(x) or plain Python floats for constants."
        ),
    ),
    (
        "Custom JVP rule must produce",
        english(
            "the JVP rule must return a pair "
            "(primal_out, tangent_out) with matching shapes and dtypes."
        ),
    ),
    ("No constant handler", _CLOSED_OVER_TRACERS),
    ("UnexpectedTracerError", _CLOSED_OVER_TRACERS),
    (
        "Pure callbacks do not support JVP",
        english(
            "JAX cannot differentiate through "
            "jax.pure_callback. Give the function a jax.custom_jvp rule, and write the rule itself "
            "in jax.numpy (not with another callback) so it can be differentiated again."
        ),
    ),
    (
        "vmap_method",
        english(
            "jax.pure_callback needs a vmap_method to work under jax.vmap; for an "
            "elementwise numpy routine, vmap_method='expand_dims' (or 'broadcast_all')."
        ),
    ),
    (
        "while_loop",
        english(
            "reverse mode cannot differentiate through lax.while_loop. That is what "
            "the custom_vjp rule is for: differentiate the fixed-point equation, not the loop."
        ),
    ),
    (
        "Tracer",
        english(
            "a traced value was used where JAX needs a concrete one (a Python if, "
            "float(), or numpy on a traced value). Use jnp functions, jnp.where or lax control "
            "flow."
        ),
    ),
)


def explain(stage: str, error: Exception) -> str:
    """What failed at this stage, and the likely mistake when JAX's message gives it away."""
    text = f"{type(error).__name__}: {error}"
    first = text.strip().splitlines()[0][:300]
    for needle, cause in LIKELY_MISTAKES:
        if needle in text:
            return english(
                "{stage} failed ({first}). Likely mistake: {cause}",
                stage=stage,
                first=first,
                cause=cause,
            )
    return english("{stage} failed ({first}).", stage=stage, first=first)


def stage(name: str, thunk: Callable[[], Any]) -> Any:
    """thunk(), with JAX's refusal turned into a ValueError that names the transformation.

    Inside an invoke's program each transformation is one stage: JAX refuses it while
    tracing it, so the error still says which one failed. The stub's NotImplementedError
    passes through (not answered yet), and so does an error an inner stage explained."""
    try:
        return thunk()
    except NotImplementedError as error:
        if str(error).startswith("Exercise "):  # the learner copy's stub: not answered yet
            raise
        raise _explained(name, error) from None
    except Exception as error:
        if getattr(error, "explained_stage", None):
            raise
        raise _explained(name, error) from None


def _explained(stage: str, error: Exception) -> ValueError:
    explained = ValueError(explain(stage, error))
    explained.explained_stage = stage
    return explained


def vjp_of(fn: Fn, x: Any, g: Any) -> tuple[Any, Any]:
    """(primal_out, cotangent of x) from jax.vjp: the primal out of fwd, or of the JVP rule."""
    y, pullback = jax.vjp(fn, x)
    return y, pullback(g)[0]


def elementwise(transform: Fn, x: Any) -> Any:
    """transform applied to every element of x through jax.vmap, in x's shape."""
    return jax.vmap(transform)(x.reshape(-1)).reshape(x.shape)


def numpy_arrays(values: Any) -> tuple[np.ndarray, ...]:
    return tuple(np.asarray(v) for v in values)


# One program per exercise: every transformation of a case is traced into one jitted
# function, compiled once per (function, shape, dtype), instead of one program per
# transformation (3-5 per case, each traced, lowered and looked up in JAX's compilation
# cache on its own). `fn` is a static argument; the values are the learner's own outputs.
# A case's numpy arrays are passed as they are: jit copies them to the device itself, with
# less Python than jax.device_put, and compiles nothing for it (jnp.asarray did, per shape).


@fast_jit(static_argnums=0)
def _elementwise_program(fn: Fn, x: Any, t: Any, g: Any) -> tuple[Any, ...]:
    return (
        stage("jax.jit(fn)(x)", lambda: jax.jit(fn)(x)),
        *stage("jax.jit(jax.jvp(fn))", lambda: jax.jvp(fn, (x,), (t,))),
        *stage("jax.vjp(jax.jit(fn))", lambda: vjp_of(jax.jit(fn), x, g)),
        stage("jax.jit(jax.vmap(jax.grad(fn)))", lambda: elementwise(jax.grad(fn), x)),
        stage(
            "jax.jit(jax.vmap(jax.grad(jax.grad(fn))))",
            lambda: elementwise(jax.grad(jax.grad(fn)), x),
        ),
    )


@fast_jit(static_argnums=0)
def _row_program(fn: Fn, logits: Any, g: Any) -> tuple[Any, ...]:
    """A function of each row (the last axis) to one number: its value, its VJP, and the
    VJP of each row on its own (a rule that only works on a whole batch fails there)."""

    def row_vjp(row: Any, row_g: Any) -> Any:
        return jax.vjp(fn, row)[1](row_g)[0]

    return (
        stage("jax.jit(fn)(logits)", lambda: jax.jit(fn)(logits)),
        *stage("jax.vjp(jax.jit(fn))", lambda: vjp_of(jax.jit(fn), logits, g)),
        stage("jax.jit(jax.vmap(VJP of each row))", lambda: jax.vmap(row_vjp)(logits, g)),
    )


# ---------------------------------------------------------------- a custom rule, or none


_CUSTOM_RULES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _equations(jaxpr: Any) -> Iterator[Any]:
    """Every equation of a jaxpr, inside the calls it makes too (jit, custom rules, loops)."""
    for eqn in jaxpr.eqns:
        yield eqn
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                inner = getattr(sub, "jaxpr", None)
                if inner is not None:
                    yield from _equations(getattr(inner, "jaxpr", inner))


def custom_rules(fn: Fn, x: Any) -> frozenset[str]:
    """The custom-rule primitives ("custom_jvp_call", "custom_vjp_call") in jax.make_jaxpr(fn)(x),
    once per function and input shape and dtype (tracing is most of a check's time)."""

    def judge() -> frozenset[str]:
        jaxpr = jax.make_jaxpr(fn)(x).jaxpr
        return frozenset(
            eqn.primitive.name
            for eqn in _equations(jaxpr)
            if eqn.primitive.name.startswith(("custom_jvp_call", "custom_vjp_call"))
        )

    key = (x.shape, str(x.dtype))
    try:
        known = _CUSTOM_RULES.setdefault(fn, {})
    except TypeError:  # a callable that takes no weak reference: judge every time
        return judge()
    if key not in known:
        known[key] = judge()
    return known[key]


NO_CUSTOM_JVP = (
    "Right values, but {name} has no jax.custom_jvp rule: JAX derived the derivative from "
    "how you wrote the value, so the convention at the kink depends on that writing. Decorate "
    "{name} with @jax.custom_jvp and state the derivative in its rule."
)
NO_CUSTOM_RULE = (
    "Right values, but {name} has no custom rule: JAX differentiated your stable formula by "
    "itself. The exercise is to derive the backward pass: decorate {name} with "
    "@jax.custom_vjp (or @jax.custom_jvp) and write the rule."
)


@fast_jit(static_argnums=0)
def _argmax_ste_program(fn: Fn, logits: Any, g: Any) -> tuple[Any, ...]:
    return (
        stage("jax.jit(fn)(logits)", lambda: jax.jit(fn)(logits)),
        *stage("jax.vjp(jax.jit(fn))", lambda: vjp_of(jax.jit(fn), logits, g)),
    )


# ---------------------------------------------------------------- one invoke per exercise


def invoke_soft_threshold(fn: Fn, x: Any, t: Any, g: Any) -> tuple[np.ndarray, ...]:
    with double_precision():
        values = numpy_arrays(
            stage(
                "running the compiled jit/jvp/vjp/grad program",
                lambda: _elementwise_program(fn, x, t, g),
            )
        )
        rules = stage(
            "looking for a custom rule in jax.make_jaxpr(fn)(x)", lambda: custom_rules(fn, x)
        )
    if "custom_jvp_call" not in rules:
        raise MethodNotFollowed(english(NO_CUSTOM_JVP, name="soft_threshold"), values)
    return values


def invoke_softmax_entropy(fn: Fn, logits: Any, g: Any) -> tuple[np.ndarray, ...]:
    with double_precision():
        values = numpy_arrays(
            stage("running the compiled jit/vjp/vmap program", lambda: _row_program(fn, logits, g))
        )
        rules = stage(
            "looking for a custom rule in jax.make_jaxpr(fn)(logits)",
            lambda: custom_rules(fn, logits),
        )
    if not rules:
        raise MethodNotFollowed(english(NO_CUSTOM_RULE, name="softmax_entropy"), values)
    return values


def invoke_argmax_ste(fn: Fn, logits: Any, g: Any) -> tuple[np.ndarray, ...]:
    with double_precision():
        return numpy_arrays(
            stage(
                "running the compiled jit/vjp program", lambda: _argmax_ste_program(fn, logits, g)
            )
        )
