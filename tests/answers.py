"""Right answers written as a learner writes them, for tests that need a check to pass.

A learner's function, not the harness's reference: the in-notebook check fingerprints the
code it is given and reaches through its globals, as it does for a learner's cell.
"""

from __future__ import annotations

import numpy as np


def unbroadcast(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Chapter 03's first exercise: sum the cotangent back down to `shape`."""
    lead = g.ndim - len(shape)
    summed = g.sum(axis=tuple(range(lead)))
    ones = tuple(i for i, n in enumerate(shape) if n == 1 and summed.shape[i] != 1)
    return summed.sum(axis=ones, keepdims=True)
