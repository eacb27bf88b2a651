"""Chapter 02's known wrong answers to `find_wrong_rule`, written as a learner writes them:
a finite-difference check of each rule of a table, with one thing off (a float64 tolerance
for float32, sum checked over one axis only, the last flagged op returned)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from autograder.harness.ch02_reverse_mode_tape import directional_derivative


def primals_for(op: str, rng: np.random.Generator, dtype: Any) -> list[np.ndarray]:
    """3 x 3 primals for op: positive for log, away from zero for div's divisor."""
    x = rng.uniform(0.5, 2.0, (3, 3)) if op == "log" else rng.uniform(-1.5, 1.5, (3, 3))
    y = rng.choice([-1.0, 1.0], (3, 3)) * rng.uniform(0.5, 2.0, (3, 3))
    return [p.astype(dtype) for p in ((x, y) if op in BINARY_OPS else (x,))]


BINARY_OPS = ("add", "sub", "mul", "div", "matmul")


def rule_error(
    vjp_rule: Callable[..., tuple],
    forward: Callable[..., Any],
    op: str,
    dtype: Any,
    rng: np.random.Generator,
    params: dict[str, Any],
) -> float:
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

            numeric = float(directional_derivative(along, np.zeros((), dtype), np.ones((), dtype)))
            worst = max(worst, abs(numeric - float(cotangents[i][j])) / scale)
    return worst


def make_find_wrong_rule(
    tolerances: dict[str, float] | None = None,
    axes: tuple[int | None, ...] = (None, 0, 1),
    first: bool = True,
) -> Callable[..., str | None]:
    """A learner's find_wrong_rule(vjp_rule, forward, dtype); each argument off its default
    is a known mistake: a float64 tolerance for float32, sum checked over one axis only, the
    last flagged op returned instead of the first."""
    tolerance = tolerances or {"float32": 1e-3, "float64": 1e-6}

    def find_wrong_rule(
        vjp_rule: Callable[..., tuple], forward: dict[str, Callable], dtype: Any
    ) -> str | None:
        rng = np.random.default_rng(0)
        flagged = None
        for op, function in forward.items():
            for params in [{"axis": a} for a in axes] if op == "sum" else [{}]:
                if (
                    not rule_error(vjp_rule, function, op, dtype, rng, params)
                    <= tolerance[np.dtype(dtype).name]
                ):
                    flagged = op
                    if first:
                        return op
        return flagged

    return find_wrong_rule
