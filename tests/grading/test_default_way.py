"""The grading command an instructor types, with no flags, is the fast one.

What must hold: a batch of a TensorFlow or JAX chapter larger than --jobs forks its children
from a server where the machine allows it, and falls back to fresh children (bubblewrap
where it runs) where it does not, without refusing to grade; a lone submission, a numpy
chapter, `--sandbox bubblewrap` and `--no-fork-server` keep fresh children; and the first
plain `grade` of a chapter and seed does what `prepare --warm-with` does, once, so the runs
after it find the known mistakes, the compiled programs and the costs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from autograder.exercises import for_chapter
from autograder.grading import preparation, refcache
from autograder.grading import start as early
from autograder.grading.assignment import Assignment
from autograder.grading.submissions import read_submissions
from autograder.sandbox import sandbox
from autograder.sandbox.capabilities import Capabilities
from autograder.sandbox.confined import confine

from ..reference_entries import at_once, seed_reference_cache

pytestmark = pytest.mark.e2e  # grades batches through the sandbox, as an instructor does

ROOT = Path(__file__).resolve().parents[2]


def notebooks(folder: Path, chapter: str, count: int) -> list[Path]:
    """`count` copies of a chapter's solution notebook (its metadata names the chapter)."""
    (solution,) = (ROOT / "solutions").glob(f"{chapter}_*.ipynb")
    paths = [folder / f"{chapter}-{index}.ipynb" for index in range(count)]
    for path in paths:
        shutil.copy(solution, path)
    return paths


@pytest.mark.parametrize(
    ("chapters", "count", "jobs", "mode", "forks"),
    [
        (("05",), 3, 2, "auto", True),  # a JAX batch larger than --jobs
        (("01",), 2, 1, "fallback", True),
        (("04",), 2, 2, "auto", False),  # no larger than --jobs: warm children start sooner
        (("05",), 1, 1, "auto", False),  # a lone submission, as on Gradescope
        (("03",), 4, 1, "auto", False),  # a numpy chapter: bubblewrap's fresh children
        (("05", "03"), 4, 1, "auto", False),  # a mixed batch
        (("07",), 4, 1, "bubblewrap", False),  # asked for bubblewrap
    ],
)
def test_which_batches_fork_by_default(tmp_path, chapters, count, jobs, mode, forks):
    paths = [p for chapter in chapters for p in notebooks(tmp_path, chapter, count)]
    assert early.forks_by_default(read_submissions(paths), jobs, mode, None) is forks


def test_the_assignment_flag_decides_without_reading_the_notebooks(tmp_path):
    unread = read_submissions([tmp_path / f"{index}.ipynb" for index in range(3)])  # not there
    assert early.forks_by_default(unread, 1, "auto", "07")
    assert not early.forks_by_default(unread, 1, "auto", "02")


def start(tmp_path: Path, fork_server: bool | None, count: int = 3) -> early.Start:
    return early.start(
        submissions=notebooks(tmp_path, "05", count),
        out=tmp_path / "out",
        jobs=1,
        sandbox_mode="auto",
        unsafe_no_sandbox=False,
        reference_cache=tmp_path / "cache",
        fork_server=fork_server,
        assignment=None,
    )


def test_a_framework_batch_forks_by_default_where_the_machine_allows_it(tmp_path):
    started = start(tmp_path, None)
    try:
        allowed = not sandbox.fork_server_refusal(started.sandbox.offered, "auto")
        assert started.sandbox.offered.fork is allowed
        assert (started.sandbox.offered.bwrap is None) if allowed else True
    finally:
        started.sandbox.close()


def test_no_fork_server_keeps_fresh_children(tmp_path):
    started = start(tmp_path, False)
    try:
        assert not started.sandbox.offered.fork
        assert started.sandbox.offered.bwrap == sandbox.bubblewrap()
    finally:
        started.sandbox.close()


def test_where_forking_is_refused_the_default_grades_with_fresh_children(tmp_path, monkeypatch):
    """--fork-server asked for by name refuses; the default quietly keeps the sandbox."""
    monkeypatch.setattr(confine, "landlock_abi", lambda: 0)
    monkeypatch.setattr(sandbox, "bubblewrap", lambda: "/usr/bin/bwrap")
    started = start(tmp_path, None)
    try:
        assert started.sandbox is not None and not started.sandbox.offered.fork
        assert started.sandbox.offered.bwrap == "/usr/bin/bwrap"
    finally:
        started.sandbox.close()
    assert start(tmp_path, True).sandbox is None  # asked for by name: refused, with the reason


def test_trusted_solutions_are_the_course_s_own_notebooks():
    solution = ROOT / "solutions" / "05_custom_derivatives_jax.ipynb"
    assert preparation.trusted_solution("05") == solution
    assert preparation.trusted_solution("99") is None


def plain_grade(paths: list[Path], out: Path, cache: Path) -> subprocess.CompletedProcess:
    """The instructor guide's command, with a reference cache of the test's own."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            *map(str, paths),
            "--out",
            str(out),
            "--seed",
            "11",
            "--reference-cache",
            str(cache),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )


def test_the_first_plain_grade_prepares_once_and_the_next_reads_it(tmp_path):
    if not confine.landlock_abi() and not sandbox.bubblewrap():
        pytest.skip("no sandbox on this machine")
    cache = tmp_path / "cache"
    # The references alone come from the user's cache: what the first grade must add is the
    # known mistakes, the compiled programs and the costs (references: test_grading.py).
    seed_reference_cache(cache, "05", 11, mistakes=False)
    entry = refcache.entry_path(cache, "05", 11)
    assert entry.is_file() and not refcache.mistakes_path(entry).exists()
    paths = notebooks(tmp_path, "05", 1)
    first = plain_grade(paths, tmp_path / "first", cache)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "preparing once" in first.stderr, first.stderr[-3000:]
    assert refcache.mistakes_path(entry).is_file()
    costs = json.loads(refcache.costs_path(entry).read_text())
    assert set(costs) >= {"soft_threshold", "softmax_entropy"}, costs
    assert any((cache / "jax").iterdir()), "no compiled program was kept"
    second = plain_grade(paths, tmp_path / "second", cache)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "preparing once" not in second.stderr, second.stderr[-3000:]
    for run in ("first", "second"):
        (results,) = (tmp_path / run).glob("*/results.json")
        graded = json.loads(results.read_text())
        assert graded["score"] == sum(t["max_score"] for t in graded["tests"]), graded


def test_runs_sharing_a_cache_do_the_first_grade_s_preparation_once(tmp_path, monkeypatch):
    """Grading runs started together on one cache (a Slurm array, a Job's pods): one grades
    the solution to compile and measure; the others wait for it and do not do it again."""
    warmed = []

    def warm(assignments, seed, cache, notebooks):
        warmed.append(seed)
        threading.Event().wait(0.3)  # long enough for the others to find nothing done
        refcache.save_costs(refcache.costs_path(refcache.entry_path(cache, "05", seed)), {})
        return 0

    def mistakes(assignment, seed, cache):
        refcache.save_mistakes(refcache.mistakes_path(refcache.entry_path(cache, "05", seed)), {})

    monkeypatch.setattr(preparation, "warm_compile_cache", warm)
    monkeypatch.setattr(preparation, "save_known_mistakes", mistakes)
    box = SimpleNamespace(offered=Capabilities(), close_fork_servers=lambda: None)
    assignments = {"05": Assignment("05", for_chapter("05"), {}, {})}
    at_once(3, lambda: preparation.prepare_first_time(box, assignments, 7, tmp_path))
    assert warmed == [7]
