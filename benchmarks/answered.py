"""Fully answered submissions, what a class hands in at its deadline: the bench's judged batches.

Every exercise cell holds an answer, none the course's stub. Built from the solution notebook:
a right answer is the solution's cell as it is; a wrong one is the same cell with the answer
wrapped (late_wrong.py) so that it gives right values on its first calls and wrong ones from
a late case on, which costs the grader every case and the judging of a failure. The batch
cycles through submissions with every answer right, every answer wrong, and half of each, so
most of a batch is right, as most of a class is.

The bench's mixed batches (bench.write_batch: some cells left as the stub) are reported beside
these; the targets are judged on these.
"""

from __future__ import annotations

import ast
import copy
import csv
import inspect
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
from nbformat import NotebookNode

from benchmarks import bench, late_wrong

# Which exercise cells (by position among them) each submission answers wrongly.
PLANS = ("none", "all", "none", "even", "none", "odd")


def wrong_plan(cells: int, count: int) -> list[set[int]]:
    """The wrong cells of each of `count` submissions, cycling through PLANS."""
    sets = {
        "none": set(),
        "all": set(range(cells)),
        "even": set(range(0, cells, 2)),
        "odd": set(range(1, cells, 2)),
    }
    return [sets[PLANS[k % len(PLANS)]] for k in range(count)]


def _template() -> dict[str, ast.stmt]:
    """late_wrong.py's top-level definitions by name."""
    tree = ast.parse(inspect.getsource(late_wrong))
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


class _Renamer(ast.NodeTransformer):
    """Renames names, and puts a constant in place of a name of `constants`."""

    def __init__(self, names: dict[str, str], constants: dict[str, Any]) -> None:
        self.names, self.constants = names, constants

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id in self.constants:
            return ast.copy_location(ast.Constant(self.constants[node.id]), node)
        node.id = self.names.get(node.id, node.id)
        return node


def _call_arguments(arguments: ast.arguments) -> tuple[list[ast.expr], list[ast.keyword]]:
    """How the wrapper passes its parameters (the solution's own) on to the solution."""
    positional: list[ast.expr] = [
        ast.Name(a.arg, ast.Load()) for a in [*arguments.posonlyargs, *arguments.args]
    ]
    if arguments.vararg:
        positional.append(ast.Starred(ast.Name(arguments.vararg.arg, ast.Load()), ast.Load()))
    keywords = [ast.keyword(a.arg, ast.Name(a.arg, ast.Load())) for a in arguments.kwonlyargs]
    if arguments.kwarg:
        keywords.append(ast.keyword(None, ast.Name(arguments.kwarg.arg, ast.Load())))
    return positional, keywords


def _definition(source: str, name: str) -> ast.FunctionDef:
    """The cell's top-level definition of the exercise's function."""
    tree = ast.parse(source)
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    if not found:
        raise ValueError(f"the cell defines no top-level function {name!r}")
    return found[-1]


@dataclass(frozen=True)
class Late:
    """When an exercise's wrong answer turns wrong: from the first call with an argument of
    `shape` (the shape of the hidden cases that is new latest: traced and compiled answers
    see shapes, once each), or else after `calls` calls (one per case, for a list of
    hidden cases of one shape)."""

    shape: tuple[int, ...] | None
    calls: int


NEVER = 10**9  # calls: a count the grader never reaches


def late_point(cases: Sequence[Any], every_case: Sequence[tuple[int, ...]] = ()) -> Late:
    """The latest case that brings an array shape no earlier case has, and that shape (the
    first argument's when it is new); else the count of calls before the last case. A shape
    of `every_case`, which a check's own program gives the answer for every case, is never
    the late one: an answer wrong on it would be wrong from the first case."""
    seen: set[tuple[int, ...]] = set()
    found: tuple[int, ...] | None = None
    for index, case in enumerate(cases):
        shapes = [tuple(array.shape) for array in case.arrays().values()]
        new = [shape for shape in shapes if shape not in seen and shape not in every_case]
        if index and new:
            found = new[0]
        seen.update(shapes)
    return Late(found, NEVER) if found is not None else Late(None, max(1, len(cases) - 1))


# Chapter 06's harness DERIVATIVE_BUCKET, kept equal by a test: importing the harness would
# import JAX here.
BESSEL_BUCKET = 16


def shapes_of_every_case(name: str) -> tuple[tuple[int, ...], ...]:
    """The shapes an exercise's check gives the answer whatever the case: chapter 06 runs
    bessel_i0e's derivatives on x flattened and padded to a bucket (BESSEL_BUCKET elements,
    or a larger power of two), in one program for every case."""
    if name != "bessel_i0e":
        return ()
    return tuple((BESSEL_BUCKET << k,) for k in range(8))


def wrong_late_code(source: str, name: str, late: Late) -> str:
    """What a right cell defining `name` gets appended to answer it wrongly from a late case
    on (`late`): its answer kept under another name, and a function of the exercise's name
    and parameters that calls it and spoils its value when late."""
    template = _template()
    right, calls = f"_late_right_{name}", f"_late_calls_{name}"
    answer = copy.deepcopy(template["_late_answer"])
    answer.name, answer.args = name, copy.deepcopy(_definition(source, name).args)
    answer.decorator_list = []
    names = {"_late_right": right, "_late_calls": calls}
    constants = {"LATE_FROM": late.calls, "LATE_SHAPE": late.shape}
    answer = _Renamer(names, constants).visit(answer)
    for node in ast.walk(answer):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == right:
            node.args, node.keywords = _call_arguments(answer.args)
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "_late_shaped":
            node.args[0] = ast.Tuple(_call_arguments(answer.args)[0], ast.Load())
    helpers = [copy.deepcopy(template[n]) for n in ("_late_wrong", "_late_shaped")]
    for function in [*helpers, answer]:  # the template's docstrings stay in the template
        function.body = function.body[1:]
    module = ast.Module(
        [
            ast.Assign([ast.Name(right, ast.Store())], ast.Name(name, ast.Load()), lineno=0),
            ast.Assign(
                [ast.Name(calls, ast.Store())], ast.List([ast.Constant(0)], ast.Load()), lineno=0
            ),
            *helpers,
            answer,
        ],
        [],
    )
    return ast.unparse(ast.fix_missing_locations(module))


def wrong_late_cell(source: str, names: set[str], late: dict[str, Late]) -> str:
    """A right exercise cell made wrong late, for every exercise it defines."""
    extra = [
        wrong_late_code(source, name, late[name])
        for name in sorted(bench.defined_names(source, names))
    ]
    return "\n\n".join([source.rstrip(), *extra]) + "\n"


def make_answered(
    solution: NotebookNode,
    wrong: set[int],
    names: set[str],
    late_from: dict[str, Late],
    roots: dict[str, tuple[str, ...]] | None = None,
    replaced: dict[str, tuple[str, ...]] | None = None,
) -> tuple[NotebookNode, dict[str, float | None], set[str]]:
    """A copy of the solution with the `wrong` exercise cells answered wrongly (late); the
    score each exercise must get: 0 when wrong; 1 when right and its code reaches no wrong
    answer (a declared dependency is replaced by a reference while it is graded); None (not
    checked) when it calls a wrong answer, which may or may not spoil it; and the wrong ones
    that must fail late: those whose code reaches no other wrong answer (chapter 02's vjp_mean
    calls vjp_sum, whose own cases turned it wrong before vjp_mean's first case)."""
    notebook = copy.deepcopy(solution)
    right: set[str] = set()
    spoiled: set[str] = set()
    for position, index in enumerate(bench.exercise_cells(notebook)):
        source = notebook.cells[index].source
        defined = bench.defined_names(source, names)
        if position in wrong:
            notebook.cells[index].source = wrong_late_cell(source, names, late_from)
            spoiled |= defined
        else:
            right |= defined
    reads, roots, replaced = bench.reads_by_function(solution), roots or {}, replaced or {}

    def reaches_wrong(name: str) -> bool:
        return bench.depends_on(
            name,
            spoiled - set(replaced.get(name, ())),
            bench.without_calls(reads, replaced.get(name, ())),
            roots.get(name, ()),
        )

    expected: dict[str, float | None] = {n: 0.0 for n in spoiled}
    expected.update({n: None if reaches_wrong(n) else 1.0 for n in right})
    return notebook, expected, {n for n in spoiled if not reaches_wrong(n)}


def late_points(chapter: str, seed: int, cache: Path) -> dict[str, Late]:
    """Each exercise's Late, from its hidden cases for this seed (the grader's own drawing,
    read from its reference cache: no framework is imported when the cache is warm)."""
    from autograder.grading.assignment import prepare

    hidden = prepare(chapter, seed, cache).cases
    return {name: late_point(cases, shapes_of_every_case(name)) for name, cases in hidden.items()}


def write_answered_batch(
    chapter: str, folder: Path, count: int, late_from: dict[str, Late]
) -> tuple[list[Path], dict[str, dict[str, float | None]], dict[str, set[str]]]:
    """`count` fully answered submissions of the chapter, the scores a right grader gives
    them, and each one's wrong answers that must fail late (late_problems), each wrong from
    its `late_from` on."""
    from autograder.exercises import for_chapter

    folder.mkdir(parents=True, exist_ok=True)
    solution = nbformat.read(bench.chapter_notebooks()[chapter][0], as_version=4)
    exercises = for_chapter(chapter)
    names = {e.name for e in exercises}
    roots = {e.name: e.namespace_reads for e in exercises if e.namespace_reads}
    replaced = {e.name: e.depends_on for e in exercises}
    paths, expected, late = [], {}, {}
    for index, wrong in enumerate(wrong_plan(len(bench.exercise_cells(solution)), count), 1):
        notebook, scores, lone = make_answered(solution, wrong, names, late_from, roots, replaced)
        path = folder / f"full{index:02d}.ipynb"
        nbformat.write(notebook, path)
        paths.append(path)
        expected[path.stem], late[path.stem] = scores, lone
    return paths, expected, late


def late_failures(output: str) -> tuple[int, int] | None:
    """(failed, cases) from a wrong exercise's feedback ("Failed 1 of 40 cases."), or None."""
    words = output.split()
    for i, word in enumerate(words[:-3]):
        if word == "Failed" and words[i + 2] == "of" and words[i + 1].isdigit():
            return int(words[i + 1]), int(words[i + 3])
    return None


def answered_cells(notebook: NotebookNode) -> Sequence[str]:
    """The exercise cells' sources of a submission."""
    return [notebook.cells[i].source for i in bench.exercise_cells(notebook)]


def checked(expected: dict[str, dict[str, float | None]]) -> dict[str, dict[str, float]]:
    """The scores a gradebook is checked against: those a right grader must give (None, an
    answer that calls a wrong one, may go either way)."""
    return {
        stem: {name: score for name, score in scores.items() if score is not None}
        for stem, scores in expected.items()
    }


def late_problems(graded: Path, late: dict[str, set[str]]) -> list[str]:
    """Where a wrong answer that must fail late did not: each must fail at least one of its
    cases and pass at least one (its early ones), as the grader's feedback in results.json
    says."""
    problems = []
    with (graded / "grades.csv").open(newline="") as file:
        folders = {Path(row["file"]).stem: row["submission"] for row in csv.DictReader(file)}
    for stem, names in late.items():
        if not names or stem not in folders:
            continue  # a missing row is grade_problems' to report
        results = json.loads((graded / folders[stem] / "results.json").read_text())
        for test in results.get("tests", []):
            name = test.get("name", "").split(" ")[0]
            found = late_failures(test.get("output", ""))
            if name in names and not (found and 0 < found[0] < found[1]):
                problems.append(f"{stem}: {name} did not fail late: {test.get('output')[:200]!r}")
    return problems
