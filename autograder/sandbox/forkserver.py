"""A fork server: one interpreter that has imported numpy and a framework, forked per round.

A fresh Python pays a framework's import in every child, most of what grading one more
framework submission costs (docs/grading-speed.md; when the grader forks, and what a forked
child gives up: docs/security.md, "The fork server"). With `grade --fork-server`
the grader starts one server per set of allowed frameworks (none, for the numpy rounds) for
the whole batch. The server imports them (child.preload) and nothing else: it never sees a
submission, a case or a reference. For each round the grader sends it the round's folders, uid and
environment, with three pipes; the server forks a small monitor, which forks the child:

- the child starts a session of its own (setsid: its own process group, and its own share of
  the CPU where the kernel groups tasks by session), points stdout and stderr at the output
  pipe, takes the round's environment and working folder, leaves the network, IPC and
  host-name namespaces where the grader can make them (root with CAP_SYS_ADMIN), takes the
  round's unprivileged uid (root only), and then runs
  child.serve, which confines it (rlimits, no_new_privs, Landlock, seccomp) before any
  submitted code runs, exactly as a freshly started child does;
- the monitor writes the child's pid, then its exit code, to the status pipe, which is how
  the grader supervises a child that is not its own.

Every child starts from the server's memory as it was after the import, copy-on-write, so
nothing one submission does reaches the next. What a forked child lacks, compared with
bubblewrap, is its own mount and PID namespaces: Landlock keeps it to its folders, and the
grader accepts the fork server only where Landlock runs (see sandbox.detect).

This file runs as a script under `python -I` (the server) and is imported by the grader
(ForkServer); at the top level it uses the standard library only.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
PR_SET_PDEATHSIG = 1
REQUEST_BYTES = 65536


# ---------------------------------------------------------------- the server (a script)


def _load(name: str):
    """A file of confined/ by its path, under the name child.py gives its siblings (the
    server runs under `python -I`, which puts no folder on sys.path)."""
    key = f"grader_{name}"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, HERE / "confined" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    spec.loader.exec_module(module)
    return module


def serve_forever(channel: socket.socket, child) -> None:
    """Fork a monitor per request until the grader closes the channel."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # monitors are reaped by the kernel
    while True:
        message, fds, _, _ = socket.recv_fds(channel, REQUEST_BYTES, 3)
        if not message:
            return
        if len(fds) != 3:
            for fd in fds:
                os.close(fd)
            continue
        server = os.getpid()
        if os.fork() == 0:
            channel.close()
            _die_with(server)
            _monitor(json.loads(message), *fds, child)
        for fd in fds:
            os.close(fd)


def _monitor(request: dict, output: int, ready: int, status: int, child) -> None:
    """Fork the round's child, report its pid and then its exit code; never returns."""
    code = 70
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        monitor = os.getpid()
        pid = os.fork()
        if pid == 0:
            os.close(status)
            _become_child(request, output, ready, child, monitor)
        os.close(output)
        os.close(ready)
        os.write(status, f"{pid}\n".encode())
        _, wait_status = os.waitpid(pid, 0)
        os.write(status, f"{os.waitstatus_to_exitcode(wait_status)}\n".encode())
        code = 0
    finally:
        os._exit(code)


def _die_with(parent: int) -> None:
    """SIGKILL when the parent goes, so a grader that dies takes the whole tree with it (the
    server leaves when the grader's end of the channel closes); exit at once if it is already
    gone."""
    if _load("confine").LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent:
        os._exit(72)


def _become_child(request: dict, output: int, ready: int, child, monitor: int) -> None:
    """Turn this fork into the round's child, as the grader would have started it."""
    try:
        os.setsid()
        os.dup2(output, 1)
        os.dup2(output, 2)
        os.close(output)
        os.environ.clear()
        os.environ.update(request["env"])
        tempfile.tempdir = None  # TMPDIR is the round's own folder
        os.chdir(request["work"])
        if request.get("namespaces"):
            _load("confine").leave_namespaces()
        uid = request.get("uid")
        if uid is not None:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
        _die_with(monitor)  # after the uid: a change of credentials clears the setting
        child.serve(Path(request["ctrl"]), ready)
    except BaseException:
        traceback.print_exc()  # into the output pipe: the grader shows it as launcher output
    finally:
        os._exit(71)  # serve never returns; reaching here means the set-up failed


def main() -> None:
    channel = socket.socket(fileno=int(sys.argv[1]))
    child = _load("child")
    child.preload(json.loads(sys.argv[2]))
    threads = child.thread_count()
    if threads != 1:
        # A fork copies only the calling thread; a lock another one held stays locked.
        sys.exit(
            f"fork server: the import left {threads} threads running, so forking it is "
            "not safe; grade without --fork-server."
        )
    sys.stdout.flush()
    serve_forever(channel, child)


# ---------------------------------------------------------------- the grader's side


class ForkServerFailure(RuntimeError):
    """The server is gone or did not answer: a failure of the grader, never a student's."""


class ForkedChild:
    """The child of one round, as the grader supervises it: the parts of subprocess.Popen
    that sandbox._supervise and sandbox.end_processes use. The monitor's status pipe says
    the pid, then the exit code, one line each."""

    def __init__(self, status: int, stdout) -> None:
        self.stdout = stdout
        self.pid: int | None = None
        self.returncode: int | None = None
        self._status = status
        self._lines: list[str] = []
        self._partial = b""
        self._closed = False

    def read_pid(self, deadline: float) -> int | None:
        """The child's pid, once the monitor has forked it; None if the server does not
        answer by the deadline (it may still be importing: that counts against the round)."""
        while not self._lines and not self._closed:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self._status], [], [], remaining)[0]:
                return None
            self._read()
        self.pid = int(self._lines.pop(0)) if self._lines else None
        return self.pid

    @property
    def status_pipe(self) -> int:
        """Readable when the monitor reports the child's exit (or is gone)."""
        return self._status

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self._status], [], [], 0)[0]:
            self._read()
        self._settle()
        return self.returncode

    def wait(self) -> int:
        while self.returncode is None:
            select.select([self._status], [], [])
            self._read()
            self._settle()
        return self.returncode

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._status)
        self.stdout.close()

    def _read(self) -> None:
        chunk = os.read(self._status, 256)
        if not chunk:
            self._closed = True
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        self._lines += [line.decode() for line in lines if line.strip()]

    def _settle(self) -> None:
        if self._lines:
            self.returncode = int(self._lines.pop(0))
        elif self._closed:  # the monitor died before the child's exit was known
            self.returncode = -9


class ForkServer:
    """One server process for a set of allowed frameworks, shared by the batch's threads."""

    def __init__(self, allowed: tuple[str, ...], env: dict[str, str]) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="fork-server-"))
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.channel = ours
        self.lock = threading.Lock()
        self.log = (self.folder / "server.log").open("wb")
        try:
            self.process = self._start(allowed, env, theirs)
        except OSError:
            ours.close()
            self.log.close()
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        finally:
            theirs.close()

    def _start(
        self, allowed: tuple[str, ...], env: dict[str, str], theirs: socket.socket
    ) -> subprocess.Popen:
        return subprocess.Popen(
            [
                sys.executable,
                "-I",
                str(HERE / "forkserver.py"),
                str(theirs.fileno()),
                json.dumps(list(allowed)),
            ],
            cwd=self.folder,
            env=env | {"HOME": str(self.folder), "TMPDIR": str(self.folder)},
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            pass_fds=(theirs.fileno(),),
            process_group=0,
            close_fds=True,
        )

    def alive(self) -> bool:
        return self.process.poll() is None

    def start(self, request: dict, deadline: float) -> tuple[ForkedChild, int]:
        """Fork the round's child: (the child, the read end of its `ready` pipe)."""
        output_read, output_write = os.pipe()
        ready_read, ready_write = os.pipe()
        status_read, status_write = os.pipe()
        sent = (output_write, ready_write, status_write)
        try:
            with self.lock:
                socket.send_fds(self.channel, [json.dumps(request).encode()], list(sent))
        except OSError as error:
            for fd in (output_read, ready_read, status_read):
                os.close(fd)
            raise ForkServerFailure(
                f"the fork server is gone: {error}; its log: {self.log_tail()}"
            ) from error
        finally:
            for fd in sent:
                os.close(fd)
        child = ForkedChild(status_read, os.fdopen(output_read, "rb"))
        if child.read_pid(deadline) is None:
            child.close()
            os.close(ready_read)
            raise ForkServerFailure(
                f"the fork server did not start the child; its log: {self.log_tail()}"
            )
        return child, ready_read

    def log_tail(self) -> str:
        with contextlib.suppress(OSError):
            return (self.folder / "server.log").read_text(errors="replace")[-800:]
        return ""

    def close(self) -> None:
        self.channel.close()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.log.close()
        shutil.rmtree(self.folder, ignore_errors=True)


if __name__ == "__main__":
    main()
