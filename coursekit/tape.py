"""Chapter 02's teaching helpers, driven by the learner's own engine: its traced graph drawn
with matplotlib, a step-through widget for its backward pass, and a timer.

Nothing here differentiates, orders or records anything: the graph is drawn in the order the
learner's `toposort` gives, and the steps are those of the learner's `backward`, seen by
wrapping each node's `vjp` while it runs. A node is whatever the learner's `Tensor` is, read
through `.value`, `.grad`, `.parents`, `.vjp` and `.op` (and `.name`, which these helpers
set). The grader never imports this module; notebooks and tests do.
"""

from __future__ import annotations

import math
import time
import timeit
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autograder.locale import say

Node = Any  # the learner's Tensor
Order = Callable[[Node], list[Node]]


def name_nodes(root: Node, toposort: Order, names: dict[str, Node] | None = None) -> list[Node]:
    """The graph's nodes in the learner's order, each given a name (its own, else v0, v1...)."""
    by_id = {id(t): n for n, t in (names or {}).items()}
    nodes = toposort(root)
    for k, node in enumerate(nodes):
        node.name = by_id.get(id(node), getattr(node, "name", "") or f"v{k}")
    return nodes


# ---------------------------------------------------------------- the steps of a backward pass


@dataclass
class Step:
    """One call of a node's VJP during the learner's backward pass: the node, the cotangent
    it passed on, and what each parent was sent."""

    node: Node
    held: np.ndarray
    sent: list[tuple[Node, np.ndarray]]


@dataclass
class Recording:
    """The steps of one backward pass, and every node's .grad before each step and after
    the last (`grads[k]`: after k steps)."""

    nodes: list[Node]
    steps: list[Step] = field(default_factory=list)
    grads: list[dict[int, np.ndarray]] = field(default_factory=list)


def _grads(nodes: Sequence[Node]) -> dict[int, np.ndarray]:
    return {id(node): np.array(node.grad, dtype=float) for node in nodes}


def record_backward(root: Node, toposort: Order, run: Callable[[Node], Any]) -> Recording:
    """Run `run(root)` (the learner's backward pass on this graph) with every node's `vjp`
    wrapped so that each call is recorded, with the cotangents held just before it."""
    recording = Recording(toposort(root))
    originals = {id(node): node.vjp for node in recording.nodes}

    def wrapped(node: Node, vjp: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def vjp_recorded(g: Any) -> Any:
            recording.grads.append(_grads(recording.nodes))
            sent = vjp(g)
            recording.steps.append(
                Step(
                    node,
                    np.array(g, dtype=float),
                    [(p, np.asarray(c)) for p, c in zip(node.parents, sent, strict=False)],
                )
            )
            return sent

        return vjp_recorded

    for node in recording.nodes:
        if node.vjp is not None:
            node.vjp = wrapped(node, node.vjp)
    try:
        run(root)
    finally:
        for node in recording.nodes:
            node.vjp = originals[id(node)]
    recording.grads.append(_grads(recording.nodes))
    return recording


def step_table(steps: Sequence[Step]) -> list[str]:
    """One line per backward step: which node passed which cotangent to whom."""
    lines = []
    for k, step in enumerate(steps, start=1):
        given = ", ".join(
            f"{p.name} += {np.array2string(np.asarray(c), precision=3)}" for p, c in step.sent
        )
        lines.append(
            say(
                "step {k}: {name} ({op}) holds {held} -> {given}",
                k=k,
                name=step.node.name,
                op=step.node.op,
                held=np.array2string(step.held, precision=3),
                given=given,
            )
        )
    return lines


# ---------------------------------------------------------------- the graph, drawn


def _depths(nodes: list[Node]) -> dict[int, int]:
    depth: dict[int, int] = {}
    for node in nodes:  # the learner's order: parents first
        depth[id(node)] = 1 + max((depth.get(id(p), 0) for p in node.parents), default=-1)
    return depth


def layout(nodes: list[Node]) -> dict[int, tuple[float, float]]:
    """x: the longest path from an input; y: spread within each column."""
    depth = _depths(nodes)
    columns: dict[int, list[Node]] = {}
    for node in nodes:
        columns.setdefault(depth[id(node)], []).append(node)
    position = {}
    for d, column in columns.items():
        for k, node in enumerate(column):
            position[id(node)] = (float(d), (len(column) - 1) / 2 - k)
    return position


def node_label(node: Node, grad: np.ndarray | None = None) -> str:
    text = f"{node.name}: {node.op}\n" + say("shape {shape}", shape=np.shape(node.value))
    if grad is not None and np.any(grad):
        text += f"\n|grad| {np.linalg.norm(grad):.3g}"
    return text


def draw_tape(
    root: Node,
    toposort: Order,
    grads: dict[int, np.ndarray] | None = None,
    highlight: Node | None = None,
    receivers: Sequence[Node] = (),
    ax: Any = None,
):
    """The traced graph, inputs on the left, the root on the right; no system binary needed.

    Each box shows its node's |grad| from `grads` (by id; else the node's own .grad).
    `highlight` (the node being visited) is drawn in red, `receivers` (its parents, which
    receive a contribution) in orange.
    """
    import matplotlib.pyplot as plt

    nodes = toposort(root)
    grads = _grads(nodes) if grads is None else grads
    position = layout(nodes)
    if ax is None:
        width = 1.9 * (1 + max(x for x, _ in position.values()))
        height = 1.2 * (1 + max(abs(y) for _, y in position.values())) + 1.6
        _, ax = plt.subplots(figsize=(max(width, 4), height))
    receiving = {id(r) for r in receivers}
    arc = 0.0  # how high the curved edges rise above their nodes
    for node in nodes:
        for parent in {id(p): p for p in node.parents}.values():
            (x0, y0), (x1, y1) = position[id(parent)], position[id(node)]
            span = x1 - x0  # an edge skipping columns is curved, so it stays visible
            arc = max(arc, 0.13 * span * span * (span > 1))
            ax.annotate(
                "",
                xy=(x1 - 0.3, y1),
                xytext=(x0 + 0.3, y0),
                arrowprops={
                    "arrowstyle": "->",
                    "color": "grey",
                    "shrinkA": 0,
                    "shrinkB": 0,
                    "connectionstyle": f"arc3,rad={-0.25 * (span > 1) * span}",
                },
            )
    for node in nodes:
        colour = (
            "#cf222e" if node is highlight else "#d9822b" if id(node) in receiving else "#dbe9f6"
        )
        x, y = position[id(node)]
        ax.text(
            x,
            y,
            node_label(node, grads.get(id(node))),
            ha="center",
            va="center",
            fontsize=8,
            bbox={"boxstyle": "round", "facecolor": colour, "edgecolor": "black"},
        )
    xs = [x for x, _ in position.values()]
    ys = [y for _, y in position.values()]
    ax.set_xlim(min(xs) - 0.6, max(xs) + 0.6)
    ax.set_ylim(min(ys) - 0.8, max(ys) + 0.6 + arc)
    ax.axis("off")
    return ax.figure


def step_through(root: Node, toposort: Order, run: Callable[[Node], Any]):
    """A slider over the steps of the learner's backward pass `run(root)` on this graph
    (freshly traced, its nodes named): the graph as it is after step k, the visited node in
    red, the nodes receiving a contribution in orange."""
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    recording = record_backward(root, toposort, run)
    slider = widgets.IntSlider(value=0, min=0, max=len(recording.steps), description=say("step"))
    out = widgets.Output()

    def show(change: Any = None) -> None:
        k = slider.value
        step = recording.steps[k - 1] if k else None
        out.clear_output(wait=True)
        with out:
            fig = draw_tape(
                root,
                toposort,
                recording.grads[k],
                highlight=step.node if step else None,
                receivers=[p for p, _ in step.sent] if step else (),
            )
            plt.show()
            plt.close(fig)
            print(
                step_table(recording.steps)[k - 1]
                if step
                else say("step 0: only the root holds a cotangent")
            )

    slider.observe(show, names="value")
    show()
    return widgets.VBox([slider, out])


# ---------------------------------------------------------------- timing


def seconds_per_call(fn: Callable[[], Any], repeats: int, at_least: float = 0.02) -> float:
    """Seconds per call of fn: the fastest of `repeats` timings (after one call to warm it up),
    each of as many calls as last `at_least` seconds. A compiled gradient of a few numbers takes
    tens of microseconds: one call timed alone, or the median of such timings, varied two- to
    threefold between runs (the clock, the scheduler, XLA's threads), enough to fail chapter
    02's assertions now and then. The fastest is the steadiest, as timeit's documentation says:
    slower timings are other work getting in the way."""
    fn()
    start = time.perf_counter()
    fn()
    once = time.perf_counter() - start
    number = max(1, math.ceil(at_least / max(once, 1e-9)))
    return min(timeit.Timer(fn).repeat(repeat=repeats, number=number)) / number
