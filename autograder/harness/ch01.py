"""Chapter 01's invoke: a framework learner's tensors become numpy arrays.

The learner may return tf.Tensor or jax.Array: turn them (and only them) into numpy arrays,
so lists of numbers and other wrong types are still reported as such. A framework's shape
error (TF's InvalidArgumentError, JAX's TypeError) becomes a ValueError, as numpy's would
be, so the check recognises it as a shape error and can say why it happened.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

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
