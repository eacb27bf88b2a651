"""What an exercise is, as data: its cases, its two references, and the mistakes it knows.

One `Exercise` serves both the in-notebook check and the classroom grader. Known mistakes
are kept as data too: each is a small wrong implementation with the hint that names it, so
feedback can say "this is what you did" when a learner's output equals that wrong answer,
and each can be tested on its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
from hypothesis import strategies as st

from .cases import Case, Profile
from .compare import Mismatch, outputs_close
from .precision import exact_invoke

Outputs = tuple[np.ndarray, ...]


@dataclass(frozen=True)
class Mistake:
    """A wrong answer learners write, and the hint that names it."""

    name: str
    hint: str
    answer: Callable[[Case], Any]


@dataclass(frozen=True, eq=False)
class Exercise:
    """A function the learner writes, and everything needed to judge it."""

    name: str
    signature: str
    chapter: str
    outputs: tuple[str, ...]
    strategy: Callable[[Profile], st.SearchStrategy[Case]]
    edge_cases: Callable[[], list[Case]]
    tf_reference: Callable[[Any, Case], Outputs]
    jax_reference: Callable[[Any, dict[str, Any], dict[str, Any]], Outputs]
    references_text: str
    mistakes: tuple[Mistake, ...] = ()
    hints_by_kind: dict[str, str] = field(default_factory=dict)
    # Python source defining `def invoke(fn, *args)`: how to call the learner's function on a
    # case and turn its result into numpy arrays (e.g. under a GradientTape, eagerly and in
    # tf.function). It runs in the learner's kernel and in the grader's sandboxed child, so it
    # imports what it needs itself. Empty: `fn(*args)`.
    invoke: str = ""
    # Frameworks the learner's code may use in the grader's child ("tensorflow", "jax");
    # empty for a numpy exercise, where using either scores 0.
    frameworks: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # A learner who uses a framework is checked at full precision (no TF32 on a GPU), in
        # the notebook and in the grader's child alike, because both run this `invoke`.
        if self.frameworks:
            object.__setattr__(self, "invoke", exact_invoke(self.invoke))

    def invoker(self) -> Callable[..., Any]:
        """The compiled `invoke` function (or a plain call)."""
        return compile_invoker(self.invoke)

    def diagnose(self, case: Case, got: Any, mismatch: Mismatch) -> str:
        """The hint for this failure: a known mistake it reproduces, else one for its kind."""
        for mistake in self.mistakes:
            try:
                wrong = mistake.answer(case)
            except Exception:  # a mistake that cannot even run on this case is not the one
                continue
            if outputs_close(got, _as_tuple(wrong, self.outputs), self.outputs):
                return mistake.hint
        return self.hints_by_kind.get(mismatch.kind, GENERIC_HINTS.get(mismatch.kind, ""))


GENERIC_HINTS = {
    "type": "Return numpy arrays (np.ndarray), not lists, Python numbers, or framework tensors.",
    "dtype": (
        "Keep the dtype of the inputs: numpy upcasts float32 to float64 when you mix in a "
        "float64 array (for example np.ones(shape) or np.zeros(shape) without dtype=)."
    ),
    "nonfinite": "Look for a division by zero or an overflow in your rule.",
    "structure": "Return exactly the outputs the exercise asks for, as a tuple, in that order.",
}


def plain_call(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)


@cache
def compile_invoker(source: str) -> Callable[..., Any]:
    """Run an exercise's `invoke` source in a fresh namespace and return its `invoke`."""
    if not source.strip():
        return plain_call
    namespace: dict[str, Any] = {}
    exec(compile(source, "<exercise invoke>", "exec"), namespace)  # engine.INVOKE_FILE
    return namespace["invoke"]


def _as_tuple(value: Any, outputs: tuple[str, ...]) -> Any:
    return (value,) if len(outputs) == 1 else value
