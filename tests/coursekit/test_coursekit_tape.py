"""The reference tape's gradients, the breadth-first bug it demonstrates, the graph drawing,
the step-through widget and the tracing-overhead measurement."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import matplotlib

matplotlib.use("Agg")

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np
import pytest

import coursekit.tape as tape


def trap(value=0.5):
    x = tape.Tensor(np.array(value), name="x")
    v3 = tape.tanh(x)
    v5 = tape.mul(v3, tape.exp(v3))
    return tape.add(v3, v5), x


def trap_jnp(x):
    v3 = jnp.tanh(x)
    return v3 + v3 * jnp.exp(v3)


def test_grad_matches_jax_on_every_operation():
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0.5, 1.5, (3, 3)), rng.uniform(0.5, 1.5, (3, 3))

    def f(x, y, lib):
        ops = {"sum": lib.sum, "log": lib.log, "exp": lib.exp, "tanh": lib.tanh}
        h = ops["tanh"]((x @ y) / (x * y + x) - y)
        return ops["sum"](ops["log"](ops["exp"](-h) + x), axis=0)

    def ours(x, y):
        h = tape.tanh(tape.sub(tape.div(x @ y, tape.add(x * y, x)), y))
        s = tape.reduce_sum(tape.log(tape.add(tape.exp(-h), x)), axis=0)
        return tape.reduce_sum(s)

    got = tape.grad(ours, argnums=(0, 1))(a, b)
    with jax.enable_x64(True):
        expected = jax.grad(lambda x, y: jnp.sum(f(x, y, jnp)), argnums=(0, 1))(a, b)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-10)


def test_grad_refuses_a_non_scalar_output():
    with pytest.raises(TypeError, match="scalar"):
        tape.grad(lambda x: tape.tanh(x))(np.ones(3))


def test_breadth_first_order_is_wrong_on_the_trap_and_topological_right():
    with jax.enable_x64(True):
        expected = float(jax.grad(trap_jnp)(0.5))
    out, x = trap()
    tape.backward(out, np.array(1.0))
    assert np.isclose(float(x.grad), expected)
    out, x = trap()
    tape.backward(out, np.array(1.0), order=tape.bfs_order)
    assert not np.isclose(float(x.grad), expected)


def test_backward_steps_visit_each_operation_once():
    out, _ = trap()
    steps = list(tape.backward_steps(out, np.array(1.0)))
    assert [node.op for node, _, _ in steps] == ["add", "mul", "exp", "tanh"]
    tape.name_nodes(out)
    lines = tape.step_table(steps)
    assert len(lines) == 4 and lines[0].startswith("step 1:")


def test_draw_tape_draws_every_node_and_edge():
    out, x = trap()
    tape.backward(out, np.array(1.0))
    tape.name_nodes(out, {"x": x})
    fig = tape.draw_tape(out)
    texts = [t.get_text() for t in fig.axes[0].texts]
    labels = [t for t in texts if t]
    assert len(labels) == 5 and any(t.startswith("x: input") for t in labels)
    assert texts.count("") == 6  # one arrow per (parent, consumer) pair
    assert any("|grad|" in t for t in texts)
    plt.close(fig)


def test_step_through_has_one_slider_position_per_step():
    import ipywidgets as widgets

    box = tape.step_through(lambda: (trap()[0], {}), np.array(1.0))
    slider = box.children[0]
    assert isinstance(slider, widgets.IntSlider) and slider.max == 4
    slider.value = 2  # replays two steps without error
    plt.close("all")


def test_measure_overhead_reports_both_times():
    seconds = tape.measure_overhead(repeats=2, batch=4, width=8, depth=2)
    assert set(seconds) == {"tape", "jit"} and all(s > 0 for s in seconds.values())


def named_trap():
    """Chapter 02's trap graph at x = 0.5, every node named as the notebook names it."""
    x = tape.Tensor(np.array(0.5), name="x")
    v3 = tape.tanh(x)
    v4 = tape.exp(v3)
    v5 = tape.mul(v3, v4)
    v6 = tape.add(v3, v5)
    return v6, {"x": x, "v3": v3, "v4": v4, "v5": v5, "v6": v6}


def hand_computed_cotangents(step: int) -> dict[str, float]:
    """The cotangents after `step` backward steps in reverse topological order, by hand.

    v6 = v3 + v5 gives v3 and v5 one each; v5 = v3 * v4 gives v3 += v4 = e and v4 += v3 = t.
    """
    t = np.tanh(0.5)
    e = np.exp(t)
    table = [
        {"x": 0.0, "v3": 0.0, "v4": 0.0, "v5": 0.0, "v6": 1.0},  # only the root
        {"x": 0.0, "v3": 1.0, "v4": 0.0, "v5": 1.0, "v6": 1.0},  # v6 visited
        {"x": 0.0, "v3": 1.0 + e, "v4": t, "v5": 1.0, "v6": 1.0},  # v5 visited
    ]
    return table[step]


@pytest.mark.parametrize("step", [0, 1, 2])
def test_replay_stops_after_exactly_k_steps(step):
    root, steps = tape.replay(named_trap, np.array(1.0), step)
    assert len(steps) == step
    got = {node.name: float(node.grad) for node in tape.toposort(root)}
    expected = hand_computed_cotangents(step)
    assert got == pytest.approx(expected, rel=1e-12), f"after step {step}"


def test_replay_of_all_steps_gives_the_full_gradient():
    root, steps = tape.replay(named_trap, np.array(1.0), None)
    with jax.enable_x64(True):
        expected = float(jax.grad(trap_jnp)(0.5))
    x = next(node for node in tape.toposort(root) if node.name == "x")
    assert len(steps) == 4 and np.isclose(float(x.grad), expected, rtol=1e-12)
