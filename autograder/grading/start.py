"""What `grade` does before it imports the rest of the grader: choose the sandbox, and start
the first children's framework imports.

Grading one TensorFlow or JAX submission is mostly its children importing the framework
(TensorFlow: about 1.5 s each). Importing the grader proper (numpy, Hypothesis, every
chapter's exercises) and reading the references takes about 0.3 s more, which a child
started after it would wait out. So `grade` decides the sandbox and starts warm children
(sandbox.WarmChild) first, using the standard library and the sandbox module only, and
imports the rest while they import their framework.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

from autograder.sandbox import sandbox

ENV = "AUTODIFF_REFERENCE_CACHE"

# The frameworks a chapter's warm children import: those its framework exercises allow
# (each of these chapters has one such set). The numpy chapters have none: a numpy child
# starts in a tenth of a second. A test keeps this equal to what the exercises declare.
WARM_GROUPS: dict[str, tuple[str, ...]] = {
    "01": ("jax", "tensorflow"),
    "04": ("tensorflow",),
    "05": ("jax",),
    "06": ("jax",),
}
# Memory a child may need at once: a TensorFlow child's resident set is about 0.6 GiB.
MEMORY_PER_CHILD = 1024**3
# Where a container's limits are: cgroup v2, then v1 ((quota, period) files for the CPU).
CGROUP_CPU_FILES: tuple[tuple[str, str | None], ...] = (
    ("/sys/fs/cgroup/cpu.max", None),
    ("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu/cpu.cfs_period_us"))
CGROUP_MEMORY_FILES = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
# A notebook larger than this is not read here for its chapter (no warm children for it).
METADATA_READ_LIMIT = 16 * 1024**2


@dataclass
class Start:
    """The grading run as `grade` began it: its submissions, its number of children at
    once, and its sandbox (None with `problem` saying why there is none)."""

    paths: list[Path]
    jobs: int
    box: sandbox.Sandbox | None
    problem: str = ""


def start(*, submissions: list[Path], out: Path, jobs: int | None, sandbox_mode: str,
          unsafe_no_sandbox: bool, reference_cache: Path | None, fork_server: bool | None,
          assignment: str | None, **_: object) -> Start:
    """Choose the sandbox for this run and start its warm children; the submissions that
    are notebooks or files. `fork_server` None: fork where it pays and is allowed
    (`forks_by_default`)."""
    paths = [p for p in submissions if p.suffix == ".ipynb" or p.is_file()]
    jobs = default_jobs() if jobs is None else max(1, jobs)
    if not paths:
        return Start(paths, jobs, None, "No submissions given: pass .ipynb files.")
    try:
        out.mkdir(parents=True, exist_ok=True)
        box = sandbox.detect(sandbox_mode, jobs, unsafe_no_sandbox, bool(fork_server))
        if fork_server is None and forks_by_default(paths, jobs, sandbox_mode, assignment):
            sandbox.allow_fork_server_if_possible(box, sandbox_mode)
        compiled = compile_cache(reference_cache)
        box.compile_cache = str(compiled) if compiled.is_dir() else None
    except (OSError, sandbox.SandboxUnavailable) as error:
        return Start(paths, jobs, None, f"Cannot grade: {error}")
    start_warm_children(box, paths, assignment, jobs)
    return Start(paths, jobs, box)


def forks_by_default(paths: list[Path], jobs: int, sandbox_mode: str,
                     assignment: str | None) -> bool:
    """Whether a run without --fork-server / --no-fork-server forks its children from a
    server: a batch larger than --jobs (a lone submission's warm children start sooner than
    a server) of TensorFlow or JAX chapters only, where a fresh child's framework import is
    most of what each submission costs (bench: chapters 01, 04 and 05 meet the batch targets
    only this way). Never under --sandbox bubblewrap. The numpy chapters keep fresh children
    in bubblewrap, which start in a tenth of a second and scale better with --jobs."""
    if len(paths) <= jobs or sandbox_mode == "bubblewrap":
        return False
    chapters = {assignment} if assignment else {_chapter_in_metadata(p) for p in paths}
    return all(chapter in WARM_GROUPS for chapter in chapters)


def start_warm_children(box: sandbox.Sandbox, paths: list[Path], assignment: str | None,
                        jobs: int) -> int:
    """One warm child per submission, for a run of at most `jobs` submissions of one
    framework chapter, which all start at once (a larger batch would use them for its first
    submissions only). With --fork-server, that chapter's server instead, which imports once
    for the whole run. A child that cannot start is left out: the round it would have run
    starts a fresh one (or server), which fails loudly if the sandbox is broken. How many
    warm children were started."""
    if len(paths) > jobs:
        return 0
    chapters = {assignment} if assignment else {_chapter_in_metadata(p) for p in paths}
    if len(chapters) != 1 or (allowed := WARM_GROUPS.get(chapters.pop() or "")) is None:
        return 0
    with contextlib.suppress(OSError, sandbox.SandboxFailure):
        if box.fork:
            box.fork_server(allowed)
        else:
            box.start_warm_children(allowed, len(paths))
    return box.warm_started


def _chapter_in_metadata(path: Path) -> str | None:
    """The chapter a notebook's metadata names, or None (grading says what is wrong)."""
    try:
        if path.stat().st_size > METADATA_READ_LIMIT:
            return None
        metadata = json.loads(path.read_bytes()).get("metadata", {})
        return chapter_in(metadata) if isinstance(metadata, dict) else None
    except (OSError, ValueError, AttributeError):
        return None


def chapter_in(metadata: dict) -> str | None:
    """The chapter a notebook's metadata names (`course.chapter`), or None."""
    course = metadata.get("course", {})
    return str(course["chapter"]) if isinstance(course, dict) and "chapter" in course else None


def folder(override: Path | None = None) -> Path:
    """--reference-cache, else $AUTODIFF_REFERENCE_CACHE, else the user's cache folder."""
    if override is not None:
        return override
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "autodiff-course" / "references"


def compile_cache(override: Path | None = None) -> Path:
    """JAX's persistent compilation cache for the grader's children, beside the references.
    JAX keys its entries by program, compiler options and versions itself."""
    return folder(override) / "jax"


def default_jobs() -> int:
    """Children at once when --jobs is not given: the CPUs this process may run on (its
    affinity, and its container's CPU quota where one is set), and no more than the memory
    it may use allows."""
    cpus = min(len(os.sched_getaffinity(0)), _cgroup_cpus() or os.cpu_count() or 1)
    return max(1, min(cpus, _usable_memory() // MEMORY_PER_CHILD))


def _cgroup_cpus() -> int | None:
    """The CPU quota of this process's cgroup (v2 `cpu.max`, v1 `cpu.cfs_quota_us`), rounded
    up; None when there is none."""
    for quota_file, period_file in CGROUP_CPU_FILES:
        try:
            fields = Path(quota_file).read_text().split()
            if period_file:
                fields.append(Path(period_file).read_text().strip())
            quota, period = int(fields[0]), int(fields[1])
        except (OSError, ValueError, IndexError):
            continue
        if quota > 0 and period > 0:
            return max(1, math.ceil(quota / period))
    return None


def _usable_memory() -> int:
    """Bytes this process may still use: the machine's available memory, or less under a
    cgroup memory limit (`memory.max`, v1 `memory.limit_in_bytes`)."""
    available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    try:
        text = Path("/proc/meminfo").read_text()
        available = int(text.split("MemAvailable:")[1].split()[0]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    for limit_file in CGROUP_MEMORY_FILES:
        with contextlib.suppress(OSError, ValueError):
            available = min(available, int(Path(limit_file).read_text().strip()))
    return available
