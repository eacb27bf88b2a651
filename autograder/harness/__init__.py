"""How the learner's function is called on a case: the code the check and the grader's child share.

This package runs in two places: in the learner's kernel (imported as `autograder.harness`)
and in the grader's sandboxed child, where sandbox/submission_folders.py copies it read-only
beside child.py and child.py imports it as `harness`. So it imports only the standard library,
numpy and the framework an exercise allows, and itself only relatively: never the rest of the
grader, which the child must not see (it holds the references and the seed).

An exercise names its invoke as "<module>:<function>"
("ch05_custom_derivatives_jax:invoke_soft_threshold"), a function `invoke(fn, *case_values)` of the
chapter's module here; "" is a plain call `fn(*values)`. `invoker` resolves that name, the same way
on both sides, and `learner_traceback` shows an error in the learner's own frames only. Nothing here
names an exercise: what an invoke needs of the exercises (the reference implementations of those it
calls) is declared on them (`Exercise.reference_implementation`) and passed in by the caller.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import site
import sysconfig
import traceback
from collections.abc import Callable
from typing import Any

from .method import MethodNotFollowed as MethodNotFollowed  # the child catches it by name
from .method import new_check as new_check  # both sides start each check afresh
from .method import per_check
from .precision import exact_precision

Invoke = Callable[..., Any]
# The exercises an exercise calls, as (name, "<module>:<function>" of its reference here):
# Exercise.dependencies() in the notebook, program.json's "depends" in the grader's child.
Depends = tuple[tuple[str, str], ...]
_FOLDER = os.path.dirname(os.path.abspath(__file__)) + os.sep


def english(template: str, /, **values: Any) -> str:
    """A message the learner reads, filled in (str.format's fields). The harness runs where
    the grader's `autograder.locale` cannot be imported (the confined child), so it says
    everything in English; the catalogue holds each template (found by this function's name)
    and the report translates the text by matching it (locale.localize)."""
    return template.format(**values) if values else template


def learner_name(ops: dict[str, Any], name: str) -> Any:
    """`name` from `ops`, the namespace where the learner's function was defined (chapter
    02 builds its programs with the notebook's Tensor): a NameError that says what to do,
    where a KeyError named only the key, as if the learner's code had raised it."""
    if name not in ops:
        raise NameError(
            english(
                "The check builds its programs with the notebook's `{name}`, but no `{name}` is "
                "defined where your function was defined. Run (or restore) the notebook's cell "
                "that defines `{name}`, and define your function in the notebook.",
                name=name,
            )
        )
    return ops[name]


def plain_call(fn: Invoke, *args: Any) -> Any:
    """The invoke of an exercise that declares none: call the learner's function as it is."""
    return fn(*args)


def split_name(name: str) -> tuple[str, str]:
    """("ch05_custom_derivatives_jax", "invoke_soft_threshold") from
    "ch05_custom_derivatives_jax:invoke_soft_threshold"; a malformed name is refused
    when the exercise is declared, not when a learner's check first needs it."""
    module, colon, function = name.partition(":")
    if not (colon and module.isidentifier() and function.isidentifier()):
        raise ValueError(f"An invoke is named '<module>:<function>' of {__name__}, not {name!r}.")
    return module, function


def resolve(name: str) -> Invoke:
    """The function "<module>:<function>" of this package: an invoke, or the reference
    implementation an exercise declares for the exercises that call it."""
    module, function = split_name(name)
    return getattr(importlib.import_module(f".{module}", __name__), function)


@functools.cache
def invoker(name: str, frameworks: tuple[str, ...] = (), depends: Depends = ()) -> Invoke:
    """The function that calls the learner's `fn` on a case's values.

    It is resolved lazily (a chapter module may import JAX or TensorFlow). An exercise that
    allows a framework runs the learner's function at full precision (no TF32, JAX matmuls
    at "highest"), in the notebook and in the grader's child alike, so that a correct
    float32 answer is exact on any device. An exercise that calls other exercises
    (`depends`: (name, "<module>:<function>") pairs, each exercise's name and its reference
    here) runs with those references in the learner's namespace, so each exercise is
    judged on its own.
    """
    invoke = resolve(name) if name else plain_call
    if depends:
        invoke = _with_references(invoke, depends)
    invoke = _own_code_only(invoke)  # read before the references are bound in its namespace
    return _at_full_precision(invoke) if frameworks else invoke


def _own_code_only(invoke: Invoke) -> Invoke:
    """`invoke`, refusing a learner's function that calls the course's own code, read once
    per function and check (course_helpers.refuse_course_code)."""
    from .course_helpers import refuse_course_code

    read: dict[Invoke, bool] = per_check({})

    def own_code_only(fn: Invoke, *args: Any) -> Any:
        try:
            known = read.get(fn)
        except TypeError:  # an unhashable callable: read every time
            known = None
        if known is None:
            refuse_course_code(fn)
            with contextlib.suppress(TypeError):
                read[fn] = True
        return invoke(fn, *args)

    # Named as the invoke it guards; `__wrapped__` stays the mark of _at_full_precision alone.
    functools.update_wrapper(own_code_only, invoke, updated=())
    del own_code_only.__wrapped__
    return own_code_only


_STANDING_IN: list[str] = []  # the dependencies whose references _with_references binds now


def stand_in_only(name: str) -> None:
    """The first call of a reference implementation (`reference_implementation`): it runs only
    in place of the learner's `name` while an exercise that calls `name` is checked. Imported
    and called as an answer of its own, it raises, so nothing a learner can import passes the
    exercise `name` (tests/exercises/test_no_importable_answers.py)."""
    if name not in _STANDING_IN:
        raise RuntimeError(
            english(
                "This {name} is the course's reference: it stands in for your own {name} only "
                "while an exercise that calls {name} is checked. Write {name} yourself.",
                name=name,
            )
        )


def _with_references(invoke: Invoke, depends: Depends) -> Invoke:
    """`invoke` with the reference of each dependency bound, for the call, to its name in
    the namespace where the learner's function was defined (the notebook's)."""
    references = {name: resolve(reference) for name, reference in depends}

    def with_references(fn: Invoke, *args: Any) -> Any:
        namespace = getattr(fn, "__globals__", None)
        if not isinstance(namespace, dict):
            return _standing_in(invoke, fn, *args)
        missing = object()
        saved = {name: namespace.get(name, missing) for name in references}
        namespace.update(references)
        try:
            return _standing_in(invoke, fn, *args)
        finally:
            for key, value in saved.items():
                if value is missing:
                    namespace.pop(key, None)
                else:
                    namespace[key] = value

    def _standing_in(invoke: Invoke, fn: Invoke, *args: Any) -> Any:
        _STANDING_IN.extend(references)
        try:
            return invoke(fn, *args)
        finally:
            del _STANDING_IN[len(_STANDING_IN) - len(references) :]

    return with_references


def _at_full_precision(invoke: Invoke) -> Invoke:
    @functools.wraps(invoke)
    def exact(fn: Invoke, *args: Any) -> Any:
        with exact_precision():
            return invoke(fn, *args)

    return exact


def learner_traceback(error: BaseException, limit: int | None = None) -> str:
    """The traceback of the learner's own frames only: the grader's (this package, the
    engine or child.py beside it) and the libraries' (TensorFlow, JAX, numpy, the standard
    library) only say how the learner's code was called or what it called, and the error's
    last line already says what went wrong there. `limit` keeps that many characters from
    the end (the innermost frames)."""
    frames = learner_frames(error)
    text = "".join(traceback.format_list(frames) + traceback.format_exception_only(error))
    return (text if limit is None else text[-limit:]).rstrip()


def learner_frames(error: BaseException) -> list[traceback.FrameSummary]:
    """The frames of the error's traceback that are the learner's code, outermost first."""
    return [
        frame for frame in traceback.extract_tb(error.__traceback__) if not _foreign(frame.filename)
    ]


def raised_in(error: BaseException) -> str:
    """The name of the learner's function that raised ("" if none of the learner's frames
    is in the traceback): the stub that is not answered yet may be a helper, such as the
    JVP rule of the function the check called."""
    frames = learner_frames(error)
    return frames[-1].name if frames else ""


def _foreign(filename: str) -> bool:
    if filename.startswith("<frozen "):
        return True
    path = os.path.realpath(filename)
    return any(path.startswith(folder) for folder in _FOREIGN_FOLDERS)


def _foreign_folders() -> tuple[str, ...]:
    """The grader's folder (this package's parent: autograder/, or the child's read-only
    folder with child.py) and the interpreter's library folders."""
    names = ("stdlib", "platstdlib", "purelib", "platlib")
    paths = {sysconfig.get_paths()[name] for name in names} | set(site.getsitepackages())
    grader = os.path.dirname(_FOLDER.rstrip(os.sep))
    folders = {grader, os.path.realpath(grader)}
    folders |= {os.path.realpath(p) for p in paths} | set(paths)
    return tuple(sorted(folder.rstrip(os.sep) + os.sep for folder in folders))


_FOREIGN_FOLDERS = _foreign_folders()
