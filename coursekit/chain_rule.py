"""The chain rule, seen three ways: tangent lines, a computation graph, and measured cost.

* `slopes_at` and `chain_rule_explorer`: pick f and g, move x, and see that the slope of
  g(f(x)) is the product of the two tangent slopes.
* `draw_graph`: the chapter's small network drawn as a graph, primal values flowing forward
  and cotangents flowing backward.
* `measure_split` and `plot_split`: the cost of pulling a cotangent back with a VJP against
  building the full Jacobian and contracting it with `tensordot`, as sizes grow.

The grader never imports this module; notebooks do.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from autograder.locale import say

Scalar = Callable[[np.ndarray], np.ndarray]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


# name -> (function, its derivative); every one is defined on the whole real line.
FUNCTIONS: dict[str, tuple[Scalar, Scalar]] = {
    "sin": (np.sin, np.cos),
    "exp": (np.exp, np.exp),
    "tanh": (np.tanh, lambda x: 1 - np.tanh(x) ** 2),
    "square": (np.square, lambda x: 2 * x),
    "cube": (lambda x: x**3, lambda x: 3 * x**2),
    "sigmoid": (_sigmoid, lambda x: _sigmoid(x) * (1 - _sigmoid(x))),
    "3x": (lambda x: 3 * x, lambda x: np.full_like(x, 3.0)),
}


@dataclass(frozen=True)
class ChainAt:
    """Everything the one-variable chain rule says about g(f(x)) at one point."""

    f_name: str
    g_name: str
    x: float
    u: float  # f(x), the point where g is linearised
    z: float  # g(f(x))
    df: float  # f'(x)
    dg: float  # g'(f(x))
    numeric: float  # slope of g(f(.)) at x by a central difference

    @property
    def product(self) -> float:
        return self.dg * self.df

    def describe(self) -> str:
        """Five short lines, rounded, so the text is the same on every machine."""
        return "\n".join(
            [
                f"x = {self.x:.4f}, f = {self.f_name}, g = {self.g_name}",
                f"u = f(x) = {self.u:.4f}        f'(x) = {self.df:.4f}",
                f"z = g(u) = {self.z:.4f}        g'(u) = {self.dg:.4f}",
                say("slopes multiply: g'(u) * f'(x) = {slope}", slope=f"{self.product:.4f}"),
                say(
                    "slope of g(f(x)) measured with a central difference: {slope}",
                    slope=f"{self.numeric:.4f}",
                ),
            ]
        )

    def __str__(self) -> str:
        return self.describe()


def slopes_at(f_name: str, g_name: str, x: float, step: float = 1e-5) -> ChainAt:
    """The slopes of f at x, of g at f(x), and of g(f(.)) at x (measured, not derived)."""
    f, df = FUNCTIONS[f_name]
    g, dg = FUNCTIONS[g_name]
    x = float(x)
    u = float(f(np.float64(x)))

    def composite(t: float) -> float:
        return float(g(f(np.float64(t))))

    numeric = (composite(x + step) - composite(x - step)) / (2 * step)
    return ChainAt(
        f_name,
        g_name,
        x,
        u,
        float(g(np.float64(u))),
        float(df(np.float64(x))),
        float(dg(np.float64(u))),
        numeric,
    )


def plot_chain(f_name: str, g_name: str, x: float, width: float = 1.0):
    """Three panels: f near x, g near u = f(x), and g(f(.)) near x, each with its tangent."""
    import matplotlib.pyplot as plt

    at = slopes_at(f_name, g_name, x)
    f, _ = FUNCTIONS[f_name]
    g, _ = FUNCTIONS[g_name]
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.3), constrained_layout=True)
    panels = [
        (
            axes[0],
            f,
            at.x,
            at.u,
            at.df,
            say("f = {name} near x", name=f_name),
            "x",
            f"f'(x) = {at.df:.3f}",
        ),
        (
            axes[1],
            g,
            at.u,
            at.z,
            at.dg,
            say("g = {name} near u = f(x)", name=g_name),
            "u",
            f"g'(u) = {at.dg:.3f}",
        ),
        (
            axes[2],
            lambda t: g(f(t)),
            at.x,
            at.z,
            at.product,
            say("g(f(x)) near x"),
            "x",
            f"g'(u) f'(x) = {at.product:.3f}",
        ),
    ]
    for ax, fn, x0, y0, slope, title, label, legend in panels:
        ts = np.linspace(x0 - width, x0 + width, 201)
        ax.plot(ts, fn(ts), color="C0", label=say("function"))
        tangent = say("tangent, {slope}", slope=legend)
        ax.plot(ts, y0 + slope * (ts - x0), "--", color="C1", label=tangent)
        ax.plot([x0], [y0], "o", color="C3")
        ax.set(title=title, xlabel=label)
        ax.legend(loc="best", fontsize=8)
    return fig


def figure_png(fig) -> bytes:
    """A figure rendered to PNG bytes (closed afterwards), for an ipywidgets Image."""
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80)
    plt.close(fig)
    return buffer.getvalue()


def chain_rule_explorer(f_name: str = "sin", g_name: str = "exp", x: float = 0.5):
    """Pick f and g, move x: the tangent lines, their slopes, and that the slopes multiply."""
    import html

    import ipywidgets as widgets

    pick_f = widgets.Dropdown(options=list(FUNCTIONS), value=f_name, description="f")
    pick_g = widgets.Dropdown(options=list(FUNCTIONS), value=g_name, description="g")
    slider = widgets.FloatSlider(value=x, min=-2.0, max=2.0, step=0.05, description="x")
    picture = widgets.Image(format="png")
    text = widgets.HTML()

    def refresh(_change: object = None) -> None:
        picture.value = figure_png(plot_chain(pick_f.value, pick_g.value, slider.value))
        at = slopes_at(pick_f.value, pick_g.value, slider.value)
        text.value = f"<pre>{html.escape(at.describe())}</pre>"

    for control in (pick_f, pick_g, slider):
        control.observe(refresh, names="value")
    refresh()
    return widgets.VBox([widgets.HBox([pick_f, pick_g, slider]), picture, text])


# ---------------------------------------------------------------- the computation graph

# The chapter's network: h = x @ W + b, y = tanh(h), loss = mean((y - y0)**2).
NODES = {
    "x": (0.0, 2.0),
    "W": (0.0, 0.0),
    "b": (2.4, -0.7),
    "h": (2.4, 1.0),
    "y": (4.6, 1.0),
    "y0": (6.9, 2.3),
    "loss": (6.9, 1.0),
}
OPERATIONS = {"h": "x @ W + b", "y": "tanh(h)", "loss": "mean((y - y0)²)"}
# The one edge label in words rather than a formula: drawn in the notebook's language.
SUMMED = "g_b = g_h summed\nover the batch"
# Each edge (primal input, output): the cotangent that flows back along it, where its label
# goes, and which way the backward arrow bends. y0 is a constant: nothing flows back to it.
EDGES = {
    ("x", "h"): ("g_x = g_h Wᵀ", (0.9, 2.3), 0.3),
    ("W", "h"): ("g_W = xᵀ g_h", (0.9, -0.3), -0.3),
    ("b", "h"): (SUMMED, (3.35, 0.15), -0.5),
    ("h", "y"): ("g_h = g_y · (1 - y²)", (3.5, 1.52), 0.3),
    ("y", "loss"): ("g_y = 2 (y - y0) / N", (5.75, 1.52), 0.3),
    ("y0", "loss"): ("", (0.0, 0.0), 0.0),
}


def draw_graph(shapes: dict[str, tuple[int, ...]] | None = None):
    """The network as a graph: primals forward (grey), cotangents backward (red), with shapes.

    `shapes` maps node names to the shapes to print in their boxes; each cotangent has the
    shape of its primal, which is why one label serves both.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch

    shapes = shapes or {}
    fig, ax = plt.subplots(figsize=(10, 4.2), constrained_layout=True)
    boxes = {}
    for name, (px, py) in NODES.items():
        leaf = name not in OPERATIONS
        label = name if leaf else f"{name} = {OPERATIONS[name]}"
        if name in shapes:
            label += "\n" + say("shape {shape}", shape=shapes[name])
        text = ax.text(
            px,
            py,
            label,
            ha="center",
            va="center",
            fontsize=10,
            bbox={"boxstyle": "round,pad=0.5", "fc": "#eef" if leaf else "#efe", "ec": "0.4"},
        )
        boxes[name] = text.get_bbox_patch()
    for (source, target), (cotangent, (lx, ly), bend) in EDGES.items():
        ax.add_patch(
            FancyArrowPatch(
                NODES[source],
                NODES[target],
                patchA=boxes[source],
                patchB=boxes[target],
                arrowstyle="-|>",
                mutation_scale=14,
                color="0.5",
                lw=1.4,
            )
        )
        if cotangent:
            ax.add_patch(
                FancyArrowPatch(
                    NODES[target],
                    NODES[source],
                    patchA=boxes[target],
                    patchB=boxes[source],
                    arrowstyle="-|>",
                    mutation_scale=14,
                    color="C3",
                    lw=1.4,
                    ls="--",
                    connectionstyle=f"arc3,rad={bend}",
                )
            )
            words = say(SUMMED) if cotangent == SUMMED else cotangent
            ax.text(lx, ly, words, color="C3", ha="center", va="center", fontsize=9)
    ax.text(6.9, 0.45, say("its cotangent: 1"), color="C3", ha="center", fontsize=9)
    ax.set(xlim=(-0.8, 8.0), ylim=(-1.1, 2.8))
    ax.set_title(say("forward: primals (grey)      backward: cotangents (red, dashed)"))
    ax.axis("off")
    return fig


# ---------------------------------------------------------------- the cost of each split


@dataclass(frozen=True)
class SplitTiming:
    """One way of getting dloss/dW from the cotangent g_h = dloss/dh, at one size
    (B = n = m = size)."""

    method: str
    size: int
    seconds: float
    jacobian_entries: int  # entries of dh/dW, built only by the Jacobian method


VJP = "VJP with cotangent g_h"
JACOBIAN = "Jacobian + tensordot"


def _split_functions():
    import jax
    import jax.numpy as jnp

    def layer(w, x, b):
        return x @ w + b

    @jax.jit
    def by_vjp(x, w, b, g):  # g: the cotangent arriving at the layer's output h
        return jax.vjp(lambda w: layer(w, x, b), w)[1](g)[0]

    @jax.jit
    def by_jacobian(x, w, b, g):
        return jnp.tensordot(g, jax.jacrev(layer)(w, x, b), axes=2)

    return {VJP: by_vjp, JACOBIAN: by_jacobian}


def _fastest_seconds(fn: Callable[..., object], args: tuple, repeats: int) -> float:
    """The fastest of `repeats` timed calls: the cost of the work itself. A median still
    carries a loaded machine's interruptions (one in five runs is enough to move it tenfold
    at tens of microseconds), which would put noise into the growth the chapter compares."""
    fn(*args).block_until_ready()  # compile and warm up first
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args).block_until_ready()
        times.append(time.perf_counter() - start)
    return min(times)


def split_problem(size: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    """x:(B, n), W:(n, m), b:(m,) and a cotangent g:(B, m) for h, all with B = n = m = size."""
    rng = np.random.default_rng(seed)
    x, w, g = (rng.normal(size=(size, size)).astype(np.float32) for _ in range(3))
    return x, w, rng.normal(size=(size,)).astype(np.float32), g


def measure_split(sizes: Iterable[int], repeats: int = 5) -> list[SplitTiming]:
    """Fastest seconds of both methods (compiled by jax.jit, compile time excluded), on the
    CPU on every machine: on an accelerator the Jacobian route's s**4 entries at these sizes
    are too few to show what the chapter measures, so the comparison would depend on the
    machine.

    Both results are checked to agree before any time is recorded.
    """
    import jax

    cpu = jax.devices("cpu")[0]
    functions = _split_functions()
    rows = []
    for size in sizes:
        args = tuple(jax.device_put(a, cpu) for a in split_problem(size))  # computed there
        results = [np.asarray(fn(*args)) for fn in functions.values()]
        np.testing.assert_allclose(results[0], results[1], rtol=1e-3, atol=1e-3)
        for method, fn in functions.items():
            rows.append(SplitTiming(method, size, _fastest_seconds(fn, args, repeats), size**4))
    return rows


def plot_split(rows: list[SplitTiming]):
    """Fastest time of each method against size, log axes."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.8), constrained_layout=True)
    names = {VJP: say(VJP), JACOBIAN: say(JACOBIAN)}  # in the notebook's language
    for method, name in names.items():
        mine = [r for r in rows if r.method == method]
        ax.plot([r.size for r in mine], [r.seconds for r in mine], marker="o", label=name)
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="B = n = m",
        ylabel=say("seconds (fastest of the repeats)"),
        title=say("dloss/dW from g_h = dloss/dh"),
    )
    ax.legend()
    return fig
