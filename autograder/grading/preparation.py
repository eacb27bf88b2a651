"""Preparing a chapter and seed once, so that grading runs start fast: the hidden cases
and references, what the known mistakes give on them, and, by grading the course's own
solution notebook, JAX's compiled programs and each exercise's cost. The `prepare` command
does all of it; the first `grade` of a chapter and seed does what is missing."""

from __future__ import annotations

import contextlib
import sys
from dataclasses import replace
from pathlib import Path

from autograder.grading import cache_folders, refcache
from autograder.grading.assignment import Assignment, prepare, save_known_mistakes
from autograder.grading.grade import grade_submission
from autograder.grading.grading_run import GradingRun
from autograder.grading.submissions import clean_stem, read_submission
from autograder.grading.warm_groups import warm_group
from autograder.sandbox import children
from autograder.sandbox.capabilities import Capabilities
from autograder.sandbox.pools import Sandbox


def prepare_first_time(
    sandbox: Sandbox, assignments: dict[str, Assignment], seed: int, reference_cache: Path | None
) -> None:
    """What `prepare --warm-with` adds for a TensorFlow or JAX chapter, done by the first
    `grade` of its chapter and seed that finds it missing, so the command an instructor
    types is as fast from its second submission on as after `prepare`: the known mistakes'
    outputs (else a wrong answer's hint imports the framework into this process), and,
    where the course's own solution notebook is at hand (a clone), JAX's compiled programs
    and each exercise's cost (else every child compiles, and parts are split blindly)."""
    for chapter, assignment in assignments.items():
        if warm_group(chapter) is None:
            continue  # a numpy chapter has nothing more to prepare
        entry = refcache.entry_path(cache_folders.reference_cache(reference_cache), chapter, seed)
        solution = trusted_solution(chapter)
        if not _first_time(entry, solution):
            continue
        with refcache.entry_lock(entry, "first-grade"):  # runs sharing the cache: one does it
            left = _first_time(entry, solution)  # "": done by a run this one waited for
            if left:
                print(
                    f"chapter {chapter}, seed {seed}: preparing once (what `prepare` does; "
                    "later runs read it)",
                    file=sys.stderr,
                )
                with contextlib.redirect_stdout(sys.stderr):
                    save_known_mistakes(assignment, seed, reference_cache)
                    if left == "warm":
                        warm_compile_cache({chapter: assignment}, seed, reference_cache, [solution])
            _use_compile_cache(sandbox, reference_cache)  # this run's, or the one it waited for


def _first_time(entry: Path, solution: Path | None) -> str:
    """What a chapter's first grade has left to do: "warm" (compile the solution's programs
    and measure the costs, with the known mistakes if missing), "mistakes", or "" (done)."""
    if solution is not None and not refcache.costs_path(entry).is_file():
        return "warm"
    return "" if refcache.mistakes_path(entry).is_file() else "mistakes"


def trusted_solution(chapter: str) -> Path | None:
    """The course's own solution notebook of a chapter, beside the package in a clone of the
    course (an installed wheel carries none): trusted code, as `prepare --warm-with` takes."""
    folder = Path(__file__).resolve().parents[2] / "solutions"
    found = sorted(folder.glob(f"{chapter}_*.ipynb")) if folder.is_dir() else []
    return found[0] if found else None


def _use_compile_cache(sandbox: Sandbox, reference_cache: Path | None) -> None:
    """Children from now on read the compiled programs just written; fork servers started
    before it existed are restarted with it (on demand, by the next round)."""
    folder = cache_folders.compile_cache(reference_cache)
    if sandbox.offered.compile_cache is None and folder.is_dir():
        sandbox.offered = replace(sandbox.offered, compile_cache=str(folder))
        sandbox.close_fork_servers()


def prepare_cache(
    *,
    chapters: list[str],
    seed: int,
    reference_cache: Path | None = None,
    warm_with: list[Path] = (),
) -> int:
    """Fill the reference cache for these chapters and seed (Gradescope's setup.sh does this
    at image build time), so grading runs start without TensorFlow or JAX; then, for each
    notebook in `warm_with` (our own solution notebooks: trusted code), grade it once with
    JAX's compilation cache writable, so children of later runs read compiled programs."""
    assignments = {}
    for chapter in chapters:
        try:
            assignments[chapter] = prepare(chapter, seed, reference_cache)
        except ValueError as error:
            print(f"Cannot prepare: {error}", file=sys.stderr)
            return 2
        count = sum(len(cases) for cases in assignments[chapter].cases.values())
        entry = refcache.entry_path(cache_folders.reference_cache(reference_cache), chapter, seed)
        print(
            f"chapter {chapter}, seed {seed}: {count} hidden cases and their references in {entry}"
        )
        stored = save_known_mistakes(assignments[chapter], seed, reference_cache)
        if stored:
            print(
                f"chapter {chapter}: what {stored} known mistakes give on those cases, for "
                "the hints of wrong TensorFlow and JAX answers"
            )
    return warm_compile_cache(assignments, seed, reference_cache, list(warm_with))


def warm_compile_cache(
    assignments: dict[str, Assignment],
    seed: int,
    reference_cache: Path | None,
    notebooks: list[Path],
) -> int:
    """Grade trusted notebooks with the compilation cache writable; 1 if one loses a point
    (then the cache holds what it compiled, but the notebook is not a solution)."""
    if not notebooks:
        return 0
    folder = cache_folders.compile_cache(reference_cache)
    folder.mkdir(parents=True, exist_ok=True)
    trusted = Sandbox(
        Capabilities(unsafe=True, compile_cache=str(folder), compile_cache_writable=True)
    )
    run = GradingRun(
        seed, children.Limits(per_exercise=120, per_submission=600), trusted, assignments
    )
    status = 0
    for path in notebooks:
        result = grade_submission(run, read_submission(path, clean_stem(path)))
        full = bool(result.exercises) and all(e.passed for e in result.exercises)
        if full and result.chapter in assignments:
            _save_costs(run, path, result.chapter, seed, reference_cache)
        print(
            f"compiled {path.name} into {folder} ({result.seconds:.1f} s): "
            f"{result.score:g}/{len(result.exercises)}"
            + ("" if full else f"  WARNING: not a full-marks solution. {result.error}")
        )
        status = status or (0 if full else 1)
    refcache.share(folder)
    return status


def _save_costs(
    run: GradingRun, path: Path, chapter: str, seed: int, reference_cache: Path | None
) -> None:
    """Grade the solution again, now that JAX's programs are compiled as a grading run finds
    them, and keep what each exercise's cases took, to split submissions evenly."""
    reading = Sandbox(replace(run.sandbox.offered, compile_cache_writable=False))
    result = grade_submission(
        replace(run, sandbox=reading), read_submission(path, clean_stem(path))
    )
    if result.exercises and all(e.passed for e in result.exercises):
        entry = refcache.entry_path(cache_folders.reference_cache(reference_cache), chapter, seed)
        refcache.save_costs(
            refcache.costs_path(entry), {e.name: e.seconds for e in result.exercises}
        )
