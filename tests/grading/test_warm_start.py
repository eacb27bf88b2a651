"""`grade` starts a framework chapter's first children before it imports itself (early.py,
warm_children.WarmChild), and a submission whose exercises all need one framework runs them in
worker processes of one child (child.fork_workers), which imports the framework once.

What must hold: the verdicts are those of fresh children; a warm child serves only a round
whose code neither sets the environment (read when the framework is imported) nor needs
frameworks other than the ones it imported; a crash in one worker costs that worker's
exercise only; a box that needs a uid never waits on one that an idle warm child holds; and
the table of warm frameworks says what the exercises declare.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from autograder.exercises import for_chapter
from autograder.grading import command as batch
from autograder.grading import parts, preparation, rounds
from autograder.grading import start as early
from autograder.grading import warm_groups as warm_groups_module
from autograder.grading.parts import parts_and_workers
from autograder.grading.warm_groups import warm_groups
from autograder.sandbox import children, warm_children
from autograder.sandbox.pools import Sandbox

from ..reference_entries import seed_reference_cache

pytestmark = pytest.mark.e2e  # grades through the sandbox's warm children

ROOT = Path(__file__).resolve().parents[2]
SOLUTION_06 = ROOT / "solutions" / "06_implicit_callbacks_checkpointing.ipynb"
# Appended to the bessel_i0e cell: the process ends while bessel_i0e runs.
CRASH = "\nimport os\ndef bessel_i0e(x):\n    os._exit(3)\n"
# First in the notebook: JAX reads this when it is imported.
ENVIRONMENT_FIRST = "import os\nos.environ['JAX_ENABLE_X64'] = '1'\n"


def test_the_warm_frameworks_are_those_the_exercises_declare():
    for chapter in (f"{n:02d}" for n in range(8)):
        groups = {tuple(sorted(e.frameworks)) for e in for_chapter(chapter)} - {()}
        assert groups == ({warm_groups()[chapter]} if chapter in warm_groups() else set()), chapter


def test_a_frameworks_declaration_start_cannot_read_names_the_exercise(tmp_path):
    """start.py reads `frameworks=` without importing the module: only literals will do."""
    (tmp_path / "ch09_new.py").write_text(
        "FRAMEWORKS = ('jax',)\nOK = Exercise(name='fine', frameworks=FRAMEWORKS)\n"
        "NEW = Exercise(name='new_one', frameworks=tuple(make()))\n"
    )
    with pytest.raises(ValueError, match="'new_one' declares `frameworks=`"):
        warm_groups(tmp_path)
    (tmp_path / "ch09_new.py").write_text(
        "A = Exercise(name='a', frameworks=('jax',))\nB = Exercise(name='b', frameworks=())\n"
    )
    assert warm_groups(tmp_path) == {"09": ("jax",)}
    shared = tmp_path / "shared"  # warm_groups is cached by folder
    shared.mkdir()
    (shared / "ch10_shared.py").write_text(  # a chapter's shared declaration (chapter 04's)
        "_exercise = functools.partial(Exercise, invoke='x', frameworks=('tensorflow',))\n"
        "A = _exercise(name='a')\n"
    )
    assert warm_groups(shared) == {"10": ("tensorflow",)}


def test_start_reads_submissions_before_numpy_and_the_exercises_are_imported(tmp_path):
    """What start.py does first must not wait for the grader's heavy imports."""
    program = (
        "import sys\nfrom pathlib import Path\nfrom autograder.grading import start\n"
        f"read = start.read_submissions([Path({str(SOLUTION_06)!r})])\n"
        "assert read[0].chapter == '06' and start.warm_group('06') == ('jax',)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('numpy', 'jax', 'tensorflow', 'hypothesis') or m.startswith("
        "('autograder.judging', 'autograder.exercises'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_start_reads_the_declarations_of_the_batch_s_chapter_only(monkeypatch):
    """Before its warm children start, `grade` reads one chapter module, not the course's."""
    read_paths = []
    declared = warm_groups_module._declared_frameworks
    monkeypatch.setattr(
        warm_groups_module,
        "_declared_frameworks",
        lambda path: read_paths.append(path.name) or declared(path),
    )
    warm_groups_module.warm_group.cache_clear()
    try:
        read = early.read_submissions([SOLUTION_06, SOLUTION_06])
        assert early.forks_by_default(read, 1, "auto", None)
        assert early.warm_group("06") == ("jax",)
    finally:
        warm_groups_module.warm_group.cache_clear()
    assert read_paths and all(name.startswith("ch06_") for name in read_paths), read_paths


class FakeWarmChild:
    """Stands for a warm child holding a uid slot: closing it gives the uid back."""

    def __init__(self, allowed: tuple[str, ...], uid: int, slots: queue.Queue) -> None:
        self.allowed, self.uid, self.slots, self.closed = allowed, uid, slots, False

    def close(self) -> None:
        self.closed = True
        self.slots.put(self.uid)


def test_a_warm_child_is_taken_for_its_own_frameworks_only():
    slots: queue.Queue = queue.Queue()
    box = Sandbox(uid_slots=slots)
    jax_child, tf_child = (
        FakeWarmChild(("jax",), 1, slots),
        FakeWarmChild(("tensorflow",), 2, slots),
    )
    box.warm_children = [jax_child, tf_child]
    assert box.take_warm(()) is None
    assert box.take_warm(("tensorflow",)) is tf_child
    assert box.take_warm(("tensorflow",)) is None
    assert box.warm_children == [jax_child] and not jax_child.closed


def test_a_box_that_needs_a_uid_stops_an_idle_warm_child_rather_than_wait_forever():
    slots: queue.Queue = queue.Queue()  # every uid is held: this one by an idle warm child
    box = Sandbox(uid_slots=slots)
    idle = FakeWarmChild(("jax",), 64001, slots)
    box.warm_children = [idle]
    assert box.take_uid() == 64001
    assert idle.closed and box.warm_children == []


def test_a_round_takes_the_workers_it_holds_all_of_or_none():
    workers = [["a", "c"], ["b"]]
    assert parts.round_workers(workers, ["a", "b", "c"]) == workers
    assert parts.round_workers(workers, ["b", "c"]) == [["c"], ["b"]]
    assert parts.round_workers(workers, ["a", "d"]) == []
    assert parts.round_workers([], ["a"]) == []


def _copy(folder: Path, name: str, first: str = "", appended: str = "") -> Path:
    notebook = nbformat.read(SOLUTION_06, as_version=4)
    if appended:
        cell = next(c for c in notebook.cells if "def bessel_i0e(" in c.source)
        cell.source += appended
    if first:
        notebook.cells.insert(0, nbformat.v4.new_code_cell(first))
    path = folder / f"{name}.ipynb"
    nbformat.write(notebook, path)
    return path


def _grade(path: Path, out: Path, monkeypatch) -> tuple[dict, dict[str, int], list]:
    """Grade one chapter 05 submission in this process with two children at once, as
    `grade` does: (its results by exercise, how its children ran, the workers asked for)."""
    ran = {"warm": 0, "fresh": 0}
    workers_asked: list = []
    run_warm, run_fresh = warm_children.WarmChild.run, children.run_child
    round_workers = parts.round_workers

    def warm(self, *args, **kwargs):
        ran["warm"] += 1
        return run_warm(self, *args, **kwargs)

    def fresh(*args, **kwargs):
        ran["fresh"] += 1
        return run_fresh(*args, **kwargs)

    def asked(*args):
        workers_asked.append(round_workers(*args))
        return workers_asked[-1]

    monkeypatch.setattr(warm_children.WarmChild, "run", warm)
    monkeypatch.setattr(children, "run_child", fresh)
    monkeypatch.setattr(rounds, "round_workers", asked)
    arguments = {
        "submissions": [path],
        "out": out,
        "jobs": 2,
        "sandbox_mode": "auto",
        "unsafe_no_sandbox": False,
        "reference_cache": path.parent / "cache",
        "fork_server": False,
        "assignment": None,
    }
    started = early.start(**arguments)
    assert started.sandbox is not None, started.problem
    assert started.sandbox.warm_started == 1
    assert batch.grade(**arguments, seed=11, started=started) == 0
    data = json.loads(next(out.glob("*/results.json")).read_text())
    return {t["name"].split()[0]: t for t in data["tests"]}, ran, workers_asked


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """With its own reference cache, prepared as the first `grade` of seed 11 prepares it
    (its runs of the solution are not the submission's children counted below)."""
    folder = tmp_path_factory.mktemp("warm-06")
    # Its references and known mistakes come from the user's cache (the same entry
    # test_chapters_graded grades with): these tests are about the warm children.
    seed_reference_cache(folder / "cache", "06", 11, mistakes=True)
    assert (
        preparation.prepare_cache(
            chapters=["06"], seed=11, reference_cache=folder / "cache", warm_with=[SOLUTION_06]
        )
        == 0
    )
    return folder


def test_a_lone_jax_submission_runs_in_its_warm_child_and_its_workers(folder, monkeypatch):
    results, ran, workers = _grade(_copy(folder, "solution"), folder / "solution", monkeypatch)
    assert all(t["status"] == "passed" for t in results.values()), results
    assert ran == {"warm": 1, "fresh": 0}
    assert len(workers) == 1 and len(workers[0]) == 2  # one round, two workers
    assert sorted(n for w in workers[0] for n in w) == sorted(e.name for e in for_chapter("06"))


def test_a_crash_in_one_worker_costs_its_own_exercise_only(folder, monkeypatch):
    results, ran, _ = _grade(_copy(folder, "crash", appended=CRASH), folder / "crash", monkeypatch)
    assert results.pop("bessel_i0e")["status"] == "failed"
    assert all(t["status"] == "passed" for t in results.values()), results
    assert ran["warm"] == 1


def test_code_that_sets_the_environment_gets_a_fresh_child_not_the_warm_one(folder, monkeypatch):
    results, ran, _ = _grade(
        _copy(folder, "environment", first=ENVIRONMENT_FIRST), folder / "environment", monkeypatch
    )
    assert all(t["status"] == "passed" for t in results.values()), results
    assert ran == {"warm": 0, "fresh": 1}


def _assignment(chapter: str) -> SimpleNamespace:
    exercises = for_chapter(chapter)
    return SimpleNamespace(
        exercises=exercises,
        cases={e.name: [None] * 100 for e in exercises},
        costs={e.name: 0.2 for e in exercises},
    )


def test_framework_exercises_of_one_framework_share_a_child_and_numpy_ones_get_their_own():
    parts, workers, used = parts_and_workers(_assignment("01"), 2)
    assert [[e.name for e in part] for part in parts] == [
        ["qa_gradients", "per_example_gradients"],
        ["predict_tape_gradient"],
    ]
    assert sorted(map(sorted, workers)) == [["per_example_gradients"], ["qa_gradients"]]
    assert used == 2
    parts, workers, used = parts_and_workers(_assignment("04"), 3)
    assert len(parts) == 1 and len(workers) == used == 3
    assert sorted(n for w in workers for n in w) == sorted(e.name for e in for_chapter("04"))


def test_one_slot_or_numpy_exercises_alone_take_no_workers():
    parts, workers, used = parts_and_workers(_assignment("04"), 1)
    assert (len(parts), workers, used) == (1, [], 1)
    parts, workers, used = parts_and_workers(_assignment("02"), 2)
    assert workers == [] and used == len(parts) == 2


def test_closing_the_sandbox_stops_its_warm_children_and_fork_servers():
    slots: queue.Queue = queue.Queue()
    box = Sandbox(uid_slots=slots)
    idle, server = FakeWarmChild(("jax",), 1, slots), FakeWarmChild(("tensorflow",), 2, slots)
    box.warm_children, box.fork_servers = [idle], {("tensorflow",): server}
    box.close()
    assert idle.closed and server.closed
    assert box.warm_children == [] and box.fork_servers == {}
