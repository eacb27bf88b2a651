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
"""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from autograder.sandbox import forkserver
from autograder.sandbox.children import (
    FRAMEWORK_MEMORY_LIMIT,
    MEMORY_LIMIT,
    PROCESS_LIMIT,
    TASK_LIMIT,
    scrubbed_environment,
)
from autograder.sandbox.confined import confine
from autograder.sandbox.errors import SandboxUnavailable
from autograder.sandbox.submission_folders import DISK_LIMIT, INODE_LIMIT, can_mount_tmpfs
from autograder.sandbox.uid_slots import UID_BASE, reserve_uid_slots
from autograder.sandbox.warm_children import WarmChild

MODES = ("auto", "bubblewrap", "fallback")


@dataclass
class Sandbox:
    """How children are confined here; detected once per batch by `detect`."""

    bwrap: str | None = None
    landlock_abi: int = 0
    seccomp: bool = False
    run_as_root: bool = False
    uid_slots: queue.Queue | None = None
    uid_locks: list[int] = field(default_factory=list)  # fds whose flocks reserve the uids
    tmpfs: bool = False
    # Whether a child that starts as root may leave the IPC, network and host-name
    # namespaces (CAP_SYS_ADMIN: not in an unprivileged container).
    own_namespaces: bool = False
    # Each job slot's CPUs (cpu_groups); a new submission box takes the least used group.
    cpu_groups: list[tuple[int, ...]] = field(default_factory=list)
    jobs: int = 1
    cpu_users: list[int] = field(default_factory=list)
    cpu_lock: threading.Lock = field(default_factory=threading.Lock)
    unsafe: bool = False
    probes: list[str] = field(default_factory=list)
    # JAX's persistent compilation cache, built by the grader (`prepare --warm-with`): the
    # child reads it (bind-mounted read-only, a Landlock read rule) and never writes it; only
    # the grader's own warm-up, running our solution notebook, gets it writable.
    compile_cache: str | None = None
    compile_cache_writable: bool = False
    # `grade --fork-server`: each round forks from a server that imported numpy and the
    # round's framework once (forkserver.py), instead of starting a fresh Python.
    fork: bool = False
    fork_servers: dict[tuple[str, ...], forkserver.ForkServer] = field(default_factory=dict)
    fork_lock: threading.Lock = field(default_factory=threading.Lock)
    # Children started before their submission was known (WarmChild), not yet taken.
    warm_children: list[WarmChild] = field(default_factory=list)
    warm_started: int = 0

    @property
    def mode(self) -> str:
        if self.fork:
            return "fork server (fallback layers)"
        if self.bwrap:
            return "bubblewrap"
        return "unsafe: rlimits only" if self.unsafe and not self.landlock_abi else "fallback"

    def layers(self) -> list[str]:
        return protections(self)

    def fork_server(self, allowed: tuple[str, ...]) -> forkserver.ForkServer:
        """The running server for these frameworks, started (again, if one died) on demand;
        starting it early lets its import overlap the grader's own preparation."""
        with self.fork_lock:
            server = self.fork_servers.get(allowed)
            if server is None or not server.alive():
                if server is not None:
                    server.close()
                server = forkserver.ForkServer(
                    allowed, scrubbed_environment(Path("/"), self.compile_cache))
                self.fork_servers[allowed] = server
            return server

    def start_warm_children(self, allowed: tuple[str, ...], count: int) -> None:
        """Start `count` warm children for these frameworks (see WarmChild)."""
        for _ in range(count):
            warm = WarmChild.start(self, allowed)
            with self.fork_lock:
                self.warm_children.append(warm)
                self.warm_started += 1

    def take_warm(self, allowed: tuple[str, ...]) -> WarmChild | None:
        """A warm child for these frameworks, or None."""
        with self.fork_lock:
            for warm in self.warm_children:
                if warm.allowed == allowed:
                    self.warm_children.remove(warm)
                    return warm
        return None

    def take_uid(self) -> int:
        """A slot uid for a new submission sandbox, waiting for one to come back; while none is
        free, idle warm children are stopped one by one, so a sandbox never waits on a uid that
        a warm child nobody takes holds."""
        assert self.uid_slots is not None
        while True:
            try:
                return self.uid_slots.get(timeout=0.05)
            except queue.Empty:
                with self.fork_lock:
                    idle = self.warm_children.pop() if self.warm_children else None
                if idle is not None:
                    idle.close()

    def take_cpus(self) -> tuple[int, ...]:
        """The CPUs of the least used job slot, for a new submission box; () where children
        are not pinned (one job slot, or one CPU). The grader runs at most --jobs children
        at once (but for a submission's numpy part beside its own workers), so each gets a
        group of its own wherever there are as many CPUs as --jobs."""
        groups = self.borrow_cpus((), 1)
        return groups[0] if groups else ()

    def borrow_cpus(self, own: tuple[int, ...], count: int) -> list[tuple[int, ...]]:
        """`count` more groups, the least used first, never `own`: for a new box, or for a
        round whose child forks workers into job slots the grader reserved for it (with
        give_cpus for each once done)."""
        with self.cpu_lock:
            if len(self.cpu_users) != len(self.cpu_groups):
                self.cpu_users = [0] * len(self.cpu_groups)
            others = [i for i, group in enumerate(self.cpu_groups) if group != own]
            chosen = sorted(others, key=self.cpu_users.__getitem__)[:max(0, count)]
            for index in chosen:
                self.cpu_users[index] += 1
            return [self.cpu_groups[index] for index in chosen]

    def give_cpus(self, cpus: tuple[int, ...]) -> None:
        """A box's CPUs back (its processes are gone)."""
        with self.cpu_lock:
            if cpus in self.cpu_groups:
                self.cpu_users[self.cpu_groups.index(cpus)] -= 1

    def close(self) -> None:
        """Stop the fork servers and warm children (the uid locks go with the process)."""
        with self.fork_lock:
            warm, self.warm_children = self.warm_children, []
        self.close_fork_servers()
        for child in warm:
            child.close()

    def close_fork_servers(self) -> None:
        """Stop the fork servers; a later round starts its own again (with this sandbox's
        settings as they are then)."""
        with self.fork_lock:
            for server in self.fork_servers.values():
                server.close()
            self.fork_servers.clear()


def bubblewrap() -> str | None:
    """The bwrap binary when it works here (it can be installed but refused by the kernel)."""
    path = shutil.which("bwrap")
    if path is None or sys.platform != "linux":
        return None
    probe = subprocess.run(
        [path, "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid", "true"],
        capture_output=True, check=False,
    )
    return path if probe.returncode == 0 else None


def can_leave_namespaces() -> bool:
    """Whether a child started by this grader may leave the IPC, network and host-name
    namespaces: root with CAP_SYS_ADMIN (refused in an unprivileged container)."""
    if os.geteuid() != 0 or sys.platform != "linux":
        return False
    try:
        probe = subprocess.run(
            [sys.executable, "-I", "-c", "import ctypes, sys; sys.exit(ctypes.CDLL(None)."
             f"unshare({confine.OWN_NAMESPACES}) != 0)"],
            capture_output=True, check=False, timeout=60, env={"PATH": "/usr/bin:/bin"})
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
    return [tuple(cpus[i * len(cpus) // count:(i + 1) * len(cpus) // count])
            for i in range(count)]


def detect(mode: str = "auto", jobs: int = 1, unsafe: bool = False,
           fork: bool = False) -> Sandbox:
    """The strongest confinement this machine offers; refuse when it offers too little."""
    if mode not in MODES:
        raise SandboxUnavailable(f"unknown sandbox mode {mode!r}; choose one of {MODES}")
    found = Sandbox(unsafe=unsafe, landlock_abi=confine.landlock_abi(),
                    seccomp=confine.seccomp_available(), tmpfs=can_mount_tmpfs(),
                    own_namespaces=can_leave_namespaces(), cpu_groups=cpu_groups(jobs),
                    jobs=max(1, jobs))
    if mode != "fallback":
        found.bwrap = bubblewrap()
        if mode == "bubblewrap" and not found.bwrap:
            raise SandboxUnavailable(
                "bubblewrap was asked for but is missing or refused here; install it "
                "(apt-get install bubblewrap) or run with --sandbox fallback.")
    if os.geteuid() == 0:
        reserve_uid_slots(found, max(1, jobs))
    if not found.bwrap and not found.landlock_abi and not unsafe:
        raise SandboxUnavailable(
            "Neither bubblewrap nor Landlock is available, so submitted code could read "
            "and write anything the grader can. Install bubblewrap (apt-get install "
            "bubblewrap), or use a Linux kernel >= 5.13 with Landlock enabled; or, on a "
            "machine you do not mind losing, pass --unsafe-no-sandbox.")
    if fork:
        _allow_fork_server(found, mode)
    return found


def _allow_fork_server(found: Sandbox, mode: str) -> None:
    """A forked child has no bubblewrap namespaces: Landlock must keep it to its folders,
    and it must not be able to reach the server it came from (another uid, or seccomp's
    ban on ptrace where it runs as the grader's own uid)."""
    refusal = fork_server_refusal(found, mode)
    if refusal:
        raise SandboxUnavailable(refusal)
    found.fork, found.bwrap = True, None


def fork_server_refusal(found: Sandbox, mode: str) -> str:
    """Why this sandbox cannot fork its children from a server ("" when it can)."""
    if mode == "bubblewrap":
        return ("--sandbox bubblewrap and --fork-server exclude each other: a forked child does "
                "not run under bubblewrap. Choose one.")
    if not found.landlock_abi or not (found.uid_slots is not None or found.seccomp):
        return ("--fork-server needs Landlock (Linux >= 5.13), and either a grader running as "
                "root (each child gets its own uid) or seccomp (pip install pyseccomp, with the "
                "system's libseccomp2); grade without --fork-server here.")
    return ""


def allow_fork_server_if_possible(found: Sandbox, mode: str) -> bool:
    """Fork the children from a server where this sandbox allows it (the default for a batch
    of a framework chapter); else keep the sandbox as it is."""
    if fork_server_refusal(found, mode):
        return False
    found.fork, found.bwrap = True, None
    return True


def protections(sandbox: Sandbox | None) -> list[str]:
    """What is enforced, in words an instructor can check; recorded in every result."""
    sandbox = sandbox or Sandbox(unsafe=True)
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
        (f"folders limited to {DISK_LIMIT // 1024**2} MiB and {INODE_LIMIT} files per round "
         + ("(a size-limited tmpfs of their own, apart from the grader's files)" if sandbox.tmpfs
            else "(watchdog)")),
    ]
    active += _isolation_layers(sandbox)
    if sandbox.unsafe:
        active.append("UNSAFE: graded with --unsafe-no-sandbox")
    return active


def _isolation_layers(sandbox: Sandbox) -> list[str]:
    layers = []
    if sandbox.bwrap:
        layers += ["bubblewrap: read-only system and Python, rest of file system hidden",
                   "bubblewrap: no network", "bubblewrap: own PID namespace, dies with it",
                   "bubblewrap: own IPC namespace"]
    if sandbox.uid_slots is not None:
        layers.append(f"own unprivileged uid per job ({UID_BASE}+), all its processes and IPC "
                      f"objects removed after each round, at most {PROCESS_LIMIT} processes "
                      "(threads included)")
    elif sandbox.run_as_root:
        layers.append("runs as root without capabilities (this Python, or the temporary "
                      "folder, is not reachable by an unprivileged uid)")
    layers += _namespace_layers(sandbox) + _neighbour_layers(sandbox)
    layers.append("no_new_privs")
    if sandbox.landlock_abi:
        layers.append(f"Landlock ABI {sandbox.landlock_abi}: reads only Python, system libraries "
                      "and its inputs; writes only its own folders"
                      + ("; no TCP" if sandbox.landlock_abi >= 4 else "")
                      + ("; no signals outside the sandbox" if sandbox.landlock_abi >= 6 else ""))
    if sandbox.seccomp:
        layers.append("seccomp: no ptrace, mounts, namespaces, new sessions, device files, "
                      "non-UNIX sockets or raised rlimits; no System V IPC or POSIX message "
                      "queues; no change of its CPUs, nor of other processes' scheduling")
    if not sandbox.fork:
        layers.append("a child started before its submission was read, or whose exercises "
                      "run in worker processes, imports its framework (framework code only) "
                      "before it confines itself")
    else:
        layers.append("--fork-server: each child is forked from an interpreter that imported "
                      "numpy and its round's framework and nothing else, into its own session, "
                      "uid (root only) and namespaces (as above); bubblewrap does not apply")
    if not sandbox.bwrap and not sandbox.landlock_abi:
        layers.append("bubblewrap and Landlock not available: network and file system "
                      "NOT isolated")
    return layers


def _namespace_layers(sandbox: Sandbox) -> list[str]:
    """What keeps a child's IPC objects (and network) from outliving it, outside bubblewrap."""
    if sandbox.bwrap:
        return []
    if sandbox.own_namespaces:
        return ["own IPC, network and host-name namespaces for every child that starts as "
                "root (forked, or without a uid of its own): what it makes there dies with it"]
    return [("no IPC namespace of its own (the grader may not make one here): System V IPC "
             "and POSIX message queues denied by seccomp") if sandbox.seccomp else
            "no IPC namespace of its own and no seccomp: System V IPC NOT isolated"]


def _neighbour_layers(sandbox: Sandbox) -> list[str]:
    """What keeps one submission from taking its neighbours' CPUs or process slots."""
    layers = ["own session and process group per child (setsid)"
              + (", which it cannot leave (seccomp)" if sandbox.seccomp else "")]
    if sandbox.cpu_groups:
        groups = "; ".join(",".join(map(str, group)) for group in sandbox.cpu_groups)
        shared = (f", {sandbox.jobs} job slots sharing {len(sandbox.cpu_groups)} groups"
                  if sandbox.jobs > len(sandbox.cpu_groups) else "")
        layers.append(f"CPU share: each job slot's child runs on its own CPUs only ({groups}"
                      f"{shared})" + (", and may not change them (seccomp)" if sandbox.seccomp
                                       else ", but could change them (no seccomp)"))
    else:
        layers.append("CPU share: one child at a time (one job slot or one CPU), not pinned")
    if sandbox.uid_slots is None:
        layers.append(
            f"no uid of its own: no new processes (seccomp), threads only, and the child "
            f"stopped past {TASK_LIMIT} threads (counted by the grader)" if sandbox.seccomp
            else "no uid of its own and no seccomp: number of processes NOT limited")
    return layers


# ---------------------------------------------------------------- folders


# ---------------------------------------------------------------- running


