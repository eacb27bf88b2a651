"""The chapter 05 checks: right answers written in different ways pass, each wrong answer
learners write fails with the hint that names it, and the references agree with finite
differences in random directions."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import nbformat
import numpy as np
import pytest

from autograder import check
from autograder.exercises.ch05_custom_derivatives_jax import (
    ARGMAX_STE,
    CLIP_BOUNDS,
    CLIP_GRADIENT,
    CLIP_GRADING,
    CLIP_SHAPES,
    EXERCISES,
    LOG1PEXP,
)
from autograder.judging.cases import draw_cases, grading_profile

from ..jax_rules import (
    assert_jax_chapter,
    assert_primals_are_the_value,
    central_difference,
    reference_table,
)
from ..submissions import ROOT

# ---------------------------------------------------------------- log1pexp


def _log1pexp(value, tangent):
    """A custom_jvp function from a forward formula and a tangent rule tangent(x, t)."""

    @jax.custom_jvp
    def log1pexp(x):
        return value(x)

    @log1pexp.defjvp
    def log1pexp_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return log1pexp(x), tangent(x, t)

    return log1pexp


log1pexp_logaddexp = _log1pexp(lambda x: jnp.logaddexp(x, 0.0), lambda x, t: jax.nn.sigmoid(x) * t)
log1pexp_abs = _log1pexp(
    lambda x: jnp.maximum(x, 0) + jnp.log1p(jnp.exp(-jnp.abs(x))),
    lambda x, t: jnp.exp(x - jnp.logaddexp(x, 0.0)) * t,
)


@jax.custom_jvp
def log1pexp_defjvps(x):
    return jnp.where(x > 0, x + jnp.log1p(jnp.exp(-jnp.abs(x))), jnp.log1p(jnp.exp(-jnp.abs(x))))


log1pexp_defjvps.defjvps(lambda t, ans, x: jax.nn.sigmoid(x) * t)


@pytest.mark.parametrize("fn", [log1pexp_logaddexp, log1pexp_abs, log1pexp_defjvps])
def test_right_log1pexp_passes(fn):
    report = check.log1pexp(fn)
    assert report.passed, str(report)
    assert report.cases_checked >= 20


# Stable going forward, and both branches of the derivative look stable, but jnp.where
# differentiates both branches: the unused one is inf / inf = NaN in the second derivative.
where_trap = _log1pexp(
    lambda x: jnp.logaddexp(x, 0.0),
    lambda x, t: jnp.where(x > 0, 1 / (1 + jnp.exp(-x)), jnp.exp(x) / (1 + jnp.exp(x))) * t,
)


def stable(x):
    return jnp.logaddexp(x, 0.0)


tangent_squared = _log1pexp(stable, lambda x, t: jax.nn.sigmoid(x) * t * t)
tangent_sine = _log1pexp(stable, lambda x, t: jax.nn.sigmoid(x) * jnp.sin(t))


@jax.custom_jvp
def unstable_rule_primal(x):
    """A false pass once seen: stable itself, but the rule's primal overflows, and jax.jvp
    and jax.vjp return the rule's primal ([inf, inf] at float32 x = [100, 1000])."""
    return jnp.logaddexp(x, 0.0)


@unstable_rule_primal.defjvp
def _unstable_rule_primal_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return jnp.log(1 + jnp.exp(x)), jax.nn.sigmoid(x) * t


def no_custom_rule(x):
    return jnp.log1p(jnp.exp(x))


def upcasts(x):
    return jnp.logaddexp(x, np.zeros(x.shape))


# The declared mistakes (naive forms, a tangent ignored or plus one, sigmoid(-x), clipping
# the value or ones) are run by tests/judging/test_mistakes.py; these are other wrong answers.
LOG1PEXP_BUGS = [
    (where_trap, "NaN or Inf at the edges"),
    (no_custom_rule, "NaN or Inf at the edges"),
    (tangent_squared, "not linear in the tangent"),
    (tangent_sine, "not linear in the tangent"),
    (upcasts, "Keep x's dtype"),
    (unstable_rule_primal, "The primal output of your JVP rule"),
]


@pytest.mark.parametrize(
    ("fn", "hint"), LOG1PEXP_BUGS, ids=[str(i) for i in range(len(LOG1PEXP_BUGS))]
)
def test_wrong_log1pexp_fails_with_its_hint(fn, hint):
    report = check.log1pexp(fn)
    assert not report.passed
    assert hint in str(report), str(report)


def test_the_rules_primal_is_what_overflows():
    """The wrong answer above is stable through jit and wrong only through jax.jvp."""
    x = jnp.asarray([100.0, 1000.0], jnp.float32)
    assert np.isfinite(jax.jit(unstable_rule_primal)(x)).all()
    assert np.isinf(jax.jvp(unstable_rule_primal, (x,), (jnp.ones_like(x),))[0]).all()


def test_log1pexp_edges_reach_the_magnitudes_where_softplus_overflows():
    points = {float(v) for case in LOG1PEXP.edge_cases() for v in case.arg("x")}
    assert {-1000.0, -100.0, 100.0, 1000.0} <= points


# ---------------------------------------------------------------- clip_gradient


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def clip_nondiff(lo, hi, x):
    return x


clip_nondiff.defvjp(lambda lo, hi, x: (x, None), lambda lo, hi, r, g: (jnp.clip(g, lo, hi),))


def clip_custom_gradient(lo, hi, x):
    @jax.custom_gradient
    def identity(x):
        return x, lambda g: (jnp.clip(g, lo, hi),)

    return identity(x)


@jax.custom_vjp
def _clip_three(lo, hi, x):
    return x


_clip_three.defvjp(
    lambda lo, hi, x: (x, (lo, hi)),
    lambda bounds, g: (None, None, jnp.minimum(jnp.maximum(g, bounds[0]), bounds[1])),
)


def clip_all_arguments(lo, hi, x):
    return _clip_three(lo, hi, x)


@pytest.mark.parametrize("fn", [clip_nondiff, clip_custom_gradient, clip_all_arguments])
def test_right_clip_gradient_passes(fn):
    report = check.clip_gradient(fn)
    assert report.passed, str(report)


def _clip_with_bwd(bwd):
    @functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))
    def clip_gradient(lo, hi, x):
        return x

    clip_gradient.defvjp(lambda lo, hi, x: (x, None), bwd)
    return clip_gradient


bare_array = _clip_with_bwd(lambda lo, hi, r, g: jnp.clip(g, lo, hi))
cotangents_for_bounds = _clip_with_bwd(lambda lo, hi, r, g: (0.0, 0.0, jnp.clip(g, lo, hi)))


@functools.partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def fwd_clips_primal(lo, hi, x):
    """The identity under jit, but fwd's primal is clipped: wrong only through jax.vjp."""
    return x


fwd_clips_primal.defvjp(
    lambda lo, hi, x: (jnp.clip(x, lo, hi), None), lambda lo, hi, r, g: (jnp.clip(g, lo, hi),)
)

CLIP_BUGS = [
    (bare_array, "bwd returned the wrong structure"),
    (cotangents_for_bounds, "bwd returned the wrong structure"),
    (fwd_clips_primal, "The primal output of fwd"),
]


@pytest.mark.parametrize(("fn", "hint"), CLIP_BUGS, ids=[str(i) for i in range(len(CLIP_BUGS))])
def test_wrong_clip_gradient_fails_with_its_hint(fn, hint):
    report = check.clip_gradient(fn)
    assert not report.passed
    assert hint in str(report), str(report)


# ---------------------------------------------------------------- the references themselves


def _softplus(x):
    return np.logaddexp(x, 0.0)


def test_references_match_finite_differences_in_random_directions():
    """JVPs against a central difference along a random direction; VJPs by <g, J v> =
    <J^T g, v> for a random v. Only moderate float64 points: a difference quotient says
    nothing useful at x = 1000."""
    rng = np.random.default_rng(0)
    checked = 0
    jvp_index, vjp_index = LOG1PEXP.outputs.index("jvp"), LOG1PEXP.outputs.index("vjp")
    for case, outputs in zip(*reference_table(LOG1PEXP), strict=True):
        x, t, g = case.values()
        if x.dtype != np.float64 or np.abs(x).max() > 50:
            continue
        v = rng.normal(size=x.shape)
        np.testing.assert_allclose(
            outputs[jvp_index], central_difference(_softplus, x, t), rtol=1e-5, atol=1e-6
        )
        lhs = float(np.vdot(g, central_difference(_softplus, x, v)))
        np.testing.assert_allclose(np.vdot(outputs[vjp_index], v), lhs, rtol=1e-5, atol=1e-6)
        checked += 1
    assert checked >= 1


def test_second_derivatives_match_finite_differences():
    def sigmoid(v):
        return 1 / (1 + np.exp(-v))

    for case, outputs in zip(*reference_table(LOG1PEXP), strict=True):
        x = case.values()[0]
        if x.dtype != np.float64 or np.abs(x).max() > 50:
            continue
        np.testing.assert_allclose(
            outputs[-1], central_difference(sigmoid, x, 1.0, h=1e-4), rtol=1e-4, atol=1e-6
        )


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.name)
def test_the_primal_of_every_jvp_and_vjp_is_compared_with_the_value(exercise):
    assert_primals_are_the_value(exercise)


def test_every_exercise_is_a_jax_exercise_with_an_invoke():
    assert_jax_chapter(EXERCISES, "05", "ch05_custom_derivatives_jax")


def test_the_clip_reference_is_clipped():
    cases, outputs = reference_table(CLIP_GRADIENT)
    for case, (value, vjp_primal, vjp, rows, chained) in zip(cases, outputs, strict=True):
        lo, hi, x, g = case.values()
        np.testing.assert_array_equal(value, x)
        np.testing.assert_array_equal(vjp_primal, x)
        np.testing.assert_allclose(vjp, np.clip(g, lo, hi))
        np.testing.assert_allclose(rows, vjp)
        assert (np.abs(chained) <= 3 * max(-lo, hi) + 1e-5).all()


def test_clip_cases_compile_once_per_shape_yet_meet_every_bounds_pair():
    """lo and hi are static: each (lo, hi, shape, dtype) compiles the learner's function
    again, so every hidden case of one shape shares its dtype and bounds (the edge cases
    too); across the shapes, both dtypes and every bounds pair, asymmetric ones included,
    are met."""
    cases = [
        *CLIP_GRADIENT.edge_cases(),
        *draw_cases(CLIP_GRADIENT.strategy(grading_profile(20261124)), grading_profile(20261124)),
    ]
    kinds_of: dict[tuple, set] = {}
    for case in cases:
        lo, hi, x, _ = case.values()
        kinds_of.setdefault(x.shape, set()).add((x.dtype, lo, hi))
    assert set(kinds_of) == {*CLIP_SHAPES, *CLIP_GRADING}
    assert all(len(kinds) == 1 for kinds in kinds_of.values()), kinds_of
    met = {kind for kinds in kinds_of.values() for kind in kinds}
    assert {dtype for dtype, _, _ in met} == {np.dtype(np.float32), np.dtype(np.float64)}
    assert {(lo, hi) for _, lo, hi in met} == set(CLIP_BOUNDS)


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


def test_log1pexp_stable_forms_are_not_on_screen_before_the_exercise():
    shown = _learner_cells_before("def log1pexp(x):")
    for answer in ("logaddexp", "sigmoid(", "log1p(", "softplus(", "exp(-"):
        assert answer not in shown, answer


def test_the_nearest_demo_copied_fails_with_the_overflow_hint():
    """Section 1's naive formula under section 2's custom_jvp pattern (cube's rule, with
    the derivative written as the text writes it): NaN at the edges, and the hint says so."""
    copied = _log1pexp(
        lambda x: jnp.log(1.0 + jnp.exp(x)), lambda x, t: jnp.exp(x) / (1 + jnp.exp(x)) * t
    )
    report = check.log1pexp(copied)
    assert not report.passed
    assert "NaN or Inf at the edges" in str(report), str(report)


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
