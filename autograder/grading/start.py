"""What `grade` does before it imports the rest of the grader: read the submissions, choose
the sandbox, and start the first children's framework imports.

Grading one TensorFlow or JAX submission is mostly its children importing the framework
(TensorFlow: about 1.5 s each). Importing the grader proper (numpy, Hypothesis, every
chapter's exercises) and reading the references takes about 0.3 s more, which a child
started after it would wait out. So `grade` reads its submissions, decides the sandbox and
starts warm children (warm_children.WarmChild) first, with the standard library, the sandbox
package and submissions.py only, and imports the rest while they import their framework.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from autograder.grading import cache_folders
from autograder.grading.submissions import Submission, read_submissions
from autograder.grading.warm_groups import warm_groups
from autograder.sandbox import capacity, errors, sandbox


@dataclass
class Start:
    """The grading run as `grade` began it: its submissions, read once, its number of
    children at once, and its sandbox (None with `problem` saying why there is none)."""

    submissions: list[Submission]
    jobs: int
    sandbox: sandbox.Sandbox | None
    problem: str = ""


def start(*, submissions: list[Path], out: Path, jobs: int | None, sandbox_mode: str,
          unsafe_no_sandbox: bool, reference_cache: Path | None, fork_server: bool | None,
          assignment: str | None, **_: object) -> Start:
    """Read the submissions that are notebooks or files, choose the sandbox for this run and
    start its warm children. `fork_server` None: fork where it pays and is allowed
    (`forks_by_default`)."""
    paths = [p for p in submissions if p.suffix == ".ipynb" or p.is_file()]
    jobs = capacity.default_jobs() if jobs is None else max(1, jobs)
    if not paths:
        return Start([], jobs, None, "No submissions given: pass .ipynb files.")
    read = read_submissions(paths)
    try:
        out.mkdir(parents=True, exist_ok=True)
        found = sandbox.detect(sandbox_mode, jobs, unsafe_no_sandbox, bool(fork_server))
        if fork_server is None and forks_by_default(read, jobs, sandbox_mode, assignment):
            sandbox.allow_fork_server_if_possible(found, sandbox_mode)
        compiled = cache_folders.compile_cache(reference_cache)
        found.compile_cache = str(compiled) if compiled.is_dir() else None
    except (OSError, errors.SandboxUnavailable) as error:
        return Start(read, jobs, None, f"Cannot grade: {error}")
    start_warm_children(found, read, assignment, jobs)
    return Start(read, jobs, found)


def chapters_named(submissions: list[Submission], assignment: str | None) -> set[str | None]:
    """The chapters of a run: the one --assignment names, else each notebook's own."""
    return {assignment} if assignment else {s.chapter for s in submissions}


def forks_by_default(submissions: list[Submission], jobs: int, sandbox_mode: str,
                     assignment: str | None) -> bool:
    """Whether a run without --fork-server / --no-fork-server forks its children from a
    server: a batch larger than --jobs (a lone submission's warm children start sooner than
    a server) of TensorFlow or JAX chapters only, where a fresh child's framework import is
    most of what each submission costs (bench: chapters 01, 04 and 05 meet the batch targets
    only this way). Never under --sandbox bubblewrap. The numpy chapters keep fresh children
    in bubblewrap, which start in a tenth of a second and scale better with --jobs."""
    if len(submissions) <= jobs or sandbox_mode == "bubblewrap":
        return False
    groups = warm_groups()
    return all(chapter in groups for chapter in chapters_named(submissions, assignment))


def start_warm_children(found: sandbox.Sandbox, submissions: list[Submission],
                        assignment: str | None, jobs: int) -> int:
    """One warm child per submission, for a run of at most `jobs` submissions of one
    framework chapter, which all start at once (a larger batch would use them for its first
    submissions only). With --fork-server, that chapter's server instead, which imports once
    for the whole run. A child that cannot start is left out: the round it would have run
    starts a fresh one (or server), which fails loudly if the sandbox is broken. How many
    warm children were started."""
    if len(submissions) > jobs:
        return 0
    chapters = chapters_named(submissions, assignment)
    if len(chapters) != 1 or (allowed := warm_groups().get(chapters.pop() or "")) is None:
        return 0
    with contextlib.suppress(OSError, errors.SandboxFailure):
        if found.fork:
            found.fork_server(allowed)
        else:
            found.start_warm_children(allowed, len(submissions))
    return found.warm_started
