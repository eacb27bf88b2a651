"""Watching HOW the learner's function differentiates, where an exercise names the method.

Values alone cannot tell "a Jacobian built from m VJPs" from `jax.jacrev`, or "in two parts
through a cotangent" from one gradient call. So while the learner's function runs, the
frameworks' differentiation entry points are replaced by counting wrappers: on the modules
(`jax.vjp`, `tf.gradients`), on `tf.GradientTape` itself, and in the learner's own globals
(`from jax import jacrev` binds the function under the learner's name). Only frameworks that
are already imported are touched: a learner who did not import one cannot have used it.
While watched, compiled code runs its Python on every call (`every_call_seen`), and a map
(`jax.vmap`, `tf.vectorized_map`) counts the calls it traces once per mapped row, so the
count, and the verdict, is the same on the first check and the tenth.

This runs in the learner's kernel and in the grader's child, like the rest of the harness.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any


class MethodNotFollowed(Exception):
    """The answer was not computed the way the exercise asks; `value` is the answer itself.

    Its values are still judged first (a wrong value gets the hint that names its mistake);
    only an answer whose values are all right fails on the method. The message is then the
    whole feedback: what was used, and what to use instead."""

    def __init__(self, message: str, value: Any = None) -> None:
        super().__init__(message)
        self.value = value


# Functions that build a whole Jacobian or Hessian at once, by the name a learner writes.
JAX_BUILDERS = ("jacrev", "jacfwd", "jacobian", "hessian")
TAPE_BUILDERS = ("jacobian", "batch_jacobian")


@dataclass
class Usage:
    """What the learner's function called while it ran."""

    gradients: int = 0  # every reverse-mode call: tape.gradient, tf.gradients, grad, pullback
    cotangent_vjps: int = 0  # those given a cotangent: output_gradients, grad_ys, a pullback
    builders: list[str] = field(default_factory=list)  # "jax.jacrev", "tape.jacobian", ...
    # Calls seen while a jax.vmap / tf.vectorized_map traces its function, innermost last:
    # [gradients, cotangent_vjps] of each, multiplied by its batch size when it returns.
    open_maps: list[list[int]] = field(default_factory=list)

    def add(self, gradients: int, cotangent_vjps: int) -> None:
        """Count calls; inside a map's trace they wait for the map's batch size."""
        if self.open_maps:
            self.open_maps[-1][0] += gradients
            self.open_maps[-1][1] += cotangent_vjps
        else:
            self.gradients += gradients
            self.cotangent_vjps += cotangent_vjps


@contextlib.contextmanager
def watching(fn: Callable[..., Any], every_call: bool = True) -> Iterator[Usage]:
    """Count the differentiation calls made while the body runs (see the module docstring).
    `every_call` False leaves compiled code compiled: for a check that sees what it needs
    in a trace of its own (hvp's), where running every case op by op cost seconds."""
    usage = Usage()
    patches: list[tuple[Any, str, Any]] = []  # (owner, attribute, wrapper)
    jax = sys.modules.get("jax")
    if jax is not None:
        patches += _jax_patches(jax, usage)
    tf = sys.modules.get("tensorflow")
    if tf is not None:
        patches += _tf_patches(tf, usage)
    undo = _apply(patches, getattr(fn, "__globals__", {}))
    try:
        with every_call_seen() if every_call else contextlib.nullcontext():
            yield usage
    finally:
        for owner, name, original in reversed(undo):
            _set(owner, name, original)


@contextlib.contextmanager
def every_call_seen() -> Iterator[None]:
    """Compiled code runs its Python on every call while the body runs: `jax.jit` (and
    `lax.map`, `lax.scan`) under `jax.disable_jit()`, and each call of a `tf.function`
    traces afresh (still a graph: `tf.gradients` needs one). A traced program replays
    without calling Python, so what a call does would otherwise depend on whether an earlier
    call (an earlier check, or the learner's own cell) traced it: the same code must get the
    same verdict on its first check and its tenth."""
    with contextlib.ExitStack() as stack:
        jax = sys.modules.get("jax")
        if jax is not None:
            stack.enter_context(jax.disable_jit())
        tf = sys.modules.get("tensorflow")
        if tf is not None and hasattr(tf, "function"):
            stack.enter_context(_tf_functions_retraced(tf))
        yield


HARNESS_OWN = "_course_harness_own"  # set on the harness's own tf.function objects


@contextlib.contextmanager
def _tf_functions_retraced(tf: Any) -> Iterator[None]:
    """Each call of a tf.function traces a new tf.function of the same Python function (with
    the same input signature): its Python, and so its gradient calls, run every time."""
    function_type = type(tf.function(lambda: None))
    original = function_type.__call__

    def retraced(self: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(self, HARNESS_OWN, False):  # the harness's graph run: traced per check
            return original(self, *args, **kwargs)
        fresh = tf.function(self.python_function, input_signature=self.input_signature)
        return original(fresh, *args, **kwargs)

    function_type.__call__ = retraced
    try:
        yield
    finally:
        function_type.__call__ = original


def _apply(patches: list[tuple[Any, str, Any]], learner_globals: dict) -> list:
    """Install the wrappers; a learner's global bound to a patched original is replaced too."""
    undo = []
    for owner, name, wrapper in patches:
        original = getattr(owner, name, None)
        if original is None:
            continue
        for key, value in list(learner_globals.items()):
            if value is original:
                undo.append((learner_globals, key, value))
                learner_globals[key] = wrapper
        undo.append((owner, name, original))
        _set(owner, name, wrapper)
    return undo


def _set(owner: Any, name: str, value: Any) -> None:
    if isinstance(owner, dict):
        owner[name] = value
    else:
        setattr(owner, name, value)


def _jax_patches(jax: Any, usage: Usage) -> list[tuple[Any, str, Any]]:
    vjp, grad, value_and_grad = jax.vjp, jax.grad, jax.value_and_grad

    def counted_vjp(*args: Any, **kwargs: Any) -> Any:
        out = vjp(*args, **kwargs)
        return (out[0], _counted_pullback(out[1], usage), *out[2:])

    def counted(transform: Callable[..., Any]) -> Callable[..., Any]:
        def transformed(*args: Any, **kwargs: Any) -> Any:
            inner = transform(*args, **kwargs)

            def call(*a: Any, **k: Any) -> Any:
                usage.add(1, 0)
                return inner(*a, **k)

            return call

        return transformed

    patches = [
        (jax, "vjp", counted_vjp),
        (jax, "grad", counted(grad)),
        (jax, "value_and_grad", counted(value_and_grad)),
        (jax, "vmap", _counted_vmap(jax, usage)),
    ]
    patches += [
        (jax, name, _refused(getattr(jax, name), f"jax.{name}", usage))
        for name in JAX_BUILDERS
        if hasattr(jax, name)
    ]
    return patches


def _counted_pullback(pullback: Callable[..., Any], usage: Usage) -> Callable[..., Any]:
    def counted_pullback(*cotangents: Any) -> Any:
        usage.add(1, 1)
        return pullback(*cotangents)

    return counted_pullback


def _counted_vmap(jax: Any, usage: Usage) -> Callable[..., Any]:
    """jax.vmap whose traced calls count once per mapped row: a vmap of a pullback over the
    rows of the identity is one VJP per row (it is how jax.jacrev builds its rows). The batch
    size comes back as a marker output that vmap broadcasts to it."""
    vmap = jax.vmap

    def counted_vmap(
        fun: Callable[..., Any], in_axes: Any = 0, out_axes: Any = 0, *args: Any, **kwargs: Any
    ) -> Callable[..., Any]:
        def marked(*a: Any, **k: Any) -> Any:
            return fun(*a, **k), jax.numpy.zeros(())

        mapped = vmap(marked, in_axes, (out_axes, 0), *args, **kwargs)

        @functools.wraps(fun)
        def call(*a: Any, **k: Any) -> Any:
            return _in_map(usage, lambda: mapped(*a, **k))

        return call

    return counted_vmap


def _in_map(usage: Usage, run_map: Callable[[], tuple[Any, Any]]) -> Any:
    """Run a map that returns (its output, a marker of shape (batch,)), counting the calls
    its trace makes batch times; its output."""
    usage.open_maps.append([0, 0])
    try:
        out, marker = run_map()
    finally:
        gradients, cotangent_vjps = usage.open_maps.pop()
    batch = int(marker.shape[0])
    usage.add(gradients * batch, cotangent_vjps * batch)
    return out


def _refused(original: Callable[..., Any], label: str, usage: Usage) -> Callable[..., Any]:
    """The builder still works (the values are judged as usual), but its use is recorded."""

    def recorded(*args: Any, **kwargs: Any) -> Any:
        usage.builders.append(label)
        return original(*args, **kwargs)

    return recorded


def _tf_patches(tf: Any, usage: Usage) -> list[tuple[Any, str, Any]]:
    tape = tf.GradientTape
    gradient, gradients = tape.gradient, tf.gradients
    inside = _package_folder(tf)

    def counted_gradient(
        self: Any,
        target: Any,
        sources: Any,
        output_gradients: Any = None,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        if not _called_from(inside):  # TensorFlow's own use (ForwardAccumulator, jacobian)
            usage.add(1, int(output_gradients is not None))
        return gradient(self, target, sources, output_gradients, *args, **kwargs)

    def counted_gradients(ys: Any, xs: Any, grad_ys: Any = None, *args: Any, **kwargs: Any) -> Any:
        if not _called_from(inside):
            usage.add(1, int(grad_ys is not None))
        return gradients(ys, xs, grad_ys, *args, **kwargs)

    patches = [
        (tape, "gradient", counted_gradient),
        (tf, "gradients", counted_gradients),
        (tf, "vectorized_map", _counted_vectorized_map(tf, usage)),
    ]
    patches += [
        (tape, name, _refused(getattr(tape, name), f"tape.{name}", usage)) for name in TAPE_BUILDERS
    ]
    return patches


def _counted_vectorized_map(tf: Any, usage: Usage) -> Callable[..., Any]:
    """tf.vectorized_map, whose traced calls count once per element, as in jax.vmap."""
    vectorized_map = tf.vectorized_map

    def counted(fn: Callable[..., Any], elems: Any, *args: Any, **kwargs: Any) -> Any:
        def marked(*a: Any, **k: Any) -> Any:
            return fn(*a, **k), tf.zeros(())

        return _in_map(usage, lambda: vectorized_map(marked, elems, *args, **kwargs))

    return counted


def _package_folder(module: Any) -> str:
    return os.path.dirname(os.path.realpath(module.__file__)) + os.sep


def _called_from(folder: str) -> bool:
    """Whether the caller of the function that asks was code in `folder` (a framework),
    other than autograph, which calls the learner's own calls inside a tf.function."""
    caller = os.path.realpath(sys._getframe(2).f_code.co_filename)
    autograph = os.path.join(folder, "python", "autograph", "")
    return caller.startswith(folder) and not caller.startswith(autograph)


_PER_CHECK: list[dict] = []  # what a harness remembers about a learner's function


def per_check(memory: dict) -> dict:
    """Register a harness's memory of learner functions (traced graphs, traced shapes) to be
    forgotten when the next check starts, so no verdict depends on an earlier check."""
    _PER_CHECK.append(memory)
    return memory


def new_check() -> None:
    """A check starts: forget what earlier checks learned about any function."""
    for memory in _PER_CHECK:
        memory.clear()
