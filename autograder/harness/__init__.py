"""How the learner's function is called on a case: the code the check and the grader's child share.

This package runs in two places: in the learner's kernel (imported as `autograder.harness`)
and in the grader's sandboxed child, where grading.py copies it read-only beside child.py
and child.py imports it as `harness`. So it imports only the standard library, numpy and
the framework an exercise allows, and itself only relatively: never the rest of the grader,
which the child must not see (it holds the references and the seed).

An exercise names its invoke as "<module>:<function>" ("ch05:invoke_log1pexp"), a function
`invoke(fn, *case_values)` of the chapter's module here; "" is a plain call `fn(*values)`.
`invoker` resolves that name, the same way on both sides, and `learner_traceback` shows an
error from the learner's own frames on.
"""

from __future__ import annotations

import functools
import importlib
import os
import traceback
from collections.abc import Callable
from typing import Any

from .precision import exact_precision

Invoke = Callable[..., Any]
# Names an invoke looks up by string in the learner's namespace (`fn.__globals__`), by invoke
# module: the grader's child runs only the statements the exercises need (slicing.py), and
# these reads are invisible in the learner's code. tests/test_slicing.py keeps ch02's whole.
NAMESPACE_READS: dict[str, tuple[str, ...]] = {
    "ch02": ("Tensor", "reduce_sum", "add", "sub", "mul", "div", "matmul", "neg", "exp", "log",
             "tanh"),
}
_FOLDER = os.path.dirname(os.path.abspath(__file__)) + os.sep


def plain_call(fn: Invoke, *args: Any) -> Any:
    """The invoke of an exercise that declares none: call the learner's function as it is."""
    return fn(*args)


def split_name(name: str) -> tuple[str, str]:
    """("ch05", "invoke_log1pexp") from "ch05:invoke_log1pexp"; a malformed name is refused
    when the exercise is declared, not when a learner's check first needs it."""
    module, colon, function = name.partition(":")
    if not (colon and module.isidentifier() and function.isidentifier()):
        raise ValueError(f"An invoke is named '<module>:<function>' of {__name__}, not {name!r}.")
    return module, function


@functools.cache
def invoker(name: str, frameworks: tuple[str, ...] = ()) -> Invoke:
    """The function that calls the learner's `fn` on a case's values.

    It is resolved lazily (a chapter module may import JAX or TensorFlow). An exercise that
    allows a framework runs the learner's function at full precision (no TF32, JAX matmuls
    at "highest"), in the notebook and in the grader's child alike, so that a correct
    float32 answer is exact on any device.
    """
    if not name:
        invoke = plain_call
    else:
        module, function = split_name(name)
        invoke = getattr(importlib.import_module(f".{module}", __name__), function)
    return _at_full_precision(invoke) if frameworks else invoke


def _at_full_precision(invoke: Invoke) -> Invoke:
    @functools.wraps(invoke)
    def exact(fn: Invoke, *args: Any) -> Any:
        with exact_precision():
            return invoke(fn, *args)

    return exact


def learner_traceback(error: BaseException, limit: int | None = None) -> str:
    """The traceback from the learner's own frames on: the caller's frame (the first) and
    this package's frames are dropped, as they only say how the learner's code was called.
    `limit` keeps that many characters from the end (the innermost frames)."""
    frames = [frame for frame in traceback.extract_tb(error.__traceback__)[1:]
              if not frame.filename.startswith(_FOLDER)]
    text = "".join(traceback.format_list(frames) + traceback.format_exception_only(error))
    return (text if limit is None else text[-limit:]).rstrip()
