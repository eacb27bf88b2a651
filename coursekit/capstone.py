"""Helpers for chapter 08 (the capstone): counting the lines of the learner's own tape.

The chapter says how long the tape that trained its network is; that number is counted
from the functions themselves (here), so the text never disagrees with the code.
"""

from __future__ import annotations

import ast
import inspect
import io
import textwrap
import tokenize
from collections.abc import Iterable
from typing import Any

_NOT_CODE = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
             tokenize.DEDENT, tokenize.ENDMARKER}


def _docstring_lines(tree: ast.AST) -> set[int]:
    """The line numbers of every docstring in the tree (they document, they do not run)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Module):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
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
