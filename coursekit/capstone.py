"""Helpers for chapter 08 (the capstone): counting the lines of the learner's own code.

The chapter says how long the engine, model, loss and training loop that trained its network
are; that number is counted from the functions themselves (here), so the text never disagrees
with the code, and never from a stub the learner has not answered yet.
"""

from __future__ import annotations

import ast
import inspect
import io
import textwrap
import tokenize
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

_NOT_CODE = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENDMARKER,
}


STUB = 'raise NotImplementedError("Exercise '  # what a learner copy's unanswered block holds


def _docstring_lines(tree: ast.AST) -> set[int]:
    """The line numbers of every docstring in the tree (they document, they do not run)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Module):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                lines.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    return lines


def source_code_lines(source: str) -> int:
    """Lines of `source` holding code: no blank lines, comments or docstrings."""
    source = textwrap.dedent(source)
    skip = _docstring_lines(ast.parse(source))
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return len({t.start[0] for t in tokens if t.type not in _NOT_CODE} - skip)


def _sources(obj: Any) -> Iterable[str]:
    """A function's source; for a class (whose source a notebook cannot give back), its
    header line and the source of each method."""
    if inspect.isclass(obj):
        yield f"class {obj.__name__}: ..."
        for member in vars(obj).values():
            if inspect.isfunction(member):
                yield inspect.getsource(member)
    else:
        yield inspect.getsource(obj)


def code_lines(*objects: Any) -> int:
    """The lines of code of these functions and classes (defined in a notebook or a module)."""
    return sum(source_code_lines(source) for obj in objects for source in _sources(obj))


@dataclass(frozen=True)
class Count:
    """Lines of code counted, and what could not be: names not defined, unanswered stubs."""

    lines: int
    missing: list[str] = field(default_factory=list)


def _cell(obj: Any) -> str | None:
    """The file (in a notebook, the cell) that defined a function or a class."""
    if inspect.isclass(obj):
        methods = [m for m in vars(obj).values() if inspect.isfunction(m)]
        return methods[0].__code__.co_filename if methods else None
    code = getattr(obj, "__code__", None)
    return code.co_filename if code is not None else None


def _is_stub(obj: Any) -> bool:
    return any(STUB in source for source in _sources(obj))


def _is_placeholder(obj: Any) -> bool:
    """A function whose body is its docstring alone (a cell's "paste here" marker)."""
    if not inspect.isfunction(obj):
        return False
    (node,) = ast.parse(textwrap.dedent(inspect.getsource(obj))).body
    return (
        len(node.body) == 1
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    )


def own_code_lines(
    namespace: Mapping[str, Any], names: Iterable[str] = (), functions: Iterable[Any] = ()
) -> Count:
    """The lines of code of `functions` and of every function and class defined in the same
    cells as the objects `names` name in `namespace` (the cells where a learner pasted an
    engine, its helpers included). A name not in `namespace`, or an object still holding a
    learner copy's stub, is `missing` and not counted."""
    missing = [name for name in names if name not in namespace]
    cells = {_cell(namespace[name]) for name in names if name in namespace} - {None}
    found = {
        id(obj): obj
        for obj in namespace.values()
        if (inspect.isfunction(obj) or inspect.isclass(obj)) and _cell(obj) in cells
    }
    found.update((id(obj), obj) for obj in functions)
    lines = 0
    for obj in found.values():
        if _is_stub(obj):
            missing.append(obj.__name__)
        elif not _is_placeholder(obj):
            lines += code_lines(obj)
    return Count(lines, missing)
