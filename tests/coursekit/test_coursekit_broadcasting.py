"""broadcast_plan and the explorer widget built on it."""

import numpy as np
import pytest

from coursekit.broadcasting import broadcast_explorer, broadcast_plan, explain, parse_shape


@pytest.mark.parametrize(
    ("shape_a", "shape_b", "result", "a_drop", "a_keep", "b_drop", "b_keep"),
    [
        ((6, 1, 5), (4, 1), (6, 4, 5), (), (1,), (0,), (2,)),
        ((), (2, 3), (2, 3), (0, 1), (), (), ()),
        ((3,), (), (3,), (), (), (0,), ()),
        ((), (), (), (), (), (), ()),
        ((1, 1), (1,), (1, 1), (), (), (0,), ()),
        ((2, 1, 3), (1, 4, 1), (2, 4, 3), (), (1,), (), (0, 2)),
        ((8, 8), (4, 4, 8, 8), (4, 4, 8, 8), (0, 1), (), (), ()),
    ],
)
def test_plan(shape_a, shape_b, result, a_drop, a_keep, b_drop, b_keep):
    plan = broadcast_plan(shape_a, shape_b)
    assert plan.result == result == np.broadcast_shapes(shape_a, shape_b)
    assert (plan.a.drop_axes, plan.a.keep_axes) == (a_drop, a_keep)
    assert (plan.b.drop_axes, plan.b.keep_axes) == (b_drop, b_keep)


def test_plan_sums_undo_the_broadcast():
    """Summing the plan's axes from a result-shaped array lands exactly on the operand shape."""
    plan = broadcast_plan((6, 1, 5), (4, 1))
    grad = np.ones(plan.result)
    for op in (plan.a, plan.b):
        reduced = grad.sum(axis=op.keep_axes, keepdims=True).sum(axis=op.drop_axes)
        assert reduced.shape == op.shape


def test_aligned_shapes_are_padded_with_none():
    plan = broadcast_plan((5,), (3, 1, 5))
    assert plan.a.aligned == (None, None, 5)
    assert plan.b.aligned == (3, 1, 5)


def test_incompatible_pair_names_shapes_and_axis():
    with pytest.raises(ValueError, match=r"\(6, 2\) and \(1, 3\).*axis 1.*2 and 3"):
        broadcast_plan((6, 2), (1, 3))


def test_describe_is_deterministic_table():
    text = str(broadcast_plan((6, 1, 5), (4, 1)))
    assert text == broadcast_plan((6, 1, 5), (4, 1)).describe()
    assert text.splitlines()[1].split() == ["a", "6", "1", "5"]
    assert text.splitlines()[2].split() == ["b", "-", "4", "1"]
    assert "result shape: (6, 4, 5)" in text
    assert "grad b (4, 1): sum axes (drop) (0,), sum axes (keepdims) (2,)" in text


@pytest.mark.parametrize(("text", "shape"), [("6,1,5", (6, 1, 5)), ("(3, )", (3,)), ("", ())])
def test_parse_shape(text, shape):
    assert parse_shape(text) == shape


@pytest.mark.parametrize("bad", [("x", "3"), ("2,3", "4"), ("-1", "2")])
def test_explain_never_raises(bad):
    assert explain(*bad).startswith("error: ")


def test_explorer_updates_when_a_shape_changes():
    widget = broadcast_explorer("6,1,5", "4,1")
    box_a, box_b = widget.children[0].children
    out = widget.children[1]
    assert "result shape: (6, 4, 5)" in out.value
    box_b.value = "7,1,4,1"
    assert "result shape: (7, 6, 4, 5)" in out.value
    box_a.value = "6,2,5"
    assert "error: " in out.value
    assert "result shape" not in out.value
