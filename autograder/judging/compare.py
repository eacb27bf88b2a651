"""Comparing a learner's outputs with the reference: type, shape, dtype, then values.

Each check stops at the first problem and says which kind it is, because the kind is what
tells a learner what to fix ("float64 instead of float32" needs a different fix than
"wrong values").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from autograder.locale import say


@dataclass(frozen=True)
class Tolerance:
    """How far one entry may be from the reference: |got - ref| <= atol + rtol * |ref|.

    `rtol` judges each entry on its own magnitude, so one large entry cannot hide a wrong
    small one. `atol` is relative to the output's largest magnitude (at least 1): an entry
    that is a sum of larger terms which cancel carries rounding noise of the order of those
    terms, not of itself, and a right answer summing in another order must still pass.
    """

    rtol: float
    atol: float

    def close(self, got: np.ndarray, expected: np.ndarray) -> np.ndarray:
        """Entry by entry, whether `got` is within tolerance (numpy.isclose's test, with
        atol scaled to the output), compared in float64.

        Written out rather than calling numpy.isclose, which gives the same answer (a
        Hypothesis test checks it) with about 40 us of argument handling per call: the
        grader compares tens of thousands of small arrays per batch, in the process that
        serves every --jobs worker."""
        wide_got, wide = got.astype(np.float64), expected.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            within = np.abs(wide_got - wide) <= (
                self.atol * output_scale(wide) + self.rtol * np.abs(wide)
            )
            return (within & np.isfinite(wide)) | (wide_got == wide)

    def allowed(self, expected: np.ndarray) -> np.ndarray:
        """The largest allowed |got - expected|, entry by entry."""
        wide = expected.astype(np.float64)
        return self.atol * output_scale(wide) + self.rtol * np.abs(wide)


# float32 rounds at 6e-8 and float64 at 1e-16: rtol leaves room for formulas that round
# differently (a few hundred ulps in float32), atol for cancellation against the output's
# largest entry (about 8 ulps of it in float32).
TOLERANCES = {
    np.dtype(np.float32): Tolerance(rtol=1e-4, atol=1e-6),
    np.dtype(np.float64): Tolerance(rtol=1e-9, atol=1e-12),
}


@dataclass(frozen=True)
class Mismatch:
    """What is wrong with one output: `kind` is one of structure, type, shape, dtype,
    nonfinite, value. For a value mismatch, `max_error` is the largest |got - ref| and
    `excess` the largest ratio of an entry's error to what it is allowed (> 1 fails).

    `message` is what a learner acts on (which output, how many entries, the worst one got
    against expected) and leads the report; `tolerance` is the arithmetic behind the verdict
    (how far the worst entry is off, what it is allowed and why), which a learner rarely needs
    and the report shows last."""

    kind: str
    output: str
    message: str
    max_error: float | None = None
    excess: float | None = None
    tolerance: str = ""


def tolerance(dtype: np.dtype) -> Tolerance:
    return TOLERANCES.get(np.dtype(dtype), TOLERANCES[np.dtype(np.float32)])


def output_scale(expected: np.ndarray) -> float:
    """The output's largest magnitude, floored at 1 so an all-zero reference has a scale."""
    return max(float(np.abs(expected).max(initial=0.0)), 1.0)


def excess(got: np.ndarray, expected: np.ndarray, tol: Tolerance) -> np.ndarray:
    """Each entry's error over what it is allowed, in float64: above 1 fails. It says by
    what margin an answer fails (or passes), which the verdict itself does not."""
    return np.abs(got.astype(np.float64) - expected.astype(np.float64)) / tol.allowed(expected)


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
            "type",
            name,
            say(
                "{name} should be a numpy array, got {type}.",
                name=name,
                type=f"{type(got).__module__}.{type(got).__name__}",
            ),
        )
    if array.shape != expected.shape:
        return Mismatch(
            "shape",
            name,
            say(
                "{name} has shape {got}, expected {expected}.",
                name=name,
                got=array.shape,
                expected=expected.shape,
            ),
        )
    if array.dtype != expected.dtype:
        return Mismatch(
            "dtype",
            name,
            say(
                "{name} has dtype {got}, expected {expected}.",
                name=name,
                got=array.dtype,
                expected=expected.dtype,
            ),
        )
    expected_finite = np.isfinite(expected)
    bad = ~np.isfinite(array) & expected_finite
    if bad.any():
        what = "NaN" if np.isnan(array[bad]).any() else "Inf"
        return Mismatch(
            "nonfinite",
            name,
            say(
                "{name} contains {what} at {count} of {size} entries where the reference "
                "is finite.",
                name=name,
                what=what,
                count=int(bad.sum()),
                size=array.size,
            ),
        )
    zero = np.zeros((), expected.dtype)  # keeps the dtype, so entries print as the learner's
    return _compare_values(
        name, np.where(expected_finite, array, zero), np.where(expected_finite, expected, zero)
    )


def _compare_values(name: str, got: np.ndarray, expected: np.ndarray) -> Mismatch | None:
    """None when every entry is within tolerance; else the worst entry, by how much, and how
    many entries are off."""
    if expected.size == 0:
        return None
    tol = tolerance(expected.dtype)
    close = tol.close(got, expected)
    if close.all():
        return None
    ratios = excess(got, expected, tol)
    worst = np.unravel_index(int(np.argmax(ratios)), ratios.shape)
    where = f"{name}[{', '.join(map(str, worst))}]" if worst else name
    return Mismatch(
        "value",
        name,
        _wrong_entries(name, where, int((~close).sum()), close.size, got[worst], expected[worst]),
        max_error=float(np.max(np.abs(got.astype(np.float64) - expected.astype(np.float64)))),
        excess=float(ratios[worst]),
        tolerance=say(
            "{where} is off by {error:.3g}; {allowed:.2g} is allowed there. For {dtype}, an "
            "entry may be off by {rtol:.0e} * |its expected value| + {atol:.0e} * max(1, the "
            "largest magnitude in the expected {name}).",
            where=where,
            error=abs(float(got[worst]) - float(expected[worst])),
            allowed=float(tol.allowed(expected)[worst]),
            dtype=expected.dtype,
            rtol=tol.rtol,
            atol=tol.atol,
            name=name,
        ),
    )


def _wrong_entries(
    name: str, where: str, count: int, size: int, got: np.generic, expected: np.generic
) -> str:
    """The headline of a value mismatch, in the course's words: the output (a cotangent
    `g_x` named as x's), how many of its entries are wrong and the worst one, got against
    expected. The tolerance is left to Mismatch.tolerance."""
    what = output_words(name)
    if size == 1:
        return say(
            "{what} is wrong: {where} = {got}, expected {expected}.",
            what=what,
            where=where,
            got=str(got),
            expected=str(expected),
        )
    return say(
        "{what} is wrong at {count} of {size} entries; the worst is {where} = {got}, expected "
        "{expected}.",
        what=what,
        count=count,
        size=size,
        where=where,
        got=str(got),
        expected=str(expected),
    )


def output_words(name: str) -> str:
    """An output as the course speaks of it: `g_x` is the cotangent of x (the notebooks'
    and JAX's naming), said once so a learner maps the name onto the idea; any other name
    (`y`, `jacobian`, `grad_W`) as it is declared."""
    primal = name[2:] if name.startswith("g_") else ""
    if not primal.isidentifier():
        return name
    return say("{name} (the cotangent of {primal})", name=name, primal=primal)


def compare_outputs(
    names: tuple[str, ...], got: object, expected: tuple[np.ndarray, ...]
) -> Mismatch | None:
    """Compare a function's return value (a tuple when it has several outputs)."""
    if len(names) == 1:
        return compare_array(names[0], got, expected[0])
    if not isinstance(got, tuple | list) or len(got) != len(names):
        if isinstance(got, tuple | list):
            shape = say(
                "a value of type {type} of length {length}",
                type=type(got).__name__,
                length=len(got),
            )
        else:
            shape = say("a value of type {type}", type=type(got).__name__)
        return Mismatch(
            "structure",
            "return value",
            say(
                "The function should return a tuple ({names}); it returned {shape}.",
                names=", ".join(names),
                shape=shape,
            ),
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
    return all(
        _same_nonfinite(np.asarray(g), np.asarray(w)) for g, w in zip(values, wrong, strict=True)
    )


def _same_nonfinite(got: np.ndarray, wrong: np.ndarray) -> bool:
    return all(
        np.array_equal(test(got), test(wrong)) for test in (np.isnan, np.isposinf, np.isneginf)
    )
