"""Every declared mistake, run as a learner's function through the in-notebook check, fails
with its own hint; every solution notebook's function passes.

The mistakes are the exercises' own data (wrong learner functions), so this one test covers
every chapter: a new mistake is tested the moment it is declared.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path
from typing import Any

import nbformat
import pytest
from IPython.core.inputtransformer2 import TransformerManager

from autograder.engine import check_function
from autograder.exercise import Exercise, Mistake
from autograder.exercises import EXERCISES
from autograder.report import FAILED, PASSED

ROOT = Path(__file__).resolve().parents[1]
DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)

MISTAKES = [
    pytest.param(exercise, mistake, id=f"{exercise.name}-{mistake.name}")
    for exercise in EXERCISES.values()
    for mistake in exercise.mistakes
]


@pytest.mark.parametrize(("exercise", "mistake"), MISTAKES)
def test_a_declared_mistake_fails_with_its_hint(exercise: Exercise, mistake: Mistake) -> None:
    report = check_function(exercise, mistake.answer)
    assert report.status == FAILED, f"{mistake.name} passed the check"
    assert report.failure is not None
    assert mistake.hint in report.failure.hint, (
        f"{mistake.name} got another hint: {report.failure.hint!r}")


def _definitions_only(source: str) -> str:
    """The imports, functions and classes of a cell (what a later exercise cell may use),
    without its demonstrations, which may be slow."""
    tree = ast.parse(TransformerManager().transform_cell(source))
    tree.body = [node for node in tree.body if isinstance(node, DEFINITIONS)]
    return ast.unparse(tree)


def _is_exercise_cell(source: str) -> bool:
    return "### BEGIN SOLUTION" in source


@cache
def solution_namespace(chapter: str) -> dict[str, Any]:
    """The solution notebook of a chapter run as a learner would have it: every exercise cell
    whole (some finish a definition with a call, e.g. `.defvjp(fwd, bwd)`) and the
    definitions of the other cells, check cells left out."""
    (path,) = (ROOT / "solutions").glob(f"{chapter}_*.ipynb")
    namespace: dict[str, Any] = {"__name__": f"solution_{chapter}"}
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        code = cell.source if _is_exercise_cell(cell.source) else _definitions_only(cell.source)
        exec(compile(code, f"{path.name}", "exec"), namespace)
    return namespace


@pytest.mark.parametrize("exercise", list(EXERCISES.values()), ids=list(EXERCISES))
def test_the_solution_passes(exercise: Exercise) -> None:
    solution = solution_namespace(exercise.chapter)[exercise.name]
    report = check_function(exercise, solution)
    assert report.status == PASSED, str(report)
