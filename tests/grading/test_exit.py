"""`python -m autograder` leaves without tearing the interpreter down (70 ms of grading one
submission), so what it must do first is tested here: its files and output are complete, its
exit status is main()'s, and what was registered to run at exit still runs."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from ..submissions import ROOT

# As the bench's memory section runs the grader: an exit hook, then the module as __main__.
WITH_EXIT_HOOK = (
    "import atexit, runpy, sys\n"
    "atexit.register(lambda: print('exit hook ran', file=sys.stderr))\n"
    "sys.argv = ['autograder', *sys.argv[1:]]\n"
    "runpy.run_module('autograder', run_name='__main__', alter_sys=True)\n"
)


def run(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", WITH_EXIT_HOOK, *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.e2e  # grades a notebook through the sandbox
def test_a_grade_writes_everything_and_runs_the_exit_hooks(tmp_path: Path):
    notebook = tmp_path / "student.ipynb"
    notebook.write_bytes((ROOT / "solutions" / "00_start_here.ipynb").read_bytes())
    done = run("grade", str(notebook), "--out", str(tmp_path / "out"), "--seed", "1")
    assert done.returncode == 0, done.stderr
    assert done.stderr.rstrip().endswith("exit hook ran")
    assert "Graded 1 of 1 submissions" in done.stderr
    with open(tmp_path / "out" / "grades.csv", newline="") as gradebook:
        assert [Path(row["file"]).name for row in csv.DictReader(gradebook)] == ["student.ipynb"]


def test_a_refusal_keeps_its_exit_status(tmp_path: Path):
    done = run("grade", str(tmp_path / "notes.txt"), "--out", str(tmp_path / "out"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.rstrip().endswith("exit hook ran")
