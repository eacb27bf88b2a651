"""The TF.js-style gradient shape check."""

import numpy as np
import pytest

from coursekit.framework import check_gradient_shapes


def test_message_matches_tfjs_wording():
    a, b = np.zeros((4, 4, 8)), np.zeros((8, 8))
    grads = [np.zeros((4, 4, 8)), np.zeros((4, 8, 8))]
    with pytest.raises(ValueError) as info:
        check_gradient_shapes("BatchMatMul", ["a", "b"], [a, b], grads)
    assert str(info.value) == (
        "Error in gradient for op BatchMatMul. The gradient of input 'b' has shape '4,8,8', "
        "which does not match the shape of the input '8,8'"
    )


def test_matching_shapes_pass():
    a = np.zeros((2, 3))
    check_gradient_shapes("Add", ["a"], [a], [np.ones((2, 3))])


def test_scalar_shape_is_empty_text():
    with pytest.raises(
        ValueError, match="has shape '3', which does not match the shape of the input ''"
    ):
        check_gradient_shapes("Mul", ["x"], [np.float32(1.0)], [np.ones(3)])
