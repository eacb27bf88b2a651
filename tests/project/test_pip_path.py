"""The learner's pip path: requirements-learner.txt pins what requirements.txt pins, the zip
holds both editions and what installs them, and the documented commands are what CI runs
(tests/project/pip_path.py runs them in full from .ci/run)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from autograder.authoring.bundle import TOP, build_bundle
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
    for needed in ("course/03_unbroadcasting.ipynb", "course/zh-CN/03_unbroadcasting.ipynb",
                   "solutions/zh-CN/03_unbroadcasting.ipynb", "course/zh-CN/glossary.md",
                   "autograder/locale/zh-CN/core.po", "pyproject.toml",
                   "requirements-learner.txt", "README.zh-CN.md"):
        assert f"{TOP}/{needed}" in names, needed
    assert not [n for n in names if ".ipynb_checkpoints" in n or "/.venv" in n
                or "__pycache__" in n]


def test_ci_runs_the_documented_block_word_for_word():
    readme = (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")
    lines = pip_path.documented_block(readme)
    assert lines[0] == "python3 -m venv .venv" and lines[-1] == "jupyter lab course/zh-CN"
    script = pip_path.script(lines).splitlines()
    assert script[1:len(lines)] == lines[:-1]
    assert "tests/project/pip_path.py" in (ROOT / ".ci" / "run").read_text()
