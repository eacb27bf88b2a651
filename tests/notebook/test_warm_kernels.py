"""The kernels nbval runs the notebooks in are forks of a server that imported the frameworks
(tests/warm_kernels.py, conftest.py). Each must start as `python -m ipykernel_launcher` would:
in the notebook's folder, with the environment jupyter_client gave it, interruptible, and gone
when jupyter_client kills it. The server here preloads numpy only (the mechanism is the same;
TensorFlow's import would cost the test 10 CPU-seconds)."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from jupyter_client.manager import KernelManager

from tests import warm_kernels

pytestmark = pytest.mark.e2e  # kernels in other processes

SCRIPT = str(Path(warm_kernels.__file__))
SHOW = (
    "import json, os, sys\n"
    "print(json.dumps({'cwd': os.getcwd(), 'ppid': os.getppid(), 'argv0': sys.argv[0],"
    " 'path': sys.path, 'marker': os.environ.get('WARM_KERNEL_MARKER'),"
    " 'numpy_before': 'numpy' in sys.modules}))"
)


def _wait_for(condition, seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[subprocess.Popen, str]]:
    socket_path = str(tmp_path / "server.sock")
    process = subprocess.Popen([sys.executable, SCRIPT, "serve", socket_path, "numpy"])
    assert _wait_for(lambda: os.path.exists(socket_path)), "the server never listened"
    yield process, socket_path
    process.kill()
    process.wait()


def _manager(tmp_path: Path, pid: int, socket_path: str, monkeypatch) -> KernelManager:
    spec = tmp_path / "kernels" / "warm-test"
    spec.mkdir(parents=True)
    argv = [sys.executable, SCRIPT, "launch", str(pid), socket_path, "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "t", "language": "python"})
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    monkeypatch.setenv("WARM_KERNEL_MARKER", "from the launcher's environment")
    return KernelManager(kernel_name="warm-test")


def _run(km: KernelManager, code: str, timeout: float = 30) -> tuple[str, dict]:
    """What the code printed, and its execute reply."""
    client = km.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=timeout)
        msg_id = client.execute(code)
        reply = client.get_shell_msg(timeout=timeout)
        printed = ""
        while True:
            try:
                message = client.get_iopub_msg(timeout=2)
            except queue.Empty:
                break
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            if message["msg_type"] == "stream":
                printed += message["content"]["text"]
            if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
                break
        return printed, reply["content"]
    finally:
        client.stop_channels()


@contextlib.contextmanager
def _started(km: KernelManager, cwd: Path) -> Iterator[KernelManager]:
    """The kernel started in `cwd`, and shut down (its stand-in killed) afterwards."""
    km.start_kernel(cwd=str(cwd))
    try:
        yield km
    finally:
        km.shutdown_kernel(now=True)
        km.context.destroy(linger=0)


def test_a_forked_kernel_starts_as_a_fresh_one_would(tmp_path, server, monkeypatch):
    process, socket_path = server
    km = _manager(tmp_path, process.pid, socket_path, monkeypatch)
    notebook_folder = tmp_path / "notebooks"
    notebook_folder.mkdir()
    km.start_kernel(cwd=str(notebook_folder))
    try:
        printed, reply = _run(km, SHOW)
        assert reply["status"] == "ok", reply
        seen = json.loads(printed)
        assert seen["ppid"] == process.pid  # a fork of the server, with its imports
        assert seen["numpy_before"]
        assert seen["cwd"] == str(notebook_folder)
        assert seen["marker"] == "from the launcher's environment"
        assert seen["argv0"].endswith("ipykernel_launcher.py")
        assert "" in seen["path"] and os.path.dirname(SCRIPT) not in seen["path"]
    finally:
        km.shutdown_kernel(now=True)
        km.context.destroy(linger=0)


def test_a_forked_kernel_is_interrupted_and_dies_with_its_stand_in(tmp_path, server, monkeypatch):
    process, socket_path = server
    km = _manager(tmp_path, process.pid, socket_path, monkeypatch)
    km.start_kernel(cwd=str(tmp_path))
    try:
        printed, _ = _run(km, "import os; print(os.getpid())")
        kernel = int(printed)
        client = km.client()
        client.start_channels()
        try:
            msg_id = client.execute("import time; time.sleep(60)")
            time.sleep(1)
            km.interrupt_kernel()  # SIGINT to the stand-in, which passes it on
            reply = client.get_shell_msg(timeout=20)
            assert reply["parent_header"]["msg_id"] == msg_id
            assert reply["content"].get("ename") == "KeyboardInterrupt", reply["content"]
        finally:
            client.stop_channels()
    finally:
        km.shutdown_kernel(now=True)  # SIGKILL to the stand-in: the server ends the kernel
        km.context.destroy(linger=0)
    assert _wait_for(lambda: not warm_kernels._alive(kernel), 10), "the kernel outlived it"


def test_without_a_server_the_stand_in_starts_a_fresh_kernel_at_once(tmp_path, monkeypatch):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    km = _manager(tmp_path, gone.pid, str(tmp_path / "nobody.sock"), monkeypatch)
    started = time.monotonic()
    km.start_kernel(cwd=str(tmp_path))
    try:
        printed, reply = _run(km, SHOW)
        assert reply["status"] == "ok", reply
        assert json.loads(printed)["marker"] == "from the launcher's environment"
        assert time.monotonic() - started < warm_kernels.SERVER_WAIT_S / 3
    finally:
        km.shutdown_kernel(now=True)
        km.context.destroy(linger=0)


def test_a_forked_kernel_takes_sys_path_from_its_own_pythonpath(tmp_path, server, monkeypatch):
    """A command run on a copy of the course (PYTHONPATH=copy) gets the copy's modules first,
    in the order a fresh interpreter would give them."""
    process, socket_path = server
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "where_am_i.py").write_text("WHERE = 'the copy'\n")
    monkeypatch.setenv("PYTHONPATH", str(copy))
    # `python -m ipykernel_launcher`
    with _started(KernelManager(kernel_name="python3"), tmp_path) as fresh:
        fresh_path = json.loads(_run(fresh, SHOW)[0])["path"]
    warm = _manager(tmp_path, process.pid, socket_path, monkeypatch)
    with _started(warm, tmp_path) as km:
        printed, reply = _run(km, SHOW + "\nimport where_am_i\nprint(where_am_i.WHERE)")
    assert reply["status"] == "ok", reply
    shown, where = printed.splitlines()
    seen = json.loads(shown)
    assert seen["ppid"] == process.pid  # forked, not started afresh
    assert where == "the copy"
    assert seen["path"] == fresh_path and str(copy) in fresh_path, (seen["path"], fresh_path)


def test_a_launcher_that_sets_a_framework_otherwise_gets_a_fresh_kernel(
    tmp_path, server, monkeypatch
):
    """JAX reads JAX_ENABLE_X64 when imported: the server's import would not be the one this
    environment asks for, so the stand-in becomes a fresh kernel."""
    process, socket_path = server
    monkeypatch.setenv("JAX_ENABLE_X64", "1")
    with _started(_manager(tmp_path, process.pid, socket_path, monkeypatch), tmp_path) as km:
        printed, reply = _run(km, SHOW + "\nprint(os.environ['JAX_ENABLE_X64'])")
    assert reply["status"] == "ok", reply
    shown, setting = printed.splitlines()
    assert json.loads(shown)["ppid"] == os.getpid()  # the stand-in became the kernel
    assert setting == "1"


def test_the_server_imports_as_a_kernel_with_the_course_s_configuration_would(
    tmp_path, monkeypatch
):
    """A fresh kernel runs etc/ipython/ipython_kernel_config.py (TF_ENABLE_ONEDNN_OPTS=0)
    before its first cell imports TensorFlow; the server's imports see the same setting, and
    a launcher's environment without it still gets a fork (its kernel would set it too)."""
    monkeypatch.delenv("TF_ENABLE_ONEDNN_OPTS", raising=False)  # as in a fresh environment
    assert warm_kernels.kernel_configuration_defaults().get("TF_ENABLE_ONEDNN_OPTS") == "0"
    monkeypatch.delenv("TF_ENABLE_ONEDNN_OPTS")  # what the line above set: the server sets it
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "import_probe.py").write_text(
        "import os\nSEEN = os.environ.get('TF_ENABLE_ONEDNN_OPTS')\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(modules))
    socket_path = str(tmp_path / "server.sock")
    process = subprocess.Popen([sys.executable, SCRIPT, "serve", socket_path, "import_probe"])
    try:
        assert _wait_for(lambda: os.path.exists(socket_path)), "the server never listened"
        with _started(_manager(tmp_path, process.pid, socket_path, monkeypatch), tmp_path) as km:
            printed, reply = _run(
                km, "import os, import_probe\nprint(os.getppid(), import_probe.SEEN)"
            )
        assert reply["status"] == "ok", reply
        assert printed.split() == [str(process.pid), "0"]
    finally:
        process.kill()
        process.wait()
