"""An exercise's chapter comes from its module's file name (ch03_unbroadcasting.py -> "03"):
it must be the chapter whose notebook asks for it. Its signature comes from its mistakes'
parameters: they must be those of the function the solution notebook defines."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager

from autograder.exercises import EXERCISES
from autograder.judging.exercise import chapter_of, parameters

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", list(EXERCISES))
def test_the_derived_chapter_is_the_notebook_that_checks_the_exercise(name: str) -> None:
    (notebook,) = (ROOT / "solutions").glob(f"{EXERCISES[name].chapter}_*.ipynb")
    assert f"check.{name}({name})" in notebook.read_text()


def test_a_module_without_a_chapter_number_must_declare_one() -> None:
    assert chapter_of("autograder.exercises.ch06_jacobians") == "06"
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
            found += [node.args for node in tree.body
                      if isinstance(node, ast.FunctionDef) and node.name == name]
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
    mistakes = EXERCISES[name].mistakes
    assert {parameters(mistake.answer) for mistake in mistakes} == {
        parameters(mistakes[0].answer)}, [mistake.name for mistake in mistakes]


def test_an_exercise_without_mistakes_takes_its_parameters_from_its_reference() -> None:
    unbroadcast = dataclasses.replace(EXERCISES["unbroadcast"], mistakes=())
    assert unbroadcast.signature == EXERCISES["unbroadcast"].signature
    with pytest.raises(ValueError, match="no mistake and no harness reference"):
        dataclasses.replace(EXERCISES["matmul_vjp"], mistakes=())
