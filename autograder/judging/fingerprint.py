"""A fingerprint of a learner's function: the same code gives the same fingerprint.

The in-notebook check remembers the last counterexample of each exercise together with the
fingerprint of the function it was found for. Re-running a check cell on an unchanged
function then reports that case again instead of shrinking it again (seconds, in chapter 05).

Code objects are hashed rather than `inspect.getsource` text: a comment or blank line does
not change what the function does, and code objects exist where source does not (functions
made by `exec`, decorators such as `jax.custom_jvp` or `tf.custom_gradient` whose source is
only the primal). What a function reaches is hashed too: the functions and plain constants
it names as globals (a `matmul_vjp` calling the learner's `unbroadcast`), its closure
(a decorator's wrapped function), its defaults, and the callables a wrapper object holds
(`custom_jvp.jvp`, `custom_vjp.fwd`/`bwd`). Library code is named, never walked through.
Where nothing can be hashed (a builtin), there is no fingerprint, and nothing is skipped.
"""

from __future__ import annotations

import hashlib
import sysconfig
from pathlib import Path
from types import CodeType, FunctionType, MethodType, ModuleType
from typing import Any

import numpy as np

MAX_NODES = 400  # beyond this, give up: no fingerprint is always safe
SMALL_ARRAY = 10_000
LIBRARY_ROOTS = tuple(
    {sysconfig.get_paths()[key] for key in ("stdlib", "purelib", "platlib")}
    | {str(Path(__file__).resolve().parents[1])}
)
PLAIN = (int, float, complex, str, bytes, bool, type(None))


class _TooLarge(Exception):
    pass


def fingerprint(fn: Any) -> str | None:
    """A hash of what `fn` would run, or None when it has no Python code to hash."""
    walker = _Walker()
    try:
        found = walker.callable(fn)
    except (_TooLarge, RecursionError):
        return None
    return walker.digest.hexdigest() if found else None


def _is_library(code: CodeType) -> bool:
    filename = code.co_filename
    return filename.startswith("<frozen") or filename.startswith(LIBRARY_ROOTS)


def _global_names(code: CodeType) -> list[str]:
    """Every name the code (and the functions nested in it) looks up outside itself."""
    names = list(code.co_names)
    for const in code.co_consts:
        if isinstance(const, CodeType):
            names += _global_names(const)
    return names


class _Walker:
    """Feeds what a callable reaches into one digest, each object once."""

    def __init__(self) -> None:
        self.digest = hashlib.sha256()
        self.seen: set[int] = set()

    def feed(self, *parts: object) -> None:
        for part in parts:
            self.digest.update(repr(part).encode())

    def visit(self, obj: object) -> bool:
        """False when obj was seen already (cycles, shared helpers)."""
        if id(obj) in self.seen:
            self.feed("seen")
            return False
        self.seen.add(id(obj))
        if len(self.seen) > MAX_NODES:
            raise _TooLarge
        return True

    def callable(self, obj: Any) -> bool:
        """Hash a callable; True if any Python code was found in it."""
        if not self.visit(obj):
            return True
        if isinstance(obj, MethodType):
            self.feed(type(obj.__self__).__qualname__)
            return self.callable(obj.__func__)
        if isinstance(obj, FunctionType):
            return self.function(obj)
        self.feed(type(obj).__module__, type(obj).__qualname__)
        return self.wrapper(obj)

    def function(self, fn: FunctionType) -> bool:
        code = fn.__code__
        self.feed(fn.__module__, fn.__qualname__)
        self.code(code)
        for value in (*(fn.__defaults__ or ()), *(fn.__kwdefaults__ or {}).items()):
            self.value(value)
        for cell in fn.__closure__ or ():
            try:
                self.value(cell.cell_contents)
            except ValueError:  # an empty cell
                self.feed("empty cell")
        if not _is_library(code):
            for name in sorted(set(_global_names(code))):
                if name in fn.__globals__:
                    self.feed(name)
                    self.value(fn.__globals__[name])
        return True

    def wrapper(self, obj: Any) -> bool:
        """Objects that hold functions: jax.custom_jvp, functools.partial, decorators."""
        held = dict(getattr(obj, "__dict__", {}))
        for name in ("func", "args", "keywords", "__wrapped__"):
            if hasattr(obj, name):
                held.setdefault(name, getattr(obj, name))
        found = False
        for name in sorted(held):
            value = held[name]
            self.feed(name)
            if callable(value) and not isinstance(value, type | ModuleType):
                found = self.callable(value) or found
            else:
                self.value(value)
        return found

    def code(self, code: CodeType) -> None:
        self.feed(code.co_code, code.co_names, code.co_varnames, code.co_freevars)
        for const in code.co_consts:
            if isinstance(const, CodeType):
                self.code(const)
            else:
                self.feed(type(const).__name__, const)

    def value(self, value: Any) -> None:
        """A global, closure cell or default: code is walked, plain data hashed by value."""
        if isinstance(value, ModuleType):
            self.feed("module", value.__name__)
        elif isinstance(value, PLAIN):
            self.feed(type(value).__name__, value)
        elif isinstance(value, tuple | list) and len(value) < 100:
            self.feed(type(value).__name__, len(value))
            for item in value:
                self.value(item)
        elif isinstance(value, np.ndarray) and value.size <= SMALL_ARRAY:
            self.feed(value.dtype.str, value.shape)
            self.digest.update(np.ascontiguousarray(value).tobytes())
        elif callable(value) and not isinstance(value, type):
            self.callable(value)
        else:  # other objects: their type only (their state is not part of the code)
            self.feed(type(value).__module__, type(value).__qualname__)
