"""The references: what TensorFlow and JAX compute for the same function and cotangent.

Both frameworks are asked, and they must agree before any learner is judged: a reference
that only one framework vouches for could be a bug of ours. TensorFlow runs eagerly, one
case at a time (milliseconds each, no compilation). JAX compiles once per batch of cases:
one `jax.jit` over the whole batch instead of one compilation per new shape, and the
compiled program is kept in a persistent cache so that a notebook's second run is fast.

TensorFlow and JAX are imported on first use, so `from autograder import check` is instant.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np

from autograder.harness.compiling import cpu_device, fast_compile_options, jax_module
from autograder.harness.precision import exact_precision
from autograder.judging.cases import Case
from autograder.judging.compare import compare_outputs
from autograder.judging.quiet import startup_lines_dropped

if TYPE_CHECKING:
    from autograder.judging.exercise import Exercise

Outputs = tuple[np.ndarray, ...]


class ReferenceDisagreement(RuntimeError):
    """TensorFlow and JAX disagree on a case: a bug in the course, never the learner's."""


@cache
def tensorflow() -> Any:
    """TensorFlow, imported quietly (its C++ start-up logging would pollute notebook output
    and the grader's stderr): the level governs absl's logging once it is set up, and the
    lines printed before that are dropped while the libraries load (judging/quiet.py)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    with startup_lines_dropped():
        import tensorflow as tf

    return tf


def tensorflow_references(
    reference: Callable[[Any, Case], Outputs], cases: Sequence[Case]
) -> list[Outputs]:
    """Eagerly, case by case, on the CPU with TF32 off: the same numbers on any machine."""
    tf = tensorflow()
    with exact_precision(), tf.device("/CPU:0"):
        return [tuple(np.asarray(o) for o in reference(tf, case)) for case in cases]


def jax_references(
    reference: Callable[[Any, dict[str, Any], dict[str, Any]], Outputs], cases: Sequence[Case]
) -> list[Outputs]:
    """All cases in one compiled program: static parameters are closed over, arrays traced.
    The program runs once and is tiny: what a learner waits for is its compilation, done
    quickly (harness/compiling.py; 0.4 s instead of 2.5-3.8 s for chapter 03's matmul cases).

    It runs on the CPU device at the highest matmul precision, whatever the default device
    and the learner's settings: on a GPU the default float32 matmul is TF32.
    """
    jax = jax_module()
    params = [case.params() for case in cases]

    def batch(arrays: list[dict[str, Any]]) -> list[Outputs]:
        return [reference(jax, p, a) for p, a in zip(params, arrays, strict=True)]

    with jax.enable_x64(True), exact_precision():
        arrays = jax.device_put([case.arrays() for case in cases], cpu_device())
        compiled = jax.jit(batch).lower(arrays).compile(compiler_options=fast_compile_options())
        return [tuple(np.asarray(o) for o in outputs) for outputs in compiled(arrays)]


# Shrinking a failure asks for the references of hundreds of candidate cases, and a learner's
# next wrong attempt at the same exercise (or another declared mistake, in the tests) is shrunk
# from the same seed through many of the same candidates: their references are kept for the
# process, up to a memory budget and a count (small outputs cost more than their bytes), the
# least recently used dropped first. A reference depends on its function and its case alone,
# and a kept one is read-only, so reusing it can change no verdict.
REMEMBERED_BYTES = 64 * 2**20
REMEMBERED_CASES = 20_000
_remembered: OrderedDict[tuple[Hashable, ...], Outputs] = OrderedDict()
_remembered_bytes = 0


def _recall(key: tuple[Hashable, ...], compute: Callable[[], Outputs]) -> Outputs:
    """The outputs kept under `key`, else `compute`'s, kept read-only."""
    global _remembered_bytes
    outputs = _remembered.get(key)
    if outputs is not None:
        _remembered.move_to_end(key)
        return outputs
    outputs = compute()
    for array in outputs:
        array.setflags(write=False)
    _remembered[key] = outputs
    _remembered_bytes += sum(array.nbytes for array in outputs)
    while len(_remembered) > 1 and (
        _remembered_bytes > REMEMBERED_BYTES or len(_remembered) > REMEMBERED_CASES
    ):
        _, dropped = _remembered.popitem(last=False)
        _remembered_bytes -= sum(array.nbytes for array in dropped)
    return outputs


def forget_remembered() -> None:
    """Drop every remembered reference (tests: a shrink measured from nothing kept)."""
    global _remembered_bytes
    _remembered.clear()
    _remembered_bytes = 0


def tensorflow_reference(reference: Callable[[Any, Case], Outputs], case: Case) -> Outputs:
    """TensorFlow's reference for one case (a shrinking candidate), remembered."""
    return _recall(
        ("tensorflow", reference, case.key()),
        lambda: tensorflow_references(reference, [case])[0],
    )


def remember_tensorflow(
    reference: Callable[[Any, Case], Outputs], cases: Sequence[Case], outputs: Sequence[Outputs]
) -> None:
    """Keep references already known (a check's table) for tensorflow_reference: shrinking
    first replays the table's generated cases, from the same seed."""
    for case, known in zip(cases, outputs, strict=True):
        _recall(("tensorflow", reference, case.key()), lambda known=known: known)


def confirmed_reference(exercise: Exercise, case: Case) -> Outputs:
    """reference_outputs for one case (a shrunk counterexample), remembered."""
    key = ("both", exercise.tf_reference, exercise.jax_reference, exercise.outputs, case.key())
    return _recall(key, lambda: reference_outputs(exercise, [case])[0])


def ensure_agreement(
    names: tuple[str, ...], cases: Sequence[Case], first: list[Outputs], second: list[Outputs]
) -> None:
    """Raise ReferenceDisagreement, naming the case, when the two frameworks differ."""
    for case, a, b in zip(cases, first, second, strict=True):
        mismatch = compare_outputs(names, b if len(names) > 1 else b[0], a)
        if mismatch is not None:
            raise ReferenceDisagreement(
                "TensorFlow and JAX disagree, so no verdict is given. Please report this "
                f"to the course maintainers.\nCase:\n{case.describe()}\n{mismatch.message}"
            )


def reference_outputs(exercise: Exercise, cases: Sequence[Case]) -> list[Outputs]:
    """Both frameworks' answers for every case, checked to agree; TensorFlow's are returned."""
    tf_outputs = tensorflow_references(exercise.tf_reference, cases)
    jax_outputs = jax_references(exercise.jax_reference, cases)
    ensure_agreement(exercise.outputs, cases, tf_outputs, jax_outputs)
    return tf_outputs
