"""References are data: one chapter's hidden cases and references, kept on disk per seed.

Drawing the cases and asking TensorFlow and JAX for the references costs 10-30 s and the
import of both frameworks, and for a given chapter, seed and grader it always gives the same
numbers. So the grader computes them once (`python -m autograder prepare`, or the first
grading run) and later runs read one `.npz` file instead: a run whose cache is warm never
imports TensorFlow or JAX.

An entry is named `<chapter>-<seed>-<digest>`, the digest covering the grader's own sources
and the versions of the libraries that draw cases or compute references, so a changed
exercise or an upgraded framework never meets an old entry. The cache is written by the
grader, never by a student, but it is still checked when read (keys, dtypes, counts): an
entry that is truncated, stale or malformed is recomputed and rewritten, never trusted.
Entries are written to a temporary file and renamed, so a reader sees all or nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any, BinaryIO, TextIO

import numpy as np

from autograder.judging.cases import Case, param_from_json, param_to_json
from autograder.sandbox.confined.wire import pack_arrays, unpack_arrays

PACKAGE = Path(__file__).resolve().parents[1]
VERSIONED = ("numpy", "hypothesis", "tensorflow", "jax", "jaxlib")
FORMAT = 2  # 2: arrays packed into one buffer per dtype
# Subpackages that build the notebooks (sync, translations, the install cell, releases);
# tests/grading/test_grading.py checks that no module of the grader imports them.
NOT_GRADING = frozenset({"authoring"})
Entry = tuple[dict[str, list[Case]], dict[str, list[tuple[np.ndarray, ...]]]]


class Invalid(ValueError):
    """A cache entry that cannot be used as it is: it is recomputed."""


def share(path: Path) -> None:
    """Readable by the children's own uid (never writable): u+rwX, go+rX, all the way down."""
    for item in [path, *path.rglob("*")]:
        if not item.is_symlink():
            item.chmod(0o755 if item.is_dir() else 0o644)


def digest() -> str:
    """The grader's sources and the libraries' versions: what the references depend on.
    The notebooks' authoring tools (NOT_GRADING) are left out: the grader never imports them,
    and a change to how notebooks are built must not make every chapter prepare again."""
    hasher = hashlib.sha256(f"format {FORMAT}".encode())
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] in NOT_GRADING:
            continue
        hasher.update(str(path.relative_to(PACKAGE)).encode())
        hasher.update(path.read_bytes())
    for name in VERSIONED:
        hasher.update(f"{name}={_version(name)}".encode())
    return hasher.hexdigest()[:16]


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


def entry_path(root: Path, chapter: str, seed: int) -> Path:
    return root / f"{chapter}-{seed}-{digest()}.npz"


# ---------------------------------------------------------------- writing


def save(
    path: Path, cases: dict[str, list[Case]], references: dict[str, list[tuple[np.ndarray, ...]]]
) -> None:
    """Write one entry atomically (temporary file, then rename)."""
    arrays: dict[str, np.ndarray] = {}
    meta = {"format": FORMAT, "exercises": {}}
    for name, exercise_cases in cases.items():
        meta["exercises"][name] = [
            _case_meta(name, index, case, references[name][index], arrays)
            for index, case in enumerate(exercise_cases)
        ]
    path.parent.mkdir(parents=True, exist_ok=True)
    _write(path, meta, arrays)


def _write(path: Path, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """An .npz of `meta` (JSON) and the arrays packed as the child packs its outputs
    (child.pack_arrays: reading thousands of small members took 0.4 s of every grading
    run's start). Written to a temporary file and renamed: a reader sees all or nothing."""
    members = pack_arrays(arrays)
    members["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    _replace(path, lambda file: np.savez(file, **members))


def _replace(path: Path, write: Callable[[BinaryIO], Any]) -> None:
    """`write` into a temporary file beside `path`, then rename it over `path`: a reader
    sees the old file or the whole new one, never a part."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".partial-", suffix=path.suffix)
    try:
        with os.fdopen(handle, "wb") as file:
            write(file)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _read(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """What `_write` wrote: (meta, arrays by key); Invalid when anything does not fit."""
    try:
        with path.open("rb") as file, np.load(file, allow_pickle=False) as data:
            members = {key: data[key] for key in data.files}
    except (OSError, ValueError, EOFError, TypeError, AttributeError, zipfile.BadZipFile) as error:
        raise Invalid(f"unreadable: {error}") from error
    meta = _meta(members)
    try:
        return meta, unpack_arrays(members)
    except ValueError as error:
        raise Invalid(str(error)) from error


def _case_meta(
    name: str,
    index: int,
    case: Case,
    outputs: tuple[np.ndarray, ...],
    arrays: dict[str, np.ndarray],
) -> dict[str, Any]:
    args = []
    for arg, value in case.args:
        if isinstance(value, np.ndarray):
            arrays[f"{name}/{index}/a/{arg}"] = value
            args.append([arg, "array", None])
        else:
            args.append([arg, "param", param_to_json(value)])
    for position, output in enumerate(outputs):
        arrays[f"{name}/{index}/r/{position}"] = np.asarray(output)
    return {"args": args, "label": case.label, "outputs": len(outputs)}


# ---------------------------------------------------------------- reading


def load(path: Path, expected: dict[str, int]) -> Entry:
    """The entry's cases and references; Invalid when it is missing, malformed or does not
    hold exactly the exercises (name -> number of outputs) that the chapter declares."""
    meta, arrays = _read(path)
    if set(meta["exercises"]) != set(expected):
        raise Invalid("the exercises differ from the chapter's")
    cases, references = {}, {}
    for name, records in meta["exercises"].items():
        if not isinstance(records, list) or not records:
            raise Invalid(f"no cases for {name}")
        try:
            pairs = [_read_case(name, i, r, arrays, expected[name]) for i, r in enumerate(records)]
        except (TypeError, ValueError, KeyError) as error:
            raise Invalid(f"malformed cases of {name}: {error}") from error
        cases[name] = [case for case, _ in pairs]
        references[name] = [outputs for _, outputs in pairs]
    return cases, references


def _meta(arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    raw = arrays.get("meta")
    if raw is None or raw.dtype != np.uint8 or raw.ndim != 1:
        raise Invalid("no metadata")
    try:
        meta = json.loads(raw.tobytes().decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise Invalid("malformed metadata") from error
    if (
        not isinstance(meta, dict)
        or meta.get("format") != FORMAT
        or not isinstance(meta.get("exercises"), dict)
    ):
        raise Invalid("another format")
    return meta


def _read_case(
    name: str, index: int, record: Any, arrays: dict[str, np.ndarray], outputs: int
) -> tuple[Case, tuple[np.ndarray, ...]]:
    if (
        not isinstance(record, dict)
        or record.get("outputs") != outputs
        or not isinstance(record.get("args"), list)
    ):
        raise Invalid(f"malformed case {index} of {name}")
    args = tuple(
        (arg, _array(arrays, f"{name}/{index}/a/{arg}"))
        if kind == "array"
        else (arg, param_from_json(value))
        for arg, kind, value in record["args"]
    )
    references = tuple(_array(arrays, f"{name}/{index}/r/{j}") for j in range(outputs))
    return Case(args, str(record.get("label", ""))), references


def _array(arrays: dict[str, np.ndarray], key: str) -> np.ndarray:
    array = arrays.get(key)
    if array is None or array.dtype.kind not in "fiub":
        raise Invalid(f"missing or non-numeric array {key}")
    return array


# ---------------------------------------------------------------- preparing once


@contextmanager
def entry_lock(entry: Path, part: str) -> Iterator[None]:
    """Hold `part`'s lock of an entry (a file beside it) while preparing that part: grading
    runs that share a reference cache (a Slurm array's tasks, a Job's pods on one volume, two
    commands at once) then prepare it once, and the others wait for it and read what it
    wrote instead of each computing the same numbers. The lock is the operating system's
    (flock): a run that dies releases it; its file is removed when the work is done, so the
    cache holds entries only. Where there is no flock (Windows) or the folder takes no file
    (read-only: nothing is written there either), nothing is locked."""
    path = entry.with_name(f"{entry.stem}.{part}.lock")
    handle = _locked(path)
    try:
        yield
    finally:  # the cache keeps entries only: the file is removed while held, then released
        if handle is not None:
            path.unlink(missing_ok=True)
            handle.close()


def _locked(path: Path) -> TextIO | None:
    """The lock file at `path`, open and locked (flock, exclusive); None where no lock can be
    had. A file that its holder removed while this run waited for it is not the lock any
    more: the one at `path` now is locked instead."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        return None
    while True:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handle = path.open("a")
        except OSError:
            return None
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            if os.path.samestat(os.fstat(handle.fileno()), os.stat(path)):
                return handle
        except FileNotFoundError:
            pass
        handle.close()


# ---------------------------------------------------------------- measured costs


def costs_path(entry: Path) -> Path:
    return entry.with_name(f"{entry.stem}.costs.json")


def save_costs(path: Path, costs: dict[str, float]) -> None:
    """Seconds per exercise from grading a solution (`prepare --warm-with`), atomically."""
    _replace(path, lambda file: file.write(json.dumps(costs).encode()))


def load_costs(path: Path, names: set[str]) -> dict[str, float]:
    """The saved costs of these exercises; {} when there are none or they are malformed."""
    try:
        costs = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(costs, dict):
        return {}
    return {
        name: float(value)
        for name, value in costs.items()
        if name in names and isinstance(value, (int, float)) and 0 < value < 1e6
    }


# ---------------------------------------------------------------- known mistakes' outputs

# What each exercise's known mistakes give on each hidden case, beside the entry. A wrong
# answer's hint names the mistake that reproduces its failing cases; for a TensorFlow or JAX
# exercise, running the mistakes would import that framework into the grading process
# (seconds, the first time in a run). `prepare` computes them once instead. Per case a stored
# mistake is its outputs (a list of arrays), the name of the exception it raised (a str), or
# None: not stored, so the grader runs that mistake itself.
MistakeOutputs = list[np.ndarray] | str | None


def mistakes_path(entry: Path) -> Path:
    return entry.with_name(f"{entry.stem}.mistakes.npz")


def save_mistakes(path: Path, table: dict[str, dict[str, list[MistakeOutputs]]]) -> None:
    """Write table[exercise][mistake][case index] atomically, like an entry."""
    arrays: dict[str, np.ndarray] = {}
    meta: dict[str, Any] = {"format": FORMAT, "exercises": {}}
    for name, mistakes in table.items():
        meta["exercises"][name] = {}
        for mistake, per_case in mistakes.items():
            records = []
            for index, outputs in enumerate(per_case):
                if isinstance(outputs, list):
                    for position, output in enumerate(outputs):
                        arrays[f"{name}/{mistake}/{index}/{position}"] = output
                    records.append({"outputs": len(outputs)})
                else:
                    records.append({"raised": outputs} if isinstance(outputs, str) else None)
            meta["exercises"][name][mistake] = records
    _write(path, meta, arrays)


class KnownMistakes:
    """The stored outputs of one chapter's mistakes, read when a hint first needs them and
    checked: anything malformed counts as not stored, and the grader then runs that
    mistake itself."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._arrays: dict[str, np.ndarray] = {}
        self._meta: dict[str, Any] | None = None

    def exists(self) -> bool:
        return self._path.is_file()

    def get(self, exercise: str, mistake: str, index: int) -> MistakeOutputs:
        with self._lock:
            record = self._record(exercise, mistake, index)
            if not isinstance(record, dict):
                return None
            if isinstance(record.get("raised"), str):
                return record["raised"]
            count = record.get("outputs")
            if not isinstance(count, int):
                return None
            try:
                return [
                    _array(self._arrays, f"{exercise}/{mistake}/{index}/{j}") for j in range(count)
                ]
            except Invalid:
                return None

    def _record(self, exercise: str, mistake: str, index: int) -> Any:
        if self._meta is None:
            self._meta = self._open()
        records = self._meta.get(exercise, {})
        records = records.get(mistake) if isinstance(records, dict) else None
        return records[index] if isinstance(records, list) and index < len(records) else None

    def _open(self) -> dict[str, Any]:
        try:
            meta, self._arrays = _read(self._path)
        except Invalid:
            return {}
        return meta["exercises"]
