"""Adding an exercise, as docs/maintainer-guide.md ("Adding an exercise") walks it.

In a copy of the repository, a maintainer adds `mean_rows_vjp` (the VJP of
`np.mean(x, axis=0)`) to chapter 03 by editing the two sources, the solution notebook (a
markdown cell, the exercise cell, its check cell) and the exercise module (the Exercise), then
runs `python -m autograder sync 03`. Sync writes the new messages into ch03.po and a section
holding the English into the chapter's translation, builds the English notebooks, says what
is left (the Chinese) and exits 1. The maintainer writes the Chinese in the two files it names
and runs sync again, which leaves the English notebooks as they are (their inputs have not
changed since the first sync built them), builds the Chinese edition and exits 0. Then exactly
the files the guide names have changed, and the exercise's tests, the check (in both languages), the
grader (both editions) and the sync check pass, in the copy.

The exercise is written once, in the block marked "the exercise, in one place": moving it to
another declaration form changes that block only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from babel.messages.pofile import read_po, write_po

from tests import warm_kernels

pytestmark = pytest.mark.e2e  # copies the repository, runs sync and builds notebooks

ROOT = Path(__file__).resolve().parents[2]
MODULE = Path("autograder/exercises/ch03_unbroadcasting.py")
NOTEBOOK = Path("solutions/03_unbroadcasting.ipynb")
MESSAGES = Path("autograder/locale/zh-CN/ch03.po")
PROSE = Path("translations/zh-CN/03_unbroadcasting.md")
GENERATED = {
    Path("course/03_unbroadcasting.ipynb"),
    Path("solutions/zh-CN/03_unbroadcasting.ipynb"),
    Path("course/zh-CN/03_unbroadcasting.ipynb"),
}
COPIED = (
    "autograder",
    "coursekit",
    "benchmarks",
    "solutions",
    "course",
    "translations",
    "tests",
    "etc",
    "pyproject.toml",
    "README.md",
    "README.zh-CN.md",
)

# ------------------------------------------------------------------ the exercise, in one place
NAME = "mean_rows_vjp"
IMPORT = "from autograder.judging.cases import shape_menu\n"
DECLARATION = """

# ---------------------------------------------------------------- mean_rows_vjp


@st.composite
def _mean_rows_case(draw: st.DrawFn, profile: Profile) -> Case:
    shape = draw(shape_menu(profile, ((3,), (2, 3), (1, 4), (4, 1, 2)), ((5, 2, 3),)))
    dtype = draw(dtypes())
    return Case((("g", draw(float_arrays(dtype, shape[1:]))),
                 ("x", draw(float_arrays(dtype, shape)))))


def _mean_rows_edges() -> list[Case]:
    x = np.array([[1.0, -2.0], [3.0, 4.0], [0.5, 0.0]], np.float32)
    return [Case((("g", np.array([0.5, -1.5], np.float32)), ("x", x)), label="three rows of two")]


MEAN_ROWS_VJP = Exercise(
    signature="mean_rows_vjp(g, x) -> ndarray",
    outputs=("grad_x",),
    cases=_mean_rows_case,
    edges=_mean_rows_edges,
    reference=vjp_reference(lambda xp, x: xp.mean(x, axis=0), wrt=("x",)),
    references_text="jax.vjp and tf.GradientTape of a mean over axis 0",
    mistakes=(
        Mistake("as_sum", "You gave every row the cotangent g itself: that is the VJP of a "
                "sum. A mean divides by the number of rows, and so does its VJP.",
                lambda g, x: np.broadcast_to(g, x.shape).copy()),
    ),
    hints_by_kind={
        "error": "The traceback names the line of your code that raised.",
        "value": "Each row of x counts 1/n in the mean: its cotangent is g / n.",
    },
)

EXERCISES = (*EXERCISES, MEAN_ROWS_VJP)
"""
PROSE_CELL = (
    "### Exercise 3: `mean_rows_vjp`\n\nWrite `mean_rows_vjp(g, x)`: the cotangent of "
    "`x` for `y = np.mean(x, axis=0)`, given the cotangent `g` of `y`."
)
SOLUTION = '''def mean_rows_vjp(g: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The cotangent of x for y = np.mean(x, axis=0), given y's cotangent g."""
    ### BEGIN SOLUTION
    return np.broadcast_to(g / x.shape[0], x.shape).copy()
    ### END SOLUTION
'''
WRONG = SOLUTION.replace(
    "np.broadcast_to(g / x.shape[0], x.shape).copy()", "np.broadcast_to(g, x.shape).copy()"
)
# Chapter 03's translation has code sections, so the new cell's docstring gets one too.
DOCSTRING = '"""The cotangent of x for y = np.mean(x, axis=0), given y\'s cotangent g."""'
CHINESE_DOCSTRING = '"""已知 y = np.mean(x, axis=0) 中 y 的余切向量 g，求 x 的余切向量。"""'
CHINESE = {  # what the maintainer writes in ch03.po
    "You gave every row the cotangent g itself: that is the VJP of a sum. A mean divides by the "
    "number of rows, and so does its VJP.": "你给每一行的余切向量都是 g 本身：那是求和的 VJP。"
    "均值要除以行数，它的 VJP 也一样。",
    "The traceback names the line of your code that raised.": "回溯信息指出了你的代码中"
    "出错的那一行。",
    "Each row of x counts 1/n in the mean: its cotangent is g / n.": "x 的每一行在均值里占 1/n："
    "它的余切向量是 g / n。",
    "three rows of two": "三行，每行两个",
    "jax.vjp and tf.GradientTape of a mean over axis 0": "沿轴 0 求均值的 jax.vjp 和 "
    "tf.GradientTape",
}
CHINESE_PROSE = (
    "### 练习 3：`mean_rows_vjp`\n\n写出 `mean_rows_vjp(g, x)`：已知 "
    "`y = np.mean(x, axis=0)` 的余切向量 `g`，求 `x` 的余切向量。"
)
WRONG_HINT = {"en": "that is the VJP of a sum", "zh-CN": "那是求和的 VJP"}
SOLUTIONS = {  # the exercise cell as each edition shows it, answered right and wrong
    "en": (SOLUTION, WRONG),
    "zh-CN": tuple(cell.replace(DOCSTRING, CHINESE_DOCSTRING) for cell in (SOLUTION, WRONG)),
}
# ------------------------------------------------------------------


def copy_of_the_repository(folder: Path) -> Path:
    """What a checkout holds, without caches, virtual environments or build outputs."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints")
    folder.mkdir()
    for name in COPIED:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, folder / name, ignore=ignore)
        elif (ROOT / name).exists():
            shutil.copy2(ROOT / name, folder / name)
    return folder


def edit_the_sources(copy: Path) -> None:
    """The maintainer's edits: the Exercise in the module; the prose, exercise and check
    cells in the solution notebook, after the last exercise's check."""
    module = copy / MODULE
    source = module.read_text()
    anchor = "from autograder.judging.exercise import"
    assert source.count(anchor) == 1, "the module's imports moved: update IMPORT's anchor"
    module.write_text(source.replace(anchor, IMPORT + anchor) + DECLARATION)
    notebook = nbformat.read(copy / NOTEBOOK, as_version=4)
    (after,) = [
        i
        for i, cell in enumerate(notebook.cells)
        if cell.source.strip() == "check.matmul_vjp(matmul_vjp)"
    ]
    notebook.cells[after + 1 : after + 1] = [
        nbformat.v4.new_markdown_cell(PROSE_CELL),
        nbformat.v4.new_code_cell(SOLUTION, metadata={"tags": ["exercise"]}),
        nbformat.v4.new_code_cell(f"check.{NAME}({NAME})"),
    ]
    nbformat.write(notebook, copy / NOTEBOOK)


def write_the_chinese(copy: Path) -> None:
    """The maintainer's translations: each new message's msgstr, and the new cell's section."""
    with (copy / MESSAGES).open("rb") as handle:
        catalogue = read_po(handle)
    untranslated = [message for message in catalogue if message.id and not message.string]
    assert {str(message.id) for message in untranslated} == set(CHINESE)
    for message in untranslated:
        message.string = CHINESE[str(message.id)]
    with (copy / MESSAGES).open("wb") as handle:
        write_po(handle, catalogue, width=100, omit_header=True, sort_output=False)
    prose = (copy / PROSE).read_text(encoding="utf-8")
    assert prose.count(PROSE_CELL) == 1, "sync left no section holding the new cell's English"
    prose = prose.replace(PROSE_CELL, CHINESE_PROSE)
    stub = f"```python zh-CN\n{DOCSTRING}\n```"
    assert prose.count(stub) == 1, "sync left no section holding the new docstring's English"
    prose = prose.replace(stub, f"```python zh-CN\n{CHINESE_DOCSTRING}\n```")
    (copy / PROSE).write_text(prose, encoding="utf-8")


def in_the_copy(copy: Path, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    # sync's kernels forked from this worker's server where it has one (the copy's PYTHONPATH
    # puts the copy first on their sys.path)
    environment = warm_kernels.with_warm_python3({**os.environ, "PYTHONPATH": str(copy)})
    return subprocess.run(
        [sys.executable, *args],
        cwd=copy,
        env=environment,
        text=True,
        capture_output=True,
        timeout=timeout,
    )


def changed_files(before: Path, after: Path) -> set[Path]:
    """The files whose content differs; a .po file by its entries (their order follows the
    code that says them, which other changes may have moved)."""
    return {
        path.relative_to(after)
        for path in after.rglob("*")
        if path.is_file()
        and "__pycache__" not in path.parts
        and _content(path) != _content(before / path.relative_to(after))
    }


def _content(path: Path) -> object:
    if not path.exists():
        return None
    if path.suffix == ".po":
        with path.open("rb") as handle:
            return {str(message.id): str(message.string) for message in read_po(handle)}
    return path.read_bytes()


CHECK = f'''"""The check of {NAME} in both languages, in the copy: written there by
tests/exercises/test_adding_an_exercise.py and run in the same pytest as the exercise's tests
(one interpreter importing the frameworks once)."""

from pathlib import Path

import nbformat
import numpy as np

import autograder
from autograder import check

COPY = Path(__file__).resolve().parents[2]


def test_{NAME}_is_checked_in_both_languages():
    assert Path(autograder.__file__).is_relative_to(COPY), autograder.__file__
    notebook = nbformat.read(COPY / {str(NOTEBOOK)!r}, as_version=4)
    (cell,) = [c.source for c in notebook.cells if c.source.startswith("def {NAME}")]
    namespace = {{"np": np}}
    exec(cell, namespace)
    right = check.{NAME}(namespace["{NAME}"])
    assert right.passed, right
    try:
        for language, hint in {WRONG_HINT!r}.items():
            check.language(language)
            wrong = check.{NAME}(lambda g, x: np.broadcast_to(g, x.shape).copy())
            assert not wrong.passed and hint in str(wrong), (language, str(wrong))
    finally:
        check.language("en")
'''
CHECK_FILE = Path(f"tests/exercises/test_walk_checks_{NAME}.py")


def graded_scores(copy: Path, tmp_path: Path) -> dict[str, dict[str, tuple[float, str]]]:
    """The grader over the copied solutions of both editions and a wrong copy of each."""
    submissions = []
    for edition in (NOTEBOOK, Path("solutions/zh-CN/03_unbroadcasting.ipynb")):
        notebook = nbformat.read(copy / edition, as_version=4)
        language = notebook.metadata["course"]["language"]
        nbformat.write(notebook, tmp_path / f"right_{language}.ipynb")
        solution, wrong = SOLUTIONS[language]
        (index,) = [i for i, c in enumerate(notebook.cells) if c.source == solution]
        notebook.cells[index].source = wrong
        nbformat.write(notebook, tmp_path / f"wrong_{language}.ipynb")
        submissions += [tmp_path / f"right_{language}.ipynb", tmp_path / f"wrong_{language}.ipynb"]
    graded = in_the_copy(
        copy,
        "-m",
        "autograder",
        "grade",
        *map(str, submissions),
        "--out",
        str(tmp_path / "out"),
        "--reference-cache",
        str(tmp_path / "cache"),
        "--unsafe-no-sandbox",
        "--jobs",
        "2",
    )
    assert graded.returncode == 0, graded.stderr[-4000:]
    scores = {}
    for results in (tmp_path / "out").glob("*/results.json"):
        tests = json.loads(results.read_text())["tests"]
        scores[results.parent.name.split("-", 1)[1]] = {
            t["name"]: (t["score"], t["output"]) for t in tests
        }
    return scores


def test_an_exercise_added_as_the_guide_says_is_synced_checked_and_graded(tmp_path):
    before = copy_of_the_repository(tmp_path / "before")
    copy = tmp_path / "repository"
    shutil.copytree(before, copy)
    edit_the_sources(copy)

    first = in_the_copy(copy, "-m", "autograder", "sync", "03")
    assert first.returncode == 1, first.stdout + first.stderr[-4000:]
    assert (
        f"{len(CHINESE)} message(s) have no Chinese yet: translate them in "
        "autograder/locale/zh-CN/ch03.po"
    ) in first.stdout, first.stdout
    assert f"{PROSE}: cell" in first.stdout and "still in English" in first.stdout
    assert "The Chinese edition" in first.stdout and "was not built" in first.stdout
    assert changed_files(before, copy) == {
        MODULE,
        NOTEBOOK,
        MESSAGES,
        PROSE,
        Path("course/03_unbroadcasting.ipynb"),
    }
    assert nbformat.read(copy / NOTEBOOK, as_version=4).metadata["course"]["exercises"] == [
        "unbroadcast",
        "matmul_vjp",
        NAME,
    ]  # written from the module's EXERCISES

    write_the_chinese(copy)
    second = in_the_copy(copy, "-m", "autograder", "sync", "03")
    assert second.returncode == 0, second.stdout + second.stderr[-4000:]
    assert "chapter 03 is complete" in second.stdout
    unchanged = f"{NOTEBOOK} and its learner copy: unchanged since its last build"
    assert unchanged in second.stdout, second.stdout  # the Chinese is no input of the English
    assert "executing the Chinese edition" in second.stdout, second.stdout
    assert changed_files(before, copy) == {MODULE, NOTEBOOK, MESSAGES, PROSE} | GENERATED

    chinese = nbformat.read(copy / "solutions/zh-CN/03_unbroadcasting.ipynb", as_version=4)
    (checked,) = [c for c in chinese.cells if c.source == f"check.{NAME}({NAME})"]
    assert re.search(r"[\u4e00-\u9fff]", json.dumps(checked.outputs, ensure_ascii=False))
    assert CHINESE_PROSE in [c.source for c in chinese.cells]

    (copy / CHECK_FILE).write_text(CHECK)  # run with the tests below, after them
    tests = in_the_copy(
        copy,
        "-m",
        "pytest",
        "-q",
        "-x",
        "-rp",
        "tests/locale/test_catalogue.py",
        "tests/authoring/test_translations.py",
        "tests/exercises/test_exercise_chapters.py",
        "tests/judging/test_fallback_hints.py",
        "tests/architecture/test_code_in_strings.py",
        "tests/authoring/test_notebook_pipeline.py::test_every_solution_has_an_up_to_date_learner_copy",
        "tests/judging/test_mistakes.py",
        str(CHECK_FILE),
        "-k",
        f"{NAME} or not test_mistakes",
    )
    assert tests.returncode == 0, tests.stdout[-6000:]
    assert f"PASSED {CHECK_FILE}::test_{NAME}_is_checked_in_both_languages" in tests.stdout, (
        tests.stdout[-6000:]
    )
    synced = in_the_copy(copy, "-m", "autograder", "check-sync")
    assert synced.returncode == 0, synced.stderr

    scores = graded_scores(copy, tmp_path)
    name = f"{NAME} (chapter 03)"
    for language, hint in WRONG_HINT.items():
        assert {score for score, _ in scores[f"right_{language}"].values()} == {1.0}, scores
        assert len(scores[f"right_{language}"]) == 3, scores
        wrong = scores[f"wrong_{language}"]
        assert wrong[name][0] == 0.0 and hint in wrong[name][1], wrong
        assert wrong["unbroadcast (chapter 03)"][0] == 1.0, wrong
