"""The value comparison judges every entry on its own magnitude (|got - ref| <= atol + rtol|ref|),
so one large entry cannot hide a wrong small one, and it says which entry is off and by how much."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.judging.compare import compare_array, excess, tolerance

DTYPES = [np.dtype(np.float32), np.dtype(np.float64)]
OFF_BY = {DTYPES[0]: 1e-2, DTYPES[1]: 1e-7}


def _moderate(dtype: np.dtype) -> st.SearchStrategy[float]:
    return st.floats(0.5, 2.0, width=dtype.itemsize * 8)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@given(data=st.data())
@settings(max_examples=30, deadline=None)
def test_a_wrong_small_entry_next_to_a_large_one_fails(dtype, data):
    """The old test (largest error over the largest magnitude) passed this: 1000 beside an
    entry of order 1 that is off by 1% in float32, 1e-7 in float64."""
    small = data.draw(hnp.arrays(dtype, 5, elements=_moderate(dtype)))
    expected = np.concatenate([np.asarray([1000.0], dtype), small])
    index = data.draw(st.integers(1, small.size))
    got = expected.copy()
    got[index] *= 1 + OFF_BY[dtype]
    old_error = np.max(np.abs(got - expected)) / np.max(np.abs(expected))
    assert old_error < tolerance(dtype).rtol  # what the old measure allowed: hidden
    mismatch = compare_array("grad", got, expected)
    assert mismatch is not None and mismatch.kind == "value"
    assert f"grad[{index}]" in mismatch.message
    assert mismatch.excess > 3


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@given(data=st.data())
@settings(max_examples=30, deadline=None)
def test_rounding_within_rtol_passes_at_every_magnitude(dtype, data):
    expected = data.draw(
        hnp.arrays(
            dtype,
            hnp.array_shapes(max_dims=3),
            elements=st.floats(-1e3, 1e3, width=dtype.itemsize * 8, allow_subnormal=False),
        )
    )
    got = (expected.astype(np.float64) * (1 + 0.4 * tolerance(dtype).rtol)).astype(dtype)
    assert compare_array("y", got, expected) is None


def test_atol_is_relative_to_the_outputs_largest_entry():
    """A near-zero entry that comes from cancelling terms of order 100 may carry their
    rounding noise (here float32 summing in two orders); the same noise on an output of
    order 1 fails."""
    terms = np.asarray([123.456, -98.765, -24.691], np.float32)
    expected = np.asarray([terms[0] + (terms[1] + terms[2]), 200.0], np.float32)
    got = np.asarray([(terms[0] + terms[1]) + terms[2], 200.0], np.float32)
    assert got[0] != expected[0]
    assert compare_array("y", got, expected) is None
    assert compare_array("y", got[:1], expected[:1]) is not None


def test_the_message_names_the_entry_and_the_error():
    expected = np.asarray([[1.0, 2.0], [3.0, 4.0]])
    got = expected.copy()
    got[1, 0] = 3.5
    mismatch = compare_array("grad_x", got, expected)
    assert "grad_x[1, 0] = 3.5, expected 3.0" in mismatch.message
    assert "1 of 4 entries" in mismatch.message
    assert "grad_x[1, 0] is off by 0.5" in mismatch.tolerance  # the arithmetic, shown last
    assert mismatch.max_error == pytest.approx(0.5)
    assert mismatch.excess == pytest.approx(0.5 / (1e-12 * 4 + 1e-9 * 3))


def test_excess_is_below_one_exactly_where_the_entry_passes():
    expected = np.asarray([0.0, 1.0, -50.0, 1e3], np.float32)
    got = expected + np.asarray([0.009, 0.0102, 0.0149, 0.2], np.float32)
    ratios = excess(got, expected, tolerance(expected.dtype))
    np.testing.assert_array_equal(ratios <= 1, tolerance(expected.dtype).close(got, expected))
    assert compare_array("y", got, expected) is not None


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from([np.float32, np.float64]).flatmap(
        lambda dtype: st.tuples(
            *[
                hnp.arrays(
                    dtype,
                    st.shared(hnp.array_shapes(max_dims=2, max_side=5), key="shape"),
                    elements=st.floats(width=np.dtype(dtype).itemsize * 8),
                )
            ]
            * 2
        )
    )
)
def test_close_is_numpys_isclose_with_atol_scaled_to_the_output(pair):
    """Tolerance.close is written out for speed; it must answer as numpy.isclose does, NaN
    and infinities included, entry by entry."""
    got, expected = pair
    tol = tolerance(expected.dtype)
    scale = max(float(np.max(np.abs(expected), initial=0.0)), 1.0)
    with np.errstate(invalid="ignore", over="ignore"):
        want = np.isclose(
            got.astype(np.float64),
            expected.astype(np.float64),
            rtol=tol.rtol,
            atol=tol.atol * scale,
        )
    np.testing.assert_array_equal(tol.close(got, expected), want)
