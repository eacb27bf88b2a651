"""Every exercise with a cell of its own is stated as Goal / Given / Return / Checked by, in this
order, in both editions, with one Chinese heading for each (目标, 已知, 返回, 检查方式:
docs/zh-CN/terminology.toml). Chapter 02's nineteen rules share one statement, above the first."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
HEADINGS = {
    "en": ["**Goal.**", "**Given.**", "**Return.**", "**Checked by.**"],
    "zh-CN": ["**目标。**", "**已知。**", "**返回。**", "**检查方式。**"],
}
CHAPTERS = ("00", "01", "02", "03", "04", "05", "06", "07", "08")
EDITIONS = {"en": ROOT / "solutions", "zh-CN": ROOT / "solutions" / "zh-CN"}


def statement(cells: list, exercise: str, goal: str) -> str:
    """The markdown that sets `exercise`: the cells above its `def`, back to the one that opens
    with its goal (a demo's code cell may stand between)."""
    index = next(
        i for i, c in enumerate(cells) if c.cell_type == "code" and f"def {exercise}(" in c.source
    )
    text: list[str] = []
    for cell in reversed(cells[:index]):
        if cell.cell_type == "markdown":
            text.insert(0, cell.source)
            if goal in cell.source:
                break
    return "\n".join(text)


def exercises_with_a_cell(chapter: str) -> list[tuple[str, str]]:
    path = next((ROOT / "solutions").glob(f"{chapter}_*.ipynb"))
    notebook = nbformat.read(path, as_version=4)
    return [
        (path.name, name)
        for name in notebook.metadata["course"]["exercises"]
        if any(f"def {name}(" in c.source for c in notebook.cells if c.cell_type == "code")
    ]


@pytest.mark.parametrize("language", sorted(HEADINGS))
@pytest.mark.parametrize(
    ("notebook", "exercise"),
    [pair for chapter in CHAPTERS for pair in exercises_with_a_cell(chapter)],
)
def test_each_exercise_is_set_as_goal_given_return_checked_by(notebook, exercise, language):
    headings = HEADINGS[language]
    cells = nbformat.read(EDITIONS[language] / notebook, as_version=4).cells
    text = statement(cells, exercise, headings[0])
    places = [text.find(heading) for heading in headings]
    assert all(place >= 0 for place in places) and places == sorted(places), (exercise, text)
