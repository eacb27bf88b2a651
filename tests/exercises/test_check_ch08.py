"""The chapter 08 check: right answers written differently pass, the nearest cells copied fail,
and each wrong answer learners write fails with the hint that names it. The capstone trains
on the learner's own chapter-02 tape: its learner copy imports no finished tape and prints
no answer to the VJP it asks for."""

from __future__ import annotations

from pathlib import Path

import nbformat
import numpy as np
import pytest

from autograder import check
from coursekit.broadcasting import broadcast_plan

ROOT = Path(__file__).resolve().parents[2]


def _softmax(logits):
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


# ---------------------------------------------------------------- capstone_broadcast_rule


def broadcast_rule_with_unbroadcast(op, g, x, y):
    def unbroadcast(c, shape):
        while c.ndim > len(shape):
            c = c.sum(axis=0)
        for axis, n in enumerate(shape):
            if n == 1:
                c = c.sum(axis=axis, keepdims=True)
        return c

    g_x = g if op == "add" else g * y
    g_y = g if op == "add" else g * x
    return unbroadcast(g_x, x.shape), unbroadcast(g_y, y.shape)


def broadcast_rule_by_reduction_axes(op, g, x, y):
    out_ndim = g.ndim

    def reduce(c, shape):
        padded = (1,) * (out_ndim - len(shape)) + tuple(shape)
        axes = tuple(i for i, n in enumerate(padded) if n == 1 and c.shape[i] != 1)
        return np.sum(c, axis=axes, keepdims=True).reshape(shape)

    if op == "add":
        return reduce(g, x.shape), reduce(g, y.shape)
    return reduce(np.multiply(g, y), x.shape), reduce(np.multiply(g, x), y.shape)


@pytest.mark.parametrize("fn", [broadcast_rule_with_unbroadcast, broadcast_rule_by_reduction_axes])
def test_broadcast_rules_written_differently_pass(fn):
    report = check.capstone_broadcast_rule(fn)
    assert report.passed, str(report)
    assert report.cases_checked >= 20


def _unbroadcast_by_plan(c, shape):
    """Chapter 03's unbroadcast built on coursekit's broadcast_plan, copied into chapter 08."""
    plan = broadcast_plan(shape, c.shape).a
    return c.sum(axis=plan.keep_axes, keepdims=True).sum(axis=plan.drop_axes)


def broadcast_rule_by_plan(op, g, x, y):
    g_x, g_y = (g, g) if op == "add" else (g * y, g * x)
    return _unbroadcast_by_plan(g_x, x.shape), _unbroadcast_by_plan(g_y, y.shape)


def test_a_rule_built_on_broadcast_plan_is_refused():
    g, x, y = np.arange(24.0).reshape(2, 3, 4), np.ones((3, 1)), np.ones(4)
    right = broadcast_rule_with_unbroadcast("mul", g, x, y)
    for got, want in zip(broadcast_rule_by_plan("mul", g, x, y), right, strict=True):
        np.testing.assert_array_equal(got, want)  # right values: refused for the helper alone
    report = check.capstone_broadcast_rule(broadcast_rule_by_plan)
    assert not report.passed
    assert "course's own helper broadcast_plan" in str(report), str(report)


def chapter02_table_copied(op, g, x, y):
    """The nearest cell: chapter 02's rules for add and mul, as the pasted tape has them."""
    rules = {"add": lambda g, x, y: (g, g), "mul": lambda g, x, y: (g * y, g * x)}
    return rules[op](g, x, y)


def test_chapter_02s_rules_copied_fail_with_the_unbroadcast_hint():
    report = check.capstone_broadcast_rule(chapter02_table_copied)
    assert not report.passed
    assert "reduce each cotangent to its primal's shape" in str(report), str(report)


# ---------------------------------------------------------------- capstone_matmul_rule


def matmul_rule_by_promotion(g, a, b):
    def sum_to(c, shape):
        c = c.sum(axis=tuple(range(c.ndim - len(shape))))
        return c.sum(axis=tuple(i for i, n in enumerate(shape) if n == 1), keepdims=True)

    a2, b2 = np.atleast_2d(a), (b[:, None] if b.ndim == 1 else b)
    g2 = g.reshape(np.matmul(a2, b2).shape)  # the removed axes are size 1: a reshape puts them back
    g_a = sum_to(g2 @ np.swapaxes(b2, -1, -2), a2.shape).reshape(a.shape)
    g_b = sum_to(np.swapaxes(a2, -1, -2) @ g2, b2.shape).reshape(b.shape)
    return g_a, g_b


def matmul_rule_by_full_broadcast(g, a, b):
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    g2 = g[..., None] if b.ndim == 1 else g
    g2 = g2[..., None, :] if a.ndim == 1 else g2
    batch = g2.shape[:-2]
    full_a = np.broadcast_to(a2, batch + a2.shape[-2:])
    full_b = np.broadcast_to(b2, batch + b2.shape[-2:])

    def reduce(c, shape, target):
        padded = (1,) * (c.ndim - len(shape)) + shape
        axes = tuple(i for i, n in enumerate(padded) if n == 1 and c.shape[i] != 1)
        return c.sum(axis=axes, keepdims=True).reshape(target)

    g_a = reduce(g2 @ np.swapaxes(full_b, -1, -2), a2.shape, a.shape)
    g_b = reduce(np.swapaxes(full_a, -1, -2) @ g2, b2.shape, b.shape)
    return g_a, g_b


@pytest.mark.parametrize("fn", [matmul_rule_by_promotion, matmul_rule_by_full_broadcast])
def test_matmul_rules_written_differently_pass(fn):
    report = check.capstone_matmul_rule(fn)
    assert report.passed, str(report)
    assert report.cases_checked >= 20


def chapter02_matmul_copied(g, a, b):
    """The nearest cell: chapter 02's 2-D rule, written with .T."""
    return g @ b.T, a.T @ g


def test_chapter_02s_matmul_rule_copied_fails():
    report = check.capstone_matmul_rule(chapter02_matmul_copied)
    assert not report.passed, str(report)


# ---------------------------------------------------------------- capstone_xent_vjp


def xent_vjp_direct(logits, labels, g):
    return g * (_softmax(logits) - labels) / (logits.size // logits.shape[-1])


def xent_vjp_logsumexp(logits, labels, g):
    m = logits.max(axis=-1, keepdims=True)
    log_z = m + np.log(np.exp(logits - m).sum(axis=-1, keepdims=True))
    rows = int(np.prod(logits.shape[:-1]))
    return (np.exp(logits - log_z) - labels) * (g / rows)


def xent_vjp_loop(logits, labels, g):
    flat, flat_labels = logits.reshape(-1, logits.shape[-1]), labels.reshape(-1, labels.shape[-1])
    out = np.empty_like(flat)
    for i, row in enumerate(flat):
        out[i] = (_softmax(row) - flat_labels[i]) * g / len(flat)
    return out.reshape(logits.shape)


@pytest.mark.parametrize("fn", [xent_vjp_direct, xent_vjp_logsumexp, xent_vjp_loop])
def test_xent_vjps_written_differently_pass(fn):
    report = check.capstone_xent_vjp(fn)
    assert report.passed, str(report)
    assert report.cases_checked >= 20


def xent_vjp_for_a_matrix(logits, labels, g):
    """The two-axis rule, N = logits.shape[0]: what the capstone used to print."""
    return g * (_softmax(logits) - labels) / logits.shape[0]


def test_the_two_axis_rule_is_told_the_mean_runs_over_every_leading_axis():
    report = check.capstone_xent_vjp(xent_vjp_for_a_matrix)
    assert not report.passed
    assert "every leading axis" in str(report), str(report)


def unstable_softmax(logits, labels, g):
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(logits)
        return g * (e / e.sum(axis=-1, keepdims=True) - labels) / (logits.size // logits.shape[-1])


def test_an_unstable_softmax_is_told_to_subtract_the_maximum():
    report = check.capstone_xent_vjp(unstable_softmax)
    assert not report.passed
    assert "Subtract each row's maximum" in str(report), str(report)


# ---------------------------------------------------------------- the learner copy


def _course_cells():
    return nbformat.read(ROOT / "course" / "08_capstone.ipynb", as_version=4).cells


def test_the_learner_copy_imports_no_finished_tape():
    sources = "\n".join(cell.source for cell in _course_cells() if cell.cell_type == "code")
    assert "coursekit.tape" not in sources and "import reference" not in sources
    for exercise in ("vjp_rule", "toposort", "backward"):  # the pasted tape's places, empty
        assert f'NotImplementedError("Exercise {exercise}:' in sources


def test_the_xent_vjp_is_not_on_screen_before_its_exercise():
    cells = _course_cells()
    exercise = next(i for i, c in enumerate(cells) if "def capstone_xent_vjp" in c.source)
    before = "\n".join(c.source for c in cells[:exercise]).replace(" ", "")
    for formula in ("softmax(logits)-labels", "probs-labels", "p-labels", "softmax(z)-labels",
                    "-labels)/"):
        assert formula not in before, formula
