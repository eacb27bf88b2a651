"""Code that switches the checks off from inside the child: refused by the grader's reading
of the source, and, where one interpreter allows it, stopped by the child's early binding."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import nbformat
import pytest

from autograder.grading import command, tampering
from autograder.grading import grade as grade_module
from autograder.grading.submissions import program_cells, read_notebook
from autograder.grading.tampering import read_findings

from ..submissions import GOOD_MATMUL, GOOD_UNBROADCAST, LEARNER_COPY, ROOT, fill
from ..tampering_attacks import STOPPED_BY_THE_CHILD, tampering_attacks

pytestmark = pytest.mark.e2e  # the tampering attacks, graded in every sandbox mode

WAYS_IN = [
    'import sys\nsys.modules["harness"].invoker = lambda *a, **k: (lambda fn, *args: fn(*args))',
    "import harness\nharness.ch01_chain_rule.invoke_per_example = lambda fn, *a: fn(*a)",
    "harness.method._refused = lambda o, l, u: o",
    "def unbroadcast(g, shape):\n    return harness.ch03_unbroadcasting.unbroadcast(g, shape)",
    "def f(g):\n    return sys._getframe(1).f_globals",
    "import gc\nobjects = gc.get_objects()",
    "import ctypes",
    "import __main__",
    "from importlib import import_module",
    "f = lambda: None\nf.__globals__['x'] = 1",
    "w = getattr(frame, 'f_back')",
    "exc = None\nframe = exc.__traceback__.tb_frame",
]


@pytest.mark.parametrize("source", WAYS_IN)
def test_each_way_into_the_interpreter_is_refused(source):
    found = read_findings(["import numpy as np", source])
    assert found and found[0].refused and found[0].cell == 2, found


@pytest.mark.parametrize(
    "source",
    [
        "y = eval('1 + 1')",
        "exec('x = 1')",
        "z = getattr(np, name)",
        "d = vars()",
        "d = f.__dict__",
    ],
)
def test_code_a_reading_cannot_follow_is_flagged_not_refused(source):
    found = read_findings([source])
    assert found and not any(f.refused for f in found), found


@pytest.mark.parametrize(
    "source",
    [
        'import sys\nif "google.colab" in sys.modules:\n    pass',
        "import gc\ngc.collect()",
        "import numpy as np\nx = getattr(np, 'float32')",
        "import inspect\nsig = inspect.signature(print)",
    ],
)
def test_what_the_course_and_its_learners_write_is_not_flagged(source):
    assert read_findings([source]) == []


def test_no_notebook_of_the_course_is_flagged():
    notebooks = [
        *ROOT.glob("solutions/*.ipynb"),
        *ROOT.glob("course/*.ipynb"),
        *ROOT.glob("course/zh-CN/*.ipynb"),
    ]
    assert len(notebooks) >= 27
    for path in notebooks:
        notebook, problem = read_notebook(path)
        assert not problem, problem
        assert read_findings(program_cells(notebook)[0]) == [], path


def test_the_install_cell_keeps_its_place_but_never_runs_in_the_grader():
    """In the grader the course is the grader: the first cell (it would run pip) is left
    empty, and the cells after it keep the numbers the feedback gives them. A copy that lost
    its tag (some hosts drop metadata) is still not refused by the reading: no `importlib`."""
    from autograder.authoring import coursemap

    notebook = nbformat.read(LEARNER_COPY, as_version=4)
    sources, _ = program_cells(notebook)
    kept = [
        cell
        for cell in notebook.cells
        if cell.cell_type == "code" and "display-only" not in cell.metadata.get("tags", [])
    ]
    assert "colab-setup" in kept[0].metadata["tags"] and kept[0].source.strip()
    assert sources == ["", *(cell.source for cell in kept[1:])]
    assert read_findings([coursemap.install_cell(ROOT)]) == []


def test_code_too_large_to_read_is_flagged():
    (finding,) = read_findings(["a = 1\n" * 200_000])
    assert not finding.refused and "too large" in finding.used


def _write(folder: Path, names: list[str]) -> list[Path]:
    learner = nbformat.read(LEARNER_COPY, as_version=4)
    attacks = tampering_attacks()
    paths = []
    for name in names:
        unbroadcast, extra = attacks.get(name, (GOOD_UNBROADCAST, []))
        path = folder / f"{name}.ipynb"
        nbformat.write(fill(learner, unbroadcast, GOOD_MATMUL, extra), path)
        paths.append(path)
    return paths


def _scores(out: Path) -> dict[str, tuple[float, float, str]]:
    with (out / "grades.csv").open(encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    return {
        row["submission"].split("-", 1)[1]: (
            float(row["unbroadcast"]),
            float(row["matmul_vjp"]),
            row["review"],
        )
        for row in rows
    }


def _grade(paths: list[Path], out: Path) -> int:
    return command.grade(submissions=paths, out=out, jobs=2, seed=11, timeout=60, assignment="03")


def test_the_reading_refuses_them_before_any_child_runs(tmp_path):
    names = ["honest", *tampering_attacks()]
    out = tmp_path / "graded"
    assert _grade(_write(tmp_path, names), out) == 0
    scores = _scores(out)
    assert scores["honest"][:2] == (1, 1) and scores["honest"][2] == ""
    for name in tampering_attacks():
        unbroadcast, matmul, review = scores[name]
        assert (unbroadcast, matmul) == (0, 0) and review.startswith("refused: cell"), name
    feedback = next(out.glob("*-switch_off_invoker/feedback.txt")).read_text()
    assert "Not graded: cell" in feedback and "sys.modules" in feedback
    payload = json.loads(next(out.glob("*-frame_walk/results.json")).read_text())
    assert payload["extra_data"]["review"], payload["extra_data"]


def test_with_the_reading_off_the_child_still_binds_its_checks_first(tmp_path, monkeypatch):
    """The layer under the reading: the invokes are bound and the harness hidden before the
    first submitted cell runs, so patching `harness` by name reaches nothing."""
    monkeypatch.setattr(grade_module, "read_findings", lambda cells: [])
    assert tampering.read_findings is read_findings  # only the grader's use is switched off
    names = ["honest", *STOPPED_BY_THE_CHILD]
    out = tmp_path / "graded"
    assert _grade(_write(tmp_path, names), out) == 0
    scores = _scores(out)
    assert scores["honest"][:2] == (1, 1)
    for name in STOPPED_BY_THE_CHILD:
        assert scores[name][:2] == (0, 1), (name, scores[name])
