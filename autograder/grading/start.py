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
from dataclasses import dataclass, replace
from pathlib import Path

from autograder.grading import cache_folders
from autograder.grading.shards import Shard, ShardRun, read_shard
from autograder.grading.submissions import Submission, read_submissions
from autograder.grading.warm_groups import course_chapters, warm_group
from autograder.sandbox import capacity, errors
from autograder.sandbox.pools import Sandbox
from autograder.sandbox.sandbox import allow_fork_server_if_possible, detect
from autograder.sandbox.warm_children import start_warm_children as start_warm


@dataclass
class Start:
    """The grading run as `grade` began it: its submissions, read once, its number of
    children at once, and its sandbox (None with `problem` saying why there is none)."""

    submissions: list[Submission]
    jobs: int
    sandbox: Sandbox | None
    problem: str = ""
    # The chapter graded: --assignment, else the one most of the notebooks name (batch_chapter).
    assignment: str | None = None
    # The chapters to prepare (chapters_needed), decided here once for the whole run.
    chapters: frozenset[str] = frozenset()
    # --shard: which part of the batch this run grades (shards.py); None for all of it.
    sharded: ShardRun | None = None


def start(
    *,
    submissions: list[Path],
    out: Path,
    jobs: int | None,
    sandbox_mode: str,
    unsafe_no_sandbox: bool,
    reference_cache: Path | None,
    fork_server: bool | None,
    assignment: str | None,
    shard: Shard | None = None,
    **_: object,
) -> Start:
    """Read the submissions that are notebooks or files, choose the sandbox for this run and
    start its warm children. `fork_server` None: fork where it pays and is allowed
    (`forks_by_default`). `shard`: read and grade that shard of the batch only."""
    paths = [p for p in submissions if p.suffix == ".ipynb" or p.is_file()]
    jobs = capacity.default_jobs() if jobs is None else max(1, jobs)
    if not paths:
        return Start([], jobs, None, "No submissions given: pass .ipynb files.")
    sharded = None
    if shard is None:
        read = read_submissions(paths)
    else:
        read, sharded = read_shard(paths, shard)
    if assignment is None:
        assignment, problem = batch_chapter(read)
        if problem:
            return Start(read, jobs, None, problem)
    chapters = chapters_needed(read, assignment)
    try:
        out.mkdir(parents=True, exist_ok=True)
        sandbox = detect(sandbox_mode, jobs, unsafe_no_sandbox, bool(fork_server))
        if fork_server is None and forks_by_default(read, jobs, sandbox_mode, assignment):
            allow_fork_server_if_possible(sandbox, sandbox_mode)
        compiled = cache_folders.compile_cache(reference_cache)
        sandbox.offered = replace(
            sandbox.offered, compile_cache=str(compiled) if compiled.is_dir() else None
        )
    except (OSError, errors.SandboxUnavailable) as error:
        return Start(read, jobs, None, f"Cannot grade: {error}")
    start_warm_children(sandbox, read, chapters, jobs)
    return Start(read, jobs, sandbox, assignment=assignment, chapters=chapters, sharded=sharded)


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
        return None, (
            f"Cannot grade: the notebooks name different chapters equally often "
            f"({named}). Say which chapter this assignment is: --assignment NN."
        )
    chapter, count = ranked[0]
    others = sum(counts.values()) - count
    if others:
        print(
            f"No --assignment given: grading as chapter {chapter}, the chapter of {count} "
            f"of the notebooks; {others} notebook(s) of another chapter score 0 "
            "(pass --assignment NN to choose).",
            file=sys.stderr,
        )
    return chapter, ""


def chapters_needed(submissions: list[Submission], assignment: str | None) -> frozenset[str]:
    """The chapters of a run, to prepare: the one --assignment names, else each notebook's
    own (from its metadata) that the course has.

    A chapter this course does not have is left out here; the notebook that names it gets
    its own message, and the rest of the batch is graded.
    """
    if assignment:
        return frozenset({assignment})
    return frozenset(s.chapter for s in submissions if s.chapter in course_chapters())


def forks_by_default(
    submissions: list[Submission], jobs: int, sandbox_mode: str, assignment: str | None
) -> bool:
    """Whether a run without --fork-server / --no-fork-server forks its children from a
    server: a batch larger than --jobs (a lone submission's warm children start sooner than
    a server) of TensorFlow or JAX chapters only, where a fresh child's framework import is
    most of what each submission costs (bench: chapters 01, 04 and 05 meet the batch targets
    only this way). Never under --sandbox bubblewrap. The numpy chapters keep fresh children
    in bubblewrap, which start in a tenth of a second and scale better with --jobs."""
    if len(submissions) <= jobs or sandbox_mode == "bubblewrap":
        return False
    chapters = chapters_needed(submissions, assignment)
    return bool(chapters) and all(warm_group(chapter) is not None for chapter in chapters)


def start_warm_children(
    sandbox: Sandbox, submissions: list[Submission], chapters: frozenset[str], jobs: int
) -> int:
    """One warm child per submission, for a run of at most `jobs` submissions of one
    framework chapter, which all start at once (a larger batch would use them for its first
    submissions only). With --fork-server, that chapter's server instead, which imports once
    for the whole run. A child that cannot start is left out: the round it would have run
    starts a fresh one (or server), which fails loudly if the sandbox is broken. How many
    warm children were started."""
    if len(submissions) > jobs or len(chapters) != 1:
        return 0
    if (allowed := warm_group(next(iter(chapters)))) is None:
        return 0
    with contextlib.suppress(OSError, errors.SandboxFailure):
        if sandbox.offered.fork:
            sandbox.fork_server(allowed)
        else:
            start_warm(sandbox, allowed, len(submissions))
    return sandbox.warm_started
