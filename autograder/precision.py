"""Full precision for everything a check computes, on any device.

Recent NVIDIA GPUs multiply float32 matrices in TF32 (10-bit mantissa) by default, in JAX
and in TensorFlow alike: a correct float32 answer then misses the reference by ~1e-4, and
widening the tolerance would let real mistakes through. So references and the learner's
function run with JAX's matmul precision at "highest" and TensorFlow's TF32 switched off,
and whatever the learner's notebook had set is put back afterwards. On a CPU both
settings change nothing.

The context manager is kept as source text (`EXACT_SOURCE`) because an exercise's `invoke`
runs in two places: the learner's kernel and the grader's sandboxed child, which imports
only the standard library and numpy, never this package. `exact_invoke` appends it to an
`invoke` source, so both places run the learner's function under the same settings.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from functools import cache

# Looks only at frameworks already imported: it never imports TensorFlow or JAX itself
# (a numpy exercise's child must not load them, and a check must not pay for them).
EXACT_SOURCE = '''
import contextlib as _precision_contextlib
import sys as _precision_sys


@_precision_contextlib.contextmanager
def exact_precision():
    """JAX matmuls at "highest", TensorFlow's TF32 off; the caller's settings come back."""
    with _precision_contextlib.ExitStack() as stack:
        jax = _precision_sys.modules.get("jax")
        if jax is not None:
            stack.enter_context(jax.default_matmul_precision("highest"))
        tf = _precision_sys.modules.get("tensorflow")
        if tf is not None and hasattr(tf, "config"):
            tf32 = tf.config.experimental
            stack.callback(tf32.enable_tensor_float_32_execution,
                           tf32.tensor_float_32_execution_enabled())
            tf32.enable_tensor_float_32_execution(False)
        yield
'''

MARKER = "# --- autograder.precision: the learner's function runs at full precision ---"

WRAPPER_SOURCE = '''
_invoke_at_any_precision = invoke


def invoke(fn, *args):
    with exact_precision():
        return _invoke_at_any_precision(fn, *args)
'''

PLAIN_INVOKE = '''
def invoke(fn, *args):
    return fn(*args)
'''


def exact_invoke(source: str) -> str:
    """`source` (an exercise's `invoke`, or empty for a plain call) run under exact_precision.

    The wrapper is appended, not prepended, so a source's `from __future__` imports stay
    first; a source that already carries it is returned unchanged (dataclasses.replace on
    an Exercise must not wrap twice).
    """
    if MARKER in source:
        return source
    body = source if source.strip() else PLAIN_INVOKE
    return f"{body.rstrip()}\n\n\n{MARKER}\n{EXACT_SOURCE}\n{WRAPPER_SOURCE}"


@cache
def _namespace() -> dict[str, object]:
    namespace: dict[str, object] = {}
    exec(compile(EXACT_SOURCE, "<autograder.precision>", "exec"), namespace)
    return namespace


def exact_precision() -> AbstractContextManager[None]:
    """The same context manager for the trusted side (references), from the same source."""
    factory: Callable[[], AbstractContextManager[None]] = _namespace()["exact_precision"]
    return factory()
