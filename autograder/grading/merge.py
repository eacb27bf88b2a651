"""`python -m autograder merge OUT SHARD_DIR...`: the shards of one batch into one gradebook.

Each shard (`grade --shard K/N`, shards.py) wrote its submissions' folders, a grades.csv of
its own and shard.json. Merging copies every submission's folder and writes the grades.csv
that grading the whole batch in one run writes: its rows in the batch's order, and its
slow-submission notes measured against the whole batch's median (results.write_gradebook,
the function a run uses). Scores and feedback are the shards' own, graded with one seed; only
the times differ from a single run.

It refuses, naming the problem and what to do, anything that would not give that gradebook:
a folder that is not a finished shard, shards graded with different seeds, assignments,
graders, time limits or batches, a shard given twice or missing, a submission's results
missing. It never changes a shard's folder, and writes OUT whole or not at all (a folder
beside it, renamed when complete), into a folder that is new or empty: no result is lost.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autograder.grading import shards
from autograder.grading.grade import SubmissionResult
from autograder.grading.results import print_summary, write_gradebook
from autograder.grading.verdicts import ExerciseResult

# What every shard of one batch must share: record key, what it is, how to make them equal.
SHARED = (
    ("seed", "seeds", "grade every shard with the same --seed"),
    ("assignment", "assignments", "grade every shard with the same --assignment"),
    (
        "grader",
        "grader versions (the grader's sources, or the numpy, Hypothesis, TensorFlow or JAX "
        "versions, differ)",
        "grade every shard with the same install, e.g. the same container image",
    ),
    ("timeout", "time limits", "grade every shard with the same --timeout"),
    ("shards", "numbers of shards", "grade every shard with the same --shard K/N count"),
    (
        "batch",
        "lists of submissions",
        "give every shard the same submissions, in the same order",
    ),
)
ROW_KEYS = {"position", "stem", "file", "chapter", "exercises", "error", "grading_error"}
ROW_KEYS |= {"seconds", "review"}
FILES = ("results.json", "feedback.txt")


class Refused(Exception):
    """The shards cannot be merged as given; the message says why and what to do."""


@dataclass(frozen=True)
class ShardFolder:
    folder: Path
    record: dict[str, Any]

    @property
    def name(self) -> str:
        return f"shard {self.record['shard']}/{self.record['shards']} ({self.folder})"


def merge(*, out: Path, shards: list[Path]) -> int:
    """0: merged; 1: merged, and some submissions are GRADING ERRORS (as grade's exit 1);
    2: refused, nothing written."""
    try:
        folders = [read_folder(folder) for folder in shards]
        check_shared(folders)
        rows = check_coverage(folders)
        check_results(folders)
        check_out(out, shards)
    except Refused as error:
        print(f"Cannot merge: {error}", file=sys.stderr)
        return 2
    results = [result_of(row) for row, _ in rows]
    write_merged(out, rows, results)
    print(f"merged {len(folders)} shards of {len(results)} submissions into {out}", file=sys.stderr)
    print_summary(results, out)
    return 1 if any(r.grading_error for r in results) else 0


def read_folder(folder: Path) -> ShardFolder:
    """A finished shard's folder and its record, checked for the fields merge reads."""
    if not folder.is_dir():
        raise Refused(f"{folder} is not a folder. Pass the --out folders of the shards.")
    path = folder / shards.RECORD
    if not path.is_file() or path.is_symlink():
        raise Refused(
            f"{folder} holds no {shards.RECORD}: it is not the output of `grade --shard` "
            "(or --shards), or that run did not finish. Grade that shard again with the "
            "same command, or leave the folder out if it is not a shard."
        )
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        _check_record(record)
    except (ValueError, TypeError, KeyError) as error:
        raise Refused(
            f"{path} is not a shard record this grader can read ({error}). Grade that "
            "shard again with this grader."
        ) from None
    return ShardFolder(folder, record)


def _check_record(record: Any) -> None:
    if not isinstance(record, dict) or record.get("format") != shards.FORMAT:
        raise ValueError(f"format {record.get('format') if isinstance(record, dict) else '?'}")
    for key, kind in (("shard", int), ("shards", int), ("seed", int), ("submissions", list)):
        if not isinstance(record[key], kind):
            raise ValueError(f"{key} is not {kind.__name__}")
    batch = record["batch"]
    if not isinstance(batch, dict) or not isinstance(batch.get("size"), int):
        raise ValueError("batch has no size")
    for row in record["submissions"]:
        if not isinstance(row, dict) or not row.keys() >= ROW_KEYS:
            raise ValueError("a submission's row lacks fields")
        if not isinstance(row["position"], int) or not _plain_name(row["stem"]):
            raise ValueError(f"a submission's row names {row.get('stem')!r}")


def _plain_name(stem: Any) -> bool:
    """A folder name directly under the shard's folder, as output_folders makes them."""
    return isinstance(stem, str) and stem not in ("", ".", "..") and Path(stem).name == stem


def check_shared(folders: list[ShardFolder]) -> None:
    for key, what, fix in SHARED:
        groups: dict[str, list[str]] = {}
        for shard in folders:
            value = json.dumps(shard.record[key], sort_keys=True)
            groups.setdefault(value, []).append(str(shard.folder))
        if len(groups) > 1:
            listed = "; ".join(
                f"{_shown(key, value)} in {', '.join(names)}" for value, names in groups.items()
            )
            raise Refused(
                f"the shards were graded with different {what}: {listed}. To merge, {fix}."
            )


def _shown(key: str, value: str) -> str:
    if key == "batch":
        return f"{json.loads(value)['size']} submissions ({json.loads(value)['fingerprint'][:12]})"
    if key == "grader":
        return json.loads(value)[:12]
    return value


def check_coverage(folders: list[ShardFolder]) -> list[tuple[dict, ShardFolder]]:
    """Every shard once, every submission of the batch once: the rows in the batch's order."""
    count = folders[0].record["shards"]
    seen = Counter(shard.record["shard"] for shard in folders)
    twice = sorted(index for index, n in seen.items() if n > 1)
    if twice:
        names = [s.folder for s in folders if s.record["shard"] == twice[0]]
        raise Refused(
            f"shard {twice[0]}/{count} is given more than once ({', '.join(map(str, names))}). "
            "Pass each shard's folder once; after grading a shard again, keep its newer folder."
        )
    missing = [index for index in range(count) if index not in seen]
    if missing:
        listed = ", ".join(f"{index}/{count}" for index in missing)
        raise Refused(
            f"shard(s) {listed} missing: {len(folders)} of {count} given. Grade each missing "
            f"shard (grade ... --shard K/{count}) and merge all {count} folders."
        )
    return _rows_in_order(folders, folders[0].record["batch"]["size"])


def _rows_in_order(folders: list[ShardFolder], size: int) -> list[tuple[dict, ShardFolder]]:
    rows: dict[int, tuple[dict, ShardFolder]] = {}
    for shard in folders:
        expected = shards.Shard(shard.record["shard"], shard.record["shards"]).positions(size)
        positions = [row["position"] for row in shard.record["submissions"]]
        if positions != expected:
            raise Refused(
                f"{shard.name} does not hold the submissions its index gives "
                f"({len(positions)} where {len(expected)} were expected). Grade it again."
            )
        rows.update({row["position"]: (row, shard) for row in shard.record["submissions"]})
    return [rows[position] for position in range(size)]


def check_results(folders: list[ShardFolder]) -> None:
    for shard in folders:
        for row in shard.record["submissions"]:
            for name in FILES:
                path = shard.folder / row["stem"] / name
                if path.is_symlink() or not path.is_file():
                    raise Refused(
                        f"{shard.name} lacks {row['stem']}/{name}: its folder was changed "
                        "after grading. Grade that shard again."
                    )


def check_out(out: Path, given: list[Path]) -> None:
    """OUT is new or empty, and neither a shard's folder nor inside one."""
    target = out.resolve()
    for folder in given:
        source = folder.resolve()
        if target == source or source in target.parents or target in source.parents:
            raise Refused(
                f"{out} is, holds or lies inside the shard folder {folder}. Merge into a "
                "folder of its own."
            )
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise Refused(
            f"{out} already exists and is not an empty folder. Merge into a new or empty "
            "folder, so that no earlier result is overwritten."
        )


def result_of(row: dict) -> SubmissionResult:
    """The row as the result a single run held: what write_gradebook reads."""
    exercises = [
        ExerciseResult(name, score, max_score, passed, "")
        for name, score, max_score, passed in row["exercises"]
    ]
    return SubmissionResult(
        Path(row["file"]),
        row["stem"],
        row["chapter"],
        exercises=exercises,
        error=row["error"],
        seconds=row["seconds"],
        grading_error=row["grading_error"],
        review=list(row["review"]),
    )


def write_merged(
    out: Path, rows: list[tuple[dict, ShardFolder]], results: list[SubmissionResult]
) -> None:
    """Everything into a folder beside OUT, renamed to OUT once complete."""
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.parent / f".{out.name}.merging-{os.getpid()}"
    try:
        partial.mkdir()
        for row, shard in rows:
            shutil.copytree(shard.folder / row["stem"], partial / row["stem"], symlinks=True)
        write_gradebook(partial, results)
        if out.exists():
            out.rmdir()  # empty (check_out)
        partial.rename(out)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
