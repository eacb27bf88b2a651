"""Reading a submission's code, in the grader, for what reaches into the checks' interpreter.

The child runs the submitted cells and then the checks in ONE interpreter: the method checks
(m VJPs, no `jax.jacrev`), the refusal of the course's finished helpers and the references of
the exercises an exercise calls all live there, where code that finds them can switch them
off (`sys.modules["harness"].invoker = ...`, a frame's `f_globals`, `gc.get_objects()`). The
child binds what it can before any submitted cell runs (child.py), but in one process that
cannot be made airtight. So the decision is taken again here, where the submission cannot
reach: its source is parsed and every use of the interpreter's internals is found.

- REFUSED: names and attributes no answer of this course needs and every such attack uses
  (the grader's modules, `sys.modules` other than a membership test, frames, function
  internals, `gc`'s object walks, `ctypes`, dynamic imports). The submission's exercises
  score 0 with a message that names the cell and line; the gradebook's review column says why.
- FLAGGED: code a static reading cannot follow (`eval`, `exec`, `getattr` with a computed
  name, `globals()`, `__dict__`). Graded as usual; the review column names it, so the
  instructor looks before trusting the score.

Standard library only; a cell that does not parse is the child's to report (SyntaxError).
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass

from autograder.grading import slicing

# Modules whose import alone is refused: the grader's own (the child's harness and siblings),
# and the ways into the interpreter below Python.
REFUSED_MODULES = frozenset(
    {
        "harness",
        "ctypes",
        "_ctypes",
        "importlib",
        "__main__",
        "builtins",
        "_testcapi",
        "_testinternalcapi",
        "cffi",
    }
)
REFUSED_PREFIXES = ("grader_",)
# Attributes that lead from an object the learner holds to the grader's code and its globals.
REFUSED_ATTRIBUTES = frozenset(
    {
        "f_back",
        "f_globals",
        "f_locals",
        "f_builtins",
        "tb_frame",
        "tb_next",
        "gi_frame",
        "cr_frame",
        "ag_frame",
        "__globals__",
        "__closure__",
        "cell_contents",
        "__code__",
        "__subclasses__",
        "__builtins__",
        "__defaults__",
        "__kwdefaults__",
        "__loader__",
        "_getframe",
        "_current_frames",
        "settrace",
        "setprofile",
        "meta_path",
        "path_hooks",
        "path_importer_cache",
    }
)
# Functions of these modules that hand out frames or every live object.
REFUSED_FROM = {
    "sys": frozenset(
        {
            "modules",
            "path",
            "_getframe",
            "_current_frames",
            "settrace",
            "setprofile",
            "meta_path",
            "path_hooks",
            "path_importer_cache",
        }
    ),
    "gc": frozenset({"get_objects", "get_referrers", "get_referents", "garbage", "callbacks"}),
    "inspect": frozenset(
        {
            "currentframe",
            "stack",
            "trace",
            "getouterframes",
            "getinnerframes",
            "getclosurevars",
            "getmembers",
        }
    ),
    "traceback": frozenset({"walk_stack", "walk_tb"}),
}
REFUSED_NAMES = frozenset({"harness", "__builtins__", "__import__", "__loader__"})
FLAGGED_CALLS = frozenset({"eval", "exec", "compile", "globals", "locals", "vars"})
DYNAMIC_ATTRIBUTE_CALLS = frozenset({"getattr", "setattr", "delattr"})
FLAGGED_ATTRIBUTES = frozenset({"__dict__"})


@dataclass(frozen=True)
class Finding:
    """One use of the interpreter's internals: where, what, and whether it is refused."""

    cell: int  # 1-based, among the cells the grader runs (the program cells)
    line: int
    used: str  # as written: "sys.modules", "frame.f_globals", "eval"
    refused: bool

    def __str__(self) -> str:
        return f"cell {self.cell}, line {self.line}: {self.used}"


def read_findings(cells: list[str]) -> list[Finding]:
    """Every finding in these cells, refused ones first. Code too large for the grader to
    parse (slicing.SLICED_LIMIT) is one flagged finding: it was not read."""
    if sum(map(len, cells)) > slicing.SLICED_LIMIT:
        return [Finding(0, 0, "code too large to read", refused=False)]
    found = [
        Finding(index, line, used, refused)
        for index, cell in enumerate(cells, start=1)
        for line, used, refused in _cell_findings(cell)
    ]
    return sorted(found, key=lambda f: (not f.refused, f.cell, f.line))


@functools.lru_cache(maxsize=1024)
def _cell_findings(cell: str) -> tuple[tuple[int, str, bool], ...]:
    """(line, what, refused) for one cell; cached, since most cells are the course's own."""
    try:
        tree = slicing.parse_cell(cell)
    except (RecursionError, MemoryError):
        return ((1, "code nested too deeply to read", False),)
    if tree is None:
        return ()
    visitor = _Reader()
    visitor.visit(tree)
    return tuple(visitor.found)


class _Reader(ast.NodeVisitor):
    """Collects (line, what, refused) while walking one cell's tree."""

    def __init__(self) -> None:
        self.found: list[tuple[int, str, bool]] = []
        self.membership: set[int] = set()  # ids of `sys.modules` nodes in `x in sys.modules`

    def note(self, node: ast.AST, used: str, refused: bool) -> None:
        self.found.append((getattr(node, "lineno", 0), used, refused))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if _refused_module(alias.name):
                self.note(node, f"import {alias.name}", True)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level == 0 and _refused_module(module):
            self.note(node, f"from {module} import ...", True)
            return
        top = module.split(".")[0]
        for alias in node.names:
            if alias.name in REFUSED_FROM.get(top, ()) or alias.name in REFUSED_ATTRIBUTES:
                self.note(node, f"from {module} import {alias.name}", True)

    def visit_Compare(self, node: ast.Compare) -> None:
        for operator, right in zip(node.ops, node.comparators, strict=True):
            if (
                isinstance(operator, ast.In | ast.NotIn)
                and slicing.dotted_name(right) == "sys.modules"
            ):
                self.membership.add(id(right))  # `"google.colab" in sys.modules` reads a key
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        dotted = slicing.dotted_name(node)
        root = dotted.split(".")[0]
        if node.attr in REFUSED_ATTRIBUTES:
            self.note(node, dotted, True)
        elif node.attr in REFUSED_FROM.get(root, ()) and dotted.count(".") == 1:
            if id(node) not in self.membership:
                self.note(node, dotted, True)
        elif node.attr in FLAGGED_ATTRIBUTES:
            self.note(node, dotted, False)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in REFUSED_NAMES or node.id.startswith(REFUSED_PREFIXES):
            self.note(node, node.id, True)

    def visit_Call(self, node: ast.Call) -> None:
        name = node.func.id if isinstance(node.func, ast.Name) else ""
        if name in FLAGGED_CALLS:
            self.note(node, f"{name}(...)", False)
        elif name in DYNAMIC_ATTRIBUTE_CALLS and len(node.args) >= 2:
            attribute = node.args[1]
            if not (isinstance(attribute, ast.Constant) and isinstance(attribute.value, str)):
                self.note(node, f"{name}(..., <computed name>)", False)
            elif attribute.value in REFUSED_ATTRIBUTES or attribute.value in REFUSED_FROM.get(
                slicing.dotted_name(node.args[0]), ()
            ):
                self.note(node, f"{name}(..., {attribute.value!r})", True)
        self.generic_visit(node)


def _refused_module(name: str) -> bool:
    top = name.split(".")[0]
    return top in REFUSED_MODULES or top.startswith(REFUSED_PREFIXES)
