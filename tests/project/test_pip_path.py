"""The learner's pip path: requirements-learner.txt pins what requirements.txt pins, the zip
holds both editions and what installs them, and the documented commands are what CI runs
(tests/project/pip_path.py runs them in full from .ci/run)."""

from __future__ import annotations

import re
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


def readme_zh() -> str:
    return (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")


def fenced_blocks(text: str, language: str) -> list[list[str]]:
    """Every ```language block of `text`, as its non-empty lines."""
    return [
        [line for line in block.splitlines() if line.strip()]
        for block in re.findall(rf"```{language}\n(.*?)```", text, re.DOTALL)
    ]


def test_the_documented_block_sets_a_mirror_only_inside_its_own_environment():
    """CI runs the mirror line as written: `--site` writes .venv/pip.conf, never the machine's
    pip configuration, and pip_path.py checks afterwards that the mirror landed there."""
    lines = pip_path.documented_block(readme_zh())
    mirror = pip_path.documented_mirror(lines)
    assert mirror == "https://pypi.tuna.tsinghua.edu.cn/simple", lines
    assert lines.index(f"python -m pip config --site set global.index-url {mirror}") == 2
    assert not [line for line in lines if "pip config" in line and "--site" not in line]


def test_ci_downloads_from_the_index_the_readme_says_overrides_the_mirror(monkeypatch):
    """The substitution CI makes is one a learner is told about: README.zh-CN.md documents
    PIP_INDEX_URL as ranking above `pip config`, and pip_path.py sets it (PyPI by default)."""
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    assert pip_path.environment()["PIP_INDEX_URL"] == "https://pypi.org/simple"
    monkeypatch.setenv("PIP_INDEX_URL", "https://mirror.example/simple")
    assert pip_path.environment()["PIP_INDEX_URL"] == "https://mirror.example/simple"
    readme = readme_zh()
    assert "PIP_INDEX_URL" in readme and "优先于" in readme
    assert "export PIP_INDEX_URL=" in readme and "$env:PIP_INDEX_URL" in readme


def test_configured_index_reads_what_pip_config_site_writes(tmp_path):
    (tmp_path / "pip.conf").write_text(
        "[global]\nindex-url = https://mirrors.aliyun.com/pypi/simple/\n"
    )
    assert pip_path.configured_index(tmp_path) == "https://mirrors.aliyun.com/pypi/simple/"
    assert pip_path.configured_index(tmp_path / "missing") is None


def test_the_windows_and_conda_blocks_install_as_the_tested_block_does():
    """CI runs only the Linux block; the Windows and conda blocks must end with the same
    mirror, install and launch lines, so what CI proves holds for them too."""
    tested = pip_path.documented_block(readme_zh())[2:]
    windows = next(b for b in fenced_blocks(readme_zh(), "powershell") if "venv" in b[0])
    conda = next(b for b in fenced_blocks(readme_zh(), "bash") if b[0].startswith("conda config"))
    assert windows[0] == "py -3.11 -m venv .venv" and windows[2:] == tested
    assert conda[3:] == tested
    # The conda-forge mirror is set before the environment is created, and defaults is never used.
    assert conda[0].startswith("conda config --set custom_channels.conda-forge https://")
    assert conda[1].startswith("conda create") and "--override-channels" in conda[1]


def test_the_readme_names_no_download_address_for_the_zip_that_does_not_exist():
    """No release page, mirror host or PyPI project is set up yet: the README says so and
    points at the bundle command instead of inventing an address."""
    readme = readme_zh()
    assert "python -m autograder bundle" in readme
    assert "还没有发布到 PyPI" in readme and "还没有国内可以访问的仓库镜像" in readme
    assert "releases/download" not in readme and "gitee.com" not in readme
