"""Running one part of a submission's exercises: its children, round by round, until every
exercise has a verdict. A crash, a timeout or a full folder costs the exercise that was
running; the next round runs the rest in fresh folders."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from autograder.grading import slicing, untrusted
from autograder.grading.assignment import Assignment, write_inputs
from autograder.grading.grading_run import GradingRun
from autograder.grading.parts import round_workers
from autograder.grading.verdicts import ExerciseResult, exercise_result, judge_outputs, read_outputs
from autograder.judging.exercise import Exercise
from autograder.locale import say
from autograder.sandbox import children, errors, submission_folders, warm_children
from autograder.sandbox.confined import submitted, wire
from autograder.sandbox.pools import Sandbox


@dataclass
class Part:
    """Some of one submission's exercises, run in folders of their own: its sandbox, folders
    and the submission's single deadline across all rounds."""

    sandbox: Sandbox
    folders: submission_folders.Folders
    limits: children.Limits
    deadline: float
    exercise_cells: frozenset[int] = frozenset()
    rounds: int = 0
    # A warm child started in these folders for its first round, until used.
    warm: warm_children.WarmChild | None = None
    # Exercises that the child's workers run at once, one list per worker (else all in one).
    workers: list[list[str]] = field(default_factory=list)


def _run_rounds(
    part: Part,
    assignment: Assignment,
    cells: list[str],
    exercises: list[Exercise],
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
        group_results, problems = _run_group(part, assignment, exercises, allowed, cells)
        results.update(group_results)
        cell_problems = cell_problems or problems
    return results, cell_problems


def _write_program(
    part: Part,
    round_folders: submission_folders.Folders,
    names: list[str],
    by_name: dict[str, Exercise],
    allowed: tuple[str, ...],
    cells: list[str],
) -> dict:
    """program.json for this round; returns it."""
    limits = children.child_limits(part.limits, frameworks=bool(allowed))
    reads = [n for name in names for n in by_name[name].namespace_reads]
    needed = slicing.needed_cells(cells, set(part.exercise_cells), names + reads)
    program = {
        "cells": needed,
        "exercises": names,
        "time_limit": part.limits.per_exercise,
        "out": str(round_folders.out),
        "allowed": child_frameworks(allowed, needed),
        "confine": children.confinement_plan(part.sandbox.offered, round_folders, limits),
        "invoke": {name: by_name[name].invoke for name in names},
        "workers": round_workers(part.workers, names),
        "depends": {name: [list(pair) for pair in by_name[name].dependencies()] for name in names},
    }
    path = part.folders.ctrl / wire.PROGRAM
    path.write_text(json.dumps(program))
    submission_folders.share_read_only(part.folders, path)
    return program


def child_frameworks(allowed: tuple[str, ...], cells: list[str]) -> list[str]:
    """The frameworks the child lets the submission import: the exercises' own, and Keras
    only where the code it runs names it. TensorFlow imports an installed Keras (and
    matplotlib with it) at start-up, 1-2 s of every TensorFlow child, and none of the
    course's answers needs it; one that does still gets it."""
    keras = "tensorflow" in allowed and any("keras" in cell for cell in cells)
    return [*allowed, "keras"] if keras else list(allowed)


def _run_group(
    part: Part,
    assignment: Assignment,
    exercises: list[Exercise],
    allowed: tuple[str, ...],
    cells: list[str],
) -> tuple[dict[str, ExerciseResult], list[dict]]:
    results: dict[str, ExerciseResult] = {}
    by_name = {e.name: e for e in exercises}
    remaining = [e.name for e in exercises]
    cell_problems: list[dict] = []
    while remaining:
        warm = _usable_warm_child(part, allowed, cells)
        if warm is None:
            part.rounds += 1
        round_folders = (
            warm.first_round if warm else submission_folders.fresh_round(part.folders, part.rounds)
        )
        program = _write_program(part, round_folders, remaining, by_name, allowed, cells)
        # A fork server imported its framework before any submission: code that sets the
        # environment first (JAX_ENABLE_X64) gets a fresh child that imports after it.
        outcome = (
            warm.run(part.deadline, part.sandbox)
            if warm
            else children.run_child(
                part.sandbox,
                round_folders,
                part.deadline,
                tuple(program["allowed"]),
                forked=not submitted.sets_environment(program["cells"]),
            )
        )
        if not outcome.started:
            if not (outcome.timed_out and part.rounds > 1):
                raise errors.SandboxFailure(_launcher_message(outcome))
            # An earlier round of this part ran the submission's code until its time was
            # nearly up: that it ran out before this child could start is the student's.
            for name in remaining:
                results[name] = exercise_result(by_name[name], False, _death_message(name, outcome))
            break
        cell_problems = _read_cell_problems(round_folders.out) or cell_problems
        progressed = False
        for name in list(remaining):
            verdict = _verdict(by_name[name], assignment, round_folders.out, outcome)
            if verdict is None:
                continue
            results[name] = verdict
            remaining.remove(name)
            progressed = True
        if not progressed:
            message = _cells_died_message(outcome)
            for name in remaining:
                results[name] = exercise_result(by_name[name], False, message)
            break
    return results, cell_problems


def _usable_warm_child(
    part: Part, allowed: tuple[str, ...], cells: list[str]
) -> warm_children.WarmChild | None:
    """The part's warm child, for its first round only, when it imported what this round
    allows and the code does not set the environment the framework reads at import (as for a
    fork server); otherwise it is stopped, and the round starts a fresh child."""
    warm, part.warm = part.warm, None
    if warm is None:
        return None
    if warm.allowed == tuple(child_frameworks(allowed, cells)) and not submitted.sets_environment(
        cells
    ):
        return warm
    warm.stop()
    return None


def _verdict(
    exercise: Exercise, assignment: Assignment, out: Path, outcome: children.ChildResult
) -> ExerciseResult | None:
    """The exercise's result from this round, or None when the child never reached it: an
    exercise whose whole report was written is judged on it, even where the child filled its
    folder later, and one never reached runs in the next round's fresh folders."""
    report, arrays = read_outputs(out, exercise.name)
    if report is not None:
        judged = _judged(exercise, assignment, report, arrays)
        if exercise.depends_on and not judged.passed:
            own, own_arrays = read_outputs(out, wire.own_helpers(exercise.name))
            if own is not None and (mine := _judged(exercise, assignment, own, own_arrays)).passed:
                return mine  # right with the learner's own helpers (wire.own_helpers)
        return judged
    if os.path.lexists(wire.started_file(out, exercise.name)):
        return exercise_result(exercise, False, _death_message(exercise.name, outcome))
    return None


def _judged(
    exercise: Exercise, assignment: Assignment, report: dict, arrays: dict
) -> ExerciseResult:
    return replace(
        judge_outputs(
            exercise,
            assignment.cases[exercise.name],
            assignment.references[exercise.name],
            report,
            arrays,
            assignment.known.get(exercise.name),
        ),
        seconds=report["seconds"],
    )


def _launcher_message(outcome: children.ChildResult) -> str:
    return (
        f"the sandbox did not start (exit code {outcome.returncode}, timed out: "
        f"{outcome.timed_out}); launcher output: {outcome.launcher_output[-800:]}"
    )


def _read_cell_problems(out: Path) -> list[dict]:
    try:
        problems = untrusted.read_json(out / wire.CELL_ERRORS)
    except untrusted.Untrusted:
        return []
    if not isinstance(problems, list):
        return []
    return [
        {
            "cell": p.get("cell") if isinstance(p.get("cell"), int) else None,
            "type": str(p.get("type"))[:100],
            "message": str(p.get("message"))[:500],
        }
        for p in problems[:200]
        if isinstance(p, dict)
    ]


def _death_message(name: str, outcome: children.ChildResult) -> str:
    if outcome.timed_out:
        return say("`{name}` was stopped at the time limit for the whole submission.", name=name)
    if outcome.disk_exceeded:
        return say(
            "Your code wrote more than its folder holds ({limit}) while `{name}` ran, "
            "so `{name}` could not finish. The other exercises were graded separately, "
            "in fresh folders.",
            limit=_disk_limit(),
            name=name,
        )
    return say(
        "The process ended while `{name}` ran (exit code {code}): os._exit, a crash, or "
        "the memory limit. The other exercises were graded separately.",
        name=name,
        code=outcome.returncode,
    )


def _disk_limit() -> str:
    limit = submission_folders.DISK_LIMIT // 1024**2
    return say("{limit} MiB and {files} files", limit=limit, files=submission_folders.INODE_LIMIT)


def _cells_died_message(outcome: children.ChildResult) -> str:
    if outcome.timed_out:
        return say("The notebook's cells did not finish within the time limit (an endless loop?).")
    if outcome.disk_exceeded:
        return say(
            "Your notebook's cells wrote more than their folder holds ({limit}) before "
            "any exercise could be called. Write less to disk in the cells.",
            limit=_disk_limit(),
        )
    return say(
        "The notebook ended the process while its cells ran (exit code {code}), before "
        "any exercise could be called. Remove os._exit / crashing code from the cells.",
        code=outcome.returncode,
    )


def run_part(
    grading: GradingRun,
    assignment: Assignment,
    exercises: list[Exercise],
    cells: list[str],
    exercise_cells: set[int],
    deadline: float,
    workers: list[list[str]] | None = None,
) -> tuple[dict[str, ExerciseResult], list[dict]]:
    """Some of a submission's exercises, in folders of their own: parts of one submission run
    at once and never share a process or a folder, nor a uid where the grader has uid slots
    (end_processes kills a round's whole uid). `workers`: the exercises the child's worker
    processes run at once (child.fork_workers)."""
    warm = grading.sandbox.take_warm(tuple(sorted(exercises[0].frameworks)))
    with _part_folders(grading.sandbox, warm) as folders:
        for exercise in exercises:
            write_inputs(folders, exercise.name, assignment.input_files(exercise.name))
        part = Part(
            grading.sandbox,
            folders,
            grading.limits,
            deadline,
            frozenset(exercise_cells),
            rounds=1 if warm else 0,
            warm=warm,
            workers=workers or [],
        )
        return _run_rounds(part, assignment, cells, exercises)


@contextlib.contextmanager
def _part_folders(
    sandbox: Sandbox, warm: warm_children.WarmChild | None
) -> Iterator[submission_folders.Folders]:
    """The warm child's folders (its first round's are made already), or new folders with the
    child's files in it."""
    if warm is not None:
        try:
            yield warm.base
        finally:
            warm.close()
        return
    with submission_folders.for_submission(sandbox) as folders:
        submission_folders.install_child_files(folders)
        yield folders
