"""The learner's pip path: requirements-learner.txt pins what requirements.txt pins, the zip
holds both editions and what installs them, and the documented commands are what CI runs
(tests/project/pip_path.py runs them in full from .ci/run)."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import pytest

from autograder.authoring.bundle import INCLUDED, TOP, build_bundle
from tests.project import pip_path

ROOT = Path(__file__).resolve().parents[2]


def pins(name: str) -> dict[str, str]:
    lines = (ROOT / name).read_text().splitlines()
    return dict(line.split("==") for line in lines if line and not line.startswith("#"))


def test_learner_requirements_pin_what_the_course_pins_and_nothing_posix_only():
    learner, full = pins("requirements-learner.txt"), pins("requirements.txt")
    assert {name: full[name] for name in learner} == learner
    assert {"tensorflow", "jax", "jaxlib", "numpy", "jupyterlab", "babel"} <= set(learner)
    assert not {"pyseccomp", "pytest", "playwright"} & set(learner)


def test_the_zip_holds_both_editions_and_what_installs_them(tmp_path):
    out = tmp_path / "course.zip"
    files = build_bundle(ROOT, out)
    names = set(zipfile.ZipFile(out).namelist())
    assert names == {f"{TOP}/{path}" for path in files}
    for needed in (
        "course/03_unbroadcasting.ipynb",
        "course/zh-CN/03_unbroadcasting.ipynb",
        "solutions/zh-CN/03_unbroadcasting.ipynb",
        "course/zh-CN/glossary.md",
        "autograder/locale/zh-CN/core.po",
        "pyproject.toml",
        "requirements-learner.txt",
        "README.zh-CN.md",
        "LICENSE",
        "LICENSE-CONTENT",
    ):
        assert f"{TOP}/{needed}" in names, needed
    assert not [
        n for n in names if ".ipynb_checkpoints" in n or "/.venv" in n or "__pycache__" in n
    ]


def test_the_zip_carries_both_licences_word_for_word(tmp_path):
    out = tmp_path / "course.zip"
    build_bundle(ROOT, out)
    with zipfile.ZipFile(out) as archive:
        for licence in ("LICENSE", "LICENSE-CONTENT"):
            assert archive.read(f"{TOP}/{licence}") == (ROOT / licence).read_bytes(), licence


def test_a_listed_file_that_git_does_not_track_stops_the_zip(tmp_path):
    """A root whose git tracks every entry of INCLUDED but the content licence: the bundle
    names the missing entry instead of writing a zip without it."""
    tracked = [entry for entry in INCLUDED if entry != "LICENSE-CONTENT"]
    for entry in tracked:
        path = tmp_path / entry / "placeholder.txt" if (ROOT / entry).is_dir() else tmp_path / entry
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("placeholder\n")
    for needed in ("course/00_start_here.ipynb", "course/zh-CN/00_start_here.ipynb"):
        (tmp_path / needed).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / needed).write_text("{}\n")
    (tmp_path / "LICENSE-CONTENT").write_text("present, but never added to git\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "--", *tracked, "course"], cwd=tmp_path, check=True)
    with pytest.raises(
        FileNotFoundError,
        match=r"LICENSE-CONTENT listed in INCLUDED but not "
        r"tracked by git",
    ):
        build_bundle(tmp_path, tmp_path / "out" / "course.zip")
    assert not (tmp_path / "out" / "course.zip").exists()
    subprocess.run(["git", "add", "--", "LICENSE-CONTENT"], cwd=tmp_path, check=True)
    assert "LICENSE-CONTENT" in build_bundle(tmp_path, tmp_path / "out" / "course.zip")


def test_ci_runs_the_documented_block_word_for_word():
    readme = (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")
    lines = pip_path.documented_block(readme)
    assert lines[0] == "python3 -m venv .venv" and lines[-1] == "jupyter lab course/zh-CN"
    script = pip_path.script(lines).splitlines()
    assert script[1 : len(lines)] == lines[:-1]
    assert "tests/project/pip_path.py" in (ROOT / ".ci" / "run").read_text()
