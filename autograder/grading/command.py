"""`python -m autograder grade`: a batch of submissions in, Gradescope results and a CSV out.

The steps, in order: read the submissions and start the sandbox (start.py, before the heavy
imports); prepare each chapter's hidden cases and references (assignment.py, and once per
chapter and seed what preparation.py adds); grade the submissions, up to --jobs at once, the
ones with more answers first (grade.py); write each one's results as it finishes, then the
gradebook and a summary (results.py).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from autograder.exercises import for_chapter
from autograder.grading import refcache, shards, slicing
from autograder.grading import regrade as regrading
from autograder.grading import start as starting
from autograder.grading.assignment import Assignment, prepare
from autograder.grading.grade import SubmissionResult, grade_submission, new_seed
from autograder.grading.grading_run import GradingRun
from autograder.grading.preparation import prepare_first_time
from autograder.grading.results import print_summary, write_gradebook, write_submission
from autograder.grading.submissions import Submission
from autograder.sandbox import children
from autograder.sandbox.pools import Sandbox
from autograder.sandbox.sandbox import protections


def grade(
    *,
    submissions: list[Path],
    out: Path,
    jobs: int | None = None,
    seed: int | None = None,
    timeout: float = 120.0,
    assignment: str | None = None,
    sandbox_mode: str = "auto",
    unsafe_no_sandbox: bool = False,
    reference_cache: Path | None = None,
    fork_server: bool | None = None,
    shard: shards.Shard | None = None,
    started: starting.Start | None = None,
    regrade: Path | regrading.GradedRun | None = None,
) -> int:
    """Grade every submission: 0 when each was graded, whatever the scores; 1 when the
    grader failed on any (counted and named); 2 when nothing could be graded at all.
    `fork_server` None: as the command line without the flag (start.forks_by_default).
    `started`: the submissions, sandbox and warm children `start.start` made for these
    arguments. `shard`: grade that shard of the batch only, and record it (shards.py).
    `regrade`: PREVIOUS_OUT (or it read already, as the command line does before `start`):
    grade with its seed, and write what changed since into OUT (regrade.py)."""
    if refused := shards.refusal(shard, seed, assignment):
        print(refused, file=sys.stderr)
        return 2
    if isinstance(regrade, Path):
        try:
            planned = regrading.plan(
                regrade,
                out=out,
                seed=seed,
                assignment=assignment,
                submissions=submissions,
                shard=shard,
            )
        except regrading.Refused as error:
            print(f"Cannot regrade: {error}", file=sys.stderr)
            return 2
        regrade, seed, assignment = planned.previous, planned.seed, planned.assignment
        submissions = planned.submissions
    if started is None:
        started = starting.start(
            submissions=submissions,
            out=out,
            jobs=jobs,
            sandbox_mode=sandbox_mode,
            unsafe_no_sandbox=unsafe_no_sandbox,
            reference_cache=reference_cache,
            fork_server=fork_server,
            assignment=assignment,
            shard=shard,
        )
    if started.sandbox is None:
        print(started.problem, file=sys.stderr)
        return 2
    try:
        code = _grade_with(started, out, seed, timeout, started.assignment, reference_cache)
    finally:
        started.sandbox.close()
    if regrade is not None and code != 2:
        try:
            regrading.write_change_log(out, regrade)
        except (regrading.Refused, OSError) as error:
            print(f"No change log written: {error}", file=sys.stderr)
            return 1
    return code


def _start_fork_servers(sandbox: Sandbox, chapters: frozenset[str]) -> None:
    """Start the fork servers the chapters' rounds will need, so that their imports overlap
    the grader's own preparation. One that cannot start is tried again by its first round,
    which then fails loudly as a grading error."""
    if sandbox.offered.fork:
        for chapter in chapters:
            for frameworks in {tuple(sorted(e.frameworks)) for e in for_chapter(chapter)}:
                with contextlib.suppress(OSError):
                    sandbox.fork_server(frameworks)


def _grade_with(
    started: starting.Start,
    out: Path,
    seed: int | None,
    timeout: float,
    assignment: str | None,
    reference_cache: Path | None,
) -> int:
    sandbox, jobs, submissions = started.sandbox, started.jobs, started.submissions
    assert sandbox is not None
    seed = new_seed() if seed is None else seed
    print(f"seed {seed}; sandbox: {sandbox.offered.mode}; {jobs} children at once", file=sys.stderr)
    chapters = started.chapters
    _start_fork_servers(sandbox, chapters)
    try:
        assignments: dict[str, Assignment] = {
            chapter: prepare(chapter, seed, reference_cache) for chapter in chapters
        }
    except ValueError as error:
        print(f"Cannot grade: {error}", file=sys.stderr)
        return 2
    prepare_first_time(sandbox, assignments, seed, reference_cache)
    limits = children.Limits(per_exercise=min(30.0, timeout / 2), per_submission=timeout)
    run = GradingRun(
        seed, limits, sandbox, assignments, assignment, tuple(protections(sandbox.offered))
    )
    results = run_all(run, out, submissions, jobs)
    write_gradebook(out, results)
    if started.sharded is not None:
        shards.write_record(out, shard_record(started.sharded, run, timeout, results))
    print_summary(results, out)
    return 1 if any(r.grading_error for r in results) else 0


def shard_record(
    sharded: shards.ShardRun, run: GradingRun, timeout: float, results: list[SubmissionResult]
) -> dict:
    """What merge needs of a shard: what must be equal across the shards (seed, assignment,
    grader, time limit, batch), and each submission's gradebook row as data, with its place
    in the whole batch (the gradebook's order and its slow-submission notes are the batch's)."""
    return {
        "format": shards.FORMAT,
        "shard": sharded.shard.index,
        "shards": sharded.shard.count,
        "seed": run.seed,
        "assignment": run.assignment,
        "grader": refcache.digest(),
        "timeout": timeout,
        "batch": {"size": sharded.batch_size, "fingerprint": sharded.fingerprint},
        "submissions": [
            _row(position, result)
            for position, result in zip(sharded.positions, results, strict=True)
        ],
    }


def _row(position: int, result: SubmissionResult) -> dict:
    return {
        "position": position,
        "stem": result.stem,
        "file": str(result.path),
        "chapter": result.chapter,
        "exercises": [[e.name, e.score, e.max_score, e.passed] for e in result.exercises],
        "error": result.error,
        "grading_error": result.grading_error,
        "seconds": result.seconds,
        "review": result.review,
    }


def grade_one(run: GradingRun, out: Path, submission: Submission) -> SubmissionResult:
    """Grade and write one submission; whatever goes wrong costs this one only."""
    started = time.perf_counter()
    try:
        result = grade_submission(run, submission)
    except Exception as error:  # the grader's own failure: recorded loudly, batch goes on
        traceback.print_exc(file=sys.stderr)
        result = SubmissionResult(
            submission.path,
            submission.stem,
            run.assignment,
            grading_error=(f"{type(error).__name__}: {str(error)[:1000]}"),
        )
        result.seconds = time.perf_counter() - started
    write_submission(out, result, run)
    return result


def run_all(
    run: GradingRun, out: Path, submissions: list[Submission], jobs: int
) -> list[SubmissionResult]:
    """Grade up to `jobs` submissions at once. A worker with no submission left to start
    hands its slot to `run.spare`, where a submission still starting may take it to run
    its exercises in parts at once (grading one submission, or the last of a batch)."""
    lock = threading.Lock()
    done = [0]
    order = sorted(range(len(submissions)), key=lambda i: -submissions[i].answered_exercises())
    pending = iter([(i, submissions[i]) for i in order])
    results: list[SubmissionResult | None] = [None] * len(submissions)
    workers = max(1, min(jobs, len(submissions)))
    run.spare.give(max(0, jobs - workers))
    started = time.perf_counter()

    def one(submission: Submission) -> SubmissionResult:
        result = grade_one(run, out, submission)
        with lock:
            done[0] += 1
            total = sum(e.max_score for e in result.exercises)
            flag = "  GRADING ERROR" if result.grading_error else ""
            print(
                f"[{done[0]}/{len(submissions)}] {submission.path.name}: "
                f"{result.score:g}/{total:g} "
                f"({result.seconds:.1f} s, {time.perf_counter() - started:.0f} s elapsed)"
                f"{flag}",
                file=sys.stderr,
                flush=True,
            )
        return result

    def worker() -> None:
        try:
            while True:
                with lock:
                    item = next(pending, None)
                if item is None:
                    return
                index, submission = item
                results[index] = one(submission)
        finally:
            run.spare.give(1)  # this worker is done: its slot is idle

    slicing.serialize_parsing()  # threads must not build ASTs at once (CPython 3.11)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for future in [pool.submit(worker) for _ in range(workers)]:
            future.result()  # a failure outside grade_one's own handling is raised here
    return [result for result in results if result is not None]
