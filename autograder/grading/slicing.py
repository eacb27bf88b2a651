"""Which of a submission's statements the grader's child runs: what the exercises need.

A chapter notebook is mostly demonstration: plots, timings, framework calls that show an
idea. Running all of it costs the child 20-40 s in chapters 05 and 06 (JAX compiles every
demo), more than executing the whole notebook with nbconvert, and none of it can change a
verdict unless an exercise reads what it defines. So the grader runs:

- every exercise cell, whole, and every cell that does not parse (its SyntaxError is
  reported as before);
- in the other cells, the top-level statements that bind a name that a kept statement reads
  (found backwards, to a fixed point), that change something a kept statement reads
  (`table[k] = ...`, `np.allclose = ...`, `cache.append(...)`), or that configure the
  process (`jax.config.update(...)`, `os.environ[...] = ...`, `np.random.seed(...)`).

Names are over-approximated: every name a kept statement reads anywhere, function bodies
included, counts as needed, so a helper, a constant or an import the learner's rule uses is
always kept. Skipped statements become blank lines, so line numbers in tracebacks and cell
numbers in reports stay those of the notebook.
"""

from __future__ import annotations

import ast
import functools
import re
import threading
from dataclasses import dataclass

from autograder.sandbox.confined.submitted import MAGIC

CONFIGURING = re.compile(
    r"(^|\.)(config|environ|seterr|set_printoptions|seed|filterwarnings|simplefilter|"
    r"set_visible_devices)(\.|$)"
)
# CPython 3.11 counts the depth of the AST it builds per interpreter, not per thread: when
# two threads build one at once (a finalizer that runs during one build lets the other
# thread in), the check at the end raises "SystemError: AST constructor recursion depth
# mismatch". The grader's threads parse cells here, and the standard library parses too:
# traceback formatting calls ast.parse to place its ^^^ markers. See serialize_parsing.
PARSING = threading.RLock()
LINE_BREAK = re.compile(r"\r\n|\r|\n")
# Submitted code is parsed in the grader, so its size bounds the grader's memory: a 5 MB cell
# of one-line statements made the grader peak at 3.5 GB when every tree was cached. A course
# notebook holds under 20 KB of code: above SLICED_LIMIT the child runs every cell whole (its
# own time and memory pay, never the grader's), and only cells up to CACHED_LIMIT (the course's
# own, met in every submission) are remembered, without their trees.
SLICED_LIMIT = 512 * 1024
CACHED_LIMIT = 16 * 1024
# Builtins whose methods, and the methods of what they return, change nothing a cell reads
# (`str(err).split(", ")` makes a new string; `dict.fromkeys(...)` a new dict): a statement
# calling one is not kept for it, unless the notebook binds that name itself. Without this,
# an answer that reads `str` or `list` (`isinstance(v, list)`) kept every demo statement
# that formats a string, and with them the imports those demos read: chapter 04's setup
# cell then ran `import jax`, which a TensorFlow child refuses, before `import tensorflow
# as tf`, and a right answer scored 0 with "name 'tf' is not defined".
FRESH_BUILTINS = frozenset(
    {
        "str",
        "repr",
        "format",
        "int",
        "float",
        "bool",
        "complex",
        "bytes",
        "list",
        "tuple",
        "dict",
        "set",
        "frozenset",
        "sorted",
        "len",
        "abs",
        "round",
        "range",
    }
)
SCOPES = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Lambda,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


def needed_cells(cells: list[str], exercise_cells: set[int], names: list[str]) -> list[str]:
    """The cells (same count, same line numbers) with only what the exercises need.

    `exercise_cells` holds 1-based positions; `names` the exercise functions' names. Cells
    are submitted code: one nested deeply enough to exhaust the parser or this analysis
    (RecursionError, MemoryError) makes the child run every cell whole, as before slicing,
    so it costs the submission time, never a grading error; so does code larger than
    SLICED_LIMIT, which is not parsed here at all."""
    if sum(map(len, cells)) > SLICED_LIMIT:
        return list(cells)
    try:
        return _sliced(cells, exercise_cells, names)
    except (RecursionError, MemoryError):
        return list(cells)


def _sliced(cells: list[str], exercise_cells: set[int], names: list[str]) -> list[str]:
    analysed = [_analysed(cell) for cell in cells]
    whole = {i for i, cell in enumerate(analysed) if cell is None or i + 1 in exercise_cells}
    needed = set(names).union(*(analysed[i].reads for i in whole if analysed[i] is not None))
    modules = set().union(*(cell.imported for cell in analysed if cell is not None))
    bound = set().union(
        *(s.binds for cell in analysed if cell is not None for s in cell.statements)
    )
    modules |= FRESH_BUILTINS - bound  # called on, never changed (see FRESH_BUILTINS)
    kept: set[tuple[int, int]] = set()
    changed = True
    while changed:  # a kept statement may need a name bound in a later cell
        changed = False
        for i in reversed(range(len(cells))):
            if i in whole:
                continue
            for j, statement in reversed(list(enumerate(analysed[i].statements))):
                if (i, j) not in kept and statement.kept_for(needed, modules):
                    kept.add((i, j))
                    needed |= statement.reads
                    changed = True
    return [
        cell if i in whole else _only(cell, analysed[i].spans, {j for k, j in kept if k == i})
        for i, cell in enumerate(cells)
    ]


@dataclass(frozen=True)
class _Statement:
    """What the slicing needs to know of one top-level statement, found once."""

    binds: frozenset[str]
    reads: frozenset[str]
    configures: bool  # jax.config.update(...), os.environ[...] = ..., np.random.seed(...)
    stored_into: frozenset[str]  # roots of `root.attr = ...`, `root[k] = ...`
    called_on: frozenset[str]  # roots of `root.method(...)`

    def kept_for(self, needed: set[str], modules: set[str]) -> bool:
        """Whether it binds, changes or configures something a kept statement reads."""
        return bool(
            self.configures
            or self.binds & needed
            or self.stored_into & needed
            or (self.called_on - modules) & needed
        )


@dataclass(frozen=True)
class _Cell:
    spans: tuple[tuple[int, int], ...]  # each statement's first and last line, decorators included
    statements: tuple[_Statement, ...]
    reads: frozenset[str]
    imported: frozenset[str]


def _analysed(cell: str) -> _Cell | None:
    """The cell's statements, analysed; None when it does not parse. A cell up to
    CACHED_LIMIT is cached by its text: most cells are the course's own, the same in every
    submission of a grading run, and the parent's work per submission is serial under the
    GIL (it limits --jobs)."""
    return _analysed_cached(cell) if len(cell) <= CACHED_LIMIT else _analysis(cell)


@functools.lru_cache(maxsize=4096)
def _analysed_cached(cell: str) -> _Cell | None:
    return _analysis(cell)


def _analysis(cell: str) -> _Cell | None:
    tree = _parse(cell)
    if tree is None:
        return None
    statements = tuple(_statement(statement) for statement in tree.body)
    spans = tuple(
        (min([s.lineno] + [d.lineno for d in getattr(s, "decorator_list", [])]), s.end_lineno)
        for s in tree.body
    )
    return _Cell(
        spans,
        statements,
        frozenset().union(*(s.reads for s in statements)),
        frozenset(_imported(tree)),
    )


def _statement(statement: ast.stmt) -> _Statement:
    configures, stored_into, called_on = False, set(), set()
    for node in _top_level_nodes(statement):
        if isinstance(node, ast.Attribute | ast.Subscript) and isinstance(node.ctx, ast.Store):
            dotted = dotted_name(node)
            stored_into.add(dotted.split(".")[0])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            dotted = dotted_name(node.func)
            called_on.add(dotted.split(".")[0])
        else:
            continue
        configures = configures or bool(CONFIGURING.search(dotted))
    return _Statement(
        frozenset(_binds(statement)),
        frozenset(_reads(statement)),
        configures,
        frozenset(stored_into),
        frozenset(called_on),
    )


def serialize_parsing() -> None:
    """Make every `ast.parse` in this process take PARSING, so no two run at once.

    The grader calls it before it grades submissions in threads (`--jobs`): a parse in one
    thread and a traceback formatted in another made the grader fail on a submission with
    that SystemError (seen with --jobs 2 under load; tests/grading/test_slicing.py checks the lock).
    Parsing takes milliseconds, so the lock costs nothing measurable."""
    if getattr(ast.parse, "serialized", False):
        return
    unlocked = ast.parse

    @functools.wraps(unlocked)
    def parse(*args, **kwargs):
        with PARSING:
            return unlocked(*args, **kwargs)

    parse.serialized = True
    ast.parse = parse


def _parse(cell: str) -> ast.Module | None:
    try:
        return parse_cell(cell)
    except (RecursionError, MemoryError):  # the child reports it
        return None


def parse_cell(cell: str) -> ast.Module | None:
    """The cell's tree as the child compiles it (magics blanked), None for a SyntaxError;
    RecursionError or MemoryError for code nested past the parser's limits."""
    try:
        with PARSING:
            return ast.parse(MAGIC.sub(lambda m: f"{m.group(1)}pass", cell))
    except (SyntaxError, ValueError):  # the child reports it
        return None


def _reads(node: ast.AST) -> set[str]:
    """The global names `node` may read: a function's own parameters and locals are left
    out (a learner's `tape` or `x` inside a function needs no cell that binds `tape`), but
    every name it reads from outside counts, whether it is called or not."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        return _outer_reads(node) | _function_reads(node)
    if isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
        targets = {
            n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)
        }
        return set().union(*map(_reads, ast.iter_child_nodes(node))) - targets
    if isinstance(node, ast.Name):
        return {node.id} if isinstance(node.ctx, ast.Load) else set()
    if isinstance(node, ast.Global):
        return set(node.names)
    return set().union(*map(_reads, ast.iter_child_nodes(node)))


def _outer_reads(function: ast.AST) -> set[str]:
    """What a def or lambda evaluates where it is defined: decorators and default values."""
    outer = [
        *getattr(function, "decorator_list", []),
        *function.args.defaults,
        *(d for d in function.args.kw_defaults if d is not None),
    ]
    return set().union(*map(_reads, outer))


def _function_reads(function: ast.AST) -> set[str]:
    body = function.body if isinstance(function.body, list) else [function.body]
    arguments = function.args
    params = {
        a.arg
        for a in [
            *arguments.posonlyargs,
            *arguments.args,
            *arguments.kwonlyargs,
            *filter(None, [arguments.vararg, arguments.kwarg]),
        ]
    }
    declared = {
        n
        for statement in body
        for node in ast.walk(statement)
        if isinstance(node, ast.Global)
        for n in node.names
    }
    local = (
        params
        | {n for statement in body if isinstance(statement, ast.stmt) for n in _binds(statement)}
    ) - declared
    return set().union(*map(_reads, body)) - local


def _imported(tree: ast.Module) -> set[str]:
    return {
        _alias_name(alias)
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }


def _alias_name(alias: ast.alias) -> str:
    return alias.asname or alias.name.split(".")[0]


def _binds(statement: ast.stmt) -> set[str]:
    """The names a top-level statement binds in the notebook's namespace (not its locals)."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {statement.name}
    bound: set[str] = set()
    pending: list[ast.AST] = [statement]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            bound.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound |= {_alias_name(alias) for alias in node.names}
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        if node is statement or not isinstance(node, SCOPES):
            pending.extend(ast.iter_child_nodes(node))
    return bound


def _top_level_nodes(statement: ast.stmt) -> list[ast.AST]:
    """The statement's nodes outside any function or class body it defines."""
    found, pending = [], [statement]
    while pending:
        node = pending.pop()
        found.append(node)
        if node is statement or not isinstance(node, SCOPES):
            pending.extend(ast.iter_child_nodes(node))
    return found


def dotted_name(node: ast.AST) -> str:
    """The dotted name of `np.random.seed` ("np.random.seed"); subscripts and calls on the way are
    skipped (`table[k].x` -> "table.x"), and a root that is not a name reads "?"."""
    parts = []
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
        node = node.func if isinstance(node, ast.Call) else node.value
    parts.append(node.id if isinstance(node, ast.Name) else "?")
    return ".".join(reversed(parts))


def _only(cell: str, spans: tuple[tuple[int, int], ...], kept: set[int]) -> str:
    """The cell with every statement not kept blanked out, line numbers unchanged."""
    lines = LINE_BREAK.split(cell)  # as the parser counts lines (not str.splitlines)
    keep = [False] * len(lines)
    for j in kept:
        first, last = spans[j]
        for line in range(first - 1, last):
            keep[line] = True
    return "\n".join(line if keep[k] else "" for k, line in enumerate(lines))
