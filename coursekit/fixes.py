"""Three ways to get the weight gradient of a batched `x:(B, 4, 8) @ W:(8, 8)`.

Each fix returns `(out, grad_W)` for a given cotangent `g` of `out`. They agree on the numbers
and differ in what they allocate, which is the point: tiling materialises B copies of W (and B
partial gradients), unbroadcasting materialises B partial gradients, reshaping to one 2-D GEMM
materialises neither.

Times are taken the same way on any machine: numpy's BLAS held to one thread (a multi-threaded
GEMM sharing busy cores with other programs can run slower than a loop of small products, so the
comparison would measure the machine's load, not the fixes), the fixes run in turn within each
round (a burst of load hits all three alike), and each keeps its fastest round, the one least
disturbed. Everything runs in numpy, on the CPU.
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from autograder.locale import say

Fix = Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def _mT(a: np.ndarray) -> np.ndarray:
    """Transpose the last two axes only: the batch axes are not part of the matrix."""
    return np.swapaxes(a, -1, -2)


def fix_tile(x: np.ndarray, w: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tile W to (B, 8, 8) so shapes match; tile's VJP then sums the per-copy gradients."""
    w_tiled = np.tile(w, (x.shape[0], 1, 1))
    out = x @ w_tiled
    grad_tiled = _mT(x) @ g
    return out, grad_tiled.sum(axis=0)


def fix_reshape(x: np.ndarray, w: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fold the batch into the rows: one (B*4, 8) @ (8, 8) GEMM forward and one backward."""
    rows = x.reshape(-1, x.shape[-1])
    out = (rows @ w).reshape(*x.shape[:-1], w.shape[-1])
    return out, rows.T @ g.reshape(-1, g.shape[-1])


def fix_unbroadcast(x: np.ndarray, w: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Let matmul broadcast W; the VJP gives (B, 8, 8), summed over the broadcast batch axis."""
    out = x @ w
    grad_batched = _mT(x) @ g
    return out, grad_batched.sum(axis=0)


FIXES: dict[str, Fix] = {
    "tile": fix_tile,
    "reshape": fix_reshape,
    "unbroadcast": fix_unbroadcast,
}


@dataclass(frozen=True)
class Measurement:
    """One fix at one batch size.

    `seconds` is the fastest of the rounds timed (BLAS on one thread); `peak_bytes` is
    tracemalloc's peak during the call; `work_bytes` subtracts the output array, which every
    fix must return, leaving the temporaries the fix chose to create.
    """

    fix: str
    batch: int
    seconds: float
    peak_bytes: int
    work_bytes: int


def make_problem(batch: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random x:(batch, 4, 8), W:(8, 8) and cotangent g:(batch, 4, 8) in float64."""
    rng = np.random.default_rng(seed)
    return rng.normal(size=(batch, 4, 8)), rng.normal(size=(8, 8)), rng.normal(size=(batch, 4, 8))


def _fastest_seconds(
    fixes: dict[str, Fix], args: tuple[np.ndarray, ...], repeats: int
) -> dict[str, float]:
    """Each fix's fastest of `repeats` rounds, the fixes taking turns within a round, with
    numpy's BLAS on one thread."""
    fastest = dict.fromkeys(fixes, float("inf"))
    with threadpool_limits(limits=1, user_api="blas"):
        for _ in range(repeats):
            for name, fix in fixes.items():
                start = time.perf_counter()
                fix(*args)
                fastest[name] = min(fastest[name], time.perf_counter() - start)
    return fastest


def _peak_bytes(fix: Fix, args: tuple[np.ndarray, ...]) -> tuple[int, int]:
    """Peak traced bytes during one call, and that peak minus the returned output's size."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        out, _grad = fix(*args)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, peak - out.nbytes


def measure_fixes(batch_sizes: Iterable[int], repeats: int = 5) -> list[Measurement]:
    """Time (fastest of `repeats` rounds, BLAS on one thread) and peak memory of every fix at
    every batch size."""
    rows = []
    for batch in batch_sizes:
        args = make_problem(batch)
        seconds = _fastest_seconds(FIXES, args, repeats)
        for name, fix in FIXES.items():
            peak, work = _peak_bytes(fix, args)
            rows.append(Measurement(name, batch, seconds[name], peak, work))
    return rows


def plot_fixes(rows: list[Measurement]):
    """Two panels against batch size, log axes: time (fastest round), and peak memory of the
    call.

    The memory panel also draws the output's own size: whatever sits above that line is
    temporaries the fix chose to create.
    """
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 3.8), constrained_layout=True)
    for name in FIXES:
        mine = [r for r in rows if r.fix == name]
        batches = [r.batch for r in mine]
        ax_t.plot(batches, [r.seconds for r in mine], marker="o", label=name)
        ax_m.plot(batches, [r.peak_bytes for r in mine], marker="o", label=name)
    out_rows = [r for r in rows if r.fix == "reshape"]
    out_bytes = [r.peak_bytes - r.work_bytes for r in out_rows]
    ax_m.plot([r.batch for r in out_rows], out_bytes, "k--", lw=1, label=say("output alone"))
    for ax, ylabel, title in (
        (ax_t, say("seconds (fastest round)"), say("time for out and grad_W")),
        (ax_m, say("peak bytes (tracemalloc)"), say("peak memory during the call")),
    ):
        ax.set(xscale="log", yscale="log", xlabel=say("batch B"), ylabel=ylabel, title=title)
    ax_m.legend()
    return fig
