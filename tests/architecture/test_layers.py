"""The grader never depends on the teaching helpers: no module of `autograder` imports
`coursekit` (a learner's UI must be free to change without touching grading)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_no_grader_module_imports_coursekit():
    offenders = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "autograder").rglob("*.py"))
        if any(name.split(".")[0] == "coursekit" for name in imported_modules(path))
    ]
    assert offenders == []


def test_the_check_of_this_test_can_fail(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    from coursekit.fixes import measure_fixes\n")
    assert "coursekit.fixes" in imported_modules(sample)
