"""Every chapter works in the classroom grader: its solution notebook scores full marks and its
learner copy (nothing answered) scores zero, each exercise with a clear message."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.exercises import for_chapter

pytestmark = pytest.mark.e2e  # grades whole notebooks through the sandbox

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted(path.name for path in (ROOT / "solutions").glob("[0-9][0-9]_*.ipynb"))


@pytest.mark.parametrize("notebook", CHAPTERS)
def test_solution_scores_full_marks_and_learner_copy_scores_zero(notebook, tmp_path):
    chapter = notebook[:2]
    exercises = [e.name for e in for_chapter(chapter)]
    assert exercises, f"chapter {chapter} has no registered exercises"
    shutil.copy(ROOT / "solutions" / notebook, tmp_path / "solution.ipynb")
    shutil.copy(ROOT / "course" / notebook, tmp_path / "learner.ipynb")
    out = tmp_path / "graded"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            str(tmp_path / "solution.ipynb"),
            str(tmp_path / "learner.ipynb"),
            "--out",
            str(out),
            "--seed",
            "11",
            "--jobs",
            "2",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    solution = json.loads((out / "001-solution" / "results.json").read_text())
    learner = json.loads((out / "002-learner" / "results.json").read_text())
    assert [t["name"].split()[0] for t in solution["tests"]] == exercises
    failed = [t for t in solution["tests"] if t["status"] != "passed"]
    assert not failed, json.dumps(failed, indent=1)[:3000]
    assert learner["score"] == 0
    for test in learner["tests"]:
        assert "NotImplementedError" in test["output"], test["output"][:500]
