"""The random-program check of the learner's engine: its declaration, and a report that shows
the smallest failing program as code and the first value whose cotangent differs.

The cases, the references and the contract are in engine_programs.py; the invoke, which runs
the program on the learner's engine, in autograder/harness/programs.py. The engine itself is
the learner's, all of it: the package ships none, so the declaration is made by
`engine_exercise(mistakes)`, with the known wrong engines the caller has (as learner
functions, each `grad` defined where its wrong engine is).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from autograder.exercises.engine_programs import (
    INVOKE,
    OUTPUTS,
    PROGRAM_REFERENCE,
    REFERENCES_TEXT,
    program_edges,
    programs,
)
from autograder.harness.programs import INPUTS, NAMESPACE, forward, statements
from autograder.judging.cases import NOTEBOOK, Case, Profile
from autograder.judging.compare import compare_array
from autograder.judging.engine import check_function
from autograder.judging.exercise import Evidence, Exercise, KnownOutputs, Mistake
from autograder.judging.report import Failure, Report
from autograder.locale import say

SIGNATURE = "grad(f, argnums=0) -> the gradient of f with respect to argument argnums"
ENGINE_HINTS = {
    "error": "The traceback names the line of your engine that raised, on the program shown: "
    "run that program on your engine in a cell of its own.",
    "shape": "Each gradient has its input's shape: where an operation broadcast an input, its "
    "VJP sums the cotangent back to that input's shape.",
    "dtype": "Keep the inputs' dtype (float64): start every .grad with np.zeros_like(value).",
    "value": "Wrong gradients. The report says at which value of the program they start.",
    # grad held to jax.grad's contract (harness/programs.py raises these two by name).
    "exception:ArgnumsError": "Return what jax.grad returns for each argnums: for an int "
    "(grad(f), grad(f, argnums=1)) the one array of that argument, not a tuple; for a tuple "
    "(grad(f, argnums=(0, 2)), and also a tuple of one, (2,)) a tuple of arrays in that order. "
    "Test which it is with isinstance(argnums, int).",
    "exception:ScalarOutputError": "grad differentiates a scalar function only: after calling "
    "f, check that its output's shape is (), and raise TypeError (as jax.grad does) before "
    "the backward pass when it is not.",
}


@dataclass(frozen=True)
class Difference:
    """Where the learner's cotangents first differ, going back from the output: the line
    (None: only the inputs' gradients), with what was expected and what came."""

    line: int | None
    name: str
    expected: np.ndarray | None = None
    got: np.ndarray | None = None


def first_difference(case: Case, got: Any, expected: Sequence[np.ndarray]) -> Difference | None:
    """The last line of the program whose cotangent (.grad after backward) differs from the
    reference, else the inputs whose gradients do; None if nothing differs or the learner's
    output cannot be split into lines."""
    if not isinstance(got, tuple | list) or len(got) != len(OUTPUTS):
        return None
    program = case.arg("program")
    lines = forward(program, [case.arg(name) for name in INPUTS])[len(INPUTS) :]
    names = [name for name, _ in statements(program)]
    nodes, right = np.asarray(got[-1]), np.asarray(expected[-1])
    if nodes.shape != right.shape:
        return None
    ends = np.cumsum([value.size for value in lines])
    for k in reversed(range(len(lines))):
        part = slice(ends[k] - lines[k].size, ends[k])
        mine, want = nodes[part].reshape(lines[k].shape), right[part].reshape(lines[k].shape)
        if compare_array(names[k], mine, want) is not None:
            return Difference(k, names[k], want, mine)
    wrong = [
        name
        for name, mine, want in zip(INPUTS, got, expected, strict=False)
        if compare_array(name, mine, want) is not None
    ]
    return Difference(None, ", ".join(wrong)) if wrong else None


def users(program: str, name: str) -> list[str]:
    """The lines of the program that use the value `name`, as code."""
    return [f"{target} = {text}" for target, text in _lines(program) if name in _names(text)]


def _lines(program: str) -> list[tuple[str, str]]:
    return [tuple(line.split(" = ", 1)) for line in program.splitlines()]


def _names(expression: str) -> set[str]:
    import ast

    return {
        node.id
        for node in ast.walk(ast.parse(expression, mode="eval"))
        if isinstance(node, ast.Name)
    }


def where_text(program: str, difference: Difference | None) -> str:
    """The sentence that says where the cotangents first differ, and where to look."""
    if difference is None:
        return ""
    if difference.line is None:
        wrong = difference.name.split(", ")
        lines = [line for name in wrong for line in users(program, name)]
        return say(
            "Every line's value has the right cotangent after your backward(root); "
            "the gradients of {inputs} differ. Look at the VJP rules of the lines that "
            "use them, {users}, at how your backward pass adds up what each use "
            "sends, and at what your grad returns for each argnums.",
            inputs=difference.name,
            users="; ".join(dict.fromkeys(lines)),
        )
    return say(
        "Going back from the output, the first value whose cotangent differs is {name} "
        "(its .grad after your backward(root)); every value after it has the right "
        "one. So the cotangent {name} receives is wrong: look at the VJP rules of the "
        "lines that use it, {users}, and at how your backward pass adds up what each "
        "use sends.",
        name=difference.name,
        users="; ".join(users(program, difference.name)),
    )


@dataclass(frozen=True, eq=False)
class ProgramExercise(Exercise):
    """The random-program check: its hint also says where the cotangents first differ,
    against JAX's cotangent of each value of the program."""

    def diagnose(
        self,
        case: Case,
        got: Any,
        mismatch: Any,
        others: Sequence[Evidence] = (),
        known: KnownOutputs | None = None,
    ) -> str:
        from autograder.judging.references import jax_references

        hint = super().diagnose(case, got, mismatch, others, known)
        try:
            expected = jax_references(self.jax_reference, [case])[0]
            where = where_text(case.arg("program"), first_difference(case, got, expected))
        except Exception:  # an output too broken to locate anything in: the hint alone
            where = ""
        return f"{where}\n{hint}".strip()

    def presented(self, report: Report) -> ProgramReport:
        """The failing case shown as the program's code (check.grad shows it so)."""
        return as_program_report(report)


NO_ENGINE = (
    "the learner writes the whole engine, and the package ships none, right or "
    "wrong: a known wrong engine would hold every right part but one"
)


def engine_exercise(
    mistakes: tuple[Mistake, ...] = (),
    reference_implementation: str = "",
    answers_outside: str = NO_ENGINE,
) -> ProgramExercise:
    """The declaration of the random-program check, with the known wrong engines given."""
    return ProgramExercise(
        signature=SIGNATURE,
        nudge=(
            "Think of grad as a wrapper around your tape: which inputs become recorded tensors, "
            "what seeds the backward pass, and what must be cleared so that an earlier call leaves "
            "no cotangent behind?"
        ),
        outputs=OUTPUTS,
        cases=programs,
        edges=program_edges,
        reference=PROGRAM_REFERENCE,
        references_text=REFERENCES_TEXT,
        chapter="02",
        mistakes=mistakes,
        hints_by_kind=ENGINE_HINTS,
        invoke=INVOKE,
        reference_implementation=reference_implementation,
        namespace_reads=NAMESPACE,
        answers_outside=answers_outside,
    )


# ---------------------------------------------------------------- the report


@dataclass(frozen=True, repr=False)  # Report.__repr__: the report as text (progress reads it)
class ProgramReport(Report):
    """A check's report whose failing case is shown as the program's code and its inputs,
    with the cotangents of the first value that differs, expected and got."""

    def failure_sections(self, failure: Failure) -> list[tuple[str, str]]:
        parts = super().failure_sections(failure)
        if failure.input_independent:
            return parts
        program = failure.case.arg("program")
        # Left out: the inputs the program does not use, the program's repr, and every
        # line's cotangent flattened into one vector (the differing line's is shown alone).
        absent = [name for name in INPUTS if name not in used_names(program)]
        unused = {say("input {name}", name=name) for name in [*absent, "program"]}
        unused |= {
            say(title, name=name)
            for title in ("expected {name}", "got {name}")
            for name in [OUTPUTS[-1], *(f"{name}.grad" for name in absent)]
        }
        shown = []
        for title, body in parts:
            if body == failure.case.describe():
                shown.append((title, program_and_inputs(failure.case)))
            elif title not in unused:
                shown.append((title, body))
        return shown + _difference_sections(failure)


def used_names(program: str) -> set[str]:
    """The names the program's lines read."""
    return set().union(*(_names(text) for _, text in _lines(program)))


def program_and_inputs(case: Case) -> str:
    """The program as code, then the shape of each input it uses."""
    program = case.arg("program")
    shapes = "\n".join(
        say(
            "{name}: {dtype} array of shape {shape}",
            name=name,
            dtype=case.arg(name).dtype,
            shape=case.arg(name).shape,
        )
        for name in INPUTS
        if name in used_names(program)
    )
    return f"{program}\n\n{shapes}"


def _difference_sections(failure: Failure) -> list[tuple[str, str]]:
    if failure.expected is None:
        return []
    try:
        difference = first_difference(failure.case, failure.got, failure.expected)
    except Exception:  # the learner's output cannot be split into the program's values
        return []
    if difference is None or difference.line is None:
        return []
    show = {"precision": 4, "suppress_small": True}
    name = difference.name
    return [
        (
            say("expected cotangent of {name}", name=name),
            np.array2string(difference.expected, **show),
        ),
        (say("got {name}.grad", name=name), np.array2string(difference.got, **show)),
    ]


def as_program_report(report: Report) -> ProgramReport:
    """The same report, shown with the program as code."""
    return ProgramReport(**{field.name: getattr(report, field.name) for field in fields(report)})


def check_engine(
    grad: Any, exercise: ProgramExercise, profile: Profile = NOTEBOOK
) -> ProgramReport:
    """Check the learner's engine (found where `grad` is defined) on random programs."""
    return as_program_report(check_function(exercise, grad, profile))
