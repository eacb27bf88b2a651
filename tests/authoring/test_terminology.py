"""One term for one idea in the Chinese edition, and the style rules a machine can check.

docs/zh-CN/terminology.toml holds the terms (English, the one Chinese term, where it is used,
the variants to avoid); docs/zh-CN/style.md the rules. Every Chinese text of the course is read:
the .po catalogues' translations, the prose in translations/zh-CN/, the generated Chinese
notebooks (markdown, the Chinese lines of code cells, and their stored outputs, which show what
the reports print), the learners' glossary and README.zh-CN.md (the first Chinese page a learner
reads, so it speaks as the course does). Only lines holding Chinese are judged, so code,
framework errors and English left for later are not.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from babel.messages.pofile import read_po

from autograder import locale
from autograder.locale import CJK_TEXT

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "docs" / "zh-CN" / "terminology.toml"
GLOSSARY = ROOT / "course" / "zh-CN" / "glossary.md"
CATALOGUES = ROOT / "autograder" / "locale" / "zh-CN"
TRANSLATIONS = ROOT / "translations" / "zh-CN"
NOTEBOOKS = [ROOT / "solutions" / "zh-CN", ROOT / "course" / "zh-CN"]
README_ZH = ROOT / "README.zh-CN.md"


@dataclass(frozen=True)
class Text:
    """One Chinese text: where it is (for the message), which chapter's it is ("core" for the
    shared catalogue, "glossary"), whether it is markdown, and the text."""

    where: str
    place: str
    markdown: bool
    text: str


@dataclass(frozen=True)
class Term:
    en: str
    zh: str
    where: tuple[str, ...]
    avoid: tuple[re.Pattern[str], ...]
    glossary: bool


def terms() -> list[Term]:
    table = tomllib.loads(TABLE.read_text(encoding="utf-8"))
    return [
        Term(
            entry["en"],
            entry["zh"],
            tuple(entry["where"]),
            tuple(re.compile(pattern) for pattern in entry.get("avoid", ())),
            entry.get("glossary", True),
        )
        for entry in table["term"]
    ]


def _catalogue_texts() -> Iterator[Text]:
    for path in sorted(CATALOGUES.glob("*.po")):
        with path.open("rb") as handle:
            for message in read_po(handle):
                if message.id and message.string:
                    where = f"{path.relative_to(ROOT)} msgid {str(message.id)[:50]!r}"
                    yield Text(where, path.stem.removeprefix("ch"), False, str(message.string))


def _translation_texts() -> Iterator[Text]:
    for path in sorted(TRANSLATIONS.glob("[0-9][0-9]_*.md")):
        yield Text(str(path.relative_to(ROOT)), path.name[:2], True, path.read_text("utf-8"))


def _notebook_texts() -> Iterator[Text]:
    for folder in NOTEBOOKS:
        for path in sorted(folder.glob("[0-9][0-9]_*.ipynb")):
            notebook = nbformat.read(path, as_version=4)
            for number, cell in enumerate(notebook.cells):
                where = f"{path.relative_to(ROOT)} cell {number}"
                yield Text(where, path.name[:2], cell.cell_type == "markdown", cell.source)
                for output in cell.get("outputs", []):
                    yield Text(f"{where} (output)", path.name[:2], False, _output_text(output))


def _output_text(output: dict) -> str:
    if "text" in output:
        return "".join(output["text"])
    return "".join(output.get("data", {}).get("text/plain", ""))


def _glossary_text() -> Text:
    """The glossary without its English column (which names the English term, "one-hot")."""
    lines = []
    for line in GLOSSARY.read_text("utf-8").splitlines():
        cells = line.split("|")
        if line.startswith("|") and len(cells) > 3:
            cells[2] = " "
        lines.append("|".join(cells))
    return Text(str(GLOSSARY.relative_to(ROOT)), "glossary", True, "\n".join(lines))


def _readme_text() -> Text:
    """README.zh-CN.md, as markdown; its place is "readme", which no term's `where` names."""
    return Text(README_ZH.name, "readme", True, README_ZH.read_text("utf-8"))


def chinese_texts() -> list[Text]:
    return [
        *_catalogue_texts(),
        *_translation_texts(),
        *_notebook_texts(),
        _glossary_text(),
        _readme_text(),
    ]


def chinese_lines(text: Text) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(text.text.splitlines(), 1):
        if CJK_TEXT.search(line):
            yield number, line


CODE_SPAN = re.compile(r"`[^`\n]*`|\$[^$\n]*\$")
ITALIC = re.compile(
    r"(?<![*A-Za-z0-9_\\])([*_])(?![*_\s])([^*_\n]+?)(?<![*_\s\\])\1(?![*A-Za-z0-9_])"
)
ASCII_QUOTED_PROSE = re.compile(r"[\u4e00-\u9fff，。：；、（）] ?\*?\"[A-Za-z][^\"\n]* [^\"\n]*\"")
# Each rule: its name, and what it finds in one Chinese line (markdown or not).
RULES: list[tuple[str, Callable[[str, bool], list[str]]]] = [
    (
        "chapter numbers without a leading zero (第 1 章)",
        lambda line, md: re.findall(r"第 ?0\d ?章", line),
    ),
    ("± rather than +-", lambda line, md: re.findall(r"\+-", line)),
    ("no space after a full-width colon", lambda line, md: re.findall(r"：[ \t]+\S", line)),
    ("quotes are “”, not 「」", lambda line, md: re.findall(r"[「」『』]", line)),
    (
        "English text quoted in Chinese takes “”, not ASCII quotes",
        lambda line, md: ASCII_QUOTED_PROSE.findall(line),
    ),
    (
        "a prediction's option reads （a）…, not 'a': …",
        lambda line, md: re.findall(r"^\s*'[a-z]': ", line),
    ),
    (
        "no italics on Chinese text (use bold)",
        lambda line, md: [
            m.group(0)
            for m in ITALIC.finditer(CODE_SPAN.sub("", line))
            if md and CJK_TEXT.search(m.group(2))
        ],
    ),
]
COURSE_WORDS = re.compile(r"(练习|检查|提示)（(exercise|check|hint)）")


def nested_brackets(text: str) -> list[str]:
    """Each full-width bracket opened inside another, with what surrounds it."""
    depth, found = 0, []
    for index, char in enumerate(text):
        if char == "（":
            depth += 1
            if depth == 2:
                found.append(text[max(0, index - 20) : index + 20].replace("\n", " "))
        elif char == "）":
            depth = max(0, depth - 1)
    return found


def avoided_variants(texts: list[Text], table: list[Term]) -> list[str]:
    problems = []
    for text in texts:
        for number, line in chinese_lines(text):
            for term in table:
                for pattern in term.avoid:
                    for match in pattern.finditer(line):
                        problems.append(
                            f"{text.where}:{number}: {match.group(0)!r} for {term.en!r}: "
                            f"write {term.zh!r}"
                        )
    return problems


def style_problems(texts: list[Text]) -> list[str]:
    problems = []
    for text in texts:
        for number, line in chinese_lines(text):
            for rule, find in RULES:
                problems += [
                    f"{text.where}:{number}: {rule}: {hit!r}" for hit in find(line, text.markdown)
                ]
            if text.place not in ("00", "glossary"):
                problems += [
                    f"{text.where}:{number}: course words are defined in chapter 00 only: {hit!r}"
                    for hit in COURSE_WORDS.findall(line)
                ]
        problems += [
            f"{text.where}: nested full-width brackets: {hit!r}"
            for hit in nested_brackets(text.text)
        ]
    return problems


def glossary_rows() -> dict[str, str]:
    """The glossary's Chinese column -> its English column."""
    rows = {}
    for line in GLOSSARY.read_text("utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) >= 2 and cells[0] not in ("中文", "---"):
            rows[cells[0]] = cells[1]
    return rows


TEXTS = chinese_texts()
TERMS = terms()


def test_no_chinese_text_uses_a_variant_the_terminology_table_avoids():
    problems = avoided_variants(TEXTS, TERMS)
    assert not problems, f"{len(problems)} avoided variants:\n" + "\n".join(problems)


def test_the_chinese_text_follows_the_style_rules_a_machine_can_check():
    problems = style_problems(TEXTS)
    assert not problems, f"{len(problems)} style problems:\n" + "\n".join(problems)


def test_each_term_is_used_where_the_table_says():
    places: dict[str, str] = {}
    for text in TEXTS:
        places[text.place] = places.get(text.place, "") + text.text
    missing = [
        f"{term.zh!r} ({term.en}) is not used in {place}"
        for term in TERMS
        for place in term.where
        if not all(part in places.get(place, "") for part in term.zh.split(" / "))
    ]
    assert not missing, "\n".join(missing)


def test_the_glossary_and_the_table_hold_the_same_terms():
    rows = glossary_rows()
    wanted = {term.zh: term.en for term in TERMS if term.glossary}
    assert sorted(rows) == sorted(wanted), (
        f"only in the glossary: {sorted(set(rows) - set(wanted))}; "
        f"only in the table: {sorted(set(wanted) - set(rows))}"
    )
    assert len({term.zh for term in TERMS}) == len(TERMS), "a Chinese term listed twice"


def test_no_avoided_variant_is_the_term_itself():
    for term in TERMS:
        assert not any(pattern.search(term.zh) for pattern in term.avoid), term


@pytest.mark.parametrize(
    ("rule", "bad", "good"),
    [
        ("chapter", "见第 02 章。", "见第 2 章。"),
        ("±", "取值 +-100。", "取值 ±100。"),
        ("colon", "提示： 你返回了", "提示：你返回了"),
        ("quotes", '报错 "Error in matMul: shapes"。', "报错“Error in matMul: shapes”。"),
        (
            "lower-case quotes",
            '它没有 "constant handler"。',
            '它没有“constant handler”，`f("a b")` 不算。',
        ),
        ("option", "  'a': 不能：它会通过", "  （a）不能：它会通过"),
        ("italics", "这是*原始值*。", "这是**原始值**，`a * b` 和 $x*y$ 不算。"),
    ],
)
def test_each_rule_finds_what_it_names_and_only_that(rule, bad, good):
    def found(line: str) -> list[str]:
        return style_problems([Text("t", "05", True, line)])

    assert found(bad) and not found(good), (rule, found(bad), found(good))


def test_nested_brackets_and_glossed_course_words_are_found():
    assert nested_brackets("甲（乙（丙）丁）") and not nested_brackets("甲（乙）丙（丁）")
    assert style_problems([Text("t", "03", False, "每个练习（exercise）")])
    assert not style_problems([Text("t", "00", False, "每个练习（exercise）")])


def test_the_hint_header_has_no_space_after_its_colon():
    from autograder.notebook.hints import Hint

    with locale.speaking(locale.CHINESE):
        shown = str(Hint("warmup_cube_vjp", 1, ("你返回了导数。",)))
    assert "提示：你返回了" in shown, shown
