"""The Gradescope path, end to end, as Gradescope runs it.

The zip that `python -m autograder gradescope` builds is unpacked into a Gradescope-shaped root
(source/, submission/, results/; AUTOGRADER_ROOT points run_autograder there), the grader is
installed the way setup.sh installs it (a venv holding only requirements-grader.txt's packages,
then `pip install --no-deps .` from source/, non-editable, then `prepare`, which caches the
assignment's hidden cases and references), and run_autograder
grades each kind of submission a class sends: right, wrong, blank, not a notebook, two
notebooks. When the grader itself fails, results.json must still be written, say so, and
score 0.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from ..installed import clean_environment, install_wheel, make_grader_venv, work_folder
from ..project.test_environment import pins, requirements
from ..submissions import GOOD_MATMUL, LEARNER_COPY, ROOT, bad_unbroadcast, fill

pytestmark = pytest.mark.e2e  # builds the zip and runs the grader in its own venv

SEED = 1234
GRADING_ERROR = "GRADING ERROR"


def build(folder: Path) -> Path:
    out = folder / "autograder.zip"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "gradescope",
            "--assignment",
            "03",
            "--out",
            str(out),
            "--timeout",
            "60",
            "--seed",
            str(SEED),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert f"seed {SEED}" in done.stdout and "Ubuntu 22.04" in done.stdout
    return out


@pytest.fixture(scope="module")
def gradescope(tmp_path_factory) -> Path:
    """/autograder as Gradescope leaves it after setup.sh: source/, the grader's venv, scripts."""
    tmp = tmp_path_factory.mktemp("gradescope")
    base = work_folder(tmp, "autograder")
    with zipfile.ZipFile(build(tmp)) as archive:
        archive.extractall(base / "source")
    shutil.copy(base / "source" / "run_autograder", base / "run_autograder")
    install = make_grader_venv(base / "venv", base / "source" / "requirements-grader.txt")
    install_wheel(base / "source", install)  # setup.sh: pip install --no-deps .
    done = subprocess.run(
        [
            str(install.python),
            "-m",
            "autograder",
            "prepare",
            "03",
            "--seed",
            str(SEED),
            "--reference-cache",
            str(base / "references"),
        ],
        cwd=base,
        env=clean_environment(HOME=str(base / "home")),
        capture_output=True,
        text=True,
        timeout=600,
    )  # setup.sh's last step
    assert done.returncode == 0 and "hidden cases and their references" in done.stdout, done.stderr[
        -3000:
    ]
    return base


def run_autograder(base: Path, files: dict[str, str], tmp_path: Path, **env: str) -> dict:
    """Put `files` in submission/, run run_autograder, return results.json (which must exist
    and be valid JSON whatever happened)."""
    for folder in ("submission", "results"):
        shutil.rmtree(base / folder, ignore_errors=True)
        (base / folder).mkdir()
    for name, text in files.items():
        (base / "submission" / name).write_text(text)
    done = subprocess.run(
        ["bash", str(base / "run_autograder")],
        cwd=tmp_path,
        env=clean_environment(AUTOGRADER_ROOT=str(base), HOME=str(base / "home"), **env),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = base / "results" / "results.json"
    assert results.is_file(), f"no results.json; stderr:\n{done.stderr[-3000:]}"
    payload = json.loads(results.read_text())
    assert isinstance(payload["score"], int | float) and isinstance(payload["tests"], list)
    return payload


def notebook_text(notebook: nbformat.NotebookNode) -> str:
    return nbformat.writes(notebook)


def learner() -> nbformat.NotebookNode:
    return nbformat.read(LEARNER_COPY, as_version=4)


def statuses(payload: dict) -> list[str]:
    return [test["status"] for test in payload["tests"]]


def test_the_zip_has_the_scripts_the_grader_and_the_seed(tmp_path):
    with zipfile.ZipFile(build(tmp_path)) as archive:
        names = set(archive.namelist())
        assert {
            "setup.sh",
            "run_autograder",
            "requirements-grader.txt",
            "autograder/sandbox/confined/child.py",
            "autograder/exercises/ch03_unbroadcasting.py",
            "autograder/locale/zh-CN/core.po",
            "autograder/locale/zh-CN/ch03.po",
        } <= names
        assert archive.getinfo("run_autograder").external_attr >> 16 & 0o111
        script = archive.read("run_autograder").decode()
        setup = archive.read("setup.sh").decode()
    assert "--assignment 03" in script and f"--seed {SEED}" in script
    assert "requirements-grader.txt" in setup
    assert f"autograder prepare 03 --seed {SEED}" in setup
    assert '--reference-cache "$base/references"' in setup and "--reference-cache" in script
    assert "pip install --no-deps ." in setup and "-e ." not in setup


def test_the_grader_requirements_are_pinned_as_in_requirements_txt():
    lines = (ROOT / "requirements-grader.txt").read_text().splitlines()
    grader = pins(lines)
    assert all(pinned == requirements().get(name) for name, pinned in grader.items()), grader
    assert {"numpy", "tensorflow", "jax", "jaxlib", "hypothesis", "nbformat"} <= set(grader)
    assert not {"jupyterlab", "playwright", "ruff", "pytest", "nbval"} & set(grader)


@pytest.mark.parametrize(
    ("found", "accepted"), [("3.10", False), ("3.11", True), ("3.12", True), ("", False)]
)
def test_setup_sh_insists_on_python_3_11(tmp_path, found, accepted):
    """A fake Python answers the version question; anything else it is asked is logged and
    fails, so an accepted version shows as the venv being made with it."""
    with zipfile.ZipFile(build(tmp_path)) as archive:
        setup = archive.read("setup.sh").decode()
    calls, fake = tmp_path / "calls.txt", tmp_path / "python-fake"
    answer = f"echo {found}" if found else "exit 127"
    fake.write_text(
        f'#!/bin/sh\ncase "$*" in *version_info*) {answer};; '
        f'*) echo "$*" >> {calls}; exit 1;; esac\n'
    )
    fake.chmod(0o755)
    (tmp_path / "autograder" / "source").mkdir(parents=True)
    done = subprocess.run(
        ["bash", "-c", setup],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=clean_environment(
            AUTOGRADER_ROOT=str(tmp_path / "autograder"), AUTOGRADER_SETUP_PYTHON=str(fake)
        ),
    )
    assert done.returncode != 0  # the fake cannot make a venv either way
    refused = "needs Python 3.11 or newer" in done.stderr
    assert refused is not accepted, done.stderr
    if refused:
        assert "Ubuntu 22.04" in done.stderr and not calls.exists()
    else:
        assert calls.read_text().startswith("-m venv ")


def test_a_right_submission_scores_full_marks(gradescope, tmp_path):
    solution = (ROOT / "solutions" / "03_unbroadcasting.ipynb").read_text()
    payload = run_autograder(gradescope, {"mine.ipynb": solution}, tmp_path)
    assert payload["score"] == 2 and statuses(payload) == ["passed", "passed"], payload
    assert payload["extra_data"]["seed"] == SEED


def test_grading_reads_the_references_that_setup_cached(gradescope, tmp_path):
    """setup.sh's entry is read, not recomputed: it is the only one and is left unchanged."""
    (entry,) = (gradescope / "references").glob("03-*.npz")
    before = entry.stat().st_mtime_ns
    solution = (ROOT / "solutions" / "03_unbroadcasting.ipynb").read_text()
    assert run_autograder(gradescope, {"mine.ipynb": solution}, tmp_path)["score"] == 2
    assert [p.name for p in (gradescope / "references").iterdir()] == [entry.name]
    assert entry.stat().st_mtime_ns == before


def test_a_wrong_submission_loses_the_wrong_exercise(gradescope, tmp_path):
    wrong = fill(learner(), bad_unbroadcast("    return g"), GOOD_MATMUL, [])
    payload = run_autograder(gradescope, {"mine.ipynb": notebook_text(wrong)}, tmp_path)
    assert payload["score"] == 1 and statuses(payload) == ["failed", "passed"], payload
    assert GRADING_ERROR not in json.dumps(payload)


def test_a_blank_submission_scores_zero(gradescope, tmp_path):
    payload = run_autograder(gradescope, {"mine.ipynb": notebook_text(learner())}, tmp_path)
    assert payload["score"] == 0 and statuses(payload) == ["failed", "failed"], payload
    assert GRADING_ERROR not in json.dumps(payload)


@pytest.mark.parametrize(
    "files", [{"notes.txt": "my answers"}, {"a.ipynb": "{}", "b.ipynb": "{}"}], ids=["text", "two"]
)
def test_anything_but_one_notebook_is_refused_with_a_reason(gradescope, tmp_path, files):
    payload = run_autograder(gradescope, files, tmp_path)
    assert payload["score"] == 0 and "exactly one .ipynb" in payload["output"], payload
    assert f"found {sum(name.endswith('.ipynb') for name in files)}" in payload["output"]


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        ("echo 'Traceback: the grader broke' >&2; exit 1", "exited with status 1"),
        ("exit 0", "wrote no results"),
    ],
    ids=["crash", "no-results"],
)
def test_a_grader_failure_is_reported_as_a_grading_error(gradescope, tmp_path, script, reason):
    broken = tmp_path / "python-broken"
    broken.write_text(f"#!/bin/sh\n{script}\n")
    broken.chmod(0o755)
    solution = (ROOT / "solutions" / "03_unbroadcasting.ipynb").read_text()
    payload = run_autograder(
        gradescope, {"mine.ipynb": solution}, tmp_path, AUTOGRADER_PYTHON=str(broken)
    )
    assert payload["score"] == 0 and GRADING_ERROR in payload["output"], payload
    assert reason in payload["output"]
    assert "not your fault" in payload["output"] and "instructor" in payload["output"]


def test_the_installed_grader_is_the_one_from_source(gradescope):
    site = next((gradescope / "venv" / "lib").glob("python3*/site-packages"))
    assert (site / "autograder" / "exercises" / "ch03_unbroadcasting.py").is_file()
    assert not list(site.glob("__editable__*")) and not (site / "jupyterlab").exists()
    assert os.access(gradescope / "venv" / "bin" / "python", os.X_OK)


def test_building_the_zip_outside_a_checkout_says_so(tmp_path, monkeypatch):
    from autograder.grading import gradescope as module

    monkeypatch.setattr(module, "ROOT", tmp_path)
    with pytest.raises(SystemExit, match="from a checkout of the course"):
        module.build_zip(assignment="03", out=tmp_path / "autograder.zip")
    assert not (tmp_path / "autograder.zip").exists()
