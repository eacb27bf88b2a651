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

from autograder.grading.assignment import Assignment
from autograder.grading.grading_run import GradingRun
from autograder.grading.parts import parts_and_workers
from autograder.grading.rounds import run_part
from autograder.grading.submissions import (
    Notebook,
    Submission,
    notable_cell_problems,
    program_cells,
)
from autograder.grading.tampering import Finding, read_findings
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
    # What the instructor should look at (the gradebook's review column): code that reaches
    # into the checks' interpreter (tampering.py), refused or flagged; a slow submission.
    review: list[str] = field(default_factory=list)

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
    result = SubmissionResult(
        path,
        submission.stem,
        wanted or chapter,
        error=submission.problem,
        language=submission.language,
    )
    if not submission.problem:
        result.error = _chapter_problem(chapter, wanted, path)
    assignment = grading.assignments.get(result.chapter or "")
    if assignment is None:
        result.error = result.error or say(
            "chapter {chapter} has no graded exercises; submit a chapter notebook of this course.",
            chapter=result.chapter,
        )
    elif result.error:
        result.exercises = [exercise_result(e, False, result.error) for e in assignment.exercises]
    else:
        _run_submission(result, submission.notebook, assignment, grading)
    result.seconds = time.perf_counter() - started
    return result


def _run_submission(
    result: SubmissionResult, notebook: Notebook, assignment: Assignment, grading: GradingRun
) -> None:
    """Run the submission's exercises in one part, or, when child slots are idle (grading
    one submission, or the last of a batch), in several at once: as parts, or, when they
    all need one framework, as workers of one child that imports it once."""
    cells, exercise_cells = program_cells(notebook)
    if _refused_by_reading(result, read_findings(cells), assignment):
        return
    deadline = time.monotonic() + grading.limits.per_submission
    extra = grading.spare.take(len(assignment.exercises) - 1)
    parts, workers, used = parts_and_workers(assignment, 1 + extra)
    grading.spare.give(1 + extra - used)

    def one_part(exercises: list[Exercise]) -> tuple[dict[str, ExerciseResult], list[dict]]:
        with speaking(result.language):  # a pool's thread starts in no language
            return run_part(
                grading, assignment, exercises, cells, exercise_cells, deadline, workers
            )

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


def _refused_by_reading(
    result: SubmissionResult, findings: list[Finding], assignment: Assignment
) -> bool:
    """Note the findings for the instructor; True when one is refused: then no child runs
    and every exercise scores 0 with a message naming the cell and line."""
    result.review = [f"{'refused' if f.refused else 'flagged'}: {f}" for f in findings]
    refused = next((f for f in findings if f.refused), None)
    if refused is None:
        return False
    message = say(
        "Not graded: cell {cell}, line {line} uses `{used}`, which reaches into the "
        "interpreter where the checks run beside your code, so its results could not be "
        "trusted. No answer of this course needs it: remove it and submit again (if you "
        "think this is wrong, tell your instructor, who sees it in the gradebook).",
        cell=refused.cell,
        line=refused.line,
        used=refused.used,
    )
    result.error = message
    result.exercises = [exercise_result(e, False, message) for e in assignment.exercises]
    return True


def _chapter_problem(chapter: str | None, wanted: str | None, path: Path) -> str:
    if chapter is None and wanted is None:
        return say(
            "{file} does not say which chapter it is (no course metadata); grade it "
            "with --assignment CHAPTER.",
            file=path.name,
        )
    if wanted is not None and chapter is not None and chapter != wanted:
        return say(
            "{file} is the notebook of chapter {chapter}, but this assignment is "
            "chapter {wanted}. Submit the chapter {wanted} notebook.",
            file=path.name,
            chapter=chapter,
            wanted=wanted,
        )
    return ""


def new_seed() -> int:
    return secrets.randbelow(2**32)
