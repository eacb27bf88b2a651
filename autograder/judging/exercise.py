"""What an exercise is, as data: its cases, its references, and the mistakes it knows.

One `Exercise` serves both the in-notebook check and the classroom grader. Known mistakes
are kept as data too: each is a wrong learner function, with the learner's own signature,
and the hint that names it. It runs exactly as a learner's function does (through the
exercise's invoker), so feedback can say "this is what you did" when a learner's output
equals that wrong answer on every failing case seen, and each can be tested on its own.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st

from autograder import harness
from autograder.judging.cases import AmbiguousArgument, Case, Profile
from autograder.judging.compare import Mismatch, outputs_match
from autograder.judging.declaration import (
    HINT_KINDS,
    MISMATCH_KINDS,
    chapter_of,
    declaring_module,
    harness_parameters,
    is_exception_name,
    listed,
    parameter_names,
    read_signature,
)

# Where it was first defined, for the importers that still look for it here.
from autograder.judging.declaration import declaration_problems as declaration_problems
from autograder.judging.derived import Reference
from autograder.locale import say

Outputs = tuple[np.ndarray, ...]
Evidence = tuple[Case, Any]  # a failing case and what the learner's function gave on it


@dataclass(frozen=True)
class Raised:
    """What a function gave when it raised: the exception's type name (a mistake may be
    recognised by raising the same exception on the same cases)."""

    type_name: str


@dataclass(frozen=True)
class Mistake:
    """A wrong answer learners write, and the hint that names it.

    `answer` is a learner's function with the exercise's signature, run through the
    exercise's invoker like the learner's own: a mistake is written the way learners write it.
    """

    name: str
    hint: str
    answer: Callable[..., Any]


# What a mistake gave on a case, stored by the grader (grading.assignment, from
# refcache.KnownMistakes), or None to run it: grading state, passed beside the exercise to
# the judging (engine.failure_to_show), never part of the declaration.
KnownOutputs = Callable[[Mistake, Case], Any]


@dataclass(frozen=True, eq=False)
class Exercise:
    """A function the learner writes, and everything needed to judge it.

    `signature` is the learner's function as messages show it, "unbroadcast(g, shape) ->
    ndarray": its name, its parameters (a case's arguments, in order) and in words what it
    gives back. It is checked when declared against the known mistakes' parameters (each a
    learner function), the reference implementation's (read from the harness source) and the
    names the reference reads. `cases(profile)` draws cases and `edges()`
    builds the hand-picked ones; read them through `strategy` and `edge_cases`, which name
    the exercise when a case is malformed. `reference` gives what TensorFlow and JAX compute
    (derived.py: one forward for both, or two written by hand with the reason). The keys of
    `hints_by_kind` are kinds a check can report (HINT_KINDS, "<kind>:<output>",
    "exception:<TypeName>"); an unknown one fails here. Everything the harness and the grader
    need of an exercise is declared here (docs/maintainer-guide.md, "Adding an exercise").
    """

    signature: str
    outputs: tuple[str, ...]
    cases: Callable[[Profile], st.SearchStrategy[Case]]
    edges: Callable[[], list[Case]]
    reference: Reference
    references_text: str
    # "03": by default that of the module declaring the exercise, ch03_unbroadcasting.py, so a
    # chapter's number is written once, in its file name.
    chapter: str = ""
    mistakes: tuple[Mistake, ...] = ()
    hints_by_kind: dict[str, str] = field(default_factory=dict)
    # One or two sentences pointing at the idea (which rule, which shape, what to think about),
    # never a formula or code of the answer: what `check.hint` shows until the exercise's check
    # has failed in this kernel, because a mistake's hint often states the answer and belongs
    # in the report of a check whose counterexample matches it. Optional here, so a
    # declaration under construction imports; tests/notebook/test_hint_nudges.py requires it
    # of every registered exercise and measures it against the worked answer.
    nudge: str = ""
    # How to call the learner's function on a case and turn its result into numpy arrays (e.g. under
    # a GradientTape, eagerly and in tf.function): the name of a function `invoke(fn, *values)` in
    # the harness package, "<module>:<function>"
    # ("ch05_custom_derivatives_jax:invoke_soft_threshold"), which runs in the learner's kernel
    # and in the grader's sandboxed child. Empty: `fn(*args)`.
    invoke: str = ""
    # Frameworks the learner's code may use in the grader's child ("tensorflow", "jax");
    # empty for a numpy exercise, where using either scores 0.
    frameworks: tuple[str, ...] = ()
    # Exercises this one calls (matmul_vjp calls unbroadcast): it is run with their reference
    # implementations (each one's `reference_implementation`) in their place, so a wrong
    # dependency costs its own exercise only, and the report says when the learner's is wrong.
    depends_on: tuple[str, ...] = ()
    # A correct version of this exercise's function in the harness package, "<module>:<function>"
    # ("ch03_unbroadcasting:unbroadcast"): what the exercises that depend on this one run in its
    # place (in the notebook and in the grader's child, which never sees this module). Needed when
    # another exercise lists this one in `depends_on`, or when this one has no mistakes.
    reference_implementation: str = ""
    # Names the invoke looks up by string in the learner's namespace (`fn.__globals__`, e.g.
    # ch02's `Tensor` and `add`): the grader's child runs only the statements the exercises
    # need (grading/slicing.py), and these reads are invisible in the learner's code.
    namespace_reads: tuple[str, ...] = ()
    # Why the package holds neither a known mistake nor a reference implementation of this
    # exercise (chapter 02's engine check: the package ships no engine, right or wrong), so
    # there is nothing to check the signature against. Empty: one of the two is required.
    answers_outside: str = ""

    # Read from `signature`: the learner's function's name, its parameters, what it returns.
    name: str = field(init=False)
    parameters: tuple[str, ...] = field(init=False, repr=False)
    returns: str = field(init=False, repr=False)
    # The module declaring the exercise ("autograder.exercises.ch03_unbroadcasting"): by
    # default the caller's (a copy made by dataclasses.replace keeps the original's).
    module: str = field(default="", repr=False)

    def __post_init__(self) -> None:
        name, params, returns = read_signature(self.signature)
        for key, value in (
            ("name", name),
            ("parameters", params),
            ("returns", returns),
            ("module", self.module or declaring_module()),
        ):
            object.__setattr__(self, key, value)
        for key in ("invoke", "reference_implementation"):  # a misspelt name fails here
            if getattr(self, key):
                try:
                    harness.split_name(getattr(self, key))
                except ValueError as error:
                    raise ValueError(f"Exercise {self.name}: {key}: {error}") from None
        if not self.chapter:
            object.__setattr__(self, "chapter", chapter_of(self.module))
        if not (self.mistakes or self.reference_implementation or self.answers_outside):
            raise ValueError(
                f"Exercise {self.name} has no mistake and no harness reference to "
                "check its signature against: give it a known mistake, or declare "
                'its reference_implementation="chNN_<topic>:<function>" (or, '
                "where the package must hold no answer, say why in "
                'answers_outside="...").'
            )
        problems = [*self._signature_problems(), *self._hint_problems()]
        if problems:
            raise ValueError("\n".join(f"Exercise {self.name}: {p}" for p in problems))
        reads = self.namespace_reads
        if not isinstance(reads, tuple) or not all(
            isinstance(n, str) and n.isidentifier() for n in reads
        ):
            raise ValueError(
                f"Exercise {self.name}: namespace_reads is a tuple of names, not {reads!r}."
            )

    def _signature_problems(self) -> list[str]:
        """Where a mistake or the reference disagrees with the declared parameters."""
        problems = []
        for mistake in self.mistakes:
            found = parameter_names(mistake.answer)
            if found is not None and found != self.parameters:
                problems.append(
                    f"the mistake {mistake.name!r} takes {listed(found)}, but the signature "
                    f"{self.signature!r} declares {listed(self.parameters)}: a mistake is "
                    "written with the learner's own parameters."
                )
        implementation = self.reference_implementation
        found = harness_parameters(implementation) if implementation else None
        if found is not None and found != self.parameters:
            problems.append(
                f"its reference_implementation {implementation!r} takes {listed(found)}, but the "
                f"signature {self.signature!r} declares {listed(self.parameters)}."
            )
        unknown = [n for n in self.reference.reads if n not in self.parameters]
        if unknown:
            problems.append(
                f"the reference reads {listed(tuple(unknown))}, which the signature "
                f"{self.signature!r} does not declare: a derived reference's forward takes "
                "the learner's parameters by name (or builds an argument with inputs=)."
            )
        return problems

    def _hint_problems(self) -> list[str]:
        """`hints_by_kind` keys that no check can report for this exercise."""
        unknown = [key for key in self.hints_by_kind if not self._is_hint_kind(key)]
        if not unknown:
            return []
        return [
            f"hints_by_kind has {listed(tuple(unknown))}, which no check reports: a key is "
            f'one of {", ".join(HINT_KINDS)}, or "<kind>:<output>" with an output of '
            f'{listed(self.outputs)}, or "exception:<ExceptionTypeName>".'
        ]

    def _is_hint_kind(self, key: str) -> bool:
        kind, _, detail = key.partition(":")
        if not detail:
            return kind in HINT_KINDS
        if kind == "exception":
            return is_exception_name(detail)
        return kind in MISMATCH_KINDS and detail in self.outputs

    def presented(self, report: Any) -> Any:
        """The report as the learner sees it (an exercise may show its cases its own way)."""
        return report

    def strategy(self, profile: Profile) -> st.SearchStrategy[Case]:
        """`cases(profile)`, whose malformed case raises an error naming this exercise."""
        return _naming(self.cases(profile), self.name)

    def edge_cases(self) -> list[Case]:
        """`edges()`, whose malformed case raises an error naming this exercise."""
        try:
            return self.edges()
        except AmbiguousArgument as error:
            raise error.naming(self.name) from None

    @property
    def tf_reference(self) -> Callable[[Any, Case], Outputs]:
        return self.reference.tf

    @property
    def jax_reference(self) -> Callable[[Any, dict[str, Any], dict[str, Any]], Outputs]:
        return self.reference.jax

    def dependencies(self) -> harness.Depends:
        """The exercises this one calls, each with the reference implementation it declares:
        ((name, "<module>:<function>"), ...), what the harness runs in their place."""
        from autograder.exercises import EXERCISES  # they import this module

        return tuple((name, EXERCISES[name].reference_implementation) for name in self.depends_on)

    def invoker(self) -> Callable[..., Any]:
        """The `invoke` function, at full precision when a framework is allowed: the grader's
        child resolves it by the same name, with the same frameworks and dependencies
        (program.json)."""
        return harness.invoker(self.invoke, self.frameworks, self.dependencies())

    def run_mistake(self, mistake: Mistake, case: Case, known: KnownOutputs | None = None) -> Any:
        """The mistake's outputs on this case, exactly as a learner's function would give them
        (or Raised, with the type of the exception it raised): as `known` stored them, else
        run. A mistake that also ignores the exercise's method is recognised by its values, as
        the learner's answer is judged."""
        stored = known(mistake, case) if known is not None else None
        if stored is not None:
            return stored
        try:
            return self.invoker()(mistake.answer, *case.fresh_values())
        except harness.MethodNotFollowed as error:
            return error.value
        except Exception as error:
            return Raised(getattr(error, "type_name", type(error).__name__))

    def reproduces(
        self, mistake: Mistake, evidence: Sequence[Evidence], known: KnownOutputs | None = None
    ) -> bool:
        """Whether the mistake gives what the learner gave on every one of these cases."""
        return all(
            self._same(got, self.run_mistake(mistake, case, known)) for case, got in evidence
        )

    def _same(self, got: Any, wrong: Any) -> bool:
        if isinstance(got, Raised) or isinstance(wrong, Raised):  # never == with an array
            return isinstance(got, Raised) and isinstance(wrong, Raised) and got == wrong
        return outputs_match(got, _as_tuple(wrong, self.outputs), self.outputs)

    def mistake_hint(
        self, evidence: Sequence[Evidence], several: bool = True, known: KnownOutputs | None = None
    ) -> str:
        """The hint of the known mistake that reproduces every one of these failing cases;
        when several do (the cases cannot tell them apart), all their hints, or "" if not
        `several`; "" when none does."""
        hints = list(
            dict.fromkeys(m.hint for m in self.mistakes if self.reproduces(m, evidence, known))
        )
        if len(hints) <= 1:
            return say(hints[0]) if hints else ""
        if not several:
            return ""
        return say(SEVERAL_MISTAKES) + "\n".join(f"- {say(hint)}" for hint in hints)

    def diagnose(
        self,
        case: Case,
        got: Any,
        mismatch: Mismatch,
        others: Sequence[Evidence] = (),
        known: KnownOutputs | None = None,
    ) -> str:
        """The hint for this failure: a known mistake it reproduces, here and on the `others`
        (other failing cases: one case alone can make two mistakes look alike), else a hint
        for this kind on this output ("value:jvp_primal"), else one for its kind."""
        named = self.mistake_hint([(case, got), *others], known=known)
        if named:
            return named
        for key in (f"{mismatch.kind}:{mismatch.output}", mismatch.kind):
            if key in self.hints_by_kind:
                return say(self.hints_by_kind[key])
        return say(GENERIC_HINTS.get(mismatch.kind, ""))


@st.composite
def _naming(draw: st.DrawFn, strategy: st.SearchStrategy[Case], exercise: str) -> Case:
    """A case of `strategy`; an ambiguous argument's error names the exercise. (Decorated
    here, at import: Hypothesis reads a composite's source when it is decorated.)"""
    try:
        return draw(strategy)
    except AmbiguousArgument as error:
        raise error.naming(exercise) from None


def learner_function(name: str, parameters: str, body: Callable[..., Any]) -> Callable[..., Any]:
    """`body`, as the learner's function `name` with these `parameters` ("lo, hi, x"): a
    mistake built by a factory (a tf.custom_gradient or jax.custom_jvp rule around a given
    wrong rule) still has the learner's own signature, which the exercise checks against its
    declared `signature`."""

    def learner(*args: Any) -> Any:
        return body(*args)

    learner.__name__ = learner.__qualname__ = name
    learner.__signature__ = inspect.Signature(
        [
            inspect.Parameter(p.strip(), inspect.Parameter.POSITIONAL_OR_KEYWORD)
            for p in parameters.split(",")
        ]
    )
    return learner


def parameters(fn: Callable[..., Any]) -> str:
    """fn's parameters as a learner writes them, without annotations: "(f, argnums=0)"."""
    plain = [
        p.replace(annotation=inspect.Parameter.empty)
        for p in inspect.signature(fn).parameters.values()
    ]
    return str(inspect.Signature(plain))


SEVERAL_MISTAKES = (
    "Your output is exactly what each of these known mistakes gives on every failing case "
    "seen, so it is one of them:\n"
)
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
