"""`grade --regrade PREVIOUS_OUT`: a batch graded, the tests fixed, the batch graded again.

The first run grades with a planted bug in the tests (one of unbroadcast's references is
off, so every unbroadcast fails), one submission meets a grading error, and one student
later withdraws. The regrade runs the course's own tests from the command line, with the
previous run's seed, over the batch as it now is (a late student added), and one submission
meets a grading error this time. The change log must name exactly the rows that changed,
with the old and new scores and why; a grading error on either side as the grader's, never
as the student's score; and PREVIOUS_OUT must be byte for byte as it was.
"""

from __future__ import annotations

import csv
import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder import cli
from autograder.grading import command, regrade
from autograder.grading.assignment import Assignment

from ..submissions import LEARNER_COPY, ROOT, VARIANTS, fill

pytestmark = pytest.mark.e2e  # the grade command through the sandbox

SEED = 23
FIRST = ("good", "forgets_keepdims", "flaky", "unlucky", "leaver")
SECOND = ("good", "forgets_keepdims", "flaky", "unlucky", "latecomer")
PREPARE = (sys.executable, "-m", "autograder", "prepare", "03")
KINDS = {"forgets_keepdims": "forgets_keepdims"}  # every other student hands in a right answer


def write_notebooks(folder: Path) -> None:
    learner = nbformat.read(LEARNER_COPY, as_version=4)
    for name in sorted({*FIRST, *SECOND}):
        unbroadcast, matmul, extra, _ = VARIANTS[KINDS.get(name, "good")]
        nbformat.write(fill(learner, unbroadcast, matmul, extra), folder / f"{name}.ipynb")


def with_buggy_tests(real):
    """prepare() as it was before the fix: unbroadcast's first reference is off by one."""

    def prepare(chapter: str, seed: int, cache: Path | None = None) -> Assignment:
        assignment = real(chapter, seed, cache)
        first, *rest = assignment.references["unbroadcast"]
        assignment.references["unbroadcast"] = [tuple(a + 1 for a in first), *rest]
        return assignment

    return prepare


def failing_for(stem: str, real):
    """grade_submission failing for one student, as the grader itself might."""

    def grade_submission(run, submission):
        if submission.path.stem == stem:
            raise RuntimeError("the sandbox lost its round folder")
        return real(run, submission)

    return grade_submission


def digest(folder: Path) -> str:
    found = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        found.update(str(path.relative_to(folder)).encode())
        if path.is_file():
            found.update(path.read_bytes())
    return found.hexdigest()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("submissions")
    write_notebooks(folder)
    base = tmp_path_factory.mktemp("graded")
    cache = tmp_path_factory.mktemp("references")
    prepared = subprocess.run(  # the frameworks' references, in a process of their own
        [*PREPARE, "--seed", str(SEED), "--reference-cache", str(cache)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert prepared.returncode == 0, prepared.stderr[-3000:]
    previous, new = base / "previous", base / "new"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(command, "prepare", with_buggy_tests(command.prepare))
        patch.setattr(command, "grade_submission", failing_for("flaky", command.grade_submission))
        code = command.grade(
            submissions=[folder / f"{name}.ipynb" for name in FIRST],
            out=previous,
            jobs=1,
            seed=SEED,
            timeout=20,
            assignment="03",
            reference_cache=cache,
        )
    assert code == 1  # flaky's grading error
    before = digest(previous)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(command, "grade_submission", failing_for("unlucky", command.grade_submission))
        patch.setitem(sys.modules, "keras", None)  # what main() sets, undone after
        papers = [str(folder / f"{name}.ipynb") for name in SECOND]
        options = ["--jobs", "1", "--timeout", "20", "--reference-cache", str(cache)]
        code = cli.main(["grade", *papers, "--out", str(new), "--regrade", str(previous), *options])
    assert code == 1  # unlucky's grading error
    return {"previous": previous, "new": new, "before": before, "folder": folder}


def log_rows(out: Path) -> list[dict[str, str]]:
    with (out / regrade.CHANGES_CSV).open(encoding="utf-8", newline="") as file:
        return list(csv.DictReader(file))


def test_the_log_names_exactly_the_changed_rows(runs):
    rows = log_rows(runs["new"])
    fields = ("student", "exercise", "change", "old_score", "new_score")
    fields += ("old_verdict", "new_verdict")
    got = sorted(tuple(row[f] for f in fields) for row in rows)
    error = regrade.GRADING_ERROR
    assert got == sorted(
        [
            ("good.ipynb", "unbroadcast", "score", "0", "1", "failed", "passed"),
            ("flaky.ipynb", "unbroadcast", error, "", "1", error, "passed"),
            ("flaky.ipynb", "matmul_vjp", error, "", "1", error, "passed"),
            ("unlucky.ipynb", "unbroadcast", error, "0", "", "failed", error),
            ("unlucky.ipynb", "matmul_vjp", error, "1", "", "passed", error),
            ("latecomer.ipynb", "", "added", "", "2", "", ""),
            ("leaver.ipynb", "", "missing", "1", "", "", ""),
        ]
    ), rows


def test_each_row_says_why(runs):
    why = {(row["student"], row["exercise"]): row["why"] for row in log_rows(runs["new"])}
    assert why["good.ipynb", "unbroadcast"].startswith("failed -> passed: ")
    flaky = why["flaky.ipynb", "unbroadcast"]
    assert "previous run was a GRADING ERROR" in flaky and "placeholder, not a grade" in flaky
    assert "lost its round folder" in flaky
    unlucky = why["unlucky.ipynb", "matmul_vjp"]
    assert unlucky.startswith("GRADING ERROR in this run") and "not the student" in unlucky
    assert "not in the previous run" in why["latecomer.ipynb", ""]
    assert "not in this run" in why["leaver.ipynb", ""]
    text = (runs["new"] / regrade.CHANGES_MD).read_text(encoding="utf-8")
    assert f"seed {SEED}" in text and "## Added" in text and "## Missing" in text
    assert "- **good.ipynb**, `unbroadcast`: 0 -> 1; failed -> passed: " in text


def test_the_previous_results_are_left_as_they_were(runs):
    assert digest(runs["previous"]) == runs["before"]
    previous = regrade.read_graded(runs["previous"])
    assert {Path(row.file).stem for row in previous.rows} == set(FIRST)
    new = regrade.read_graded(runs["new"])
    assert new.seed == SEED and {Path(row.file).stem for row in new.rows} == set(SECOND)


def refused(argv: list[str], capsys) -> str:
    assert cli.main(argv) == 2
    return capsys.readouterr().err


def test_a_regrade_that_cannot_be_fair_or_safe_is_refused(runs, tmp_path, capsys):
    previous, paper = runs["previous"], str(runs["folder"] / "good.ipynb")
    out = tmp_path / "out"
    grade = ["grade", paper, "--regrade", str(previous)]
    message = refused([*grade, "--out", str(out), "--seed", str(SEED + 1)], capsys)
    assert f"--seed {SEED + 1} disagrees with the seed {SEED}" in message
    message = refused([*grade, "--out", str(out), "--assignment", "04"], capsys)
    assert "--assignment 04 disagrees with chapter 03" in message
    for inside in (previous, previous / "again"):
        assert "must stay as they are" in refused([*grade, "--out", str(inside)], capsys)
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "grades.csv").write_text("x\n")
    message = refused([*grade, "--out", str(tmp_path / "used")], capsys)
    assert "not an empty folder" in message
    shard = ["--shard", "0/2", "--seed", str(SEED), "--assignment", "03"]
    message = refused([*grade, "--out", str(out), *shard], capsys)
    assert "not a shard" in message
    message = refused(["grade", paper, "--out", str(out), "--regrade", str(tmp_path)], capsys)
    assert "is not the output of `grade`" in message
    assert not out.exists() and digest(previous) == runs["before"]


def test_a_regrade_without_submissions_grades_what_the_previous_run_graded(runs, tmp_path):
    planned = regrade.plan(
        runs["previous"], out=tmp_path / "out", seed=None, assignment=None, submissions=[]
    )
    assert [path.stem for path in planned.submissions] == list(FIRST)
    assert planned.seed == SEED and planned.assignment == "03"


def test_a_regrade_of_files_no_longer_there_is_refused(runs, tmp_path):
    """Without submissions named, the previous gradebook's files must all still be there."""
    copy = tmp_path / "previous"
    shutil.copytree(runs["previous"], copy)
    gradebook = (copy / "grades.csv").read_text(encoding="utf-8")
    moved = str(runs["folder"] / "leaver.ipynb")
    (copy / "grades.csv").write_text(gradebook.replace(moved, moved + ".gone"), encoding="utf-8")
    with pytest.raises(regrade.Refused, match=r"1 of the 5 files .* are not where"):
        regrade.plan(copy, out=tmp_path / "out", seed=None, assignment=None, submissions=[])
