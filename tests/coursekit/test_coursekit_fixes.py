"""The three batched-matmul weight-gradient fixes agree, with each other and with TensorFlow."""

import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
import tensorflow as tf

from coursekit.fixes import FIXES, make_problem, measure_fixes, plot_fixes


@pytest.mark.parametrize("batch", [1, 3, 16])
def test_fixes_agree_with_each_other(batch):
    x, w, g = make_problem(batch, seed=batch)
    results = {name: fix(x, w, g) for name, fix in FIXES.items()}
    out_ref, grad_ref = results["unbroadcast"]
    assert grad_ref.shape == w.shape
    for out, grad in results.values():
        np.testing.assert_allclose(out, out_ref, rtol=1e-12)
        np.testing.assert_allclose(grad, grad_ref, rtol=1e-10)


def test_fixes_match_tensorflow_gradient_tape():
    x, w, g = make_problem(5, seed=1)
    w_var = tf.constant(w)
    with tf.GradientTape() as tape:
        tape.watch(w_var)
        out = tf.matmul(tf.constant(x), w_var)
    tf_grad = tape.gradient(out, w_var, output_gradients=tf.constant(g)).numpy()
    for fix in FIXES.values():
        np.testing.assert_allclose(fix(x, w, g)[1], tf_grad, rtol=1e-10)


def test_tile_memory_grows_with_batch_and_reshape_does_not():
    rows = {(r.fix, r.batch): r for r in measure_fixes([64, 1024], repeats=1)}
    assert rows["tile", 1024].work_bytes > 8 * rows["tile", 64].work_bytes
    # reshape's temporaries are a constant few KiB (interpreter bookkeeping that varies by a few
    # hundred bytes between calls), not an array that grows with the batch: at batch 1024 they stay
    # under 1/16 of the output and within 4 KiB of batch 64's.
    reshape_small, reshape_large = rows["reshape", 64], rows["reshape", 1024]
    output_bytes = reshape_large.peak_bytes - reshape_large.work_bytes
    assert reshape_large.work_bytes < output_bytes / 16
    assert abs(reshape_large.work_bytes - reshape_small.work_bytes) < 4096
    assert rows["tile", 1024].peak_bytes > 2 * rows["reshape", 1024].peak_bytes
    assert rows["unbroadcast", 1024].work_bytes > rows["reshape", 1024].work_bytes


def test_plot_has_two_log_panels():
    fig = plot_fixes(measure_fixes([8, 64], repeats=1))
    assert len(fig.axes) == 2
    assert all(ax.get_xscale() == ax.get_yscale() == "log" for ax in fig.axes)
    assert [ax.get_ylabel() for ax in fig.axes] == [
        "seconds (fastest round)",
        "peak bytes (tracemalloc)",
    ]
    assert {ax.get_xlabel() for ax in fig.axes} == {"batch B"}
    plt.close(fig)
