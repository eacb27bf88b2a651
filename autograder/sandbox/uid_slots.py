"""Unprivileged uids for the children, one per job slot, when the grader runs as root: held
with a lock file per uid so that two graders on one machine never share (and kill) one, and
every process of a slot's uid is killed after each round."""

from __future__ import annotations

import contextlib
import fcntl
import os
import queue
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder.sandbox.confined.confine import LIBC
from autograder.sandbox.errors import SandboxFailure

UID_BASE = 64000  # the uids (and gids) of job slots: UID_BASE + slot


UID_RANGE = 1024  # how many slot uids all graders on this machine share


# Root-only folder of lock files, one per slot uid: a grader holds the lock of each uid it
# uses for its whole run, so two graders on one machine never share (and kill) a uid.
UID_LOCKS = Path("/run/autodiff-grader")


def _uid_can_run_python(uid: int) -> bool:
    """The dedicated uid must be able to start this Python (a venv under /root cannot)."""
    try:
        probe = subprocess.run(
            [sys.executable, "-I", "-c", "import numpy"],
            user=uid,
            group=uid,
            extra_groups=[],
            capture_output=True,
            timeout=60,
            cwd="/",
            env={"PATH": "/usr/bin:/bin"},
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return probe.returncode == 0


def _uid_can_reach(uid: int, folder: str) -> bool:
    """Whether the uid may pass through `folder` and every folder above it: the submission
    boxes are made there, and bubblewrap binds them as that uid (a TMPDIR inside a folder
    only root may enter, such as /root, cannot)."""
    try:
        probe = subprocess.run(
            ["/bin/sh", "-c", 'test -x "$1"', "sh", folder],
            user=uid,
            group=uid,
            extra_groups=[],
            capture_output=True,
            timeout=10,
            cwd="/",
            env={"PATH": "/usr/bin:/bin"},
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return probe.returncode == 0


def reserve_uid_slots(jobs: int) -> tuple[queue.Queue | None, list[int]]:
    """Give each job slot a uid no other grader on this machine holds, when such a uid can
    run Python: (the free slot uids, the fds of their locks). (None, []) otherwise: the
    child then runs as root without capabilities (Capabilities.run_as_root)."""
    try:
        uids, locks = claim_uids(jobs)
    except OSError:  # no /run to hold the locks in: never risk sharing a uid
        uids, locks = [], []
    if (
        not uids
        or not _uid_can_run_python(uids[0])
        or not _uid_can_reach(uids[0], tempfile.gettempdir())
    ):
        release_uids(locks)
        return None, []
    slots: queue.Queue = queue.Queue()
    for uid in uids:
        slots.put(uid)
    return slots, locks


def claim_uids(count: int, folder: Path | None = None) -> tuple[list[int], list[int]]:
    """Reserve `count` slot uids for this process: an exclusive flock on one lock file per
    uid, held until `release_uids` or exit. Every process of a slot uid is killed after each
    round, so a uid shared with a second grader would kill that grader's children.
    Returns (uids, lock fds); fewer uids than asked when the range is exhausted."""
    folder = folder or UID_LOCKS
    folder.mkdir(mode=0o700, exist_ok=True)
    if folder.is_symlink() or folder.stat().st_uid != os.geteuid():
        raise SandboxFailure(f"{folder} is not this grader's own folder; remove it")
    uids: list[int] = []
    fds: list[int] = []
    for uid in range(UID_BASE, UID_BASE + UID_RANGE):
        if len(uids) == count:
            break
        fd = os.open(folder / f"uid-{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        uids.append(uid)
        fds.append(fd)
    return uids, fds


def release_uids(fds: list[int]) -> None:
    """Give reserved uids back (closing a lock file's fd drops its flock)."""
    for fd in fds:
        os.close(fd)


def kill_uid(uid: int) -> None:
    """SIGKILL every process whose real uid is `uid`, until none is left running. A zombie
    is not waited for: it runs nothing, and the child just ended (bubblewrap, started as
    that uid) stays one until its parent, this grader, reaps it, so waiting for it cost a
    second per round."""
    for _ in range(20):
        victims = [pid for pid in pids() if _real_uid(pid) == uid and not _zombie(pid)]
        if not victims:
            return
        for pid in victims:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


def _zombie(pid: int) -> bool:
    return stat_fields(pid)[:1] == ["Z"]


def pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _real_uid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def stat_fields(pid: int) -> list[str]:
    """/proc/<pid>/stat after the command name: state, parent, process group, ...; [] once
    the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


# System V IPC objects by kind: /proc/sysvipc's file, the column of the owner's uid and of
# its creator's, and the removal (IPC_RMID is 0 for all three).
IPC_RMID = 0
SYSV_IPC = {"shm": (7, 9, "shmctl"), "msg": (7, 9, "msgctl"), "sem": (4, 6, "semctl")}
# Where POSIX shared memory and message queues have their files.
POSIX_IPC_FOLDERS = (Path("/dev/shm"), Path("/dev/mqueue"))


def remove_ipc_of(uid: int) -> None:
    """Remove every IPC object a slot uid owns or made: System V shared memory, message
    queues and semaphore sets, and POSIX shared memory and queues. A child with a uid of its
    own starts unprivileged and so cannot have an IPC namespace of its own; seccomp denies it
    these calls, and this is the second layer, run after each round as kill_uid is: such an
    object outlives its process, and 16 MiB of shared memory left by each submission would
    stay on the machine until someone ran ipcrm."""
    for kind, (owner, creator, remove) in SYSV_IPC.items():
        for ident in _sysv_ids(kind, uid, owner, creator):
            _remove_sysv(remove, ident)
    for folder in POSIX_IPC_FOLDERS:
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    if entry.stat(follow_symlinks=False).st_uid == uid:
                        os.unlink(entry.path)


def _remove_sysv(call: str, ident: int) -> None:
    """shmctl/msgctl(id, IPC_RMID, NULL) or semctl(id, 0, IPC_RMID); an object already gone
    is no error."""
    if call == "semctl":
        LIBC.semctl(ident, 0, IPC_RMID)
    else:
        getattr(LIBC, call)(ident, IPC_RMID, None)


def _sysv_ids(kind: str, uid: int, owner: int, creator: int) -> list[int]:
    """The ids of the System V objects of this kind that `uid` owns or created."""
    try:
        lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split()
        with contextlib.suppress(IndexError, ValueError):
            if uid in (int(fields[owner]), int(fields[creator])):
                found.append(int(fields[1]))
    return found
