"""Chapter 02's VJP rules, one exercise per operation (autograder/exercises/ch02_rules.py): how
a learner's `vjp_<op>(g, *primals, **params)` is called, and how its result is read.

A rule returns a tuple with one cotangent per primal ((g_x,) for a unary operation). Each
cotangent is a numpy array, or a learner's Tensor whose `.value` is one: the same rules written
with the engine's own operations (for gradients of gradients) are checked as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import english
from .course_helpers import from_course, helpers_used

# The course's own code: its teaching helpers, and the harness (in the grader's child, `harness`).
COURSE_CODE = ("coursekit", "autograder.harness", "harness")


def _array(value: Any) -> Any:
    """A Tensor's numpy `.value`; anything else as it is (the check says what is wrong)."""
    inner = getattr(value, "value", None)
    return inner if isinstance(inner, np.ndarray | np.generic) else value


def _cotangents(fn: Callable[..., Any], values: tuple[Any, ...]) -> tuple[Any, ...] | Any:
    name = getattr(fn, "__name__", "rule")
    used = helpers_used(fn, lambda value: from_course(value, COURSE_CODE))
    if used:
        raise ValueError(
            english(
                "Your {exercise} is, or calls, the course's own code ({names}): the check needs "
                "a rule you wrote. Write {exercise} without it.",
                exercise=name,
                names=", ".join(used),
            )
        )
    result = fn(*values)
    return tuple(_array(c) for c in result) if isinstance(result, tuple | list) else result


def invoke_rule(fn: Callable[..., Any], *values: Any) -> Any:
    """A rule of several primals: its tuple of cotangents, each read as an array."""
    return _cotangents(fn, values)


def invoke_unary_rule(fn: Callable[..., Any], *values: Any) -> Any:
    """A rule of one primal: the one cotangent of its 1-tuple, read as an array."""
    result = _cotangents(fn, values)
    if not isinstance(result, tuple) or len(result) != 1:
        what = (
            f"a tuple of length {len(result)}"
            if isinstance(result, tuple)
            else f"a value of type {type(_array(result)).__name__}"
        )
        raise TypeError(
            english(
                "{exercise} returns one cotangent per primal, in a tuple: (g_x,) for this "
                "operation of one primal (mind the comma). It returned {what}.",
                exercise=getattr(fn, "__name__", "rule"),
                what=what,
            )
        )
    return result[0]


def invoke_index_rule(fn: Callable[..., Any], g: np.ndarray, x: np.ndarray, key: Any) -> Any:
    """vjp_index: a key of slices travels as (start, stop, step) triples (a case is plain
    data), and is handed to the rule as the tuple of slices it stands for; an integer array
    is handed over as it is."""
    if not isinstance(key, np.ndarray):
        key = tuple(slice(*triple) for triple in key)
    return invoke_unary_rule(fn, g, x, key)
