"""The files between the grader and its confined child: one format, read and written here by
both sides (the child imports this file by its path; the grader as a module).

In the child's read-only folder, written by the grader: `program.json` (what to run: cells,
exercises, limits, the confinement plan), and per exercise `inputs_<name>.npz` (the arrays of
every case, keys "c<case>_<argument>", packed: pack_arrays) with `inputs_<name>.json` (the
arguments' order, each case's static parameters). In its output folder, written by the child:
`started_<name>` (the exercise began), `out_<name>.json` (a record per case: RECORD_KINDS),
`out_<name>.npz` (the arrays the records name), and `cells.json` (the cells' errors). The grader
reads the child's files as untrusted data: validated_report checks every field. Standard
library and numpy only."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

PROGRAM = "program.json"
CELL_ERRORS = "cells.json"


# A case that raises one of these ends its exercise's run, as it ends the notebook check:
# the stub's NotImplementedError means "not answered", and the others (the grader's
# attempts.INPUT_INDEPENDENT, judging/attempts.py) fail every case the same way. Up to a
# hundred more calls into TensorFlow or JAX, each raising and formatting its traceback, would
# change nothing.
STOPPING_ERRORS = frozenset(
    {
        "NotImplementedError",
        "NameError",
        "ImportError",
        "ModuleNotFoundError",
        "SyntaxError",
        "IndentationError",
        "TabError",
        "FrameworkUsed",
        "CourseCodeUsed",
    }
)


MAX_OUTPUT_BYTES = 50_000_000


def record_value(value, index: int, arrays: dict) -> dict:
    items = value if isinstance(value, tuple | list) else None
    if items is None:
        return record_item(value, f"c{index}_0", arrays)
    return {
        "kind": "sequence",
        "type": type(value).__name__,
        "items": [record_item(item, f"c{index}_{j}", arrays) for j, item in enumerate(items)],
    }


def record_item(item, key: str, arrays: dict) -> dict:
    if isinstance(item, np.ndarray | np.generic) and np.asarray(item).dtype.kind in "fiub":
        array = np.asarray(item)
        if array.nbytes > MAX_OUTPUT_BYTES:
            return {"kind": "other", "module": "numpy", "type": "ndarray (too large)"}
        arrays[key] = array
        return {"kind": "array", "key": key, "generic": isinstance(item, np.generic)}
    return {"kind": "other", "module": type(item).__module__, "type": type(item).__name__}


MAX_INDEX_BYTES = 5_000_000


def pack_arrays(arrays: dict) -> dict:
    """.npz members for these arrays: one flat buffer per dtype, and "index" (JSON: each
    key's dtype, shape and offset). Reading an .npz member costs about 0.1 ms, and a chapter's
    cases or outputs are thousands of small arrays: packed, the grader and the child read a
    few members instead. The grader writes the child's inputs this way, and reads its
    outputs (and its own reference cache) with unpack_arrays."""
    parts: dict[str, list] = {}
    sizes: dict[str, int] = {}
    index = {}
    for key, value in arrays.items():
        array = np.asarray(value)
        kind = array.dtype.str
        index[key] = [kind, list(array.shape), sizes.get(kind, 0)]
        parts.setdefault(kind, []).append(array.reshape(-1))
        sizes[kind] = sizes.get(kind, 0) + array.size
    packs = {kind: f"pack{i}" for i, kind in enumerate(sorted(parts))}
    members = {
        packs[kind]: np.concatenate(parts[kind]).astype(kind, copy=False) for kind in packs
    }  # concatenate makes a big-endian buffer native
    table = json.dumps({"index": index, "packs": packs}).encode()
    members["index"] = np.frombuffer(table, dtype=np.uint8)
    return members


def unpack_arrays(members: dict) -> dict:
    """The arrays `pack_arrays` packed, as views of their buffers; every entry is checked
    (the grader reads a sandboxed child's outputs with this): ValueError if one does not fit."""
    raw = members.get("index")
    if raw is None or raw.dtype != np.uint8 or raw.ndim != 1 or raw.size > MAX_INDEX_BYTES:
        raise ValueError("no index of the packed arrays")
    try:
        table = json.loads(raw.tobytes().decode())
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise ValueError("the index is not JSON") from None
    index = table.get("index") if isinstance(table, dict) else None
    packs = table.get("packs") if isinstance(table, dict) else None
    if not isinstance(index, dict) or not isinstance(packs, dict):
        raise ValueError("the index is not an object")
    return {key: _unpacked(key, place, packs, members) for key, place in index.items()}


def _unpacked(key: str, place, packs: dict, members: dict):
    if not isinstance(place, list) or len(place) != 3:
        raise ValueError(f"malformed entry for {key}")
    kind, shape, start = place
    if not isinstance(shape, list) or not all(type(n) is int and n >= 0 for n in [*shape, start]):
        raise ValueError(f"{key}: a negative or non-integer size")
    buffer = members.get(packs.get(kind)) if isinstance(kind, str) else None
    size = math.prod(shape)
    if buffer is None or buffer.ndim != 1 or buffer.dtype.str != kind or start + size > buffer.size:
        raise ValueError(f"{key} lies outside its buffer")
    return buffer[start : start + size].reshape(shape)


OWN_HELPERS = "~own"  # an exercise's run with the learner's own helpers: "matmul_vjp~own"


def own_helpers(name: str) -> str:
    """The label of an exercise's second run, with the learner's own versions of the
    exercises it calls (the first runs with their references in their place): it passes if
    either run is right, so a right answer whose helper of that name does something else of
    its own (HIPS autograd's `unbroadcast(x, target_meta)`) is judged with its helper."""
    return name + OWN_HELPERS


def input_files(folder: Path, name: str) -> tuple[Path, Path]:
    """An exercise's inputs in the child's read-only folder: (its .npz, its .json)."""
    return folder / f"inputs_{name}.npz", folder / f"inputs_{name}.json"


def output_files(folder: Path, name: str) -> tuple[Path, Path]:
    """An exercise's outputs in the child's output folder: (its .json report, its .npz)."""
    return folder / f"out_{name}.json", folder / f"out_{name}.npz"


def started_file(folder: Path, name: str) -> Path:
    """Written by the child as it starts an exercise: a crash after it is that exercise's."""
    return folder / f"started_{name}"


def load_cases(inputs: Path, name: str) -> tuple[list[str], list[dict], dict]:
    npz, meta_file = input_files(inputs, name)
    meta = json.loads(meta_file.read_text())
    with np.load(npz, allow_pickle=False) as data:
        arrays = unpack_arrays({key: data[key] for key in data.files})
    return meta["arguments"], meta["params"], arrays


def case_args(index: int, arguments: list[str], params: dict, arrays: dict) -> list:
    return [
        np.array(arrays[f"c{index}_{arg}"])
        if f"c{index}_{arg}" in arrays
        else _as_static(params[arg])
        for arg in arguments
    ]


def _as_static(value):
    return tuple(value) if isinstance(value, list) else value


RECORD_KINDS = {"array", "other", "sequence", "error"}


def validated_report(value: Any) -> dict:
    """The report's shape, checked field by field, so judging never meets a wrong type;
    ValueError for a report that is not one."""
    if not isinstance(value, dict):
        raise ValueError("the report is not an object")
    cases = value.get("cases", [])
    defined = value.get("defined", [])
    if not isinstance(cases, list) or not all(valid_record(r) for r in cases):
        raise ValueError("malformed case records")
    if not isinstance(defined, list) or not all(isinstance(d, str) for d in defined):
        raise ValueError("malformed list of defined names")
    seconds = value.get("seconds")
    if not isinstance(seconds, (int, float)) or not 0 <= seconds < 1e6:
        seconds = 0.0
    return {
        "cases": cases,
        "defined": defined[:30],
        "missing": value.get("missing") is True,
        "timeout": value.get("timeout") is True,
        "seconds": float(seconds),
    }


def valid_record(record: Any) -> bool:
    if not isinstance(record, dict) or record.get("kind") not in RECORD_KINDS:
        return False
    if record["kind"] == "sequence":
        items = record.get("items")
        return (
            isinstance(items, list)
            and len(items) <= 64
            and isinstance(record.get("method", ""), str)
            and all(valid_record(i) and i["kind"] in ("array", "other") for i in items)
        )
    strings = ("key", "type", "module", "message", "traceback", "function", "method")
    return all(isinstance(record.get(k, ""), str) for k in strings) and isinstance(
        record.get("generic", False), bool
    )


def serialized_inputs(cases: list[Any]) -> tuple[bytes, str]:
    """The grader's side of load_cases: (the .npz of every case's arrays, keys
    "c<case>_<argument>"; the .json of the arguments' order and each case's static
    parameters). Judging's `Case`s are read through `arrays()`, `params()` and `args`, so this
    file needs nothing of the grader."""
    arrays = {
        f"c{index}_{argument}": value
        for index, case in enumerate(cases)
        for argument, value in case.arrays().items()
    }
    buffer = io.BytesIO()
    np.savez(buffer, **pack_arrays(arrays))
    meta = json.dumps(
        {
            "arguments": [argument for argument, _ in cases[0].args],
            "params": [{k: _jsonable(v) for k, v in case.params().items()} for case in cases],
        }
    )
    return buffer.getvalue(), meta


def _jsonable(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value
