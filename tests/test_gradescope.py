"""The Gradescope zip: its scripts, and run_autograder grading one submission for real."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile

import nbformat

from .submissions import GOOD_MATMUL, GOOD_UNBROADCAST, LEARNER_COPY, ROOT, fill


def build(tmp_path):
    out = tmp_path / "autograder.zip"
    run = subprocess.run([sys.executable, "-m", "autograder", "gradescope", "--assignment", "03",
                          "--out", str(out), "--timeout", "60"], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    assert "wrote" in run.stdout
    return out


def test_zip_has_gradescope_scripts_and_the_grader(tmp_path):
    with zipfile.ZipFile(build(tmp_path)) as archive:
        names = set(archive.namelist())
        assert {"setup.sh", "run_autograder", "requirements.txt", "autograder/child.py"} <= names
        assert archive.getinfo("run_autograder").external_attr >> 16 & 0o111
        assert "--assignment 03" in archive.read("run_autograder").decode()


def test_run_autograder_writes_results_json_for_one_submission(tmp_path):
    with zipfile.ZipFile(build(tmp_path)) as archive:
        script = archive.read("run_autograder").decode()
    base = tmp_path / "autograder"
    (base / "submission").mkdir(parents=True)
    learner = nbformat.read(LEARNER_COPY, as_version=4)
    nbformat.write(fill(learner, GOOD_UNBROADCAST, GOOD_MATMUL, []),
                   base / "submission" / "mine.ipynb")
    runner = tmp_path / "run_autograder"
    runner.write_text(script)
    env = {**os.environ, "AUTOGRADER_ROOT": str(base), "AUTOGRADER_PYTHON": sys.executable}
    subprocess.run(["bash", str(runner)], cwd=ROOT, env=env, check=True, capture_output=True,
                   timeout=600)
    payload = json.loads((base / "results" / "results.json").read_text())
    assert payload["score"] == 2
    assert [t["status"] for t in payload["tests"]] == ["passed", "passed"]


def test_run_autograder_without_a_notebook_still_writes_results(tmp_path):
    with zipfile.ZipFile(build(tmp_path)) as archive:
        script = archive.read("run_autograder").decode()
    base = tmp_path / "autograder"
    (base / "submission").mkdir(parents=True)
    (base / "submission" / "notes.txt").write_text("oops")
    runner = tmp_path / "run_autograder"
    runner.write_text(script)
    env = {**os.environ, "AUTOGRADER_ROOT": str(base), "AUTOGRADER_PYTHON": sys.executable}
    subprocess.run(["bash", str(runner)], cwd=ROOT, env=env, check=True, capture_output=True)
    payload = json.loads((base / "results" / "results.json").read_text())
    assert payload["score"] == 0 and "exactly one .ipynb" in payload["output"]
