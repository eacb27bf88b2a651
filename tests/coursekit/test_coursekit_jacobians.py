"""Forward vs reverse mode costs and Hessian vs HVP costs, as chapter 07 measures them."""

import matplotlib

matplotlib.use("Agg")

import jax
import matplotlib.pyplot as plt
import numpy as np

from coursekit.jacobians import (
    measure_modes,
    measure_second_order,
    plot_modes,
    quadratic_tanh,
    two_layer,
)


def test_two_layer_shapes_and_jacobians_agree():
    f, x = two_layer(5, 3, hidden=8)
    assert f(x).shape == (3,)
    np.testing.assert_allclose(jax.jacfwd(f)(x), jax.jacrev(f)(x), rtol=1e-5, atol=1e-6)


def test_forward_work_grows_with_inputs_reverse_with_outputs():
    rows = {(r.mode, r.n_in): r for r in measure_modes([4, 16, 64], n_out=16, hidden=16, repeats=1)}
    assert rows["forward", 4].flops < rows["reverse", 4].flops
    assert rows["forward", 64].flops > rows["reverse", 64].flops
    assert rows["forward", 64].flops > 8 * rows["forward", 4].flops


def test_hvp_needs_a_vector_of_memory_where_the_hessian_needs_a_matrix():
    rows = {(r.method, r.n): r for r in measure_second_order([32, 128], repeats=1)}
    assert rows["hessian", 128].output_bytes == 128 * 128 * 4
    assert rows["hvp", 128].output_bytes == 128 * 4
    assert rows["hvp", 128].temp_bytes < rows["hessian", 128].temp_bytes
    f, x, v = quadratic_tanh(32)
    hessian = jax.hessian(f)(x)
    hvp = jax.jvp(jax.grad(f), (x,), (v,))[1]
    np.testing.assert_allclose(hessian @ v, hvp, rtol=1e-4, atol=1e-5)


def test_plot_has_two_log_panels():
    fig = plot_modes(measure_modes([4, 8], n_out=4, hidden=4, repeats=1))
    assert len(fig.axes) == 2
    assert all(ax.get_xscale() == "log" for ax in fig.axes)
    plt.close(fig)
