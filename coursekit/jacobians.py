"""Measurements for chapter 07: forward vs reverse mode, and a Hessian vs Hessian-vector products.

The Hessian-vector product measured is the notebook's own (its demo, passed in): this module
composes no derivative of its own beyond JAX's whole-matrix builders.

Both are measured on compiled JAX programs: `cost_analysis()` gives XLA's count of floating
point operations (the same on every machine with the same JAX), `memory_analysis()` the bytes
the program allocates, and a timer the fastest of a few runs (which depends on the machine;
the fastest, as what a busy machine adds to a run is never negative).
Everything runs on the CPU, also where JAX has a GPU, so the notebook's claims about the times
are about one kind of device everywhere.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from autograder.locale import say


def two_layer(n_in: int, n_out: int, hidden: int = 128, seed: int = 0) -> tuple[Callable, Any]:
    """f(x) = W2 tanh(W1 x) from R^n_in to R^n_out, and a point x (float32)."""
    rng = np.random.default_rng(seed)
    w1 = jnp.asarray(rng.normal(size=(hidden, n_in)) / np.sqrt(n_in), jnp.float32)
    w2 = jnp.asarray(rng.normal(size=(n_out, hidden)) / np.sqrt(hidden), jnp.float32)
    x = jnp.asarray(rng.normal(size=n_in), jnp.float32)
    return (lambda x: w2 @ jnp.tanh(w1 @ x)), x


def fastest_seconds(fn: Callable[..., Any], *args: Any, repeats: int = 7) -> float:
    """Fastest time of `fn(*args)` after one warm-up call, waiting for JAX's result."""
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return min(times)


@dataclass(frozen=True)
class ModeCost:
    """One Jacobian of a (n_in -> n_out) function by one mode."""

    mode: str  # "forward" (jax.jacfwd) or "reverse" (jax.jacrev)
    n_in: int
    n_out: int
    flops: float
    seconds: float


def measure_modes(
    n_ins: Iterable[int], n_out: int, hidden: int = 128, repeats: int = 7
) -> list[ModeCost]:
    """Compile jacfwd and jacrev of `two_layer(n_in, n_out)` for each n_in; count and time."""
    with jax.default_device(jax.devices("cpu")[0]):
        return _measure_modes(n_ins, n_out, hidden, repeats)


def _measure_modes(n_ins: Iterable[int], n_out: int, hidden: int, repeats: int) -> list[ModeCost]:
    rows = []
    for n_in in n_ins:
        f, x = two_layer(n_in, n_out, hidden)
        for mode, transform in (("forward", jax.jacfwd), ("reverse", jax.jacrev)):
            compiled = jax.jit(transform(f)).lower(x).compile()
            flops = float(compiled.cost_analysis()["flops"])
            seconds = fastest_seconds(compiled, x, repeats=repeats)
            rows.append(ModeCost(mode, n_in, n_out, flops, seconds))
    return rows


def plot_modes(rows: list[ModeCost]):
    """FLOPs and fastest time against the number of inputs, both modes, log axes."""
    import matplotlib.pyplot as plt

    fig, (ax_f, ax_t) = plt.subplots(1, 2, figsize=(10, 3.8), constrained_layout=True)
    for mode in ("forward", "reverse"):
        mine = [r for r in rows if r.mode == mode]
        label = say("forward (jacfwd)") if mode == "forward" else say("reverse (jacrev)")
        ax_f.plot([r.n_in for r in mine], [r.flops for r in mine], marker="o", label=label)
        ax_t.plot([r.n_in for r in mine], [r.seconds for r in mine], marker="o", label=label)
    n_out = rows[0].n_out
    axes = ((ax_f, say("FLOPs (XLA cost analysis)")), (ax_t, say("seconds (fastest run)")))
    for ax, what in axes:
        ax.axvline(n_out, color="k", ls="--", lw=1)
        ax.set(
            xscale="log",
            yscale="log",
            xlabel=say("inputs n (outputs m = {n_out}, dashed)", n_out=n_out),
            ylabel=what,
        )
    ax_f.set_title(say("work for the whole Jacobian"))
    ax_t.set_title(say("time for the whole Jacobian"))
    ax_f.legend()
    return fig


@dataclass(frozen=True)
class SecondOrderCost:
    """The full Hessian, or one Hessian-vector product, of a scalar function of n inputs."""

    method: str  # "hessian" or "hvp"
    n: int
    output_bytes: int
    temp_bytes: int
    flops: float
    seconds: float


def quadratic_tanh(n: int, seed: int = 0) -> tuple[Callable, Any, Any]:
    """f(x) = sum(tanh(W x)^2), a dense Hessian, with a point x and a direction v."""
    rng = np.random.default_rng(seed)
    w = jnp.asarray(rng.normal(size=(n, n)) / np.sqrt(n), jnp.float32)
    x, v = (jnp.asarray(rng.normal(size=n), jnp.float32) for _ in range(2))
    return (lambda x: jnp.sum(jnp.tanh(w @ x) ** 2)), x, v


def measure_second_order(
    ns: Iterable[int], product: Callable[..., Any], repeats: int = 5
) -> list[SecondOrderCost]:
    """jax.hessian (= jacfwd(jacrev(f))) against `product(f, x, v)`, a Hessian-vector
    product the caller writes, both compiled."""
    with jax.default_device(jax.devices("cpu")[0]):
        return _measure_second_order(ns, product, repeats)


def _measure_second_order(
    ns: Iterable[int], product: Callable[..., Any], repeats: int
) -> list[SecondOrderCost]:
    rows = []
    for n in ns:
        f, x, v = quadratic_tanh(n)
        programs = {
            "hessian": (jax.jit(jax.hessian(f)), (x,)),
            "hvp": (jax.jit(lambda x, v, f=f: product(f, x, v)), (x, v)),
        }
        for method, (program, args) in programs.items():
            compiled = program.lower(*args).compile()
            memory = compiled.memory_analysis()
            rows.append(
                SecondOrderCost(
                    method,
                    n,
                    int(memory.output_size_in_bytes),
                    int(memory.temp_size_in_bytes),
                    float(compiled.cost_analysis()["flops"]),
                    fastest_seconds(compiled, *args, repeats=repeats),
                )
            )
    return rows
