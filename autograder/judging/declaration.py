"""Checks of an exercise's declaration, each failing with a message that names the exercise.

When an `Exercise` is declared (exercise.py), its `signature` is read here and checked against
its mistakes' parameters and what its reference reads, and its `hints_by_kind` keys against
the kinds a check reports. `declaration_problems` checks what needs the other exercises or the
harness source: dependencies, invokes and reference implementations (a test runs it with the
harness read; importing the exercises runs it without).
"""

from __future__ import annotations

import ast
import builtins
import inspect
import re
import sys
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import Any

from autograder import harness

# The kinds a check reports (compare.Mismatch.kind), and those of the engine: "error" for any
# exception in the learner's code, "exception" for a shape-like one (engine.exception_hint).
MISMATCH_KINDS = ("structure", "type", "shape", "dtype", "nonfinite", "value")
HINT_KINDS = (*MISMATCH_KINDS, "error", "exception")


def read_signature(signature: str) -> tuple[str, tuple[str, ...], str]:
    """ "name(a, b=0) -> returns" as (name, ("a", "b"), "returns"); a ValueError that shows
    the form otherwise."""
    head, arrow, returns = signature.partition(" -> ")
    try:
        node = ast.parse(f"def {head.strip()}: pass").body[0]
    except SyntaxError:
        node = None
    if not arrow or not returns.strip() or not isinstance(node, ast.FunctionDef):
        raise ValueError(
            f"Exercise signature {signature!r} is not of the form "
            '"name(parameter, ...) -> what it returns", e.g. '
            '"unbroadcast(g, shape) -> ndarray".'
        )
    return node.name, _argument_names(node.args), returns.strip()


def _argument_names(args: ast.arguments) -> tuple[str, ...]:
    """The names of a def's parameters in inspect.signature's order (*args, **kwargs as
    "args", "kwargs")."""
    starred = [args.vararg] if args.vararg else []
    keywords = [args.kwarg] if args.kwarg else []
    return tuple(
        a.arg for a in [*args.posonlyargs, *args.args, *starred, *args.kwonlyargs, *keywords]
    )


def parameter_names(fn: Callable[..., Any]) -> tuple[str, ...] | None:
    """fn's parameter names (None where they cannot be read, e.g. a builtin)."""
    try:
        return tuple(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return None


def listed(names: tuple[str, ...]) -> str:
    return "(" + ", ".join(names) + ")"


def is_exception_name(name: str) -> bool:
    """A builtin exception's name, or one that reads as an exception type's
    ("InvalidArgumentError"), as `exception:<TypeName>` keys name them."""
    builtin = getattr(builtins, name, None)
    if isinstance(builtin, type) and issubclass(builtin, BaseException):
        return True
    return name.isidentifier() and name.endswith(("Error", "Exception"))


def declaring_module() -> str:
    """The module whose code declares the exercise: the first caller outside this package's
    judging modules and the dataclass machinery."""
    frame = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if not module.startswith(("autograder.judging.", "dataclasses")):
            return module
        frame = frame.f_back
    return ""


def chapter_of(module: str) -> str:
    """The chapter number in a module's name: "autograder.exercises.ch03_unbroadcasting"
    gives "03"."""
    found = re.fullmatch(r"ch(\d\d)_\w+", module.rsplit(".", 1)[-1])
    if found is None:
        raise ValueError(f"{module} is not named ch<NN>_<topic>: declare the exercise's chapter")
    return found.group(1)


def declaration_problems(exercises: Iterable[Any], read_harness: bool = True) -> list[str]:
    """What the exercises' declarations lack, each naming the exercise and the field to add
    ([] when complete): an exercise in `depends_on` that is not one of `exercises` or declares
    no `reference_implementation`; and, with `read_harness`, an `invoke` or
    `reference_implementation` naming no function of the harness package, or an invoke that
    reads the learner's namespace (`__globals__`) for an exercise without `namespace_reads`.
    The harness is read as source, never imported (its modules import TensorFlow or JAX)."""
    exercises = list(exercises)
    by_name = {exercise.name: exercise for exercise in exercises}
    problems = []
    for exercise in exercises:
        for name in exercise.depends_on:
            other = by_name.get(name)
            if other is None:
                problems.append(
                    f"Exercise {exercise.name}: depends_on names {name!r}, which is "
                    "no exercise of the course: fix depends_on."
                )
            elif not other.reference_implementation:
                # The harness module is named as the exercise's: ch03_unbroadcasting.
                module = other.module.rpartition(".")[2]
                problems.append(
                    f"Exercise {name}: {exercise.name} depends on it, but it declares no "
                    f'reference_implementation: add reference_implementation="{module}'
                    f":{name}\" to {name}'s Exercise (a correct {name} in "
                    f"autograder/harness/{module}.py)."
                )
        if not read_harness:
            continue
        for key in ("invoke", "reference_implementation"):
            named = getattr(exercise, key)
            if named and (problem := _harness_function_problem(named)):
                problems.append(f"Exercise {exercise.name}: {key}={named!r} {problem}")
        if exercise.invoke and _reads_namespace(exercise.invoke) and not exercise.namespace_reads:
            problems.append(
                f"Exercise {exercise.name}: its invoke {exercise.invoke!r} looks names up in the "
                "learner's namespace (fn.__globals__): declare them with namespace_reads=(...), "
                "or the grader's child may not define them."
            )
    return problems


def _harness_function_problem(named: str) -> str:
    module, function = harness.split_name(named)
    definitions = _harness_definitions(module)
    if definitions is None:
        return f"names autograder/harness/{module}.py, which does not exist."
    if function not in definitions:
        return (
            f"names no function {function} in autograder/harness/{module}.py: define it "
            "there (harness code) or fix the name."
        )
    return ""


def harness_parameters(named: str) -> tuple[str, ...] | None:
    """The parameters of a harness function, read from its source (None: not found)."""
    module, function = harness.split_name(named)
    source = (_harness_definitions(module) or {}).get(function, "")
    if not source.startswith(("def ", "async def ")):
        return None
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    return _argument_names(node.args)


def _reads_namespace(named: str) -> bool:
    module, function = harness.split_name(named)
    return "__globals__" in (_harness_definitions(module) or {}).get(function, "")


@cache
def _harness_definitions(module: str) -> dict[str, str] | None:
    """The top-level names a harness module defines, each with its source (a function's
    body; "" for a name assigned or imported); None when there is no such module."""
    path = Path(harness.__file__).parent / f"{module}.py"
    if not path.is_file():
        return None
    source = path.read_text(encoding="utf-8")
    found: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found[node.name] = ast.get_source_segment(source, node) or ""
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found.update({t.id: "" for t in targets if isinstance(t, ast.Name)})
        elif isinstance(node, ast.Import | ast.ImportFrom):
            found.update({(a.asname or a.name).split(".")[0]: "" for a in node.names})
    return found
