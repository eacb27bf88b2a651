"""Starting a child process for untrusted code, with every protection this machine offers.

The parent keeps what the child reads (child code, program, inputs) in a folder the child
cannot write, gives each round a fresh working folder and a fresh output folder, captures
the child's output through a pipe with a size cap, and learns that the child started from
a byte the trusted child code sends before any submitted code runs, never from text the
child prints. Layers, strongest first, each recorded in every result:

- bubblewrap (`bwrap`): read-only system and Python, nothing else visible, no network, own
  PID namespace (everything the child started dies with it);
- an unprivileged uid of its own per job slot (when the grader runs as root and that uid
  can run Python), whose every process is killed after each round;
- Landlock, seccomp, `no_new_privs`, dropped capabilities (see confine.py);
- rlimits, size-limited folders (a tmpfs of their own per round where one can be mounted,
  else a watchdog), one deadline per submission, its process group killed after every round.

Without bubblewrap and Landlock the grader refuses to grade unless told `unsafe`.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import importlib.util
import json
import os
import queue
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from autograder.sandbox import forkserver
from autograder.sandbox.confined import confine

MEMORY_LIMIT = 2 * 1024**3  # bytes of address space
FILE_SIZE_LIMIT = 64 * 1024**2
FRAMEWORK_MEMORY_LIMIT = 8 * 1024**3  # address space when TensorFlow or JAX may be imported
DISK_LIMIT = 512 * 1024**2  # bytes a submission may keep in its folders, per round
INODE_LIMIT = 5000
# A round's tmpfs with less room left than this has been filled by the child: it is all the
# child's (the grader writes nothing there), and what the child writes after its cells (its
# report, its arrays) no longer fits.
FULL_BYTES, FULL_FILES = 1024**2, 16
PROCESS_LIMIT = 256  # threads count too: TensorFlow and JAX start dozens
OUTPUT_CAP = 64 * 1024  # bytes of the child's own stdout/stderr kept for diagnosis
UID_BASE = 64000  # the uids (and gids) of job slots: UID_BASE + slot
UID_RANGE = 1024  # how many slot uids all graders on this machine share
# Root-only folder of lock files, one per slot uid: a grader holds the lock of each uid it
# uses for its whole run, so two graders on one machine never share (and kill) a uid.
UID_LOCKS = Path("/run/autodiff-grader")
MODES = ("auto", "bubblewrap", "fallback")
CONFINED = Path(__file__).resolve().parent / "confined"
CHILD_FILES = (CONFINED / "child.py", CONFINED / "confine.py")
HARNESS = Path(__file__).resolve().parents[1] / "harness"  # the invokes, a package the child imports


@dataclass(frozen=True)
class Limits:
    """Time limits in seconds: per exercise (enforced in the child) and per submission."""

    per_exercise: float = 30.0
    per_submission: float = 120.0
    memory: int = MEMORY_LIMIT


@dataclass(frozen=True)
class ChildResult:
    returncode: int | None
    timed_out: bool
    started: bool = True
    disk_exceeded: bool = False
    launcher_output: str = ""


class SandboxUnavailable(RuntimeError):
    """This machine cannot protect the grader; the message says what is missing and how."""


class SandboxFailure(RuntimeError):
    """The sandbox itself did not start: a grader problem, never the student's."""


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
        """A slot uid for a new submission box, waiting for one to come back; while none is
        free, idle warm children are stopped one by one, so a box never waits on a uid that
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


def _uid_can_run_python(uid: int) -> bool:
    """The dedicated uid must be able to start this Python (a venv under /root cannot)."""
    try:
        probe = subprocess.run([sys.executable, "-I", "-c", "import numpy"], user=uid, group=uid,
                               extra_groups=[], capture_output=True, timeout=60, cwd="/",
                               env={"PATH": "/usr/bin:/bin"}, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return probe.returncode == 0


def _uid_can_reach(uid: int, folder: str) -> bool:
    """Whether the uid may pass through `folder` and every folder above it: the submission
    boxes are made there, and bubblewrap binds them as that uid (a TMPDIR inside a folder
    only root may enter, such as /root, cannot)."""
    try:
        probe = subprocess.run(["/bin/sh", "-c", 'test -x "$1"', "sh", folder], user=uid,
                               group=uid, extra_groups=[], capture_output=True, timeout=10,
                               cwd="/", env={"PATH": "/usr/bin:/bin"}, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return probe.returncode == 0


def _can_mount_tmpfs() -> bool:
    if os.geteuid() != 0:
        return False
    with tempfile.TemporaryDirectory() as folder:
        mounted = mount_tmpfs(Path(folder), "size=1m")
        if mounted:
            unmount(Path(folder))
    return mounted


MNT_DETACH, UMOUNT_NOFOLLOW = 2, 8
_LIBC = ctypes.CDLL(None, use_errno=True)


def mount_tmpfs(folder: Path, options: str) -> bool:
    """mount(2) a tmpfs on `folder`: the system call, not the `mount` program, which cost
    two process starts per submission in the grading process (mount, then umount)."""
    return _LIBC.mount(b"tmpfs", os.fsencode(folder), b"tmpfs", 0,
                       options.encode()) == 0


def unmount(folder: Path) -> None:
    """umount2(2) with MNT_DETACH (`umount -l`): gone now, even if still in use; a symbolic
    link is not followed."""
    _LIBC.umount2(os.fsencode(folder), MNT_DETACH | UMOUNT_NOFOLLOW)


def detect(mode: str = "auto", jobs: int = 1, unsafe: bool = False,
           fork: bool = False) -> Sandbox:
    """The strongest confinement this machine offers; refuse when it offers too little."""
    if mode not in MODES:
        raise SandboxUnavailable(f"unknown sandbox mode {mode!r}; choose one of {MODES}")
    found = Sandbox(unsafe=unsafe, landlock_abi=confine.landlock_abi(),
                    seccomp=confine.seccomp_available(), tmpfs=_can_mount_tmpfs())
    if mode != "fallback":
        found.bwrap = bubblewrap()
        if mode == "bubblewrap" and not found.bwrap:
            raise SandboxUnavailable(
                "bubblewrap was asked for but is missing or refused here; install it "
                "(apt-get install bubblewrap) or run with --sandbox fallback.")
    if os.geteuid() == 0:
        _reserve_uid_slots(found, max(1, jobs))
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


def _reserve_uid_slots(found: Sandbox, jobs: int) -> None:
    """Give each job slot a uid no other grader on this machine holds, when such a uid can
    run Python; otherwise the child runs as root without capabilities (`run_as_root`)."""
    try:
        uids, found.uid_locks = claim_uids(jobs)
    except OSError:  # no /run to hold the locks in: never risk sharing a uid
        uids = []
    found.run_as_root = (not uids or not _uid_can_run_python(uids[0])
                         or not _uid_can_reach(uids[0], tempfile.gettempdir()))
    if found.run_as_root:
        release_uids(found.uid_locks)
        found.uid_locks = []
        return
    found.uid_slots = queue.Queue()
    for uid in uids:
        found.uid_slots.put(uid)


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


def protections(box: Sandbox | None) -> list[str]:
    """What is enforced, in words an instructor can check; recorded in every result."""
    box = box or Sandbox(unsafe=True)
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
         + ("(a size-limited tmpfs of their own, apart from the grader's files)" if box.tmpfs
            else "(watchdog)")),
    ]
    active += _isolation_layers(box)
    if box.unsafe:
        active.append("UNSAFE: graded with --unsafe-no-sandbox")
    return active


def _isolation_layers(box: Sandbox) -> list[str]:
    layers = []
    if box.bwrap:
        layers += ["bubblewrap: read-only system and Python, rest of file system hidden",
                   "bubblewrap: no network", "bubblewrap: own PID namespace, dies with it"]
    if box.uid_slots is not None:
        layers.append(f"own unprivileged uid per job ({UID_BASE}+), all its processes "
                      f"killed after each round, at most {PROCESS_LIMIT} processes")
    elif box.run_as_root:
        layers.append("runs as root without capabilities (this Python, or the temporary "
                      "folder, is not reachable by an unprivileged uid)")
    layers.append("no_new_privs")
    if box.landlock_abi:
        layers.append(f"Landlock ABI {box.landlock_abi}: reads only Python, system libraries "
                      "and its inputs; writes only its own folders"
                      + ("; no TCP" if box.landlock_abi >= 4 else "")
                      + ("; no signals outside the sandbox" if box.landlock_abi >= 6 else ""))
    if box.seccomp:
        layers.append("seccomp: no ptrace, mounts, namespaces, new sessions, device files, "
                      "non-UNIX sockets or raised rlimits")
    if not box.fork:
        layers.append("a child started before its submission was read, or whose exercises "
                      "run in worker processes, imports its framework (framework code only) "
                      "before it confines itself")
    else:
        layers.append("--fork-server: each child is forked from an interpreter that imported "
                      "numpy and its round's framework and nothing else, into its own process "
                      "group, uid and network namespace (root only); bubblewrap does not "
                      "apply")
    if not box.bwrap and not box.landlock_abi:
        layers.append("bubblewrap and Landlock not available: network and file system "
                      "NOT isolated")
    return layers


# ---------------------------------------------------------------- folders


@dataclass(frozen=True)
class Box:
    """One submission's folders: `ctrl` the child reads, `work` and `out` it writes; with
    `tmpfs`, each round's `work` and `out` sit on a size-limited tmpfs of their own."""

    base: Path
    ctrl: Path
    work: Path
    out: Path
    uid: int | None
    tmpfs: bool = False


def _readable_roots() -> list[str]:
    """What the child must read: system libraries, Python, numpy, the teaching helpers."""
    roots = ["/usr", "/lib", "/lib64", "/bin", "/etc/alternatives", "/etc/ld.so.cache",
             "/etc/localtime", "/sys/devices/system/cpu", "/dev/null", "/dev/urandom",
             sys.base_prefix, sys.prefix, *sys.path[1:]]
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
def submission_box(box: Sandbox) -> Iterator[Box]:
    """A private folder tree for one submission, removed with everything in it.

    `base` and `ctrl` are on the grader's own file system, which the child cannot write;
    only each round's folders (fresh_round) are the child's, on a tmpfs of their own where
    the grader may mount one, so the grader never needs room that the child can use up."""
    uid = box.take_uid() if box.uid_slots is not None else None
    base = Path(tempfile.mkdtemp(prefix="grading-"))
    folders = Box(base, base / "ctrl", base / "work", base / "out", uid, box.tmpfs)
    try:
        base.chmod(0o711)
        folders.ctrl.mkdir(mode=0o750)
        if uid is not None:
            os.chown(folders.ctrl, 0, uid)
        yield folders
    finally:
        if uid is not None:
            kill_uid(uid)
            box.uid_slots.put(uid)
        _discard_rounds(folders)
        shutil.rmtree(base, ignore_errors=True)


def _mount_tmpfs(folder: Path) -> bool:
    """A round's tmpfs: DISK_LIMIT bytes and INODE_LIMIT files for the child (the root, work
    and out are the grader's three)."""
    return mount_tmpfs(folder, f"size={DISK_LIMIT},nr_inodes={INODE_LIMIT + 3},mode=0711")


def fresh_round(box: Box, round_number: int) -> Box:
    """New, empty work and out folders in `base/round<n>`: nothing a previous round planted
    is reused. The previous rounds' folders go first (their results are read by now), and
    with them the room they used: with `tmpfs`, the new round's folders are a new tmpfs, so
    a child that filled one round's loses that round only, and making the next one never
    needs room that child could have taken."""
    _discard_rounds(box)
    folder = box.base / f"round{round_number}"
    folder.mkdir(mode=0o711)
    if box.tmpfs and not _mount_tmpfs(folder):
        error = ctypes.get_errno()
        raise SandboxFailure(f"could not mount the round's tmpfs on {folder}: "
                             f"{os.strerror(error)}")
    work, out = folder / "work", folder / "out"
    for child_folder in (work, out):
        child_folder.mkdir(mode=0o700)
        if box.uid is not None:
            os.chown(child_folder, box.uid, box.uid)
    return Box(box.base, box.ctrl, work, out, box.uid, box.tmpfs)


def _discard_rounds(box: Box) -> None:
    """Remove every round's folders from `base`: a tmpfs is unmounted (its contents go with
    it, unread), a plain folder removed without following links. Only the grader writes in
    `base`, so each `round<n>` there is its own; the child's processes are gone by now."""
    with os.scandir(box.base) as entries:
        rounds = [Path(entry.path) for entry in entries if entry.name.startswith("round")]
    for folder in rounds:
        if box.tmpfs:
            unmount(folder)
        shutil.rmtree(folder, ignore_errors=True)


def filled(box: Box) -> bool:
    """Whether the child used up its round's tmpfs (less than FULL_BYTES or FULL_FILES
    left): only the child writes there, so this is the child's doing, never the grader's."""
    try:
        found = os.statvfs(box.work.parent)
    except OSError:
        return False
    return found.f_bavail * found.f_frsize < FULL_BYTES or found.f_favail < FULL_FILES


def install_child_files(folders: Box) -> None:
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


def share_read_only(box: Box, path: Path) -> None:
    """A file the parent wrote into ctrl, readable (not writable) by the child's uid."""
    path.chmod(0o640 if box.uid is not None else 0o644)
    if box.uid is not None:
        os.chown(path, 0, box.uid)


def confinement_plan(sandbox: Sandbox, box: Box, limits: dict) -> dict:
    """What the child applies to itself (confine.confine) before submitted code runs."""
    plan: dict = {"limits": dict(limits), "no_new_privs": True,
                  "seccomp": sandbox.seccomp,
                  "drop_capabilities": os.geteuid() == 0 and box.uid is None}
    if box.uid is not None:
        plan["limits"]["processes"] = PROCESS_LIMIT
    if sandbox.landlock_abi:
        plan["landlock"] = {"read": [*_readable_roots(), str(box.ctrl)],
                            "write": [str(box.work), str(box.out), "/dev/null"]}
        if sandbox.compile_cache:
            kind = "write" if sandbox.compile_cache_writable else "read"
            plan["landlock"][kind].append(sandbox.compile_cache)
    return plan


# ---------------------------------------------------------------- running


def scrubbed_environment(workdir: Path, compile_cache: str | None = None) -> dict[str, str]:
    """Only what Python and numpy need; nothing of the grader's own environment. With a
    compilation cache, JAX looks there first, for every program however small."""
    cache = {"JAX_COMPILATION_CACHE_DIR": compile_cache,
             "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
             "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0"} if compile_cache else {}
    return cache | {
        "PATH": "/usr/bin:/bin",
        "HOME": str(workdir),
        "TMPDIR": str(workdir),
        "LANG": "C.UTF-8",
        "MPLBACKEND": "Agg",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "TF_ENABLE_ONEDNN_OPTS": "0",  # oneDNN's batch matmul can corrupt the heap (__main__)
        "XLA_FLAGS": "--xla_force_host_platform_device_count=1",
    }


def child_limits(limits: Limits, frameworks: bool = False) -> dict[str, int]:
    """The rlimits the child applies to itself before running any submitted code.

    They are set in the child rather than between fork and exec (preexec_fn), which is not
    safe in a multithreaded parent such as one that has imported JAX.
    """
    return {
        # TensorFlow and JAX reserve far more address space than they use.
        "memory": max(limits.memory, FRAMEWORK_MEMORY_LIMIT) if frameworks else limits.memory,
        "cpu_seconds": int(limits.per_submission) + 5,
        "file_size": FILE_SIZE_LIMIT,
    }


def _bwrap_command(sandbox: Sandbox, box: Box, argv: list[str]) -> list[str]:
    # /tmp first: a tmpfs mounted later would hide anything bound below it (a venv in /tmp).
    command = [sandbox.bwrap, "--tmpfs", "/tmp"]
    for root in _readable_roots():
        command += ["--ro-bind", root, root]
    if sandbox.compile_cache:
        bind = "--bind" if sandbox.compile_cache_writable else "--ro-bind"
        command += [bind, sandbox.compile_cache, sandbox.compile_cache]
    for link in ("/bin", "/lib", "/lib64", "/sbin"):
        if os.path.islink(link):
            command += ["--symlink", os.readlink(link), link]
    command += [
        "--dev", "/dev", "--proc", "/proc", "--ro-bind", str(box.ctrl), str(box.ctrl),
        "--bind", str(box.work), str(box.work), "--bind", str(box.out), str(box.out),
        "--chdir", str(box.work),
        "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
        "--die-with-parent", "--new-session", "--cap-drop", "ALL",
    ]
    return command + argv


def run_child(sandbox: Sandbox, box: Box, deadline: float,
              allowed: tuple[str, ...] = (), forked: bool = True) -> ChildResult:
    """Run `python -I ctrl/child.py` in `box.work` until it ends or the deadline passes;
    with --fork-server (unless not `forked`), fork the child from the server for the
    frameworks `allowed`.

    The child writes one byte to the `ready` pipe once it has confined itself; a child
    that never does so means the sandbox failed to start (SandboxFailure).
    """
    if sandbox.fork and forked:
        return _run_forked(sandbox, box, deadline, allowed)
    ready_read, ready_write = os.pipe()
    try:
        process = _start_child(sandbox, box, [str(ready_write)], (ready_write,))
    except SandboxFailure:
        os.close(ready_read)
        raise
    finally:
        os.close(ready_write)
    return _supervise_started(process, ready_read, box, deadline, sandbox)


def _start_child(sandbox: Sandbox, box: Box, arguments: list[str],
                 descriptors: tuple[int, ...]) -> subprocess.Popen:
    """`python -I ctrl/child.py ARGUMENTS` in its sandbox, in a process group of its own."""
    argv = [sys.executable, "-I", str(box.ctrl / "child.py"), *arguments]
    command = _bwrap_command(sandbox, box, argv) if sandbox.bwrap else argv
    identity = {"user": box.uid, "group": box.uid, "extra_groups": []} if box.uid else {}
    try:
        return subprocess.Popen(
            command, cwd=box.work, env=scrubbed_environment(box.work, sandbox.compile_cache),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, process_group=0, close_fds=True,
            pass_fds=descriptors, **identity)
    except OSError as error:
        raise SandboxFailure(f"could not start the child: {error}") from error


def _supervise_started(process: subprocess.Popen, ready_read: int, box: Box,
                       deadline: float, sandbox: Sandbox) -> ChildResult:
    ready = os.fdopen(ready_read, "rb")
    try:
        return _supervise(process, ready, box, deadline, sandbox)
    finally:
        ready.close()
        process.stdout.close()


@dataclass
class WarmChild:
    """A child started before its submission is known, which imports its frameworks and
    waits (child.wait_warm), in a submission box of its own.

    Grading one submission is mostly a TensorFlow or JAX child's import (TensorFlow: 1.5 s);
    the grader's own start-up (its imports, the references) is 0.3 s more, which a child
    started after it waits out. A warm child imports meanwhile. It is confined by the same
    layers as any child: only framework code runs before it confines itself, as in a fork
    server. The part that takes it writes its inputs and program, then says go; a part
    whose code sets the environment (read at import) or needs Keras runs a fresh child.
    """

    allowed: tuple[str, ...]
    base: Box  # the submission box, as submission_box gives it
    box: Box  # its first round's folders
    process: subprocess.Popen
    ready_read: int
    go: int
    folders: contextlib.ExitStack

    @classmethod
    def start(cls, sandbox: Sandbox, allowed: tuple[str, ...]) -> WarmChild:
        folders = contextlib.ExitStack()
        base = folders.enter_context(submission_box(sandbox))
        ready_read = ready_write = go_read = go_write = -1
        try:
            install_child_files(base)
            box = fresh_round(base, 1)
            ready_read, ready_write = os.pipe()
            go_read, go_write = os.pipe()
            process = _start_child(
                sandbox, box, [str(ready_write), "--warm", str(go_read), json.dumps(allowed)],
                (ready_write, go_read))
        except BaseException:
            for fd in (ready_read, go_write):
                if fd >= 0:
                    os.close(fd)
            folders.close()
            raise
        finally:
            for fd in (ready_write, go_read):
                if fd >= 0:
                    os.close(fd)
        return cls(allowed, base, box, process, ready_read, go_write, folders)

    def run(self, deadline: float, sandbox: Sandbox) -> ChildResult:
        """Say go (the program is written) and supervise it as a freshly started child."""
        with contextlib.suppress(OSError):  # gone already: it reports that it never started
            os.write(self.go, b"1")
        os.close(self.go)
        self.go = -1
        ready, self.ready_read = self.ready_read, -1
        return _supervise_started(self.process, ready, self.box, deadline, sandbox)

    def stop(self) -> None:
        """End the child, if it still runs; its folders stay with its box."""
        if self.go >= 0:
            os.close(self.go)
            self.go = -1
        if self.ready_read >= 0:
            end_processes(self.process, self.box)
            os.close(self.ready_read)
            self.ready_read = -1
            self.process.stdout.close()

    def close(self) -> None:
        """End the child and remove its folders (the uid slot goes back)."""
        self.stop()
        self.folders.close()


def _run_forked(sandbox: Sandbox, box: Box, deadline: float,
                allowed: tuple[str, ...]) -> ChildResult:
    request = {"ctrl": str(box.ctrl), "work": str(box.work), "uid": box.uid,
               "env": scrubbed_environment(box.work, sandbox.compile_cache)}
    try:
        child, ready_read = sandbox.fork_server(allowed).start(request, deadline)
    except (OSError, forkserver.ForkServerFailure) as error:
        raise SandboxFailure(str(error)) from error
    ready = os.fdopen(ready_read, "rb")
    try:
        return _supervise(child, ready, box, deadline, sandbox)
    finally:
        ready.close()
        child.close()


def _supervise(process: subprocess.Popen | forkserver.ForkedChild, ready, box: Box,
               deadline: float, sandbox: Sandbox) -> ChildResult:
    output, started, timed_out, full = bytearray(), False, False, False
    streams = selectors.DefaultSelector()
    streams.register(process.stdout, selectors.EVENT_READ, "output")
    streams.register(ready, selectors.EVENT_READ, "ready")
    exit_signal = _exit_signal(process)
    if exit_signal is not None:
        streams.register(exit_signal, selectors.EVENT_READ, "exit")
    next_disk_check = 0.0
    try:
        while process.poll() is None:
            now = time.monotonic()
            if now >= deadline:
                timed_out = True
                break
            if not sandbox.tmpfs and now >= next_disk_check:
                full, next_disk_check = over_disk_quota(box), now + 0.25
                if full:
                    break
            for key, _ in streams.select(timeout=min(0.1, deadline - now)):
                if key.data == "exit":
                    continue  # readable once the child has exited: poll() now says so
                chunk = os.read(key.fileobj.fileno(), 65536)
                if not chunk:
                    streams.unregister(key.fileobj)
                elif key.data == "ready":
                    started = True
                elif len(output) < OUTPUT_CAP:
                    output += chunk[: OUTPUT_CAP - len(output)]
        started = started or _drained_ready(ready)
        end_processes(process, box)
    finally:
        streams.close()
        if exit_signal is not None and not isinstance(process, forkserver.ForkedChild):
            os.close(exit_signal)  # the pidfd opened here
    # Once more now that the child has ended: it may have filled its folder since the last
    # check, and a tmpfs says so only when asked.
    exceeded = full or (filled(box) if sandbox.tmpfs else over_disk_quota(box))
    return ChildResult(process.returncode if not timed_out and not full else None, timed_out,
                       started, exceeded, output.decode(errors="replace"))


def _exit_signal(process: subprocess.Popen | forkserver.ForkedChild) -> int | None:
    """A descriptor that becomes readable when the child exits, so the supervisor wakes at
    once instead of at its next 0.1 s timeout: once the child has closed its pipes, a
    select on them alone sleeps the whole timeout (in a batch, once per round). A forked
    child's is the monitor's status pipe (its own, not to be closed here); a started
    one's, a pidfd (Linux 5.3; None where there is none, and the timeout is the fallback)."""
    if isinstance(process, forkserver.ForkedChild):
        return process.status_pipe
    try:
        return os.pidfd_open(process.pid)
    except (AttributeError, OSError):
        return None


def _drained_ready(ready) -> bool:
    os.set_blocking(ready.fileno(), False)
    try:
        return bool(os.read(ready.fileno(), 1))
    except BlockingIOError:
        return False


def end_processes(process: subprocess.Popen | forkserver.ForkedChild, box: Box) -> None:
    """Kill the child's group (and, with a dedicated uid, every process of that uid), and
    wait until they are gone: SIGKILL is delivered asynchronously."""
    for _ in range(200):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        if isinstance(process, forkserver.ForkedChild) and process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(process.pid, signal.SIGKILL)  # forked, and maybe not yet in its group
        if box.uid is not None:
            kill_uid(box.uid)
        if not _live_members(process.pid):
            break
        time.sleep(0.025)
    process.wait()


def _live_members(group: int) -> list[int]:
    """Processes of this process group that are still running (zombies do not count)."""
    members = []
    for pid in _pids():
        fields = _stat_fields(pid)
        if fields and fields[0] != "Z" and int(fields[2]) == group:
            members.append(pid)
    return members


def _stat_fields(pid: int) -> list[str]:
    """/proc/<pid>/stat after the command name: state, parent, process group, ...; [] once
    the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def kill_uid(uid: int) -> None:
    """SIGKILL every process whose real uid is `uid`, until none is left running. A zombie
    is not waited for: it runs nothing, and the child just ended (bubblewrap, started as
    that uid) stays one until its parent, this grader, reaps it, so waiting for it cost a
    second per round."""
    for _ in range(20):
        victims = [pid for pid in _pids() if _real_uid(pid) == uid and not _zombie(pid)]
        if not victims:
            return
        for pid in victims:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


def _zombie(pid: int) -> bool:
    return _stat_fields(pid)[:1] == ["Z"]


def _pids() -> list[int]:
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


def over_disk_quota(box: Box) -> bool:
    """True once the child's folders hold more than DISK_LIMIT bytes or INODE_LIMIT entries."""
    size = count = 0
    pending = [box.work, box.out]
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
