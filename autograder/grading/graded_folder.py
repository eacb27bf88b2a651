"""A folder `grade` or `merge` wrote, read back: its gradebook (grades.csv) and each
submission's results.json, with its seed and chapter.

Regrading compares two such folders with this one reader, so a merged folder is read as a
single run's is; anything that does not fit what `grade` writes is refused with a message
saying what to do (Refused), never half-read. Standard library only: `grade` checks its
arguments before it imports the grader (start.py).
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder.grading import shards

GRADEBOOK = "grades.csv"
GRADEBOOK_COLUMNS = {"submission", "file", "chapter", "total", "problem", "grading_error"}
HEADLINE = 200  # characters of the new feedback's first line kept in the log


class Refused(ValueError):
    """The regrade cannot run as asked; the message says why and what to do."""


@dataclass(frozen=True)
class Mark:
    """One exercise of one graded submission, as its results.json holds it."""

    score: float
    max_score: float
    verdict: str  # "passed" or "failed"
    headline: str  # the feedback's first line


@dataclass(frozen=True)
class Graded:
    """One submission's row of a graded folder."""

    file: str
    folder: str
    total: float
    problem: str
    grading_error: str
    marks: dict[str, Mark] = field(default_factory=dict)


@dataclass(frozen=True)
class GradedRun:
    """A folder `grade` (or `merge`) wrote, read back: its seed, its chapter when all its
    rows share one, and its rows in the gradebook's order."""

    folder: Path
    seed: int
    assignment: str | None
    rows: list[Graded]


# ---------------------------------------------------------------- reading a graded folder


def read_graded(folder: Path) -> GradedRun:
    """A graded folder read back; Refused when it is not one `grade` or `merge` wrote."""
    gradebook = folder / GRADEBOOK
    if not folder.is_dir() or not gradebook.is_file():
        raise Refused(
            f"{folder} is not the output of `grade`: it holds no {GRADEBOOK}. Pass the --out "
            "folder of the run to regrade."
        )
    if (folder / shards.RECORD).exists():
        raise Refused(
            f"{folder} is one shard of a batch ({shards.RECORD}). Merge the shards first "
            "(`merge OUT SHARD_DIR...`) and regrade the merged folder."
        )
    table = _gradebook(gradebook)
    if not table:
        raise Refused(f"{gradebook} lists no submission: there is nothing to regrade.")
    rows, seeds = [], set()
    for row in table:
        graded, seed = _graded_row(folder, row)
        rows.append(graded)
        seeds.add(seed)
    if len(seeds) != 1:
        raise Refused(
            f"the submissions in {folder} were graded with different seeds "
            f"({', '.join(map(str, sorted(seeds)))}): it is not the output of one run."
        )
    chapters = {row["chapter"] for row in table if row["chapter"]}
    assignment = next(iter(chapters)) if len(chapters) == 1 else None
    return GradedRun(folder, seeds.pop(), assignment, rows)


def _gradebook(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as file:
        reader = csv.DictReader(file)
        if not set(reader.fieldnames or ()) >= GRADEBOOK_COLUMNS:
            raise Refused(
                f"{path} is not a gradebook `grade` wrote (its columns lack "
                f"{', '.join(sorted(GRADEBOOK_COLUMNS - set(reader.fieldnames or ())))})."
            )
        return list(reader)


def _graded_row(folder: Path, row: dict[str, str]) -> tuple[Graded, int]:
    stem = row["submission"]
    path = folder / stem / "results.json"
    if Path(stem).name != stem or not path.is_file():
        raise Refused(
            f"{folder} lacks {stem}/results.json, which its {GRADEBOOK} lists: the folder "
            "was changed after grading. Regrade from a complete folder."
        )
    try:
        results = json.loads(path.read_text(encoding="utf-8"))
        seed = results["extra_data"]["seed"]
        marks = {_exercise_name(t["name"]): _mark(t) for t in results["tests"]}
        total = float(row["total"])
    except (ValueError, TypeError, KeyError) as error:
        raise Refused(f"{path} is not results.json as `grade` writes it ({error}).") from None
    if not isinstance(seed, int):
        raise Refused(f"{path} records no seed: it is not results.json as `grade` writes it.")
    graded = Graded(row["file"], stem, total, row["problem"], row["grading_error"], marks)
    return graded, seed


def _exercise_name(test_name: str) -> str:
    """`unbroadcast (chapter 03)` -> `unbroadcast`: the test names results.json gives."""
    return re.sub(r" \(chapter [^()]*\)$", "", test_name)


def _mark(test: dict[str, Any]) -> Mark:
    return Mark(
        float(test["score"]),
        float(test["max_score"]),
        str(test["status"]),
        headline(str(test.get("output", ""))),
    )


def headline(text: str) -> str:
    """The first non-empty line of a feedback, short enough for one line of the log."""
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return line if len(line) <= HEADLINE else line[: HEADLINE - 3] + "..."
