"""Which frameworks each chapter's warm children import, derived from the exercises'
declarations without importing them.

start.py needs this before numpy and the exercises are imported (that is its point: a
TensorFlow child's import overlaps the grader's own), so the chapter modules' source is read
with `ast`: each `Exercise(...)` call's `frameworks=`, a literal tuple of strings or a
module-level name bound to one. tests/grading keeps this equal to what the imported
exercises declare; a declaration it cannot read is an error that names the exercise.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

EXERCISES = Path(__file__).resolve().parents[1] / "exercises"


@functools.cache
def course_chapters(folder: Path = EXERCISES) -> frozenset[str]:
    """The chapters that have graded exercises ("00" ... "08"), by their modules' names."""
    return frozenset(path.name[2:4] for path in folder.glob("ch[0-9][0-9]_*.py"))


@functools.cache
def warm_groups(folder: Path = EXERCISES) -> dict[str, tuple[str, ...]]:
    """Chapter -> the frameworks its framework exercises allow (sorted). The numpy chapters
    have none: a numpy child starts in a tenth of a second, warm or not."""
    groups = {chapter: warm_group(chapter, folder) for chapter in sorted(course_chapters(folder))}
    return {chapter: group for chapter, group in groups.items() if group is not None}


@functools.cache
def warm_group(chapter: str, folder: Path = EXERCISES) -> tuple[str, ...] | None:
    """The frameworks chapter `chapter`'s framework exercises allow (sorted), or None.

    start.py asks for the batch's chapter only, before its warm children start: reading
    every chapter's module took 57 ms of grading one submission (one chapter's, 10 ms)."""
    sets: set[tuple[str, ...]] = set()
    for path in sorted(folder.glob(f"ch{chapter}_*.py")):
        sets |= {frameworks for frameworks in _declared_frameworks(path) if frameworks}
    if len(sets) > 1:
        raise ValueError(
            f"chapter {chapter}: exercises allow different frameworks {sorted(sets)};"
            " a chapter's warm children import one set."
        )
    return sets.pop() if sets else None


def _declared_frameworks(path: Path) -> list[tuple[str, ...]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    constants = {
        target.id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    found = []
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and (_names_exercise(call) or _partial_exercise(call))):
            continue
        keywords = {k.arg: k.value for k in call.keywords}
        if "frameworks" in keywords:
            found.append(_literal(keywords["frameworks"], constants, keywords, path))
    return found


def _names_exercise(call: ast.Call) -> bool:
    return getattr(call.func, "id", "") == "Exercise"


def _partial_exercise(call: ast.Call) -> bool:
    """`functools.partial(Exercise, ..., frameworks=...)`: a chapter's shared declaration."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    first = call.args[0] if call.args else None
    return name == "partial" and isinstance(first, ast.Name) and first.id == "Exercise"


def _literal(
    node: ast.expr, constants: dict[str, ast.expr], keywords: dict[str, ast.expr], path: Path
) -> tuple[str, ...]:
    if isinstance(node, ast.Name) and node.id in constants:
        node = constants[node.id]
    try:
        value = ast.literal_eval(node)
    except ValueError:
        value = None
    if not (isinstance(value, (tuple, list)) and all(isinstance(v, str) for v in value)):
        name = keywords.get("name")
        label = name.value if isinstance(name, ast.Constant) else f"line {node.lineno}"
        raise ValueError(
            f"{path.name}: the exercise {label!r} declares `frameworks=` as "
            "something other than a literal tuple of strings (or a module-level "
            "name bound to one); start.py reads it without importing the module."
        )
    return tuple(sorted(value))
