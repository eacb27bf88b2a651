"""Adding an exercise is two files (docs/maintainer-guide.md, "Adding an exercise").

A copy of the package gets a new chapter 03 exercise, `sum_rows_vjp` (the VJP of
np.sum(x, axis=0)), by editing exactly two files there: the chapter's exercise module
(an Exercise appended, with its TensorFlow and JAX references) and a copy of the chapter's
solution notebook (its exercise and check cells). With that copy first on sys.path, the
notebook check passes a right answer and fails a wrong one with its mistake's hint, and the
grader scores the new exercise in the copied solution notebook and in a wrong copy of it:
nothing else (harness, tables, warm groups) had to be touched.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
MODULE = Path("autograder") / "exercises" / "ch03_unbroadcasting.py"
NOTEBOOK = Path("solutions") / "03_unbroadcasting.ipynb"

# The new exercise, as a maintainer appends it to the chapter's exercise module.
DECLARATION = '''

# ---------------------------------------------------------------- sum_rows_vjp


@st.composite
def _sum_rows_case(draw: st.DrawFn, profile: Profile) -> Case:
    shape = draw(shape_menu(profile, ((3,), (2, 3), (1, 4), (4, 1, 2)), ((5, 2, 3),)))
    dtype = draw(dtypes())
    return Case((("g", draw(float_arrays(dtype, shape[1:]))),
                 ("x", draw(float_arrays(dtype, shape)))))


def _sum_rows_edges() -> list[Case]:
    x = np.array([1.0, -2.0, 3.0], np.float32)
    return [Case((("g", np.array(0.5, np.float32)), ("x", x)), label="a vector: g is 0-d")]


def _sum_rows_tf(tf: Any, case: Case) -> tuple[np.ndarray]:
    g, x = (tf.constant(v) for v in case.values())
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(x, axis=0)
    return (tape.gradient(y, x, output_gradients=g).numpy(),)


def _sum_rows_jax(jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> tuple:
    _, vjp = jax.vjp(lambda x: jax.numpy.sum(x, axis=0), arrays["x"])
    return vjp(arrays["g"])


def _sum_rows_ignores_cotangent(g: np.ndarray, x: np.ndarray) -> np.ndarray:
    return np.ones_like(x)


SUM_ROWS_VJP = Exercise(
    name="sum_rows_vjp",
    returns="ndarray",
    outputs=("grad_x",),
    strategy=_sum_rows_case,
    edge_cases=_sum_rows_edges,
    tf_reference=_sum_rows_tf,
    jax_reference=_sum_rows_jax,
    references_text="jax.vjp and tf.GradientTape of a sum over axis 0",
    mistakes=(
        Mistake("ignores_cotangent", "Your result does not depend on the values in g: every "
                "row of x gets the cotangent g itself.", _sum_rows_ignores_cotangent),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised.",
        "value": "Each row of x contributed once to the sum: its cotangent is g.",
    },
)

EXERCISES = (UNBROADCAST, MATMUL_VJP, SUM_ROWS_VJP)
'''
SOLUTION = '''def sum_rows_vjp(g: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The cotangent of x for y = np.sum(x, axis=0), given y's cotangent g."""
    ### BEGIN SOLUTION
    return np.broadcast_to(g, x.shape).copy()
    ### END SOLUTION
'''
WRONG = SOLUTION.replace("np.broadcast_to(g, x.shape).copy()", "np.ones_like(x)")

# Run in a subprocess with the copy first on sys.path: the notebook check on a right and a
# wrong answer, the solution cell taken from the copied notebook.
CHECK = '''
import sys
from pathlib import Path

import nbformat
import numpy as np

import autograder
from autograder import check
from autograder.exercises import EXERCISES, for_chapter
from autograder.judging.exercise import declaration_problems

copy = Path(sys.argv[1])
assert Path(autograder.__file__).is_relative_to(copy), autograder.__file__
assert [e.name for e in for_chapter("03")][-1] == "sum_rows_vjp"
assert declaration_problems(EXERCISES.values()) == []
notebook = nbformat.read(copy / "solutions" / "03_unbroadcasting.ipynb", as_version=4)
(cell,) = [c.source for c in notebook.cells if c.source.startswith("def sum_rows_vjp")]
namespace = {"np": np}
exec(cell, namespace)
right = check.sum_rows_vjp(namespace["sum_rows_vjp"])
assert right.passed, right
wrong = check.sum_rows_vjp(lambda g, x: np.ones_like(x))
assert not wrong.passed and "every row of x gets the cotangent g" in str(wrong), wrong
print("checked")
'''


def _copy_of_the_course(folder: Path) -> Path:
    """The package and the chapter's solution notebook, as a checkout has them."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "autograder", folder / "autograder", ignore=ignore)
    (folder / "solutions").mkdir()
    shutil.copy2(ROOT / NOTEBOOK, folder / NOTEBOOK)
    shutil.copy2(ROOT / "pyproject.toml", folder / "pyproject.toml")
    return folder


def _add_the_exercise(copy: Path) -> None:
    """The two edits: the exercise module, and the solution notebook (exercise cell, check
    cell, and the name in the notebook's list of exercises)."""
    module = copy / MODULE
    source = module.read_text()
    imports = "from autograder.judging.cases import Case, Profile, dtypes, float_arrays\n"
    assert source.count(imports) == 1 and source.count("\nEXERCISES = ") == 1
    source = source.replace(imports, imports.replace("float_arrays", "float_arrays, shape_menu"))
    module.write_text(source.replace("\nEXERCISES = (UNBROADCAST, MATMUL_VJP)\n", DECLARATION))

    notebook = nbformat.read(copy / NOTEBOOK, as_version=4)
    (after,) = [i for i, c in enumerate(notebook.cells)
                if c.source.strip() == "check.matmul_vjp(matmul_vjp)"]
    notebook.cells[after + 1:after + 1] = [
        nbformat.v4.new_code_cell(SOLUTION, metadata={"tags": ["exercise"]}),
        nbformat.v4.new_code_cell("check.sum_rows_vjp(sum_rows_vjp)")]
    notebook.metadata["course"]["exercises"].append("sum_rows_vjp")
    nbformat.write(notebook, copy / NOTEBOOK)


def _in_the_copy(copy: Path, *args: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": str(copy)}
    return subprocess.run([sys.executable, *args], cwd=copy, env=environment, text=True,
                          capture_output=True, timeout=240)


def test_an_exercise_added_in_two_files_is_checked_and_graded(tmp_path):
    before = _copy_of_the_course(tmp_path / "before")
    copy = tmp_path / "course"
    shutil.copytree(before, copy)
    _add_the_exercise(copy)
    changed = {path.relative_to(copy) for path in copy.rglob("*") if path.is_file()
               and path.read_bytes() != (before / path.relative_to(copy)).read_bytes()}
    assert changed == {MODULE, NOTEBOOK}

    checked = _in_the_copy(copy, "-c", CHECK, str(copy))
    assert checked.returncode == 0 and "checked" in checked.stdout, checked.stderr[-4000:]

    wrong = nbformat.read(copy / NOTEBOOK, as_version=4)
    (index,) = [i for i, c in enumerate(wrong.cells) if c.source == SOLUTION]
    wrong.cells[index].source = WRONG
    nbformat.write(wrong, tmp_path / "wrong.ipynb")
    graded = _in_the_copy(copy, "-m", "autograder", "grade", str(copy / NOTEBOOK),
                          str(tmp_path / "wrong.ipynb"), "--out", str(tmp_path / "out"),
                          "--reference-cache", str(tmp_path / "cache"), "--unsafe-no-sandbox",
                          "--jobs", "2")
    assert graded.returncode == 0, graded.stderr[-4000:]
    scores = {}
    for results in (tmp_path / "out").glob("*/results.json"):
        tests = json.loads(results.read_text())["tests"]
        scores[results.parent.name.split("-", 1)[1]] = {
            t["name"]: (t["score"], t["output"]) for t in tests}
    solution, wrong_scores = scores["03_unbroadcasting"], scores["wrong"]
    name = "sum_rows_vjp (chapter 03)"
    assert [score for score, _ in solution.values()] == [1.0, 1.0, 1.0], solution
    assert wrong_scores[name][0] == 0.0, wrong_scores
    assert "every row of x gets the cotangent g" in wrong_scores[name][1], wrong_scores
    assert wrong_scores["unbroadcast (chapter 03)"][0] == 1.0, wrong_scores
