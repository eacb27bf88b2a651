"""How long each check cell takes on its first run, in a fresh kernel running the notebook:
`python -m benchmarks.first_checks [--chapters 05,06] [--json]`.

A learner opens a chapter and runs it from the top: every check cell is a first check in
that kernel. Each solution notebook (solutions/, the course's right answers) is executed
with nbclient in a fresh kernel of this environment, timing each cell from the kernel's
own timestamps (execute_input to execute_reply), so the time is the cell's, not the
kernel's start. `make bench` (section 1c) runs it after `make lab`'s warm-up, which is
what a learner has, and judges the slowest check cell of all chapters against
FIRST_CHECK_TARGET_SECONDS.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
FIRST_CHECK_TARGET_SECONDS = 1.0
# A check cell calls the course's check of an exercise. check.hint, check.reset and
# check.progress are not checks; neither are check.predict (it records a guess) and
# check.reveal (it compares the guess with what the demonstration above it in the same cell
# computed, so that cell's time is the demonstration's). A call inside a function or a loop is
# part of a demonstration.
NOT_CHECKS = ("hint", "reset", "progress", "predict", "reveal")
CHECK_CALL = re.compile(r"^check\.(?!(?:" + "|".join(NOT_CHECKS) + r")\b)(\w+)\(", re.MULTILINE)


def check_cells(notebook: nbformat.NotebookNode) -> dict[int, str]:
    """Index of each code cell that runs a check -> the exercise it checks (the first)."""
    found = {}
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code" and (match := CHECK_CALL.search(cell.source)):
            found[index] = match.group(1)
    return found


def cell_seconds(cell: nbformat.NotebookNode) -> float:
    """The cell's run as the kernel timed it (nbclient's record_timing metadata)."""
    timing = cell.metadata["execution"]
    started = datetime.fromisoformat(timing["iopub.execute_input"].replace("Z", "+00:00"))
    replied = datetime.fromisoformat(timing["shell.execute_reply"].replace("Z", "+00:00"))
    return (replied - started).total_seconds()


def measure(notebook_path: Path) -> list[dict[str, Any]]:
    """Run one notebook from the top in a fresh kernel; each check cell's seconds."""
    notebook = nbformat.read(notebook_path, as_version=4)
    cells = check_cells(notebook)
    NotebookClient(
        notebook,
        timeout=600,
        kernel_name="python3",
        record_timing=True,
        resources={"metadata": {"path": str(notebook_path.parent)}},
    ).execute()
    return [
        {
            "cell": index,
            "exercise": exercise,
            "seconds": round(cell_seconds(notebook.cells[index]), 3),
        }
        for index, exercise in cells.items()
    ]


def solution_notebooks(chapters: Sequence[str] = ()) -> list[Path]:
    found = sorted((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb"))
    return [path for path in found if not chapters or path.name[:2] in chapters]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapters", default="", help="comma-separated, e.g. 05,06")
    parser.add_argument("--json", action="store_true", help="one line of JSON, for make bench")
    options = parser.parse_args(argv)
    chapters = [c for c in options.chapters.split(",") if c]
    results = {path.name[:2]: measure(path) for path in solution_notebooks(chapters)}
    if options.json:
        print(json.dumps(results))
        return
    for chapter, checks in results.items():
        for check in checks:
            name = f"check.{check['exercise']}"
            print(f"{chapter} cell {check['cell']:3d} {name}: {check['seconds']:.2f} s")


if __name__ == "__main__":
    main()
