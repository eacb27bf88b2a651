"""What the course says outside the notebooks' cells speaks the learner's language: the CLI's
`progress` and `reset` (the notebooks' own `course.language`, or `--language`), `check.reset`,
a name that is no exercise's, the environment report and the exercise stubs."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import check, locale
from autograder.authoring import notebooks, reset
from autograder.locale import CJK_TEXT, speaking
from coursekit.environment import environment_report

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = "03_unbroadcasting.ipynb"


def run_cli(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "autograder", *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"},
    )


def test_progress_speaks_the_language_of_the_notebooks_it_reads():
    chinese = run_cli("progress", "course/zh-CN")
    assert chinese.returncode == 0, chinese.stderr
    assert "个练习中" in chinese.stdout and "exercises passed" not in chinese.stdout
    assert chinese.stdout.splitlines()[0].split() == ["章", "练习", "状态"]
    english = run_cli("progress", "course/zh-CN", "--language", "en")
    assert "exercises passed" in english.stdout and not CJK_TEXT.search(english.stdout)
    assert "exercises passed" in run_cli("progress", "course").stdout


def test_progress_of_a_folder_without_chapters_says_so_in_the_language_asked(tmp_path):
    done = run_cli("progress", str(tmp_path), "--language", "zh-CN")
    assert done.returncode == 1 and "没有章节笔记本" in done.stderr, done.stderr


def test_reset_from_a_shell_answers_in_the_notebooks_language(tmp_path):
    path = tmp_path / CHAPTER
    shutil.copy(ROOT / "course" / "zh-CN" / CHAPTER, path)
    done = run_cli("reset", str(path), "unbroadcast")
    assert done.returncode == 0, done.stderr
    assert "恢复成最初的样子" in done.stdout and "Reset cell" not in done.stdout
    problem = run_cli("reset", str(path), "not_an_exercise")
    assert problem.returncode == 1 and "无法重置" in problem.stderr, problem.stderr
    assert "Its exercises" not in problem.stderr


def test_check_reset_and_unknown_names_speak_chinese(tmp_path, monkeypatch):
    shutil.copy(ROOT / "course" / "zh-CN" / CHAPTER, tmp_path / CHAPTER)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(reset, "_shell", lambda: None)
    with speaking(locale.CHINESE):
        stub = check.reset("unbroadcast")
        assert "最初的单元格" in repr(stub) and "The original" not in repr(stub)
        with pytest.raises(reset.ResetError, match="没有名为 'no_such' 的练习"):
            check.reset("no_such")
        with pytest.raises(AttributeError, match="没有名为 'no_such' 的练习"):
            check.no_such  # noqa: B018
        with pytest.raises(KeyError, match="没有名为"):
            check.hint("no_such")


def test_the_environment_report_names_the_learners_requirements_in_chinese():
    name = "no-such-package-for-the-course"
    with speaking(locale.CHINESE):
        report = environment_report(("numpy", name))
    assert "requirements-learner.txt" in report and "missing" not in report
    assert "requirements.txt (or run" in environment_report(("numpy", name))


def test_a_stub_speaks_the_language_it_is_built_in():
    english = notebooks.stub_line("    ", "grad")
    assert (
        english
        == '    raise NotImplementedError("Exercise grad: replace this line with your code.")'
    )
    chinese = notebooks.stub_line("    ", "grad", locale.CHINESE)
    assert chinese == '    raise NotImplementedError("练习 grad：把这一行换成你的代码。")'
