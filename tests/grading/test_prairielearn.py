"""PrairieLearn's external grader, as PrairieLearn runs it.

`python -m autograder prairielearn` builds the folder an instructor copies; its entrypoint is
run here on a fake /grade tree (student/ holding the upload; results/ made by the
entrypoint), with the grader of this checkout and the assignment's references prepared as
the image's build prepares them (the image's install itself is Gradescope's setup.sh, which
tests/grading/test_gradescope.py runs). Each kind of submission must give a results.json in
PrairieLearn's format: a right notebook full marks, a wrong one partial marks with the
failing test's message, an unreadable or misplaced upload not gradable with a message that
says what to hand in, a failure of the grader itself not gradable (never the student's 0),
and feedback too long for PrairieLearn's 1 MB limit cut under it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.grading import prairielearn

from ..installed import clean_environment
from ..submissions import GOOD_MATMUL, LEARNER_COPY, ROOT, bad_unbroadcast, fill

pytestmark = pytest.mark.e2e  # the grade command through the sandbox, in other processes

SEED = 1234
NOTEBOOK = "03_unbroadcasting.ipynb"
PREPARE = (sys.executable, "-m", "autograder", "prepare", "03")


def build(out: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "autograder", "prairielearn", "--assignment", "03"]
    command += ["--seed", str(SEED), "--timeout", "60", "--out", str(out)]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)


@pytest.fixture(scope="module")
def image(tmp_path_factory) -> dict[str, Path]:
    """The built folder, and /autograder as the image's build leaves its references."""
    tmp = tmp_path_factory.mktemp("prairielearn")
    done = build(tmp / "built")
    assert f"seed {SEED}" in done.stdout, done.stdout
    base = tmp / "autograder"
    prepared = subprocess.run(
        [*PREPARE, "--seed", str(SEED), "--reference-cache", str(base / "references")],
        cwd=ROOT,
        env=clean_environment(),
        capture_output=True,
        text=True,
        timeout=600,
    )  # setup.sh's last step
    assert prepared.returncode == 0, prepared.stderr[-3000:]
    return {"built": tmp / "built", "base": base}


def run_entrypoint(image: dict[str, Path], files: dict[str, str], tmp_path: Path, **env) -> dict:
    """Put `files` in /grade/student, run the entrypoint, return results.json (which must
    exist, be valid JSON and fit PrairieLearn's limit, whatever happened)."""
    root = tmp_path / "grade"
    (root / "student").mkdir(parents=True)
    for name, text in files.items():
        (root / "student" / name).write_text(text)
    environment = {"AUTOGRADER_ROOT": str(image["base"]), "AUTOGRADER_PYTHON": sys.executable}
    done = subprocess.run(
        ["bash", str(image["built"] / "prairielearn-entrypoint"), str(root)],
        cwd=tmp_path,
        env=clean_environment(**{**environment, **env}),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = root / "results" / "results.json"
    assert results.is_file(), f"no results.json; stderr:\n{done.stderr[-3000:]}"
    assert results.stat().st_size <= prairielearn.LIMIT
    return json.loads(results.read_text(encoding="utf-8"))


def learner() -> nbformat.NotebookNode:
    return nbformat.read(LEARNER_COPY, as_version=4)


def test_the_folder_holds_the_image_recipe_and_an_example_question(tmp_path):
    build(tmp_path)
    names = {path.name for path in tmp_path.iterdir()}
    assert names == {"autograder.zip", "Dockerfile", "prairielearn-entrypoint"} | {
        "info.json",
        "question.html",
    }
    dockerfile = (tmp_path / "Dockerfile").read_text()
    assert "bash /autograder/source/setup.sh" in dockerfile
    assert f"COPY prairielearn-entrypoint {prairielearn.ENTRYPOINT}" in dockerfile
    entrypoint = (tmp_path / "prairielearn-entrypoint").read_text()
    assert "--assignment 03" in entrypoint and f"--seed {SEED}" in entrypoint
    assert (tmp_path / "prairielearn-entrypoint").stat().st_mode & 0o111
    options = json.loads((tmp_path / "info.json").read_text())["externalGradingOptions"]
    assert options["entrypoint"] == prairielearn.ENTRYPOINT
    assert 60 < options["timeout"] <= prairielearn.MAX_TIMEOUT
    assert f'file-names="{NOTEBOOK}"' in (tmp_path / "question.html").read_text()


def test_a_time_limit_prairielearn_cannot_give_is_refused(tmp_path):
    code = prairielearn.build(assignment="03", out=tmp_path / "built", timeout=590)
    assert code == 2 and not (tmp_path / "built").exists()


def test_a_right_submission_scores_full_marks(image, tmp_path):
    solution = (ROOT / "solutions" / NOTEBOOK).read_text()
    payload = run_entrypoint(image, {NOTEBOOK: solution}, tmp_path)
    assert payload["gradable"] is True and payload["score"] == 1.0, payload
    assert [(t["points"], t["max_points"]) for t in payload["tests"]] == [(1, 1), (1, 1)]
    assert payload["tests"][0]["name"] == "unbroadcast (chapter 03)"
    assert payload["message"].startswith("Score 2 / 2") and "PASSED" in payload["output"]


def test_a_wrong_submission_gets_partial_marks_and_says_why(image, tmp_path):
    wrong = fill(learner(), bad_unbroadcast("    return g"), GOOD_MATMUL, [])
    payload = run_entrypoint(image, {NOTEBOOK: nbformat.writes(wrong)}, tmp_path)
    assert payload["gradable"] is True and payload["score"] == 0.5, payload
    failed, passed = payload["tests"]
    assert (failed["points"], passed["points"]) == (0, 1)
    assert failed["message"] and failed["message"] in failed["output"]


@pytest.mark.parametrize(
    ("files", "said"),
    [
        ({NOTEBOOK: '{"cells": [ not json'}, "not a valid Jupyter notebook"),
        ({NOTEBOOK: (ROOT / "course" / "00_start_here.ipynb").read_text()}, "chapter 00"),
        ({"notes.txt": "my answers"}, "found 0 .ipynb"),
        ({"a.ipynb": "{}", "b.ipynb": "{}"}, "found 2 .ipynb"),
    ],
    ids=["broken", "another-chapter", "no-notebook", "two-notebooks"],
)
def test_an_upload_that_cannot_be_graded_is_not_counted_and_says_why(image, tmp_path, files, said):
    payload = run_entrypoint(image, files, tmp_path)
    assert payload["gradable"] is False and "score" not in payload, payload
    (message,) = payload["format_errors"]
    assert said in message and prairielearn.NOT_COUNTED in message
    assert "GRADING ERROR" not in message


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        ("echo 'Traceback: the grader broke' >&2; exit 1", "exited with status 1"),
        ("exit 0", "wrote no results"),
    ],
    ids=["crash", "no-results"],
)
def test_a_grader_failure_is_a_grading_error_not_the_students_zero(image, tmp_path, script, reason):
    broken = tmp_path / "python-broken"
    broken.write_text(f"#!/bin/sh\n{script}\n")
    broken.chmod(0o755)
    solution = (ROOT / "solutions" / NOTEBOOK).read_text()
    payload = run_entrypoint(image, {NOTEBOOK: solution}, tmp_path, AUTOGRADER_PYTHON=str(broken))
    assert payload["gradable"] is False and "score" not in payload, payload
    assert "GRADING ERROR" in payload["message"] and reason in payload["message"]
    assert "not your fault" in payload["message"] and "instructor" in payload["message"]


def test_a_grading_error_the_grader_recorded_is_not_gradable():
    results = {
        "score": 0,
        "output": "Score 0: GRADING ERROR.",
        "tests": [],
        "extra_data": {"grading_error": "RuntimeError: the sandbox lost its round folder"},
    }
    payload = prairielearn.converted(results, "feedback")
    assert payload["gradable"] is False and "score" not in payload
    assert "lost its round folder" in payload["message"] and "not your fault" in payload["message"]


def oversized_results() -> dict:
    long = "é" * 400_000  # two bytes each in UTF-8
    tests = [
        {"name": f"exercise_{i} (chapter 03)", "score": i % 2, "max_score": 1}
        | {"status": "passed" if i % 2 else "failed", "output": f"Failed: case {i}\n{long}"}
        for i in range(4)
    ]
    return {"score": 2, "output": "Score 2 / 4.", "tests": tests, "extra_data": {}}


def test_feedback_over_the_limit_is_cut_under_it_and_keeps_the_score(tmp_path):
    payload = prairielearn.converted(oversized_results(), "x" * 3_000_000)
    assert len(prairielearn.encoded(payload)) > 3 * prairielearn.LIMIT
    prairielearn.write_results(tmp_path / "results", payload)
    written = (tmp_path / "results" / "results.json").read_bytes()
    assert len(written) <= prairielearn.LIMIT
    fitted = json.loads(written)
    assert fitted["score"] == 0.5 and fitted["gradable"] is True
    assert [t["points"] for t in fitted["tests"]] == [0, 1, 0, 1]
    assert "more characters cut: PrairieLearn keeps results under 1 MB" in fitted["output"]
    assert all(t["message"].startswith("Failed: case") for t in fitted["tests"])
    assert not list((tmp_path / "results").glob(".*partial"))
