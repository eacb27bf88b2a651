"""Chapter 02's teaching helpers on a learner's engine (tests/engines.py's): the steps of its
backward pass as the widget records them, the graph drawing, the step-through widget and the
timer. The helpers differentiate nothing themselves."""

import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import matplotlib

matplotlib.use("Agg")

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np
import pytest

import coursekit.tape as tape
from tests.engines import engine

LEARNER = engine()


def named_trap(ns=LEARNER):
    """Chapter 02's trap graph at x = 0.5 on the learner's engine, every node named."""
    x = ns["Tensor"](np.array(0.5))
    v3 = ns["tanh"](x)
    v4 = ns["exp"](v3)
    v5 = v3 * v4
    v6 = v3 + v5
    nodes = {"x": x, "v3": v3, "v4": v4, "v5": v5, "v6": v6}
    ops = {"x": "input", "v3": "tanh", "v4": "exp", "v5": "mul", "v6": "add"}
    for name, node in nodes.items():  # the tests' engine records no op names
        node.op = ops[name]
    return v6, nodes


def trap_jnp(x):
    v3 = jnp.tanh(x)
    return v3 + v3 * jnp.exp(v3)


def recorded(ns=LEARNER, run=None):
    root, nodes = named_trap(ns)
    tape.name_nodes(root, ns["toposort"], nodes)
    return tape.record_backward(root, ns["toposort"], run or ns["backward"]), nodes


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
def test_the_recording_holds_every_cotangent_after_exactly_k_steps(step):
    recording, nodes = recorded()
    got = {name: float(recording.grads[step][id(node)]) for name, node in nodes.items()}
    assert got == pytest.approx(hand_computed_cotangents(step), rel=1e-12), f"after {step}"


def test_the_learners_backward_runs_whole_and_its_vjps_come_back_unwrapped():
    recording, nodes = recorded()
    assert [step.node.name for step in recording.steps] == ["v6", "v5", "v4", "v3"]
    with jax.enable_x64(True):
        expected = float(jax.grad(trap_jnp)(0.5))
    assert np.isclose(float(nodes["x"].grad), expected, rtol=1e-12)
    assert float(recording.grads[-1][id(nodes["x"])]) == float(nodes["x"].grad)
    assert all(getattr(node.vjp, "__name__", "") != "vjp_recorded" for node in nodes.values())
    lines = tape.step_table(recording.steps)
    assert lines[0] == "step 1: v6 (add) holds 1. -> v3 += 1., v5 += 1."


def test_a_breadth_first_backward_is_recorded_as_it_runs():
    """The helpers show the learner's own order: breadth-first visits v3 right after v6."""
    ns = engine({"backward": "backward_breadth_first"})
    recording, _ = recorded(ns)
    assert [step.node.name for step in recording.steps][:2] == ["v6", "v3"]


def test_draw_tape_draws_every_node_and_edge():
    recording, nodes = recorded()
    root = nodes["v6"]
    fig = tape.draw_tape(root, LEARNER["toposort"], recording.grads[-1])
    texts = [t.get_text() for t in fig.axes[0].texts]
    labels = [t for t in texts if t]
    assert len(labels) == 5 and any(t.startswith("x: input") for t in labels)
    assert texts.count("") == 6  # one arrow per (parent, consumer) pair
    assert any("|grad|" in t for t in texts)
    plt.close(fig)


def test_step_through_has_one_slider_position_per_step():
    import ipywidgets as widgets

    root, nodes = named_trap()
    tape.name_nodes(root, LEARNER["toposort"], nodes)
    box = tape.step_through(root, LEARNER["toposort"], LEARNER["backward"])
    slider = box.children[0]
    assert isinstance(slider, widgets.IntSlider) and slider.max == 4
    slider.value = 2  # shows the graph after two steps without error
    plt.close("all")


def test_seconds_per_call_times_a_call():
    assert 0 < tape.seconds_per_call(lambda: sum(range(100)), repeats=3) < 1


def test_seconds_per_call_times_a_fast_call_many_times_and_divides():
    """A call of microseconds is timed in runs of many calls (one alone is clock noise)."""
    calls = []
    seconds = tape.seconds_per_call(lambda: calls.append(1), repeats=3, at_least=0.01)
    assert len(calls) > 3 * 100  # each of the three timings ran hundreds of calls
    assert 0 < seconds < 1e-4  # per call, not per timing
    slow = tape.seconds_per_call(lambda: time.sleep(0.002), repeats=3, at_least=0.001)
    assert 0.002 <= slow < 0.02  # a call longer than `at_least` is timed once per timing
