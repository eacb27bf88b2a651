"""Watching HOW the learner's function differentiates, where an exercise names the method.

Values alone cannot tell "a Jacobian built from m VJPs" from `jax.jacrev`, or "in two parts
through a cotangent" from one gradient call. So while the learner's function runs, the
frameworks' differentiation entry points are replaced by counting wrappers: on the modules
(`jax.vjp`, `tf.gradients`), on `tf.GradientTape` itself, and in the learner's own globals
(`from jax import jacrev` binds the function under the learner's name). Only frameworks that
are already imported are touched: a learner who did not import one cannot have used it.

This runs in the learner's kernel and in the grader's child, like the rest of the harness.
"""

from __future__ import annotations

import contextlib
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


@contextlib.contextmanager
def watching(fn: Callable[..., Any]) -> Iterator[Usage]:
    """Count the differentiation calls made while the body runs (see the module docstring)."""
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
        yield usage
    finally:
        for owner, name, original in reversed(undo):
            _set(owner, name, original)


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
                usage.gradients += 1
                return inner(*a, **k)

            return call

        return transformed

    patches = [(jax, "vjp", counted_vjp), (jax, "grad", counted(grad)),
               (jax, "value_and_grad", counted(value_and_grad))]
    patches += [(jax, name, _refused(getattr(jax, name), f"jax.{name}", usage))
                for name in JAX_BUILDERS if hasattr(jax, name)]
    return patches


def _counted_pullback(pullback: Callable[..., Any], usage: Usage) -> Callable[..., Any]:
    def counted_pullback(*cotangents: Any) -> Any:
        usage.gradients += 1
        usage.cotangent_vjps += 1
        return pullback(*cotangents)

    return counted_pullback


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

    def counted_gradient(self: Any, target: Any, sources: Any, output_gradients: Any = None,
                         *args: Any, **kwargs: Any) -> Any:
        if not _called_from(inside):  # TensorFlow's own use (ForwardAccumulator, jacobian)
            usage.gradients += 1
            usage.cotangent_vjps += output_gradients is not None
        return gradient(self, target, sources, output_gradients, *args, **kwargs)

    def counted_gradients(ys: Any, xs: Any, grad_ys: Any = None, *args: Any,
                          **kwargs: Any) -> Any:
        if not _called_from(inside):
            usage.gradients += 1
            usage.cotangent_vjps += grad_ys is not None
        return gradients(ys, xs, grad_ys, *args, **kwargs)

    patches = [(tape, "gradient", counted_gradient), (tf, "gradients", counted_gradients)]
    patches += [(tape, name, _refused(getattr(tape, name), f"tape.{name}", usage))
                for name in TAPE_BUILDERS]
    return patches


def _package_folder(module: Any) -> str:
    return os.path.dirname(os.path.realpath(module.__file__)) + os.sep


def _called_from(folder: str) -> bool:
    """Whether the caller of the function that asks was code in `folder` (a framework),
    other than autograph, which calls the learner's own calls inside a tf.function."""
    caller = os.path.realpath(sys._getframe(2).f_code.co_filename)
    autograph = os.path.join(folder, "python", "autograph", "")
    return caller.startswith(folder) and not caller.startswith(autograph)


_FOLLOWING: dict[int, Any] = {}  # id(fn) -> fn: functions seen following the method


def seen_following(fn: Any) -> None:
    """Remember that `fn` was seen computing its answer the way the exercise asks."""
    if len(_FOLLOWING) > 256:
        _FOLLOWING.clear()
    _FOLLOWING[id(fn)] = fn


def unobserved(fn: Any, usage: Usage) -> bool:
    """Too few calls were seen, but by a function seen following the method on an earlier
    case, and no builder was used: part of it runs in a graph traced on an earlier call
    (tf.function, jax.jit), which replays without calling Python, so the counts cannot see
    it. Not a method failure."""
    return not usage.builders and was_seen_following(fn)


def was_seen_following(fn: Any) -> bool:
    return _FOLLOWING.get(id(fn)) is fn
