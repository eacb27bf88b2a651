"""A chapter's assignment: its exercises with the hidden cases drawn from the seed and
both frameworks' references, computed once per chapter and seed and kept in the reference
cache (refcache.py), with what the known mistakes give on those cases."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from autograder.exercises import for_chapter
from autograder.grading import cache_folders, refcache
from autograder.judging import references
from autograder.judging.cases import Case, draw_cases, grading_profile
from autograder.judging.exercise import Exercise, KnownOutputs, Mistake, Outputs, Raised
from autograder.sandbox import submission_folders
from autograder.sandbox.confined import wire


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
    # What each framework exercise's known mistakes give on its hidden cases, stored by
    # `prepare` (save_known_mistakes), by exercise name: passed beside the exercise to the
    # judging, so a wrong answer's hint never imports a framework here; none: run them.
    known: dict[str, KnownOutputs] = field(default_factory=dict)
    # The child's input files per exercise, serialized once: every submission gets the same
    # cases, and the parent's work is serial under the GIL (it limits --jobs).
    _inputs: dict[str, tuple[bytes, str]] = field(default_factory=dict, repr=False)

    def input_files(self, name: str) -> tuple[bytes, str]:
        """The exercise's inputs_<name>.npz and .json, as written for the child."""
        if name not in self._inputs:
            self._inputs[name] = wire.serialized_inputs(self.cases[name])
        return self._inputs[name]


def prepare(chapter: str, seed: int, cache: Path | None = None) -> Assignment:
    """The chapter's hidden cases and references for this seed: read from the reference
    cache when a valid entry is there (no TensorFlow or JAX import then), else computed by
    both frameworks and written to the cache for the next run."""
    exercises = for_chapter(chapter)
    if not exercises:
        raise ValueError(f"Chapter {chapter!r} has no graded exercises.")
    path = refcache.entry_path(cache_folders.reference_cache(cache), chapter, seed)
    counts = {e.name: len(e.outputs) for e in exercises}
    try:
        cases, refs = refcache.load(path, counts)
    except refcache.Invalid:
        with refcache.entry_lock(path, "references"):
            try:  # another run may have written it while this one waited
                cases, refs = refcache.load(path, counts)
            except refcache.Invalid:
                cases, refs = compute_references(exercises, seed)
                _save_quietly(path, cases, refs)
    stored = refcache.KnownMistakes(refcache.mistakes_path(path))
    known = {
        e.name: _stored_mistakes(e, cases[e.name], stored)
        for e in exercises
        if stored.exists() and e.frameworks and e.mistakes
    }
    return Assignment(
        chapter,
        exercises,
        cases,
        refs,
        refcache.load_costs(refcache.costs_path(path), set(cases)),
        known,
    )


def _stored_mistakes(
    exercise: Exercise, cases: list[Case], known: refcache.KnownMistakes
) -> KnownOutputs:
    """Assignment.known for one exercise: a mistake's stored outputs on one of its hidden
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
    entry = refcache.entry_path(cache_folders.reference_cache(cache), assignment.chapter, seed)
    path = refcache.mistakes_path(entry)
    exercises = [e for e in assignment.exercises if e.frameworks and e.mistakes]
    if not exercises or path.is_file():
        return 0
    with refcache.entry_lock(entry, "mistakes"):
        if path.is_file():  # another run stored them while this one waited
            return 0
        table = {
            e.name: {
                m.name: [_storable(e, e.run_mistake(m, case)) for case in assignment.cases[e.name]]
                for m in e.mistakes
            }
            for e in exercises
        }
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


def compute_references(
    exercises: list[Exercise], seed: int
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


def _save_quietly(path: Path, cases: dict[str, list[Case]], refs: dict[str, list[Outputs]]) -> None:
    """A cache that cannot be written (read-only home) costs the next run time, not this one."""
    try:
        refcache.save(path, cases, refs)
    except OSError as error:
        print(f"note: reference cache not written ({error})", file=sys.stderr)


def write_inputs(folders: submission_folders.Folders, name: str, files: tuple[bytes, str]) -> None:
    """The exercise's inputs into the folder the child reads (wire.input_files)."""
    npz_file, meta_file = wire.input_files(folders.ctrl, name)
    npz, meta = files
    npz_file.write_bytes(npz)
    meta_file.write_text(meta)
    for path in (npz_file, meta_file):
        submission_folders.share_read_only(folders, path)
