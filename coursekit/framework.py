"""The shape check a framework runs after calling a gradient rule.

TensorFlow.js checks that each input's gradient has the input's shape, and a rule that forgets
to unbroadcast fails there. This reproduces that check and its wording, so the notebook can show
the error a learner would meet without needing TF.js.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _shape_text(shape: tuple[int, ...]) -> str:
    return ",".join(str(d) for d in shape)


def check_gradient_shapes(
    op_name: str,
    input_names: Sequence[str],
    inputs: Sequence[np.ndarray],
    grads: Sequence[np.ndarray],
) -> None:
    """Raise ValueError, worded like TF.js, for the first input whose gradient shape differs."""
    for name, primal, grad in zip(input_names, inputs, grads, strict=True):
        want, got = tuple(np.shape(primal)), tuple(np.shape(grad))
        if want != got:
            raise ValueError(
                f"Error in gradient for op {op_name}. The gradient of input '{name}' has shape "
                f"'{_shape_text(got)}', which does not match the shape of the input "
                f"'{_shape_text(want)}'"
            )
