"""Refusing an answer that hands back the course's own finished code.

The notebooks import helpers from `coursekit` to demonstrate things (chapter 03's
`broadcast_plan`, which names the axes that broadcast). Some of
them already compute an exercise's answer: an answer that calls one would pass without the
learner deriving anything. So before it is run, an answer's code is read for the names it
uses, following the learner's own functions it calls, and a name bound to such a helper is
refused with a message that says why.

Every exercise's answer is also read, before its first case, for the grader's own code
(`refuse_course_code`): the exercises' modules keep private helpers that do part of an answer
(chapter 04's `_n_step_returns`), and a learner's kernel can import them. `coursekit` is left
to the refusals of the exercises whose answers its helpers hold, which say which helper and
why (chapter 03's `broadcast_plan`, chapter 06's solvers, chapter 07's measurements).

This runs in the learner's kernel and in the grader's child, like the rest of the harness.
"""

from __future__ import annotations

import dis
import functools
import os
import sys
import types
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from . import english

COURSE_PACKAGE = "coursekit"
# The grader's own code, which no answer may call: the exercises' modules (their mistakes and
# private helpers), the references, and the harness under the name the grader's child
# imports it by.
GRADER_CODE = ("autograder", "harness")


def _codes(code: Any) -> Iterator[Any]:
    """A code object and those of the functions defined inside it."""
    yield code
    for constant in code.co_consts:
        if hasattr(constant, "co_names"):
            yield from _codes(constant)


# The instructions that read a name from a function's globals, or import a module by name.
# (co_names alone also holds every attribute name: `tape.check(...)` is no use of a global
# `check` bound to the course's module.)
_NAME_READS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "IMPORT_NAME"})


def _names(fn: Any) -> set[str]:
    code = getattr(fn, "__code__", None)
    return set(_names_in(code)) if isinstance(code, types.CodeType) else set()


@functools.lru_cache(maxsize=1024)
def _names_in(code: types.CodeType) -> frozenset[str]:
    return frozenset(
        instruction.argval
        for c in _codes(code)
        for instruction in dis.get_instructions(c)
        if instruction.opname in _NAME_READS and isinstance(instruction.argval, str)
    )


class _ModuleName:
    """A module's dotted name as a function's code holds it for `import` inside its body,
    which no namespace binds: `from coursekit.broadcasting import broadcast_plan`."""

    def __init__(self, name: str) -> None:
        self.__module__ = name


def helpers_used(fn: Callable[..., Any], is_helper: Callable[[Any], bool]) -> list[str]:
    """The names of `fn`'s namespace that `fn` is or uses and `is_helper` flags, following
    the learner's own functions that `fn` calls (a helper hidden one function deeper is
    still the course's code)."""
    found: list[str] = []
    if is_helper(fn):
        found.append(getattr(fn, "__name__", repr(fn)))
    namespace = getattr(fn, "__globals__", {})
    seen: set[int] = {id(fn)}
    pending: list[Any] = [fn]
    while pending:
        current = pending.pop()
        for name in sorted(_names(current)):
            value = namespace.get(name)
            if value is None and is_helper(_ModuleName(name)):  # imported inside a function
                found.append(name)
            if value is None or id(value) in seen:
                continue
            seen.add(id(value))
            if is_helper(value):
                found.append(name)
            elif getattr(value, "__globals__", None) is namespace:  # the learner's own function
                pending.append(value)
        for value in _held(current):  # closures and defaults: `def make(h): return lambda: h()`
            if id(value) in seen:
                continue
            seen.add(id(value))
            if is_helper(value):
                found.append(getattr(value, "__name__", type(value).__name__))
            elif getattr(value, "__globals__", None) is namespace:
                pending.append(value)
    return found


def _held(fn: Any) -> Iterator[Any]:
    """The values a function holds besides its globals: its closure cells and defaults."""
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            yield cell.cell_contents
        except ValueError:  # an empty cell (a name assigned after the inner function)
            continue
    yield from getattr(fn, "__defaults__", None) or ()
    yield from (getattr(fn, "__kwdefaults__", None) or {}).values()


def from_course(value: Any, modules: Iterable[str] = (COURSE_PACKAGE,)) -> bool:
    """Whether `value` is one of `modules` (or a module inside them), or was defined there."""
    prefixes = tuple(modules)
    name = getattr(value, "__name__", None) if type(value).__name__ == "module" else None
    module = name or getattr(value, "__module__", None)
    return isinstance(module, str) and any(
        module == p or module.startswith(p + ".") for p in prefixes
    )


def _parts(value: Any, depth: int = 2) -> Iterator[Any]:
    """`value` and what it wraps or holds: a partial's function and arguments, a bound
    method's function and object, a container's items (two levels, the first 64 of each)."""
    yield value
    if depth == 0:
        return
    inner: Iterable[Any] = ()
    if isinstance(value, functools.partial):
        inner = (value.func, *value.args, *value.keywords.values())
    elif isinstance(value, types.MethodType):
        inner = (value.__func__, value.__self__)
    elif isinstance(value, dict):
        inner = list(value.values())[:64]
    elif isinstance(value, list | tuple | set | frozenset):
        inner = list(value)[:64]
    for item in inner:
        yield from _parts(item, depth - 1)


def _grader_folders() -> tuple[str, ...]:
    """The folders of the grader's code loaded in this process: the harness's parent (the
    `autograder` package, or the grader child's read-only folder, which holds the harness), and
    `autograder`'s where the child can import it too (a pip-installed course)."""
    return _folders_of(getattr(sys.modules.get("autograder"), "__file__", None))


@functools.cache
def _folders_of(autograder_file: str | None) -> tuple[str, ...]:
    folders = {os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}
    if autograder_file:
        folders.add(os.path.dirname(os.path.abspath(autograder_file)))
    return tuple(sorted(os.path.realpath(folder) + os.sep for folder in folders))


@functools.lru_cache(maxsize=4096)
def _real(filename: str) -> str:
    return os.path.realpath(filename)


def _from_grader_files(value: Any) -> bool:
    """Whether `value`'s code was compiled from a file of the grader's code (a copy of a
    helper, `types.FunctionType(helper.__code__, globals())`, keeps the helper's file)."""
    code = getattr(value, "__code__", None)
    filename = getattr(code, "co_filename", None)
    if not isinstance(filename, str) or filename.startswith("<"):
        return False
    return _real(filename).startswith(_grader_folders())


def is_grader_code(value: Any) -> bool:
    """Whether `value`, or what it wraps or holds, is the grader's own code: a module of
    GRADER_CODE, a function or class defined in one (its alias too), or a copy of one's code."""
    return any(from_course(part, GRADER_CODE) or _from_grader_files(part) for part in _parts(value))


class CourseCodeUsed(ValueError):
    """An answer that calls the course's own code: it fails every case the same way, so the
    check and the grader show no case for it (attempts.INPUT_INDEPENDENT) and the grader's
    child stops at the first (wire.STOPPING_ERRORS)."""


def refuse_course_code(fn: Callable[..., Any]) -> None:
    """Refuse a learner's answer that calls the grader's own code (read from its code, before
    it runs). The grader's own functions run through the same invokes unrefused: the
    exercises' mistakes, and the check's tests of itself; none of them passes a check by
    itself (tests/exercises/test_no_importable_answers.py)."""
    if is_grader_code(fn):
        return
    used = helpers_used(fn, is_grader_code)
    if used:
        name = getattr(fn, "__name__", "answer")
        raise CourseCodeUsed(
            english(
                "Your {exercise} calls the course's own code ({names}): a check needs your own "
                "code, so it cannot pass. Write {exercise} without {first}.",
                exercise=name,
                names=", ".join(dict.fromkeys(used)),
                first=used[0],
            )
        )


FRAMEWORKS = ("tensorflow", "jax", "jaxlib", "keras")


def frameworks_used(fn: Callable[..., Any]) -> list[str]:
    """The names by which `fn` (or a function of the learner's it calls) reaches TensorFlow or
    JAX: a numpy exercise's answer must not, as the grader's child refuses any use of them."""
    return helpers_used(fn, lambda value: from_course(value, FRAMEWORKS))


def refuse_course_helpers(fn: Callable[..., Any], exercise: str) -> None:
    """Refuse an answer that is, or calls, code of the course's own `coursekit` package."""
    used = helpers_used(fn, from_course)
    if used:
        raise ValueError(
            english(
                "Your {exercise} calls the course's own helper {helpers} (from {package}, imported "
                "by the notebook to show what happens): that helper already works out the answer, "
                "so the check needs your own code. Write {exercise} without {first}.",
                exercise=exercise,
                helpers=", ".join(used),
                package=COURSE_PACKAGE,
                first=used[0],
            )
        )


def invoke_own_code(fn: Callable[..., Any], *values: Any) -> Any:
    """`fn(*values)`, once `fn` is known not to call the course's helpers."""
    refuse_course_helpers(fn, getattr(fn, "__name__", "answer"))
    return fn(*values)
