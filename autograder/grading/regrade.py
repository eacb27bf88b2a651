"""`grade --regrade PREVIOUS_OUT`: grade a batch again after the tests or the course changed,
and say what changed for whom.

Why a command of its own rather than `grade` with the old seed: a regrade is only fair when
every student meets the same hidden cases as before, so the seed comes from PREVIOUS_OUT (one
given on the command line must agree); the new results go to a new or empty OUT, so that the
grades the students were already shown are never overwritten; and an instructor needs to
know which scores moved, and why, before publishing them. OUT gets the usual results and
gradebook, plus a change log: `changes.csv` (to sort) and `changes.md` (to read), one row per
student and exercise whose score changed, with the old and new score and why (the verdict
change and the new feedback's first line). A grading error in either run is reported as the
grader's failure, never as a score the student earned or lost; students in only one of the
two runs are listed as added or missing.

Both runs are read back from their folders (grades.csv and each submission's results.json),
with the same reader, so a merged folder (`merge`) can be regraded as a single run's can.
Standard library only: `grade` checks its arguments before it imports the grader (start.py).
"""

from __future__ import annotations

import csv
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autograder.grading.graded_folder import (
    GRADEBOOK,
    Graded,
    GradedRun,
    Mark,
    Refused,
    headline,
    read_graded,
)

CHANGES_CSV = "changes.csv"
CHANGES_MD = "changes.md"
CSV_COLUMNS = (
    "student",
    "exercise",
    "change",
    "old_score",
    "new_score",
    "old_verdict",
    "new_verdict",
    "why",
    "old_folder",
    "new_folder",
)
GRADING_ERROR = "grading error"


@dataclass(frozen=True)
class Plan:
    """What a regrade runs with: the previous run, and the seed, assignment and
    submissions of the new one (those of the previous run where none were given)."""

    previous: GradedRun
    seed: int
    assignment: str | None
    submissions: list[Path]


@dataclass(frozen=True)
class Change:
    """One line of the change log. A score is None where that run has none: a grading
    error's placeholder, or a student absent from it."""

    student: str
    exercise: str
    change: str  # "score", "grading error", "added", "missing"
    old_score: float | None
    new_score: float | None
    old_verdict: str
    new_verdict: str
    why: str
    old_folder: str = ""
    new_folder: str = ""


# ---------------------------------------------------------------- before grading


def plan(
    regrade: Path,
    *,
    out: Path,
    seed: int | None,
    assignment: str | None,
    submissions: list[Path],
    shard: object = None,
) -> Plan:
    """The regrade's seed, assignment and submissions; Refused, before anything is graded or
    written, when PREVIOUS_OUT is not a grade output, a --seed or --assignment given
    disagrees with it, OUT is not a new or empty folder apart from it, or a shard is asked."""
    if shard is not None:
        raise Refused(
            "--regrade grades the whole batch, not a shard. Grade the shards as usual, "
            "merge them, and regrade the merged folder on one machine."
        )
    previous = read_graded(regrade)
    if seed is not None and seed != previous.seed:
        raise Refused(
            f"--seed {seed} disagrees with the seed {previous.seed} that {regrade} was graded "
            "with. A regrade uses the same hidden cases: leave --seed out (or pass "
            f"--seed {previous.seed})."
        )
    if assignment and previous.assignment and assignment != previous.assignment:
        raise Refused(
            f"--assignment {assignment} disagrees with chapter {previous.assignment}, which "
            f"{regrade} was graded as. Leave --assignment out to regrade it as that chapter."
        )
    _check_out(out, regrade)
    given = submissions or _previous_files(previous)
    return Plan(previous, previous.seed, assignment or previous.assignment, given)


def _previous_files(previous: GradedRun) -> list[Path]:
    """The files PREVIOUS_OUT graded, as its gradebook names them: all still there, or
    Refused (a missing one would be graded as an unreadable file, and its 0 would show as a
    change)."""
    files = [Path(row.file) for row in previous.rows]
    missing = [path for path in files if not path.is_file()]
    if missing:
        raise Refused(
            f"{len(missing)} of the {len(files)} files {previous.folder} graded are not where "
            f"its {GRADEBOOK} says (the first: {missing[0]}). Run from the folder it was "
            "graded from, or name the submissions to regrade."
        )
    return files


def _check_out(out: Path, previous: Path) -> None:
    """OUT is new or empty, and neither PREVIOUS_OUT nor inside it, nor around it."""
    target, source = out.resolve(), previous.resolve()
    if target == source or source in target.parents or target in source.parents:
        raise Refused(
            f"--out {out} is, holds or lies inside {previous}. Regrade into a folder of its "
            "own: the previous results must stay as they are."
        )
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise Refused(
            f"--out {out} already exists and is not an empty folder. Regrade into a new or "
            "empty folder, so that no earlier result is overwritten."
        )


# ---------------------------------------------------------------- comparing two runs


def changes(previous: GradedRun, current: GradedRun) -> list[Change]:
    """Every changed score, student by student in the new gradebook's order, then the
    students of the previous run only."""
    old, new = _keyed(previous.rows, current.rows), _keyed(current.rows, previous.rows)
    found: list[Change] = []
    for key, row in new.items():
        if key in old:
            found += _compared(key, old[key], row)
        else:
            found.append(_added(key, row))
    found += [_missing(key, row) for key, row in old.items() if key not in new]
    return found


def _keyed(rows: list[Graded], others: list[Graded]) -> dict[str, Graded]:
    """Rows by student: the file's name (a re-download puts it in another folder), or its
    whole path where that name is handed in more than once in either run."""
    names = {Path(row.file).name for row in [*rows, *others]}
    repeated = {name for name in names if _repeated(name, rows, others)}
    return {
        (row.file if Path(row.file).name in repeated else Path(row.file).name): row for row in rows
    }


def _repeated(name: str, rows: list[Graded], others: list[Graded]) -> bool:
    return any(sum(Path(r.file).name == name for r in run) > 1 for run in (rows, others))


def _compared(student: str, old: Graded, new: Graded) -> list[Change]:
    if old.grading_error and new.grading_error:
        return []  # a placeholder both times: nothing graded changed (the summary lists it)
    names = list(dict.fromkeys([*new.marks, *old.marks])) or [""]
    if old.grading_error or new.grading_error:
        return [_grading_error(student, name, old, new) for name in names]
    found = []
    for name in names:
        change = _exercise_change(name, old.marks.get(name), new.marks.get(name))
        if change is not None:
            found.append(_with(student, name, old, new, *change))
    return found


def _with(student: str, name: str, old: Graded, new: Graded, *fields: Any) -> Change:
    return Change(student, name, *fields, old_folder=old.folder, new_folder=new.folder)


def _exercise_change(
    name: str, old: Mark | None, new: Mark | None
) -> tuple[str, float | None, float | None, str, str, str] | None:
    """(change, old score, new score, old verdict, new verdict, why), or None: unchanged."""
    if old is None and new is not None:
        why = f"a new exercise of the assignment: {new.verdict}: {new.headline}"
        return "score", None, new.score, "", new.verdict, why
    if new is None and old is not None:
        return "score", old.score, None, old.verdict, "", "no longer graded by the assignment"
    if old is None or new is None or old.score == new.score:
        return None
    if old.verdict != new.verdict:
        why = f"{old.verdict} -> {new.verdict}: {new.headline}"
    elif old.max_score != new.max_score:
        why = f"still {new.verdict}; now worth {new.max_score:g} (was {old.max_score:g})"
    else:
        why = f"still {new.verdict}, scored {old.score:g} -> {new.score:g}: {new.headline}"
    return "score", old.score, new.score, old.verdict, new.verdict, why


def _grading_error(student: str, name: str, old: Graded, new: Graded) -> Change:
    """A grading error on one side: its 0 is the grader's placeholder, never a score."""
    before, after = old.marks.get(name), new.marks.get(name)
    if old.grading_error:
        now = f"{after.verdict}: {after.headline}" if after else f"scored {new.total:g} in all"
        why = (
            f"the previous run was a GRADING ERROR ({headline(old.grading_error)}): its 0 "
            f"was a placeholder, not a grade; now {now}"
        )
        old_score, new_score = None, after.score if after else new.total
        verdicts = (GRADING_ERROR, after.verdict if after else "")
    else:
        why = (
            f"GRADING ERROR in this run ({headline(new.grading_error)}): the grader failed, "
            "not the student; keep the previous score until it is graded again"
        )
        old_score, new_score = before.score if before else old.total, None
        verdicts = (before.verdict if before else "", GRADING_ERROR)
    return _with(student, name, old, new, GRADING_ERROR, old_score, new_score, *verdicts, why)


def _added(student: str, row: Graded) -> Change:
    if row.grading_error:
        error = headline(row.grading_error)
        why = f"not in the previous run; a GRADING ERROR in this run ({error})"
        return Change(
            student, "", "added", None, None, "", GRADING_ERROR, why, new_folder=row.folder
        )
    why = "not in the previous run" + (f": {headline(row.problem)}" if row.problem else "")
    return Change(student, "", "added", None, row.total, "", "", why, new_folder=row.folder)


def _missing(student: str, row: Graded) -> Change:
    score = None if row.grading_error else row.total
    why = "not in this run: its previous results stay in the previous folder"
    return Change(student, "", "missing", score, None, "", "", why, old_folder=row.folder)


# ---------------------------------------------------------------- the change log


def write_change_log(out: Path, previous: GradedRun) -> list[Change]:
    """changes.csv and changes.md in OUT, comparing OUT (just graded) with PREVIOUS_OUT."""
    current = read_graded(out)
    found = changes(previous, current)
    with (out / CHANGES_CSV).open("w", encoding="utf-8", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(CSV_COLUMNS)
        for change in found:
            writer.writerow(_csv_row(change))
    (out / CHANGES_MD).write_text(markdown(previous, current, found), encoding="utf-8")
    print(
        f"change log: {summary(found)}; {out / CHANGES_MD} (to read), {out / CHANGES_CSV} "
        f"(to sort). {previous.folder} is unchanged.",
        file=sys.stderr,
    )
    return found


def _score(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def _csv_row(change: Change) -> list[str]:
    return [
        change.student,
        change.exercise,
        change.change,
        _score(change.old_score),
        _score(change.new_score),
        change.old_verdict,
        change.new_verdict,
        change.why,
        change.old_folder,
        change.new_folder,
    ]


def summary(found: list[Change]) -> str:
    counts = Counter(change.change for change in found)

    def students(kind: str) -> int:
        return len({c.student for c in found if c.change == kind})

    return (
        f"{counts['score']} score(s) changed, of {students('score')} student(s); "
        f"{counts[GRADING_ERROR]} with a grading error in one run, of "
        f"{students(GRADING_ERROR)} student(s); {counts['added']} student(s) added, "
        f"{counts['missing']} missing"
    )


def markdown(previous: GradedRun, current: GradedRun, found: list[Change]) -> str:
    """The change log to read: changed scores by student, then who was added or is missing."""
    lines = [
        f"# Regrade of {previous.folder}",
        "",
        f"Regraded into {current.folder} with seed {previous.seed}, the previous run's (the "
        f"same hidden cases), as chapter {current.assignment or '(each notebook: its own)'}. "
        f"{summary(found)}. The previous folder is unchanged.",
        "",
        "## Changed scores, and grading errors",
        "",
    ]
    scored = [c for c in found if c.change in ("score", GRADING_ERROR)]
    lines += [_md_line(c) for c in scored] or ["None."]
    for kind, title in (("added", "Added (in this run only)"), ("missing", "Missing")):
        listed = [c for c in found if c.change == kind]
        if listed:
            lines += ["", f"## {title}", ""]
            lines += [f"- **{c.student}**: {_md_scores(c)}{c.why}" for c in listed]
    return "\n".join(lines) + "\n"


def _md_line(change: Change) -> str:
    return f"- **{change.student}**, `{change.exercise}`: {_md_scores(change)}{change.why}"


def _md_scores(change: Change) -> str:
    if change.change in ("added", "missing"):
        score = change.new_score if change.change == "added" else change.old_score
        return "" if score is None else f"score {score:g}; "
    old = _score(change.old_score) or change.old_verdict or "-"
    new = _score(change.new_score) or change.new_verdict or "-"
    return f"{old} -> {new}; "
