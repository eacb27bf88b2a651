"""Running one child: its environment and limits, the bubblewrap command or the fork server,
its supervision to the deadline, and the end of every process it started."""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

from autograder.sandbox import forkserver
from autograder.sandbox.capabilities import Capabilities
from autograder.sandbox.environment import scrubbed_environment
from autograder.sandbox.errors import SandboxFailure
from autograder.sandbox.pools import Sandbox
from autograder.sandbox.submission_folders import (
    Folders,
    filled,
    over_disk_quota,
    readable_roots,
    share_read_only,
)
from autograder.sandbox.uid_slots import kill_uid, pids, remove_ipc_of, stat_fields

MEMORY_LIMIT = 2 * 1024**3  # bytes of address space


FILE_SIZE_LIMIT = 64 * 1024**2


FRAMEWORK_MEMORY_LIMIT = 8 * 1024**3  # address space when TensorFlow or JAX may be imported


PROCESS_LIMIT = 256  # threads count too: TensorFlow and JAX start dozens


# Threads a child without a uid of its own may have, all its processes together (it may start
# no process, but a fork server's or a warm child's workers are forked before it confines
# itself). No rlimit bounds them (RLIMIT_NPROC never applies to root, and a grader's own uid
# has its other processes): the supervisor counts them every TASK_CHECK seconds and stops the
# child past the limit, before its threads could use up the machine's process ids.
TASK_LIMIT = 1024


TASK_CHECK = 0.25


OUTPUT_CAP = 64 * 1024  # bytes of the child's own stdout/stderr kept for diagnosis


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
    tasks_exceeded: bool = False  # stopped past TASK_LIMIT threads (its exit code: -9)


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


def _bwrap_command(offered: Capabilities, folders: Folders, argv: list[str]) -> list[str]:
    # /tmp first: a tmpfs mounted later would hide anything bound below it (a venv in /tmp).
    command = [offered.bwrap, "--tmpfs", "/tmp"]
    for root in readable_roots():
        command += ["--ro-bind", root, root]
    if offered.compile_cache:
        bind = "--bind" if offered.compile_cache_writable else "--ro-bind"
        command += [bind, offered.compile_cache, offered.compile_cache]
    for link in ("/bin", "/lib", "/lib64", "/sbin"):
        if os.path.islink(link):
            command += ["--symlink", os.readlink(link), link]
    command += [
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--ro-bind",
        str(folders.ctrl),
        str(folders.ctrl),
        "--bind",
        str(folders.work),
        str(folders.work),
        "--bind",
        str(folders.out),
        str(folders.out),
        "--chdir",
        str(folders.work),
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
    ]
    return command + argv


def run_child(
    sandbox: Sandbox,
    folders: Folders,
    deadline: float,
    allowed: tuple[str, ...] = (),
    forked: bool = True,
) -> ChildResult:
    """Run `python -I ctrl/child.py` in `folders.work` until it ends or the deadline passes;
    with --fork-server (unless not `forked`), fork the child from the server for the
    frameworks `allowed`.

    The child writes one byte to the `ready` pipe once it has confined itself; a child
    that never does so means the sandbox failed to start (SandboxFailure).
    """
    with cpus_for_round(sandbox, folders):
        if sandbox.offered.fork and forked:
            return _run_forked(sandbox, folders, deadline, allowed)
        ready_read, ready_write = os.pipe()
        try:
            process = start_child(sandbox.offered, folders, [str(ready_write)], (ready_write,))
        except SandboxFailure:
            os.close(ready_read)
            raise
        finally:
            os.close(ready_write)
        return supervise_started(process, ready_read, folders, deadline, sandbox.offered)


@contextlib.contextmanager
def cpus_for_round(sandbox: Sandbox, folders: Folders) -> Iterator[None]:
    """The round's CPUs: its box's group, and, where its child forks k workers
    (child.fork_workers, in job slots the grader reserved for this submission), k - 1 more
    groups, so the workers run side by side as they would unpinned. The round's program
    (written by the grader, in `ctrl`, which the child cannot write) gets the union."""
    borrowed = _widen_for_workers(sandbox, folders)
    try:
        yield
    finally:
        for group in borrowed:
            sandbox.give_cpus(group)


def _widen_for_workers(sandbox: Sandbox, folders: Folders) -> list[tuple[int, ...]]:
    if not folders.cpus:
        return []
    from autograder.sandbox.confined import wire  # imports numpy: not before `grade` starts

    path = folders.ctrl / wire.PROGRAM
    program = json.loads(path.read_text())
    workers = len(program.get("workers") or [])
    borrowed = sandbox.borrow_cpus(folders.cpus, workers - 1) if workers > 1 else []
    if borrowed:
        program["confine"]["cpus"] = sorted({*folders.cpus, *(c for g in borrowed for c in g)})
        written = path.with_name(path.name + ".new")
        written.write_text(json.dumps(program))
        share_read_only(folders, written)
        os.replace(written, path)
    return borrowed


def start_child(
    offered: Capabilities, folders: Folders, arguments: list[str], descriptors: tuple[int, ...]
) -> subprocess.Popen:
    """`python -I ctrl/child.py ARGUMENTS` in its sandbox, in a session of its own (setsid,
    done by subprocess between fork and exec, safe in a threaded grader): its own process
    group, which seccomp keeps it in, and its own share of the CPU where the kernel groups
    tasks by session (autogroup)."""
    argv = [sys.executable, "-I", str(folders.ctrl / "child.py"), *arguments]
    command = _bwrap_command(offered, folders, argv) if offered.bwrap else argv
    uid = folders.uid
    identity = {"user": uid, "group": uid, "extra_groups": []} if uid else {}
    try:
        return subprocess.Popen(
            command,
            cwd=folders.work,
            env=scrubbed_environment(
                folders.work, offered.compile_cache, offered.compile_cache_writable
            ),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            pass_fds=descriptors,
            **identity,
        )
    except OSError as error:
        raise SandboxFailure(f"could not start the child: {error}") from error


def supervise_started(
    process: subprocess.Popen,
    ready_read: int,
    folders: Folders,
    deadline: float,
    offered: Capabilities,
) -> ChildResult:
    ready = os.fdopen(ready_read, "rb")
    try:
        return _supervise(process, ready, folders, deadline, offered)
    finally:
        ready.close()
        process.stdout.close()


def _run_forked(
    sandbox: Sandbox, folders: Folders, deadline: float, allowed: tuple[str, ...]
) -> ChildResult:
    request = {
        "ctrl": str(folders.ctrl),
        "work": str(folders.work),
        "uid": folders.uid,
        "env": scrubbed_environment(
            folders.work, sandbox.offered.compile_cache, sandbox.offered.compile_cache_writable
        ),
        "namespaces": sandbox.offered.own_namespaces,
    }
    try:
        child, ready_read = sandbox.fork_server(allowed).start(request, deadline)
    except (OSError, forkserver.ForkServerFailure) as error:
        raise SandboxFailure(str(error)) from error
    ready = os.fdopen(ready_read, "rb")
    try:
        return _supervise(child, ready, folders, deadline, sandbox.offered)
    finally:
        ready.close()
        child.close()


def _supervise(
    process: subprocess.Popen | forkserver.ForkedChild,
    ready,
    folders: Folders,
    deadline: float,
    offered: Capabilities,
) -> ChildResult:
    output, started, timed_out, full, crowded = bytearray(), False, False, False, False
    streams = selectors.DefaultSelector()
    streams.register(process.stdout, selectors.EVENT_READ, "output")
    streams.register(ready, selectors.EVENT_READ, "ready")
    exit_signal = _exit_signal(process)
    if exit_signal is not None:
        streams.register(exit_signal, selectors.EVENT_READ, "exit")
    next_disk_check = next_task_check = 0.0
    count_tasks = folders.uid is None  # a uid's RLIMIT_NPROC bounds the others
    try:
        while process.poll() is None:
            now = time.monotonic()
            if now >= deadline:
                timed_out = True
                break
            if not offered.tmpfs and now >= next_disk_check:
                full, next_disk_check = over_disk_quota(folders), now + 0.25
                if full:
                    break
            if count_tasks and now >= next_task_check:
                next_task_check = now + TASK_CHECK
                if process.pid and descendant_tasks(process.pid) > TASK_LIMIT:
                    crowded = True
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
        end_processes(process, folders)
    finally:
        streams.close()
        if exit_signal is not None and not isinstance(process, forkserver.ForkedChild):
            os.close(exit_signal)  # the pidfd opened here
    # Once more now that the child has ended: it may have filled its folder since the last
    # check, and a tmpfs says so only when asked.
    exceeded = full or (filled(folders) if offered.tmpfs else over_disk_quota(folders))
    return ChildResult(
        process.returncode if not timed_out and not full else None,
        timed_out,
        started,
        exceeded,
        output.decode(errors="replace"),
        crowded,
    )


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


def end_processes(process: subprocess.Popen | forkserver.ForkedChild, folders: Folders) -> None:
    """Kill the child's group (and, with a dedicated uid, every process and IPC object of
    that uid), and wait until they are gone: SIGKILL is delivered asynchronously."""
    for _ in range(200):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        if isinstance(process, forkserver.ForkedChild) and process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(process.pid, signal.SIGKILL)  # forked, and maybe not yet in its group
        if folders.uid is not None:
            kill_uid(folders.uid)
        if not _live_members(process.pid):
            break
        time.sleep(0.025)
    process.wait()
    if folders.uid is not None:
        remove_ipc_of(folders.uid)


def descendant_tasks(root: int) -> int:
    """Threads of `root` and of every process below it: what a child without a uid of its
    own has running (its workers, forked before it confined itself, and any process that
    slipped through). Walks down from `root` through each thread's list of the processes it
    forked; a pass over all of /proc cost 50 microseconds a process on the machine, four
    times a second per child, and remains where the kernel keeps no such lists."""
    if not os.path.exists(f"/proc/{root}/task/{root}/children"):
        return _scanned_descendant_tasks(root)
    total, pending, seen = 0, [root], set()
    while pending:
        pid = pending.pop()
        fields = stat_fields(pid)
        if pid in seen or len(fields) <= 17:
            continue
        seen.add(pid)
        total += int(fields[17])
        pending += _forked_by(pid)
    return total


def _forked_by(pid: int) -> list[int]:
    """The processes every thread of `pid` forked (and that have not left it)."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{task}/children") as listed:
                found += [int(child) for child in listed.read().split()]
    return found


def _scanned_descendant_tasks(root: int) -> int:
    """descendant_tasks from one pass over every process in /proc."""
    parents: dict[int, list[int]] = {}
    threads: dict[int, int] = {}
    for pid in pids():
        fields = stat_fields(pid)
        if len(fields) > 17:
            parents.setdefault(int(fields[1]), []).append(pid)
            threads[pid] = int(fields[17])
    total, pending = 0, [root]
    while pending:
        pid = pending.pop()
        total += threads.get(pid, 0)
        pending += parents.get(pid, [])
    return total


def _live_members(group: int) -> list[int]:
    """Processes of this process group that are still running (zombies do not count)."""
    members = []
    for pid in pids():
        fields = stat_fields(pid)
        if fields and fields[0] != "Z" and int(fields[2]) == group:
            members.append(pid)
    return members


def confinement_plan(offered: Capabilities, folders: Folders, limits: dict) -> dict:
    """What the child applies to itself (confine.confine) before submitted code runs."""
    own_uid = folders.uid is not None
    plan: dict = {
        "limits": dict(limits),
        "no_new_privs": True,
        "seccomp": offered.seccomp,
        "drop_capabilities": os.geteuid() == 0 and not own_uid,
        # No rlimit counts a child's processes without a uid of its own.
        "single_process": offered.seccomp and not own_uid,
        # A child that starts as root, outside bubblewrap (which makes its own);
        # a forked child with a uid got them from the fork server.
        "namespaces": offered.own_namespaces and not offered.bwrap and not own_uid,
    }
    if folders.cpus:
        plan["cpus"] = list(folders.cpus)
    if own_uid:
        plan["limits"]["processes"] = PROCESS_LIMIT
    if offered.landlock_abi:
        plan["landlock"] = {
            "read": [*readable_roots(), str(folders.ctrl)],
            "write": [str(folders.work), str(folders.out), "/dev/null"],
        }
        if offered.compile_cache:
            kind = "write" if offered.compile_cache_writable else "read"
            plan["landlock"][kind].append(offered.compile_cache)
    return plan
