"""Comparing a learner's outputs with the reference: type, shape, dtype, then values.

Each check stops at the first problem and says which kind it is, because the kind is what
tells a learner what to fix ("float64 instead of float32" needs a different fix than
"wrong values").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Largest error allowed, relative to the largest reference magnitude (at least 1).
TOLERANCE = {np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-9}


@dataclass(frozen=True)
class Mismatch:
    """What is wrong with one output: `kind` is one of structure, type, shape, dtype,
    nonfinite, value."""

    kind: str
    output: str
    message: str
    max_error: float | None = None


def tolerance(dtype: np.dtype) -> float:
    return TOLERANCE.get(np.dtype(dtype), 1e-4)


def relative_error(got: np.ndarray, expected: np.ndarray) -> float:
    """Largest absolute difference over the largest reference magnitude (floored at 1).

    The floor keeps the measure meaningful where the reference is all zeros; inputs here
    are of order 1 to 1000, so an absolute error is then judged on the same scale.
    """
    if expected.size == 0:
        return 0.0
    diff = np.abs(got.astype(np.float64) - expected.astype(np.float64))
    scale = max(float(np.max(np.abs(expected))), 1.0)
    return float(np.max(diff)) / scale


def _as_array(value: object) -> np.ndarray | None:
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, np.generic):
        return np.asarray(value)
    return None


def compare_array(name: str, got: object, expected: np.ndarray) -> Mismatch | None:
    """None when `got` matches `expected`; otherwise the first problem found."""
    array = _as_array(got)
    if array is None:
        return Mismatch(
            "type", name,
            f"{name} should be a numpy array, got {type(got).__module__}.{type(got).__name__}.",
        )
    if array.shape != expected.shape:
        return Mismatch(
            "shape", name, f"{name} has shape {array.shape}, expected {expected.shape}."
        )
    if array.dtype != expected.dtype:
        return Mismatch(
            "dtype", name, f"{name} has dtype {array.dtype}, expected {expected.dtype}."
        )
    expected_finite = np.isfinite(expected)
    bad = ~np.isfinite(array) & expected_finite
    if bad.any():
        what = "NaN" if np.isnan(array[bad]).any() else "Inf"
        return Mismatch(
            "nonfinite", name,
            f"{name} contains {what} at {int(bad.sum())} of {array.size} entries "
            "where the reference is finite.",
        )
    error = relative_error(
        np.where(expected_finite, array, 0), np.where(expected_finite, expected, 0)
    )
    if error > tolerance(expected.dtype):
        return Mismatch(
            "value", name,
            f"{name} differs from the reference: largest relative error {error:.3g} "
            f"(allowed {tolerance(expected.dtype):.0e} for {expected.dtype}).",
            max_error=error,
        )
    return None


def compare_outputs(
    names: tuple[str, ...], got: object, expected: tuple[np.ndarray, ...]
) -> Mismatch | None:
    """Compare a function's return value (a tuple when it has several outputs)."""
    if len(names) == 1:
        return compare_array(names[0], got, expected[0])
    if not isinstance(got, tuple | list) or len(got) != len(names):
        shape = f"a value of type {type(got).__name__}"
        if isinstance(got, tuple | list):
            shape += f" of length {len(got)}"
        return Mismatch(
            "structure", "return value",
            f"The function should return a tuple ({', '.join(names)}); it returned {shape}.",
        )
    for name, value, reference in zip(names, got, expected, strict=True):
        mismatch = compare_array(name, value, reference)
        if mismatch is not None:
            return mismatch
    return None


def outputs_close(got: object, expected: tuple[np.ndarray, ...], names: tuple[str, ...]) -> bool:
    """True when `got` would pass against `expected`."""
    return compare_outputs(names, got, expected) is None


def outputs_match(got: object, wrong: tuple[np.ndarray, ...], names: tuple[str, ...]) -> bool:
    """True when `got` is this wrong answer: close where it is finite, and NaN, +Inf and -Inf
    at exactly its positions.

    Passing against a reference skips the reference's non-finite entries; recognising a
    mistake must not, or an answer without any NaN would be told about the mistake's NaN.
    """
    if not outputs_close(got, wrong, names):
        return False
    values = (got,) if len(names) == 1 else got
    return all(_same_nonfinite(np.asarray(g), np.asarray(w))
               for g, w in zip(values, wrong, strict=True))


def _same_nonfinite(got: np.ndarray, wrong: np.ndarray) -> bool:
    return all(np.array_equal(test(got), test(wrong)) for test in (np.isnan, np.isposinf,
                                                                     np.isneginf))
