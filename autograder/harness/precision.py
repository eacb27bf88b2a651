"""Full precision for everything a check computes, on any device.

Recent NVIDIA GPUs multiply float32 matrices in TF32 (10-bit mantissa) by default, in JAX
and in TensorFlow alike: a correct float32 answer then misses the reference by ~1e-4, and
widening the tolerance would let real mistakes through. So references and the learner's
function run with JAX's matmul precision at "highest" and TensorFlow's TF32 switched off,
and whatever the learner's notebook had set is put back afterwards. On a CPU both
settings change nothing.

It lives in the harness because both sides use it: the trusted grader around its references,
and `invoker` around a framework exercise's learner function, in the notebook and in the
grader's child.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def exact_precision() -> Iterator[None]:
    """JAX matmuls at "highest", TensorFlow's TF32 off; the caller's settings come back.

    It looks only at frameworks already imported and never imports one itself: a numpy
    exercise's child must not load them, and a check must not pay for them.
    """
    with contextlib.ExitStack() as stack:
        jax = sys.modules.get("jax")
        if jax is not None:
            stack.enter_context(jax.default_matmul_precision("highest"))
        tf = sys.modules.get("tensorflow")
        if tf is not None and hasattr(tf, "config"):
            tf32 = tf.config.experimental
            stack.callback(
                tf32.enable_tensor_float_32_execution, tf32.tensor_float_32_execution_enabled()
            )
            tf32.enable_tensor_float_32_execution(False)
        yield
