"""An exercise's references, written once: a forward function from which both frameworks'
references are derived.

A learner's rule is judged against what TensorFlow and JAX compute, and the two must agree
(references.py). Most exercises ask for the VJP of one function, and writing that function
twice (a `tf.GradientTape` block and a `jax.vjp` call, with different signatures) repeats one
pattern and lets the two copies drift. So a declaration writes the function once, against the
NumPy API both frameworks ship (`jax.numpy` and `tf.experimental.numpy`), and
`vjp_reference` derives both references from it:

    reference=vjp_reference(lambda xp, a, b: xp.matmul(a, b), wrt=("a", "b")),

`xp` is `jax.numpy` for the JAX reference and `tf.experimental.numpy` for TensorFlow's, with
`xp.stop_gradient` added (the one function references need that neither NumPy API has); the
other parameters are the case's arguments, by name (a forward may also use operators such as
`a @ b`, which both frameworks' arrays have). Where the frameworks genuinely differ (a
function one of them lacks, a rule one of them writes its own way), `two_references` takes a
hand-written reference for each, and its `why` says what differs.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autograder.judging.cases import Case

Outputs = tuple[Any, ...]
TfReference = Callable[[Any, Case], Outputs]
JaxReference = Callable[[Any, dict[str, Any], dict[str, Any]], Outputs]


@dataclass(frozen=True)
class Reference:
    """What TensorFlow and JAX compute for one case: `tf(tf, case)` eagerly, and
    `jax(jax, params, arrays)` inside one `jax.jit` over a batch of cases (static parameters
    closed over, arrays traced). `why_two` says why they are written by hand, one per
    framework ("" when both are derived from one forward); `reads` names the case arguments a
    derived forward reads (the cotangent aside, which a case may hold beside the learner's
    arguments), which the exercise checks against the learner's parameters."""

    tf: TfReference
    jax: JaxReference
    why_two: str = ""
    reads: tuple[str, ...] = field(default=())


def two_references(*, tf: TfReference, jax: JaxReference, why: str) -> Reference:
    """A hand-written reference for each framework, where one forward cannot serve both;
    `why` says what differs (it is read by maintainers, never shown to learners)."""
    if not isinstance(why, str) or not why.strip():
        raise ValueError(
            'two_references needs why="...": say why this exercise cannot derive '
            "both references from one forward (vjp_reference)."
        )
    return Reference(tf=tf, jax=jax, why_two=why)


def vjp_reference(
    forward: Callable[..., Any],
    *,
    wrt: tuple[str, ...],
    cotangent: str | None = "g",
    value: bool = False,
    inputs: Mapping[str, Callable[..., Any]] | None = None,
) -> Reference:
    """Both references of `forward`'s VJP: `tf.GradientTape` with `output_gradients` and
    `jax.vjp`, each giving the cotangents of the `wrt` arguments, in that order.

    `forward(xp, <case arguments by name>)` is written once against the NumPy API (`xp`).
    `cotangent` names the case argument holding the output's cotangent; None: a cotangent of
    ones (what `tape.gradient(y, x)` and `tf.gradients` use). `value`: the forward's output
    comes first among the outputs. `inputs` builds arguments the case does not hold, each a
    function `(xp, <case arguments by name>)` (unbroadcast's primal: zeros of `shape`).
    """
    derived = _Derived(forward, tuple(wrt), cotangent, value, dict(inputs or {}))
    return Reference(tf=derived.tf, jax=derived.jax, reads=derived.reads())


def jacobian_reference(forward: Callable[..., Any], *, wrt: str) -> Reference:
    """Both references of `forward`'s Jacobian with respect to the case argument `wrt`, of
    shape y.shape + x.shape (outputs first): `tape.jacobian` and `jax.jacrev`."""
    derived = _Derived(forward, (wrt,), None, False, {})
    return Reference(tf=derived.tf_jacobian, jax=derived.jax_jacobian, reads=derived.reads())


class ArrayNamespace:
    """A framework's NumPy API (`numpy`), and `extra` functions it lacks."""

    def __init__(self, numpy: Any, **extra: Callable[..., Any]) -> None:
        self._numpy = numpy
        self.__dict__.update(extra)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._numpy, name)


def tensorflow_namespace(tf: Any) -> ArrayNamespace:
    return ArrayNamespace(tf.experimental.numpy, stop_gradient=tf.stop_gradient)


def jax_namespace(jax: Any) -> ArrayNamespace:
    return ArrayNamespace(jax.numpy, stop_gradient=jax.lax.stop_gradient)


def _tensors(tf: Any, case: Case) -> dict[str, Any]:
    """The case's arguments by name, its arrays as TensorFlow constants."""
    return {
        name: tf.constant(value) if isinstance(value, np.ndarray) else value
        for name, value in case.args
    }


def _parameter_names(fn: Callable[..., Any]) -> tuple[str, ...]:
    """fn's parameters after the first (the array namespace)."""
    return tuple(inspect.signature(fn).parameters)[1:]


@dataclass(frozen=True)
class _Derived:
    forward: Callable[..., Any]
    wrt: tuple[str, ...]
    cotangent: str | None
    value: bool
    inputs: dict[str, Callable[..., Any]]

    def __post_init__(self) -> None:
        named = set(_parameter_names(self.forward)) | set(self.inputs)
        missing = [name for name in self.wrt if name not in named]
        if not self.wrt or missing:
            raise ValueError(
                f"A derived reference: wrt={self.wrt!r} must name parameters of the "
                f"forward {_parameter_names(self.forward)} (or of inputs=)."
            )

    def reads(self) -> tuple[str, ...]:
        """The case arguments the forward and the inputs read."""
        names = [
            *_parameter_names(self.forward),
            *(n for build in self.inputs.values() for n in _parameter_names(build)),
        ]
        return tuple(dict.fromkeys(n for n in names if n not in self.inputs))

    def _arguments(self, xp: Any, named: dict[str, Any]) -> dict[str, Any]:
        """The case's arguments with the built inputs added."""
        built = dict(named)
        for name, build in self.inputs.items():
            built[name] = build(xp, **{n: built[n] for n in _parameter_names(build)})
        return built

    def _call(self, xp: Any, named: dict[str, Any]) -> Any:
        return self.forward(xp, **{n: named[n] for n in _parameter_names(self.forward)})

    def tf(self, tf: Any, case: Case) -> Outputs:
        xp = tensorflow_namespace(tf)
        named = self._arguments(xp, _tensors(tf, case))
        primals = [named[name] for name in self.wrt]
        with tf.GradientTape() as tape:
            tape.watch(primals)
            y = self._call(xp, named)
        cotangent = named[self.cotangent] if self.cotangent else None
        grads = tape.gradient(
            y,
            primals,
            output_gradients=cotangent,
            unconnected_gradients=tf.UnconnectedGradients.ZERO,
        )
        # A gather's gradient comes back as IndexedSlices: made a dense tensor first.
        return tuple(
            tf.convert_to_tensor(t).numpy() for t in ((y,) if self.value else ()) + tuple(grads)
        )

    def jax(self, jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> Outputs:
        xp = jax_namespace(jax)
        named = self._arguments(xp, {**params, **arrays})

        def forward(*primals: Any) -> Any:
            return self._call(xp, {**named, **dict(zip(self.wrt, primals, strict=True))})

        y, vjp = jax.vjp(forward, *(named[name] for name in self.wrt))
        cotangent = named[self.cotangent] if self.cotangent else xp.ones_like(y)
        return ((y,) if self.value else ()) + tuple(vjp(cotangent))

    def tf_jacobian(self, tf: Any, case: Case) -> Outputs:
        xp = tensorflow_namespace(tf)
        named = self._arguments(xp, _tensors(tf, case))
        (primal,) = (named[name] for name in self.wrt)
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(primal)
            y = self._call(xp, named)
        # A while-loop Jacobian: pfor would retrace a tf.function per case and warn about it.
        return (tape.jacobian(y, primal, experimental_use_pfor=False).numpy(),)

    def jax_jacobian(self, jax: Any, params: dict[str, Any], arrays: dict[str, Any]) -> Outputs:
        xp = jax_namespace(jax)
        named = self._arguments(xp, {**params, **arrays})
        (name,) = self.wrt
        return (jax.jacrev(lambda primal: self._call(xp, {**named, name: primal}))(named[name]),)
