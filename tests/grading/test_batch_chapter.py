"""Without --assignment a batch is graded as the chapter most of its notebooks name: a
notebook of another chapter (chapter 00's one-line warm-up handed in for chapter 03, which
scored full marks, total equal to max) costs its own points."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from autograder.grading import command
from autograder.grading.start import batch_chapter
from autograder.grading.submissions import Notebook, Submission

from ..submissions import ROOT


def _named(*chapters: str | None) -> list[Submission]:
    return [
        Submission(Path(f"{i}.ipynb"), str(i), Notebook([], chapter))
        for i, chapter in enumerate(chapters)
    ]


def test_the_majority_chapter_is_taken_and_a_tie_is_refused():
    assert batch_chapter(_named("03", "03", "00", "99", None)) == ("03", "")
    assert batch_chapter(_named("99")) == (None, "")  # no chapter of this course: as before
    chapter, problem = batch_chapter(_named("03", "00"))
    assert chapter is None and "--assignment" in problem and "chapter 00: 1" in problem


@pytest.mark.e2e  # grades a batch of notebooks through the sandbox
def test_a_notebook_of_another_chapter_scores_0_without_assignment(tmp_path, capsys):
    paths = []
    for index in range(2):
        paths.append(tmp_path / f"student{index}.ipynb")
        shutil.copy(ROOT / "solutions" / "03_unbroadcasting.ipynb", paths[-1])
    paths.append(tmp_path / "warm_up.ipynb")
    shutil.copy(ROOT / "solutions" / "00_start_here.ipynb", paths[-1])
    out = tmp_path / "graded"
    assert command.grade(submissions=paths, out=out, jobs=2, seed=3, timeout=60) == 0
    with (out / "grades.csv").open(encoding="utf-8") as file:
        rows = {row["file"].rsplit("/", 1)[1]: row for row in csv.DictReader(file)}
    swapped = rows["warm_up.ipynb"]
    assert swapped["chapter"] == "03" and float(swapped["total"]) == 0, swapped
    assert float(swapped["max"]) == 2 and "chapter 00" in swapped["problem"], swapped
    assert all(float(rows[f"student{i}.ipynb"]["total"]) == 2 for i in range(2)), rows
    assert "grading as chapter 03" in capsys.readouterr().err
