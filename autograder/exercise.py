"""What an exercise is, as data: its cases, its two references, and the mistakes it knows.

One `Exercise` serves both the in-notebook check and the classroom grader. Known mistakes
are kept as data too: each is a small wrong implementation with the hint that names it, so
feedback can say "this is what you did" when a learner's output equals that wrong answer,
and each can be tested on its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st

from . import harness
from .cases import Case, Profile
from .compare import Mismatch, outputs_match

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
    # How to call the learner's function on a case and turn its result into numpy arrays
    # (e.g. under a GradientTape, eagerly and in tf.function): the name of a function
    # `invoke(fn, *values)` in the harness package, "<module>:<function>" ("ch05:invoke_log1pexp"),
    # which runs in the learner's kernel and in the grader's sandboxed child. Empty: `fn(*args)`.
    invoke: str = ""
    # Frameworks the learner's code may use in the grader's child ("tensorflow", "jax");
    # empty for a numpy exercise, where using either scores 0.
    frameworks: tuple[str, ...] = ()
    # Exercises this one calls (matmul_vjp calls unbroadcast): it is run with their reference
    # implementations (harness.REFERENCES) in their place, so a wrong dependency costs its
    # own exercise only, and the report says when the learner's is wrong.
    depends_on: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.invoke:  # a misspelt name fails when the exercise is declared
            harness.split_name(self.invoke)
        unknown = set(self.depends_on) - set(harness.REFERENCES)
        if unknown:
            raise ValueError(f"{self.name} depends on {unknown}, which have no reference.")

    def invoker(self) -> Callable[..., Any]:
        """The `invoke` function, at full precision when a framework is allowed: the grader's
        child resolves it by the same name, with the same frameworks."""
        return harness.invoker(self.invoke, self.frameworks, self.depends_on)

    def diagnose(self, case: Case, got: Any, mismatch: Mismatch) -> str:
        """The hint for this failure: a known mistake it reproduces, else one for this kind on
        this output ("value:jvp_primal"), else one for its kind."""
        for mistake in self.mistakes:
            try:
                wrong = mistake.answer(case)
            except Exception:  # a mistake that cannot even run on this case is not the one
                continue
            if outputs_match(got, _as_tuple(wrong, self.outputs), self.outputs):
                return mistake.hint
        for key in (f"{mismatch.kind}:{mismatch.output}", mismatch.kind):
            if key in self.hints_by_kind:
                return self.hints_by_kind[key]
        return GENERIC_HINTS.get(mismatch.kind, "")


GENERIC_HINTS = {
    "type": "Return numpy arrays (np.ndarray), not lists, Python numbers, or framework tensors.",
    "dtype": (
        "Keep the dtype of the inputs: numpy upcasts float32 to float64 when you mix in a "
        "float64 array (for example np.ones(shape) or np.zeros(shape) without dtype=)."
    ),
    "nonfinite": "Look for a division by zero or an overflow in your rule.",
    "structure": "Return exactly the outputs the exercise asks for, as a tuple, in that order.",
}


def _as_tuple(value: Any, outputs: tuple[str, ...]) -> Any:
    return (value,) if len(outputs) == 1 else value
