"""Which English messages the catalogue must translate, and the .po files that hold them.

The messages are found two ways, so none is left to memory:
- in the source: the first argument of every `say("...")` (autograder/) and `english("...")`
  (the harness, which runs where this package cannot be imported), read with `ast`;
- at run time: every exercise's hints (its mistakes and `hints_by_kind`), every prediction's
  question, choices and explanation, and the module-level texts passed to `say` by name.

`python -m autograder messages` writes them into `autograder/locale/zh-CN/<file>.po`, keeping
every translation already there (Babel's catalogue update); a new message arrives untranslated
and `tests/locale/test_catalogue.py` names it until it is translated.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from autograder.locale import CHINESE, FIELD, FOLDER

PACKAGE = FOLDER.parent
MARKERS = {"say", "english"}
CORE = "core"


def _literal(node: ast.AST) -> str | None:
    """A string literal, or implicit concatenation of literals; None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def source_messages(package: Path = PACKAGE) -> Iterator[tuple[str, str]]:
    """(file, template) for each literal passed to say()/english() in the package's code."""
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        constants = _module_strings(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", getattr(node.func, "attr", None))
            if path.parent.name == "exercises":  # a hand-picked case's label
                for keyword in node.keywords:
                    label = _literal(keyword.value) if keyword.arg == "label" else None
                    if label:
                        yield CORE, label
            if name in MARKERS and node.args:
                first = node.args[0]
                text = _literal(first) or constants.get(getattr(first, "id", ""))
                if text:
                    yield CORE, text


def _module_strings(tree: ast.Module) -> dict[str, str]:
    """NAME -> text for each module-level `NAME = "..."` (a template said by its name)."""
    return {target.id: node.value.value for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            for target in node.targets if isinstance(target, ast.Name)}


def runtime_messages() -> Iterator[tuple[str, str]]:
    """(file, text) for each hint, prediction text and named constant said at run time."""
    from autograder.exercises import EXERCISES, PREDICTIONS
    from autograder.grading.verdicts import NOT_ANSWERED_TEXT
    from autograder.judging import exercise as declarations
    from autograder.judging import report

    yield from ((CORE, text) for text in (
        declarations.SEVERAL_MISTAKES, *declarations.GENERIC_HINTS.values(),
        NOT_ANSWERED_TEXT, *report.PROSE_SECTIONS, report.PASSED, report.FAILED,
        report.NOT_ANSWERED, "chapter", "exercise", "status", "PASSED", "FAILED"))
    for exercise in EXERCISES.values():
        chapter = f"ch{exercise.chapter}"
        for mistake in exercise.mistakes:
            yield chapter, mistake.hint
        for hint in exercise.hints_by_kind.values():
            yield chapter, hint
        yield CORE, exercise.references_text
    for prediction in PREDICTIONS.values():
        chapter = f"ch{prediction_chapter(prediction.name)}"
        yield chapter, prediction.question
        yield chapter, prediction.why
        yield from ((chapter, text) for text in prediction.choices.values())


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


def messages() -> dict[str, list[str]]:
    """Every message by the .po file it belongs in, each once (the first file that has it)."""
    seen: set[str] = set()
    files: dict[str, list[str]] = {}
    for file, text in [*source_messages(), *runtime_messages()]:
        if text and text.strip() and text not in seen:
            seen.add(text)
            files.setdefault(file, []).append(text)
    return files


def po_path(file: str, language: str = CHINESE) -> Path:
    return FOLDER / language / f"{file}.po"


def update(language: str = CHINESE, only: tuple[str, ...] = ()) -> dict[str, int]:
    """Write every message into the language's .po files, keeping existing translations (found
    in any of its files); returns how many each file has left untranslated."""
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import read_po, write_po

    known: dict[str, str] = {}
    for path in sorted((FOLDER / language).glob("*.po")):
        with path.open("rb") as handle:
            known.update({str(m.id): str(m.string) for m in read_po(handle) if m.id and m.string})
    left: dict[str, int] = {}
    for file, texts in messages().items():
        if only and file not in only:
            continue
        catalog = Catalog(locale=language.replace("-", "_"), project="autodiff-course",
                          charset="utf-8")
        for text in texts:
            flags = ["python-brace-format"] if FIELD.search(text) else []
            catalog.add(text, known.get(text, ""), flags=flags)
        path = po_path(file, language)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as handle:
            write_po(handle, catalog, width=100, omit_header=True, sort_output=False)
        left[file] = sum(1 for text in texts if not known.get(text))
    return left
