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
from dataclasses import dataclass
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

BUILDERS = {"vector": vector_function, "batch": batch_function, "loss": loss_function}
_TEST_FUNCTIONS: dict[tuple[str, str], Fn] = {}


@dataclass(frozen=True)
class Traced:
    """What the trace of the learner's program for one signature saw: the Jacobian builders
    its code called, and the program (None where the code could not be traced and ran as
    written, watched as it ran)."""

    builders: tuple[str, ...]
    jaxpr: Any


# The learner's programs, and what tracing each signature saw, per check: a program kept from
# an earlier check would run without its Python, so a later check would see no builder.
_PROGRAMS: dict[tuple[Any, ...], Any] = method.per_check({})
_TRACES: dict[tuple[Any, ...], Traced] = method.per_check({})


JACOBIAN_METHOD = (
    "{exercise} must build the Jacobian itself from {primitive}, one one-hot {vector} at a time "
    "(a loop, or jax.vmap over them), but it used {builder}, which builds the whole Jacobian "
    "for you."
)


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
    """The learner's Jacobian, refused when a builder made it (looked for as _run says)."""
    refuse_helpers_once(fn, words[0])
    (f,) = _test_functions(("vector", name))
    result, seen = _run(fn, ("vector", name), lambda a: fn(f, a), (x,))
    if seen.builders:
        exercise, primitive, vector = words
        raise method.MethodNotFollowed(
            english(
                JACOBIAN_METHOD,
                exercise=exercise,
                primitive=primitive,
                vector=vector,
                builder=seen.builders[0],
            ),
            result,
        )
    return result


def invoke_batch(fn: Fn, name: str, *arrays: np.ndarray) -> Any:
    """The learner's fn(f, *arrays) for the batch test function `name`."""
    refuse_helpers_once(fn, "batch_jacobian")
    (f,) = _test_functions(("batch", name))
    return _run(fn, ("batch", name), lambda *a: fn(f, *a), arrays)[0]


def _test_functions(*named: tuple[str, str]) -> list[Fn]:
    """The named test functions, each under jax.jit (built once): where the learner's code
    runs as written, a call compiles one program, not one per operation."""
    for kind, name in named:
        if (kind, name) not in _TEST_FUNCTIONS:
            _TEST_FUNCTIONS[kind, name] = jax.jit(BUILDERS[kind](name))
    return [_TEST_FUNCTIONS[key] for key in named]


def _run(
    fn: Fn,
    names: tuple[str, ...],
    call: Callable[..., Any],
    arrays: tuple[np.ndarray, ...],
) -> tuple[Any, Traced]:
    """call(*arrays) as numpy, and what its trace saw.

    Eager JAX compiles every operation separately for every new shape, which would make a
    check of ~35 cases slow. So the learner's code runs under jax.jit, traced once per check
    and signature (test functions, shapes, dtypes) and compiled; that one trace is also where
    the Jacobian builders are looked for, with every call of the code seen: a jitted part,
    the test function's too, runs its Python inside the program (which also spares a grader's
    child, whose caches start empty for every submission, a trace and a linearization of each
    test function per shape). If tracing or the program raises (numpy calls on traced
    values, `bool(...)` of an array), the code is simply called as written, and watched.
    """
    key = (fn, *names)
    if key not in _PROGRAMS:
        _PROGRAMS[key] = fast_jit(_every_call_seen(call))
    program = _PROGRAMS[key]
    signature = (*key, *((np.shape(a), str(np.asarray(a).dtype)) for a in arrays))
    with _precision_for(arrays):
        try:  # the numpy arrays go to the program as they are: jit copies them itself
            if signature not in _TRACES:
                with method.watching(fn, every_call=False) as usage:
                    traced = program.trace(*arrays)
                _TRACES[signature] = Traced(tuple(usage.builders), traced.jaxpr)
            return _as_numpy(program(*arrays)), _TRACES[signature]
        except Exception:
            with method.watching(fn, every_call=False) as usage:
                result = call(*device_arrays(*arrays))
            return _as_numpy(result), Traced(tuple(usage.builders), None)


def _every_call_seen(call: Callable[..., Any]) -> Callable[..., Any]:
    """call, tracing with every call of the code it runs seen (method.every_call_seen):
    entered inside the program's own trace, so that program is still compiled once."""

    def seen(*args: Any) -> Any:
        with method.every_call_seen():
            return call(*args)

    return seen


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


def invoke_gauss_newton(fn: Fn, model: str, loss: str, x: np.ndarray, v: np.ndarray) -> Any:
    """The learner's fn(f, loss, x, v) for the named model f and loss, and the method: no
    Jacobian or Hessian builder, and no array with as many entries as the Jacobian of f in
    the computation (read from the trace of each function, shape and dtype)."""
    refuse_helpers_once(fn, "gauss_newton_product")
    f, loss_fn = _test_functions(("vector", model), ("loss", loss))
    names = ("vector", model, "loss", loss)
    result, seen = _run(fn, names, lambda a, b: fn(f, loss_fn, a, b), (x, v))
    signature = (fn, model, loss, x.shape, str(x.dtype))
    if seen.builders:
        found = english("it used {builder}", builder=seen.builders[0])
    elif seen.jaxpr is None:  # ran as written: the builders were watched, sizes unknown
        found = ""
    else:
        if signature not in _MATRIX_FREE:
            _MATRIX_FREE[signature] = matrix_in(seen.jaxpr, model, x)
        found = _MATRIX_FREE[signature]
    if found:
        raise method.MethodNotFollowed(english(GAUSS_NEWTON_METHOD, found=found), result)
    return result


def matrix_in(closed: Any, model: str, x: np.ndarray) -> str:
    """What in the traced program `closed` (None: not traced) is as large as the Jacobian of
    the model at x ("" if nothing). The test models compute nothing that large themselves."""
    if closed is None or x.size < 2:  # with one entry, J is no larger than f's output
        return ""
    with _precision_for((x,)):
        z_shape = jax.eval_shape(vector_function(model), *device_arrays(x)).shape
    z_size = int(np.prod(z_shape, dtype=np.int64))
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
