"""A submission's folders: `ctrl`, which the child reads and cannot write (its code, program
and inputs), and each round's fresh `work` and `out`, which it writes, on a size-limited tmpfs
of their own where the grader can mount one (else a watchdog measures them)."""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from autograder.sandbox.confined.confine import LIBC
from autograder.sandbox.errors import SandboxFailure
from autograder.sandbox.pools import Sandbox
from autograder.sandbox.uid_slots import kill_uid, remove_ipc_of

DISK_LIMIT = 512 * 1024**2  # bytes a submission may keep in its folders, per round


INODE_LIMIT = 5000


# A round's tmpfs with less room left than this has been filled by the child: it is all the
# child's (the grader writes nothing there), and what the child writes after its cells (its
# report, its arrays) no longer fits.
FULL_BYTES, FULL_FILES = 1024**2, 16


CONFINED = Path(__file__).resolve().parent / "confined"


# What the child runs: every file of confined/ (its package file aside).
CHILD_FILES = tuple(sorted(p for p in CONFINED.glob("*.py") if p.name != "__init__.py"))


# The invokes, a package the child imports too.
HARNESS = Path(__file__).resolve().parents[1] / "harness"


def can_mount_tmpfs() -> bool:
    if os.geteuid() != 0:
        return False
    with tempfile.TemporaryDirectory() as folder:
        mounted = mount_tmpfs(Path(folder), "size=1m")
        if mounted:
            unmount(Path(folder))
    return mounted


MNT_DETACH, UMOUNT_NOFOLLOW = 2, 8


def mount_tmpfs(folder: Path, options: str) -> bool:
    """mount(2) a tmpfs on `folder`: the system call, not the `mount` program, which cost
    two process starts per submission in the grading process (mount, then umount)."""
    return LIBC.mount(b"tmpfs", os.fsencode(folder), b"tmpfs", 0, options.encode()) == 0


def unmount(folder: Path) -> None:
    """umount2(2) with MNT_DETACH (`umount -l`): gone now, even if still in use; a symbolic
    link is not followed."""
    LIBC.umount2(os.fsencode(folder), MNT_DETACH | UMOUNT_NOFOLLOW)


@dataclass(frozen=True)
class Folders:
    """One submission's folders: `ctrl` the child reads, `work` and `out` it writes; with
    `tmpfs`, each round's `work` and `out` sit on a size-limited tmpfs of their own; `cpus`,
    its job slot's CPUs, the only ones its children run on (none: not pinned)."""

    base: Path
    ctrl: Path
    work: Path
    out: Path
    uid: int | None
    tmpfs: bool = False
    cpus: tuple[int, ...] = ()


def readable_roots() -> list[str]:
    """What the child must read: system libraries, Python, numpy, the teaching helpers."""
    roots = [
        "/usr",
        "/lib",
        "/lib64",
        "/bin",
        "/etc/alternatives",
        "/etc/ld.so.cache",
        "/etc/localtime",
        "/sys/devices/system/cpu",
        "/dev/null",
        "/dev/urandom",
        sys.base_prefix,
        sys.prefix,
        *sys.path[1:],
    ]
    spec = importlib.util.find_spec("coursekit")
    if spec and spec.submodule_search_locations:
        roots += list(spec.submodule_search_locations)
    return _existing(roots)


def _existing(paths: list[str]) -> list[str]:
    found = {os.path.realpath(p) for p in paths if p and os.path.exists(p)}
    return sorted(p for p in found if not _is_repo_root(p))


def _is_repo_root(path: str) -> bool:
    """A checkout on sys.path (an editable install) would expose solutions/: never allow."""
    return os.path.isdir(os.path.join(path, "solutions"))


@contextlib.contextmanager
def for_submission(sandbox: Sandbox) -> Iterator[Folders]:
    """A private folder tree for one submission, removed with everything in it.

    `base` and `ctrl` are on the grader's own file system, which the child cannot write;
    only each round's folders (fresh_round) are the child's, on a tmpfs of their own where
    the grader may mount one, so the grader never needs room that the child can use up."""
    uid = sandbox.take_uid() if sandbox.uid_slots is not None else None
    cpus = sandbox.take_cpus()
    base = Path(tempfile.mkdtemp(prefix="grading-"))
    folders = Folders(
        base, base / "ctrl", base / "work", base / "out", uid, sandbox.offered.tmpfs, cpus
    )
    try:
        base.chmod(0o711)
        folders.ctrl.mkdir(mode=0o750)
        if uid is not None:
            os.chown(folders.ctrl, 0, uid)
        yield folders
    finally:
        if uid is not None:
            kill_uid(uid)
            remove_ipc_of(uid)
            sandbox.uid_slots.put(uid)
        sandbox.give_cpus(cpus)
        _discard_rounds(folders)
        shutil.rmtree(base, ignore_errors=True)


def _mount_tmpfs(folder: Path) -> bool:
    """A round's tmpfs: DISK_LIMIT bytes and INODE_LIMIT files for the child (the root, work
    and out are the grader's three)."""
    return mount_tmpfs(folder, f"size={DISK_LIMIT},nr_inodes={INODE_LIMIT + 3},mode=0711")


def fresh_round(folders: Folders, round_number: int) -> Folders:
    """New, empty work and out folders in `base/round<n>`: nothing a previous round planted
    is reused. The previous rounds' folders go first (their results are read by now), and
    with them the room they used: with `tmpfs`, the new round's folders are a new tmpfs, so
    a child that filled one round's loses that round only, and making the next one never
    needs room that child could have taken."""
    _discard_rounds(folders)
    folder = folders.base / f"round{round_number}"
    folder.mkdir(mode=0o711)
    if folders.tmpfs and not _mount_tmpfs(folder):
        error = ctypes.get_errno()
        raise SandboxFailure(f"could not mount the round's tmpfs on {folder}: {os.strerror(error)}")
    work, out = folder / "work", folder / "out"
    for child_folder in (work, out):
        child_folder.mkdir(mode=0o700)
        if folders.uid is not None:
            os.chown(child_folder, folders.uid, folders.uid)
    return Folders(folders.base, folders.ctrl, work, out, folders.uid, folders.tmpfs, folders.cpus)


def _discard_rounds(folders: Folders) -> None:
    """Remove every round's folders from `base`: a tmpfs is unmounted (its contents go with
    it, unread), a plain folder removed without following links. Only the grader writes in
    `base`, so each `round<n>` there is its own; the child's processes are gone by now."""
    with os.scandir(folders.base) as entries:
        rounds = [Path(entry.path) for entry in entries if entry.name.startswith("round")]
    for folder in rounds:
        if folders.tmpfs:
            unmount(folder)
        shutil.rmtree(folder, ignore_errors=True)


def filled(folders: Folders) -> bool:
    """Whether the child used up its round's tmpfs (less than FULL_BYTES or FULL_FILES
    left): only the child writes there, so this is the child's doing, never the grader's."""
    try:
        found = os.statvfs(folders.work.parent)
    except OSError:
        return False
    return found.f_bavail * found.f_frsize < FULL_BYTES or found.f_favail < FULL_FILES


def install_child_files(folders: Folders) -> None:
    """child.py, confine.py and the harness package into ctrl, readable (not writable) by
    the child: the harness is how the child calls each exercise, as the notebook check does."""
    for source in CHILD_FILES:
        shutil.copy(source, folders.ctrl / source.name)
        share_read_only(folders, folders.ctrl / source.name)
    harness = folders.ctrl / HARNESS.name
    harness.mkdir(mode=0o750)  # as ctrl itself: the parent's, the child's uid may only read
    if folders.uid is not None:
        os.chown(harness, 0, folders.uid)
    for source in sorted(HARNESS.glob("*.py")):
        shutil.copy(source, harness / source.name)
        share_read_only(folders, harness / source.name)


def share_read_only(folders: Folders, path: Path) -> None:
    """A file the parent wrote into ctrl, readable (not writable) by the child's uid."""
    path.chmod(0o640 if folders.uid is not None else 0o644)
    if folders.uid is not None:
        os.chown(path, 0, folders.uid)


def over_disk_quota(folders: Folders) -> bool:
    """True once the child's folders hold more than DISK_LIMIT bytes or INODE_LIMIT entries."""
    size = count = 0
    pending = [folders.work, folders.out]
    while pending:
        try:
            entries = list(os.scandir(pending.pop()))
        except OSError:
            continue
        for entry in entries:
            count += 1
            with contextlib.suppress(OSError):
                info = entry.stat(follow_symlinks=False)
                size += info.st_blocks * 512
                if entry.is_dir(follow_symlinks=False):
                    pending.append(Path(entry.path))
            if size > DISK_LIMIT or count > INODE_LIMIT:
                return True
    return False
