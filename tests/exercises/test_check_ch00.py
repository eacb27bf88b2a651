"""The chapter 00 warm-up check: right answers written differently pass, and each wrong answer
fails with the hint that names it."""

from __future__ import annotations

import numpy as np
import pytest

from autograder import check


def cube_vjp_product(g, x):
    return g * 3 * x**2


def cube_vjp_multiplied(g, x):
    return np.multiply(g, x * x) * 3


def cube_vjp_in_place(g, x):
    x *= x  # writes into its input: the check must hand out copies
    return 3 * g * x


@pytest.mark.parametrize("fn", [cube_vjp_product, cube_vjp_multiplied, cube_vjp_in_place])
def test_right_warmup_passes(fn):
    report = check.warmup_cube_vjp(fn)
    assert report.passed, str(report)


# The declared mistakes (derivative only, the demo's square copied, the power's factor
# forgotten) are run by tests/judging/test_mistakes.py.


def test_the_demo_copied_fails_with_the_hint_that_names_it():
    report = check.warmup_cube_vjp(lambda g, x: g * 2 * x)
    assert not report.passed
    assert "the demo's VJP, of y = x**2" in str(report), str(report)


def test_float64_upcast_is_a_dtype_error():
    report = check.warmup_cube_vjp(lambda g, x: g * np.float64(3.0) * x.astype(np.float64) ** 2)
    assert not report.passed
    assert "dtype" in str(report).lower(), str(report)
