"""Chapter 01's invoke: a framework learner's tensors become numpy arrays.

The learner may return tf.Tensor or jax.Array: turn them (and only them) into numpy arrays,
so lists of numbers and other wrong types are still reported as such. A framework's shape
error (TF's InvalidArgumentError, JAX's TypeError) becomes a ValueError, as numpy's would
be, so the check recognises it as a shape error and can say why it happened.

`qa_gradients` and `per_example_gradients` name a method, so their invokes also watch how the
answer was computed (method.py) and refuse one that was not computed that way.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from . import english, method

TF_NODE_DETAILS = re.compile(r"\{\{.*?\}\}\s*")  # TF's "{{function_node ...}}" noise


def _to_numpy(value: Any) -> Any:
    if isinstance(value, np.ndarray | list | tuple | dict) or not hasattr(value, "__array__"):
        return value
    return np.asarray(value)


def _shape_error(error: Exception) -> bool:
    name = type(error).__name__
    return name == "InvalidArgumentError" or (name == "TypeError" and "shapes" in str(error))


def invoke_to_numpy(fn: Callable[..., Any], *args: Any) -> Any:
    """fn(*args), its tensors as numpy arrays and its framework shape errors as ValueError."""
    try:
        result = fn(*args)
    except Exception as error:
        if not _shape_error(error):
            raise
        message = TF_NODE_DETAILS.sub("", str(error)).strip()
        raise ValueError(f"{type(error).__name__}: {message}").with_traceback(
            error.__traceback__
        ) from None
    if isinstance(result, tuple | list):
        return type(result)(_to_numpy(item) for item in result)
    return _to_numpy(result)


QA_METHOD = (
    "qa_gradients must compute the gradient in two parts through a cotangent, but {found}. "
    "First g_h = dloss/dh (one gradient call with respect to h), then the VJP of h = x @ W + b "
    "at g_h: tape.gradient(h, [W, b], output_gradients=g_h), or the pullback of "
    "jax.vjp(lambda W, b: x @ W + b, W, b) called on g_h."
)
PER_EXAMPLE_METHOD = (
    "per_example_gradients must take each example's gradient from a VJP with its own cotangent, "
    "one per example, but {found}. Compute the B per-example losses in one forward pass, then "
    "call tape.gradient(losses, [W, b], output_gradients=tf.one_hot(i, B, dtype=losses.dtype)) "
    "for each example i on a persistent tape, or the pullback of jax.vjp once per example (in a "
    "loop, or jax.vmap(pullback) over the rows of jnp.eye(B, dtype=losses.dtype))."
)


def invoke_qa(fn: Callable[..., Any], *args: Any) -> Any:
    """invoke_to_numpy, and the method: at least two gradient calls, one with a cotangent."""
    with method.watching(fn) as usage:
        result = invoke_to_numpy(fn, *args)
    if usage.builders:
        found = english("it used {builder}", builder=usage.builders[0])
        raise method.MethodNotFollowed(english(QA_METHOD, found=found), result)
    if usage.cotangent_vjps < 1 or usage.gradients < 2:
        found = english(
            "it made {gradients} gradient call(s), {vjps} of them with a cotangent",
            gradients=usage.gradients,
            vjps=usage.cotangent_vjps,
        )
        raise method.MethodNotFollowed(english(QA_METHOD, found=found), result)
    return result


def invoke_per_example(fn: Callable[..., Any], x: Any, w: Any, b: Any, y0: Any) -> Any:
    """invoke_to_numpy, and the method: no Jacobian builder, and at least one VJP with a
    cotangent per example (a vmap of the pullback over B cotangents counts B: method.py)."""
    with method.watching(fn) as usage:
        result = invoke_to_numpy(fn, x, w, b, y0)
    examples = np.shape(x)[0]
    if usage.builders:
        found = english("it used {builder}", builder=usage.builders[0])
        raise method.MethodNotFollowed(english(PER_EXAMPLE_METHOD, found=found), result)
    if usage.cotangent_vjps < examples:
        found = english(
            "it made {vjps} VJP call(s) with a cotangent for the {examples} examples of this case",
            vjps=usage.cotangent_vjps,
            examples=examples,
        )
        raise method.MethodNotFollowed(english(PER_EXAMPLE_METHOD, found=found), result)
    return result
