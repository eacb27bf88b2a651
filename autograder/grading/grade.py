"""Grading one submission: its chapter checked, its exercises run in parts (parts.py) whose
children run round by round in the sandbox (rounds.py), judged by the engine the notebook
check uses (verdicts.py), each exercise's result noting which exercises it calls failed.

The trusted parent never runs submitted code: each part's child runs only what the
exercises need (slicing.py) and returns arrays only; the parent alone writes results.
"""

from __future__ import annotations

import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from autograder.grading.assignment import Assignment, GradingRun
from autograder.grading.parts import parts_and_workers
from autograder.grading.rounds import run_part
from autograder.grading.submissions import (
    Notebook,
    Submission,
    notable_cell_problems,
    program_cells,
)
from autograder.grading.verdicts import ExerciseResult, exercise_result, with_dependencies
from autograder.judging.exercise import Exercise
from autograder.locale import say, speaking


@dataclass
class SubmissionResult:
    path: Path
    stem: str
    chapter: str | None
    exercises: list[ExerciseResult] = field(default_factory=list)
    error: str = ""
    cell_problems: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    grading_error: str = ""  # the grader failed, not the student: loud, counted, exit != 0
    language: str = "en"  # the submitted notebook's: its feedback is written in it

    @property
    def score(self) -> float:
        return sum(e.score for e in self.exercises)


# ---------------------------------------------------------------- reading submissions


# ---------------------------------------------------------------- the child's directory


# ---------------------------------------------------------------- judging


def grade_submission(grading: GradingRun, submission: Submission) -> SubmissionResult:
    """Grade one submission, read already; a failure of the grader itself is kept apart as
    grading_error."""
    with speaking(submission.language):
        return _grade(grading, submission)


def _grade(grading: GradingRun, submission: Submission) -> SubmissionResult:
    started = time.perf_counter()
    chapter, wanted, path = submission.chapter, grading.assignment, submission.path
    result = SubmissionResult(path, submission.stem, wanted or chapter, error=submission.problem,
                              language=submission.language)
    if not submission.problem:
        result.error = _chapter_problem(chapter, wanted, path)
    assignment = grading.assignments.get(result.chapter or "")
    if assignment is None:
        result.error = result.error or say(
            "chapter {chapter} has no graded exercises; submit a chapter notebook of this "
            "course.", chapter=result.chapter)
    elif result.error:
        result.exercises = [exercise_result(e, False, result.error) for e in assignment.exercises]
    else:
        _run_submission(result, submission.notebook, assignment, grading)
    result.seconds = time.perf_counter() - started
    return result


def _run_submission(result: SubmissionResult, notebook: Notebook, assignment: Assignment,
                    grading: GradingRun) -> None:
    """Run the submission's exercises in one part, or, when child slots are idle (grading
    one submission, or the last of a batch), in several at once: as parts, or, when they
    all need one framework, as workers of one child that imports it once."""
    cells, exercise_cells = program_cells(notebook)
    deadline = time.monotonic() + grading.limits.per_submission
    extra = grading.spare.take(len(assignment.exercises) - 1)
    parts, workers, used = parts_and_workers(assignment, 1 + extra)
    grading.spare.give(1 + extra - used)

    def one_part(exercises: list[Exercise]) -> tuple[dict[str, ExerciseResult], list[dict]]:
        with speaking(result.language):  # a pool's thread starts in no language
            return run_part(grading, assignment, exercises, cells, exercise_cells, deadline,
                            workers)

    try:
        if len(parts) == 1:
            outcomes = [one_part(parts[0])]
        else:
            with ThreadPoolExecutor(max_workers=len(parts)) as pool:
                outcomes = list(pool.map(one_part, parts))
    finally:
        grading.spare.give(used - 1)
    verdicts: dict[str, ExerciseResult] = {}
    problems: list[dict] = []
    for part_verdicts, part_problems in outcomes:
        verdicts.update(part_verdicts)
        problems = problems or part_problems
    result.cell_problems = notable_cell_problems(problems, exercise_cells)
    result.exercises = [with_dependencies(e, verdicts) for e in assignment.exercises]


def _chapter_problem(chapter: str | None, wanted: str | None, path: Path) -> str:
    if chapter is None and wanted is None:
        return say("{file} does not say which chapter it is (no course metadata); grade it "
                   "with --assignment CHAPTER.", file=path.name)
    if wanted is not None and chapter is not None and chapter != wanted:
        return say("{file} is the notebook of chapter {chapter}, but this assignment is "
                   "chapter {wanted}. Submit the chapter {wanted} notebook.", file=path.name,
                   chapter=chapter, wanted=wanted)
    return ""


def new_seed() -> int:
    return secrets.randbelow(2**32)
