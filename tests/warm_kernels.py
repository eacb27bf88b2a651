"""Notebook kernels for nbval, forked from a server that has already imported the frameworks.

Every notebook of the course imports TensorFlow and JAX. In a fresh kernel that costs about
10 CPU-seconds (TensorFlow's import brings in keras 3, matplotlib, and JAX through tf.lite),
half of what checking a notebook under nbval costs, paid again for each of the 36 notebooks.
A server per pytest worker imports those modules once (imports only: nothing runs a framework
before the fork, as the grader's own fork server does); each kernel is then a fork of it that
runs what `python -m ipykernel_launcher -f <connection file>` runs, in the notebook's folder,
with the environment and the stdio jupyter_client gave the launcher, and its sys.path as
that environment's PYTHONPATH makes it (a command run on a copy of the course puts the copy
first). The cells run in the kernel exactly as in a fresh one: only the interpreter's start-up
is shared. A launcher whose environment would have imported the frameworks differently (any
of IMPORT_SETTINGS set otherwise than in the server's) gets a fresh kernel instead.

The launcher that jupyter_client starts (the kernelspec's argv) is a stand-in: it hands its
request and stdio to the server, forwards signals (an interrupt) to the kernel, and exits with
the kernel's status; if the stand-in is killed, the server kills the kernel. Where no server
answers, the stand-in becomes an ordinary `python -m ipykernel_launcher`.

    warm_kernels.py serve SOCKET [MODULES]      the server (conftest.py starts one per worker)
    warm_kernels.py launch PID SOCKET -f FILE   the kernelspec's argv (PID: the server's)

Only the standard library here: the stand-in must start in a few milliseconds.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import socket
import struct
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
# What every notebook's kernel imports and takes seconds to: the frameworks (TensorFlow brings
# keras, matplotlib.pyplot and scipy with it), and the kernel itself.
PRELOADED = ("numpy", "tensorflow", "jax", "jax.numpy", "matplotlib.pyplot", "ipykernel.kernelapp")
# Read by the frameworks or by Python when they are imported: a kernel whose environment sets
# one otherwise than the server's would not be the kernel its launcher asked for.
IMPORT_SETTINGS = ("TF_", "JAX_", "XLA_", "KERAS_", "MPL", "CUDA_", "OMP_", "PYTHON")
SERVER_WAIT_S = 90  # how long a stand-in waits for its server's imports before starting cold
REQUEST_LIMIT = 1 << 22


def _send(conn: socket.socket, data: dict, fds: list[int] | None = None) -> None:
    payload = json.dumps(data).encode()
    message = struct.pack("!I", len(payload)) + payload
    if fds:
        socket.send_fds(conn, [message], fds)
    else:
        conn.sendall(message)


def _receive_exactly(conn: socket.socket, size: int, chunks: bytes = b"") -> bytes:
    while len(chunks) < size:
        chunk = conn.recv(size - len(chunks))
        if not chunk:
            raise EOFError("the other side closed the connection")
        chunks += chunk
    return chunks


def _receive(conn: socket.socket, with_fds: int = 0) -> tuple[dict, list[int]]:
    fds: list[int] = []
    if with_fds:
        head, fds, _, _ = socket.recv_fds(conn, 4, with_fds)
        if not head:
            raise EOFError("the other side closed the connection")
    else:
        head = b""
    head = _receive_exactly(conn, 4, head[:4]) if len(head) < 4 else head
    (size,) = struct.unpack("!I", head[:4])
    if size > REQUEST_LIMIT:
        raise ValueError(f"a request of {size} bytes")
    return json.loads(_receive_exactly(conn, size, head[4:])), fds


# Set by conftest.py when a pytest worker has a server: a JUPYTER_PATH folder whose "python3"
# kernel is this server's fork. Never on the worker's own JUPYTER_PATH: a test of another
# interpreter (a wheel's venv) must get that interpreter's kernel.
WARM_PYTHON3_ENV = "COURSE_WARM_PYTHON3_PATH"


def with_warm_python3(environment: dict[str, str]) -> dict[str, str]:
    """`environment` for a command that starts "python3" kernels (the course's `sync`,
    JupyterLab) and may take them from this worker's server: its JUPYTER_PATH with that
    folder first, where the worker has a server; else unchanged (fresh kernels)."""
    folder = os.environ.get(WARM_PYTHON3_ENV)
    if not folder:
        return environment
    rest = environment.get("JUPYTER_PATH", "")
    return {**environment, "JUPYTER_PATH": os.pathsep.join(p for p in (folder, rest) if p)}


# ---------------------------------------------------------------- the server


def import_settings(environment: dict[str, str]) -> dict[str, str]:
    """The variables of `environment` that an import reads (PYTHONPATH aside: sys.path is
    rebuilt from it in each kernel, as nothing of the course is imported before the fork)."""
    return {
        name: value
        for name, value in environment.items()
        if name.startswith(IMPORT_SETTINGS) and name != "PYTHONPATH"
    }


def kernel_configuration_defaults() -> dict[str, str]:
    """Run the kernel configuration files IPython reads at a kernel's start (this environment's
    etc/ipython, the system's, the default profile's), as a fresh kernel does before its first
    cell, and return the variables they set in the environment.

    The course's own (etc/ipython/ipython_kernel_config.py, installed by `make`) sets
    TF_ENABLE_ONEDNN_OPTS=0 so that no cell imports TensorFlow with oneDNN's batch matmul: the
    server must import TensorFlow as such a kernel would."""
    from IPython.core.application import ENV_CONFIG_DIRS, SYSTEM_CONFIG_DIRS
    from IPython.paths import get_ipython_dir
    from traitlets.config.loader import ConfigFileNotFound, PyFileConfigLoader

    before = dict(os.environ)
    profile = os.path.join(get_ipython_dir(), "profile_default")
    for folder in [*SYSTEM_CONFIG_DIRS[::-1], *ENV_CONFIG_DIRS, profile]:
        with contextlib.suppress(ConfigFileNotFound):
            PyFileConfigLoader("ipython_kernel_config.py", path=folder).load_config()
    return {name: value for name, value in os.environ.items() if before.get(name) != value}


def serve(path: str, preloaded: tuple[str, ...] = PRELOADED) -> None:
    """Import `preloaded`, then fork a kernel for each stand-in that connects, until the
    process that started this server exits."""
    parent = os.getppid()
    python_path = _python_path(dict(os.environ))
    defaults = kernel_configuration_defaults()
    # What the launcher's environment must match: the server's, with what every kernel's
    # configuration sets before its first cell (the backend below is what ipykernel itself
    # sets, before matplotlib is imported, when none is set).
    started = (import_settings(dict(os.environ)), python_path, defaults)
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    for name in preloaded:
        try:
            __import__(name)
        except ImportError:  # not installed here (make versions' venv has no matplotlib)
            continue
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".tmp")
    os.rename(path + ".tmp", path)  # appears only once the imports are done
    listener.listen(16)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    kernels: dict[int, socket.socket] = {}  # kernel pid -> its stand-in's connection
    while os.getppid() == parent:
        for key, _ in selector.select(timeout=0.2):
            if key.fileobj is listener:
                conn, _ = listener.accept()
                pid = _fork_kernel(conn, listener, kernels, started)
                if pid:
                    kernels[pid] = conn
                    selector.register(conn, selectors.EVENT_READ, pid)
            else:  # a stand-in's connection: it says nothing more, so this is its end
                selector.unregister(key.fileobj)
                _kill(key.data)
        _reap(kernels, selector)
    for pid in kernels:
        _kill(pid)


def _python_path(environment: dict[str, str]) -> list[str]:
    return [os.path.abspath(p) for p in environment.get("PYTHONPATH", "").split(os.pathsep) if p]


def _fork_kernel(
    conn: socket.socket, listener: socket.socket, kernels: dict, started: tuple[dict, list, dict]
) -> int:
    """The kernel's pid (0 when the request could not be read, or asks for other settings:
    its stand-in is told to start a fresh kernel)."""
    try:
        request, fds = _receive(conn, with_fds=3)
    except (OSError, EOFError, ValueError):
        conn.close()
        return 0
    settings, python_path, defaults = started
    if import_settings({**defaults, **request["env"]}) != settings:
        for fd in fds:
            os.close(fd)
        with contextlib.suppress(OSError):
            _send(conn, {"fresh": "its environment imports the frameworks otherwise"})
        conn.close()
        return 0
    pid = os.fork()
    if pid == 0:
        listener.close()
        for other in kernels.values():
            other.close()
        _become_kernel(conn, request, fds, python_path)  # never returns
    for fd in fds:
        os.close(fd)
    _send(conn, {"pid": pid})
    return pid


def _become_kernel(
    conn: socket.socket, request: dict, fds: list[int], server_python_path: list[str]
) -> None:
    code = 1
    try:
        conn.close()
        os.setpgid(0, 0)
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
            signal.signal(signum, signal.SIG_DFL)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        import ipykernel_launcher
        from ipykernel import kernelapp

        sys.argv = [ipykernel_launcher.__file__, *request["argv"]]
        # As ipykernel_launcher: no working folder on sys.path while ipykernel loads;
        # InteractiveShellApp.init_path puts it back. PYTHONPATH's folders first, as Python
        # puts them at start-up: this environment's, not the server's.
        rest = [p for p in sys.path if p != "" and p not in server_python_path]
        sys.path[:] = [*_python_path(request["env"]), *rest]
        code = 0
        # parent_handle's default was read from the environment when ipykernel was imported,
        # before this kernel's environment existed: the process to outlive (the kernel stops
        # when it is gone), and whether to print the banner of a kernel started by hand.
        kernelapp.IPKernelApp.launch_instance(
            parent_handle=int(os.environ.get("JPY_PARENT_PID") or 0)
        )
    except SystemExit as end:
        code = end.code if isinstance(end.code, int) else int(end.code is not None)
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _reap(kernels: dict[int, socket.socket], selector: selectors.BaseSelector) -> None:
    while kernels:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = kernels.pop(pid, None)
        if conn is None:
            continue
        if conn.fileno() in selector.get_map():
            selector.unregister(conn)
        with contextlib.suppress(OSError):
            _send(conn, {"exit": os.waitstatus_to_exitcode(status)})
        conn.close()


def _kill(pid: int) -> None:
    for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            target()
            return
        except (ProcessLookupError, PermissionError):
            continue


# ---------------------------------------------------------------- the stand-in


def launch(server: int, path: str, argv: list[str]) -> None:
    """Ask the server (process `server`, listening at `path` once its imports are done) for
    a kernel with `argv` (`-f CONNECTION_FILE`) and stand in for it."""
    deadline = time.monotonic() + SERVER_WAIT_S
    while not os.path.exists(path) and _alive(server) and time.monotonic() < deadline:
        time.sleep(0.05)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
        _send(conn, {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}, [0, 1, 2])
        pid = _receive(conn)[0]["pid"]  # no pid: {"fresh": why}, a fresh kernel is needed
    except (OSError, EOFError, ValueError, KeyError):
        conn.close()
        os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *argv])
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(signum, lambda received, _frame: os.kill(pid, received))
    try:
        reply = _receive(conn)[0]
    except (OSError, EOFError, ValueError):
        reply = {"exit": 1}
    sys.exit(reply.get("exit", 1) if isinstance(reply.get("exit"), int) else 1)


def _alive(pid: int) -> bool:
    """Whether the server still runs (one that died stays a zombie until pytest reaps it)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] not in ("Z", "X")
    except OSError:
        return False


if __name__ == "__main__":
    # Run as a script, this folder is first on sys.path, where tests/locale would stand in
    # for the standard library's locale.
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]
    if sys.argv[1] == "serve":  # a test's server names fewer modules: serve SOCKET numpy,...
        serve(sys.argv[2], *([tuple(sys.argv[3].split(","))] if len(sys.argv) > 3 else []))
    else:
        launch(int(sys.argv[2]), sys.argv[3], sys.argv[4:])
