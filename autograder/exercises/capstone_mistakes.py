"""Chapter 08's known wrong losses, written as a learner writes them, with the engine's names.

The check runs a learner's `cross_entropy` on the learner's own engine (its `Tensor` and `grad`,
found where the function was defined). The package ships no engine, so these wrong answers run
on JAX's autodiff instead: their namespace binds the engine's names to JAX (`grad` is
`jax.grad`, `log_softmax` is `jax.nn.log_softmax`, ...), in float64 as the capstone runs. A
module-level name here is only a forward function; `Tensor` and `grad` exist only in the
namespace the mistakes are rebound to (`on_jax`), never as attributes of this module.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import numpy as np


def _jax() -> Any:
    import jax  # only when a mistake runs: the exercise module is imported without it

    return jax


def _in_float64(compute: Callable[[Any], Any]) -> Any:
    """compute(jax) with float64 enabled; a concrete result as a numpy array (so what a
    mistake computes from it stays float64), a traced one as it is."""
    jax = _jax()
    with jax.enable_x64(True):
        result = compute(jax)
    try:
        return np.asarray(result)
    except jax.errors.TracerArrayConversionError:
        return result


def sum(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return _in_float64(lambda jax: jax.numpy.sum(x, axis=axis, keepdims=keepdims))


def mean(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    return _in_float64(lambda jax: jax.numpy.mean(x, axis=axis, keepdims=keepdims))


def exp(x: Any) -> Any:
    return _in_float64(lambda jax: jax.numpy.exp(x))


def log(x: Any) -> Any:
    return _in_float64(lambda jax: jax.numpy.log(x))


def log_softmax(x: Any, axis: int = -1) -> Any:
    return _in_float64(lambda jax: jax.nn.log_softmax(x, axis=axis))


def _tensor(value: Any) -> Any:
    return np.asarray(value)


def _grad(f: Callable[..., Any], argnums: Any = 0) -> Callable[..., Any]:
    def gradient(*args: Any) -> Any:
        return _in_float64(lambda jax: jax.grad(f, argnums)(*args))

    return gradient


# ---------------------------------------------------------------- the wrong losses


def sum_over_batch(logits: Any, labels: Any) -> Any:
    return -sum(labels * log_softmax(logits, axis=-1))


def mean_over_classes_too(logits: Any, labels: Any) -> Any:
    return -mean(labels * log_softmax(logits, axis=-1))


def minus_forgotten(logits: Any, labels: Any) -> Any:
    return mean(sum(labels * log_softmax(logits, axis=-1), axis=-1))


def softmax_over_batch(logits: Any, labels: Any) -> Any:
    return -mean(sum(labels * log_softmax(logits, axis=0), axis=-1))


def log_of_softmax(logits: Any, labels: Any) -> Any:
    e = exp(logits)
    with np.errstate(over="ignore", invalid="ignore"):  # numpy's inf / inf, as an engine's
        probabilities = e / sum(e, axis=-1, keepdims=True)
    return -mean(sum(labels * log(probabilities), axis=-1))


def on_jax(mistake: Callable[..., Any]) -> Callable[..., Any]:
    """The mistake rebound to a namespace where the engine's names are JAX's."""
    namespace = {**globals(), "Tensor": _tensor, "grad": _grad}
    return types.FunctionType(mistake.__code__, namespace, mistake.__name__)
