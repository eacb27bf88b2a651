"""The size-limited folder of a submission: a tmpfs mounted with the system call."""

from __future__ import annotations

import os
from pathlib import Path

from autograder import sandbox


def mounted(folder: Path) -> list[str]:
    with open("/proc/mounts") as mounts:
        return [line for line in mounts if line.split()[1] == str(folder)]


def test_a_tmpfs_is_mounted_with_its_limits_and_unmounted(tmp_path):
    folder = tmp_path / "box"
    folder.mkdir()
    ok = sandbox.mount_tmpfs(folder, "size=1m,nr_inodes=50,mode=0700")
    if os.geteuid() != 0:  # only root may mount: refused, and nothing is left mounted
        assert not ok and not mounted(folder) and not sandbox._can_mount_tmpfs()
        return
    assert ok and sandbox._can_mount_tmpfs()
    try:
        (line,) = mounted(folder)
        assert line.split()[2] == "tmpfs" and "size=1024k" in line and "nr_inodes=50" in line
        (folder / "inside").write_text("x")
    finally:
        sandbox.unmount(folder)
    assert not mounted(folder) and not (folder / "inside").exists()
