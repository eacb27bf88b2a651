"""`python -m autograder sync NN`: the steps, what it reports, and the exercise list kept in
one place (the module's EXERCISES; the notebook's metadata is written from it). The notebooks'
execution is replaced here by a record of what would be built; tests/exercises/
test_adding_an_exercise.py runs the whole command."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient.exceptions import CellExecutionError

from autograder.authoring import notebooks, sync, translations
from autograder.exercises import for_chapter

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = "00_start_here"
NAMES = [exercise.name for exercise in for_chapter("00")]


@pytest.mark.parametrize("folder", ["solutions", "course", "solutions/zh-CN", "course/zh-CN"])
def test_each_notebooks_exercise_list_is_its_modules(folder: str) -> None:
    for path in sorted((ROOT / folder).glob("[0-9][0-9]_*.ipynb")):
        declared = nbformat.read(path, as_version=4).metadata["course"]["exercises"]
        assert declared == [e.name for e in for_chapter(path.name[:2])], (
            f"{folder}/{path.name}: run `python -m autograder sync {path.name[:2]}`"
        )


@pytest.fixture
def chapter(tmp_path: Path) -> Path:
    """A checkout holding chapter 00 only, in sync, with its translation."""
    for folder in ("solutions", "course", "solutions/zh-CN", "course/zh-CN"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / folder / f"{CHAPTER}.ipynb", tmp_path / folder)
    (tmp_path / "translations" / "zh-CN").mkdir(parents=True)
    shutil.copy2(
        ROOT / "translations" / "zh-CN" / f"{CHAPTER}.md", tmp_path / "translations" / "zh-CN"
    )
    shutil.copy2(ROOT / "pyproject.toml", tmp_path)
    return tmp_path


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What sync would execute, recorded instead."""
    record: list[str] = []
    monkeypatch.setattr(notebooks, "build", lambda pair: record.append(pair.solution.name))
    monkeypatch.setattr(
        notebooks,
        "build_edition",
        lambda root, edition: record.append(f"zh-CN/{edition.source.name}"),
    )
    return record


def test_a_complete_chapter_is_built_in_both_languages_and_exits_0(chapter, built, capsys):
    assert sync.sync(root=chapter, chapter="00", names=NAMES, messages=lambda: []) == 0
    assert built == [f"{CHAPTER}.ipynb", f"zh-CN/{CHAPTER}.ipynb"]
    assert "chapter 00 is complete" in capsys.readouterr().out


def test_a_message_without_chinese_is_named_and_the_chinese_edition_waits(chapter, built, capsys):
    problems = ["ch00.po: no Chinese for 'a new hint'", "ch00.po: no Chinese for 'a label'"]
    assert sync.sync(root=chapter, chapter="00", names=NAMES, messages=lambda: problems) == 1
    out = capsys.readouterr().out
    assert built == [f"{CHAPTER}.ipynb"]
    assert (
        "2 message(s) have no Chinese yet: translate them in autograder/locale/zh-CN/ch00.po"
    ) in out
    assert "The Chinese edition (solutions/zh-CN/00_start_here.ipynb" in out
    assert "was not built" in out


def test_a_new_english_cell_gets_a_section_holding_its_english(chapter, built, capsys):
    path = chapter / "solutions" / f"{CHAPTER}.ipynb"
    notebook = nbformat.read(path, as_version=4)
    notebook.cells.append(nbformat.v4.new_markdown_cell("A new paragraph, in English."))
    nbformat.write(notebook, path)
    assert sync.sync(root=chapter, chapter="00", names=NAMES, messages=lambda: []) == 1
    out = capsys.readouterr().out
    translation = chapter / "translations" / "zh-CN" / f"{CHAPTER}.md"
    assert translation.read_text(encoding="utf-8").endswith("A new paragraph, in English.\n")
    assert f"wrote translations/zh-CN/{CHAPTER}.md" in out
    assert "is still in English (no Chinese in it): write the Chinese" in out
    assert built == [f"{CHAPTER}.ipynb"]


def test_the_notebooks_exercise_list_is_written_from_the_module(chapter, built, capsys):
    path = chapter / "solutions" / f"{CHAPTER}.ipynb"
    notebook = nbformat.read(path, as_version=4)
    notebook.metadata["course"]["exercises"] = []
    nbformat.write(notebook, path)
    sync.sync(root=chapter, chapter="00", names=NAMES, messages=lambda: [])
    assert nbformat.read(path, as_version=4).metadata["course"]["exercises"] == NAMES
    assert f"wrote solutions/{CHAPTER}.ipynb" in capsys.readouterr().out


def test_an_exercise_the_notebook_does_not_check_or_checks_out_of_order_is_named(tmp_path):
    path = tmp_path / "09_topic.ipynb"
    nbformat.write(
        nbformat.v4.new_notebook(
            cells=[
                nbformat.v4.new_code_cell("check.first_vjp(first_vjp)"),
                nbformat.v4.new_code_cell('check.predict("a_guess", prediction)'),
                nbformat.v4.new_code_cell("check.second_vjp(second_vjp)"),
            ],
            metadata={"course": {}},
        ),
        path,
    )
    edition = translations.Edition(path, tmp_path / "09.md", path, path)
    found = sync.Chapter("09", notebooks.Pair(path, path), edition, None)
    assert sync.exercise_list(found, ["first_vjp", "second_vjp"]) == []
    assert nbformat.read(path, as_version=4).metadata["course"]["exercises"] == [
        "first_vjp",
        "second_vjp",
    ]
    assert sync.exercise_list(found, ["first_vjp", "second_vjp", "third_vjp"]) == [
        "09_topic.ipynb has no check cell `check.third_vjp(third_vjp)` for exercise "
        "third_vjp: add one under its exercise cell."
    ]
    (unknown,) = sync.exercise_list(found, ["first_vjp"])
    assert unknown.startswith(
        "09_topic.ipynb checks `second_vjp`, which autograder/exercises/"
        "ch09_<topic>.py does not declare"
    )
    (order,) = sync.exercise_list(found, ["second_vjp", "first_vjp"])
    assert "the notebook asks first_vjp, second_vjp: list them in the notebook's order" in order


def test_a_cell_that_raises_is_reported_not_a_traceback(chapter, monkeypatch, capsys):
    def fails(pair: notebooks.Pair) -> None:
        raise CellExecutionError(
            "Traceback ...\nNameError: name 'x' is not defined",
            "NameError",
            "name 'x' is not defined",
        )

    monkeypatch.setattr(notebooks, "build", fails)
    monkeypatch.setattr(notebooks, "build_edition", lambda root, edition: None)
    assert sync.sync(root=chapter, chapter="00", names=NAMES, messages=lambda: []) == 1
    out = capsys.readouterr().out
    assert "a cell raised, so the notebook that ran it was not written" in out
    assert "NameError" in out


def test_a_chapter_that_is_not_there_is_refused_with_what_to_do(chapter):
    with pytest.raises(sync.SyncError, match="give its two digits"):
        sync.find_chapter(chapter, "3")
    with pytest.raises(sync.SyncError, match=r"found 0 \(chapters here: 00\); a new chapter "):
        sync.find_chapter(chapter, "03")
    with pytest.raises(sync.SyncError, match="run sync from the repository's root"):
        sync.find_chapter(chapter / "solutions", "00")
