"""Chapter 02's teaching helpers: a complete reference tape, its graph drawn with matplotlib,
a step-through widget for the backward pass, and the tracing-overhead measurement.

The reference tape has the interface the chapter asks learners to build (`Tensor`, the
operations `add` ... `reduce_sum`, `vjp_rule`, `toposort`, `backward`, `grad`), so the
notebook's demonstrations run even before the exercises are answered. The grader never
imports this module; notebooks and tests do.
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autograder.exercises.tape_answers import breadth_first
from autograder.harness.ch02_reverse_mode_tape import RULES as CHAPTER_RULES
from autograder.harness.ch02_reverse_mode_tape import toposort as reference_toposort

# ---------------------------------------------------------------- the reference tape


# The chapter's rules are defined once, in the module the grader's known wrong answers use
# too (the grader itself never imports coursekit). This tape keeps its own dict of them, so a
# notebook or a test may swap one rule without touching the grader's.
RULES: dict[str, Callable[..., tuple]] = dict(CHAPTER_RULES)


def vjp_rule(op: str, g: np.ndarray, *primals: np.ndarray, **params: Any) -> tuple:
    return RULES[op](g, *primals, **params)


class Tensor:
    """A value on the tape: its array, the op and parents it came from, its VJP closure."""

    def __init__(self, value: Any, parents: Sequence[Tensor] = (), op: str = "input",
                 name: str = "") -> None:
        self.value = np.asarray(value)
        self.parents = tuple(parents)
        self.op = op
        self.name = name
        self.grad = np.zeros_like(self.value)
        self.vjp: Callable[[np.ndarray], tuple] | None = None

    def __repr__(self) -> str:
        return f"Tensor({self.name or self.op}, shape={self.value.shape})"

    def __add__(self, other: Tensor) -> Tensor:
        return add(self, other)

    def __sub__(self, other: Tensor) -> Tensor:
        return sub(self, other)

    def __mul__(self, other: Tensor) -> Tensor:
        return mul(self, other)

    def __truediv__(self, other: Tensor) -> Tensor:
        return div(self, other)

    def __matmul__(self, other: Tensor) -> Tensor:
        return matmul(self, other)

    def __neg__(self) -> Tensor:
        return neg(self)


def record(op: str, value: Any, parents: Sequence[Tensor], **params: Any) -> Tensor:
    """A new node; its VJP closure keeps the primals (the residuals) the rule needs."""
    out = Tensor(value, parents, op)
    primals = [p.value for p in parents]
    out.vjp = lambda g: vjp_rule(op, g, *primals, **params)
    return out


def add(x: Tensor, y: Tensor) -> Tensor:
    return record("add", x.value + y.value, (x, y))


def sub(x: Tensor, y: Tensor) -> Tensor:
    return record("sub", x.value - y.value, (x, y))


def mul(x: Tensor, y: Tensor) -> Tensor:
    return record("mul", x.value * y.value, (x, y))


def div(x: Tensor, y: Tensor) -> Tensor:
    return record("div", x.value / y.value, (x, y))


def matmul(x: Tensor, y: Tensor) -> Tensor:
    return record("matmul", x.value @ y.value, (x, y))


def neg(x: Tensor) -> Tensor:
    return record("neg", -x.value, (x,))


def exp(x: Tensor) -> Tensor:
    return record("exp", np.exp(x.value), (x,))


def log(x: Tensor) -> Tensor:
    return record("log", np.log(x.value), (x,))


def tanh(x: Tensor) -> Tensor:
    return record("tanh", np.tanh(x.value), (x,))


def reduce_sum(x: Tensor, axis: int | None = None) -> Tensor:
    return record("sum", np.sum(x.value, axis=axis), (x,), axis=axis)


# The depth-first post-order and the breadth-first (buggy) order are the grader's own: the
# reference toposort the checks use, and the walk of the known wrong answer.
toposort = reference_toposort
bfs_order = breadth_first


def reverse_topological(root: Tensor) -> list[Tensor]:
    return toposort(root)[::-1]


def backward(root: Tensor, g: np.ndarray,
             order: Callable[[Tensor], list[Tensor]] = reverse_topological) -> None:
    """Pull `g`, the root's cotangent, back from the root, accumulating `.grad` on every node."""
    for _ in backward_steps(root, g, order):
        pass


def backward_steps(root: Tensor, g: np.ndarray,
                   order: Callable[[Tensor], list[Tensor]] = reverse_topological):
    """The backward pass one node at a time: yields (node, cotangent it passed on,
    [(parent, contribution)]) so a widget can show each step."""
    root.grad += g
    yield from visit_steps(root, order)


def visit_steps(root: Tensor, order: Callable[[Tensor], list[Tensor]] = reverse_topological):
    """The steps of `backward_steps` after the root was seeded: each applied, then yielded."""
    for node in order(root):
        if node.vjp is None:
            continue
        held = node.grad.copy()
        pulled = node.vjp(held)
        for parent, contribution in zip(node.parents, pulled, strict=True):
            parent.grad += contribution
        yield node, held, list(zip(node.parents, pulled, strict=True))


def grad(f: Callable[..., Tensor], argnums: int | tuple[int, ...] = 0) -> Callable[..., Any]:
    def gradient(*args: Any) -> Any:
        inputs = [Tensor(a) for a in args]
        out = f(*inputs)
        if out.value.shape != ():
            raise TypeError(f"grad requires a scalar output, got shape {out.value.shape}.")
        backward(out, np.ones_like(out.value))
        if isinstance(argnums, int):
            return inputs[argnums].grad
        return tuple(inputs[i].grad for i in argnums)

    return gradient


def name_nodes(root: Tensor, names: dict[str, Tensor] | None = None) -> list[Tensor]:
    """The graph's nodes in topological order, each given a name (its own, else v0, v1...)."""
    by_id = {id(t): n for n, t in (names or {}).items()}
    nodes = toposort(root)
    for k, node in enumerate(nodes):
        node.name = by_id.get(id(node), node.name or f"v{k}")
    return nodes


# ---------------------------------------------------------------- the graph, drawn


def _depths(nodes: list[Tensor]) -> dict[int, int]:
    depth: dict[int, int] = {}
    for node in nodes:  # topological order: parents first
        depth[id(node)] = 1 + max((depth[id(p)] for p in node.parents), default=-1)
    return depth


def layout(nodes: list[Tensor]) -> dict[int, tuple[float, float]]:
    """x: the longest path from an input; y: spread within each column."""
    depth = _depths(nodes)
    columns: dict[int, list[Tensor]] = {}
    for node in nodes:
        columns.setdefault(depth[id(node)], []).append(node)
    position = {}
    for d, column in columns.items():
        for k, node in enumerate(column):
            position[id(node)] = (float(d), (len(column) - 1) / 2 - k)
    return position


def node_label(node: Tensor, show_grad: bool = True) -> str:
    text = f"{node.name}: {node.op}\nshape {node.value.shape}"
    if show_grad and np.any(node.grad):
        text += f"\n|grad| {np.linalg.norm(node.grad):.3g}"
    return text


def draw_tape(root: Tensor, show_grad: bool = True, highlight: Tensor | None = None,
              receivers: Sequence[Tensor] = (), ax: Any = None):
    """The traced graph, inputs on the left, the root on the right; no system binary needed.

    `highlight` (the node being visited) is drawn in red, `receivers` (its parents, which
    receive a contribution) in orange.
    """
    import matplotlib.pyplot as plt

    nodes = toposort(root)
    position = layout(nodes)
    if ax is None:
        width = 1.9 * (1 + max(x for x, _ in position.values()))
        height = 1.2 * (1 + max(abs(y) for _, y in position.values())) + 1.6
        _, ax = plt.subplots(figsize=(max(width, 4), height))
    receiving = {id(r) for r in receivers}
    arc = 0.0  # how high the curved edges rise above their nodes
    for node in nodes:
        for parent in set(node.parents):
            (x0, y0), (x1, y1) = position[id(parent)], position[id(node)]
            span = x1 - x0  # an edge skipping columns is curved, so it stays visible
            arc = max(arc, 0.13 * span * span * (span > 1))
            ax.annotate("", xy=(x1 - 0.3, y1), xytext=(x0 + 0.3, y0),
                        arrowprops={"arrowstyle": "->", "color": "grey", "shrinkA": 0,
                                    "shrinkB": 0,
                                    "connectionstyle": f"arc3,rad={-0.25 * (span > 1) * span}"})
    for node in nodes:
        colour = ("#cf222e" if node is highlight else "#d9822b" if id(node) in receiving
                  else "#dbe9f6")
        x, y = position[id(node)]
        ax.text(x, y, node_label(node, show_grad), ha="center", va="center", fontsize=8,
                bbox={"boxstyle": "round", "facecolor": colour, "edgecolor": "black"})
    xs = [x for x, _ in position.values()]
    ys = [y for _, y in position.values()]
    ax.set_xlim(min(xs) - 0.6, max(xs) + 0.6)
    ax.set_ylim(min(ys) - 0.8, max(ys) + 0.6 + arc)
    ax.axis("off")
    return ax.figure


def step_table(steps: list) -> list[str]:
    """One line per backward step: which node passed which cotangent to whom."""
    lines = []
    for k, (node, held, contributions) in enumerate(steps, start=1):
        given = ", ".join(
            f"{p.name} += {np.array2string(np.asarray(c), precision=3)}"
            for p, c in contributions
        )
        lines.append(f"step {k}: {node.name} ({node.op}) holds "
                     f"{np.array2string(held, precision=3)} -> {given}")
    return lines


def replay(build: Callable[[], tuple[Tensor, dict[str, Tensor]]], g: np.ndarray,
           k: int | None, order: Callable[[Tensor], list[Tensor]] = reverse_topological,
           ) -> tuple[Tensor, list]:
    """The graph after exactly `k` backward steps (all of them for None), traced afresh.

    The root is seeded first, so at k = 0 it alone holds a cotangent. `islice` then asks
    for k steps and no more: each step is applied before it is yielded, so pulling one
    more and discarding it (the old loop) left the graph one step ahead of its caption.
    """
    root, names = build()
    name_nodes(root, names)
    root.grad += g
    return root, list(itertools.islice(visit_steps(root, order), k))


def step_through(build: Callable[[], tuple[Tensor, dict[str, Tensor]]], g: np.ndarray,
                 order: Callable[[Tensor], list[Tensor]] = reverse_topological):
    """A slider over the backward steps: the graph as it is after step k, the visited node
    in red, the nodes receiving a contribution in orange.

    `build` traces the function afresh (returning the root and names for its nodes), so
    each position of the slider replays the backward pass from zero cotangents.
    """
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    _, all_steps = replay(build, g, None, order)
    slider = widgets.IntSlider(value=0, min=0, max=len(all_steps), description="step")
    out = widgets.Output()

    def show(change: Any = None) -> None:
        root, steps = replay(build, g, slider.value, order)
        out.clear_output(wait=True)
        with out:
            node, _, contributions = steps[-1] if steps else (None, None, [])
            fig = draw_tape(root, highlight=node, receivers=[p for p, _ in contributions])
            plt.show()
            plt.close(fig)
            print("\n".join(step_table(steps)[-1:]) or "step 0: only the root holds a cotangent")

    slider.observe(show, names="value")
    show()
    return widgets.VBox([slider, out])


# ---------------------------------------------------------------- tracing overhead


def mlp_problem(batch: int = 32, width: int = 64, depth: int = 3, seed: int = 0) -> list:
    """x, then (W, b) per layer, float32."""
    rng = np.random.default_rng(seed)
    arrays = [rng.normal(size=(batch, width)).astype(np.float32)]
    for _ in range(depth):
        arrays.append((rng.normal(size=(width, width)) / np.sqrt(width)).astype(np.float32))
        arrays.append(np.zeros((1, width), np.float32))
    return arrays


def mlp_loss_tape(x: Tensor, *params: Tensor) -> Tensor:
    ones = Tensor(np.ones((x.value.shape[0], 1), x.value.dtype))  # to broadcast the bias
    h = x
    for w, b in zip(params[::2], params[1::2], strict=True):
        h = tanh(add(matmul(h, w), matmul(ones, b)))
    return reduce_sum(mul(h, h))


def mlp_loss_jax(x: Any, *params: Any) -> Any:
    import jax.numpy as jnp

    h = x
    for w, b in zip(params[::2], params[1::2], strict=True):
        h = jnp.tanh(h @ w + b)
    return jnp.sum(h * h)


def _median_seconds(fn: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure_overhead(repeats: int = 20, **sizes: int) -> dict[str, float]:
    """Seconds per MLP gradient: the reference tape vs jax.jit(jax.grad) (compiled first),
    after checking that the two gradients agree."""
    import jax

    arrays = mlp_problem(**sizes)
    argnums = tuple(range(1, len(arrays)))
    tape_grad = grad(mlp_loss_tape, argnums=argnums)
    jit_grad = jax.jit(jax.grad(mlp_loss_jax, argnums=argnums))
    for ours, theirs in zip(tape_grad(*arrays), jit_grad(*arrays), strict=True):
        np.testing.assert_allclose(ours, np.asarray(theirs), rtol=1e-3, atol=1e-4)
    jax.block_until_ready(jit_grad(*arrays))
    return {
        "tape": _median_seconds(lambda: tape_grad(*arrays), repeats),
        "jit": _median_seconds(lambda: jax.block_until_ready(jit_grad(*arrays)), repeats),
    }
