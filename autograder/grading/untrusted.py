"""Reading what a sandboxed child left behind, as the hostile data it is.

The child can put anything where the grader looks (bounded.py reads each file): a symlink to
another student's notebook, a FIFO that blocks a reader forever, `/dev/zero`, a JSON nested
200,000 deep, an npz whose header claims 10**13 elements. Every read here is therefore
bounded and refuses, rather than follows, anything that is not a small regular file. A
refusal reads as "no result", which costs the submission that exercise, never the batch.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from autograder.grading.bounded import Untrusted, read_bytes
from autograder.sandbox.confined.wire import unpack_arrays

MAX_JSON_BYTES = 5_000_000
MAX_NPZ_BYTES = 256 * 1024**2
MAX_JSON_DEPTH = 12


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def read_json(path: Path, limit: int = MAX_JSON_BYTES) -> Any:
    """Parsed JSON, refusing oversized files and deep nesting (no RecursionError escapes)."""
    data = read_bytes(path, limit)
    if data.count(b"[") + data.count(b"{") > limit // 4:
        raise Untrusted(f"{path.name} has too many nested containers")
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as error:
        raise Untrusted(f"{path.name} is not valid JSON ({type(error).__name__})") from None
    if _depth(value) > MAX_JSON_DEPTH:
        raise Untrusted(f"{path.name} is nested deeper than {MAX_JSON_DEPTH}")
    return value


def _checked_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> np.ndarray:
    """One array, after its header proves it fits in the bytes the member really holds."""
    with archive.open(info) as member:
        version = np.lib.format.read_magic(member)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(member)
        elif version in ((2, 0), (3, 0)):
            shape, _, dtype = np.lib.format.read_array_header_2_0(member)
        else:
            raise Untrusted(f"unknown npy version {version}")
        if dtype.hasobject:
            raise Untrusted("object arrays are refused")
        if int(np.prod(shape, dtype=object)) * dtype.itemsize > info.file_size:
            raise Untrusted(f"{info.filename} claims more data than it holds")
    with archive.open(info) as member:
        return np.lib.format.read_array(
            io.BytesIO(member.read(info.file_size + 1)), allow_pickle=False
        )


def read_npz(path: Path, limit: int = MAX_NPZ_BYTES) -> dict[str, np.ndarray]:
    """Arrays of an npz, each header checked before any array is allocated."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(read_bytes(path, limit)))
    except zipfile.BadZipFile as error:
        raise Untrusted(f"{path.name} is not an npz archive ({error})") from None
    with archive:
        infos = archive.infolist()
        if sum(info.file_size for info in infos) > limit:
            raise Untrusted(f"{path.name} expands beyond {limit} bytes")
        try:
            return {
                info.filename.removesuffix(".npy"): _checked_member(archive, info) for info in infos
            }
        except (ValueError, OSError, EOFError, zipfile.BadZipFile, MemoryError) as error:
            raise Untrusted(f"{path.name}: {type(error).__name__}: {error}"[:300]) from None


def read_packed_npz(path: Path, limit: int = MAX_NPZ_BYTES) -> dict[str, np.ndarray]:
    """The arrays of an npz the child packed (child.pack_arrays), every entry checked."""
    arrays = read_npz(path, limit)
    try:
        return unpack_arrays(arrays)
    except ValueError as error:
        raise Untrusted(f"{path.name}: {error}"[:300]) from None
