"""Classroom grading: many submitted notebooks, hidden cases, sandboxed execution.

The trusted parent draws the cases from the seed and computes both frameworks' references
once per chapter and seed, kept in the reference cache (refcache.py); each submission's code
runs in its own sandboxed child (see sandbox.py and child.py), which runs only what the
exercises need (slicing.py) and returns arrays only. The parent judges them with the same
engine as the notebook checks and alone writes results.json, feedback.txt and grades.csv.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import secrets
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from autograder import harness
from autograder.exercises import for_chapter
from autograder.grading import refcache, slicing, untrusted
from autograder.grading import start as early
from autograder.judging import references
from autograder.judging.cases import Case, draw_cases, grading_profile
from autograder.judging.engine import (
    INPUT_INDEPENDENT,
    Attempt,
    dependency_note,
    error_type,
    fails,
    judge,
    method_failure,
    not_answered,
    others_than,
    result_of,
    verdict,
)
from autograder.judging.exercise import Exercise, Mistake, Outputs, Raised
from autograder.judging.report import NOT_ANSWERED, Failure, Report
from autograder.sandbox import sandbox
from autograder.sandbox.confined import child

SKIPPED_TAGS = {"display-only"}
RECORD_KINDS = {"array", "other", "sequence", "error"}
NOT_ANSWERED_TEXT = "Not answered:"
# The error types whose first case ends an exercise's run in the child (child.py keeps its
# own copy, since it imports nothing of the grader; a test keeps the two equal).
STOPPING_ERRORS = INPUT_INDEPENDENT | {"NotImplementedError"}


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
    # Seconds each exercise's cases took when `prepare --warm-with` graded a solution (the
    # entry's .costs.json), to split a submission into parts of equal work; may be empty.
    costs: dict[str, float] = field(default_factory=dict)
    # The child's input files per exercise, serialized once: every submission gets the same
    # cases, and the parent's work is serial under the GIL (it limits --jobs).
    _inputs: dict[str, tuple[bytes, str]] = field(default_factory=dict, repr=False)

    def input_files(self, name: str) -> tuple[bytes, str]:
        """The exercise's inputs_<name>.npz and .json, as written for the child."""
        if name not in self._inputs:
            self._inputs[name] = serialized_inputs(self.cases[name])
        return self._inputs[name]


def prepare(chapter: str, seed: int, cache: Path | None = None) -> Assignment:
    """The chapter's hidden cases and references for this seed: read from the reference
    cache when a valid entry is there (no TensorFlow or JAX import then), else computed by
    both frameworks and written to the cache for the next run."""
    exercises = for_chapter(chapter)
    if not exercises:
        raise ValueError(f"Chapter {chapter!r} has no graded exercises.")
    path = refcache.entry_path(early.folder(cache), chapter, seed)
    try:
        cases, refs = refcache.load(path, {e.name: len(e.outputs) for e in exercises})
    except refcache.Invalid:
        cases, refs = compute_references(exercises, seed)
        _save_quietly(path, cases, refs)
    known = refcache.KnownMistakes(refcache.mistakes_path(path))
    if known.exists():
        exercises = [replace(e, known=_stored_mistakes(e, cases[e.name], known))
                     if e.frameworks and e.mistakes else e for e in exercises]
    return Assignment(chapter, exercises, cases, refs,
                      refcache.load_costs(refcache.costs_path(path), set(cases)))


def _stored_mistakes(exercise: Exercise, cases: list[Case], known: refcache.KnownMistakes
                     ) -> Callable[[Mistake, Case], Any]:
    """Exercise.known for one exercise: a mistake's stored outputs on one of its hidden
    cases, in the form run_mistake gives them, or None (not stored: run it)."""
    index = {id(case): i for i, case in enumerate(cases)}

    def stored(mistake: Mistake, case: Case) -> Any:
        position = index.get(id(case))
        found = None if position is None else known.get(exercise.name, mistake.name, position)
        if isinstance(found, str):
            return Raised(found)
        if found is None or len(found) != len(exercise.outputs):
            return None
        return found[0] if len(found) == 1 else tuple(found)

    return stored


def save_known_mistakes(assignment: Assignment, seed: int, cache: Path | None = None) -> int:
    """Run each TensorFlow or JAX exercise's known mistakes on its hidden cases and store
    what they give beside the references (what `prepare` does once), so that a wrong
    answer's hint never imports a framework into a grading run. Returns how many mistakes
    were stored (0: none to store, or already stored)."""
    entry = refcache.entry_path(early.folder(cache), assignment.chapter, seed)
    path = refcache.mistakes_path(entry)
    exercises = [e for e in assignment.exercises if e.frameworks and e.mistakes]
    if not exercises or path.is_file():
        return 0
    table = {e.name: {m.name: [_storable(e, e.run_mistake(m, case))
                               for case in assignment.cases[e.name]] for m in e.mistakes}
             for e in exercises}
    path.parent.mkdir(parents=True, exist_ok=True)
    refcache.save_mistakes(path, table)
    return sum(len(mistakes) for mistakes in table.values())


def _storable(exercise: Exercise, value: Any) -> refcache.MistakeOutputs:
    """A mistake's result as stored: the exception's name, its outputs as numeric arrays,
    or None when it gave something else (that mistake is then run when a hint needs it)."""
    if isinstance(value, Raised):
        return value.type_name
    try:
        values = (value,) if len(exercise.outputs) == 1 else tuple(value)
        arrays = [np.asarray(v) for v in values]
    except (TypeError, ValueError):
        return None
    if len(arrays) != len(exercise.outputs) or any(a.dtype.kind not in "fiub" for a in arrays):
        return None
    return arrays


def compute_references(exercises: list[Exercise], seed: int
                       ) -> tuple[dict[str, list[Case]], dict[str, list[Outputs]]]:
    """Draw every exercise's hidden cases and ask both frameworks (the slow part)."""
    profile = grading_profile(seed)
    cases, refs = {}, {}
    for exercise in exercises:
        cases[exercise.name] = exercise.edge_cases() + draw_cases(
            exercise.strategy(profile), profile
        )
        refs[exercise.name] = references.reference_outputs(exercise, cases[exercise.name])
    return cases, refs


def _save_quietly(path: Path, cases: dict[str, list[Case]],
                  refs: dict[str, list[Outputs]]) -> None:
    """A cache that cannot be written (read-only home) costs the next run time, not this one."""
    try:
        refcache.save(path, cases, refs)
    except OSError as error:
        print(f"note: reference cache not written ({error})", file=sys.stderr)


@dataclass
class ExerciseResult:
    name: str
    score: float
    max_score: float
    passed: bool
    output: str
    # What the child says its cases took: only a trusted run's (prepare --warm-with) is used,
    # to balance the exercises between parts (split_exercises).
    seconds: float = 0.0


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

    @property
    def score(self) -> float:
        return sum(e.score for e in self.exercises)


# ---------------------------------------------------------------- reading submissions


@dataclass(frozen=True)
class Cell:
    cell_type: str
    source: str
    metadata: dict


@dataclass(frozen=True)
class Notebook:
    """The parts of a submitted notebook the grader reads: cells and the course metadata.

    Read with `json`, not nbformat: importing nbformat (jsonschema and its dependencies)
    costs the grader's start-up 1-4 s, more than grading a numpy chapter."""

    cells: list[Cell]
    metadata: dict


def read_notebook(path: Path) -> tuple[Notebook | None, str]:
    """(notebook, "") or (None, a message saying what is wrong and what to do)."""
    try:
        return parse_notebook(json.loads(path.read_text(encoding="utf-8"))), ""
    except (OSError, UnicodeDecodeError) as error:
        return None, f"could not read {path.name}: {error}. Submit the .ipynb file itself."
    except ValueError as error:  # JSON errors, and a structure that is not a notebook
        return None, (
            f"{path.name} is not a valid Jupyter notebook ({type(error).__name__}: "
            f"{str(error)[:200]}). Download it again from JupyterLab (File > Download) "
            "and resubmit."
        )


def parse_notebook(data: Any) -> Notebook:
    """A version-4 notebook's cells, each source joined; ValueError for anything else."""
    if not isinstance(data, dict) or data.get("nbformat") != 4:
        raise ValueError("not a version 4 notebook")
    cells, metadata = data.get("cells"), data.get("metadata", {})
    if not isinstance(cells, list) or not isinstance(metadata, dict):
        raise ValueError("cells must be a list and metadata an object")
    return Notebook([_cell(cell) for cell in cells], metadata)


def _cell(data: Any) -> Cell:
    if not isinstance(data, dict) or not isinstance(data.get("cell_type"), str):
        raise ValueError("a cell without a cell_type")
    source, metadata = data.get("source", ""), data.get("metadata", {})
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        source = "".join(source)
    tags = metadata.get("tags", []) if isinstance(metadata, dict) else None
    if not isinstance(source, str) or not isinstance(tags, list):
        raise ValueError("a cell's source must be text and its tags a list")
    return Cell(data["cell_type"], source, {"tags": [t for t in tags if isinstance(t, str)]})


def chapter_of(notebook: Any) -> str | None:
    return early.chapter_in(notebook.metadata)


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


def write_inputs(box: sandbox.Box, name: str, files: tuple[bytes, str]) -> None:
    npz, meta = files
    (box.ctrl / f"inputs_{name}.npz").write_bytes(npz)
    (box.ctrl / f"inputs_{name}.json").write_text(meta)
    for suffix in ("npz", "json"):
        sandbox.share_read_only(box, box.ctrl / f"inputs_{name}.{suffix}")


def serialized_inputs(cases: list[Case]) -> tuple[bytes, str]:
    """(the .npz of every case's arrays, keys "c<case>_<argument>"; the .json of the
    arguments' order and each case's static parameters)."""
    arrays = {f"c{index}_{argument}": value for index, case in enumerate(cases)
              for argument, value in case.arrays().items()}
    buffer = io.BytesIO()
    np.savez(buffer, **child.pack_arrays(arrays))
    meta = json.dumps({
        "arguments": [argument for argument, _ in cases[0].args],
        "params": [{k: _jsonable(v) for k, v in case.params().items()} for case in cases],
    })
    return buffer.getvalue(), meta


def _jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def read_outputs(out: Path, name: str) -> tuple[dict | None, dict[str, np.ndarray]]:
    """The child's report and arrays, read as untrusted data; anything refused reads as None."""
    try:
        report = validated_report(untrusted.read_json(out / f"out_{name}.json"))
        arrays = untrusted.read_packed_npz(out / f"out_{name}.npz")
    except untrusted.Untrusted:
        return None, {}
    return report, arrays


def validated_report(value: Any) -> dict:
    """The report's shape, checked field by field, so judging never meets a wrong type."""
    if not isinstance(value, dict):
        raise untrusted.Untrusted("the report is not an object")
    cases = value.get("cases", [])
    defined = value.get("defined", [])
    if not isinstance(cases, list) or not all(_valid_record(r) for r in cases):
        raise untrusted.Untrusted("malformed case records")
    if not isinstance(defined, list) or not all(isinstance(d, str) for d in defined):
        raise untrusted.Untrusted("malformed list of defined names")
    seconds = value.get("seconds")
    if not isinstance(seconds, (int, float)) or not 0 <= seconds < 1e6:
        seconds = 0.0
    return {"cases": cases, "defined": defined[:30], "missing": value.get("missing") is True,
            "timeout": value.get("timeout") is True, "seconds": float(seconds)}


def _valid_record(record: Any) -> bool:
    if not isinstance(record, dict) or record.get("kind") not in RECORD_KINDS:
        return False
    if record["kind"] == "sequence":
        items = record.get("items")
        return (isinstance(items, list) and len(items) <= 64
                and isinstance(record.get("method", ""), str)
                and all(_valid_record(i) and i["kind"] in ("array", "other") for i in items))
    strings = ("key", "type", "module", "message", "traceback", "function", "method")
    return all(isinstance(record.get(k, ""), str) for k in strings) and isinstance(
        record.get("generic", False), bool)


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
        return Attempt(error=error, traceback=str(record.get("traceback", ""))[-3000:],
                       raised_in=str(record.get("function", ""))[:100])
    method = str(record.get("method", ""))[:2000]
    if record.get("kind") == "sequence":
        items = [_item(item, arrays) for item in record.get("items", [])]
        return Attempt(value=tuple(items) if record.get("type") == "tuple" else items,
                       method=method)
    return Attempt(value=_item(record, arrays), method=method)


def _result(exercise: Exercise, passed: bool, output: str) -> ExerciseResult:
    return ExerciseResult(exercise.name, 1.0 if passed else 0.0, 1.0, passed, output)


def cases_run(records: list[dict], total: int) -> int:
    """How many cases the child ran: all of them, or fewer when its last case raised an
    error that ends the run (child.STOPPING_ERRORS). Only an error can end it early, so a
    child that stops on its own can only fail."""
    last = records[-1] if records else {}
    if len(records) < total and last.get("kind") == "error" and last.get(
            "type") in STOPPING_ERRORS:
        return len(records)
    return total


def judge_outputs(
    exercise: Exercise, cases: list[Case], refs: list[Outputs], report: dict,
    arrays: dict[str, np.ndarray],
) -> ExerciseResult:
    """All-or-nothing per exercise; feedback shows the smallest failing case."""
    if report["missing"]:
        defined = ", ".join(report["defined"]) or "none"
        return _result(exercise, False, (
            f"No function named `{exercise.name}` was found after running the notebook. "
            f"Keep the exercise's name and signature `{exercise.signature}`. "
            f"Functions defined: {defined}."
        ))
    records = report["cases"]
    ran = cases_run(records, len(cases))
    cases, refs = cases[:ran], refs[:ran]
    attempts = [attempt_from(records[i] if i < len(records) else None, arrays)
                for i in range(len(cases))]
    framework = next((a for a in attempts if error_type(a) == "FrameworkUsed"), None)
    if framework is not None:
        return _result(exercise, False, (
            f"`{exercise.name}` calls TensorFlow or JAX. This is a numpy exercise: the "
            f"gradient rule must be your own code, so it scores 0. ({framework.error})"
        ))
    checked = len(cases)
    if report["timeout"]:
        return _result(exercise, False, (
            f"`{exercise.name}` did not finish its {checked} cases within the time limit "
            f"(finished {len(records)}). Look for an endless loop."
        ))
    failing = [(case, attempt, expected)
               for case, attempt, expected in zip(cases, attempts, refs, strict=True)
               if fails(exercise, attempt, expected)]
    unanswered = bool(failing) and all(not_answered(attempt) for _, attempt, _ in failing)
    # A wrong value or an error first; a method not followed only when every value is right.
    # Not answered needs neither (nor the mistakes that name a failure, which would bring
    # the exercise's framework into this process).
    shown = None if unanswered else smallest_failure(exercise, failing) or next(
        (method_failure(case, attempt) for case, attempt in zip(cases, attempts, strict=False)
         if attempt.method), None)
    stub = failing[0][1].raised_in if unanswered else ""
    feedback = verdict(exercise, exercise.name, checked, shown, unanswered=unanswered,
                       stub=stub)
    return _result(exercise, feedback.passed, _grader_text(exercise, feedback, len(failing)))


def smallest_failure(exercise: Exercise, failing: list[tuple[Case, Attempt, Outputs]]
                     ) -> Failure | None:
    """The failure to show: an error that does not depend on the case (a NameError) first,
    else the smallest failing case, whose hint names a mistake only if that mistake
    reproduces the other failing cases too."""
    if not failing:
        return None
    independent = [failed for failed in failing if error_type(failed[1]) in INPUT_INDEPENDENT]
    case, attempt, expected = (independent or [min(failing, key=lambda f: f[0].size())])[0]
    evidence = [(other, result_of(other_attempt)) for other, other_attempt, _ in failing]
    return judge(exercise, case, attempt, expected, others_than(case, evidence))


def _grader_text(exercise: Exercise, report: Report, failed: int) -> str:
    """The verdict in the grader's words: hidden cases, and how many of them failed."""
    if report.status == NOT_ANSWERED:
        where = (f"`{report.stub}` (called by `{exercise.name}`)"
                 if report.stub and report.stub != exercise.name else f"`{exercise.name}`")
        return (f"{NOT_ANSWERED_TEXT} {where} still raises NotImplementedError. Replace "
                "that line with your code.")
    if report.passed:
        return f"Passed all {report.cases_checked} cases (hidden cases included)."
    return f"Failed {failed} of {report.cases_checked} cases. {report}"


# ---------------------------------------------------------------- running one submission


class SpareSlots:
    """A count of idle child slots, shared by the threads that grade submissions."""

    def __init__(self, free: int = 0) -> None:
        self._free = free
        self._lock = threading.Lock()

    def take(self, wanted: int) -> int:
        """Up to `wanted` slots, without waiting: how many were taken."""
        with self._lock:
            taken = max(0, min(wanted, self._free))
            self._free -= taken
            return taken

    def give(self, count: int) -> None:
        with self._lock:
            self._free += count


@dataclass(frozen=True)
class GradingRun:
    """What every submission of one grading run shares, passed as one object.

    The seed and the protections are recorded in every result; the assignments hold the
    cases and references computed once for the run.
    """

    seed: int
    limits: sandbox.Limits
    sandbox: sandbox.Sandbox
    assignments: dict[str, Assignment]
    assignment: str | None = None
    protections: tuple[str, ...] = ()
    # Child slots (of --jobs) that no submission is using; a submission takes some to run its
    # exercises in parts at once.
    spare: SpareSlots = field(default_factory=SpareSlots)


@dataclass
class Run:
    """One submission's run: its sandbox, folders and single deadline across all rounds."""

    sandbox: sandbox.Sandbox
    box: sandbox.Box
    limits: sandbox.Limits
    deadline: float
    exercise_cells: frozenset[int] = frozenset()
    rounds: int = 0
    # A warm child started in this box for its first round (sandbox.WarmChild), until used.
    warm: sandbox.WarmChild | None = None
    # Exercises that the child's workers run at once, one list per worker (else all in one).
    workers: list[list[str]] = field(default_factory=list)


def _run_rounds(
    run: Run, assignment: Assignment, cells: list[str], exercises: list[Exercise],
) -> tuple[dict[str, ExerciseResult], list[dict]]:
    """Run children until every exercise has a verdict; a crash costs one exercise only.

    Exercises that allow different frameworks run in different children, so a numpy
    exercise never shares a process where TensorFlow or JAX is permitted.
    """
    results: dict[str, ExerciseResult] = {}
    cell_problems: list[dict] = []
    groups: dict[tuple[str, ...], list[Exercise]] = {}
    for exercise in exercises:
        groups.setdefault(tuple(sorted(exercise.frameworks)), []).append(exercise)
    for allowed, exercises in groups.items():
        group_results, problems = _run_group(run, assignment, exercises, allowed, cells)
        results.update(group_results)
        cell_problems = cell_problems or problems
    return results, cell_problems


def _write_program(run: Run, round_box: sandbox.Box, names: list[str],
                   by_name: dict[str, Exercise], allowed: tuple[str, ...],
                   cells: list[str]) -> dict:
    """program.json for this round; returns it."""
    limits = sandbox.child_limits(run.limits, frameworks=bool(allowed))
    reads = [n for name in names for n in harness.NAMESPACE_READS.get(
        by_name[name].invoke.partition(":")[0], ())]
    needed = slicing.needed_cells(cells, set(run.exercise_cells), names + reads)
    program = {"cells": needed, "exercises": names, "time_limit": run.limits.per_exercise,
               "out": str(round_box.out), "allowed": child_frameworks(allowed, needed),
               "confine": sandbox.confinement_plan(run.sandbox, round_box, limits),
               "invoke": {name: by_name[name].invoke for name in names},
               "workers": _round_workers(run.workers, names),
               "depends": {name: list(by_name[name].depends_on) for name in names}}
    path = run.box.ctrl / "program.json"
    path.write_text(json.dumps(program))
    sandbox.share_read_only(run.box, path)
    return program


def _round_workers(workers: list[list[str]], names: list[str]) -> list[list[str]]:
    """The workers' lists cut to this round's exercises; none unless they hold them all."""
    kept = [cut for worker in workers if (cut := [name for name in worker if name in names])]
    return kept if sorted(name for cut in kept for name in cut) == sorted(names) else []


def child_frameworks(allowed: tuple[str, ...], cells: list[str]) -> list[str]:
    """The frameworks the child lets the submission import: the exercises' own, and Keras
    only where the code it runs names it. TensorFlow imports an installed Keras (and
    matplotlib with it) at start-up, 1-2 s of every TensorFlow child, and none of the
    course's answers needs it; one that does still gets it."""
    keras = "tensorflow" in allowed and any("keras" in cell for cell in cells)
    return [*allowed, "keras"] if keras else list(allowed)


def _run_group(
    run: Run, assignment: Assignment, exercises: list[Exercise], allowed: tuple[str, ...],
    cells: list[str],
) -> tuple[dict[str, ExerciseResult], list[dict]]:
    results: dict[str, ExerciseResult] = {}
    by_name = {e.name: e for e in exercises}
    remaining = [e.name for e in exercises]
    cell_problems: list[dict] = []
    while remaining:
        warm = _usable_warm_child(run, allowed, cells)
        if warm is None:
            run.rounds += 1
        round_box = warm.box if warm else sandbox.fresh_round(run.box, run.rounds)
        program = _write_program(run, round_box, remaining, by_name, allowed, cells)
        # A fork server imported its framework before any submission: code that sets the
        # environment first (JAX_ENABLE_X64) gets a fresh child that imports after it.
        outcome = warm.run(run.deadline, run.sandbox) if warm else sandbox.run_child(
            run.sandbox, round_box, run.deadline, tuple(program["allowed"]),
            forked=not child.sets_environment(program["cells"]))
        if not outcome.started:
            raise sandbox.SandboxFailure(_launcher_message(outcome))
        cell_problems = _read_cell_problems(round_box.out) or cell_problems
        progressed = False
        for name in list(remaining):
            verdict = _verdict(by_name[name], assignment, round_box.out, outcome)
            if verdict is None:
                continue
            results[name] = verdict
            remaining.remove(name)
            progressed = True
        if not progressed:
            message = _cells_died_message(outcome)
            for name in remaining:
                results[name] = _result(by_name[name], False, message)
            break
    return results, cell_problems


def _usable_warm_child(run: Run, allowed: tuple[str, ...], cells: list[str]
                       ) -> sandbox.WarmChild | None:
    """The box's warm child, for its first round only, when it imported what this round
    allows and the code does not set the environment the framework reads at import (as for a
    fork server); otherwise it is stopped, and the round starts a fresh child."""
    warm, run.warm = run.warm, None
    if warm is None:
        return None
    if warm.allowed == tuple(child_frameworks(allowed, cells)) and not child.sets_environment(
            cells):
        return warm
    warm.stop()
    return None


def _verdict(exercise: Exercise, assignment: Assignment, out: Path,
             outcome: sandbox.ChildResult) -> ExerciseResult | None:
    """The exercise's result from this round, or None when the child never reached it: an
    exercise whose whole report was written is judged on it, even where the child filled its
    folder later, and one never reached runs in the next round's fresh folders."""
    report, arrays = read_outputs(out, exercise.name)
    if report is not None:
        return replace(judge_outputs(exercise, assignment.cases[exercise.name],
                                     assignment.references[exercise.name], report, arrays),
                       seconds=report["seconds"])
    if os.path.lexists(out / f"started_{exercise.name}"):
        return _result(exercise, False, _death_message(exercise.name, outcome))
    return None


def _launcher_message(outcome: sandbox.ChildResult) -> str:
    return (f"the sandbox did not start (exit code {outcome.returncode}, timed out: "
            f"{outcome.timed_out}); launcher output: {outcome.launcher_output[-800:]}")


def _read_cell_problems(out: Path) -> list[dict]:
    try:
        problems = untrusted.read_json(out / "cells.json")
    except untrusted.Untrusted:
        return []
    if not isinstance(problems, list):
        return []
    return [{"cell": p.get("cell") if isinstance(p.get("cell"), int) else None,
             "type": str(p.get("type"))[:100], "message": str(p.get("message"))[:500]}
            for p in problems[:200] if isinstance(p, dict)]


def _death_message(name: str, outcome: sandbox.ChildResult) -> str:
    if outcome.timed_out:
        return f"`{name}` was stopped at the time limit for the whole submission."
    if outcome.disk_exceeded:
        return (f"Your code wrote more than its folder holds ({_disk_limit()}) while `{name}` "
                f"ran, so `{name}` could not finish. The other exercises were graded "
                "separately, in fresh folders.")
    return (
        f"The process ended while `{name}` ran (exit code {outcome.returncode}): os._exit, "
        "a crash, or the memory limit. The other exercises were graded separately."
    )


def _disk_limit() -> str:
    return f"{sandbox.DISK_LIMIT // 1024**2} MiB and {sandbox.INODE_LIMIT} files"


def _cells_died_message(outcome: sandbox.ChildResult) -> str:
    if outcome.timed_out:
        return "The notebook's cells did not finish within the time limit (an endless loop?)."
    if outcome.disk_exceeded:
        return (f"Your notebook's cells wrote more than their folder holds ({_disk_limit()}) "
                "before any exercise could be called. Write less to disk in the cells.")
    return (
        f"The notebook ended the process while its cells ran (exit code {outcome.returncode}),"
        " before any exercise could be called. Remove os._exit / crashing code from the cells."
    )


def grade_submission(grading: GradingRun, path: Path, stem: str) -> SubmissionResult:
    """Grade one notebook; a failure of the grader itself is kept apart as grading_error."""
    started = time.perf_counter()
    notebook, problem = read_notebook(path)
    chapter = chapter_of(notebook) if notebook is not None else None
    wanted = grading.assignment
    result = SubmissionResult(path, stem, wanted or chapter, error=problem)
    if not problem:
        result.error = _chapter_problem(chapter, wanted, path)
    assignment = grading.assignments.get(result.chapter or "")
    if assignment is None:
        result.error = result.error or (
            f"chapter {result.chapter} has no graded exercises; submit a chapter notebook "
            "of this course.")
    elif result.error:
        result.exercises = [_result(e, False, result.error) for e in assignment.exercises]
    else:
        _run_submission(result, notebook, assignment, grading)
    result.seconds = time.perf_counter() - started
    return result


def _run_submission(result: SubmissionResult, notebook: Any, assignment: Assignment,
                    grading: GradingRun) -> None:
    """Run the submission's exercises in one part, or, when child slots are idle (grading
    one submission, or the last of a batch), in several at once: as parts, or, when they
    all need one framework, as workers of one child that imports it once."""
    cells, exercise_cells = program_cells(notebook)
    deadline = time.monotonic() + grading.limits.per_submission
    extra = grading.spare.take(len(assignment.exercises) - 1)
    parts, workers, used = _parts_and_workers(assignment, 1 + extra)
    grading.spare.give(1 + extra - used)

    def run_part(exercises: list[Exercise]) -> tuple[dict[str, ExerciseResult], list[dict]]:
        return _run_part(grading, assignment, exercises, cells, exercise_cells, deadline,
                         workers)

    try:
        if len(parts) == 1:
            outcomes = [run_part(parts[0])]
        else:
            with ThreadPoolExecutor(max_workers=len(parts)) as pool:
                outcomes = list(pool.map(run_part, parts))
    finally:
        grading.spare.give(used - 1)
    verdicts: dict[str, ExerciseResult] = {}
    problems: list[dict] = []
    for part_verdicts, part_problems in outcomes:
        verdicts.update(part_verdicts)
        problems = problems or part_problems
    result.cell_problems = notable_cell_problems(problems, exercise_cells)
    result.exercises = [_with_dependencies(e, verdicts) for e in assignment.exercises]


def _parts_and_workers(assignment: Assignment, slots: int
                       ) -> tuple[list[list[Exercise]], list[list[str]], int]:
    """How a submission's exercises run on `slots` child slots: (its parts, each in a box of
    its own; the workers of its framework part, each a list of exercise names; the slots
    used).

    When its framework exercises all need one framework, they are one part, whose child
    imports it once and runs them in up to `slots` workers (child.fork_workers); its numpy
    exercises, if any, are another part, whose child takes a tenth of a second beside them.
    Otherwise each part runs in a child of its own (split_exercises)."""
    exercises, cases, costs = assignment.exercises, assignment.cases, assignment.costs
    framework = [e for e in exercises if e.frameworks]
    if slots > 1 and len(framework) > 1 and len(
            {tuple(sorted(e.frameworks)) for e in framework}) == 1:
        workers = split_exercises(framework, cases, slots, costs)
        numpy_part = [e for e in exercises if not e.frameworks]
        return ([framework, *([numpy_part] if numpy_part else [])],
                [[e.name for e in worker] for worker in workers], len(workers))
    parts = split_exercises(exercises, cases, slots, costs)
    return parts, [], len(parts)


def _run_part(grading: GradingRun, assignment: Assignment, exercises: list[Exercise],
              cells: list[str], exercise_cells: set[int], deadline: float,
              workers: list[list[str]] | None = None,
              ) -> tuple[dict[str, ExerciseResult], list[dict]]:
    """Some of a submission's exercises, in a box of their own: parts of one submission run
    at once and never share a process or a folder, nor a uid where the grader has uid slots
    (end_processes kills a round's whole uid). `workers`: the exercises the child's worker
    processes run at once (child.fork_workers)."""
    warm = grading.sandbox.take_warm(tuple(sorted(exercises[0].frameworks)))
    with _part_box(grading.sandbox, warm) as folders:
        for exercise in exercises:
            write_inputs(folders, exercise.name, assignment.input_files(exercise.name))
        run = Run(grading.sandbox, folders, grading.limits, deadline, frozenset(exercise_cells),
                  rounds=1 if warm else 0, warm=warm, workers=workers or [])
        return _run_rounds(run, assignment, cells, exercises)


@contextlib.contextmanager
def _part_box(box: sandbox.Sandbox, warm: sandbox.WarmChild | None) -> Iterator[sandbox.Box]:
    """The warm child's folders (its first round's are made already), or a new box with the
    child's files in it."""
    if warm is not None:
        try:
            yield warm.base
        finally:
            warm.close()
        return
    with sandbox.submission_box(box) as folders:
        sandbox.install_child_files(folders)
        yield folders


# What a part pays once per group of exercises it runs, in seconds: a child's start-up, which
# for a framework group is the framework's import; and an exercise's cost per hidden case
# when no trusted run measured it.
GROUP_START_UP = {False: 0.1, True: 2.5}
SECONDS_PER_CASE = 0.01


def split_exercises(exercises: list[Exercise], cases: dict[str, list[Case]], count: int,
                    costs: dict[str, float] | None = None) -> list[list[Exercise]]:
    """At most `count` parts of about equal work, each in the exercises' own order.

    An exercise's work is what its cases took when a solution was graded (`costs`), else
    its number of cases; a part also pays the start-up of each group's child it runs (so a
    part that already imports TensorFlow takes the next TensorFlow exercise first)."""
    costs = costs or {}
    loads = [0.0] * max(1, min(count, len(exercises)))
    parts: list[list[Exercise]] = [[] for _ in loads]

    def work(exercise: Exercise) -> float:
        return costs.get(exercise.name) or len(cases[exercise.name]) * SECONDS_PER_CASE

    for exercise in sorted(exercises, key=lambda e: -work(e)):
        def load_with(i: int, exercise: Exercise = exercise) -> float:
            group = tuple(sorted(exercise.frameworks))
            new_group = all(tuple(sorted(e.frameworks)) != group for e in parts[i])
            return loads[i] + work(exercise) + (GROUP_START_UP[bool(group)] if new_group else 0)
        best = min(range(len(loads)), key=load_with)
        loads[best] = load_with(best)
        parts[best].append(exercise)
    order = {e.name: i for i, e in enumerate(exercises)}
    return [sorted(part, key=lambda e: order[e.name]) for part in parts if part]


def _with_dependencies(exercise: Exercise, verdicts: dict[str, ExerciseResult]
                       ) -> ExerciseResult:
    """The exercise's result, saying which exercises it calls failed: it was graded with
    correct ones in their place, so their mistakes cost their own points only."""
    result = verdicts[exercise.name]
    if result.output.startswith(NOT_ANSWERED_TEXT):
        return result
    wrong = [name for name in exercise.depends_on
             if name in verdicts and not verdicts[name].passed]
    note = dependency_note(exercise, wrong)
    return replace(result, output=f"{result.output}\n{note}") if note else result


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
