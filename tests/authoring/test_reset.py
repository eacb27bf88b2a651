"""Reset: one exercise cell back to its stub, nothing else; from a shell
(`python -m autograder reset NOTEBOOK EXERCISE`) and from inside the notebook (`check.reset`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import nbformat
import pytest

from autograder import check
from autograder.authoring import notebooks, reset

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = "03_unbroadcasting.ipynb"


def fresh_stub(exercise: str) -> str:
    """The exercise cell as course/ holds it."""
    original = nbformat.read(ROOT / "course" / CHAPTER, as_version=4)
    return original.cells[reset.exercise_cell_index(original, exercise, CHAPTER)].source


def answered_copy(tmp_path: Path, folder: str = "course") -> Path:
    """A learner's chapter 03 in tmp/<folder>/, both exercises answered and a note added."""
    (tmp_path / folder).mkdir()
    path = tmp_path / folder / CHAPTER
    shutil.copy(ROOT / "course" / CHAPTER, path)
    notebook = nbformat.read(path, as_version=4)
    for name in ("unbroadcast", "matmul_vjp"):
        cell = notebook.cells[reset.exercise_cell_index(notebook, name, path)]
        cell.source = cell.source.replace(
            'raise NotImplementedError("Exercise', '# my attempt\n    raise ValueError("Exercise'
        )
        cell.execution_count = 7
        cell.outputs = [nbformat.v4.new_output("stream", text="my output\n")]
    notebook.cells.insert(3, nbformat.v4.new_markdown_cell("My own notes: unbroadcast sums."))
    nbformat.write(notebook, path)
    return path


def without_stubs(path: Path) -> Path:
    """The notebook as copies made before the cells carried their stubs."""
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        cell.metadata.pop("course", None)
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
    changed = [i for i, (a, b) in enumerate(zip(before.cells, after.cells, strict=True)) if a != b]
    assert changed == [index]
    assert any("my attempt" in cell.source for cell in after.cells)  # matmul_vjp's answer


def test_the_stub_is_what_the_build_pipeline_generates(tmp_path):
    solution = nbformat.read(ROOT / "solutions" / CHAPTER, as_version=4)
    cell = solution.cells[reset.exercise_cell_index(solution, "matmul_vjp", ROOT)]
    assert reset.original_stub(ROOT / "solutions" / CHAPTER, "matmul_vjp") == (
        notebooks.strip_solutions(cell.source)
    )
    assert "BEGIN SOLUTION" in cell.source  # a solution was there to strip


def test_an_old_copy_falls_back_to_solutions_beside_course_and_exits_0(tmp_path):
    path = without_stubs(answered_copy(tmp_path))
    shutil.copytree(
        ROOT / "solutions",
        tmp_path / "solutions",
        ignore=shutil.ignore_patterns(".ipynb_checkpoints"),
    )
    done = subprocess.run(
        [sys.executable, "-m", "autograder", "reset", str(path), "matmul_vjp"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Reload Notebook from Disk" in done.stdout
    cells = nbformat.read(path, as_version=4).cells
    assert sum("my attempt" in cell.source for cell in cells) == 1  # unbroadcast's stays


@pytest.mark.parametrize(
    ("exercise", "solutions", "message"),
    [
        ("not_an_exercise", ROOT / "solutions", "defines `def not_an_exercise"),
        # an old copy (no stubs in its cells) with no solutions/ beside tmp/course/
        ("unbroadcast", None, "--solutions FOLDER"),
        ("unbroadcast", ROOT / "no-such-folder", "Cannot find"),
    ],
)
def test_problems_are_named_and_the_notebook_is_left_alone(tmp_path, exercise, solutions, message):
    path = without_stubs(answered_copy(tmp_path))
    before = path.read_bytes()
    with pytest.raises(reset.ResetError, match=message):
        reset.reset_exercise(path, exercise, solutions)
    assert path.read_bytes() == before


def test_every_exercise_cell_of_course_carries_the_stub_it_was_built_with():
    for path in sorted((ROOT / "course").glob("[0-9]*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        for exercise in notebook.metadata["course"]["exercises"]:
            cell = notebook.cells[reset.exercise_cell_index(notebook, exercise, path)]
            assert reset.recorded_stub(cell) == cell.source, (path.name, exercise)


def test_a_downloaded_copy_resets_from_itself_with_no_clone_beside_it(tmp_path):
    """What failed before: a chapter downloaded on its own, reset from a folder outside the
    repository, with no solutions/ anywhere near it."""
    path = answered_copy(tmp_path, folder="Downloads")
    assert not (tmp_path / "solutions").exists()
    done = subprocess.run(
        [sys.executable, "-m", "autograder", "reset", path.name, "unbroadcast"],
        cwd=path.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    cells = nbformat.read(path, as_version=4).cells
    assert fresh_stub("unbroadcast") in [cell.source for cell in cells]
    assert sum("my attempt" in cell.source for cell in cells) == 1  # matmul_vjp's stays


class FakeShell:
    """The IPython shell as check.reset sees it: its namespace and set_next_input."""

    def __init__(self, **user_ns: str) -> None:
        self.user_ns = user_ns
        self.next_inputs: list[tuple[str, bool]] = []

    def set_next_input(self, text: str, replace: bool = False) -> None:
        self.next_inputs.append((text, replace))


def test_check_reset_reads_the_chapter_in_the_working_folder_and_offers_a_new_cell(
    tmp_path, monkeypatch
):
    path = answered_copy(tmp_path, folder="Downloads")
    before = path.read_bytes()
    shell = FakeShell()
    monkeypatch.setattr(reset, "_shell", lambda: shell)
    monkeypatch.chdir(path.parent)
    stub = check.reset("unbroadcast")
    assert stub.source == fresh_stub("unbroadcast")
    assert shell.next_inputs == [(stub.source, False)]  # a new cell below; the old one stays
    assert stub.source in repr(stub) and "Colab" in repr(stub)
    assert "def unbroadcast(g: np.ndarray" in stub._repr_html_()
    assert path.read_bytes() == before  # the frontend owns the open file


def test_check_reset_follows_the_file_the_frontend_names(tmp_path, monkeypatch):
    path = answered_copy(tmp_path, folder="Downloads")
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    monkeypatch.setattr(reset, "_shell", lambda: FakeShell(__session__=str(path)))
    assert check.reset("matmul_vjp").source == fresh_stub("matmul_vjp")


def test_check_reset_on_colab_asks_the_frontend_for_the_open_notebook(tmp_path, monkeypatch):
    """Colab has no notebook file: the stub comes from `get_ipynb`, as Colab's tools ask for
    it. A stand-in for Colab's module: what Colab answers is not verified here."""
    live = nbformat.read(answered_copy(tmp_path, folder="Downloads"), as_version=4)
    message = types.ModuleType("google.colab._message")
    requests: list[str] = []

    def blocking_request(request_type: str, timeout_sec: float) -> dict:
        requests.append(request_type)
        return {"ipynb": json.loads(nbformat.writes(live))}

    message.blocking_request = blocking_request
    colab = types.ModuleType("google.colab")
    colab._message = message
    monkeypatch.setitem(sys.modules, "google.colab", colab)
    monkeypatch.setitem(sys.modules, "google.colab._message", message)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(reset, "_shell", lambda: None)
    assert check.reset("unbroadcast").source == fresh_stub("unbroadcast")
    assert requests == ["get_ipynb"]


@pytest.mark.parametrize(
    ("exercise", "message"),
    [
        ("unbroadcast", 'notebook="path/to/03_'),  # no notebook file to be found
        ("no_such_exercise", "There is no exercise called 'no_such_exercise'"),
    ],
)
def test_check_reset_says_what_to_do_when_it_cannot(tmp_path, monkeypatch, exercise, message):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(reset, "_shell", lambda: None)
    with pytest.raises(reset.ResetError, match=message):
        check.reset(exercise)


def test_check_reset_in_a_real_kernel_sends_the_stub_as_the_next_cell(tmp_path):
    """What JupyterLab receives: a set_next_input payload holding the stub (a new cell below
    the calling one) and the stub shown as the cell's result."""
    from jupyter_client.manager import start_new_kernel

    path = answered_copy(tmp_path, folder="Downloads")
    env = dict(os.environ, PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="3")
    manager, client = start_new_kernel(kernel_name="python3", env=env, cwd=str(path.parent))
    results: list[dict] = []
    try:
        reply = client.execute_interactive(
            'from autograder import check\ncheck.reset("matmul_vjp")',
            timeout=120,
            output_hook=lambda msg: (
                results.append(msg) if msg["msg_type"] == "execute_result" else None
            ),
        )
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert reply["content"]["status"] == "ok", reply["content"]
    payloads = [p for p in reply["content"]["payload"] if p["source"] == "set_next_input"]
    assert payloads == [
        {"source": "set_next_input", "text": fresh_stub("matmul_vjp"), "replace": False}
    ]
    assert "def matmul_vjp(" in results[0]["content"]["data"]["text/html"]
