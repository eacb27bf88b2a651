"""The Chinese edition's prose, kept beside the English source and checked for drift.

One source per chapter: `solutions/NN_name.ipynb` holds the code (once, for both editions) and
the English prose; `translations/zh-CN/NN_name.md` holds the Chinese prose, one section per
English markdown cell:

    <!-- translates: 147ac1ad 3f2a9c1b0d4e -->
    # 02 · 自己动手写一个反向模式的磁带 ...

The first field is the English cell's id, the second a fingerprint of the English text the
section translates. When the English cell changes, its fingerprint no longer matches and the
drift test names the cell (`python -m autograder translations` lists what to review); the
translator updates the Chinese and the fingerprint together. A Markdown file per chapter, not
language-tagged cells in the notebook, so the English solutions an instructor opens stay in one
language and a translation is reviewed as a plain-text diff.

The Chinese notebooks are generated: the English solution with each markdown cell replaced by its
section, the chapter's `from autograder import check` followed by `check.language("zh-CN")` (the one
code line that differs), metadata `course.language`, then executed like the English ones.
"""

from __future__ import annotations

import copy
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from autograder.authoring import code_text
from autograder.authoring.coursemap import BADGES_END, BADGES_START

ENGLISH, CHINESE = "en", "zh-CN"
SECTION = re.compile(r"^<!-- translates: (\S+) ([0-9a-f]{12}) -->[ \t]*$", re.MULTILINE)
CJK = re.compile(r"[\u4e00-\u9fff]")
CHECK_IMPORT = "from autograder import check"
LANGUAGE_LINE = 'check.language("{language}")'
GENERATED_TAGS = ("solutions-link",)  # markdown cells written by `course-map`, per edition


def english_text(source: str) -> str:
    """A markdown cell's prose without its generated badges (they differ per edition)."""
    if BADGES_START in source and BADGES_END in source:
        before, rest = source.split(BADGES_START, 1)
        source = before + rest.split(BADGES_END, 1)[1]
    return re.sub(r"\n{3,}", "\n\n", source).strip()


def fingerprint(source: str) -> str:
    """Twelve hex digits of SHA-256 over the English prose: what a section says it translates."""
    return hashlib.sha256(english_text(source).encode()).hexdigest()[:12]


def translatable_cells(notebook: NotebookNode) -> list[NotebookNode]:
    """The English markdown cells a translation must cover (generated ones are per edition)."""
    return [
        cell
        for cell in notebook.cells
        if cell.cell_type == "markdown"
        and not set(cell.metadata.get("tags", [])) & set(GENERATED_TAGS)
    ]


@dataclass(frozen=True)
class Section:
    cell_id: str
    translates: str  # the fingerprint of the English text it was written from
    text: str


def read_sections(path: Path) -> dict[str, Section]:
    """The sections of a translation file, by English cell id."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    marks = list(SECTION.finditer(text))
    sections: dict[str, Section] = {}
    for mark, after in zip(marks, [*marks[1:], None], strict=False):
        end = after.start() if after else len(text)
        cell_id = mark.group(1)
        if cell_id in sections:
            raise ValueError(f"{path}: cell {cell_id} is translated twice")
        sections[cell_id] = Section(cell_id, mark.group(2), text[mark.end() : end].strip())
    return sections


def write_sections(path: Path, sections: list[Section]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = "\n\n".join(
        f"<!-- translates: {s.cell_id} {s.translates} -->\n{s.text}" for s in sections
    )
    path.write_text(body + "\n", encoding="utf-8")


def translation_path(root: Path, chapter: str, language: str = CHINESE) -> Path:
    return root / "translations" / language / f"{Path(chapter).stem}.md"


def code_sections(notebook: NotebookNode, sections: dict[str, Section]) -> dict[str, Section]:
    """The sections that translate code cells' text (code_text), by cell id."""
    code = {cell.id for cell in notebook.cells if cell.cell_type == "code"}
    return {cell_id: section for cell_id, section in sections.items() if cell_id in code}


def translates_code(notebook: NotebookNode, sections: dict[str, Section]) -> bool:
    """Whether the chapter's translation has begun on its code cells' text: then its learner
    copy's stubs speak the edition's language too (until every chapter has, a chapter whose
    translation holds no code section is built exactly as before)."""
    return bool(code_sections(notebook, sections))


def code_drift(notebook: NotebookNode, sections: dict[str, Section], where: str) -> list[str]:
    """What a code cell's section lacks: changed English, pairs for English the cell no
    longer holds, pieces left in English."""
    problems = []
    cells = {cell.id: cell for cell in notebook.cells if cell.cell_type == "code"}
    for cell_id, section in code_sections(notebook, sections).items():
        source = cells[cell_id].source
        pairs = code_text.parse_pairs(section.text, f"{where}: code cell {cell_id}")
        if section.translates != code_text.fingerprint(source):
            problems.append(
                f"{where}: English code cell {cell_id} changed since it was translated: "
                f"review the Chinese of its comments and strings, then set its fingerprint to "
                f"{code_text.fingerprint(source)}"
            )
        problems += [
            f"{where}: code cell {cell_id} no longer holds {english[:60]!r} (remove its pair)"
            for english in code_text.unused(source, pairs)
        ]
        problems += [
            f"{where}: code cell {cell_id}: {english[:60]!r} is still in English "
            "(no Chinese in its pair)"
            for english, chinese in pairs.items()
            if code_text.english_prose(english) and not code_text.CJK.search(chinese)
        ]
    return problems


def drift(notebook: NotebookNode, sections: dict[str, Section], where: str) -> list[str]:
    """Every way the translation does not cover today's English: missing, stale, left in
    English, or translating a cell that no longer exists. Empty when it is complete."""
    cells = translatable_cells(notebook)
    problems = code_drift(notebook, sections, where)
    for cell in cells:
        section = sections.get(cell.id)
        if section is None:
            problems.append(
                f"{where}: English cell {cell.id} has no translation "
                f"(starts {english_text(cell.source)[:60]!r})"
            )
        elif section.translates != fingerprint(cell.source):
            problems.append(
                f"{where}: English cell {cell.id} changed since it was translated: "
                f"review the Chinese, then set its fingerprint to "
                f"{fingerprint(cell.source)}"
            )
        elif english_text(cell.source) and not CJK.search(section.text):
            problems.append(f"{where}: cell {cell.id} is still in English (no Chinese in it)")
    known = {cell.id for cell in cells} | set(code_sections(notebook, sections))
    problems += [
        f"{where}: section {cell_id} translates no English cell (removed? renamed?)"
        for cell_id in sections
        if cell_id not in known
    ]
    return problems


def stub_missing(notebook: NotebookNode, path: Path, code: bool | None = None) -> int:
    """Add a section holding the English text for every cell without one, in notebook order
    (a translator replaces the English); returns how many were added. Code cells holding
    English get one too (its pairs' Chinese still the English) when `code` is true, by default
    when the translation has begun on its code. A file that lacks none is left as it is."""
    sections = read_sections(path)
    if code is None:
        code = translates_code(notebook, sections)
    prose = {cell.id for cell in translatable_cells(notebook)}
    ordered, added = [], 0
    for cell in notebook.cells:
        if cell.id in sections and (cell.id in prose or cell.cell_type == "code"):
            ordered.append(sections.pop(cell.id))
        elif cell.id in prose:
            ordered.append(Section(cell.id, fingerprint(cell.source), english_text(cell.source)))
            added += 1
        elif code and cell.cell_type == "code" and code_text.prose_pieces(cell.source):
            pairs = code_text.format_pairs(code_text.stub_pairs(cell.source))
            ordered.append(Section(cell.id, code_text.fingerprint(cell.source), pairs))
            added += 1
    if added:
        write_sections(path, ordered + list(sections.values()))
    return added


def with_language_line(source: str, language: str) -> str:
    """The chapter's check import, then (after a blank line, closing the import block) the line
    that sets the reports' language; unchanged when the cell has no check import."""
    line = LANGUAGE_LINE.format(language=language)
    rows = source.splitlines()
    if CHECK_IMPORT not in (row.strip() for row in rows):
        return source
    at = [row.strip() for row in rows].index(CHECK_IMPORT)
    rest = rows[at + 1 :]
    return "\n".join([*rows[: at + 1], "", line, *([""] if rest else []), *rest])


def translated(
    notebook: NotebookNode, sections: dict[str, Section], language: str, badges_line: str = ""
) -> NotebookNode:
    """The edition of `notebook` in `language`: its prose from `sections`, its code the same
    but for the one language line. Refuses an incomplete or stale translation."""
    problems = drift(notebook, sections, "translation")
    if problems:
        raise ValueError("\n".join(problems))
    edition = copy.deepcopy(notebook)
    imports = 0
    for cell in edition.cells:
        if cell.cell_type == "code" and cell.id in sections:
            where = f"translation of code cell {cell.id}"
            pairs = code_text.parse_pairs(sections[cell.id].text, where)
            cell.source = code_text.translate(cell.source, pairs, where)
        if cell.cell_type == "markdown" and cell.id in sections:
            text = sections[cell.id].text
            if BADGES_START in cell.source and badges_line:
                heading, _, body = text.partition("\n")
                text = f"{heading}\n\n{badges_line}\n\n{body.lstrip()}".rstrip()
            cell.source = text
        elif cell.cell_type == "code" and any(
            row.strip() == CHECK_IMPORT for row in cell.source.splitlines()
        ):
            cell.source = with_language_line(cell.source, language)
            imports += 1
    if imports != 1:
        raise ValueError(f"expected one `{CHECK_IMPORT}` line, found {imports}")
    edition.metadata.setdefault("course", {})["language"] = language
    return edition


EDITION_FOLDER = {CHINESE: CHINESE}  # solutions/zh-CN, course/zh-CN


@dataclass(frozen=True)
class Edition:
    """A chapter in another language: the English solution it is made from, the translation,
    and the two notebooks generated from them."""

    source: Path  # solutions/NN_name.ipynb
    translation: Path  # translations/zh-CN/NN_name.md
    solution: Path  # solutions/zh-CN/NN_name.ipynb
    learner: Path  # course/zh-CN/NN_name.ipynb
    language: str = CHINESE


def editions(root: Path, language: str = CHINESE) -> list[Edition]:
    """Every chapter's edition in `language`, translated or not (the drift test says which)."""
    folder = EDITION_FOLDER[language]
    return [
        Edition(
            path,
            translation_path(root, path.name, language),
            root / "solutions" / folder / path.name,
            root / "course" / folder / path.name,
            language,
        )
        for path in sorted((root / "solutions").glob("[0-9][0-9]_*.ipynb"))
    ]


def edition_notebook(root: Path, edition: Edition) -> NotebookNode:
    """The edition's solution notebook, before it is executed: translated prose, its own
    badges and solutions cell, the English code."""
    from autograder.authoring.coursemap import SOLUTIONS_TAG, badges, solutions_cell_zh

    english = read(edition.source)
    folder = f"course/{EDITION_FOLDER[edition.language]}"
    notebook = translated(
        english,
        read_sections(edition.translation),
        edition.language,
        badges(root, edition.source.name, folder),
    )
    for cell in notebook.cells:
        if SOLUTIONS_TAG in cell.metadata.get("tags", []):
            cell.source = solutions_cell_zh(root, edition.source.name)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return notebook


def code_differences(english: NotebookNode, edition: NotebookNode) -> list[str]:
    """Code cells of two editions that differ beyond the language line and the text of their
    comments and strings (code_text.same_code; should be none)."""
    language = edition.metadata.get("course", {}).get("language", CHINESE)
    ours = [with_language_line(c.source, language) for c in english.cells if c.cell_type == "code"]
    theirs = [c.source for c in edition.cells if c.cell_type == "code"]
    if len(ours) != len(theirs):
        return [f"{len(ours)} code cells in English, {len(theirs)} in the edition"]
    return [
        f"code cell {i} differs"
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True))
        if a != b and not code_text.same_code(a, b)
    ]


def read(path: Path) -> NotebookNode:
    return nbformat.read(path, as_version=4)
