"""The notebook checks' cases and references kept on disk: computed once per machine.

A notebook's cases are drawn from a fixed seed, so every kernel that checks an exercise
draws the same cases and asks TensorFlow and JAX the same questions: a learner's first check
of a chapter waited for Hypothesis's draws, TensorFlow's import and JAX's compilation
(1.5-2.5 s), and every kernel and test process paid it again. `make lab`'s warm-up
(`python -m autograder warm-up`) fills this store; a check whose cases and references are
stored imports neither framework (only a failing check does, to shrink its counterexample).

Two entries per exercise and profile: its cases, named by the exercise, the profile, the
sources that make them (exercises, judging, harness, coursekit) and the versions of the
libraries that draw cases or compute references; and its references, named by the same
sources and versions and the content of every case, so changed cases never meet old outputs.
Only the registered exercise is stored (a test's altered copy with the same name computes
its own). Reading checks each entry (counts, numeric arrays, no pickles, each case's content
hash); anything else is recomputed. Writing is atomic (a temporary file renamed), and a
store that cannot be written (a read-only home) just means computing, as before. The grader
does not use it: it keeps its hidden cases' references in its own cache
(grading/refcache.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from autograder.judging.cases import Case, Profile, param_from_json, param_to_json

if TYPE_CHECKING:
    from autograder.judging.exercise import Exercise

Outputs = tuple[np.ndarray, ...]
FORMAT = 1
VERSIONED = ("numpy", "hypothesis", "tensorflow", "jax", "jaxlib")
# What cases and references are made of (tests/architecture/test_layout.py: exercises import
# judging and harness, judging imports harness; the harness uses coursekit's helpers).
SOURCES = ("autograder/exercises", "autograder/judging", "autograder/harness", "coursekit")
ROOT = Path(__file__).resolve().parents[2]
# Set to "0" to compute every reference afresh (a maintainer timing the cold path).
SWITCH = "AUTODIFF_COURSE_STORED_REFERENCES"


def folder() -> Path:
    """Beside JAX's persistent compilation cache (references.py), under XDG_CACHE_HOME, one
    folder per set of library versions: two environments of one machine (`make test`'s and
    `make versions`'s) keep their entries apart instead of replacing each other's."""
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "autodiff-course" / "notebook-references" / versions_digest()[:16]


@cache
def versions_digest() -> str:
    """The versions of Python and of the libraries that draw cases or compute references."""
    hasher = hashlib.sha256(sys.version.encode())
    for name in VERSIONED:
        hasher.update(f"{name}={_version(name)}".encode())
    return hasher.hexdigest()


@cache
def sources_digest() -> str:
    """The course's sources that make cases and references, once per process."""
    hasher = hashlib.sha256(f"format {FORMAT}".encode())
    for package in SOURCES:
        for path in sorted((ROOT / package).rglob("*.py")):
            hasher.update(str(path.relative_to(ROOT)).encode())
            hasher.update(path.read_bytes())
    return hasher.hexdigest()


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


def entry(exercise: Exercise, cases: Sequence[Case]) -> Path:
    """The file that holds (or will hold) these cases' references."""
    hasher = hashlib.sha256(exercise.name.encode())
    for case in cases:
        hasher.update(case.key().encode())
    return folder() / f"{exercise.name}-{sources_digest()[:16]}-{hasher.hexdigest()[:16]}.npz"


def _storable(exercise: Exercise) -> bool:
    if os.environ.get(SWITCH) == "0":
        return False
    try:
        folder()
    except RuntimeError:  # no home directory to keep a store in: compute, as before
        return False
    from autograder.exercises import EXERCISES  # lazily: the registry imports judging

    return EXERCISES.get(exercise.name) is exercise


def references_for(
    exercise: Exercise,
    cases: Sequence[Case],
    compute: Callable[[Exercise, Sequence[Case]], list[Outputs]],
) -> list[Outputs]:
    """The stored references of these cases, or `compute`'s, stored for next time."""
    if not _storable(exercise):
        return compute(exercise, cases)
    path = entry(exercise, cases)
    stored = load(path, len(cases), len(exercise.outputs))
    if stored is not None:
        return stored
    outputs = compute(exercise, cases)
    save(path, outputs)
    return outputs


def cases_for(
    exercise: Exercise,
    profile: Profile,
    draw: Callable[[Exercise, Profile], tuple[list[Case], int]],
) -> tuple[list[Case], int]:
    """The stored cases of this exercise and profile (with how many are edge cases), or
    `draw`'s, stored for next time."""
    if not _storable(exercise):
        return draw(exercise, profile)
    profile_name = hashlib.sha256(repr(profile).encode()).hexdigest()[:16]
    path = folder() / f"{exercise.name}-{sources_digest()[:16]}-cases{profile_name}.npz"
    stored = load_cases(path)
    if stored is not None:
        return stored
    cases, edge_count = draw(exercise, profile)
    save_cases(path, cases, edge_count)
    return cases, edge_count


def save_cases(path: Path, cases: Sequence[Case], edge_count: int) -> None:
    """Arrays as members, the static parameters and each case's content hash as JSON."""
    arrays: dict[str, np.ndarray] = {}
    records = []
    for index, case in enumerate(cases):
        args = []
        for arg, value in case.args:
            if isinstance(value, np.ndarray):
                arrays[f"{index}/{arg}"] = value
                args.append([arg, "array", None])
            else:
                args.append([arg, "param", param_to_json(value)])
        records.append({"args": args, "label": case.label, "key": case.key()})
    meta = {"format": FORMAT, "edge_count": edge_count, "cases": records}
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    _write(path, arrays)


def load_cases(path: Path) -> tuple[list[Case], int] | None:
    """What save_cases wrote, or None when anything is missing, malformed or altered."""
    members = _members(path)
    if members is None or "meta" not in members or members["meta"].dtype != np.uint8:
        return None
    try:
        meta = json.loads(members.pop("meta").tobytes().decode())
        cases = [_case(index, record, members) for index, record in enumerate(meta["cases"])]
        edge_count = meta["edge_count"]
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    if meta.get("format") != FORMAT or not isinstance(edge_count, int) or not cases:
        return None
    return cases, edge_count


def _case(index: int, record: dict, arrays: dict[str, np.ndarray]) -> Case:
    args = []
    for arg, kind, value in record["args"]:
        if kind == "array":
            array = arrays[f"{index}/{arg}"]
            if array.dtype.kind not in "fiub":
                raise ValueError(f"a non-numeric array {arg}")
            args.append((arg, array))
        else:
            args.append((arg, param_from_json(value)))
    case = Case(tuple(args), str(record["label"]))
    if case.key() != record["key"]:
        raise ValueError(f"case {index} is not the case stored")
    return case


def _members(path: Path) -> dict[str, np.ndarray] | None:
    try:
        with path.open("rb") as file, np.load(file, allow_pickle=False) as data:
            return {key: data[key] for key in data.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):
        return None


def load(path: Path, case_count: int, output_count: int) -> list[Outputs] | None:
    """The entry's outputs, or None when it is missing or not exactly what was asked for."""
    members = _members(path)
    if members is None:
        return None
    expected = {f"{i}/{j}" for i in range(case_count) for j in range(output_count)}
    if set(members) != expected or any(a.dtype.kind not in "fiub" for a in members.values()):
        return None
    return [tuple(members[f"{i}/{j}"] for j in range(output_count)) for i in range(case_count)]


def save(path: Path, outputs: Sequence[Outputs]) -> None:
    """The references of the cases, in order, as members "case/output"."""
    members = {
        f"{i}/{j}": np.asarray(output)
        for i, case_outputs in enumerate(outputs)
        for j, output in enumerate(case_outputs)
    }
    _write(path, members)


def _write(path: Path, members: dict[str, np.ndarray]) -> None:
    """Atomically (a temporary file renamed), then this exercise's entries of older sources
    are removed from this versions' folder (other profiles' entries, under the same sources,
    stay)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".partial-", suffix=".npz")
        try:
            with os.fdopen(handle, "wb") as file:
                np.savez(file, **members)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        name, sources, _ = path.stem.rsplit("-", 2)
        for old in path.parent.glob(f"{name}-*-*.npz"):
            old_name, old_sources, _ = old.stem.rsplit("-", 2)
            if old_name == name and old_sources != sources:
                old.unlink(missing_ok=True)
    except OSError:
        return  # a read-only or full disk: the references were computed, only not kept
