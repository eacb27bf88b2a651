"""The course's English inside code cells gets its Chinese from the chapter's translation file
(autograder/authoring/code_text.py): only comments and string literals change, the code stays
one source, a chapter without code sections builds exactly as before, and a changed English
comment is named until its Chinese is reviewed."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from autograder.authoring import code_text, notebooks, translations
from autograder.locale import ENGLISH

ROOT = Path(__file__).resolve().parents[2]
CELL = '''def grad(f):  # like jax.grad
    """A function returning the gradient of the scalar function f."""
    # the forward pass records each operation,
    # the backward pass visits them in reverse
    out = f(1.0)
    print(f"grad needs a scalar output, got shape {out}")
    return {"input": out}'''
PAIRS = {
    '"""A function returning the gradient of the scalar function f."""': (
        '"""返回标量函数 f 的梯度。"""'
    ),
    "# the forward pass records each operation,\n# the backward pass visits them in reverse": (
        "# 前向计算记下每个运算，反向传播按相反的顺序访问它们"
    ),
    'f"grad needs a scalar output, got shape {out}"': 'f"grad 需要标量输出，得到的形状是 {out}"',
}


def test_only_the_pieces_change_and_the_code_stays_the_same():
    chinese = code_text.translate(CELL, PAIRS)
    assert chinese == (
        "def grad(f):  # like jax.grad\n"
        '    """返回标量函数 f 的梯度。"""\n'
        "    # 前向计算记下每个运算，反向传播按相反的顺序访问它们\n"
        "    out = f(1.0)\n"
        '    print(f"grad 需要标量输出，得到的形状是 {out}")\n'
        '    return {"input": out}'
    )
    assert code_text.same_code(CELL, chinese)
    assert not code_text.same_code(CELL, chinese.replace('"input"', '"输入"').replace("1.0", "2.0"))
    assert code_text.translate(CELL, {}) == CELL


def test_an_edition_may_pass_its_own_language_code_and_nothing_else():
    """The install cell tells the restart check the notebook's language (it runs before
    check.language): `"en"` in English is the edition's code there, and no other string."""
    cell = 'stop_if_restart_needed(language="en")'
    assert code_text.same_code(cell, cell.replace('"en"', '"zh-CN"'))
    assert not code_text.same_code(cell, cell.replace('"en"', '"fr"'))
    assert not code_text.same_code('f("x")', 'f("zh-CN")')


def test_a_comment_run_is_translated_whole_or_line_by_line():
    lines = {
        "# the forward pass records each operation,": "# 前向计算记下每个运算，",
        "# the backward pass visits them in reverse": "# 反向传播按相反的顺序访问它们",
    }
    chinese = code_text.translate(CELL, lines)
    assert "    # 前向计算记下每个运算，\n    # 反向传播按相反的顺序访问它们\n" in chinese


@pytest.mark.parametrize(
    "bad",
    [
        'f"grad 需要标量输出 {out!r}"',  # another field
        '"grad 需要标量输出"',  # no longer an f-string
        'f"grad 需要" + str(out)',  # code, not one literal
    ],
)
def test_a_translation_that_would_change_the_code_is_refused(bad):
    with pytest.raises(ValueError, match="one string literal of the same kind"):
        code_text.translate(CELL, {'f"grad needs a scalar output, got shape {out}"': bad})
    with pytest.raises(ValueError, match="comment lines"):
        code_text.translate(CELL, {"# like jax.grad": "x = 1  # 与 jax.grad 一样"})


def test_solution_markers_and_tool_comments_are_never_pieces():
    source = (
        "def f():\n    ### BEGIN SOLUTION\n    return 1  # NBVAL_IGNORE_OUTPUT\n"
        "    ### END SOLUTION"
    )
    assert code_text.pieces(source) == []


def small_chapter():
    """A chapter of one English markdown cell (translated) and two code cells (CELL)."""
    english = nbformat.v4.new_notebook()
    prose = nbformat.v4.new_markdown_cell("# A chapter")
    setup = nbformat.v4.new_code_cell("from autograder import check")
    cell = nbformat.v4.new_code_cell(CELL)
    english.cells = [prose, setup, cell]
    sections = {
        prose.id: translations.Section(prose.id, translations.fingerprint(prose.source), "# 一章")
    }
    return english, sections, cell


def test_a_code_section_translates_its_cell_and_drift_names_a_changed_comment():
    english, sections, cell = small_chapter()
    section = translations.Section(
        cell.id, code_text.fingerprint(CELL), code_text.format_pairs(PAIRS)
    )
    with_code = {**sections, cell.id: section}
    assert translations.drift(english, sections, "ch") == []  # opting in is optional
    assert translations.drift(english, with_code, "ch") == []
    edition_notebook = translations.translated(english, with_code, "zh-CN")
    translated = next(c for c in edition_notebook.cells if c.id == cell.id)
    assert "前向计算记下每个运算" in translated.source
    assert translations.code_differences(english, edition_notebook) == []
    assert translations.translates_code(english, with_code)
    assert not translations.translates_code(english, sections)

    cell.source = CELL.replace("records each operation", "records every operation")
    problems = translations.code_drift(english, with_code, "ch")
    assert any(f"English code cell {cell.id} changed" in p for p in problems), problems
    assert any("no longer holds" in p for p in problems), problems
    left = {
        **sections,
        cell.id: translations.Section(
            cell.id, code_text.fingerprint(CELL), code_text.format_pairs(code_text.stub_pairs(CELL))
        ),
    }
    cell.source = CELL
    assert any("still in English" in p for p in translations.code_drift(english, left, "ch"))


def test_a_chapter_without_code_sections_builds_exactly_as_before():
    """Backward compatible: no code section, no change (chapters 00-07 today)."""
    for edition in translations.editions(ROOT):
        english = translations.read(edition.source)
        sections = translations.read_sections(edition.translation)
        if translations.translates_code(english, sections):
            continue
        assert notebooks.stub_language(edition) == ENGLISH
        code = [c for c in english.cells if c.cell_type == "code"]
        try:
            chinese = translations.translated(english, sections, "zh-CN")
        except ValueError:
            continue  # a translation another change has left stale: the drift test names it
        theirs = [c.source for c in chinese.cells if c.cell_type == "code"]
        ours = [translations.with_language_line(c.source, "zh-CN") for c in code]
        assert ours == theirs, edition.source.name


def test_chapters_02_and_08_translate_their_code_and_stubs():
    for edition in translations.editions(ROOT):
        if edition.source.name[:2] in ("02", "08"):
            assert notebooks.stub_language(edition) == "zh-CN"
            learner = translations.read(edition.learner)
            stubs = [c.source for c in learner.cells if "NotImplementedError(" in c.source]
            assert stubs and all("把这一行换成你的代码" in s for s in stubs), edition.learner


def test_nan_and_inf_as_numpy_prints_them_are_numbers_not_english():
    # a Chinese label before an array numpy printed: two infs side by side are not a sentence
    assert not code_text.english_prose("函数值:     [0.     0.     0.6931    inf    inf]")
    assert not code_text.english_prose("梯度:       [0.  0.  0.5 nan nan]")
    # English words around them still are
    assert code_text.english_prose("the gradient is nan here")
    assert code_text.english_prose("literal gradient is NaN")
