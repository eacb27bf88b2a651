"""Chapter 02's known wrong tapes, written as a learner writes them: a `Tensor`, its
operations, and wrong `toposort`, `backward` and `grad` functions.

The invokes of `backward` and `grad` build each program from the `Tensor` and operations
found where the learner's function was defined (`fn.__globals__`); for these wrong answers
that is this module, which is the learner's namespace in miniature. Its rules come from the
one rule table, `autograder.harness.ch02_reverse_mode_tape.RULES`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autograder.harness.ch02_reverse_mode_tape import FORWARD, RULES, directional_derivative

Order = Callable[["Tensor"], list["Tensor"]]
Rules = dict[str, Callable[..., tuple]]


class Tensor:
    """A traced value: its array, the values it was computed from, the op and its params."""

    def __init__(self, value: Any, parents: Sequence[Tensor] = (), op: str = "input",
                 **params: Any) -> None:
        self.value = np.asarray(value)
        self.parents, self.op, self.params = tuple(parents), op, params
        self.grad = np.zeros_like(self.value)


def _op(name: str) -> Callable[..., Tensor]:
    def operation(*inputs: Tensor, **params: Any) -> Tensor:
        return Tensor(FORWARD[name](*(x.value for x in inputs), **params), inputs, name,
                      **params)

    return operation


add, sub, mul, div, matmul = (_op(name) for name in ("add", "sub", "mul", "div", "matmul"))
neg, exp, log, tanh, reduce_sum = (_op(name) for name in ("neg", "exp", "log", "tanh", "sum"))


# ---------------------------------------------------------------- orders, right and wrong


def depth_first(root: Tensor, pre: bool = False, reverse_parents: bool = False
                ) -> list[Tensor]:
    """Depth-first from the root. Post-order (the default) lists every node after all its
    parents, a topological order; pre-order lists a node BEFORE visiting its parents."""
    order: list[Tensor] = []
    seen: set[int] = set()

    def visit(node: Tensor) -> None:
        if id(node) in seen:
            return
        seen.add(id(node))
        if pre:
            order.append(node)
        for parent in reversed(node.parents) if reverse_parents else node.parents:
            visit(parent)
        if not pre:
            order.append(node)

    visit(root)
    return order


def breadth_first(root: Tensor) -> list[Tensor]:
    """Root first, in queue order: not a reverse topological order in general."""
    order, queue, seen = [], [root], {id(root)}
    while queue:
        node = queue.pop(0)
        order.append(node)
        for parent in node.parents:
            if id(parent) not in seen:
                seen.add(id(parent))
                queue.append(parent)
    return order


def requeue(root: Tensor) -> list[Tensor]:
    """A queue that takes a node back whenever it is not waiting in it: repeated visits."""
    order, queue = [], [root]
    while queue:
        node = queue.pop(0)
        order.append(node)
        for parent in node.parents:
            if all(parent is not waiting for waiting in queue):
                queue.append(parent)
    return order


def reverse_topological(root: Tensor) -> list[Tensor]:
    return depth_first(root)[::-1]


def reverse_topological_other_way(root: Tensor) -> list[Tensor]:
    """Reverse topological too, parents explored last to first."""
    return depth_first(root, reverse_parents=True)[::-1]


def toposort_breadth_first(root: Tensor) -> list[Tensor]:
    """The wrong toposort: a breadth-first order, reversed."""
    return breadth_first(root)[::-1]


def toposort_pre_order(root: Tensor) -> list[Tensor]:
    """The wrong toposort: a depth-first PRE-order, reversed."""
    return depth_first(root, pre=True)[::-1]


# ---------------------------------------------------------------- backward and grad


def make_backward(order: Order = reverse_topological, rules: Rules = RULES,
                  accumulate: bool = True, node_cotangent: bool = True,
                  seed_with_ones: bool = False) -> Callable[[Tensor, np.ndarray], None]:
    """A learner's backward(root, g); each flag off (or on, for the seed) is a known
    mistake: `=` instead of `+=`, ones instead of the node's own cotangent."""

    def backward(root: Tensor, g: np.ndarray) -> None:
        root.grad = root.grad + (np.ones_like(g) if seed_with_ones else g)
        for node in order(root):
            if not node.parents:
                continue
            g_node = node.grad if node_cotangent else np.ones_like(node.grad)
            pulled = rules[node.op](g_node, *(p.value for p in node.parents), **node.params)
            for parent, c in zip(node.parents, pulled, strict=False):
                parent.grad = parent.grad + c if accumulate else c

    return backward


def make_grad(backward: Callable[[Tensor, np.ndarray], None]) -> Callable[..., Any]:
    """A learner's grad(f, argnums=0) built on this backward."""

    def grad(f: Callable[..., Tensor], argnums: int | tuple[int, ...] = 0) -> Callable[..., Any]:
        def gradient(*args: Any) -> Any:
            inputs = [Tensor(a) for a in args]
            out = f(*inputs)
            if out.value.shape != ():
                raise TypeError(f"grad needs a scalar output, not one of shape {out.value.shape}")
            backward(out, np.ones_like(out.value))
            if isinstance(argnums, int):
                return inputs[argnums].grad
            return tuple(inputs[i].grad for i in argnums)

        return gradient

    return grad


# ---------------------------------------------------------------- find_wrong_rule


def primals_for(op: str, rng: np.random.Generator, dtype: Any) -> list[np.ndarray]:
    """3 x 3 primals for op: positive for log, away from zero for div's divisor."""
    x = rng.uniform(0.5, 2.0, (3, 3)) if op == "log" else rng.uniform(-1.5, 1.5, (3, 3))
    y = rng.choice([-1.0, 1.0], (3, 3)) * rng.uniform(0.5, 2.0, (3, 3))
    return [p.astype(dtype) for p in ((x, y) if op in BINARY_OPS else (x,))]


BINARY_OPS = ("add", "sub", "mul", "div", "matmul")


def rule_error(vjp_rule: Callable[..., tuple], forward: Callable[..., Any], op: str,
               dtype: Any, rng: np.random.Generator, params: dict[str, Any]) -> float:
    """How far the rule's cotangents are from finite differences, entry by entry: entry j
    of a primal's cotangent is the derivative of <g, forward(primals)> along that primal's
    j-th basis direction. The largest difference, over the largest cotangent (at least 1)."""
    primals = primals_for(op, rng, dtype)
    out = np.asarray(forward(*primals, **params))
    g = rng.normal(size=out.shape).astype(dtype)  # random: ones would hide where g goes
    cotangents = vjp_rule(op, g, *primals, **params)
    scale = max(1.0, *(float(np.abs(c).max(initial=0.0)) for c in cotangents))
    worst = 0.0
    for i, primal in enumerate(primals):
        for j in np.ndindex(primal.shape):
            basis = np.zeros(primal.shape, dtype)
            basis[j] = 1

            def along(t: np.ndarray, i: int = i, basis: np.ndarray = basis) -> np.ndarray:
                moved = [p + t * basis if k == i else p for k, p in enumerate(primals)]
                return np.asarray(np.sum(g * forward(*moved, **params)), dtype)

            numeric = float(directional_derivative(along, np.zeros((), dtype),
                                                   np.ones((), dtype)))
            worst = max(worst, abs(numeric - float(cotangents[i][j])) / scale)
    return worst


def make_find_wrong_rule(tolerances: dict[str, float] | None = None,
                         axes: tuple[int | None, ...] = (None, 0, 1), first: bool = True
                         ) -> Callable[..., str | None]:
    """A learner's find_wrong_rule(vjp_rule, forward, dtype); each argument off its default
    is a known mistake: a float64 tolerance for float32, sum checked over one axis only, the
    last flagged op returned instead of the first."""
    tolerance = tolerances or {"float32": 1e-3, "float64": 1e-6}

    def find_wrong_rule(vjp_rule: Callable[..., tuple], forward: dict[str, Callable],
                        dtype: Any) -> str | None:
        rng = np.random.default_rng(0)
        flagged = None
        for op, function in forward.items():
            for params in ([{"axis": a} for a in axes] if op == "sum" else [{}]):
                if not rule_error(vjp_rule, function, op, dtype, rng, params) <= tolerance[
                        np.dtype(dtype).name]:
                    flagged = op
                    if first:
                        return op
        return flagged

    return find_wrong_rule
