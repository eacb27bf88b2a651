"""An exercise's chapter comes from its module's file name (ch03_unbroadcasting.py -> "03"):
it must be the chapter whose notebook asks for it. Its signature is declared, and checked
against its mistakes' parameters: they must be those of the function the solution notebook
defines. Everything
else the harness and the grader need is declared on it too, and an incomplete declaration
is refused with a message naming the exercise and the field to add."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager

from autograder import exercises as exercise_modules
from autograder.exercises import EXERCISES
from autograder.judging.declaration import chapter_of, declaration_problems
from autograder.judging.exercise import parameters

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", list(EXERCISES))
def test_the_derived_chapter_is_the_notebook_that_checks_the_exercise(name: str) -> None:
    (notebook,) = (ROOT / "solutions").glob(f"{EXERCISES[name].chapter}_*.ipynb")
    assert f"check.{name}({name})" in notebook.read_text()


def test_a_module_without_a_chapter_number_must_declare_one() -> None:
    assert chapter_of("autograder.exercises.ch07_jacobians") == "07"
    with pytest.raises(ValueError, match="declare the exercise's chapter"):
        chapter_of("tests.test_exercise_chapters")


def _solution_parameters(name: str) -> str:
    """The parameters of `def name(...)` in its chapter's solution notebook (the exercise
    cell's), without annotations: "(g, shape)"."""
    (notebook,) = (ROOT / "solutions").glob(f"{EXERCISES[name].chapter}_*.ipynb")
    found = []
    for cell in nbformat.read(notebook, as_version=4).cells:
        if cell.cell_type == "code" and "### BEGIN SOLUTION" in cell.source:
            tree = ast.parse(TransformerManager().transform_cell(cell.source))
            found += [
                node.args
                for node in tree.body
                if isinstance(node, ast.FunctionDef) and node.name == name
            ]
    (args,) = found
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
        if arg is not None:
            arg.annotation = None
    return f"({ast.unparse(args)})"


@pytest.mark.parametrize("name", list(EXERCISES))
def test_the_signature_has_the_solution_notebooks_parameters(name: str) -> None:
    exercise = EXERCISES[name]
    assert exercise.signature.startswith(f"{name}{_solution_parameters(name)} -> ")


@pytest.mark.parametrize("name", list(EXERCISES))
def test_every_mistake_of_an_exercise_has_the_same_parameters(name: str) -> None:
    mistakes = EXERCISES[name].mistakes  # none for chapter 02's engine (answers_outside)
    assert len({parameters(mistake.answer) for mistake in mistakes}) <= 1, [
        mistake.name for mistake in mistakes
    ]


def test_an_exercise_without_mistakes_is_checked_against_its_reference() -> None:
    unbroadcast = dataclasses.replace(EXERCISES["unbroadcast"], mistakes=())
    assert unbroadcast.signature == EXERCISES["unbroadcast"].signature
    with pytest.raises(ValueError, match="no mistake and no harness reference"):
        dataclasses.replace(EXERCISES["matmul_vjp"], mistakes=())


def test_every_declaration_is_complete() -> None:
    assert declaration_problems(EXERCISES.values()) == []


def _problems(**changes: object) -> str:
    """The problems of the course's exercises with one changed, as one text."""
    (name,) = {key.split("__")[0] for key in changes}
    changed = dataclasses.replace(
        EXERCISES[name], **{key.split("__")[1]: value for key, value in changes.items()}
    )
    return "\n".join(
        declaration_problems([changed if e.name == name else e for e in EXERCISES.values()])
    )


def test_a_dependency_without_a_reference_implementation_names_what_to_add() -> None:
    text = _problems(unbroadcast__reference_implementation="")
    assert "Exercise unbroadcast: matmul_vjp depends on it" in text
    assert (
        'add reference_implementation="ch03_unbroadcasting:unbroadcast" to unbroadcast\'s Exercise'
    ) in text
    # The course's exercises are refused on import, not when a learner's check needs them.
    broken = [dataclasses.replace(e, reference_implementation="") for e in EXERCISES.values()]
    with pytest.raises(ValueError, match="declares no reference_implementation"):
        exercise_modules._by_name(tuple(broken))


def test_a_dependency_that_is_no_exercise_is_named() -> None:
    text = _problems(matmul_vjp__depends_on=("unbroadcastt",))
    assert "Exercise matmul_vjp: depends_on names 'unbroadcastt', which is no exercise" in text


def test_an_invoke_or_reference_naming_no_harness_function_is_named() -> None:
    text = _problems(directional_derivative__invoke="ch02_reverse_mode_tape:invoke_derivatives")
    assert (
        "Exercise directional_derivative: invoke='ch02_reverse_mode_tape:invoke_derivatives' "
        "names no function invoke_derivatives in autograder/harness/ch02_reverse_mode_tape.py"
    ) in text
    text = _problems(unbroadcast__reference_implementation="ch09:unbroadcast")
    assert (
        "Exercise unbroadcast: reference_implementation='ch09:unbroadcast' names "
        "autograder/harness/ch09.py, which does not exist"
    ) in text


def test_an_invoke_reading_the_learners_namespace_must_declare_the_names() -> None:
    text = _problems(grad__namespace_reads=())
    assert (
        "Exercise grad: its invoke 'programs:invoke_engine' looks "
        "names up in the learner's namespace (fn.__globals__): declare them with "
        "namespace_reads"
    ) in text
    assert "Exercise directional_derivative" not in text


def test_a_malformed_declaration_is_refused_when_declared() -> None:
    with pytest.raises(
        ValueError,
        match=r"Exercise unbroadcast: reference_implementation: "
        r".*'<module>:<function>'",
    ):
        dataclasses.replace(EXERCISES["unbroadcast"], reference_implementation="unbroadcast")
    with pytest.raises(ValueError, match="Exercise grad: namespace_reads is a tuple"):
        dataclasses.replace(EXERCISES["grad"], namespace_reads="Tensor")
