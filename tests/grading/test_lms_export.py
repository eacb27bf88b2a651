"""`export --format canvas|generic`: grades.csv as an LMS imports it.

Canvas's gradebook import reads the shape of Canvas's own gradebook export (its guides, and
the exports instructors and tools pass around): the identity columns `Student, ID, SIS User
ID, SIS Login ID, Section` in that order, then one column per assignment (`Name (id)` for an
existing one), a second row `Points Possible` that is not a student, and students matched by
`ID`, else `SIS User ID` or `SIS Login ID`. Canvas's "Download Submissions" names each file
`<name>_<user id>_<submission id>_<file>`, with `LATE_` before the user id for a late one.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from autograder.grading.grade import SubmissionResult
from autograder.grading.lms import export
from autograder.grading.results import write_gradebook
from autograder.grading.verdicts import ExerciseResult

# Canvas's own export of a gradebook, in the documented shape, as its import reads it back.
CANVAS_EXPORT = """\
Student,ID,SIS User ID,SIS Login ID,Section,Quiz 1 (23)
    Points Possible,,,,,10.00
"Smith, Bob",340934,20123456,bsmith,CS 101,8.00
"""
IDENTITY = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


def result(file: str, scores: tuple[float, float], grading_error: str = "") -> SubmissionResult:
    exercises = [
        ExerciseResult(name, score, 1.0, score == 1.0, "")
        for name, score in zip(("unbroadcast", "matmul_vjp"), scores, strict=True)
    ]
    stem = Path(file).stem
    if grading_error:
        exercises = []
    return SubmissionResult(
        Path("submissions") / file, stem, "03", exercises, grading_error=grading_error
    )


@pytest.fixture
def graded(tmp_path: Path) -> Path:
    """A gradebook as `grade` writes it, of a batch downloaded from Canvas."""
    results = [
        result("smithbob_340934_208490284_03_unbroadcasting.ipynb", (1.0, 1.0)),
        result("wellslane_LATE_334244_394803489_03_unbroadcasting-1.ipynb", (1.0, 0.0)),
        result("leeann_555001_666002_03_unbroadcasting.ipynb", (0, 0), "SandboxFailure: x"),
        result("jdoe.ipynb", (0.0, 0.0)),
    ]
    for index, item in enumerate(results, 1):
        item.stem = f"{index:03d}-{item.stem}"
    write_gradebook(tmp_path, results)
    return tmp_path


def read(path: Path) -> list[list[str]]:
    with path.open(encoding="utf-8", newline="") as file:
        return list(csv.reader(file))


def canvas_import(table: list[list[str]]) -> dict[str, dict[str, str]]:
    """What Canvas's gradebook import takes from a CSV, by the documented rules: the identity
    columns first and in order, the Points Possible row skipped, a student found by one of
    ID, SIS User ID, SIS Login ID; an empty score leaves the grade as it is (left out here)."""
    header, *body = table
    assert header[:5] == IDENTITY
    assignments = header[5:]
    assert assignments and all(assignments)
    students = {}
    for row in body:
        assert len(row) == len(header)
        if row[0].strip() == "Points Possible":
            assert not any(row[1:5]) and all(float(cell) > 0 for cell in row[5:])
            continue
        key = row[1] or row[2] or row[3]
        assert key, f"a row Canvas cannot match to a student: {row}"
        students[key] = {a: float(s) for a, s in zip(assignments, row[5:], strict=True) if s}
    return students


def test_the_reference_reads_canvas_own_export():
    table = list(csv.reader(CANVAS_EXPORT.splitlines()))
    assert canvas_import(table) == {"340934": {"Quiz 1 (23)": 8.0}}


def test_canvas_export_is_what_canvas_imports(graded, capsys):
    assert export(graded=graded, kind="canvas") == 1  # a grading error's score left empty
    table = read(graded / "export-canvas.csv")
    assert table[0] == [*IDENTITY, "Chapter 03"]
    assert table[1] == ["    Points Possible", "", "", "", "", "2"]
    assert canvas_import(table) == {
        "340934": {"Chapter 03": 2.0},
        "334244": {"Chapter 03": 1.0},
        "555001": {},  # GRADING ERROR: no score sent, Canvas keeps what it had
        "jdoe": {"Chapter 03": 0.0},  # not a Canvas file name: its stem as SIS Login ID
    }
    assert table[2][:2] == ["smithbob", "340934"] and table[5][3] == "jdoe"
    err = capsys.readouterr().err
    assert "GRADING ERROR" in err and "SIS Login ID" in err


def test_canvas_export_updates_an_existing_assignment(graded, tmp_path):
    target = tmp_path / "to-canvas.csv"
    export(graded=graded, kind="canvas", to=target, column="Chapter 03 (4711)")
    assert read(target)[0][5] == "Chapter 03 (4711)"


def test_generic_export_has_the_late_flag_where_the_file_name_says(graded):
    assert export(graded=graded, kind="generic") == 1
    header, *rows = read(graded / "export-generic.csv")
    assert header == ["student_id", "score", "max", "late", "submission"]
    by_student = {row[0]: row[1:4] for row in rows}
    assert by_student == {
        "340934": ["2.0", "2.0", "no"],
        "334244": ["1.0", "2.0", "yes"],
        "555001": ["", "2.0", "no"],  # GRADING ERROR: no score
        "jdoe": ["0.0", "2.0", ""],  # lateness unknown
    }


def test_two_submissions_of_one_student_are_refused(tmp_path, capsys):
    results = [
        result("smithbob_340934_1_hw.ipynb", (1.0, 1.0)),
        result("smithbob_LATE_340934_2_hw.ipynb", (0.0, 0.0)),
    ]
    write_gradebook(tmp_path, results)
    assert export(graded=tmp_path, kind="canvas") == 2
    assert "more than one submission" in capsys.readouterr().err
    assert not (tmp_path / "export-canvas.csv").exists()


def test_a_folder_without_a_gradebook_is_refused(tmp_path, capsys):
    assert export(graded=tmp_path, kind="generic") == 2
    assert "grades.csv not found" in capsys.readouterr().err
