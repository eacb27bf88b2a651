"""Which tests each tier runs (README "Running the tests"; the Makefile's test targets).

- `make test`: everything (ruff, pytest over tests/, nbval over solutions/ and course/).
- `make test-fast`: the tests not marked `slow` or `e2e` (`FAST`, a pytest `-m` expression).
- `make test-chapter CH=NN`: the fast tests that belong to chapter NN, and its solution
  notebook under nbval (`pytest --chapter NN`).

A test belongs to chapter NN when its file's name names the chapter (`test_check_ch03.py`), when
one of its parameters is the chapter's exercise or names the chapter's notebook or modules (its
id holds `03_unbroadcasting`), when its file in tests/coursekit/ tests a `coursekit` module the
chapter's solution notebook imports, or when it is that notebook (nbval). A new chapter's tests
are found by these rules, with no list to edit; tests/project/test_tiers.py checks that every
chapter's selection is not empty.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"
COURSEKIT_TESTS = ROOT / "tests" / "coursekit"

# The markers a test may carry to leave the fast tier (registered in pyproject.toml).
SLOW_MARKERS = ("slow", "e2e")
FAST = " and ".join(f"not {marker}" for marker in SLOW_MARKERS)

COURSEKIT_IMPORT = re.compile(r"\bcoursekit\.(\w+)")


@functools.cache
def chapter_notebooks() -> dict[str, str]:
    """Each chapter's number ("03") and its notebook's stem ("03_unbroadcasting")."""
    return {path.stem[:2]: path.stem for path in sorted(SOLUTIONS.glob("[0-9][0-9]_*.ipynb"))}


@functools.cache
def notebook_coursekit_modules(stem: str) -> frozenset[str]:
    """The `coursekit` modules a chapter's solution notebook imports ("broadcasting", ...)."""
    notebook = nbformat.read(SOLUTIONS / f"{stem}.ipynb", as_version=4)
    return frozenset(
        module
        for cell in notebook.cells
        if cell.cell_type == "code"
        for module in COURSEKIT_IMPORT.findall(cell.source)
    )


@functools.cache
def coursekit_modules_tested(path: Path) -> frozenset[str]:
    """The `coursekit` modules a file of tests/coursekit/ imports (read, not run). A chapter's
    own tests (tests/exercises/test_check_ch08.py) may import another chapter's helper: they
    belong to their chapter by name, not here."""
    if path.suffix != ".py" or path.parent != COURSEKIT_TESTS:
        return frozenset()
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return frozenset(name.split(".")[1] for name in names if name.startswith("coursekit."))


def chapter_or_error(chapter: str) -> str:
    """`--chapter`'s value, checked: the number of a chapter with a solution notebook."""
    notebooks = chapter_notebooks()
    if chapter not in notebooks:
        raise pytest.UsageError(
            f"--chapter {chapter!r}: no solution notebook solutions/{chapter}_*.ipynb; "
            f"give a chapter's two-digit number, one of {', '.join(notebooks)}"
        )
    return chapter


def belongs_to_chapter(item: pytest.Item, chapter: str) -> bool:
    """Whether a collected test (or notebook cell) is one of chapter `chapter`'s tests."""
    stem = chapter_notebooks()[chapter]
    path = Path(item.path)
    if path.stem == stem or re.search(rf"ch{chapter}(?!\d)", path.stem):
        return True
    callspec = getattr(item, "callspec", None)
    if callspec is not None:
        if stem in callspec.id:
            return True
        if any(getattr(value, "chapter", None) == chapter for value in callspec.params.values()):
            return True
    return bool(coursekit_modules_tested(path) & notebook_coursekit_modules(stem))


def select_chapter(items: list[pytest.Item], chapter: str) -> tuple[list, list]:
    """The items of `chapter`, and the others."""
    selected = [item for item in items if belongs_to_chapter(item, chapter)]
    kept = set(map(id, selected))
    return selected, [item for item in items if id(item) not in kept]
