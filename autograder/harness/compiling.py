"""Compiling the checks' JAX programs quickly: the references, and the programs a framework
exercise's invoke runs the learner's function in.

A check compiles one small program per case shape (the learner's function under `jax.jit`,
`jax.vjp`, `jax.vmap`), then runs it once or twice. What a learner waits for, and most of
what a grader's child spends on a JAX chapter, is that compilation, not the run. Without
XLA's fusion emitters and backend optimisation, such a program compiles about 4x faster here
(Jacobians of functions of 3 to 12 elements: 22 ms instead of 96 ms on average; chapter 03's
matmul references: 0.4 s instead of 2.5-3.8 s), and computes the same values: the
optimisations change how fast the code runs, not which floating-point operations it does (the
references are computed this way and cross-checked against TensorFlow's).

It lives in the harness because both sides use it: the trusted grader's references, and each
JAX exercise's invoke, in the notebook and in the grader's child. A learner's own cells are
never compiled this way: only the programs a check builds.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

# XLA debug options that come and go between releases (jaxlib 0.11 dropped
# `xla_cpu_use_fusion_emitters`), so they are used only where `fast_compile_options` finds
# that the running XLA accepts them. XLA splits a program's machine code into parts it
# compiles on several threads; for a check's programs (a few dozen operations) the split
# costs more than it saves: one part compiles chapter 07's batch Jacobians in about 32 ms
# instead of 43 (measured over 24 programs, jaxlib 0.10, 2 cores). It changes how the code
# is compiled, not what it computes.
FAST_COMPILE = {
    "xla_cpu_use_fusion_emitters": False,
    "xla_backend_optimization_level": 0,
    "xla_cpu_parallel_codegen_split_count": 1,
}


def cache_dir() -> Path:
    """The persistent compilation cache of the checks: under the user's cache folder."""
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "autodiff-course" / "jax"


@functools.cache
def jax_module() -> Any:
    """JAX, with a persistent compilation cache unless the user configured one already."""
    import jax

    if not jax.config.jax_compilation_cache_dir:
        try:
            cache_dir().mkdir(parents=True, exist_ok=True)
        except (OSError, RuntimeError):  # RuntimeError: no home directory at all
            return jax  # read-only home (e.g. a sandbox): compile without a cache
        jax.config.update("jax_compilation_cache_dir", str(cache_dir()))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    return jax


def cache_compiled_programs() -> None:
    """Every JAX program of this process compiles into the persistent cache, from the
    import of the checks on (`from autograder import check`, a notebook's first cells).

    JAX reads the cache settings once, at its first compilation: set only when a check ran,
    they came after the chapter's demonstrations had compiled, so the cache stayed off in
    notebooks and a learner's JAX answer compiled afresh in every kernel (chapter 05's first
    check: about 7 s, most of it compiling the answer for each case's shapes).
    """
    if "jax" in sys.modules:
        jax_module()
        return
    try:
        cache_dir().mkdir(parents=True, exist_ok=True)
    except (OSError, RuntimeError):  # RuntimeError: no home directory at all
        return  # read-only home: compile without a cache
    os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(cache_dir()))
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")


def cpu_device() -> Any:
    """JAX's first CPU device: references are computed there on every machine."""
    return jax_module().devices("cpu")[0]


@functools.cache
def fast_compile_options() -> dict[str, Any]:
    """The FAST_COMPILE options that the running XLA accepts (maybe none), decided once.

    Each option is tried on a tiny program on the CPU device; one that is refused (unknown
    to this XLA, or a value it rejects) is left out and XLA's default applies. A missing
    option costs compile time, never a check, and nothing is printed. They are tried all
    together first: one probe where this XLA accepts every one.

    The answer is the same for every process of one JAX release, so it is kept beside JAX's
    persistent cache, by whoever may write that folder: a notebook's kernel, and in grading
    the grader's own warm-up (a child only reads the folder). A grader's child, which
    decided this for each submission it graded (a tiny compilation, 10-40 ms of a JAX
    submission), reads it there.
    """
    stored = _stored_decision()
    if stored is not None:
        return stored
    if _accepted(FAST_COMPILE):
        accepted = dict(FAST_COMPILE)
    else:
        accepted = {name: value for name, value in FAST_COMPILE.items() if _accepted({name: value})}
    _store_decision(accepted)
    return accepted


# The file beside JAX's persistent cache that keeps fast_compile_options' answer.
DECISION_FILE = "fast-compile-options.json"


def _decision_path() -> Path | None:
    """Where the answer is kept: in JAX's persistent cache folder, if one is set."""
    folder = jax_module().config.jax_compilation_cache_dir
    return Path(folder) / DECISION_FILE if folder else None


def _decision_key() -> dict[str, Any]:
    """What the answer depends on: the JAX release, XLA's (jaxlib's), and the options asked;
    in JSON's own types, so that it compares equal to the key read back."""
    jax = jax_module()
    jaxlib = getattr(getattr(jax, "lib", None), "__version__", "")
    options = sorted([name, repr(value)] for name, value in FAST_COMPILE.items())
    return {"jax": jax.__version__, "jaxlib": jaxlib, "options": options}


def _stored_decision() -> dict[str, Any] | None:
    """The kept answer, if it was decided for this release and these options; None for no
    file, another release's, or anything but a subset of FAST_COMPILE's own names (then the
    probe decides, as without a file)."""
    path = _decision_path()
    try:
        kept = json.loads(path.read_text()) if path is not None else None
    except (OSError, ValueError):
        return None
    if not isinstance(kept, dict) or kept.get("key") != _decision_key():
        return None
    names = kept.get("accepted")
    if not isinstance(names, list) or not all(name in FAST_COMPILE for name in names):
        return None
    return {name: FAST_COMPILE[name] for name in FAST_COMPILE if name in names}


def _store_decision(accepted: dict[str, Any]) -> None:
    """Keep the answer where fast_compile_options looks first, if the folder can be written
    (a grader's child's cannot: then nothing is kept, and nothing is said)."""
    path = _decision_path()
    if path is None:
        return
    text = json.dumps({"key": _decision_key(), "accepted": sorted(accepted)})
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        partial.write_text(text)
        os.replace(partial, path)
    except OSError:
        with contextlib.suppress(OSError):
            partial.unlink()


def _accepted(options: dict[str, Any]) -> bool:
    jax = jax_module()
    probe = jax.device_put(np.zeros(2, np.float32), cpu_device())
    try:
        jax.jit(lambda x: x + 1).lower(probe).compile(compiler_options=options)
    except Exception:  # XLA raises its own runtime error types, which vary by release
        return False
    return True


class FastJit:
    """`jax.jit(fn, **options)` compiled with `fast_compile_options()`, decided at the first
    call: a module can declare its programs at import without compiling the probes then.

    Only a top-level program takes compiler options (JAX refuses them on a jit nested in
    another trace), so called with traced values it is the plain `jax.jit(fn, **options)`:
    the enclosing program is compiled as a whole anyway. The functions a learner's code calls
    (chapter 07's test functions) are plain `jax.jit` for the same reason.
    """

    def __init__(self, fn: Callable[..., Any], options: dict[str, Any]) -> None:
        self.fn, self.options = fn, options
        self.jitted: Callable[..., Any] | None = None
        self.nested: Callable[..., Any] | None = None
        functools.update_wrapper(self, fn)  # its name in JAX's errors and tracebacks

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        jax = jax_module()
        if any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves((args, kwargs))):
            if self.nested is None:
                self.nested = jax.jit(self.fn, **self.options)
            return self.nested(*args, **kwargs)
        with shared_ir_context():
            return self._top_level()(*args, **kwargs)

    def trace(self, *args: Any, **kwargs: Any) -> Any:
        """`jax.jit(...).trace(*args)`: the traced program (its `.jaxpr`), which a later
        call with the same shapes and dtypes runs without tracing it again."""
        return self._top_level().trace(*args, **kwargs)

    def _top_level(self) -> Callable[..., Any]:
        if self.jitted is None:
            jax = jax_module()
            self.jitted = jax.jit(self.fn, compiler_options=fast_compile_options(), **self.options)
        return self.jitted

    def _cache_size(self) -> int:
        """How many programs the top-level jit has compiled, as `jax.jit`'s own (the tests
        count compilations with it)."""
        return self.jitted._cache_size() if self.jitted is not None else 0


# How many programs one MLIR context lowers before a new one is made: the context keeps the
# types and constants of every program lowered in it.
PROGRAMS_PER_CONTEXT = 256


class _Context(threading.local):
    """The MLIR context the check's programs share in this thread, and how many it has
    lowered (a learner's threads never build modules in one context at once)."""

    context: Any = None
    programs = 0


_CONTEXT = _Context()


@contextlib.contextmanager
def shared_ir_context() -> Iterator[None]:
    """The programs lowered in the body share one MLIR context.

    JAX lowers every program into a fresh context, and making one (loading and registering
    its dialects) took 3.8 ms of the 13 ms that lowering one of chapter 07's programs took,
    about 0.25 s of a grader's child for one submission (about 70 programs). A context holds
    any number of modules; what is lowered, and so compiled, is the same. Where JAX no
    longer has the function this replaces, programs are lowered as JAX does by itself.
    """
    try:
        from jax._src.interpreters import mlir
    except ImportError:
        mlir = None
    fresh = getattr(mlir, "make_ir_context", None)
    if fresh is None or getattr(fresh, "shared", False):  # gone, or already shared (nested)
        yield
        return

    def shared() -> Any:
        if _CONTEXT.context is None or _CONTEXT.programs >= PROGRAMS_PER_CONTEXT:
            _CONTEXT.context, _CONTEXT.programs = fresh(), 0
        _CONTEXT.programs += 1
        return _CONTEXT.context

    shared.shared = True  # type: ignore[attr-defined]
    mlir.make_ir_context = shared
    try:
        yield
    finally:
        mlir.make_ir_context = fresh


def device_arrays(*arrays: Any) -> list[Any]:
    """A case's numpy arrays as JAX arrays, of the dtype `jnp.asarray` gives them (float64
    stays float64 only with x64 on).

    `jnp.asarray` compiles a small program for every new shape and dtype it meets (JAX
    0.10: about 15 ms each), which a check whose cases have a dozen shapes paid on its first
    run; `jax.device_put` copies the array and compiles nothing.
    """
    jax = jax_module()
    return [jax.device_put(array) for array in arrays]


def fast_jit(fn: Callable[..., Any] | None = None, **options: Any) -> Any:
    """`jax.jit` for the programs a check builds, compiled quickly (FAST_COMPILE); usable
    as `fast_jit(fn)`, `@fast_jit` or `@fast_jit(static_argnums=0)`."""
    if fn is None:
        return lambda inner: FastJit(inner, options)
    return FastJit(fn, options)
