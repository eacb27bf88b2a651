"""Starting a child process for untrusted code, with every protection this machine offers.

Always: its own empty working directory, a scrubbed environment, rlimits (memory, CPU
time, file size, no core dumps), its own process group killed on timeout. Where bubblewrap
(`bwrap`) is present on Linux, also: read-only system and Python, nothing else of the host
file system visible, no network, its own PID namespace, killed with the parent. Which of
these were active is recorded in every result.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

MEMORY_LIMIT = 2 * 1024**3  # bytes of address space
FILE_SIZE_LIMIT = 256 * 1024**2
FRAMEWORK_MEMORY_LIMIT = 8 * 1024**3  # address space when TensorFlow or JAX may be imported


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


def protections(bwrap: str | None) -> list[str]:
    active = [
        "separate process per submission",
        "own empty working directory",
        "scrubbed environment",
        f"memory limit {MEMORY_LIMIT // 1024**2} MiB "
        f"({FRAMEWORK_MEMORY_LIMIT // 1024**2} MiB where TensorFlow or JAX is allowed)",
        "time limits per exercise and per submission",
        "process group killed on timeout",
        "inputs only: no references, no seed in the child",
        "results read as arrays with allow_pickle=False; only the grader writes results",
    ]
    if bwrap:
        active += [
            "bubblewrap: read-only system and Python, rest of file system hidden",
            "bubblewrap: no network",
            "bubblewrap: own PID namespace, dies with the grader",
        ]
    else:
        active.append("bubblewrap not available: network and file system NOT isolated")
    return active


def _existing(paths: list[str]) -> list[str]:
    return sorted({os.path.realpath(p) for p in paths if os.path.exists(p)})


def _readable_roots() -> list[str]:
    """What the child must read: system libraries, Python, numpy, the teaching helpers."""
    roots = ["/usr", "/etc/alternatives", "/etc/ld.so.cache", sys.base_prefix, sys.prefix]
    spec = importlib.util.find_spec("coursekit")
    if spec and spec.submodule_search_locations:
        roots += list(spec.submodule_search_locations)
    return _existing(roots)


def _bwrap_command(bwrap: str, workdir: Path, argv: list[str]) -> list[str]:
    # /tmp first: a tmpfs mounted later would hide anything bound below it (a venv in /tmp).
    command = [bwrap, "--tmpfs", "/tmp"]
    for root in _readable_roots():
        command += ["--ro-bind", root, root]
    for link in ("/bin", "/lib", "/lib64", "/sbin"):
        if os.path.islink(link):
            command += ["--symlink", os.readlink(link), link]
    command += [
        "--dev", "/dev", "--proc", "/proc",
        "--bind", str(workdir), str(workdir), "--chdir", str(workdir),
        "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
        "--die-with-parent", "--new-session", "--cap-drop", "ALL",
    ]
    return command + argv


def scrubbed_environment(workdir: Path) -> dict[str, str]:
    """Only what Python and numpy need; nothing of the grader's own environment."""
    return {
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
        "XLA_FLAGS": "--xla_force_host_platform_device_count=1",
    }


def child_limits(limits: Limits, frameworks: bool = False) -> dict[str, int]:
    """The rlimits the child applies to itself before running any submitted code.

    They are set in the child rather than between fork and exec (preexec_fn), which is not
    safe in a multithreaded parent such as one that has imported JAX. Under bubblewrap all
    capabilities are dropped, so the submitted code cannot raise them again.
    """
    return {
        # TensorFlow and JAX reserve far more address space than they use.
        "memory": max(limits.memory, FRAMEWORK_MEMORY_LIMIT) if frameworks else limits.memory,
        "cpu_seconds": int(limits.per_submission) + 5,
        "file_size": FILE_SIZE_LIMIT,
    }


def run_child(script: Path, workdir: Path, limits: Limits, bwrap: str | None) -> ChildResult:
    """Run `python -I script` in `workdir`; kill its whole process group on timeout."""
    argv = [sys.executable, "-I", str(script)]
    command = _bwrap_command(bwrap, workdir, argv) if bwrap else argv
    with (workdir / "child.log").open("wb") as log:
        process = subprocess.Popen(
            command,
            cwd=workdir,
            env=scrubbed_environment(workdir),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            process_group=0,
            close_fds=True,
        )
        try:
            return ChildResult(process.wait(timeout=limits.per_submission), False)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            return ChildResult(None, True)


def _kill_group(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
