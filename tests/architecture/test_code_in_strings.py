"""No Python source sits in string literals under autograder/ or benchmarks/.

Code run with `exec` from a string is invisible to ruff, coverage and readers; code the
grader's child needs lives in the harness package instead, and the bench's latency child is
a module of its own (benchmarks/latency.py). A string counts as code when it parses as two
or more statements with a function or class definition or a `return` among them: templates
with `{{}}` and f-strings are checked too, with their fields as names.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

import autograder
import benchmarks

PACKAGES = {
    "autograder": Path(autograder.__file__).parent,
    "benchmarks": Path(benchmarks.__file__).parent,
}
CODE_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Return)
# Strings that look like code but are data, each with the reason; keyed by
# (path relative to the repository, the string's first line). None are needed today: hints
# quote code in backticks, single statements at most.
DATA: dict[tuple[str, str], str] = {}


def is_code(text: str) -> bool:
    """Whether `text` is Python source with definitions or returns (not a hint or a formula)."""
    try:
        tree = ast.parse(textwrap.dedent(text))
    except (SyntaxError, ValueError):
        return False
    nodes = list(ast.walk(tree))
    statements = sum(isinstance(node, ast.stmt) for node in nodes)
    return statements >= 2 and any(isinstance(node, CODE_NODES) for node in nodes)


def _texts(tree: ast.AST) -> list[tuple[int, str]]:
    """Every string constant, and every f-string with its fields read as the name `_`."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append((node.lineno, node.value))
        elif isinstance(node, ast.JoinedStr):
            parts = [v.value if isinstance(v, ast.Constant) else "_" for v in node.values]
            found.append((node.lineno, "".join(parts)))
    return found


def test_the_detector_knows_code_from_data():
    assert is_code("def invoke(fn, *args):\n    return fn(*args)\n")
    assert is_code("VARIABLES = {variables}\n_GRAPHS = {{}}\n\ndef invoke(fn):\n    pass\n")
    assert is_code("lead = g.ndim - len(shape)\nreturn g.sum(axis=tuple(range(lead)))\n")
    assert not is_code("v3 = mul(v0, v1); v4 = sum(v3, axis=0)")  # a chapter 02 program
    assert not is_code("return value")
    assert not is_code("Define it as `def grad_fn(g, variables=None)`.")


@pytest.mark.parametrize("package", list(PACKAGES))
def test_no_python_source_in_string_literals(package):
    found = []
    root = PACKAGES[package].parent
    for path in sorted(PACKAGES[package].rglob("*.py")):
        name = path.relative_to(root).as_posix()
        for line, text in _texts(ast.parse(path.read_text(), name)):
            first = text.strip().splitlines()[0] if text.strip() else ""
            if is_code(text) and (name, first) not in DATA:
                found.append(f"{name}:{line}: {first[:60]}")
    assert not found, "Python source in strings (move it into a module):\n" + "\n".join(found)
