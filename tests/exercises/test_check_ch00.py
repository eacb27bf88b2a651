"""The chapter 00 warm-up check: right answers written differently pass, and each wrong answer
fails with the hint that names it."""

from __future__ import annotations

import numpy as np
import pytest

from autograder import check


def square_vjp_product(g, x):
    return g * 2 * x


def square_vjp_add(g, x):
    return np.multiply(g, x + x)


def square_vjp_in_place(g, x):
    x *= 2  # writes into its input: the check must hand out copies
    return g * x


@pytest.mark.parametrize("fn", [square_vjp_product, square_vjp_add, square_vjp_in_place])
def test_right_warmup_passes(fn):
    report = check.warmup_square_vjp(fn)
    assert report.passed, str(report)


# The two declared mistakes (derivative only, forgot the 2) are run by
# tests/judging/test_mistakes.py.


def test_float64_upcast_is_a_dtype_error():
    report = check.warmup_square_vjp(lambda g, x: g * np.float64(2.0) * x.astype(np.float64))
    assert not report.passed
    assert "dtype" in str(report).lower(), str(report)
