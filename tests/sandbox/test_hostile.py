"""The hostile corpus, graded in every sandbox mode this machine offers.

Modes: `bubblewrap` (where bwrap works); `refused`, where a fake `bwrap` that exits 1
stands first on PATH, as in an unprivileged container, so the grader must notice and fall
back to its own layers (uid, Landlock, seccomp); and `fork`, `--fork-server`, where each
child is forked from a pre-imported interpreter and confined by those same layers. A mode
the machine cannot offer is skipped with the reason. In every mode: honest submissions keep
their exact scores, each attack scores 0 on its exercise, nothing outside the child's
folders changes, no process outlives the batch, and the batch exits 0 with a gradebook.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from autograder.sandbox import sandbox, submission_folders
from autograder.sandbox.confined import confine

from ..hostile import IPC_KEY, POSIX_SHM_NAME, SOLUTION, write_corpus
from ..submissions import ROOT
from ..tampering_attacks import tampering_attacks

pytestmark = pytest.mark.e2e  # the hostile corpus, graded in every sandbox mode

MODES = ["bubblewrap", "refused", "fork"]


def digest(paths: list[Path]) -> dict[str, str]:
    """Every file under `paths` (bytecode caches, which Python itself rewrites, left out)."""
    found = {}
    for root in paths:
        files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
        for path in files:
            if "__pycache__" not in path.parts:
                found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def listing(folder: Path) -> list[tuple[str, int]]:
    """Names and sizes in a big folder (site-packages), cheap enough to compare."""
    return sorted((p.name, p.stat().st_size) for p in folder.iterdir())


def fake_bwrap(folder: Path) -> Path:
    folder.mkdir()
    script = folder / "bwrap"
    script.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"
    )
    script.chmod(0o755)
    return folder


def ipc_objects() -> dict[str, set[str]]:
    """Every IPC object on the machine that outlives its maker: System V shared memory,
    message queues and semaphore sets (id, key, owner), and POSIX shared memory and queues
    (/dev/shm, /dev/mqueue); multiprocessing's short-lived semaphores left out."""
    found: dict[str, set[str]] = {}
    for kind, owner in (("shm", 7), ("msg", 7), ("sem", 4)):
        lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]
        found[kind] = {" ".join([*line.split()[:2], line.split()[owner]]) for line in lines}
    for folder in ("/dev/shm", "/dev/mqueue"):
        with contextlib.suppress(OSError):
            found[folder] = {name for name in os.listdir(folder) if not name.startswith("sem.mp-")}
    return found


def leftover_children(folder: Path) -> list[str]:
    """Grading children of this batch still running: started with a child.py under
    `folder`, or (forked children, fork servers) working in a folder under it."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        started_here = b"ctrl/child.py" in cmdline and str(folder).encode() in cmdline
        if started_here or Path(cwd).is_relative_to(folder):
            found.append(f"{pid}: {cmdline!r} in {cwd}")
    return found


def unavailable(reason: str) -> None:
    """Skip a mode this machine cannot offer, saying why; CI sets the variable to forbid it."""
    if os.environ.get("COURSE_REQUIRE_ALL_SANDBOX_MODES"):
        pytest.fail(f"COURSE_REQUIRE_ALL_SANDBOX_MODES is set but {reason}")
    pytest.skip(reason)


def mode_command(mode: str, tmp: Path) -> tuple[list[str], dict[str, str]]:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    if mode == "bubblewrap":
        if sandbox.bubblewrap() is None:
            unavailable("bubblewrap is missing or refused here (apt-get install bubblewrap)")
        return ["--sandbox", "bubblewrap"], env
    if mode == "fork":
        if not confine.landlock_abi():
            unavailable("this kernel has no Landlock, which --fork-server needs")
        return ["--fork-server"], env
    if not confine.landlock_abi():
        unavailable(
            "this kernel has no Landlock: without bubblewrap the grader refuses "
            "(tested in test_grader_refuses_without_any_isolation)"
        )
    env["PATH"] = f"{fake_bwrap(tmp / 'fake-bin')}:{env['PATH']}"
    return ["--sandbox", "auto"], env


@pytest.fixture(scope="module", params=MODES)
def graded(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"hostile-{request.param}")
    folder, out = tmp / "submissions", tmp / "graded"
    folder.mkdir()
    script = tmp / "autograder-root" / "run_autograder"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\necho the real grader\n")
    site = Path(sysconfig.get_paths()["purelib"])
    targets = {
        "victim": folder / "honest.ipynb",
        "script": script,
        "package": ROOT / "autograder" / "forged.py",
        "site": site / "forged_by_student.py",
        "solution": SOLUTION,
    }
    expected = write_corpus(folder, targets)
    flags, env = mode_command(request.param, tmp)
    env["TMPDIR"] = str(tmp / "tmp")  # the grader's folders, so leftovers are ours alone
    (tmp / "tmp").mkdir()
    watched = [ROOT / "autograder", script, folder, SOLUTION]
    before = digest(watched), listing(site)
    ipc_before = ipc_objects()
    paths = sorted(folder.rglob("*.ipynb"))
    command = [
        sys.executable,
        "-m",
        "autograder",
        "grade",
        *map(str, paths),
        "--out",
        str(out),
        "--jobs",
        "2",
        "--seed",
        "7",
        "--timeout",
        "30",
        "--assignment",
        "03",
        *flags,
    ]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=1200, env=env)
    return {
        "run": run,
        "out": out,
        "folder": folder,
        "expected": expected,
        "before": before,
        "after": (digest(watched), listing(site)),
        "targets": targets,
        "leftovers": leftover_children(tmp / "tmp"),
        "mode": request.param,
        "ipc": (ipc_before, ipc_objects()),
    }


def rows(graded) -> dict[str, dict]:
    with (graded["out"] / "grades.csv").open() as file:
        return {
            Path(row["file"]).relative_to(graded["folder"]).as_posix(): row
            for row in csv.DictReader(file)
        }


def test_batch_exits_zero_with_a_gradebook(graded):
    assert graded["run"].returncode == 0, graded["run"].stderr[-4000:]
    if graded["mode"] == "refused":
        assert "sandbox: fallback" in graded["run"].stderr
    if graded["mode"] == "fork":
        assert "sandbox: fork server" in graded["run"].stderr


def test_attacks_score_zero_and_honest_submissions_keep_their_scores(graded):
    table = rows(graded)
    got = {
        name: (float(row["unbroadcast"]), float(row["matmul_vjp"])) for name, row in table.items()
    }
    want = {f"{stem}.ipynb": score for stem, score in graded["expected"].items()}
    want |= {"alice/hw.ipynb": (1, 1), "bob/hw.ipynb": (0, 1), "unknown_chapter.ipynb": (0, 0)}
    assert got == want
    assert all(not row["grading_error"] for row in table.values()), table
    refused = {name for name, row in table.items() if row["review"].startswith("refused: ")}
    assert refused == {f"{name}.ipynb" for name in tampering_attacks()}, table


def test_nothing_outside_the_childs_folders_changed(graded):
    (files_before, site_before), (files_after, site_after) = graded["before"], graded["after"]
    changed = {
        p
        for p in files_before.keys() | files_after.keys()
        if files_before.get(p) != files_after.get(p)
    }
    assert not changed
    assert site_after == site_before
    assert not graded["targets"]["package"].exists()
    assert not graded["targets"]["site"].exists()
    for path in graded["out"].rglob("*"):
        assert not path.is_symlink(), path
        if path.is_file():
            assert '"score": 100' not in path.read_text(errors="replace"), path


def test_no_process_outlives_the_batch(graded):
    assert graded["leftovers"] == []


def test_no_ipc_object_outlives_the_batch(graded):
    """The IPC attack made System V shared memory, a queue and a semaphore set, and POSIX
    shared memory, or tried to: none of it may be left on the machine (such objects live in
    an IPC namespace, not in a process, and once outlived the batch until someone ran ipcrm)."""
    before, after = graded["ipc"]
    assert {kind: after[kind] - before.get(kind, set()) for kind in after} == {
        kind: set() for kind in after
    }
    assert not any(
        line.split()[0] == str(IPC_KEY) for kind in ("shm", "msg", "sem") for line in after[kind]
    )
    assert POSIX_SHM_NAME not in after.get("/dev/shm", set())


def test_names_stay_inside_out_and_never_collide(graded):
    folders = sorted(p.name for p in graded["out"].iterdir() if p.is_dir())
    assert len(folders) == len(rows(graded))
    assert all(p.parent == graded["out"] for p in graded["out"].iterdir())
    assert (graded["out"] / "grades.csv").is_file()


def test_unknown_chapter_costs_only_that_notebook(graded):
    row = rows(graded)["unknown_chapter.ipynb"]
    assert "chapter 99" in row["problem"]


def test_text_the_child_prints_is_not_taken_for_a_sandbox_failure(graded):
    row = rows(graded)["forged_sandbox_message.ipynb"]
    assert not row["grading_error"] and "grader problem" not in row["problem"]
    assert (
        "process ended while `unbroadcast` ran"
        in (graded["out"] / row["submission"] / "feedback.txt").read_text()
    )


def test_results_state_the_layers_that_were_active(graded):
    text = (graded["out"] / rows(graded)["honest.ipynb"]["submission"] / "results.json").read_text()
    if graded["mode"] == "bubblewrap":
        assert "bubblewrap: own PID namespace" in text
    elif graded["mode"] == "fork":
        assert "--fork-server" in text and "bubblewrap:" not in text
    else:
        assert "Landlock ABI" in text and "bubblewrap:" not in text


def test_a_submission_that_fills_its_folder_loses_what_that_cost_only(graded):
    """Filling the folder is the student's doing, said as such, never a grading error: the
    exercise that filled it scores 0, the other runs again in fresh folders and keeps its
    point; cells that fill it cost every exercise."""
    table = rows(graded)
    limit = f"{submission_folders.DISK_LIMIT // 1024**2} MiB"
    for name, exercise in (("fills_its_folder", "unbroadcast"), ("disk_hog", "")):
        row = table[f"{name}.ipynb"]
        assert not row["grading_error"], row
        text = (graded["out"] / row["submission"] / "feedback.txt").read_text()
        said = (
            f"Your code wrote more than its folder holds ({limit}"
            if exercise
            else f"Your notebook's cells wrote more than their folder holds ({limit}"
        )
        assert said in text and "GRADING ERROR" not in text, text
