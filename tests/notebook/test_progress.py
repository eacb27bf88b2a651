"""`python -m autograder progress` and `check.progress()`: read from the saved check cells."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.judging.report import FAILED, NOT_ANSWERED, PASSED
from autograder.notebook import progress as progress_module

ROOT = Path(__file__).resolve().parents[2]


def declared_exercises(folder: Path) -> list[str]:
    """Every exercise the chapter notebooks declare in their metadata, in chapter order."""
    return [
        name
        for path in sorted(folder.glob("[0-9][0-9]_*.ipynb"))
        for name in nbformat.read(path, as_version=4).metadata["course"]["exercises"]
    ]


def test_solutions_show_every_exercise_passed():
    view = progress_module.progress(ROOT / "solutions")
    assert [row.exercise for row in view.rows] == declared_exercises(ROOT / "solutions")
    assert {row.status for row in view.rows} == {PASSED}


def test_a_fresh_course_shows_none_answered():
    view = progress_module.progress(ROOT / "course")
    assert len(view.rows) == len(declared_exercises(ROOT / "course"))
    assert {row.status for row in view.rows} == {NOT_ANSWERED}


def chapter(tmp_path: Path, check_outputs: dict[str, list]) -> Path:
    """A one-chapter course whose check cells carry the given saved outputs."""
    notebook = nbformat.v4.new_notebook(
        metadata={"course": {"chapter": "09", "exercises": [*check_outputs, "missing_check"]}}
    )
    for name, outputs in check_outputs.items():
        notebook.cells.append(nbformat.v4.new_code_cell(f"def {name}(x):\n    return x"))
        cell = nbformat.v4.new_code_cell(f"check.{name}({name})")
        cell.outputs = outputs
        notebook.cells.append(cell)
    nbformat.write(notebook, tmp_path / "09_test.ipynb")
    return tmp_path


def result(text: str):
    return nbformat.v4.new_output("execute_result", {"text/plain": text}, execution_count=1)


def test_each_saved_output_gives_its_status(tmp_path):
    folder = chapter(
        tmp_path,
        {
            "good": [result("PASSED good: matches jax.vjp on all 31 cases.")],
            "bad": [result("FAILED bad: grad_x differs from the reference")],
            "cannot": [result("CANNOT CHECK cannot: the function is not defined")],
            "crashed": [
                nbformat.v4.new_output("error", ename="NameError", evalue="x", traceback=[])
            ],
            "never_run": [],
            "stub": [result("NOT ANSWERED YET stub: replace the line")],
        },
    )
    statuses = {row.exercise: row.status for row in progress_module.progress(folder).rows}
    assert statuses == {
        "good": PASSED,
        "bad": FAILED,
        "cannot": FAILED,
        "crashed": FAILED,
        "never_run": NOT_ANSWERED,
        "stub": NOT_ANSWERED,
        "missing_check": NOT_ANSWERED,
    }


def test_a_check_of_another_function_is_not_the_exercise_check(tmp_path):
    folder = chapter(tmp_path, {"good": []})
    path = folder / "09_test.ipynb"
    notebook = nbformat.read(path, as_version=4)
    demo = nbformat.v4.new_code_cell("check.good(a_deliberately_wrong_answer)")
    demo.outputs = [result("FAILED a_deliberately_wrong_answer: differs")]
    notebook.cells.append(demo)
    nbformat.write(notebook, path)
    assert progress_module.progress(folder).rows[0].status == NOT_ANSWERED


def test_table_text_and_html_name_every_exercise(tmp_path):
    view = progress_module.progress(chapter(tmp_path, {"good": [result("PASSED good: ok")]}))
    assert "1 of 2 exercises passed, 0 failed, 1 not answered" in str(view)
    assert "<td><code>missing_check</code></td>" in view._repr_html_()


def test_a_folder_without_chapters_says_which_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match=str(tmp_path)):
        progress_module.progress(tmp_path)


def test_cli_prints_the_table_and_exits_0():
    done = subprocess.run(
        [sys.executable, "-m", "autograder", "progress", "solutions"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    total = len(declared_exercises(ROOT / "solutions"))
    assert f"{total} of {total} exercises passed" in done.stdout


def test_check_progress_shows_the_notebooks_folder(monkeypatch):
    from autograder import check

    monkeypatch.chdir(ROOT / "course")  # a notebook's kernel runs in the notebook's folder
    view = check.progress()
    assert view.rows and {row.status for row in view.rows} == {NOT_ANSWERED}
