"""The notebook pipeline: solutions/ is the source, course/ is generated from it.

A learner copy is the solution notebook with every `### BEGIN SOLUTION` ... `### END
SOLUTION` block replaced by a stub that raises NotImplementedError naming the exercise.
Both copies are executed here, so their stored outputs are what nbval compares against:
the learner copy's check cells show "not answered yet", the solutions' show "passed".
Each stubbed cell also keeps its stub in its metadata (`course.stub`), so `reset` can give a
learner the original cell back from the notebook alone, without solutions/ (authoring/reset.py).
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
from nbclient import NotebookClient
from nbconvert.preprocessors import CoalesceStreamsPreprocessor
from nbformat import NotebookNode

if TYPE_CHECKING:
    from autograder.authoring.translations import Edition

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
DEF_LINE = re.compile(r"^\s*def\s+(\w+)\s*\(")
EXECUTION_TIMEOUT = 600  # seconds per cell
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


class SolutionMarkerError(ValueError):
    """A solution block that is not closed, or not inside a function."""


def stub_line(indent: str, exercise: str) -> str:
    return (
        f'{indent}raise NotImplementedError("Exercise {exercise}: replace this line with '
        'your code.")'
    )


def strip_solutions(source: str, where: str = "cell") -> str:
    """Replace each solution block by a stub raising NotImplementedError(exercise name)."""
    out: list[str] = []
    exercise = None
    inside = False
    for number, line in enumerate(source.splitlines(), start=1):
        stripped = line.strip()
        if match := DEF_LINE.match(line):
            exercise = exercise if inside else match.group(1)
        if stripped == BEGIN:
            if inside:
                raise SolutionMarkerError(f"{where}, line {number}: {BEGIN} inside a block.")
            if exercise is None:
                raise SolutionMarkerError(
                    f"{where}, line {number}: {BEGIN} must be inside a `def` (the exercise)."
                )
            inside = True
            out.append(stub_line(line[: len(line) - len(line.lstrip())], exercise))
        elif stripped == END:
            if not inside:
                raise SolutionMarkerError(f"{where}, line {number}: {END} without {BEGIN}.")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise SolutionMarkerError(f"{where}: {BEGIN} is never closed by {END}.")
    return "\n".join(out)


def learner_copy(solution: NotebookNode, name: str = "notebook") -> NotebookNode:
    """The learner's notebook: solutions stubbed out, each stub also recorded in its cell's
    metadata (what reset restores), outputs cleared (to be re-executed)."""
    notebook = copy.deepcopy(solution)
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        stub = strip_solutions(cell.source, where=f"{name} cell {index}")
        if stub != cell.source:
            cell.metadata.setdefault("course", {})["stub"] = stub
        cell.source = stub
        cell.outputs = []
        cell.execution_count = None
    return notebook


def execute(notebook: NotebookNode, directory: Path) -> NotebookNode:
    """Run every cell top to bottom in a fresh kernel; a cell that raises stops the build.

    No execution timestamps are recorded (nbclient's `record_timing`), and any left from an
    older build are removed: they changed every line of `metadata.execution` on each rebuild,
    burying the changes a reviewer should see. For the same reason consecutive stream outputs
    are merged (nbconvert's CoalesceStreamsPreprocessor): how a cell's printing was split into
    messages depends on when the kernel flushed, not on what it printed."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    without_run_records(notebook)
    client = NotebookClient(
        notebook,
        timeout=EXECUTION_TIMEOUT,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(directory)}},
    )
    client.execute()
    CoalesceStreamsPreprocessor().preprocess(notebook, {})
    return notebook


def without_run_records(notebook: NotebookNode) -> NotebookNode:
    """Drop what a previous run left beside the outputs: each cell's `metadata.execution`
    (the kernel's timestamps) and the widgets' saved state (nbclient writes it anew)."""
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)
    notebook.metadata.pop("widgets", None)
    return notebook


def stable_widget_ids(notebook: NotebookNode, name: str) -> NotebookNode:
    """The notebook with each widget's random model id replaced by one derived from `name` and
    the widget's place in creation order, so an unchanged notebook rebuilds to the same file.

    nbclient stores the widgets' state in creation order; their ids (uuid4) are referenced
    from the outputs and from other widgets' state ("IPY_MODEL_<id>"), all replaced alike."""
    state = notebook.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    if not state:
        return notebook
    renamed = {
        old: hashlib.sha256(f"{name}:{index}".encode()).hexdigest()[:32]
        for index, old in enumerate(state)
    }
    pattern = re.compile("|".join(map(re.escape, renamed)))
    text = pattern.sub(lambda match: renamed[match.group(0)], json.dumps(notebook))
    return nbformat.from_dict(json.loads(text))


@dataclass(frozen=True)
class Pair:
    """A solution notebook and the learner copy generated from it."""

    solution: Path
    learner: Path


def pairs(solutions: Path, course: Path) -> list[Pair]:
    return [Pair(path, course / path.name) for path in sorted(solutions.glob("[0-9]*.ipynb"))]


def build(pair: Pair) -> None:
    """Execute the solution (storing its outputs), then generate and execute the learner copy."""
    _execute_both(nbformat.read(pair.solution, as_version=4), pair.solution, pair.learner)


def build_edition(root: Path, edition: Edition) -> None:
    """The chapter's edition in another language (translations.Edition): its solution
    executed, then its learner copy generated and executed, like the English pair."""
    from autograder.authoring.translations import edition_notebook

    _execute_both(edition_notebook(root, edition), edition.solution, edition.learner)


def _execute_both(solution: NotebookNode, solution_path: Path, learner_path: Path) -> None:
    """Execute `solution` and write it; then its learner copy, executed, beside it in course/."""
    language = solution.metadata.get("course", {}).get("language", "en")
    for role, notebook, path in (
        ("solution", solution, solution_path),
        ("learner", None, learner_path),
    ):
        if notebook is None:
            notebook = learner_copy(solution, solution_path.name)
        path.parent.mkdir(parents=True, exist_ok=True)
        execute(notebook, path.parent)
        nbformat.write(stable_widget_ids(notebook, f"{language}/{role}/{path.name}"), path)


def edition_sync_problems(root: Path, edition: Edition) -> list[str]:
    """What differs between an edition's two notebooks and what the English source and the
    translation generate now (sources and recorded stubs; not outputs)."""
    from autograder.authoring.translations import edition_notebook

    expected = edition_notebook(root, edition)
    problems = []
    for path, notebook in (
        (edition.solution, expected),
        (edition.learner, learner_copy(expected, edition.solution.name)),
    ):
        if not path.exists():
            problems.append(f"{path} is missing")
            continue
        actual = nbformat.read(path, as_version=4)
        if _sources(notebook) != _sources(actual):
            problems.append(
                f"{path}: cells differ from what {edition.source} and "
                f"{edition.translation} generate"
            )
        if notebook.metadata.get("course") != actual.metadata.get("course"):
            problems.append(f"{path}: course metadata differs from {edition.source}")
    return problems


def _sources(notebook: NotebookNode) -> list[tuple[str, str, object]]:
    """Each cell's type, source and recorded stub: a copy without its stubs is out of sync."""
    return [(cell.cell_type, cell.source, cell.metadata.get("course")) for cell in notebook.cells]


def sync_problems(pair: Pair) -> list[str]:
    """What differs between course/ and a fresh learner copy of solutions/ (sources and
    recorded stubs; not outputs)."""
    if not pair.learner.exists():
        return [f"{pair.learner} is missing"]
    solution = nbformat.read(pair.solution, as_version=4)
    expected = learner_copy(solution, pair.solution.name)
    actual = nbformat.read(pair.learner, as_version=4)
    problems = []
    if _sources(expected) != _sources(actual):
        problems.append(f"{pair.learner}: cells differ from the learner copy of {pair.solution}")
    if expected.metadata.get("course") != actual.metadata.get("course"):
        problems.append(f"{pair.learner}: course metadata differs from {pair.solution}")
    return problems
