"""`python -m autograder export --format canvas|generic OUT`: grades.csv as an LMS takes it.

The grader knows submissions by their files; an LMS knows students. Canvas's "Download
Submissions" names each file `<name>_<user id>_<submission id>_<original name>`, with `LATE_`
before the user id when it came in after the due date, so a batch downloaded from Canvas
carries each student's Canvas user id and lateness in its file names, and this export reads
them there. A file named otherwise is taken to be named after the student (its stem is the
id), lateness unknown.

Two formats:
* canvas: the columns of Canvas's own gradebook export, which its gradebook import reads
  back: `Student, ID, SIS User ID, SIS Login ID, Section`, then one column per assignment
  (`Name (id)` for an existing one; a new name makes a new assignment), and a second row
  `Points Possible`. Students are matched by `ID` (the Canvas user id); a file not named by
  Canvas gives its stem as `SIS Login ID`. Canvas applies its own late policy, so the score
  is the grader's.
* generic: `student_id, score, max, late, submission`; `late` is yes, no, or empty where the
  file name does not say.

A GRADING ERROR's 0 is a placeholder, not a grade: its score is left empty (Canvas leaves
an empty cell's grade as it was), listed, and the command exits 1. Two submissions of one
student are refused: the instructor chooses which one counts.
"""

from __future__ import annotations

import csv
import re
import sys
from dataclasses import dataclass
from pathlib import Path, PurePath

CANVAS_NAME = re.compile(
    r"^(?P<name>[^_]+)_(?:(?P<late>late)_)?(?P<user>\d+)_(?P<sub>\d+)_.+$", re.I
)
CANVAS_IDENTITY = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
# Canvas's own export writes this row's label indented; its import reads it either way.
POINTS_POSSIBLE = "    Points Possible"
GENERIC = ("student_id", "score", "max", "late", "submission")
NEEDED = {"submission", "file", "chapter", "total", "max", "grading_error"}
TEXT = {"encoding": "utf-8", "newline": ""}


class ExportError(Exception):
    """The export cannot be written as asked; the message says why and what to do."""


@dataclass(frozen=True)
class Row:
    """One submission of grades.csv, as an LMS sees it."""

    submission: str
    student: str  # the LMS's id: Canvas's user id, else the file's stem
    name: str  # Canvas's name part of its file name, else ""
    canvas: bool  # whether the file is named as Canvas's download names it
    late: bool | None  # None: the file name does not say
    score: str  # empty for a grading error
    max: str
    grading_error: str


def export(*, graded: Path, kind: str, to: Path | None = None, column: str | None = None) -> int:
    """Write the export; 0, or 1 when some scores were left empty (grading errors), or 2
    when nothing was written."""
    try:
        rows = read_gradebook(graded / "grades.csv")
        check_one_per_student(rows)
    except ExportError as error:
        print(f"Cannot export: {error}", file=sys.stderr)
        return 2
    target = to or graded / f"export-{kind}.csv"
    if kind == "canvas":
        write_canvas(target, rows, column or default_column(graded))
        _note_unmatched(rows)
    else:
        write_generic(target, rows)
    print(f"wrote {target} ({len(rows)} students)", file=sys.stderr)
    return _note_grading_errors(rows)


def read_gradebook(path: Path) -> list[Row]:
    if not path.is_file():
        raise ExportError(f"{path} not found: pass the folder `grade` (or `merge`) wrote.")
    with path.open(**TEXT) as file:
        reader = csv.DictReader(file)
        missing = NEEDED - set(reader.fieldnames or ())
        if missing:
            raise ExportError(f"{path} is not a gradebook of this grader (no {sorted(missing)}).")
        return [row_of(record) for record in reader]


def row_of(record: dict[str, str]) -> Row:
    file = PurePath(record["file"]).name
    match = CANVAS_NAME.match(file)
    error = record["grading_error"]
    return Row(
        submission=record["submission"],
        student=match["user"] if match else PurePath(file).stem,
        name=match["name"] if match else "",
        canvas=match is not None,
        late=bool(match["late"]) if match else None,
        score="" if error else record["total"],
        max=record["max"],
        grading_error=error,
    )


def check_one_per_student(rows: list[Row]) -> None:
    seen: dict[str, str] = {}
    for row in rows:
        if row.student in seen:
            raise ExportError(
                f"student {row.student} has more than one submission ({seen[row.student]}, "
                f"{row.submission}). Grade only the one that counts, then export."
            )
        seen[row.student] = row.submission


def default_column(graded: Path) -> str:
    """`Chapter NN` from the gradebook's chapter column (Canvas makes a new assignment)."""
    with (graded / "grades.csv").open(**TEXT) as file:
        chapters = {record["chapter"] for record in csv.DictReader(file) if record["chapter"]}
    return f"Chapter {min(chapters)}" if len(chapters) == 1 else "Autograded notebook"


def points_possible(rows: list[Row]) -> str:
    values = [float(row.max) for row in rows if row.max and not row.grading_error]
    return f"{max(values):g}" if values else ""


def write_canvas(target: Path, rows: list[Row], column: str) -> None:
    with target.open("w", **TEXT) as file:
        writer = csv.writer(file)
        writer.writerow([*CANVAS_IDENTITY, column])
        writer.writerow([POINTS_POSSIBLE, "", "", "", "", points_possible(rows)])
        for row in rows:
            canvas_id, login = (row.student, "") if row.canvas else ("", row.student)
            writer.writerow([row.name, canvas_id, "", login, "", row.score])


def write_generic(target: Path, rows: list[Row]) -> None:
    """A grading error's row has no exercises (max 0): it gets the assignment's maximum."""
    assignment_max = next((row.max for row in rows if not row.grading_error), "")
    with target.open("w", **TEXT) as file:
        writer = csv.writer(file)
        writer.writerow(GENERIC)
        for row in rows:
            late = "" if row.late is None else ("yes" if row.late else "no")
            maximum = assignment_max if row.grading_error else row.max
            writer.writerow([row.student, row.score, maximum, late, row.submission])


def _note_unmatched(rows: list[Row]) -> None:
    others = [row.submission for row in rows if not row.canvas]
    if others:
        print(
            f"{len(others)} submission(s) not named as Canvas's Download Submissions names "
            f"them (e.g. {others[0]}): their file name is written as SIS Login ID, which "
            "Canvas matches only if it is one.",
            file=sys.stderr,
        )


def _note_grading_errors(rows: list[Row]) -> int:
    failed = [row for row in rows if row.grading_error]
    for row in failed:
        print(
            f"  {row.submission}: GRADING ERROR, score left empty ({row.grading_error})",
            file=sys.stderr,
        )
    if failed:
        print(
            f"{len(failed)} score(s) left empty: grade those submissions again and export again.",
            file=sys.stderr,
        )
    return 1 if failed else 0
