"""A submission may slow itself, never its neighbours, and its slowness is its own row's.

Why: in the fallback sandbox, before CPU pinning, a submission that kept 150 processes busy for 35 s
kept full marks while two honest submissions graded beside it (`--jobs 2`) went from 0.3 s to
20-22 s; with 500 processes its own row became a grading error. Now each job slot's child
runs on its own CPUs (sandbox.cpu_groups), a child without a uid of its own may start no
process, and a round that cannot start because the submission's own earlier rounds used up
its time is the student's timeout. Here a smaller attack (a few seconds; processes and
threads that hash without the GIL) is graded beside honest submissions in the modes that use
the fallback layers (bubblewrap mode gets the same CPUs and limits; the hostile corpus,
test_hostile.py, runs the attack in every mode for its score and leftovers).
"""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from ..hostile import BUSY, always_run
from ..submissions import GOOD_MATMUL, GOOD_UNBROADCAST, LEARNER_COPY, ROOT, fill
from .test_hostile import leftover_children, mode_command

pytestmark = pytest.mark.e2e  # grades busy submissions beside honest ones

# How long the attacker keeps its processes and threads busy. Unpinned, the slowest honest
# neighbour graded meanwhile took longer (6-8 s with these 6 s and 100 processes on 2 cores,
# 20-22 s with 150 processes); pinned, 1 s or less. Half of it is the line between the two.
BUSY_SECONDS = 6.0


def grade(
    folder: Path, mode: str, tmp: Path, *flags: str
) -> tuple[subprocess.CompletedProcess, dict[str, dict]]:
    """Grade every notebook in `folder` in this sandbox mode; the run and its rows by stem."""
    mode_flags, env = mode_command(mode, tmp)
    env["TMPDIR"] = str(tmp / "tmp")
    (tmp / "tmp").mkdir(exist_ok=True)
    out = tmp / "graded"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            *map(str, sorted(folder.glob("*.ipynb"))),
            "--out",
            str(out),
            "--seed",
            "7",
            "--assignment",
            "03",
            *mode_flags,
            *flags,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    rows = {}
    if (out / "grades.csv").is_file():
        with (out / "grades.csv").open() as file:
            rows = {Path(row["file"]).stem: row for row in csv.DictReader(file)}
    return run, rows


def write(folder: Path, name: str, unbroadcast: str, extra: list[str]) -> None:
    learner = nbformat.read(LEARNER_COPY, as_version=4)
    notebook = always_run(fill(learner, unbroadcast, GOOD_MATMUL, extra), extra)
    nbformat.write(notebook, folder / f"{name}.ipynb")


@pytest.mark.parametrize("mode", ["refused", "fork"])
def test_a_busy_submission_slows_itself_not_its_neighbours(mode, tmp_path):
    """100 busy processes (where it may start them) and 8 busy threads, then right answers:
    its own row keeps its marks and takes its time; the honest rows graded meanwhile in the
    other job slot take a fraction of it; no grading error, nothing left running."""
    folder = tmp_path / "submissions"
    folder.mkdir()
    # First by name: graded first, in one job slot, while the other grades the honest ones.
    write(folder, "0_busy", GOOD_UNBROADCAST, [BUSY + f"busy(100, 8, {BUSY_SECONDS})\n"])
    for index in range(4):
        write(folder, f"honest{index}", GOOD_UNBROADCAST, [])
    run, rows = grade(folder, mode, tmp_path, "--jobs", "2", "--timeout", "60")
    assert run.returncode == 0, run.stderr[-3000:]
    assert all(not row["grading_error"] and row["total"] == row["max"] for row in rows.values()), (
        rows
    )
    assert float(rows["0_busy"]["seconds"]) >= BUSY_SECONDS
    honest = {stem: float(row["seconds"]) for stem, row in rows.items() if stem != "0_busy"}
    assert len(honest) == 4 and max(honest.values()) < BUSY_SECONDS / 2, honest
    assert leftover_children(tmp_path / "tmp") == []


def test_a_submission_that_spends_its_own_time_is_timed_out_not_a_grading_error(tmp_path):
    """Its cells and first exercise run past the whole submission's time limit: the round for
    its other exercise cannot start before that limit. Its doing, said as such, not the
    grader's failure (which made the batch exit 1 and asked the instructor to grade again)."""
    folder = tmp_path / "submissions"
    folder.mkdir()
    slow_exit = (
        "def unbroadcast(g, shape):\n    import os, time\n    time.sleep(1.9)\n    os._exit(3)\n"
    )
    write(folder, "spends_its_time", slow_exit, ["import time\ntime.sleep(2.5)\n"])
    # --timeout 4: 2 s per exercise, 4 s for the whole submission.
    run, rows = grade(folder, "refused", tmp_path, "--jobs", "1", "--timeout", "4")
    assert run.returncode == 0, run.stderr[-3000:]
    row = rows["spends_its_time"]
    assert not row["grading_error"] and float(row["total"]) == 0, row
    feedback = (tmp_path / "graded" / row["submission"] / "feedback.txt").read_text()
    assert "`matmul_vjp` was stopped at the time limit for the whole submission" in feedback
