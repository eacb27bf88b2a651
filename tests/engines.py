"""Learners' engines, right and wrong, for the random-program check's tests (tests only: the
installed package ships no engine a learner's kernel could import).

The module is written as a learner writes the engine chapter's cells: a Tensor with operator
overloading, one function per operation recording its VJP, a topological order, an
accumulating backward pass and grad with argnums. `engine(**swaps)` runs this file's code in a
fresh namespace, as a notebook would, with some of its functions swapped for wrong ones
defined here too (each looks its helpers up in that namespace), and returns the namespace:
the check finds the engine where its `grad` is defined.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


class Tensor:
    def __init__(self, value: Any, parents: tuple = (), vjp: Any = None) -> None:
        self.value = np.asarray(value)
        self.grad = np.zeros_like(self.value)
        self.parents, self.vjp = parents, vjp

    def __add__(self, other: Any) -> Tensor:
        return add(self, other)

    def __sub__(self, other: Any) -> Tensor:
        return add(self, neg(other))

    def __mul__(self, other: Any) -> Tensor:
        return mul(self, other)

    def __truediv__(self, other: Any) -> Tensor:
        return div(self, other)

    def __matmul__(self, other: Any) -> Tensor:
        return matmul(self, other)

    def __pow__(self, c: float) -> Tensor:
        x = self.value
        return Tensor(x**c, (self,), lambda g: (g * c * x ** (c - 1),))

    def __neg__(self) -> Tensor:
        return neg(self)

    def __getitem__(self, key: Any) -> Tensor:
        def vjp(g: np.ndarray) -> tuple:
            scattered = np.zeros_like(self.value)
            np.add.at(scattered, key, g)
            return (scattered,)

        return Tensor(self.value[key], (self,), vjp)


def tensor(x: Any) -> Tensor:
    return x if isinstance(x, Tensor) else Tensor(x)


def unbroadcast(g: np.ndarray, shape: tuple) -> np.ndarray:
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for axis, n in enumerate(shape):
        if n == 1 and g.shape[axis] != 1:
            g = g.sum(axis=axis, keepdims=True)
    return g


def add(a: Any, b: Any) -> Tensor:
    a, b = tensor(a), tensor(b)
    return Tensor(
        a.value + b.value,
        (a, b),
        lambda g: (unbroadcast(g, a.value.shape), unbroadcast(g, b.value.shape)),
    )


def neg(a: Any) -> Tensor:
    a = tensor(a)
    return Tensor(-a.value, (a,), lambda g: (-g,))


def mul(a: Any, b: Any) -> Tensor:
    a, b = tensor(a), tensor(b)
    return Tensor(
        a.value * b.value,
        (a, b),
        lambda g: (
            unbroadcast(g * b.value, a.value.shape),
            unbroadcast(g * a.value, b.value.shape),
        ),
    )


def div(a: Any, b: Any) -> Tensor:
    a, b = tensor(a), tensor(b)
    return Tensor(
        a.value / b.value,
        (a, b),
        lambda g: (
            unbroadcast(g / b.value, a.value.shape),
            unbroadcast(-g * a.value / b.value**2, b.value.shape),
        ),
    )


def matmul_vjp(g: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple:
    return (
        unbroadcast(g @ np.swapaxes(b, -1, -2), a.shape),
        unbroadcast(np.swapaxes(a, -1, -2) @ g, b.shape),
    )


def matmul(a: Any, b: Any) -> Tensor:
    a, b = tensor(a), tensor(b)
    return Tensor(a.value @ b.value, (a, b), lambda g: matmul_vjp(g, a.value, b.value))


def exp(x: Tensor) -> Tensor:
    y = np.exp(x.value)
    return Tensor(y, (x,), lambda g: (g * y,))


def log(x: Tensor) -> Tensor:
    return Tensor(np.log(x.value), (x,), lambda g: (g / x.value,))


def tanh(x: Tensor) -> Tensor:
    y = np.tanh(x.value)
    return Tensor(y, (x,), lambda g: (g * (1 - y**2),))


def relu(x: Tensor) -> Tensor:
    return Tensor(np.maximum(x.value, 0), (x,), lambda g: (g * (x.value > 0),))


def maximum(a: Any, b: Any) -> Tensor:
    a, b = tensor(a), tensor(b)
    first = a.value > b.value
    return Tensor(
        np.maximum(a.value, b.value),
        (a, b),
        lambda g: (unbroadcast(g * first, a.value.shape), unbroadcast(g * ~first, b.value.shape)),
    )


def _spread(g: np.ndarray, x: np.ndarray, axis: Any, keepdims: bool) -> np.ndarray:
    if axis is not None and not keepdims:
        g = np.expand_dims(g, axis)
    return np.broadcast_to(g, x.shape)


def sum(x: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
    return Tensor(
        np.sum(x.value, axis=axis, keepdims=keepdims),
        (x,),
        lambda g: (_spread(g, x.value, axis, keepdims),),
    )


def mean(x: Tensor, axis: Any = None, keepdims: bool = False) -> Tensor:
    count = x.value.size / np.mean(x.value, axis=axis, keepdims=keepdims).size
    return Tensor(
        np.mean(x.value, axis=axis, keepdims=keepdims),
        (x,),
        lambda g: (_spread(g, x.value, axis, keepdims) / count,),
    )


def reshape(x: Tensor, shape: tuple) -> Tensor:
    return Tensor(np.reshape(x.value, shape), (x,), lambda g: (np.reshape(g, x.value.shape),))


def transpose(x: Tensor, axes: tuple) -> Tensor:
    return Tensor(np.transpose(x.value, axes), (x,), lambda g: (np.transpose(g, np.argsort(axes)),))


def broadcast_to(x: Tensor, shape: tuple) -> Tensor:
    return Tensor(np.broadcast_to(x.value, shape), (x,), lambda g: (unbroadcast(g, x.value.shape),))


def log_softmax(x: Tensor, axis: int = -1) -> Tensor:
    shifted = x.value - np.max(x.value, axis=axis, keepdims=True)
    y = shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))
    return Tensor(y, (x,), lambda g: (g - np.exp(y) * np.sum(g, axis=axis, keepdims=True),))


def toposort(root: Tensor) -> list[Tensor]:
    order, seen = [], set()

    def visit(node: Tensor) -> None:
        if id(node) not in seen:
            seen.add(id(node))
            for parent in node.parents:
                visit(parent)
            order.append(node)

    visit(root)
    return order


def backward(root: Tensor) -> None:
    root.grad = root.grad + np.ones_like(root.value)
    for node in reversed(toposort(root)):
        if node.vjp is not None:
            for parent, c in zip(node.parents, node.vjp(node.grad), strict=True):
                parent.grad = parent.grad + c


def grad(f: Any, argnums: Any = 0) -> Any:
    def gradient(*args: Any) -> Any:
        tensors = [Tensor(np.asarray(x)) for x in args]
        out = f(*tensors)
        if out.value.shape != ():
            raise TypeError(f"grad needs a scalar output, not one of shape {out.value.shape}")
        backward(out)
        if isinstance(argnums, int):
            return tensors[argnums].grad
        return tuple(tensors[i].grad for i in argnums)

    return gradient


# ---------------------------------------------------------------- wrong versions, to swap in


def matmul_vjp_all_axes(g: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple:
    """Seed 001's rule: `.T` transposes ALL axes of a batched operand, not the last two."""
    return unbroadcast(g @ b.T, a.shape), unbroadcast(a.T @ g, b.shape)


def unbroadcast_leading_only(g: np.ndarray, shape: tuple) -> np.ndarray:
    """Seed 001's unbroadcast: it sums the leading axes only, never a size-1 axis."""
    if g.ndim > len(shape):
        return g.sum(axis=tuple(range(g.ndim - len(shape))))
    return g


def backward_assigning(root: Tensor) -> None:
    """`=` where `+=` belongs: a value used twice keeps only the last cotangent it is sent."""
    root.grad = np.ones_like(root.value)
    for node in reversed(toposort(root)):
        if node.vjp is not None:
            for parent, c in zip(node.parents, node.vjp(node.grad), strict=True):
                parent.grad = c


def breadth_first(root: Tensor) -> list[Tensor]:
    """The nodes in the order a queue from the root meets them: not a reverse topological
    order once a value is used by operations at different distances from the root."""
    order, queue, seen = [], [root], {id(root)}
    while queue:
        node = queue.pop(0)
        order.append(node)
        for parent in node.parents:
            if id(parent) not in seen:
                seen.add(id(parent))
                queue.append(parent)
    return order


def backward_breadth_first(root: Tensor) -> None:
    """A popular shortcut: the nodes visited breadth-first from the root, each once."""
    root.grad = root.grad + np.ones_like(root.value)
    for node in breadth_first(root):
        if node.vjp is not None:
            for parent, c in zip(node.parents, node.vjp(node.grad), strict=True):
                parent.grad = parent.grad + c


def grad_int_as_tuple(f: Any, argnums: Any = 0) -> Any:
    """An int argnums made a tuple of one, and a tuple always returned: grad(f) gives (g,)."""
    wanted = (argnums,) if isinstance(argnums, int) else tuple(argnums)

    def gradient(*args: Any) -> Any:
        tensors = [Tensor(np.asarray(x)) for x in args]
        out = f(*tensors)
        if out.value.shape != ():
            raise TypeError("grad needs a scalar output")
        backward(out)
        return tuple(tensors[i].grad for i in wanted)

    return gradient


def grad_one_as_bare(f: Any, argnums: Any = 0) -> Any:
    """A tuple of one unpacked: grad(f, argnums=(2,)) gives the array, not (array,)."""

    def gradient(*args: Any) -> Any:
        tensors = [Tensor(np.asarray(x)) for x in args]
        out = f(*tensors)
        if out.value.shape != ():
            raise TypeError("grad needs a scalar output")
        backward(out)
        if isinstance(argnums, int):
            return tensors[argnums].grad
        grads = tuple(tensors[i].grad for i in argnums)
        return grads[0] if len(grads) == 1 else grads

    return gradient


def grad_any_output(f: Any, argnums: Any = 0) -> Any:
    """No scalar check: an output of any shape is seeded with ones, where jax.grad raises a
    TypeError."""

    def gradient(*args: Any) -> Any:
        tensors = [Tensor(np.asarray(x)) for x in args]
        backward(f(*tensors))
        if isinstance(argnums, int):
            return tensors[argnums].grad
        return tuple(tensors[i].grad for i in argnums)

    return gradient


SEED_001 = {"matmul_vjp": "matmul_vjp_all_axes", "unbroadcast": "unbroadcast_leading_only"}
ASSIGNING = {"backward": "backward_assigning"}
BREADTH_FIRST = {"backward": "backward_breadth_first"}
INT_ARGNUMS_AS_TUPLE = {"grad": "grad_int_as_tuple"}
ONE_TUPLE_AS_BARE = {"grad": "grad_one_as_bare"}
ANY_OUTPUT = {"grad": "grad_any_output"}


def engine(swaps: dict[str, str] | None = None) -> dict[str, Any]:
    """This file's engine run in a fresh namespace (a notebook's), with each function named
    in `swaps` replaced by the one named as its value."""
    namespace: dict[str, Any] = {"__name__": "learner_engine"}
    exec(compile(Path(__file__).read_text(encoding="utf-8"), __file__, "exec"), namespace)
    for name, wrong in (swaps or {}).items():
        namespace[name] = namespace[wrong]
    return namespace


def backward_in_place(root: Tensor) -> None:
    """Right, written otherwise: `+=` in place."""
    root.grad += 1.0
    for node in reversed(toposort(root)):
        if node.vjp is not None:
            for parent, c in zip(node.parents, node.vjp(node.grad), strict=True):
                parent.grad += c


def unbroadcast_by_axes(g: np.ndarray, shape: tuple) -> np.ndarray:
    """Right, written otherwise: the axes to sum worked out first, then one sum."""
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1
    )
    return g.sum(axis=axes, keepdims=True).reshape(shape) if axes else g


def grad_as_lists(f: Any, argnums: Any = 0) -> Any:
    """Right, written otherwise: a list for a tuple argnums, and any output with an axis
    refused (shape (1, 1) too, as jax.grad does)."""

    def gradient(*args: Any) -> Any:
        tensors = [Tensor(np.asarray(x)) for x in args]
        out = f(*tensors)
        if out.value.ndim:
            raise TypeError("grad: f must return a 0-d Tensor")
        backward(out)
        if isinstance(argnums, int):
            return tensors[argnums].grad
        return [tensors[i].grad for i in argnums]

    return gradient
