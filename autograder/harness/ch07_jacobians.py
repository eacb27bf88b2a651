"""Chapter 07's test functions and invokes: the learner's code gets a jax.numpy function.

A case cannot carry a function (cases are data shipped to a sandbox), so it names one of a few fixed
test functions. They are built here with jax.numpy, for the learner's code (by the invokes) and for
the JAX references (autograder.exercises.ch07_jacobians imports this module), so the learner's code
sees exactly the function the reference saw. The invokes also check the method: the Jacobian
exercises build the Jacobian themselves (no jax.jacrev, jax.jacfwd, jax.hessian: method.py watches
them), and `gauss_newton_product` builds no matrix (the builders are watched; the jaxpr shows the
sizes). No invoke runs code of the course's own `coursekit` (coursekit.jacobians, which the
notebook imports for its measurements, composes the Jacobian builders).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from . import english, method
from .ch05_custom_derivatives_jax import double_precision
from .compiling import device_arrays, fast_jit
from .course_helpers import refuse_course_helpers

BATCH_NORM_EPS = 0.1
Fn = Callable[..., Any]


def mix_matrix(rows: int, cols: int, dtype: Any) -> Any:
    """A fixed, deterministic (rows, cols) matrix with no symmetry."""
    i = jnp.arange(rows, dtype=dtype)[:, None]
    j = jnp.arange(cols, dtype=dtype)[None, :]
    return jnp.cos(1.3 * i - 0.7 * j + 0.5)


def vector_function(name: str) -> Fn:
    """Test functions for jacobian_via_vjp / jacobian_via_jvp: any shape in, some shape out."""

    def tanh_mix(x: Any) -> Any:  # x: any shape (n entries) -> (n + 1,)
        v = jnp.ravel(x)
        return jnp.tanh(mix_matrix(v.size + 1, v.size, x.dtype) @ v)

    def cumsum_sin(x: Any) -> Any:  # x: any shape (n entries) -> (n,)
        v = jnp.ravel(x)
        return jnp.cumsum(v * jnp.sin(v))

    def outer(x: Any) -> Any:  # x: (..., k) -> (..., k, k)
        return x[..., :, None] * jnp.sin(x)[..., None, :]

    def logsumexp_rows(x: Any) -> Any:  # x: (..., k) -> (...)
        return jax.nn.logsumexp(x, axis=-1)

    return {f.__name__: f for f in (tanh_mix, cumsum_sin, outer, logsumexp_rows)}[name]


def batch_function(name: str) -> Fn:
    """Test functions for batch_jacobian: x (B, n) -> y (B, n + 1)."""

    def dense_tanh(x: Any) -> Any:  # each row on its own
        return jnp.tanh(x @ mix_matrix(x.shape[1], x.shape[1] + 1, x.dtype))

    def softmax_rows(x: Any) -> Any:  # each row on its own
        return jax.nn.softmax(x @ mix_matrix(x.shape[1], x.shape[1] + 1, x.dtype), axis=-1)

    def batchnorm(x: Any) -> Any:  # every row depends on the whole batch
        h = x @ mix_matrix(x.shape[1], x.shape[1] + 1, x.dtype)
        centred = h - jnp.mean(h, axis=0)
        return centred / jnp.sqrt(jnp.mean(centred**2, axis=0) + BATCH_NORM_EPS)

    def batch_centred(x: Any) -> Any:  # every row depends on the whole batch
        t = jnp.tanh(x @ mix_matrix(x.shape[1], x.shape[1] + 1, x.dtype))
        return t - jnp.mean(t, axis=0)

    fns = (dense_tanh, softmax_rows, batchnorm, batch_centred)
    return {f.__name__: f for f in fns}[name]


GAUSS_NEWTON_MODELS = ("cumsum_sin", "outer")  # vector_function's, small inside


def loss_function(name: str) -> Fn:
    """Losses for gauss_newton_product: z of any shape in, a scalar out, each with a Hessian
    of its own kind (a dense one, the identity, a diagonal one), all computed without
    cancellation: a saturating loss (a softmax cross-entropy, a log-cosh) has Hessian entries
    that float32 rounds differently in TensorFlow and JAX, and the references disagreed."""

    def coupled_squares(z: Any) -> Any:  # a dense Hessian, I + 1 1^T, exact in float32
        return 0.5 * jnp.sum(z**2) + 0.5 * jnp.sum(z) ** 2

    def squared_error(z: Any) -> Any:  # half the squared distance to 0.5: Hessian I
        return 0.5 * jnp.sum((z - 0.5) ** 2)

    def quartic(z: Any) -> Any:  # a diagonal Hessian, z**2, exact in products (no 1 - tanh**2
        return jnp.sum(z**4) / 12  # that float32 rounds away where a log-cosh saturates)

    return {f.__name__: f for f in (coupled_squares, squared_error, quartic)}[name]


# ---------------------------------------------------------------- invokes

BUILDERS = {"vector": vector_function, "batch": batch_function}
_TEST_FUNCTIONS: dict[tuple[str, str], Fn] = {}
_JITTED: dict[tuple[Fn, str, str], Fn] = {}


JACOBIAN_METHOD = (
    "{exercise} must build the Jacobian itself from {primitive}, one one-hot {vector} at a time "
    "(a loop, or jax.vmap over them), but it used {builder}, which builds the whole Jacobian "
    "for you."
)
_BUILDER_USED: dict[tuple[Fn, str, tuple[int, ...], str], str] = method.per_check({})


# (fn, exercise) whose code was read for the course's helpers, per check: read once, not per case
_OWN_CODE: dict[tuple[Fn, str], bool] = method.per_check({})


def refuse_helpers_once(fn: Fn, exercise: str) -> None:
    """refuse_course_helpers, read once per function and check (it raises every time)."""
    if (fn, exercise) not in _OWN_CODE:
        refuse_course_helpers(fn, exercise)
        _OWN_CODE[fn, exercise] = True


def invoke_jacobian_vjp(fn: Fn, name: str, x: np.ndarray) -> Any:
    """The learner's fn(f, x) for the vector test function `name`, built by hand from VJPs."""
    return _jacobian_by_hand(fn, name, x, ("jacobian_via_vjp", "jax.vjp", english("cotangent")))


def invoke_jacobian_jvp(fn: Fn, name: str, x: np.ndarray) -> Any:
    """The learner's fn(f, x) for the vector test function `name`, built by hand from JVPs."""
    return _jacobian_by_hand(fn, name, x, ("jacobian_via_jvp", "jax.jvp", english("tangent")))


def _jacobian_by_hand(fn: Fn, name: str, x: np.ndarray, words: tuple[str, str, str]) -> Any:
    """The learner's Jacobian, refused when a builder made it. The builders are looked for in
    one trace per function, shape and dtype, with every call seen (a jitted part runs its
    Python), then in the run itself (code that cannot be traced runs eagerly)."""
    refuse_helpers_once(fn, words[0])
    key = (fn, name, x.shape, str(x.dtype))
    if key not in _BUILDER_USED:
        _BUILDER_USED[key] = _builder_in_trace(fn, vector_function(name), x)
    with method.watching(fn, every_call=False) as usage:
        result = _invoke("vector", fn, name, (x,))
    builder = usage.builders[0] if usage.builders else _BUILDER_USED[key]
    if builder:
        exercise, primitive, vector = words
        raise method.MethodNotFollowed(
            english(
                JACOBIAN_METHOD,
                exercise=exercise,
                primitive=primitive,
                vector=vector,
                builder=builder,
            ),
            result,
        )
    return result


def _builder_in_trace(fn: Fn, f: Fn, x: np.ndarray) -> str:
    """The first Jacobian builder fn(f, x) calls while traced, or "" (also when untraceable:
    the eager run is watched too)."""
    try:
        with method.watching(fn) as usage, _precision_for((x,)):
            jax.make_jaxpr(lambda a: fn(f, a))(*device_arrays(x))
    except Exception:
        return ""
    return usage.builders[0] if usage.builders else ""


def invoke_batch(fn: Fn, name: str, *arrays: np.ndarray) -> Any:
    """The learner's fn(f, *arrays) for the batch test function `name`."""
    refuse_helpers_once(fn, "batch_jacobian")
    return _invoke("batch", fn, name, arrays)


def _invoke(kind: str, fn: Fn, name: str, arrays: tuple[np.ndarray, ...]) -> Any:
    """Build the named function, call the learner, return numpy.

    Eager JAX compiles every operation separately for every new shape, which would make a
    check of ~35 cases slow. So the learner's function is first tried under jax.jit (one
    compilation per case); if that raises (numpy calls on traced values, `bool(...)` of an
    array), it is simply called as written.
    """
    if (kind, name) not in _TEST_FUNCTIONS:
        _TEST_FUNCTIONS[kind, name] = jax.jit(BUILDERS[kind](name))
    f = _TEST_FUNCTIONS[kind, name]
    key = (fn, kind, name)
    if key not in _JITTED:
        _JITTED[key] = fast_jit(lambda *a: fn(f, *a))
    with _precision_for(arrays):
        args = device_arrays(*arrays)
        try:
            return _as_numpy(_JITTED[key](*args))
        except Exception:
            return _as_numpy(fn(f, *args))


def _precision_for(arrays: tuple[np.ndarray, ...]) -> contextlib.AbstractContextManager:
    """x64 for a float64 case, else JAX's default: under the default, device_arrays would
    silently make a float64 case float32, and with x64 on for a float32 case, one-hot
    vectors built without dtype= would be float64 and fail a float32 check that the same
    code passes in the learner's notebook."""
    if any(np.asarray(a).dtype == np.float64 for a in arrays):
        return double_precision()
    return contextlib.nullcontext()


def _as_numpy(out: Any) -> Any:
    if isinstance(out, tuple | list):
        return tuple(np.asarray(o) for o in out)
    return np.asarray(out)


# ---------------------------------------------------------------- gauss_newton_product

GAUSS_NEWTON_METHOD = (
    "gauss_newton_product must compute G v without a matrix, but {found}. Apply the three "
    "linear maps of G to v one after the other, each as one product with a vector, so that no "
    "array is as large as the Jacobian of f."
)
# (fn, model, loss, shape, dtype) -> what is as large as the Jacobian ("" if nothing), per check
_MATRIX_FREE: dict[tuple[Fn, str, str, tuple[int, ...], str], str] = method.per_check({})
_GN_JITTED: dict[tuple[Fn, str, str], Fn] = {}


def invoke_gauss_newton(fn: Fn, model: str, loss: str, x: np.ndarray, v: np.ndarray) -> Any:
    """The learner's fn(f, loss, x, v) for the named model f and loss, and the method: no
    Jacobian or Hessian builder, and no array with as many entries as the Jacobian of f in
    the computation (traced once per function, shape and dtype)."""
    refuse_helpers_once(fn, "gauss_newton_product")
    key = (fn, model, loss, x.shape, str(x.dtype))
    if key not in _MATRIX_FREE:
        if len(_MATRIX_FREE) > 256:
            _MATRIX_FREE.clear()
        _MATRIX_FREE[key] = _matrix_built(fn, model, loss, x, v)
    with method.watching(fn, every_call=False) as usage:  # the trace above saw every call
        result = _call_gauss_newton(fn, model, loss, x, v)
    found = _MATRIX_FREE[key]
    found = english("it used {builder}", builder=usage.builders[0]) if usage.builders else found
    if found:
        raise method.MethodNotFollowed(english(GAUSS_NEWTON_METHOD, found=found), result)
    return result


def _call_gauss_newton(fn: Fn, model: str, loss: str, x: np.ndarray, v: np.ndarray) -> Any:
    """fn(f, loss, x, v), under jax.jit when it traces (as _invoke), else as written."""
    f, loss_fn = _named_pair(model, loss)
    key = (fn, model, loss)
    if key not in _GN_JITTED:
        _GN_JITTED[key] = fast_jit(lambda a, b: fn(f, loss_fn, a, b))
    with _precision_for((x, v)):
        args = device_arrays(x, v)
        try:
            return _as_numpy(_GN_JITTED[key](*args))
        except Exception:
            return _as_numpy(fn(f, loss_fn, *args))


def _named_pair(model: str, loss: str) -> tuple[Fn, Fn]:
    """The jitted model and loss, built once each."""
    for kind, name, build in (("vector", model, vector_function), ("loss", loss, loss_function)):
        if (kind, name) not in _TEST_FUNCTIONS:
            _TEST_FUNCTIONS[kind, name] = jax.jit(build(name))
    return _TEST_FUNCTIONS["vector", model], _TEST_FUNCTIONS["loss", loss]


def _matrix_built(fn: Fn, model: str, loss: str, x: np.ndarray, v: np.ndarray) -> str:
    """The builder the traced computation used, or what in it is as large as the Jacobian of
    f ("" if neither). The test models compute nothing that large themselves."""
    f, loss_fn = vector_function(model), loss_function(loss)
    try:
        with method.watching(fn) as usage, _precision_for((x, v)):
            closed = jax.make_jaxpr(lambda a, b: fn(f, loss_fn, a, b))(*device_arrays(x, v))
    except Exception:  # not traceable: the builders are still watched in the eager run
        return ""
    if usage.builders:
        return english("it used {builder}", builder=usage.builders[0])
    if x.size < 2:  # with one entry, the Jacobian is no larger than f's output
        return ""
    z_size = int(np.prod(jax.eval_shape(f, *device_arrays(x)).shape, dtype=np.int64))
    shapes = [tuple(c.shape) for c in closed.consts if hasattr(c, "shape")]
    shapes += list(_shapes(closed.jaxpr))
    big = [s for s in shapes if int(np.prod(s, dtype=np.int64)) >= z_size * x.size]
    if not big:
        return ""
    return english(
        "an array of shape {shape} appears in it, as many entries as the Jacobian of f "
        "({z_size} outputs x {size} inputs)",
        shape=big[0],
        z_size=z_size,
        size=x.size,
    )


def _shapes(jaxpr: Any) -> Any:
    """The shape of every value a jaxpr computes, its sub-jaxprs (jit, cond, scan) included."""
    for eqn in jaxpr.eqns:
        for var in eqn.outvars:
            yield tuple(getattr(var.aval, "shape", ()))
        for param in eqn.params.values():
            for sub in param if isinstance(param, tuple | list) else (param,):
                inner = getattr(sub, "jaxpr", sub)
                if hasattr(inner, "eqns"):
                    yield from _shapes(inner)
