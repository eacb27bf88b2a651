"""The chapter 05 checks: right answers written in different ways pass, each wrong answer
learners write fails with the hint that names it, and the references agree with finite
differences in random directions."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import nbformat
import numpy as np
import pytest

from autograder import check
from autograder.exercises.ch05_custom_derivatives_jax import (
    ARGMAX_STE,
    EXERCISES,
    SOFT_THRESHOLD,
    SOFTMAX_ENTROPY,
)
from autograder.judging.cases import draw_cases, grading_profile

from ..jax_rules import (
    assert_jax_chapter,
    assert_primals_are_the_value,
    central_difference,
    reference_table,
)
from ..submissions import ROOT

# ---------------------------------------------------------------- soft_threshold


def _soft_threshold(value, tangent):
    """A custom_jvp function from a forward formula and a tangent rule tangent(x, t)."""

    @jax.custom_jvp
    def soft_threshold(x):
        return value(x)

    @soft_threshold.defjvp
    def soft_threshold_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return soft_threshold(x), tangent(x, t)

    return soft_threshold


def composed(x):
    return jnp.sign(x) * jnp.maximum(jnp.abs(x) - 1, 0)


def dead_zone(x, t):
    return jnp.where(jnp.abs(x) > 1, t, jnp.zeros_like(t))


threshold_where = _soft_threshold(
    lambda x: jnp.where(x > 1, x - 1, jnp.where(x < -1, x + 1, 0.0)), dead_zone
)
threshold_clip = _soft_threshold(lambda x: x - jnp.clip(x, -1.0, 1.0), dead_zone)
threshold_mask = _soft_threshold(composed, lambda x, t: (jnp.abs(x) > 1).astype(t.dtype) * t)


@jax.custom_jvp
def threshold_defjvps(x):
    return composed(x)


threshold_defjvps.defjvps(lambda t, ans, x: dead_zone(x, t))


@pytest.mark.parametrize("fn", [threshold_where, threshold_clip, threshold_mask, threshold_defjvps])
def test_right_soft_threshold_passes(fn):
    report = check.soft_threshold(fn)
    assert report.passed, str(report)
    assert report.cases_checked >= 20


@jax.custom_jvp
def unstable_rule_primal(x):
    """Right itself, but the rule's primal is x (the identity): jax.jvp and jax.vjp return
    the rule's primal."""
    return composed(x)


@unstable_rule_primal.defjvp
def _rule_primal_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return x, dead_zone(x, t)


def no_custom_rule(x):
    """The convention's formula, differentiated by JAX: right values, no rule."""
    return jnp.where(jnp.abs(x) > 1, x - jnp.sign(x), jnp.zeros_like(x))


def jax_nn_soft_threshold_lookalike(x):
    """jax.nn.hard_tanh gives clip(x, -1, 1) with slope 1 at +-1; x minus it has slope 0 there:
    right values again, and still no rule."""
    return x - jax.nn.hard_tanh(x)


def upcasts(x):
    return composed(x) + np.zeros(x.shape)


THRESHOLD_BUGS = [
    (no_custom_rule, "has no jax.custom_jvp rule"),
    (jax_nn_soft_threshold_lookalike, "has no jax.custom_jvp rule"),
    (_soft_threshold(composed, lambda x, t: dead_zone(x, t) * t), "not linear in the tangent"),
    (_soft_threshold(composed, lambda x, t: dead_zone(x, jnp.sin(t))), "not linear in the tangent"),
    (upcasts, "Keep x's dtype"),
    (unstable_rule_primal, "The primal output of your JVP rule"),
]


@pytest.mark.parametrize(
    ("fn", "hint"), THRESHOLD_BUGS, ids=[str(i) for i in range(len(THRESHOLD_BUGS))]
)
def test_wrong_soft_threshold_fails_with_its_hint(fn, hint):
    report = check.soft_threshold(fn)
    assert not report.passed
    assert hint in str(report), str(report)


def test_the_method_is_judged_only_once_the_values_are_right():
    """The composed formula without a rule is wrong at the kinks (0.5 in JAX): its report
    names the tie, not the missing rule."""
    report = check.soft_threshold(composed)
    assert not report.passed
    assert "JAX splits a tie" in str(report) and "has no jax.custom_jvp" not in str(report)


def test_soft_threshold_cases_land_on_the_kinks():
    """A drawn float never lands on +-1, where the convention is what is checked: the edges
    hold them, and so do the drawn cases (sampled there on purpose)."""
    edges = {float(v) for case in SOFT_THRESHOLD.edge_cases() for v in case.arg("x").ravel()}
    assert {-1.0, 0.0, 1.0} <= edges
    drawn = draw_cases(SOFT_THRESHOLD.strategy(grading_profile(7)), grading_profile(7))
    assert any(np.isin(case.arg("x"), [-1.0, 1.0]).any() for case in drawn)


def test_the_soft_threshold_reference_has_the_convention():
    cases, outputs = reference_table(SOFT_THRESHOLD)
    grad_index = SOFT_THRESHOLD.outputs.index("grad")
    second_index = SOFT_THRESHOLD.outputs.index("second_derivative")
    checked = 0
    for case, out in zip(cases, outputs, strict=True):
        x = case.arg("x")
        np.testing.assert_array_equal(out[grad_index], (np.abs(x) > 1).astype(x.dtype))
        np.testing.assert_array_equal(out[second_index], np.zeros_like(x))
        checked += int(np.isin(x, [-1.0, 1.0]).any())
    assert checked >= 2


# ---------------------------------------------------------------- softmax_entropy


def _log_p(logits):
    return jax.nn.log_softmax(logits, axis=-1)


def stable_entropy(logits):
    log_p = _log_p(logits)
    return -jnp.sum(jnp.exp(log_p) * log_p, axis=-1)


@jax.custom_vjp
def entropy_saves_logits(logits):
    return stable_entropy(logits)


def _bwd_from_logits(logits, g):
    log_p = _log_p(logits)
    p = jnp.exp(log_p)
    entropy = -jnp.sum(p * log_p, axis=-1, keepdims=True)
    return (-p * (log_p + entropy) * g[..., None],)


entropy_saves_logits.defvjp(lambda v: (stable_entropy(v), v), _bwd_from_logits)


@jax.custom_jvp
def entropy_jvp(logits):
    return stable_entropy(logits)


@entropy_jvp.defjvp
def _entropy_jvp_rule(primals, tangents):
    (v,), (t,) = primals, tangents
    log_p = _log_p(v)
    p = jnp.exp(log_p)
    entropy = -jnp.sum(p * log_p, axis=-1)
    return entropy, -jnp.sum(p * (log_p + entropy[..., None]) * t, axis=-1)


def entropy_custom_gradient(logits):
    @jax.custom_gradient
    def entropy(v):
        return stable_entropy(v), lambda g: _bwd_from_logits(v, g)[0]

    return entropy(logits)


@pytest.mark.parametrize("fn", [entropy_saves_logits, entropy_jvp, entropy_custom_gradient])
def test_right_softmax_entropy_passes(fn):
    report = check.softmax_entropy(fn)
    assert report.passed, str(report)
    assert report.cases_checked >= 20


def _entropy_with(fwd, bwd):
    @jax.custom_vjp
    def softmax_entropy(logits):
        return stable_entropy(logits)

    softmax_entropy.defvjp(fwd, bwd)
    return softmax_entropy


def naive_entropy(logits):
    """The notebook's demonstration, with no rule: NaN at the edges."""
    p = jnp.exp(logits) / jnp.sum(jnp.exp(logits), axis=-1, keepdims=True)
    return -jnp.sum(p * jnp.log(p), axis=-1)


ENTROPY_BUGS = [
    (stable_entropy, "has no custom rule"),
    (naive_entropy, "NaN or Inf at the edges"),
    (
        _entropy_with(lambda v: (stable_entropy(v), v), lambda v, g: _bwd_from_logits(v, g)[0]),
        "bwd returned the wrong structure",
    ),
    (
        _entropy_with(lambda v: (-stable_entropy(v), v), _bwd_from_logits),
        "The primal output of fwd",
    ),
]


@pytest.mark.parametrize(
    ("fn", "hint"), ENTROPY_BUGS, ids=[str(i) for i in range(len(ENTROPY_BUGS))]
)
def test_wrong_softmax_entropy_fails_with_its_hint(fn, hint):
    report = check.softmax_entropy(fn)
    assert not report.passed
    assert hint in str(report), str(report)


def test_entropy_edges_reach_where_the_naive_formula_overflows():
    logits = [case.arg("logits") for case in SOFTMAX_ENTROPY.edge_cases()]
    float32 = [v for v in logits if v.dtype == np.float32]
    float64 = [v for v in logits if v.dtype == np.float64]
    assert max(np.abs(v).max() for v in float32) >= 1000
    assert max(np.abs(v).max() for v in float64) > np.log(np.finfo(np.float64).max)
    assert any(v.shape[-1] == 1 for v in logits)  # one class: the entropy is 0


def _entropy(v):
    z = v - v.max(axis=-1, keepdims=True)
    log_p = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    return -(np.exp(log_p) * log_p).sum(axis=-1)


def test_the_entropy_reference_matches_finite_differences():
    """<g, J v> = <J^T g, v> for a random v, at moderate float64 logits."""
    rng = np.random.default_rng(1)
    checked = 0
    vjp_index = SOFTMAX_ENTROPY.outputs.index("vjp")
    for case, outputs in zip(*reference_table(SOFTMAX_ENTROPY), strict=True):
        logits, g = case.values()
        if logits.dtype != np.float64 or np.abs(logits).max() > 50:
            continue
        np.testing.assert_allclose(outputs[0], _entropy(logits), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(outputs[-1], outputs[vjp_index], rtol=1e-12)
        v = rng.normal(size=logits.shape)
        lhs = float(np.vdot(g, central_difference(_entropy, logits, v)))
        np.testing.assert_allclose(np.vdot(outputs[vjp_index], v), lhs, rtol=1e-5, atol=1e-6)
        checked += 1
    assert checked >= 1


# ---------------------------------------------------------------- the references themselves


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.name)
def test_the_primal_of_every_jvp_and_vjp_is_compared_with_the_value(exercise):
    assert_primals_are_the_value(exercise)


def test_every_exercise_is_a_jax_exercise_with_an_invoke():
    assert_jax_chapter(EXERCISES, "05", "ch05_custom_derivatives_jax")


# ---------------------------------------------------------------- no answer on screen


def _learner_cells_before(exercise_cell_marker: str) -> str:
    """The text of the learner copy's cells (code and markdown) before the exercise cell."""
    notebook = nbformat.read(ROOT / "course" / "05_custom_derivatives_jax.ipynb", as_version=4)
    cells = []
    for cell in notebook.cells:
        if exercise_cell_marker in cell.source:
            break
        cells.append(cell.source)
    return "\n".join(cells)


def test_the_answers_are_not_on_screen_before_their_exercises():
    shown = _learner_cells_before("def softmax_entropy(logits):")
    for answer in ("log_softmax", "logsumexp", "entr(", "softmax("):
        assert answer not in shown, answer
    shown = _learner_cells_before("def soft_threshold(x):")
    for answer in ("jnp.where(jnp.abs(x) >", "abs(x) > 1,"):
        assert answer not in shown, answer


# ---------------------------------------------------------------- argmax_ste


def _one_hot(logits):
    return jax.nn.one_hot(jnp.argmax(logits, axis=-1), logits.shape[-1], dtype=logits.dtype)


def ste_stop_gradient(logits):
    centred = logits - jnp.mean(logits, axis=-1, keepdims=True)
    return centred + jax.lax.stop_gradient(_one_hot(logits) - centred)


def ste_projection(logits):
    """The surrogate written as a matrix: (I - 1/n) logits per row, and the one-hot added."""
    n = logits.shape[-1]
    surrogate = logits @ (jnp.eye(n, dtype=logits.dtype) - 1.0 / n)
    return jax.lax.stop_gradient(_one_hot(logits)) + surrogate - jax.lax.stop_gradient(surrogate)


@jax.custom_vjp
def ste_custom_vjp(logits):
    return _one_hot(logits)


def _ste_fwd(logits):
    return _one_hot(logits), None


def _ste_bwd(_, g):
    return (g - jnp.mean(g, axis=-1, keepdims=True),)


ste_custom_vjp.defvjp(_ste_fwd, _ste_bwd)


@pytest.mark.parametrize("fn", [ste_stop_gradient, ste_projection, ste_custom_vjp])
def test_right_argmax_ste_passes(fn):
    report = check.argmax_ste(fn)
    assert report.passed, str(report)


def floor_demo_copied(logits):
    """The notebook's floor_ste with argmax's one-hot in floor's place."""
    return logits + jax.lax.stop_gradient(_one_hot(logits) - logits)


def softmax_surrogate(logits):
    """The textbook straight-through softmax, not what this exercise asks for."""
    soft = jax.nn.softmax(logits, axis=-1)
    return soft + jax.lax.stop_gradient(_one_hot(logits) - soft)


def no_ste_at_all(logits):
    return (logits == jnp.max(logits, axis=-1, keepdims=True)).astype(logits.dtype)


STE_BUGS = [
    (floor_demo_copied, "your surrogate is the logits themselves"),
    (softmax_surrogate, "Your cotangent is softmax's VJP"),
    (no_ste_at_all, "Right shape, wrong numbers"),  # a tie gives two ones
]


@pytest.mark.parametrize(("fn", "hint"), STE_BUGS, ids=[str(i) for i in range(len(STE_BUGS))])
def test_wrong_argmax_ste_fails_with_its_hint(fn, hint):
    report = check.argmax_ste(fn)
    assert not report.passed
    assert hint in str(report), str(report)


def test_the_ste_reference_is_a_one_hot_with_a_centred_cotangent():
    cases, outputs = reference_table(ARGMAX_STE)
    for case, (value, _, vjp) in zip(cases, outputs, strict=True):
        logits, g = (np.asarray(v, np.float64) for v in case.values())
        one_hot = np.eye(logits.shape[-1])[np.argmax(logits, axis=-1)]
        np.testing.assert_allclose(value, one_hot, atol=1e-6)
        want = g - g.mean(axis=-1, keepdims=True)
        np.testing.assert_allclose(vjp, want, rtol=1e-4, atol=1e-5)
