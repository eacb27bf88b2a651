"""solutions/ -> course/: the stub generation, and the two folders being in sync."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from autograder.authoring import notebooks

ROOT = Path(__file__).resolve().parents[2]

SOLUTION_CELL = '''import numpy as np

def unbroadcast(g, shape):
    """Sum g back to shape."""
    ### BEGIN SOLUTION
    leading = g.ndim - len(shape)
    return g.sum(axis=tuple(range(leading)))
    ### END SOLUTION

print("after")'''


def test_solution_block_becomes_a_stub_naming_the_exercise():
    stripped = notebooks.strip_solutions(SOLUTION_CELL)
    assert "leading" not in stripped
    assert '    raise NotImplementedError("Exercise unbroadcast:' in stripped
    assert '"""Sum g back to shape."""' in stripped
    assert stripped.endswith('print("after")')
    compile(stripped, "cell", "exec")  # the learner copy is valid Python


def test_stub_raises_not_implemented_when_called():
    namespace: dict = {}
    exec(notebooks.strip_solutions(SOLUTION_CELL), namespace)
    with pytest.raises(NotImplementedError, match="Exercise unbroadcast"):
        namespace["unbroadcast"](None, ())


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("def f():\n    ### BEGIN SOLUTION\n    return 1\n", "never closed"),
        ("### BEGIN SOLUTION\nx = 1\n### END SOLUTION\n", "inside a `def`"),
        ("def f():\n    return 1\n    ### END SOLUTION\n", "without"),
    ],
)
def test_broken_markers_are_named(source, problem):
    with pytest.raises(notebooks.SolutionMarkerError, match=problem):
        notebooks.strip_solutions(source)


def test_learner_copy_clears_outputs_and_keeps_metadata():
    notebook = nbformat.v4.new_notebook(metadata={"course": {"chapter": "99"}})
    cell = nbformat.v4.new_code_cell(SOLUTION_CELL, execution_count=3)
    cell.outputs = [nbformat.v4.new_output("stream", text="after\n")]
    notebook.cells = [cell]
    copy = notebooks.learner_copy(notebook)
    assert copy.cells[0].outputs == [] and copy.cells[0].execution_count is None
    assert copy.metadata["course"] == {"chapter": "99"}
    assert notebook.cells[0].outputs, "the solution notebook itself is left untouched"


def test_every_solution_has_an_up_to_date_learner_copy():
    pairs = notebooks.pairs(ROOT / "solutions", ROOT / "course")
    assert pairs, "solutions/ holds no chapter notebooks"
    problems = [p for pair in pairs for p in notebooks.sync_problems(pair)]
    assert not problems, "\n".join(problems) + "\nRun `make course`."


def test_out_of_sync_copy_is_detected(tmp_path):
    pair = notebooks.pairs(ROOT / "solutions", ROOT / "course")[0]
    stale = nbformat.read(pair.learner, as_version=4)
    stale.cells[-1].source += "\n# edited by hand"
    nbformat.write(stale, tmp_path / pair.learner.name)
    problems = notebooks.sync_problems(notebooks.Pair(pair.solution, tmp_path / pair.learner.name))
    assert problems and "differ" in problems[0]


def test_no_checkpoints_or_caches_are_tracked():
    import subprocess

    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    junk = [p for p in tracked if ".ipynb_checkpoints" in p or "__pycache__" in p]
    assert not junk, junk


def _widget_notebook(model_id: str) -> nbformat.NotebookNode:
    """A notebook as nbclient leaves it: a widget's view in an output, its state (and a
    layout it references) in the metadata, timestamps in the cell's metadata."""
    layout = "f" * 32
    cell = nbformat.v4.new_code_cell(
        "slider", metadata={"execution": {"iopub.execute_input": "2026-11-26T06:00:00.000001Z"}}
    )
    cell.id = "slider"
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={"application/vnd.jupyter.widget-view+json": {"model_id": model_id}},
        )
    ]
    state = {model_id: {"state": {"layout": f"IPY_MODEL_{layout}"}}, layout: {"state": {}}}
    return nbformat.v4.new_notebook(
        cells=[cell],
        metadata={
            "widgets": {
                notebooks.WIDGET_STATE: {"state": state, "version_major": 2, "version_minor": 0}
            }
        },
    )


def test_a_rebuild_records_no_timestamps_and_the_same_widget_ids():
    first = notebooks.stable_widget_ids(_widget_notebook("a" * 32), "en/learner/00.ipynb")
    second = notebooks.stable_widget_ids(_widget_notebook("b" * 32), "en/learner/00.ipynb")
    assert nbformat.writes(first) == nbformat.writes(second)
    assert "a" * 32 not in nbformat.writes(first) and "f" * 32 not in nbformat.writes(first)
    other = notebooks.stable_widget_ids(_widget_notebook("a" * 32), "zh-CN/learner/00.ipynb")
    assert nbformat.writes(other) != nbformat.writes(first)
    cleaned = notebooks.without_run_records(_widget_notebook("a" * 32))
    assert cleaned.cells[0].metadata == {} and "widgets" not in cleaned.metadata


def test_no_generated_notebook_holds_execution_timestamps():
    folders = [
        ROOT / "solutions",
        ROOT / "course",
        ROOT / "solutions" / "zh-CN",
        ROOT / "course" / "zh-CN",
    ]
    timed = [
        f"{path.relative_to(ROOT)} cell {index}"
        for folder in folders
        for path in sorted(folder.glob("[0-9]*.ipynb"))
        for index, cell in enumerate(nbformat.read(path, as_version=4).cells)
        if "execution" in cell.metadata
    ]
    assert not timed, (
        f"{len(timed)} cells keep execution timestamps, e.g. {timed[:3]}: "
        "rebuild them with `make course`"
    )


def test_a_cells_printing_is_stored_as_one_stream_however_the_kernel_flushed_it(tmp_path):
    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                "import time\nprint('a', flush=True)\ntime.sleep(0.2)\nprint('b', flush=True)\n"
                "time.sleep(0.2)\nprint('c')"
            )
        ]
    )
    outputs = notebooks.execute(notebook, tmp_path).cells[0].outputs
    assert [(o.name, o.text) for o in outputs] == [("stdout", "a\nb\nc\n")]
