"""The chapter 00 warm-up check: right answers written differently pass, and each wrong answer
fails with the hint that names it."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import numpy as np
import pytest

from autograder import check


def cube_vjp_product(g, x):
    return g * 3 * x**2


def cube_vjp_multiplied(g, x):
    return np.multiply(g, x * x) * 3


def cube_vjp_in_place(g, x):
    x *= x  # writes into its input: the check must hand out copies
    return 3 * g * x


@pytest.mark.parametrize("fn", [cube_vjp_product, cube_vjp_multiplied, cube_vjp_in_place])
def test_right_warmup_passes(fn):
    report = check.warmup_cube_vjp(fn)
    assert report.passed, str(report)


# The declared mistakes (derivative only, the demo's square copied, the power's factor
# forgotten) are run by tests/judging/test_mistakes.py.


def test_the_demo_copied_fails_with_the_hint_that_names_it():
    report = check.warmup_cube_vjp(lambda g, x: g * 2 * x)
    assert not report.passed
    assert "the demo's VJP, of y = x**2" in str(report), str(report)


def test_float64_upcast_is_a_dtype_error():
    report = check.warmup_cube_vjp(lambda g, x: g * np.float64(3.0) * x.astype(np.float64) ** 2)
    assert not report.passed
    assert "dtype" in str(report).lower(), str(report)


# ---------------------------------------------------------------- the notebook itself

ROOT = Path(__file__).resolve().parents[2]
STEM = "00_start_here.ipynb"
FOLDERS = [
    ROOT / "solutions",
    ROOT / "course",
    ROOT / "solutions" / "zh-CN",
    ROOT / "course" / "zh-CN",
]


def is_stub_of_the_warmup(text: str) -> bool:
    return (
        "def warmup_cube_vjp(g: np.ndarray, x: np.ndarray) -> np.ndarray:" in text
        and "raise NotImplementedError(" in text
        and "BEGIN SOLUTION" not in text
        and "3 * x**2" not in text.split('"""')[-1]  # the answer's line, after the docstring
    )


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_check_reset_gives_the_warmup_back_in_each_of_the_chapters_folders(folder, monkeypatch):
    # The notebook's cell runs where its notebook is: a solution notebook has no recorded stub,
    # and the Chinese one has no solutions/ folder beside it.
    monkeypatch.chdir(folder)
    stub = check.reset("warmup_cube_vjp")
    assert is_stub_of_the_warmup(stub.source), stub.source


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_chapter_00_runs_check_reset_on_the_warmup_and_shows_its_stub(folder):
    notebook = nbformat.read(folder / STEM, as_version=4)
    (cell,) = [c for c in notebook.cells if c.source == 'check.reset("warmup_cube_vjp")']
    shown = "".join(o.get("data", {}).get("text/plain", "") for o in cell.outputs)
    assert is_stub_of_the_warmup(shown), shown
    prose = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    assert 'check.reset("<' in prose  # taught in section 7, with the terminal's reset


def statement(cells: list, exercise: str) -> str:
    """The markdown cell just above the exercise's cell."""
    index = next(i for i, c in enumerate(cells) if f"def {exercise}(" in c.source)
    assert cells[index - 1].cell_type == "markdown"
    return cells[index - 1].source


@pytest.mark.parametrize(
    ("path", "headings"),
    [
        (ROOT / "solutions" / STEM, ["**Goal.**", "**Given.**", "**Return.**", "**Checked by.**"]),
        (
            ROOT / "solutions" / "zh-CN" / STEM,
            ["**目标。**", "**已知。**", "**返回。**", "**检查方式。**"],
        ),
    ],
    ids=["en", "zh-CN"],
)
def test_the_warmup_is_set_as_goal_given_return_checked_by(path, headings):
    text = statement(nbformat.read(path, as_version=4).cells, "warmup_cube_vjp")
    places = [text.find(heading) for heading in headings]
    assert all(place >= 0 for place in places) and places == sorted(places), text
    assert "check.warmup_cube_vjp(warmup_cube_vjp)" in text[places[-1] :]


def first_mentions_are_links(path: Path, names: list[str]) -> dict[str, str]:
    """For each name, the text around its first mention in the markdown (badges left out)
    where that mention is not a link's text."""
    cells = nbformat.read(path, as_version=4).cells
    prose = "\n".join(c.source for c in cells if c.cell_type == "markdown")
    prose = re.sub(r"<!-- badges:start -->.*?<!-- badges:end -->", "", prose, flags=re.S)
    unlinked = {}
    for name in names:
        match = re.search(rf"(?<![\w.]){re.escape(name)}(?![\w.])", prose)
        assert match, name
        if not re.match(rf"\[{re.escape(name)}\]\(https?://", prose[match.start() - 1 :]):
            unlinked[name] = prose[max(0, match.start() - 40) : match.end() + 40]
    return unlinked


def test_outside_names_are_linked_at_first_mention_and_no_reference_is_anonymous():
    path = ROOT / "solutions" / STEM
    assert first_mentions_are_links(path, ["TensorFlow", "JAX", "Binder", "Colab"]) == {}
    prose = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells)
    assert not re.search(r"a forum|well-known|every textbook|a Q&A", prose, flags=re.I)
