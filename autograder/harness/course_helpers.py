"""Refusing an answer that hands back the course's own finished code.

The notebooks import helpers from `coursekit` to demonstrate things (chapter 03's
`broadcast_plan`, which names the axes that broadcast). Some of
them already compute an exercise's answer: an answer that calls one would pass without the
learner deriving anything. So before it is run, an answer's code is read for the names it
uses, following the learner's own functions it calls, and a name bound to such a helper is
refused with a message that says why.

This runs in the learner's kernel and in the grader's child, like the rest of the harness.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from . import english

COURSE_PACKAGE = "coursekit"


def _codes(code: Any) -> Iterator[Any]:
    """A code object and those of the functions defined inside it."""
    yield code
    for constant in code.co_consts:
        if hasattr(constant, "co_names"):
            yield from _codes(constant)


def _names(fn: Any) -> set[str]:
    code = getattr(fn, "__code__", None)
    return {name for c in _codes(code) for name in c.co_names} if code is not None else set()


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
    return found


def from_course(value: Any, modules: Iterable[str] = (COURSE_PACKAGE,)) -> bool:
    """Whether `value` is one of `modules` (or a module inside them), or was defined there."""
    prefixes = tuple(modules)
    name = getattr(value, "__name__", None) if type(value).__name__ == "module" else None
    module = name or getattr(value, "__module__", None)
    return isinstance(module, str) and any(
        module == p or module.startswith(p + ".") for p in prefixes
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
