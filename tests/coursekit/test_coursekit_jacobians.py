"""Forward vs reverse mode costs and Hessian vs HVP costs, as chapter 07 measures them."""

import matplotlib

matplotlib.use("Agg")

from pathlib import Path

import jax
import matplotlib.pyplot as plt
import numpy as np

from coursekit import jacobians
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


def forward_over_reverse(f, x, v):  # the notebook's demo HVP, which the caller passes in
    return jax.jvp(jax.grad(f), (x,), (v,))[1]


def test_hvp_needs_a_vector_of_memory_where_the_hessian_needs_a_matrix():
    measured = measure_second_order([32, 128], forward_over_reverse, repeats=1)
    rows = {(r.method, r.n): r for r in measured}
    assert rows["hessian", 128].output_bytes == 128 * 128 * 4
    assert rows["hvp", 128].output_bytes == 128 * 4
    assert rows["hvp", 128].temp_bytes < rows["hessian", 128].temp_bytes
    f, x, v = quadratic_tanh(32)
    hessian = jax.hessian(f)(x)
    hvp = forward_over_reverse(f, x, v)
    np.testing.assert_allclose(hessian @ v, hvp, rtol=1e-4, atol=1e-5)


def test_plot_has_two_log_panels():
    fig = plot_modes(measure_modes([4, 8], n_out=4, hidden=4, repeats=1))
    assert len(fig.axes) == 2
    assert all(ax.get_xscale() == "log" for ax in fig.axes)
    plt.close(fig)


def test_the_module_composes_no_hessian_vector_product_of_its_own():
    """The HVP it measures is the caller's: what it runs is what it was given."""
    calls = []

    def counted(f, x, v):
        calls.append(x.shape)
        return forward_over_reverse(f, x, v)

    measure_second_order([8], counted, repeats=1)
    assert calls == [(8,)]  # traced once, for n = 8
    source = Path(jacobians.__file__).read_text()
    assert "jax.jvp(" not in source and "jax.grad(" not in source
