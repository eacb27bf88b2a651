"""Chapter 03's reference `unbroadcast`, for the exercises that call it.

`matmul_vjp` calls the learner's `unbroadcast`: it is checked with this one in its place (the
exercise unbroadcast declares `reference_implementation="ch03_unbroadcasting:unbroadcast"`), so that
a wrong unbroadcast costs its own exercise only, not matmul_vjp's too. Called directly (imported
in a notebook) it raises: it is no answer to unbroadcast (harness.stand_in_only).
"""

from __future__ import annotations

import numpy as np

from . import stand_in_only


def unbroadcast(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """`g` summed back down to `shape`: the leading axes `shape` lacks, then keepdims
    over every axis where `shape` has size 1."""
    stand_in_only("unbroadcast")
    summed = g.sum(axis=tuple(range(g.ndim - len(shape))))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and summed.shape[i] != 1)
    return np.asarray(summed.sum(axis=stretched, keepdims=True))
