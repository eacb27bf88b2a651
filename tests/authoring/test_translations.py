"""The Chinese edition is made from the English source: the drift test names every English
cell changed since it was translated, the generated notebooks run the same code, and each
notebook records its language."""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat
import pytest

from autograder.authoring import translations
from autograder.authoring.notebooks import edition_sync_problems
from autograder.locale import CJK_TEXT

ROOT = Path(__file__).resolve().parents[2]
EDITIONS = translations.editions(ROOT)
IDS = [edition.source.stem for edition in EDITIONS]


def test_every_chapter_has_a_chinese_edition():
    assert len(EDITIONS) == len(list((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb"))) >= 9
    assert all(edition.translation.exists() for edition in EDITIONS)


@pytest.mark.parametrize("edition", EDITIONS, ids=IDS)
def test_the_translation_covers_todays_english(edition):
    english = translations.read(edition.source)
    problems = translations.drift(
        english, translations.read_sections(edition.translation), edition.translation.name
    )
    assert not problems, (
        "\n".join(problems) + "\nRun `python -m autograder translations`, "
        "review the Chinese of each cell named, and set its fingerprint."
    )


def test_a_changed_english_cell_is_named_until_its_chinese_is_reviewed():
    edition = EDITIONS[1]
    english = translations.read(edition.source)
    sections = translations.read_sections(edition.translation)
    changed = copy.deepcopy(english)
    cell = translations.translatable_cells(changed)[2]
    cell.source += "\n\nOne more English sentence."
    problems = translations.drift(changed, sections, "ch")
    assert problems == [
        f"ch: English cell {cell.id} changed since it was translated: review "
        f"the Chinese, then set its fingerprint to "
        f"{translations.fingerprint(cell.source)}"
    ]
    new = nbformat.v4.new_markdown_cell("A new paragraph.")
    changed.cells.insert(3, new)
    assert any(
        f"English cell {new.id} has no translation" in p
        for p in translations.drift(changed, sections, "ch")
    )
    untranslated = {
        **sections,
        cell.id: translations.Section(
            cell.id, translations.fingerprint(cell.source), "Still English."
        ),
    }
    assert any("still in English" in p for p in translations.drift(changed, untranslated, "ch"))


@pytest.mark.parametrize("edition", EDITIONS, ids=IDS)
def test_both_editions_run_the_same_code_and_record_their_language(edition):
    english = translations.read(edition.source)
    english_learner = translations.read(ROOT / "course" / edition.source.name)
    for twin, path in ((english, edition.solution), (english_learner, edition.learner)):
        chinese = translations.read(path)
        assert translations.code_differences(twin, chinese) == [], path
        assert chinese.metadata["course"]["language"] == "zh-CN"
        assert chinese.metadata["course"]["chapter"] == english.metadata["course"]["chapter"]
        prose = [c.source for c in chinese.cells if c.cell_type == "markdown"]
        assert all(CJK_TEXT.search(text) for text in prose), path
    assert english.metadata["course"]["language"] == "en"
    assert edition_sync_problems(ROOT, edition) == []


def test_the_generated_chinese_notebook_keeps_its_badges_apart_and_its_language_line():
    edition = EDITIONS[2]
    notebook = translations.edition_notebook(ROOT, edition)
    first = next(c for c in notebook.cells if c.cell_type == "markdown").source
    heading, blank, badges, blank_after = first.split("\n")[:4]
    assert heading.startswith("# 02") and blank == blank_after == ""
    assert "course/zh-CN/02_reverse_mode_tape.ipynb" in badges
    setup = [c.source for c in notebook.cells if "from autograder import check" in c.source]
    assert len(setup) == 1 and 'check.language("zh-CN")' in setup[0]


def test_the_glossary_lists_the_terms_the_chapters_use():
    glossary = (ROOT / "course" / "zh-CN" / "glossary.md").read_text(encoding="utf-8")
    for term in ("余切向量", "cotangent", "向量-雅可比积", "VJP", "反广播", "直通估计器"):
        assert term in glossary
