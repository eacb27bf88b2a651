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
import sys
from dataclasses import dataclass
from pathlib import Path

from autograder.grading import cache_folders
from autograder.grading.submissions import Submission, read_submissions
from autograder.grading.warm_groups import course_chapters, warm_groups
from autograder.sandbox import capacity, errors, sandbox


@dataclass
class Start:
    """The grading run as `grade` began it: its submissions, read once, its number of
    children at once, and its sandbox (None with `problem` saying why there is none)."""

    submissions: list[Submission]
    jobs: int
    sandbox: sandbox.Sandbox | None
    problem: str = ""
    # The chapter graded: --assignment, else the one most of the notebooks name (batch_chapter).
    assignment: str | None = None


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
    if assignment is None:
        assignment, problem = batch_chapter(read)
        if problem:
            return Start(read, jobs, None, problem)
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
    return Start(read, jobs, found, assignment=assignment)


def batch_chapter(submissions: list[Submission]) -> tuple[str | None, str]:
    """(the chapter most notebooks name, "") or (None, why no chapter can be chosen).

    Without --assignment, each notebook used to be graded as the chapter its own metadata
    names: chapter 00's one-line warm-up handed in for chapter 03 scored full marks. A batch
    is one assignment, so it is graded as its majority chapter (among the course's
    chapters), and a notebook of another chapter costs its own points with a message; a tie
    is refused (name --assignment)."""
    counts: dict[str, int] = {}
    for submission in submissions:
        if submission.chapter in course_chapters():
            counts[submission.chapter] = counts.get(submission.chapter, 0) + 1
    if not counts:
        return None, ""
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        named = ", ".join(f"chapter {chapter}: {count}" for chapter, count in ranked)
        return None, (f"Cannot grade: the notebooks name different chapters equally often "
                      f"({named}). Say which chapter this assignment is: --assignment NN.")
    chapter, count = ranked[0]
    others = sum(counts.values()) - count
    if others:
        print(f"No --assignment given: grading as chapter {chapter}, the chapter of {count} "
              f"of the notebooks; {others} notebook(s) of another chapter score 0 "
              "(pass --assignment NN to choose).", file=sys.stderr)
    return chapter, ""


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
