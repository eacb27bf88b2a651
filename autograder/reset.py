"""`python -m autograder reset NOTEBOOK EXERCISE`: one exercise cell back to its original stub.

The stub is regenerated from the solution notebook exactly as the build pipeline makes
course/ (`notebooks.strip_solutions`), so a reset cell is what a fresh learner copy holds.
Only that cell changes (its source, and its outputs and execution count are cleared: the
stub has not run): every other cell, the learner's notes and answers included, is written
back as it was read.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from .notebooks import DEF_LINE, strip_solutions


class ResetError(ValueError):
    """Reset cannot proceed; the message says what is missing and what to do."""


def defines(cell: NotebookNode, exercise: str) -> bool:
    """A code cell defining `def exercise(...)` at its top level."""
    return cell.cell_type == "code" and any(
        (match := DEF_LINE.match(line)) and match.group(1) == exercise and not line[:1].isspace()
        for line in cell.source.splitlines()
    )


def exercise_cell_index(notebook: NotebookNode, exercise: str, where: Path) -> int:
    """The cell of `exercise`: the one tagged `exercise` that defines it, else any that does."""
    found = [i for i, cell in enumerate(notebook.cells) if defines(cell, exercise)]
    tagged = [i for i in found if "exercise" in notebook.cells[i].metadata.get("tags", [])]
    if not found:
        declared = notebook.metadata.get("course", {}).get("exercises", [])
        raise ResetError(
            f"No cell of {where} defines `def {exercise}(...)`. Its exercises: "
            f"{', '.join(declared) or 'none declared'}."
        )
    return (tagged or found)[0]


def solution_for(notebook: Path, solutions: Path | None) -> Path:
    """The solution notebook a learner copy was built from: solutions/ beside course/."""
    folder = solutions if solutions is not None else notebook.resolve().parent.parent / "solutions"
    path = folder / notebook.name
    if not path.is_file():
        raise ResetError(
            f"Cannot find {path}, the notebook {notebook.name} was generated from. Run reset in "
            "a clone of the course repository, or pass --solutions FOLDER."
        )
    return path


def original_stub(solution: Path, exercise: str) -> str:
    """The exercise cell as a fresh learner copy has it."""
    notebook = nbformat.read(solution, as_version=4)
    cell = notebook.cells[exercise_cell_index(notebook, exercise, solution)]
    return strip_solutions(cell.source, where=f"{solution.name}, exercise {exercise}")


def reset_exercise(notebook: Path, exercise: str, solutions: Path | None = None) -> int:
    """Restore the exercise cell in place; return its index. Other cells are not touched."""
    learner = nbformat.read(notebook, as_version=4)
    index = exercise_cell_index(learner, exercise, notebook)
    cell = learner.cells[index]
    cell.source = original_stub(solution_for(notebook, solutions), exercise)
    cell.outputs = []
    cell.execution_count = None
    nbformat.write(learner, notebook)
    return index


def main(*, notebook: Path, exercise: str, solutions: Path | None = None) -> int:
    """Reset and say what was done, and what the learner must do in JupyterLab; 1 on a problem."""
    try:
        index = reset_exercise(notebook, exercise, solutions)
    except (ResetError, FileNotFoundError) as problem:
        print(f"reset: {problem}", file=sys.stderr)
        return 1
    print(f"Reset cell {index} of {notebook} ({exercise}) to its original stub; no other cell "
          "changed. If the notebook is open, use File > Reload Notebook from Disk before saving.")
    return 0
