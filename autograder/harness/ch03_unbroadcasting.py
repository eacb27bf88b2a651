"""Chapter 03's reference `unbroadcast`, for the exercises that call it.

`matmul_vjp` calls the learner's `unbroadcast`: it is checked with this one in its place (the
exercise unbroadcast declares `reference_implementation="ch03_unbroadcasting:unbroadcast"`), so that
a wrong unbroadcast costs its own exercise only, not matmul_vjp's too. Called directly (imported
in a notebook) it raises: it is no answer to unbroadcast (harness.stand_in_only).

It is numpy, not the frameworks' VJP of broadcast_to (the exercise's reference): it also runs
in the grader's child for matmul_vjp, a numpy round, where any use of JAX or TensorFlow raises
FrameworkUsed (sandbox/confined/guards.py), and under JAX's default float32 it would narrow
float64 cotangents. Its source is no more an answer than the course's own: the learner's copy
ships with solutions/ (authoring/bundle.py), and what guards a check is that nothing importable
passes one (tests/exercises/test_no_importable_answers.py).
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
