"""`similarity`: planted copies among honest submissions of chapter 03 rank first.

Each submission is the learner copy with its exercise cells answered as a student answers
them, the stub's signature and docstring kept and the `raise NotImplementedError` line
replaced. Four honest students solve both exercises each their own way; one copies honest
student 2 with every name changed and comments added, one copies honest student 4 with its
independent statements in another order; two hand the stub back; one file is not a notebook.
"""

from __future__ import annotations

import copy
import csv
import textwrap
from pathlib import Path

import nbformat
import pytest

from autograder import cli
from autograder.grading.similarity_page import highlighted

ROOT = Path(__file__).resolve().parents[2]
LEARNER_COPY = ROOT / "course" / "03_unbroadcasting.ipynb"
TEMPLATES = sorted((ROOT / "course").rglob("03_*.ipynb"))
STUB_LINE = "    raise NotImplementedError("
HOSTILE = '# </pre><script>alert("x")</script>'

HONEST = {
    "honest1": (
        """
        leading = g.ndim - len(shape)
        summed = g.sum(axis=tuple(range(leading)))
        stretched = tuple(i for i, n in enumerate(shape) if n == 1 and summed.shape[i] != 1)
        return np.asarray(summed.sum(axis=stretched, keepdims=True))
        """,
        """
        g_a = g @ np.swapaxes(b, -1, -2)
        g_b = np.swapaxes(a, -1, -2) @ g
        return unbroadcast(g_a, a.shape), unbroadcast(g_b, b.shape)
        """,
    ),
    "honest2": (
        """
        out = g
        while out.ndim > len(shape):
            out = out.sum(axis=0)
        for axis, size in enumerate(shape):
            if size == 1 and out.shape[axis] != 1:
                out = out.sum(axis=axis, keepdims=True)
        return out
        """,
        """
        # the 2-D rule on the last two axes, then undo the batch broadcast
        grad_a = np.einsum("...ij,...kj->...ik", g, b)
        grad_b = np.einsum("...ki,...kj->...ij", a, g)
        if grad_a.shape != a.shape:
            grad_a = unbroadcast(grad_a, a.shape)
        if grad_b.shape != b.shape:
            grad_b = unbroadcast(grad_b, b.shape)
        return grad_a, grad_b
        """,
    ),
    "honest3": (
        """
        padded = (1,) * (g.ndim - len(shape)) + tuple(shape)
        axes = tuple(k for k, (p, m) in enumerate(zip(padded, g.shape)) if p == 1 and m != 1)
        return g.sum(axis=axes, keepdims=True).reshape(shape)
        """,
        """
        bt = np.moveaxis(b, -1, -2)
        at = np.moveaxis(a, -1, -2)
        return unbroadcast(np.matmul(g, bt), a.shape), unbroadcast(np.matmul(at, g), b.shape)
        """,
    ),
    "honest4": (
        """
        result = np.asarray(g)
        extra = result.ndim - len(shape)
        if extra > 0:
            result = np.add.reduce(result, axis=tuple(range(extra)))
        ones = [ax for ax in range(len(shape)) if shape[ax] == 1]
        if ones:
            result = np.add.reduce(result, axis=tuple(ones), keepdims=True)
        return result.astype(g.dtype)
        """,
        """
        nd_a, nd_b = a.ndim, b.ndim
        perm_b = list(range(nd_b - 2)) + [nd_b - 1, nd_b - 2]
        perm_a = list(range(nd_a - 2)) + [nd_a - 1, nd_a - 2]
        da = g @ b.transpose(perm_b)
        db = a.transpose(perm_a) @ g
        return unbroadcast(da, a.shape), unbroadcast(db, b.shape)
        """,
    ),
}
PLANTED = {
    # honest2 with every name changed and comments added (and an attempt at markup).
    "renamed": (
        f"""
        acc = g  # start from the cotangent
        while acc.ndim > len(shape):
            acc = acc.sum(axis=0)  # drop a leading axis
        for dim, n in enumerate(shape):
            if n == 1 and acc.shape[dim] != 1:
                acc = acc.sum(axis=dim, keepdims=True)
        {HOSTILE}
        return acc
        """,
        """
        cot_a = np.einsum("...ij,...kj->...ik", g, b)
        cot_b = np.einsum("...ki,...kj->...ij", a, g)
        if cot_a.shape != a.shape:
            cot_a = unbroadcast(cot_a, a.shape)
        if cot_b.shape != b.shape:
            cot_b = unbroadcast(cot_b, b.shape)
        return cot_a, cot_b
        """,
    ),
    # honest4 with its independent statements in another order.
    "reordered": (
        """
        ones = [ax for ax in range(len(shape)) if shape[ax] == 1]
        result = np.asarray(g)
        extra = result.ndim - len(shape)
        if extra > 0:
            result = np.add.reduce(result, axis=tuple(range(extra)))
        if ones:
            result = np.add.reduce(result, axis=tuple(ones), keepdims=True)
        return result.astype(g.dtype)
        """,
        """
        nd_b, nd_a = b.ndim, a.ndim
        perm_a = list(range(nd_a - 2)) + [nd_a - 1, nd_a - 2]
        db = a.transpose(perm_a) @ g
        perm_b = list(range(nd_b - 2)) + [nd_b - 1, nd_b - 2]
        da = g @ b.transpose(perm_b)
        return unbroadcast(da, a.shape), unbroadcast(db, b.shape)
        """,
    ),
}
COPIES = {frozenset({"renamed", "honest2"}), frozenset({"reordered", "honest4"})}
STUBS = ("stub1", "stub2")
EXERCISES = ("unbroadcast", "matmul_vjp")


def answered(learner: nbformat.NotebookNode, bodies: tuple[str, str]) -> nbformat.NotebookNode:
    """The learner copy with each exercise's stub line replaced by the body, as students do."""
    notebook = copy.deepcopy(learner)
    cells = [c for c in notebook.cells if "exercise" in c.metadata.get("tags", [])]
    assert len(cells) == len(bodies)
    for cell, body in zip(cells, bodies, strict=True):
        head, stub, _ = cell.source.partition(STUB_LINE)
        assert stub, "the learner copy's exercise cell lost its stub line"
        cell.source = head + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ")
    return notebook


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str]:
    folder = tmp_path_factory.mktemp("similarity")
    submissions = folder / "submissions"
    submissions.mkdir()
    learner = nbformat.read(LEARNER_COPY, as_version=4)
    for name, bodies in {**HONEST, **PLANTED}.items():
        nbformat.write(answered(learner, bodies), submissions / f"{name}.ipynb")
    for name in STUBS:
        nbformat.write(learner, submissions / f"{name}.ipynb")
    (submissions / "broken.ipynb").write_text('{"cells": [', encoding="utf-8")
    out = folder / "report"
    files = sorted(submissions.iterdir())
    options = ["--out", str(out), "--assignment", "03"]
    options += [arg for path in TEMPLATES for arg in ("--template", str(path))]
    code = cli.main(["similarity", *map(str, files), *options])
    return out, code, (out / "similarity.html").read_text(encoding="utf-8")


def rows(out: Path) -> list[dict[str, str]]:
    with (out / "similarity.csv").open(encoding="utf-8", newline="") as file:
        return list(csv.DictReader(file))


def student(folder_name: str) -> str:
    """`003-honest2` -> `honest2`: the report names submissions as `grade` names folders."""
    return folder_name.split("-", 1)[1]


def test_planted_copies_rank_above_every_honest_pair(report):
    out, code, _ = report
    assert code == 0
    table = rows(out)
    assert [float(row["similarity"]) for row in table] == sorted(
        (float(row["similarity"]) for row in table), reverse=True
    )
    for exercise in EXERCISES:
        ranked = [
            frozenset({student(row["submission_a"]), student(row["submission_b"])})
            for row in table
            if row["exercise"] == exercise
        ]
        assert set(ranked[:2]) == COPIES, (exercise, ranked[:4])
    planted = [
        row
        for row in table
        if frozenset(map(student, (row["submission_a"], row["submission_b"]))) in COPIES
    ]
    honest = [row for row in table if row not in planted]
    assert min(float(r["similarity"]) for r in planted) > 0.6
    assert max(float(r["similarity"]) for r in honest) < min(
        float(r["similarity"]) for r in planted
    )


def test_the_stub_handed_back_matches_nothing(report):
    out, _, page = report
    named = {student(row[side]) for row in rows(out) for side in ("submission_a", "submission_b")}
    assert not named & set(STUBS)
    for name in STUBS:
        assert f"{name}: no code beyond the handed-out notebook" in page


def test_an_unreadable_notebook_is_listed_not_a_crash(report):
    _, code, page = report
    assert code == 0
    assert "broken: unreadable: broken.ipynb is not a valid Jupyter notebook" in page


def test_the_page_escapes_submitted_code(report):
    _, _, page = report
    assert "<script" not in page
    assert html_escaped(HOSTILE) in page
    assert "src=" not in page and 'href="http' not in page  # no external assets


def html_escaped(text: str) -> str:
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )


def test_highlighting_clips_spans_it_is_given():
    assert highlighted("a<b>c", ((1, 4), (2, 9))) == "a<mark>&lt;b&gt;</mark><mark>c</mark>"
    assert highlighted("x", ()) == "x"


def test_without_the_template_the_stubs_would_match(tmp_path: Path):
    """What the template is for: the same two stubs, against a handed-out notebook whose
    exercise cells define the exercises without the stub's signature and docstring."""
    learner = nbformat.read(LEARNER_COPY, as_version=4)
    for name in STUBS:
        nbformat.write(learner, tmp_path / f"{name}.ipynb")
    bare = answered(learner, ("pass", "pass"))
    for cell in bare.cells:
        if "exercise" in cell.metadata.get("tags", []):
            cell.source = cell.source.partition("(")[0] + "(*args):\n    pass\n"
    nbformat.write(bare, tmp_path / "bare.ipynb")
    files = [str(tmp_path / f"{name}.ipynb") for name in STUBS]
    options = ["--out", str(tmp_path / "out"), "--template", str(tmp_path / "bare.ipynb")]
    assert cli.main(["similarity", *files, *options]) == 0
    table = rows(tmp_path / "out")
    assert {row["exercise"] for row in table} == set(EXERCISES)
    assert all(float(row["similarity"]) == 1.0 for row in table)


def test_a_graded_folder_names_submissions_as_its_gradebook_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    """--graded reads the files grades.csv lists (one gone since: listed) and writes into that
    folder; the chapter comes from the notebooks, the template from course/ where it runs."""
    monkeypatch.chdir(ROOT)
    learner = nbformat.read(LEARNER_COPY, as_version=4)
    for name in ("honest2", "renamed"):
        nbformat.write(answered(learner, {**HONEST, **PLANTED}[name]), tmp_path / f"{name}.ipynb")
    graded = tmp_path / "graded"
    graded.mkdir()
    with (graded / "grades.csv").open("w", encoding="utf-8", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["submission", "file", "chapter", "total"])
        for index, name in enumerate(("honest2", "renamed", "gone"), 1):
            writer.writerow([f"00{index}-{name}", tmp_path / f"{name}.ipynb", "03", "2"])
    assert cli.main(["similarity", "--graded", str(graded)]) == 0
    table = rows(graded)
    assert [(r["submission_a"], r["submission_b"]) for r in table] == [
        ("001-honest2", "002-renamed")
    ] * 2
    assert "003-gone: unreadable:" in capsys.readouterr().err
    assert cli.main(["similarity", str(tmp_path / "honest2.ipynb"), "--graded", str(graded)]) == 2


def test_refusals_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    """Exit 2, saying what to do: no submissions; a chapter that is not two digits (it names
    the template's files); no learner copy where it runs."""
    notebook = tmp_path / "honest1.ipynb"
    learner = nbformat.read(LEARNER_COPY, as_version=4)
    nbformat.write(answered(learner, HONEST["honest1"]), notebook)
    out = tmp_path / "out"
    assert cli.main(["similarity", "--out", str(out)]) == 2
    assert cli.main(["similarity", str(notebook), "--out", str(out), "--assignment", "*"]) == 2
    monkeypatch.chdir(tmp_path)  # no course/ here
    assert cli.main(["similarity", str(notebook), "--out", str(out)]) == 2
    assert "--template NOTEBOOK.ipynb" in capsys.readouterr().err
    assert not out.exists()
