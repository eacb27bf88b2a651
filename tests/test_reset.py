"""`python -m autograder reset NOTEBOOK EXERCISE`: one cell back to its stub, nothing else."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder import notebooks, reset

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = "03_unbroadcasting.ipynb"


def answered_copy(tmp_path: Path) -> Path:
    """A learner's chapter 03 in tmp/course/, both exercises answered and a note added."""
    (tmp_path / "course").mkdir()
    path = tmp_path / "course" / CHAPTER
    shutil.copy(ROOT / "course" / CHAPTER, path)
    notebook = nbformat.read(path, as_version=4)
    for name in ("unbroadcast", "matmul_vjp"):
        cell = notebook.cells[reset.exercise_cell_index(notebook, name, path)]
        cell.source = cell.source.replace('raise NotImplementedError("Exercise',
                                          '# my attempt\n    raise ValueError("Exercise')
        cell.execution_count = 7
        cell.outputs = [nbformat.v4.new_output("stream", text="my output\n")]
    notebook.cells.insert(3, nbformat.v4.new_markdown_cell("My own notes: unbroadcast sums."))
    nbformat.write(notebook, path)
    return path


def test_reset_restores_one_cell_and_leaves_every_other_cell(tmp_path):
    path = answered_copy(tmp_path)
    before = nbformat.read(path, as_version=4)
    index = reset.reset_exercise(path, "unbroadcast", ROOT / "solutions")
    after = nbformat.read(path, as_version=4)
    original = nbformat.read(ROOT / "course" / CHAPTER, as_version=4)
    fresh = original.cells[reset.exercise_cell_index(original, "unbroadcast", path)]
    assert after.cells[index].source == fresh.source
    assert after.cells[index].outputs == [] and "my attempt" not in after.cells[index].source
    assert len(after.cells) == len(before.cells) and after.metadata == before.metadata
    changed = [i for i, (a, b) in enumerate(zip(before.cells, after.cells, strict=True))
               if a != b]
    assert changed == [index]
    assert any("my attempt" in cell.source for cell in after.cells)  # matmul_vjp's answer


def test_the_stub_is_what_the_build_pipeline_generates(tmp_path):
    solution = nbformat.read(ROOT / "solutions" / CHAPTER, as_version=4)
    cell = solution.cells[reset.exercise_cell_index(solution, "matmul_vjp", ROOT)]
    assert reset.original_stub(ROOT / "solutions" / CHAPTER, "matmul_vjp") == (
        notebooks.strip_solutions(cell.source))
    assert "BEGIN SOLUTION" in cell.source  # a solution was there to strip


def test_cli_finds_solutions_beside_course_and_exits_0(tmp_path):
    path = answered_copy(tmp_path)
    shutil.copytree(ROOT / "solutions", tmp_path / "solutions",
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    done = subprocess.run([sys.executable, "-m", "autograder", "reset", str(path), "matmul_vjp"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Reload Notebook from Disk" in done.stdout
    cells = nbformat.read(path, as_version=4).cells
    assert sum("my attempt" in cell.source for cell in cells) == 1  # unbroadcast's stays


@pytest.mark.parametrize(("exercise", "solutions", "message"), [
    ("not_an_exercise", ROOT / "solutions", "defines `def not_an_exercise"),
    ("unbroadcast", None, "--solutions FOLDER"),  # no solutions/ beside tmp/course/
])
def test_problems_are_named_and_the_notebook_is_left_alone(tmp_path, exercise, solutions,
                                                            message):
    path = answered_copy(tmp_path)
    before = path.read_bytes()
    with pytest.raises(reset.ResetError, match=message):
        reset.reset_exercise(path, exercise, solutions)
    assert path.read_bytes() == before
