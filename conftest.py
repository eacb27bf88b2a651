"""Hooks for every pytest run of the project, whatever its arguments: `make test` runs tests/
and the notebooks of solutions/ and course/ under nbval in one run, `make test-notebooks` the
notebooks alone (tests/conftest.py is not read then).

nbval's kernels are forked from a server per worker that has imported the frameworks
(tests/warm_kernels.py says why and how). COURSE_COLD_KERNELS=1 starts each one afresh, as
`--nbval-current-env` alone does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests import warm_kernels

WARM_KERNEL = "course-warm-python3"


def pytest_configure(config: pytest.Config) -> None:
    if _runs_notebooks(config) and not os.environ.get("COURSE_COLD_KERNELS"):
        _use_warm_kernels(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    server = getattr(config, "_warm_kernel_server", None)
    if server is not None:
        server.kill()
        server.wait()
    folder = getattr(config, "_warm_kernel_folder", None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def _runs_notebooks(config: pytest.Config) -> bool:
    """nbval runs notebooks here, in this process (a pytest-xdist worker, or a run without
    workers; not the controller of workers, which runs no test)."""
    return bool(
        getattr(config.option, "nbval", False)
        and getattr(config.option, "nbval_current_env", False)
        and not (
            getattr(config.option, "numprocesses", None) and "PYTEST_XDIST_WORKER" not in os.environ
        )
    )


def _use_warm_kernels(config: pytest.Config) -> None:
    """nbval's kernels forked from one server that has imported the frameworks: the same
    interpreter and environment as `--nbval-current-env`, without paying TensorFlow's import
    again for every notebook. The server starts once collection is done
    (`pytest_collection_finish`): importing the test modules sets variables the frameworks read
    when imported (JAX's compilation cache), which every kernel's environment then has, so the
    server's imports must see them too."""
    folder = Path(tempfile.mkdtemp(prefix="course-kernels-"))
    os.environ["JUPYTER_PATH"] = os.pathsep.join(
        p for p in (str(folder), os.environ.get("JUPYTER_PATH", "")) if p
    )
    # The same kernel under the name the course's own commands ask for ("python3"), for a test
    # that opts in (warm_kernels.with_warm_python3).
    os.environ[warm_kernels.WARM_PYTHON3_ENV] = str(folder / "as-python3")
    config._warm_kernel_folder = folder  # type: ignore[attr-defined]
    config.option.nbval_current_env = False
    config.option.nbval_kernel_name = WARM_KERNEL


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the kernel server _use_warm_kernels prepared, and write its two kernelspecs."""
    folder = getattr(session.config, "_warm_kernel_folder", None)
    if folder is None:
        return
    socket_path = str(folder / "server.sock")
    script = warm_kernels.__file__
    server = subprocess.Popen(
        [sys.executable, script, "serve", socket_path],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    session.config._warm_kernel_server = server  # type: ignore[attr-defined]
    launch = [sys.executable, script, "launch", str(server.pid), socket_path]
    spec = json.dumps(
        {
            "argv": [*launch, "-f", "{connection_file}"],
            "display_name": "Python 3 (forked, for the tests)",
            "language": "python",
            "interrupt_mode": "signal",
        }
    )
    for kernel in (folder / "kernels" / WARM_KERNEL, folder / "as-python3" / "kernels" / "python3"):
        kernel.mkdir(parents=True)
        (kernel / "kernel.json").write_text(spec)
