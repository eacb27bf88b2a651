"""No course-authored English in a Chinese notebook: its code cells' comments, docstrings and
strings, and what its cells print, come from the chapter's translation (code_text).

The rule (code_text.english_prose): a sentence-like run of three or more ASCII words, two of
them at least three letters long, outside backticks, names, dotted paths and numbers. Not
counted: what Python, TensorFlow and JAX say (error outputs' tracebacks, stderr, and on any
line the text after an exception's or warning's name, `ValueError: ...`, but for the
errors the course raises itself), and code. The
chapters listed in NOT_YET_TRANSLATED are the work left: the list may only shrink, and a
chapter on it that holds no English any more fails until it is taken off.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from autograder.authoring import code_text

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = (ROOT / "solutions" / "zh-CN", ROOT / "course" / "zh-CN")
CHAPTERS = sorted(path.name[:2] for path in (ROOT / "solutions").glob("[0-9][0-9]_*.ipynb"))
# Chapters whose code cells and outputs still hold the course's English: the remaining work.
NOT_YET_TRANSLATED = ()
# A framework's or Python's own message from here to the end of its line; the errors the
# course raises itself (an exercise stub's NotImplementedError("Exercise ..."), a prediction's
# claim) say the course's words. A NotImplementedError that JAX raises (chapter 05: a custom_jvp
# rule JAX cannot transpose) is JAX's.
COURSE_ERRORS = (r"NotImplementedError\W*Exercise", "CourseClaimError")
FRAMEWORK_TEXT = re.compile(
    rf"\b(?!(?:{'|'.join(COURSE_ERRORS)})\b)[A-Z]\w*(Error|Exception|Warning|Exit)\b:?.*$"
    # a framework's message a cell prints without its exception's name (TensorFlow's)
    r"|Error in gradient for op .*$"
    # what JAX's print_saved_residuals says of each saved array (chapter 06 shows it)
    r"|^[ \t]*[a-z]+\d*\[[\d,]*\] (?:from the argument|output of|named) .*$",
    re.MULTILINE,
)


def output_text(output: dict) -> str:
    """What an output shows a reader, less what the frameworks and Python say."""
    if output.get("output_type") == "stream":
        text = "".join(output.get("text", "")) if output.get("name") == "stdout" else ""
    elif output.get("output_type") == "error":
        text = f"{output.get('ename')}: {output.get('evalue', '')}"
    elif any(kind.startswith("image/") for kind in output.get("data", {})):
        text = ""  # a figure's text/plain is matplotlib's `<Figure size ...>`
    else:
        text = "".join(output.get("data", {}).get("text/plain", ""))
    return FRAMEWORK_TEXT.sub("", text)


def english_pieces(path: Path) -> list[str]:
    """Each piece of course-authored English in a notebook's code cells and outputs."""
    found = []
    notebook = nbformat.read(path, as_version=4)
    for number, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        where = f"{path.relative_to(ROOT)} cell {number}"
        found += [
            f"{where} ({piece.kind}): {piece.text[:70]!r}"
            for piece in code_text.prose_pieces(cell.source)
        ]
        for output in cell.get("outputs", []):
            found += [
                f"{where} (output): {line[:70]!r}"
                for line in output_text(output).splitlines()
                if code_text.english_prose(line)
            ]
    return found


def chapter_english(chapter: str) -> list[str]:
    return [
        piece
        for folder in FOLDERS
        for path in sorted(folder.glob(f"{chapter}_*.ipynb"))
        for piece in english_pieces(path)
    ]


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_a_chinese_notebook_holds_no_course_authored_english(chapter):
    found = chapter_english(chapter)
    if chapter in NOT_YET_TRANSLATED:
        assert found, f"chapter {chapter} holds no English any more: take it off the list"
        pytest.xfail(f"chapter {chapter}: {len(found)} pieces of English not yet translated")
    assert not found, f"{len(found)} pieces of English:\n" + "\n".join(found)


def test_the_list_of_chapters_left_names_chapters_there_are():
    assert set(NOT_YET_TRANSLATED) <= set(CHAPTERS)
    assert list(NOT_YET_TRANSLATED) == sorted(NOT_YET_TRANSLATED)


@pytest.mark.parametrize(
    ("text", "english"),
    [
        ("# the forward pass records each operation", True),
        ('"Not yet (an error): answer the exercises above first."', True),
        ("# 前向计算：记下每个运算（`x.grad` 和 jax.vjp）", False),
        ("x = np.asarray(value, dtype=np.float32)  # 用 float32", False),
        ("# NBVAL_IGNORE_OUTPUT", False),
        ("# 余切向量 g_x of x", False),
        ('prediction = None  # 你的猜测："a"、"b" 或 "c"', False),
    ],
)
def test_the_rule_finds_english_prose_and_only_that(text, english):
    assert bool(code_text.prose_pieces(text)) == english, code_text.pieces(text)


def test_what_print_saved_residuals_says_is_jax_s_and_only_that():
    listed = "f32[3,3] from the argument w\n  f32[3] output of tanh (block)\nbool[2] named 'h' (f)"
    shown = {"output_type": "stream", "name": "stdout", "text": listed}
    assert not code_text.english_prose(output_text(shown))
    # the course's own words about a saved array are still counted
    said = {"output_type": "stream", "name": "stdout", "text": "f32[3] is kept for the backward"}
    assert code_text.english_prose(output_text(said))


def test_framework_messages_in_outputs_are_not_counted():
    error = {"output_type": "error", "ename": "ValueError", "evalue": "operands could not be"}
    assert not code_text.english_prose(output_text(error))
    shown = {"output_type": "stream", "name": "stdout", "text": "报错 TypeError: bad operand type"}
    assert not code_text.english_prose(output_text(shown))
    stub = {
        "output_type": "error",
        "ename": "NotImplementedError",
        "evalue": "Exercise grad: replace this line with your code.",
    }
    # the stub's message is the course's own: its exception name does not excuse it
    assert code_text.english_prose(output_text(stub))
    # but a NotImplementedError that JAX raises says JAX's words, raised or printed
    jax_error = {
        "output_type": "error",
        "ename": "NotImplementedError",
        "evalue": "Transpose rule (for reverse-mode differentiation) for 'sin' not implemented",
    }
    assert not code_text.english_prose(output_text(jax_error))
    printed = {
        "output_type": "stream",
        "name": "stdout",
        "text": "反向模式报错 NotImplementedError - Transpose rule (for reverse-mode "
        "differentiation) for 'sin' not implemented\n",
    }
    assert not code_text.english_prose(output_text(printed))


# Two words (or names) joined by an ASCII ", " on a printed Chinese line: a list the code built
# with `", ".join(...)`, which Chinese writes with 、 (the translation pairs ", " with "、").
# Inside brackets, quotes and backticks it is a shape, a tuple or code, and is left alone.
ASCII_LIST = re.compile(r"[A-Za-z\u4e00-\u9fff][\w\u4e00-\u9fff]*, [A-Za-z\u4e00-\u9fff]")
CJK = re.compile(r"[\u4e00-\u9fff]")
QUOTED = re.compile(r"\([^()]*\)|\[[^\[\]]*\]|\{[^{}]*\}|'[^']*'|\"[^\"]*\"|`[^`]*`")


def ascii_lists(text: str) -> list[str]:
    """The Chinese lines of `text` that join words with an ASCII comma outside brackets."""
    found = []
    for line in text.splitlines():
        bare, previous = line, None
        while bare != previous:  # nested brackets, innermost first
            previous, bare = bare, QUOTED.sub("", bare)
        if CJK.search(line) and ASCII_LIST.search(bare):
            found.append(line)
    return found


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_a_chinese_notebook_prints_its_lists_with_the_chinese_comma(chapter):
    found = [
        f"{path.relative_to(ROOT)} cell {number}: {line}"
        for folder in FOLDERS
        for path in sorted(folder.glob(f"{chapter}_*.ipynb"))
        for number, cell in enumerate(nbformat.read(path, as_version=4).cells)
        for output in cell.get("outputs", [])
        for line in ascii_lists(output_text(output))
    ]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    ("line", "flagged"),
    [
        ("已训练 你的引擎, JAX, TensorFlow", True),
        ("损失和四个梯度在 JAX, TensorFlow 之间一致", True),
        ("已训练 你的引擎、JAX、TensorFlow", False),
        ("训练集 (1437, 64) (1437, 10) float64", False),  # shapes
        ("尚未计入 Tensor, backward, grad", True),
        ("x 的形状 (2, 3), 而 g 的是 (3,)", False),  # after a bracket: no word before the comma
        ("trained: your engine, JAX", False),  # an English edition's line
    ],
)
def test_the_list_rule_finds_ascii_commas_between_words_only(line, flagged):
    assert bool(ascii_lists(line)) == flagged
