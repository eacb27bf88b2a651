"""The package's layout keeps the architecture visible: each folder imports only the folders
its `__init__` says it may, no modules import each other in a circle (annotation-only imports
under `if TYPE_CHECKING:` count: they hide the same knot), the confined child's code imports
nothing of the grader, and no module outside the exercise tables grows past about 450 lines."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "autograder"
# Concern -> the other concerns its modules may import. "top" is autograder's own modules
# (check, cli, __main__), which put the concerns together.
MAY_IMPORT: dict[str, set[str]] = {
    "locale": set(),  # what the checks and the grader say, in English and Chinese
    "harness": set(),  # it also runs in the confined child, beside child.py
    "sandbox.confined": set(),  # copied into the child's folder: no grader at all
    "sandbox": {"sandbox.confined"},
    "judging": {"harness", "locale"},
    "exercises": {"judging", "harness", "locale"},
    "notebook": {"judging", "exercises", "authoring", "locale"},
    "authoring": {"exercises", "locale"},
    "grading": {"judging", "exercises", "harness", "sandbox", "sandbox.confined", "locale"},
    "top": {
        "harness",
        "sandbox.confined",
        "sandbox",
        "judging",
        "exercises",
        "notebook",
        "authoring",
        "grading",
        "locale",
    },
}
# Imports allowed inside a function only (never when the module loads): an Exercise looks
# up the exercises it calls in the registry, whose modules import judging themselves.
LAZY_ONLY = {("judging", "exercises")}
# Long tables of declarations, not modules of many concerns.
TABLES = {f"exercises/{path.name}" for path in (PACKAGE / "exercises").glob("ch*.py")}
MAX_LINES = 450


def concern(module: str) -> str:
    """autograder.grading.rounds -> "grading"; autograder.sandbox.confined.wire ->
    "sandbox.confined"; autograder.check or autograder itself -> "top"."""
    parts = module.split(".")[1:]
    if parts[:2] == ["sandbox", "confined"]:
        return "sandbox.confined"
    if parts and (PACKAGE / parts[0]).is_dir():
        return parts[0]
    return "top"


def modules() -> list[tuple[str, Path]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found.append((".".join(parts).removesuffix(".__init__"), path))
    return found


def imports(module: str, path: Path) -> list[tuple[str, bool]]:
    """(the autograder module each import names, whether it runs when the module loads)."""
    return [(name, at_load) for name, at_load, _ in _imports(module, path)]


def _imports(module: str, path: Path) -> list[tuple[str, bool, bool]]:
    """(the autograder module each import names, whether it runs when the module loads,
    whether it is in a function: a deliberate lazy import, not a dependency of the module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top_level = {id(node) for node in tree.body}
    in_functions = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for inner in ast.walk(node)
    }
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1]
                    + ([node.module] if node.module else [])
                )
            names = [_named(base, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        found += [
            (name, id(node) in top_level, id(node) in in_functions)
            for name in names
            if name.split(".")[0] == "autograder"
        ]
    return found


def module_graph() -> dict[str, set[str]]:
    """Module -> the autograder modules it imports outside functions: when it loads, or
    for annotations only (`if TYPE_CHECKING:`). A package stands for its `__init__`, where
    a name imported from it (`from autograder.exercises import for_chapter`) is defined."""
    known = {module for module, _ in modules()}
    graph: dict[str, set[str]] = {}
    for module, path in modules():
        graph[module] = {
            name
            for name, _, lazy in _imports(module, path)
            if not lazy and name in known and name != module
        }
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan's algorithm), each
    sorted: modules that import each other, however indirectly."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in sorted(graph.get(module, ())):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = []
            while (member := stack.pop()) != module:
                group.append(member)
            if group:
                found.append(sorted([module, *group]))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def _named(base: str, name: str) -> str:
    """What `from base import name` imports: the submodule when `name` is one, else base."""
    candidate = PACKAGE.parent / f"{base}.{name}".replace(".", "/")
    is_module = candidate.is_dir() or candidate.with_suffix(".py").is_file()
    return f"{base}.{name}" if is_module else base


def test_each_concern_imports_only_what_its_folder_allows():
    wrong = []
    for module, path in modules():
        here = concern(module)
        for name, at_load in imports(module, path):
            there = concern(name)
            if there == here:
                continue
            lazy_ok = (here, there) in LAZY_ONLY and not at_load
            if there not in MAY_IMPORT[here] and not lazy_ok:
                wrong.append(
                    f"{module} imports {name} ({here} may import "
                    f"{sorted(MAY_IMPORT[here]) or 'nothing of the grader'})"
                )
    assert not wrong, "\n".join(wrong)


def test_no_modules_import_each_other_in_a_circle():
    """A circle, even through annotations only, means two modules cannot be understood, or
    moved, one without the other: a type that both need belongs in a module below both."""
    found = circles(module_graph())
    assert not found, "modules importing each other: " + "; ".join(
        " <-> ".join(group) for group in found
    )


def test_the_confined_code_imports_the_standard_library_and_numpy_only():
    """The child runs these files from its own folder, where no grader is to be found."""
    # pyseccomp: the optional seccomp binding confine.py uses where it is installed.
    allowed = set(sys.stdlib_module_names) | {"numpy", "pyseccomp", "__future__"}
    for path in sorted((PACKAGE / "sandbox" / "confined").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert node.level == 0 or path.name == "__init__.py", (path.name, node.module)
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                assert name.split(".")[0] in allowed, f"{path.name} imports {name}"


def test_every_folder_says_what_it_holds_and_may_import():
    for folder in sorted(p.parent for p in PACKAGE.rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text())) or ""
        assert len(doc.split()) >= 15, f"{folder}: its __init__ docstring says too little"
        if folder.name not in ("autograder", "exercises", "harness"):
            assert "import" in doc, f"{folder}: say what this folder may import"


@pytest.mark.parametrize(("module", "path"), modules(), ids=[m for m, _ in modules()])
def test_no_module_outside_the_exercise_tables_is_long(module, path):
    if path.relative_to(PACKAGE).as_posix() in TABLES:
        return
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{module}: {lines} lines; split it by concern"


def test_the_rule_itself_catches_a_wrong_direction(tmp_path, monkeypatch):
    """The checker sees an import it must refuse (the sandbox importing the grading)."""
    fake = tmp_path / "autograder" / "sandbox"
    fake.mkdir(parents=True)
    (tmp_path / "autograder" / "grading").mkdir()
    (fake / "bad.py").write_text("from autograder.grading import rounds\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "autograder")
    refused = r"autograder\.sandbox\.bad imports autograder\.grading"
    with pytest.raises(AssertionError, match=refused):
        test_each_concern_imports_only_what_its_folder_allows()


def test_the_circle_rule_catches_an_annotation_only_circle(tmp_path, monkeypatch):
    """Two modules that import each other, one of them under `if TYPE_CHECKING:` only, are a
    circle; the same import inside a function (a lazy one) is not."""
    fake = tmp_path / "autograder" / "sandbox"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "pools.py").write_text("from autograder.sandbox import runner\n")
    (fake / "runner.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from autograder.sandbox.pools import Pool\n"
    )
    (fake / "lazy.py").write_text("def f():\n    from autograder.sandbox import pools\n")
    (fake / "uses_lazy.py").write_text("from autograder.sandbox import lazy\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "autograder")
    assert circles(module_graph()) == [["autograder.sandbox.pools", "autograder.sandbox.runner"]]
    with pytest.raises(AssertionError, match=r"sandbox\.pools <-> autograder\.sandbox\.runner"):
        test_no_modules_import_each_other_in_a_circle()
