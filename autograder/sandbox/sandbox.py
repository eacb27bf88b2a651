"""Starting a child process for untrusted code, with every protection this machine offers.

The parent keeps what the child reads (child code, program, inputs) in a folder the child
cannot write, gives each round a fresh working folder and a fresh output folder, captures
the child's output through a pipe with a size cap, and learns that the child started from
a byte the trusted child code sends before any submitted code runs, never from text the
child prints. Layers, strongest first, each recorded in every result:

- bubblewrap (`bwrap`): read-only system and Python, nothing else visible, no network, own
  PID namespace (everything the child started dies with it);
- an unprivileged uid of its own per job slot (when the grader runs as root and that uid
  can run Python), whose every process and IPC object is removed after each round;
- outside bubblewrap, for a child that starts as root: its own IPC, network and host-name
  namespaces (where the grader may make them), so nothing it makes there outlives it;
- a session of its own (setsid) that it cannot leave, its job slot's CPUs only (so however
  many processes or threads it starts, its neighbours keep theirs), and a bound on its
  processes: a uid's RLIMIT_NPROC, else no new processes at all (seccomp) and a count of its
  threads by the supervisor;
- Landlock, seccomp, `no_new_privs`, dropped capabilities (see confine.py);
- rlimits, size-limited folders (a tmpfs of their own per round where one can be mounted,
  else a watchdog), one deadline per submission, its process group killed after every round.

Without bubblewrap and Landlock the grader refuses to grade unless told `unsafe`.

This module detects what the machine offers (`detect`: a frozen capabilities.Capabilities, in
a pools.Sandbox beside what will run) and says what is enforced (`protections`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import replace

from autograder.sandbox.capabilities import Capabilities
from autograder.sandbox.children import (
    FRAMEWORK_MEMORY_LIMIT,
    MEMORY_LIMIT,
    PROCESS_LIMIT,
    TASK_LIMIT,
)
from autograder.sandbox.confined import confine
from autograder.sandbox.errors import SandboxUnavailable
from autograder.sandbox.pools import Sandbox
from autograder.sandbox.submission_folders import DISK_LIMIT, INODE_LIMIT, can_mount_tmpfs
from autograder.sandbox.uid_slots import UID_BASE, reserve_uid_slots

MODES = ("auto", "bubblewrap", "fallback")


def bubblewrap() -> str | None:
    """The bwrap binary when it works here (it can be installed but refused by the kernel)."""
    path = shutil.which("bwrap")
    if path is None or sys.platform != "linux":
        return None
    probe = subprocess.run(
        [path, "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid", "true"],
        capture_output=True,
        check=False,
    )
    return path if probe.returncode == 0 else None


def can_leave_namespaces() -> bool:
    """Whether a child started by this grader may leave the IPC, network and host-name
    namespaces: root with CAP_SYS_ADMIN (refused in an unprivileged container)."""
    if os.geteuid() != 0 or sys.platform != "linux":
        return False
    if len(os.listdir("/proc/self/task")) == 1:
        return unshare_in_fork()
    return unshare_in_python()


def unshare_in_fork() -> bool:
    """Ask a fork of this (single-threaded) process to leave the namespaces, as a child
    would. Starting a Python for it took 30 ms of the 40 ms that choosing the sandbox takes,
    which grading one submission waits out before its warm children start importing."""
    pid = os.fork()
    if pid == 0:  # nothing but the system call, then out: no cleanup, no atexit handlers
        try:
            os._exit(0 if confine.LIBC.unshare(confine.OWN_NAMESPACES) == 0 else 1)
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def unshare_in_python() -> bool:
    """The same asked of a new Python: where this process has other threads, whose locks a
    fork would copy held."""
    try:
        probe = subprocess.run(
            [
                sys.executable,
                "-I",
                "-c",
                "import ctypes, sys; sys.exit(ctypes.CDLL(None)."
                f"unshare({confine.OWN_NAMESPACES}) != 0)",
            ],
            capture_output=True,
            check=False,
            timeout=60,
            env={"PATH": "/usr/bin:/bin"},
        )
    except (OSError, subprocess.SubprocessError):
        return False  # no Python to start: the children will say so, loudly
    return probe.returncode == 0


def cpu_groups(jobs: int, cpus: list[int] | None = None) -> list[tuple[int, ...]]:
    """The CPUs this grader may use, cut into one group per job slot (or per CPU, where
    --jobs is larger): a child runs on its slot's group only, so a submission that starts
    many busy processes slows its own group, never its neighbours'. [] with one job slot or
    one CPU: nothing to share."""
    cpus = sorted(os.sched_getaffinity(0)) if cpus is None else sorted(cpus)
    count = min(jobs, len(cpus))
    if count < 2:
        return []
    return [
        tuple(cpus[i * len(cpus) // count : (i + 1) * len(cpus) // count]) for i in range(count)
    ]


def detect(mode: str = "auto", jobs: int = 1, unsafe: bool = False, fork: bool = False) -> Sandbox:
    """The strongest confinement this machine offers; refuse when it offers too little."""
    if mode not in MODES:
        raise SandboxUnavailable(f"unknown sandbox mode {mode!r}; choose one of {MODES}")
    bwrap = bubblewrap() if mode != "fallback" else None
    if mode == "bubblewrap" and not bwrap:
        raise SandboxUnavailable(
            "bubblewrap was asked for but is missing or refused here; install it "
            "(apt-get install bubblewrap) or run with --sandbox fallback."
        )
    uid_slots, uid_locks = reserve_uid_slots(max(1, jobs)) if os.geteuid() == 0 else (None, [])
    offered = Capabilities(
        bwrap=bwrap,
        landlock_abi=confine.landlock_abi(),
        seccomp=confine.seccomp_available(),
        run_as_root=os.geteuid() == 0 and uid_slots is None,
        own_uids=uid_slots is not None,
        tmpfs=can_mount_tmpfs(),
        own_namespaces=can_leave_namespaces(),
        cpu_groups=tuple(cpu_groups(jobs)),
        jobs=max(1, jobs),
        unsafe=unsafe,
    )
    if not offered.bwrap and not offered.landlock_abi and not unsafe:
        raise SandboxUnavailable(
            "Neither bubblewrap nor Landlock is available, so submitted code could read "
            "and write anything the grader can. Install bubblewrap (apt-get install "
            "bubblewrap), or use a Linux kernel >= 5.13 with Landlock enabled; or, on a "
            "machine you do not mind losing, pass --unsafe-no-sandbox."
        )
    if fork:
        refusal = fork_server_refusal(offered, mode)
        if refusal:
            raise SandboxUnavailable(refusal)
        offered = forking(offered)
    return Sandbox(offered, uid_slots, uid_locks)


def forking(offered: Capabilities) -> Capabilities:
    """The record with the children forked from a server: a forked child has no bubblewrap
    namespaces, so Landlock must keep it to its folders, and it must not be able to reach
    the server it came from (another uid, or seccomp's ban on ptrace where it runs as the
    grader's own uid): fork_server_refusal says where it cannot."""
    return replace(offered, fork=True, bwrap=None)


def fork_server_refusal(offered: Capabilities, mode: str) -> str:
    """Why this machine cannot fork its children from a server ("" when it can)."""
    if mode == "bubblewrap":
        return (
            "--sandbox bubblewrap and --fork-server exclude each other: a forked child does "
            "not run under bubblewrap. Choose one."
        )
    if not offered.landlock_abi or not (offered.own_uids or offered.seccomp):
        return (
            "--fork-server needs Landlock (Linux >= 5.13), and either a grader running as "
            "root (each child gets its own uid) or seccomp (pip install pyseccomp, with the "
            "system's libseccomp2); grade without --fork-server here."
        )
    return ""


def allow_fork_server_if_possible(sandbox: Sandbox, mode: str) -> bool:
    """Fork the children from a server where this sandbox allows it (the default for a batch
    of a framework chapter); else keep the sandbox as it is."""
    if fork_server_refusal(sandbox.offered, mode):
        return False
    sandbox.offered = forking(sandbox.offered)
    return True


def protections(offered: Capabilities) -> list[str]:
    """What is enforced, in words an instructor can check; recorded in every result."""
    active = [
        "separate process per submission, fresh folders each round",
        "child code, program and inputs in a folder the child cannot write",
        "scrubbed environment",
        f"memory limit {MEMORY_LIMIT // 1024**2} MiB "
        f"({FRAMEWORK_MEMORY_LIMIT // 1024**2} MiB where TensorFlow or JAX is allowed)",
        "one time limit per submission across all its rounds, and per exercise",
        "process group killed after every round",
        "output captured through a capped pipe; result files read without following links",
        "inputs only: no references, no seed in the child",
        "results read as bounded, validated JSON and arrays; only the grader writes results",
        (
            f"folders limited to {DISK_LIMIT // 1024**2} MiB and {INODE_LIMIT} files per round "
            + (
                "(a size-limited tmpfs of their own, apart from the grader's files)"
                if offered.tmpfs
                else "(watchdog)"
            )
        ),
    ]
    active += _isolation_layers(offered)
    if offered.unsafe:
        active.append("UNSAFE: graded with --unsafe-no-sandbox")
    return active


def _isolation_layers(offered: Capabilities) -> list[str]:
    layers = []
    if offered.bwrap:
        layers += [
            "bubblewrap: read-only system and Python, rest of file system hidden",
            "bubblewrap: no network",
            "bubblewrap: own PID namespace, dies with it",
            "bubblewrap: own IPC namespace",
        ]
    if offered.own_uids:
        layers.append(
            f"own unprivileged uid per job ({UID_BASE}+), all its processes and IPC "
            f"objects removed after each round, at most {PROCESS_LIMIT} processes "
            "(threads included)"
        )
    elif offered.run_as_root:
        layers.append(
            "runs as root without capabilities (this Python, or the temporary "
            "folder, is not reachable by an unprivileged uid)"
        )
    layers += _namespace_layers(offered) + _neighbour_layers(offered)
    layers.append("no_new_privs")
    if offered.landlock_abi:
        layers.append(
            f"Landlock ABI {offered.landlock_abi}: reads only Python, system libraries "
            "and its inputs; writes only its own folders"
            + ("; no TCP" if offered.landlock_abi >= 4 else "")
            + ("; no signals outside the sandbox" if offered.landlock_abi >= 6 else "")
        )
    if offered.seccomp:
        layers.append(
            "seccomp: no ptrace, mounts, namespaces, new sessions, device files, "
            "non-UNIX sockets or raised rlimits; no System V IPC or POSIX message "
            "queues; no change of its CPUs, nor of other processes' scheduling"
        )
    if not offered.fork:
        layers.append(
            "a child started before its submission was read, or whose exercises "
            "run in worker processes, imports its framework (framework code only) "
            "before it confines itself"
        )
    else:
        layers.append(
            "--fork-server: each child is forked from an interpreter that imported "
            "numpy and its round's framework and nothing else, into its own session, "
            "uid (root only) and namespaces (as above); bubblewrap does not apply"
        )
    if not offered.bwrap and not offered.landlock_abi:
        layers.append("bubblewrap and Landlock not available: network and file system NOT isolated")
    return layers


def _namespace_layers(offered: Capabilities) -> list[str]:
    """What keeps a child's IPC objects (and network) from outliving it, outside bubblewrap."""
    if offered.bwrap:
        return []
    if offered.own_namespaces:
        return [
            "own IPC, network and host-name namespaces for every child that starts as "
            "root (forked, or without a uid of its own): what it makes there dies with it"
        ]
    return [
        (
            "no IPC namespace of its own (the grader may not make one here): System V IPC "
            "and POSIX message queues denied by seccomp"
        )
        if offered.seccomp
        else "no IPC namespace of its own and no seccomp: System V IPC NOT isolated"
    ]


def _neighbour_layers(offered: Capabilities) -> list[str]:
    """What keeps one submission from taking its neighbours' CPUs or process slots."""
    layers = [
        "own session and process group per child (setsid)"
        + (", which it cannot leave (seccomp)" if offered.seccomp else "")
    ]
    if offered.cpu_groups:
        groups = "; ".join(",".join(map(str, group)) for group in offered.cpu_groups)
        shared = (
            f", {offered.jobs} job slots sharing {len(offered.cpu_groups)} groups"
            if offered.jobs > len(offered.cpu_groups)
            else ""
        )
        layers.append(
            f"CPU share: each job slot's child runs on its own CPUs only ({groups}"
            f"{shared})"
            + (
                ", and may not change them (seccomp)"
                if offered.seccomp
                else ", but could change them (no seccomp)"
            )
        )
    else:
        layers.append("CPU share: one child at a time (one job slot or one CPU), not pinned")
    if not offered.own_uids:
        layers.append(
            f"no uid of its own: no new processes (seccomp), threads only, and the child "
            f"stopped past {TASK_LIMIT} threads (counted by the grader)"
            if offered.seccomp
            else "no uid of its own and no seccomp: number of processes NOT limited"
        )
    return layers
