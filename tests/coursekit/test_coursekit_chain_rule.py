"""The chain-rule explorer's numbers, the graph drawing and the VJP-against-Jacobian measurement."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import matplotlib

matplotlib.use("Agg")

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np
import pytest

from coursekit.chain_rule import (
    FUNCTIONS,
    JACOBIAN,
    VJP,
    chain_rule_explorer,
    draw_graph,
    figure_png,
    measure_split,
    plot_chain,
    plot_split,
    slopes_at,
)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_each_derivative_matches_jax(name):
    fn, derivative = FUNCTIONS[name]
    xs = np.linspace(-2, 2, 9)
    jax_fn = {
        "sin": jnp.sin,
        "exp": jnp.exp,
        "tanh": jnp.tanh,
        "square": jnp.square,
        "cube": lambda x: x**3,
        "sigmoid": jax.nn.sigmoid,
        "3x": lambda x: 3 * x,
    }[name]
    with jax.enable_x64(True):
        expected = jax.vmap(jax.grad(jax_fn))(jnp.asarray(xs))
    np.testing.assert_allclose(derivative(xs), expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(fn(xs), jax_fn(jnp.asarray(xs)), rtol=1e-6)


@pytest.mark.parametrize("f_name", sorted(FUNCTIONS))
@pytest.mark.parametrize("g_name", ["sin", "tanh", "cube"])
def test_slopes_multiply(f_name, g_name):
    at = slopes_at(f_name, g_name, 0.7)
    np.testing.assert_allclose(at.numeric, at.product, rtol=1e-6, atol=1e-8)


def test_describe_is_rounded_and_deterministic():
    text = str(slopes_at("sin", "exp", 0.5))
    assert "g'(u) * f'(x) = 1.4174" in text
    assert text == slopes_at("sin", "exp", 0.5).describe()


def test_square_at_zero_has_slope_zero():
    assert slopes_at("square", "exp", 0.0).product == 0.0


def test_plot_chain_has_three_panels_and_renders():
    fig = plot_chain("tanh", "sin", -1.0)
    assert len(fig.axes) == 3
    assert figure_png(fig).startswith(b"\x89PNG")


def test_explorer_updates_its_text_when_x_moves():
    box = chain_rule_explorer("sin", "exp", 0.5)
    controls, picture, text = box.children
    slider = controls.children[2]
    before = text.value
    slider.value = 1.0
    assert text.value != before
    assert "x = 1.0000" in text.value
    assert bytes(picture.value).startswith(b"\x89PNG")


def test_graph_drawing_labels_every_cotangent():
    fig = draw_graph({"x": (4, 3), "W": (3, 2)})
    texts = " ".join(t.get_text() for t in fig.axes[0].texts)
    for label in ("g_x =", "g_W =", "g_b =", "g_h =", "g_y =", "shape (4, 3)"):
        assert label in texts
    plt.close(fig)


def test_split_measurement_agrees_and_jacobian_grows_faster():
    rows = measure_split([4, 24], repeats=3)
    assert {(r.method, r.size) for r in rows} == {(m, s) for m in (VJP, JACOBIAN) for s in (4, 24)}
    assert all(r.seconds > 0 for r in rows)
    assert {r.jacobian_entries for r in rows if r.size == 24} == {24**4}
    fig = plot_split(rows)
    assert fig.axes[0].get_xscale() == fig.axes[0].get_yscale() == "log"
    plt.close(fig)
