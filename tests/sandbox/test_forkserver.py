"""`grade --fork-server`: children forked from an interpreter that imported the framework once.

What must hold: the verdicts are those of fresh children (the solution full marks, the
learner copy zero), nothing one submission does to the imported framework reaches the next
one forked from the same server, the results say how children were confined, and the
grader refuses the fork server where its layers are missing. The hostile corpus runs
through it too (tests/sandbox/test_hostile.py, mode `fork`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from autograder.exercises import for_chapter
from autograder.grading.submissions import program_cells
from autograder.sandbox import children, errors, forkserver, sandbox
from autograder.sandbox.capabilities import Capabilities
from autograder.sandbox.confined import confine, submitted
from autograder.sandbox.pools import Sandbox

pytestmark = pytest.mark.e2e  # grades through the fork server

ROOT = Path(__file__).resolve().parents[2]
# Appended to chapter 01's qa_gradients cell: every later GradientTape.gradient in this
# interpreter returns None. It breaks the submission's own TensorFlow exercises; a child
# forked afterwards from the same server must not inherit it.
TAMPER = "\ntf.GradientTape.gradient = lambda self, *args, **kwargs: None\n"


def grade(paths: list[Path], out: Path, *flags: str) -> subprocess.CompletedProcess:
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
            "--fork-server",
            *flags,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )


def results(out: Path, stem: str) -> dict[str, dict]:
    data = json.loads((out / stem / "results.json").read_text())
    return {test["name"].split()[0]: test for test in data["tests"]} | {"": data}


# First in the notebook: a setting in the environment before TensorFlow is imported, and
# whether something imported TensorFlow before this code ran (a fork server does).
ENVIRONMENT_FIRST = (
    "import os, sys\n"
    "IMPORTED_BEFORE_ME = 'tensorflow' in sys.modules\n"
    "os.environ['TF_DETERMINISTIC_OPS'] = '1'\n"
)
# Appended to the qa_gradients cell: right only where TensorFlow was imported after that.
IMPORTED_AFTER_SETTINGS = (
    "\n_qa_gradients = qa_gradients\n"
    "def qa_gradients(*args, **kwargs):\n"
    "    if IMPORTED_BEFORE_ME:\n"
    "        raise RuntimeError('TensorFlow came before my settings')\n"
    "    return _qa_gradients(*args, **kwargs)\n"
)


def environment_first_copy(solution: Path, folder: Path) -> Path:
    notebook = nbformat.read(solution, as_version=4)
    cell = next(c for c in notebook.cells if c.source.startswith("def qa_gradients("))
    cell.source += IMPORTED_AFTER_SETTINGS
    notebook.cells.insert(0, nbformat.v4.new_code_cell(ENVIRONMENT_FIRST))
    path = folder / "4_environment.ipynb"
    nbformat.write(notebook, path)
    return path


def tampering_copy(solution: Path, folder: Path) -> Path:
    notebook = nbformat.read(solution, as_version=4)
    cell = next(c for c in notebook.cells if c.source.startswith("def qa_gradients("))
    cell.source += TAMPER
    path = folder / "1_tamper.ipynb"
    nbformat.write(notebook, path)
    return path


@pytest.fixture(scope="module")
def chapter_01(tmp_path_factory):
    if not confine.landlock_abi():
        pytest.skip("this kernel has no Landlock, which --fork-server needs")
    folder = tmp_path_factory.mktemp("fork-01")
    solution = ROOT / "solutions" / "01_chain_rule.ipynb"
    paths = [
        tampering_copy(solution, folder),
        folder / "2_solution.ipynb",
        folder / "3_learner.ipynb",
        environment_first_copy(solution, folder),
    ]
    shutil.copy(solution, paths[1])
    shutil.copy(ROOT / "course" / "01_chain_rule.ipynb", paths[2])
    out = folder / "graded"
    return grade(paths, out, "--jobs", "1"), out


def test_forked_children_grade_as_fresh_ones(chapter_01):
    run, out = chapter_01
    assert run.returncode == 0, run.stderr[-3000:]
    assert "sandbox: fork server" in run.stderr
    solution, learner = results(out, "002-2_solution"), results(out, "003-3_learner")
    names = [e.name for e in for_chapter("01")]
    assert all(solution[name]["status"] == "passed" for name in names), solution
    assert learner[""]["score"] == 0
    assert all("NotImplementedError" in learner[name]["output"] for name in names)


def test_what_a_submission_does_to_the_framework_stays_in_its_own_child(chapter_01):
    _, out = chapter_01
    tamper, solution = results(out, "001-1_tamper"), results(out, "002-2_solution")
    assert tamper["qa_gradients"]["status"] != "passed"  # the tampering took effect there
    assert tamper["predict_tape_gradient"]["status"] == "passed"  # a numpy round: untouched
    assert solution["qa_gradients"]["status"] == "passed"  # and not in the next child
    assert solution["per_example_gradients"]["status"] == "passed"


def test_code_that_sets_the_environment_first_gets_a_child_that_imports_after_it(chapter_01):
    """TensorFlow and JAX read settings from the environment when imported (JAX_ENABLE_X64),
    so a submission that sets it before its own import is graded in a fresh child, as its
    notebook ran, not one forked from a server that imported the framework already."""
    _, out = chapter_01
    graded = results(out, "004-4_environment")
    assert graded["qa_gradients"]["status"] == "passed", graded["qa_gradients"]["output"]
    assert graded[""]["score"] == sum(t["max_score"] for t in graded[""]["tests"])


def test_results_say_children_were_forked_without_bubblewrap(chapter_01):
    _, out = chapter_01
    layers = json.dumps(results(out, "002-2_solution")[""])
    assert "--fork-server" in layers and "bubblewrap:" not in layers


def test_a_jax_chapter_forks_from_its_own_server(tmp_path):
    if not confine.landlock_abi():
        pytest.skip("this kernel has no Landlock, which --fork-server needs")
    shutil.copy(ROOT / "solutions" / "07_jacobians.ipynb", tmp_path / "solution.ipynb")
    run = grade([tmp_path / "solution.ipynb"], tmp_path / "graded")
    assert run.returncode == 0, run.stderr[-3000:]
    graded = results(tmp_path / "graded", "001-solution")
    assert graded[""]["score"] == sum(t["max_score"] for t in graded[""]["tests"]), graded


def test_bubblewrap_mode_and_the_fork_server_exclude_each_other(monkeypatch):
    monkeypatch.setattr(sandbox, "bubblewrap", lambda: "/usr/bin/bwrap")
    with pytest.raises(errors.SandboxUnavailable, match="exclude each other"):
        sandbox.detect("bubblewrap", fork=True)


def test_the_fork_server_is_refused_without_landlock(monkeypatch):
    monkeypatch.setattr(sandbox, "bubblewrap", lambda: "/usr/bin/bwrap")
    monkeypatch.setattr(confine, "landlock_abi", lambda: 0)
    with pytest.raises(errors.SandboxUnavailable, match="--fork-server needs Landlock"):
        sandbox.detect("auto", fork=True)


def test_the_fork_server_is_refused_without_its_own_uid_or_seccomp(monkeypatch):
    monkeypatch.setattr(sandbox, "bubblewrap", lambda: "/usr/bin/bwrap")
    monkeypatch.setattr(confine, "seccomp_available", lambda: False)
    monkeypatch.setattr(sandbox, "reserve_uid_slots", lambda jobs: (None, []))
    with pytest.raises(errors.SandboxUnavailable, match="seccomp"):
        sandbox.detect("auto", fork=True)


def test_choosing_the_fork_server_makes_a_new_record_and_leaves_the_detected_one():
    """What the machine offers is a frozen record: the grader's choice to fork replaces the
    sandbox's record, and a record taken before (by a round already running) stays as it was."""
    offered = Capabilities(bwrap="/usr/bin/bwrap", landlock_abi=4, seccomp=True)
    box = Sandbox(offered)
    with pytest.raises(dataclasses.FrozenInstanceError):
        offered.fork = True  # type: ignore[misc]
    assert sandbox.allow_fork_server_if_possible(box, "auto")
    assert box.offered.fork and box.offered.bwrap is None
    assert not offered.fork and offered.bwrap == "/usr/bin/bwrap"
    refused = Sandbox(Capabilities(bwrap="/usr/bin/bwrap"))  # no Landlock: may not fork
    assert not sandbox.allow_fork_server_if_possible(refused, "auto")
    assert refused.offered == Capabilities(bwrap="/usr/bin/bwrap")


def test_a_started_childs_exit_signal_is_readable_once_it_exits_and_not_before():
    """The supervisor waits on this descriptor too, so a child whose pipes are already closed
    is seen to exit at once, not at the next 0.1 s timeout (once per round of a batch)."""
    process = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; sys.stdout.close(); time.sleep(30)"],
        stdout=subprocess.PIPE,
    )
    signal_fd = children._exit_signal(process)
    try:
        assert signal_fd is not None, "no pidfd on this kernel: the timeout is the fallback"
        assert not select.select([signal_fd], [], [], 0.2)[0]
        process.kill()
        assert select.select([signal_fd], [], [], 5)[0]
        assert process.wait(timeout=5) == -9
    finally:
        process.kill()
        process.wait()
        process.stdout.close()
        os.close(signal_fd)


def test_a_forked_childs_exit_signal_is_its_monitors_status_pipe():
    status_read, status_write = os.pipe()
    output_read, output_write = os.pipe()
    os.close(output_write)
    child = forkserver.ForkedChild(status_read, os.fdopen(output_read, "rb"))
    try:
        os.write(status_write, b"4242\n")
        assert child.read_pid(time.monotonic() + 5) == 4242
        assert children._exit_signal(child) == status_read
        assert not select.select([status_read], [], [], 0)[0] and child.poll() is None
        os.write(status_write, b"3\n")  # the monitor reports the exit code
        assert select.select([status_read], [], [], 5)[0] and child.poll() == 3
    finally:
        child.close()
        os.close(status_write)


def test_the_course_s_own_setup_cells_do_not_count_as_setting_the_environment():
    """Every chapter's setup cell defaults TensorFlow's log level and oneDNN switch before
    importing it; the child's environment holds both already. Counting them sent every
    submission of chapters 01, 04 and 07 to a fresh child that imported TensorFlow itself
    (about 2 s a submission) instead of one forked from the server that had."""
    notebooks = sorted(ROOT.glob("solutions/[0-9][0-9]_*.ipynb"))
    notebooks += sorted(ROOT.glob("course/[0-9][0-9]_*.ipynb"))
    assert len(notebooks) >= 18
    for path in notebooks:
        cells, _ = program_cells(nbformat.read(path, as_version=4))
        assert not submitted.sets_environment(cells), path
    assert not submitted.sets_environment(['os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"'])
    for changing in (
        'os.environ["TF_ENABLE_ONEDNN_OPTS"] = "1"',
        'os.environ.setdefault("JAX_ENABLE_X64", "1")',
        'os.putenv("XLA_FLAGS", "")',
    ):
        assert submitted.sets_environment([changing]), changing
