"""Classroom grading: many submitted notebooks, hidden cases, sandboxed execution.

The trusted parent draws the cases from the seed and computes both frameworks' references
once per run; each submission's code runs in its own sandboxed child (see sandbox.py and
child.py), which returns arrays only. The parent judges them with the same engine as the
notebook checks and alone writes results.json, feedback.txt and grades.csv.
"""

from __future__ import annotations

import json
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
import numpy as np

from . import sandbox
from .cases import Case, draw_cases, grading_profile
from .engine import Attempt, judge, reference_outputs
from .exercise import Exercise, Outputs
from .exercises import for_chapter
from .report import FAILED, Failure, Report

CHILD_SCRIPT = Path(__file__).with_name("child.py")
SKIPPED_TAGS = {"display-only"}
MAX_RESULT_JSON = 5_000_000


class RemoteError(Exception):
    """An exception raised inside the child, known only by its type name and message."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(message)
        self.type_name = type_name


@dataclass
class Assignment:
    """One chapter's exercises, with cases and references computed once per run."""

    chapter: str
    exercises: list[Exercise]
    cases: dict[str, list[Case]]
    references: dict[str, list[Outputs]]


def prepare(chapter: str, seed: int) -> Assignment:
    exercises = for_chapter(chapter)
    if not exercises:
        raise ValueError(f"Chapter {chapter!r} has no graded exercises.")
    profile = grading_profile(seed)
    cases, refs = {}, {}
    for exercise in exercises:
        cases[exercise.name] = exercise.edge_cases() + draw_cases(
            exercise.strategy(profile), profile
        )
        refs[exercise.name] = reference_outputs(exercise, cases[exercise.name])
    return Assignment(chapter, exercises, cases, refs)


@dataclass
class ExerciseResult:
    name: str
    score: float
    max_score: float
    passed: bool
    output: str


@dataclass
class SubmissionResult:
    path: Path
    stem: str
    chapter: str | None
    exercises: list[ExerciseResult] = field(default_factory=list)
    error: str = ""
    cell_problems: list[dict] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def score(self) -> float:
        return sum(e.score for e in self.exercises)


# ---------------------------------------------------------------- reading submissions


def read_notebook(path: Path) -> tuple[Any, str]:
    """(notebook, "") or (None, a message saying what is wrong and what to do)."""
    try:
        return nbformat.reads(path.read_text(encoding="utf-8"), as_version=4), ""
    except (OSError, UnicodeDecodeError) as error:
        return None, f"could not read {path.name}: {error}. Submit the .ipynb file itself."
    except Exception as error:  # nbformat raises several JSON and schema errors
        return None, (
            f"{path.name} is not a valid Jupyter notebook ({type(error).__name__}: "
            f"{str(error)[:200]}). Download it again from JupyterLab (File > Download) "
            "and resubmit."
        )


def chapter_of(notebook: Any) -> str | None:
    course = notebook.metadata.get("course", {})
    return str(course["chapter"]) if isinstance(course, dict) and "chapter" in course else None


def program_cells(notebook: Any) -> tuple[list[str], set[int]]:
    """The code cells that define things (display-only cells such as plots and timings are
    skipped), and the 1-based positions among them of the exercise cells."""
    kept = [
        cell for cell in notebook.cells
        if cell.cell_type == "code" and not SKIPPED_TAGS & set(cell.metadata.get("tags", []))
    ]
    exercise_cells = {
        index for index, cell in enumerate(kept, start=1)
        if "exercise" in cell.metadata.get("tags", [])
    }
    return [cell.source for cell in kept], exercise_cells


def notable_cell_problems(problems: list[dict], exercise_cells: set[int]) -> list[dict]:
    """Errors worth a student's attention: in exercise cells, or syntax errors anywhere.

    Demonstration cells that use TensorFlow or JAX fail in the grader by design (the
    frameworks are not available to submitted code); reporting those would only confuse.
    """
    return [
        p for p in problems
        if p.get("cell") in exercise_cells or p.get("type") in ("SyntaxError", "IndentationError")
    ]


# ---------------------------------------------------------------- the child's directory


def write_inputs(workdir: Path, exercise: Exercise, cases: list[Case]) -> None:
    arrays = {}
    for index, case in enumerate(cases):
        for name, value in case.arrays().items():
            arrays[f"c{index}_{name}"] = value
    np.savez(workdir / f"inputs_{exercise.name}.npz", **arrays)
    meta = {
        "arguments": [name for name, _ in cases[0].args],
        "params": [{k: _jsonable(v) for k, v in case.params().items()} for case in cases],
    }
    (workdir / f"inputs_{exercise.name}.json").write_text(json.dumps(meta))


def _jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def read_outputs(workdir: Path, name: str) -> tuple[dict | None, dict[str, np.ndarray]]:
    """The child's report and arrays, read as plain data; anything malformed reads as None."""
    report_path, arrays_path = workdir / f"out_{name}.json", workdir / f"out_{name}.npz"
    try:
        if report_path.stat().st_size > MAX_RESULT_JSON:
            return None, {}
        report = json.loads(report_path.read_text())
        with np.load(arrays_path, allow_pickle=False) as data:
            arrays = {key: data[key] for key in data.files}
    except (OSError, ValueError):
        return None, {}
    return (report if isinstance(report, dict) else None), arrays


# ---------------------------------------------------------------- judging


def _item(record: Any, arrays: dict[str, np.ndarray]) -> Any:
    if not isinstance(record, dict):
        return None
    if record.get("kind") == "array" and record.get("key") in arrays:
        array = arrays[record["key"]]
        return array[()] if record.get("generic") else array
    return type(str(record.get("type", "object")), (), {"__module__": str(record.get("module"))})()


def attempt_from(record: Any, arrays: dict[str, np.ndarray]) -> Attempt:
    if not isinstance(record, dict):
        return Attempt(error=RemoteError("MissingResult", "no result was recorded"))
    if record.get("kind") == "error":
        error = RemoteError(str(record.get("type")), str(record.get("message")))
        return Attempt(error=error, traceback=str(record.get("traceback", ""))[-3000:])
    if record.get("kind") == "sequence":
        items = [_item(item, arrays) for item in record.get("items", [])]
        return Attempt(value=tuple(items) if record.get("type") == "tuple" else items)
    return Attempt(value=_item(record, arrays))


def _result(exercise: Exercise, passed: bool, output: str) -> ExerciseResult:
    return ExerciseResult(exercise.name, 1.0 if passed else 0.0, 1.0, passed, output)


def judge_outputs(
    exercise: Exercise, cases: list[Case], refs: list[Outputs], report: dict,
    arrays: dict[str, np.ndarray],
) -> ExerciseResult:
    """All-or-nothing per exercise; feedback shows the smallest failing case."""
    if report.get("missing"):
        defined = ", ".join(report.get("defined", [])) or "none"
        return _result(exercise, False, (
            f"No function named `{exercise.name}` was found after running the notebook. "
            f"Keep the exercise's name and signature `{exercise.signature}`. "
            f"Functions defined: {defined}."
        ))
    records = report.get("cases", [])
    if not isinstance(records, list):
        records = []
    failures: list[Failure] = []
    for index, (case, expected) in enumerate(zip(cases, refs, strict=True)):
        attempt = attempt_from(records[index] if index < len(records) else None, arrays)
        if getattr(attempt.error, "type_name", "") == "FrameworkUsed":
            return _result(exercise, False, (
                f"`{exercise.name}` calls TensorFlow or JAX. This is a numpy exercise: the "
                f"gradient rule must be your own code, so it scores 0. ({attempt.error})"
            ))
        failure = judge(exercise, case, attempt, expected)
        if failure is not None:
            failures.append(failure)
    checked = len(cases)
    if report.get("timeout"):
        return _result(exercise, False, (
            f"`{exercise.name}` did not finish its {checked} cases within the time limit "
            f"(finished {len(records)}). Look for an endless loop."
        ))
    if not failures:
        return _result(exercise, True, f"Passed all {checked} cases (hidden cases included).")
    if all("NotImplementedError" in f.message for f in failures):
        return _result(exercise, False, (
            f"Not answered: `{exercise.name}` still raises NotImplementedError. Replace that "
            "line with your code."
        ))
    smallest = min(failures, key=lambda f: f.case.size())
    feedback = Report(exercise.name, exercise.name, FAILED, checked, exercise.references_text,
                      failure=smallest)
    return _result(exercise, False, (
        f"Failed {len(failures)} of {checked} cases. {feedback}"
    ))


# ---------------------------------------------------------------- running one submission


def _run_rounds(
    workdir: Path, assignment: Assignment, cells: list[str], limits: sandbox.Limits,
    bwrap: str | None,
) -> tuple[dict[str, ExerciseResult], list[dict]]:
    """Run children until every exercise has a verdict; a crash costs one exercise only.

    Exercises that allow different frameworks run in different children, so a numpy
    exercise never shares a process where TensorFlow or JAX is permitted.
    """
    results: dict[str, ExerciseResult] = {}
    cell_problems: list[dict] = []
    groups: dict[tuple[str, ...], list[Exercise]] = {}
    for exercise in assignment.exercises:
        groups.setdefault(tuple(sorted(exercise.frameworks)), []).append(exercise)
    for allowed, exercises in groups.items():
        group_results, problems = _run_group(
            workdir, assignment, exercises, allowed, cells, limits, bwrap
        )
        results.update(group_results)
        cell_problems = cell_problems or problems
    return results, cell_problems


def _run_group(
    workdir: Path, assignment: Assignment, exercises: list[Exercise], allowed: tuple[str, ...],
    cells: list[str], limits: sandbox.Limits, bwrap: str | None,
) -> tuple[dict[str, ExerciseResult], list[dict]]:
    results: dict[str, ExerciseResult] = {}
    by_name = {e.name: e for e in exercises}
    remaining = [e.name for e in exercises]
    cell_problems: list[dict] = []
    while remaining:
        for stale in [*workdir.glob("started_*"), workdir / "cells.json"]:
            stale.unlink(missing_ok=True)
        program = {"cells": cells, "exercises": remaining, "time_limit": limits.per_exercise,
                   "limits": sandbox.child_limits(limits, frameworks=bool(allowed)),
                   "allowed": list(allowed),
                   "invoke": {name: by_name[name].invoke for name in remaining}}
        (workdir / "program.json").write_text(json.dumps(program))
        outcome = sandbox.run_child(workdir / "child.py", workdir, limits, bwrap)
        cell_problems = _read_cell_problems(workdir) or cell_problems
        progressed = False
        for name in list(remaining):
            exercise = by_name[name]
            report, arrays = read_outputs(workdir, name)
            if report is not None:
                results[name] = judge_outputs(exercise, assignment.cases[name],
                                              assignment.references[name], report, arrays)
            elif (workdir / f"started_{name}").exists():
                results[name] = _result(exercise, False, _death_message(name, outcome))
            else:
                continue
            remaining.remove(name)
            progressed = True
            (workdir / f"out_{name}.json").unlink(missing_ok=True)
        if not progressed:
            message = _cells_died_message(outcome, workdir)
            for name in remaining:
                results[name] = _result(by_name[name], False, message)
            break
    return results, cell_problems


def _child_started(workdir: Path) -> bool:
    """The child writes cells.json after running the cells, or dies while running them."""
    log = workdir / "child.log"
    started_python = not log.exists() or "bwrap:" not in log.read_text(errors="replace")
    return (workdir / "cells.json").exists() or started_python


def _read_cell_problems(workdir: Path) -> list[dict]:
    try:
        problems = json.loads((workdir / "cells.json").read_text())
    except (OSError, ValueError):
        return []
    return problems if isinstance(problems, list) else []


def _death_message(name: str, outcome: sandbox.ChildResult) -> str:
    if outcome.timed_out:
        return f"`{name}` was stopped at the time limit for the whole submission."
    return (
        f"The process ended while `{name}` ran (exit code {outcome.returncode}): os._exit, "
        "a crash, or the memory limit. The other exercises were graded separately."
    )


def _cells_died_message(outcome: sandbox.ChildResult, workdir: Path) -> str:
    if not (workdir / "program.json").exists() or not _child_started(workdir):
        log = (workdir / "child.log").read_text(errors="replace")[-800:]
        return f"The grader could not start the sandbox (a grader problem, not yours): {log}"
    if outcome.timed_out:
        return "The notebook's cells did not finish within the time limit (an endless loop?)."
    return (
        f"The notebook ended the process while its cells ran (exit code {outcome.returncode}),"
        " before any exercise could be called. Remove os._exit / crashing code from the cells."
    )


def grade_submission(
    path: Path, stem: str, assignments: dict[str, Assignment], wanted: str | None,
    limits: sandbox.Limits, bwrap: str | None, seed: int,
) -> SubmissionResult:
    started = time.perf_counter()
    notebook, problem = read_notebook(path)
    chapter = chapter_of(notebook) if notebook is not None else None
    result = SubmissionResult(path, stem, wanted or chapter, error=problem)
    if not problem:
        result.error = _chapter_problem(chapter, wanted, path)
    assignment = assignments.get(result.chapter or "")
    if assignment is None:
        result.error = result.error or f"chapter {result.chapter} has no graded exercises."
        result.seconds = time.perf_counter() - started
        return result
    if result.error:
        result.exercises = [_result(e, False, result.error) for e in assignment.exercises]
    else:
        workdir = Path(tempfile.mkdtemp(prefix="submission-"))
        try:
            shutil.copy(CHILD_SCRIPT, workdir / "child.py")
            for exercise in assignment.exercises:
                write_inputs(workdir, exercise, assignment.cases[exercise.name])
            cells, exercise_cells = program_cells(notebook)
            verdicts, problems = _run_rounds(workdir, assignment, cells, limits, bwrap)
            result.cell_problems = notable_cell_problems(problems, exercise_cells)
            result.exercises = [verdicts[e.name] for e in assignment.exercises]
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    result.seconds = time.perf_counter() - started
    return result


def _chapter_problem(chapter: str | None, wanted: str | None, path: Path) -> str:
    if chapter is None and wanted is None:
        return (f"{path.name} does not say which chapter it is (no course metadata); "
                "grade it with --assignment CHAPTER.")
    if wanted is not None and chapter is not None and chapter != wanted:
        return (f"{path.name} is the notebook of chapter {chapter}, but this assignment is "
                f"chapter {wanted}. Submit the chapter {wanted} notebook.")
    return ""


def new_seed() -> int:
    return secrets.randbelow(2**32)
