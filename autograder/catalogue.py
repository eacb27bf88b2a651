"""Which English messages the catalogue must translate, and the .po files that hold them.

The messages are found two ways, so none is left to memory:
- in the source: the first argument of every `say("...")` (autograder/) and `english("...")`
  (the harness, which runs where this package cannot be imported), read with `ast`;
- at run time: every exercise's nudge and hints (its mistakes and `hints_by_kind`), the
  labels of its hand-picked cases and its `references_text`, every prediction's question,
  choices and explanation, and the module-level texts passed to `say` by name.

A message belongs to its chapter's file (`ch03.po`) when chapters alone say it: what the
chapter's exercise module says, and its exercises' hints, labels and references text (a text
two chapters say is in both files, translated alike). Everything said elsewhere (the engine,
the grader, the harness) is in `core.po`, and a text core says is core's alone. So the Chinese
of a new exercise is written in one file, its chapter's.

`python -m autograder messages` (and `sync`) writes them into
`autograder/locale/zh-CN/<file>.po`, keeping every translation already there, in whichever
file it was (Babel's catalogue), and `translation_problems` names each message that still
lacks its Chinese (tests/locale/test_catalogue.py fails on them).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from autograder.locale import CHINESE, CJK_TEXT, FIELD, FOLDER, template_pattern

if TYPE_CHECKING:
    from autograder.judging.exercise import Exercise

PACKAGE = FOLDER.parent
MARKERS = {"say", "english"}
CORE = "core"
CHAPTER_MODULE = re.compile(r"ch(\d\d)_\w+\.py")
SYMBOLIC = re.compile(r"[-+]?(inf|nan|NaN|None|[0-9.]+)")  # a value, the same in Chinese


def _literal(node: ast.AST) -> str | None:
    """A string literal, or implicit concatenation of literals; None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def file_of_source(path: Path) -> str:
    """The .po file for what a source file says: its chapter's for a chapter's exercise module
    (autograder/exercises/ch03_unbroadcasting.py -> "ch03"), else core."""
    match = CHAPTER_MODULE.fullmatch(path.name)
    return f"ch{match.group(1)}" if match and path.parent.name == "exercises" else CORE


def source_messages(package: Path = PACKAGE) -> Iterator[tuple[str, str]]:
    """(file, template) for each literal passed to say()/english() in the package's code and
    in the teaching helpers beside it (coursekit, whose texts are core's)."""
    helpers = package.parent / "coursekit"
    for path in sorted(package.rglob("*.py")) + sorted(helpers.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        constants = _module_strings(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", getattr(node.func, "attr", None))
            if name in MARKERS and node.args:
                first = node.args[0]
                text = _literal(first) or constants.get(getattr(first, "id", ""))
                if text:
                    yield file_of_source(path), text


def _module_strings(tree: ast.Module) -> dict[str, str]:
    """NAME -> text for each module-level `NAME = "..."` (a template said by its name)."""
    return {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def runtime_messages(templates: Iterable[tuple[str, str]] = ()) -> Iterator[tuple[str, str]]:
    """(file, text) for each hint, label, prediction text and named constant said at run time.
    A label that fills in a template its chapter's module says (`english("... ({dtype})",
    dtype=...)`; `templates` are (file, template)) is that template's, not a message."""
    from autograder.exercises import EXERCISES, PREDICTIONS
    from autograder.grading.verdicts import NOT_ANSWERED_TEXT
    from autograder.judging import exercise as declarations
    from autograder.judging import report

    yield from (
        (CORE, text)
        for text in (
            declarations.SEVERAL_MISTAKES,
            *declarations.GENERIC_HINTS.values(),
            NOT_ANSWERED_TEXT,
            *report.PROSE_SECTIONS,
            report.PASSED,
            report.FAILED,
            report.NOT_ANSWERED,
            "chapter",
            "exercise",
            "status",
            "PASSED",
            "FAILED",
        )
    )
    filled: dict[str, list[re.Pattern[str]]] = {}
    for file, text in templates:
        if FIELD.search(text):
            filled.setdefault(file, []).append(template_pattern(text))
    for exercise in EXERCISES.values():
        chapter = f"ch{exercise.chapter}"
        yield from ((chapter, text) for text in exercise_texts(exercise))
        yield from (
            (chapter, case.label)
            for case in exercise.edge_cases()
            if case.label
            and not any(pattern.fullmatch(case.label) for pattern in filled.get(chapter, ()))
        )
    for prediction in PREDICTIONS.values():
        chapter = f"ch{prediction_chapter(prediction.name)}"
        yield chapter, prediction.question
        yield chapter, prediction.why
        yield from ((chapter, text) for text in prediction.choices.values())


def exercise_texts(exercise: Exercise) -> Iterator[str]:
    """What one exercise says besides its hand-picked cases' labels: its nudge, its mistakes'
    hints, its fallback hints and the references it names."""
    if exercise.nudge:
        yield exercise.nudge
    yield from (mistake.hint for mistake in exercise.mistakes)
    yield from exercise.hints_by_kind.values()
    yield exercise.references_text


def prediction_chapter(name: str) -> str:
    """The chapter whose module declares prediction `name`."""
    import importlib
    import pkgutil

    import autograder.exercises as package

    for module in pkgutil.iter_modules(package.__path__):
        if module.name.startswith("ch"):
            loaded = importlib.import_module(f"{package.__name__}.{module.name}")
            if name in {p.name for p in getattr(loaded, "PREDICTIONS", ())}:
                return module.name[2:4]
    raise KeyError(name)


def assign(found: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """Each file's texts, in the order found: a text core says is core's alone; a text only
    chapters say is in each of their files ("a scalar input" in ch05.po and ch07.po), so a
    chapter's file is complete on its own."""
    found = [(file, text) for file, text in found if text and text.strip()]
    core = {text for file, text in found if file == CORE}
    files: dict[str, dict[str, None]] = {}
    for file, text in found:
        if file == CORE or text not in core:
            files.setdefault(file, {})[text] = None
    return {file: list(texts) for file, texts in files.items()}


def messages() -> dict[str, list[str]]:
    """Every message by the .po file it belongs in, each once."""
    source = list(source_messages())
    return assign([*source, *runtime_messages(source)])


def po_path(file: str, language: str = CHINESE) -> Path:
    return FOLDER / language / f"{file}.po"


def read_catalogues(language: str = CHINESE) -> dict[str, dict[str, str]]:
    """file -> {English: translation} for each .po file of the language ("" untranslated)."""
    from babel.messages.pofile import read_po

    files = {}
    for path in sorted((FOLDER / language).glob("*.po")):
        with path.open("rb") as handle:
            files[path.stem] = {str(m.id): str(m.string) for m in read_po(handle) if m.id}
    return files


def fields(text: str) -> list[str]:
    return sorted(match.group(0) for match in FIELD.finditer(text))


def translation_problems(
    wanted: Iterable[tuple[str, str]], have: dict[str, dict[str, str]]
) -> list[str]:
    """Each wanted (file, message) without its Chinese in that file (none, still English, or
    with other fields than the English), named with its file."""
    problems = []
    for file, text in wanted:
        translation = have.get(file, {}).get(text, "")
        if translation and translation == text and SYMBOLIC.fullmatch(text):
            continue  # "inf", "NaN", "0.0": the same in Chinese
        words_left = re.search(r"[A-Za-z]{3,}", FIELD.sub("", translation))
        if not translation or (not CJK_TEXT.search(translation) and words_left):
            problems.append(f"{po_path(file).name}: no Chinese for {text[:80]!r}")
        elif fields(translation) != fields(text):
            problems.append(
                f"{po_path(file).name}: fields {fields(translation)} in the "
                f"Chinese of {text[:60]!r}, {fields(text)} in the English"
            )
    return problems


def update(
    language: str = CHINESE, only: tuple[str, ...] = (), wanted: dict[str, list[str]] | None = None
) -> dict[str, int]:
    """Write every message into the language's .po files, keeping existing translations (found
    in any of its files); a file whose messages all moved elsewhere is left empty. Returns how
    many each file written has left untranslated."""
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import write_po

    known = {
        text: translation
        for entries in read_catalogues(language).values()
        for text, translation in entries.items()
        if translation
    }
    wanted = messages() if wanted is None else wanted
    existing = [path.stem for path in sorted((FOLDER / language).glob("*.po"))]
    left: dict[str, int] = {}
    for file in dict.fromkeys([*wanted, *existing]):
        if only and file not in only:
            continue
        texts = wanted.get(file, [])
        catalog = Catalog(
            locale=language.replace("-", "_"), project="autodiff-course", charset="utf-8"
        )
        for text in texts:
            flags = ["python-brace-format"] if FIELD.search(text) else []
            catalog.add(text, known.get(text, ""), flags=flags)
        path = po_path(file, language)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as handle:
            write_po(handle, catalog, width=100, omit_header=True, sort_output=False)
        left[file] = sum(1 for text in texts if not known.get(text))
    return left


def sync_messages(language: str = CHINESE) -> list[str]:
    """Update every .po file of the language (what `messages` does) and return each message
    that still lacks its translation, named with its file (`sync`'s step)."""
    wanted = messages()
    update(language, wanted=wanted)
    return translation_problems(
        [(file, text) for file, texts in wanted.items() for text in texts],
        read_catalogues(language),
    )
