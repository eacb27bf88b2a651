"""The size-limited folder of a submission: a tmpfs mounted with the system call."""

from __future__ import annotations

import contextlib
import csv
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from autograder.sandbox import submission_folders
from autograder.sandbox.capabilities import Capabilities
from autograder.sandbox.pools import Sandbox

ROOT = Path(__file__).resolve().parents[2]


def mounted(folder: Path) -> list[str]:
    with open("/proc/mounts") as mounts:
        return [line for line in mounts if line.split()[1] == str(folder)]


def test_a_tmpfs_is_mounted_with_its_limits_and_unmounted(tmp_path):
    folder = tmp_path / "box"
    folder.mkdir()
    ok = submission_folders.mount_tmpfs(folder, "size=1m,nr_inodes=50,mode=0700")
    if os.geteuid() != 0:  # only root may mount: refused, and nothing is left mounted
        assert not ok and not mounted(folder) and not submission_folders.can_mount_tmpfs()
        return
    assert ok and submission_folders.can_mount_tmpfs()
    try:
        (line,) = mounted(folder)
        assert line.split()[2] == "tmpfs" and "size=1024k" in line and "nr_inodes=50" in line
        (folder / "inside").write_text("x")
    finally:
        submission_folders.unmount(folder)
    assert not mounted(folder) and not (folder / "inside").exists()


def fill(folder: Path) -> None:
    """What a hostile child does: write until no byte, then no file, fits any more."""
    with contextlib.suppress(OSError), (folder / "hog").open("wb") as hog:
        for _ in range(submission_folders.DISK_LIMIT // 2**20 + 2):
            hog.write(b"x" * 2**20)
    with contextlib.suppress(OSError):
        for index in range(submission_folders.INODE_LIMIT + 10):
            (folder / f"f{index}").touch()


def test_a_round_that_fills_its_folder_leaves_the_grader_room_for_the_next(tmp_path, monkeypatch):
    """Each round's folders are a tmpfs of their own (where the grader may mount one), the
    grader's files are not on it, and a new round first discards the last: a child that
    fills its folder is seen to (its verdict, not a grading error), and the grader's next
    round still has its folders and its program (it once failed there with ENOSPC)."""
    monkeypatch.setattr(submission_folders, "DISK_LIMIT", 4 * 2**20)
    monkeypatch.setattr(submission_folders, "INODE_LIMIT", 50)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    box = Sandbox(Capabilities(unsafe=True, tmpfs=submission_folders.can_mount_tmpfs()))
    assert box.offered.tmpfs == (os.geteuid() == 0)
    with submission_folders.for_submission(box) as folders:
        first = submission_folders.fresh_round(folders, 1)
        fill(first.work)
        if box.offered.tmpfs:
            assert mounted(first.work.parent) and not mounted(folders.base)
            assert submission_folders.filled(first)
        else:
            assert submission_folders.over_disk_quota(first)
        (folders.ctrl / "program.json").write_bytes(b"x" * 2**20)  # the grader's own room
        second = submission_folders.fresh_round(folders, 2)
        assert not first.work.parent.exists() and not list(second.work.iterdir())
        full = (
            submission_folders.filled if box.offered.tmpfs else submission_folders.over_disk_quota
        )
        assert not full(second)
        assert mounted(second.work.parent) if box.offered.tmpfs else True
    assert not folders.base.exists() and not mounted(second.work.parent)


def test_a_round_the_grader_cannot_mount_is_the_graders_failure_not_the_students(
    tmp_path, monkeypatch
):
    """The other side of the line: where the grader's own mount of a round's tmpfs fails, the
    submission is a GRADING ERROR (exit 1, 'not your fault'), never a verdict on its code."""
    if not submission_folders.can_mount_tmpfs():
        pytest.skip("the grader mounts a tmpfs per round only as root")
    from autograder.grading import command as batch

    monkeypatch.setattr(submission_folders, "_mount_tmpfs", lambda folder: False)
    submission = tmp_path / "solution.ipynb"
    shutil.copy(ROOT / "solutions" / "03_unbroadcasting.ipynb", submission)
    out = tmp_path / "graded"
    assert (
        batch.grade(
            submissions=[submission],
            out=out,
            jobs=1,
            seed=3,
            fork_server=False,
            reference_cache=tmp_path / "cache",
        )
        == 1
    )
    with (out / "grades.csv").open(encoding="utf-8") as file:
        (row,) = csv.DictReader(file)
    assert "could not mount the round's tmpfs" in row["grading_error"], row
    feedback = next(out.glob("*/feedback.txt")).read_text(encoding="utf-8")
    assert "this is not your fault" in feedback, feedback
