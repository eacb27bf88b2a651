"""One shard of a batch: `grade --shard K/N`, or the index a batch engine gives each task.

A class too large for one machine is graded by an engine it already has: a Kubernetes Indexed
Job (each pod's `JOB_COMPLETION_INDEX`) or a Slurm array (`SLURM_ARRAY_TASK_ID`). Every task
runs the same `grade` command over the whole batch and grades its own shard of it; `merge`
(merge.py) then combines the shards' folders into the gradebook one run would have written.

Why the split is by position in the batch as given (shard K takes positions K, K + N, ...):
a submission's output folder is named after its position in the whole batch
(`submissions.output_folders`), so a shard must know the whole list to name its folders as
one run would; every task sees the same list, so each submission falls in exactly one shard.
Indexes are 0-based, as both engines' are. A shard records, in `shard.json`, what merge must
check: the seed, the assignment, the grader's digest (its sources and the libraries' versions),
the time limit, and a fingerprint of the whole batch's list.

Standard library only: `grade` resolves its shard before it imports the grader (start.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autograder.grading.submissions import Submission, output_folders, read_submission

# Where a batch engine puts a task's index, in the order they are read.
INDEX_VARIABLES = ("JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID")
# The number of shards, when --shards is not given (set once in the Job's or script's env).
COUNT_VARIABLE = "AUTOGRADER_SHARDS"
RECORD = "shard.json"
FORMAT = 1


class ShardError(ValueError):
    """A shard that cannot be chosen as asked; the message says what to pass instead."""


@dataclass(frozen=True)
class Shard:
    """Shard `index` (0-based) of `count`."""

    index: int
    count: int

    def positions(self, size: int) -> list[int]:
        """The positions, in a batch of `size`, that this shard grades."""
        return list(range(self.index, size, self.count))

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


@dataclass(frozen=True)
class ShardRun:
    """What a sharded `grade` read: its shard, the batch positions of its submissions, and
    the whole batch's size and fingerprint (recorded for merge)."""

    shard: Shard
    positions: tuple[int, ...]
    batch_size: int
    fingerprint: str


def checked(index: int, count: int, source: str) -> Shard:
    if count < 1:
        raise ShardError(f"{source}: the number of shards must be 1 or more, not {count}.")
    if not 0 <= index < count:
        raise ShardError(
            f"{source}: shard index {index} is outside 0 to {count - 1}. Shard indexes are "
            f"0-based, as Kubernetes' JOB_COMPLETION_INDEX is: the shards of {count} are "
            f"0/{count} to {count - 1}/{count} (a Slurm array: --array=0-{count - 1})."
        )
    return Shard(index, count)


def parse(text: str) -> Shard:
    """`K/N` as given to --shard."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if match is None:
        raise ShardError(f"--shard {text!r}: write it as K/N, e.g. --shard 0/4 (0-based).")
    return checked(int(match.group(1)), int(match.group(2)), f"--shard {text}")


def resolve(shard: str | None, shards: int | None, environ: Mapping[str, str]) -> Shard | None:
    """The shard this `grade` grades, or None for the whole batch.

    --shard K/N wins. Else a count (--shards N, or AUTOGRADER_SHARDS) with an index from the
    batch engine's environment (JOB_COMPLETION_INDEX, else SLURM_ARRAY_TASK_ID). An index in
    the environment without a count is ignored: a Job that grades the whole batch in each pod
    is allowed, if wasteful."""
    if shard is not None:
        return parse(shard)
    count = shards if shards is not None else _count_from(environ)
    if count is None:
        return None
    name = next((name for name in INDEX_VARIABLES if environ.get(name, "").strip()), None)
    if name is None:
        raise ShardError(
            f"{count} shards asked, but no shard index: set {' or '.join(INDEX_VARIABLES)} "
            "(Kubernetes and Slurm set them for each task), or pass --shard K/N."
        )
    value = environ[name].strip()
    if not value.isdigit():
        raise ShardError(f"{name}={value!r} is not a shard index (a whole number from 0).")
    return checked(int(value), count, f"{name}={value} with {count} shards")


def _count_from(environ: Mapping[str, str]) -> int | None:
    value = environ.get(COUNT_VARIABLE, "").strip()
    if not value:
        return None
    if not value.isdigit():
        raise ShardError(f"{COUNT_VARIABLE}={value!r} is not a number of shards.")
    return int(value)


def refusal(shard: Shard | None, seed: int | None, assignment: str | None) -> str:
    """Why a sharded run cannot start as asked ("" when it can).

    Each shard would otherwise draw its own seed, or pick the chapter most of its own
    notebooks name, and the shards would not merge into one run's gradebook."""
    if shard is None:
        return ""
    pairs = (("--seed", seed), ("--assignment", assignment))
    missing = [flag for flag, value in pairs if value is None or value == ""]
    if not missing:
        return ""
    return (
        f"Cannot grade shard {shard}: a shard needs {' and '.join(missing)}, the same in "
        "every shard (each shard would otherwise draw its own hidden cases or choose its "
        "own chapter, and the shards could not be merged)."
    )


def fingerprint(paths: list[Path]) -> str:
    """The whole batch's list, in order: shards of one batch share it."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(os.fsencode(path) + b"\0")
    return digest.hexdigest()


def read_shard(paths: list[Path], shard: Shard) -> tuple[list[Submission], ShardRun]:
    """The shard's submissions, read, each named as in a run of the whole batch."""
    stems = output_folders(paths)
    positions = shard.positions(len(paths))
    read = [read_submission(paths[i], stems[i]) for i in positions]
    return read, ShardRun(shard, tuple(positions), len(paths), fingerprint(paths))


def write_record(out: Path, record: dict[str, Any]) -> None:
    """shard.json, written last and renamed into place: a shard folder without it did not
    finish (merge refuses it)."""
    partial = out / f".{RECORD}.partial"
    partial.write_text(json.dumps(record, indent=1), encoding="utf-8")
    partial.replace(out / RECORD)
