"""The chapter 06 checks: right answers written in different ways pass, each wrong answer
learners write fails with the hint that names it, and the references agree with finite
differences in random directions."""

from __future__ import annotations

import contextlib
import io

import jax
import jax.numpy as jnp
import nbformat
import numpy as np
import pytest
from jax.ad_checkpoint import print_saved_residuals

from autograder import check
from autograder.exercises.ch06_implicit_callbacks_checkpointing import (
    BESSEL_I0E,
    EXERCISES,
    FIXED_POINT,
    REMAT_NET,
)
from autograder.harness.ch05_custom_derivatives_jax import double_precision
from coursekit import custom_derivatives
from coursekit.custom_derivatives import fixed_point_implicit

from ..jax_rules import (
    assert_jax_chapter,
    assert_primals_are_the_value,
    central_difference,
    reference_table,
)
from ..submissions import ROOT

# ---------------------------------------------------------------- fixed_point


def fixed_point_map(a, x):
    return a / (1 + x)


def solve(a):
    return jax.lax.fori_loop(0, 300, lambda i, x: fixed_point_map(a, x), jnp.zeros_like(a))


def _fixed_point(fwd, bwd):
    @jax.custom_vjp
    def fixed_point(a):
        return solve(a)

    fixed_point.defvjp(fwd, bwd)
    return fixed_point


def _fwd(a):
    x = solve(a)
    return x, (a, x)


def _bwd_formula(residuals, g):
    a, x = residuals
    return (g / (1 + x) / (1 + a / (1 + x) ** 2),)


def _bwd_general(residuals, g):
    """Solve u = g + u df/dx with JAX's own VJP of the map, then the cotangent of a is u df/da."""
    a, x = residuals
    _, vjp_x = jax.vjp(lambda x: fixed_point_map(a, x), x)
    u = jax.lax.fori_loop(0, 300, lambda i, u: g + vjp_x(u)[0], g)
    _, vjp_a = jax.vjp(lambda a: fixed_point_map(a, x), a)
    return vjp_a(u)


def _bwd_partials_by_jax(residuals, g):
    """The implicit formula with both partial derivatives of the map taken by JAX."""
    a, x = residuals
    _, vjp = jax.vjp(fixed_point_map, a, x)
    df_da, df_dx = vjp(jnp.ones_like(x))  # the map is elementwise: its diagonal partials
    return (g * df_da / (1 - df_dx),)


def _bwd_reordered(residuals, g):
    """The implicit formula multiplied out, jnp's functions, a float exponent:
    (df/da) / (1 - df/dx) = (1 + x) / ((1 + x)**2 + a)."""
    a, x = residuals
    one_plus_x = jnp.add(x, 1.0)
    return (jnp.multiply(g, one_plus_x) / jnp.add(jnp.power(one_plus_x, 2.0), a),)


def _bwd_from_the_quadratic(residuals, g):
    """x**2 + x = a differentiated implicitly: (2x + 1) dx = da."""
    _, x = residuals
    return (g / (2 * x + 1),)


fixed_point_formula = _fixed_point(_fwd, _bwd_formula)
fixed_point_general = _fixed_point(_fwd, _bwd_general)
fixed_point_partials_by_jax = _fixed_point(_fwd, _bwd_partials_by_jax)
fixed_point_reordered = _fixed_point(_fwd, _bwd_reordered)
fixed_point_from_the_quadratic = _fixed_point(_fwd, _bwd_from_the_quadratic)


@pytest.mark.parametrize(
    "fn",
    [
        fixed_point_formula,
        fixed_point_general,
        fixed_point_partials_by_jax,
        fixed_point_reordered,
        fixed_point_from_the_quadratic,
    ],
)
def test_right_fixed_point_passes(fn):
    report = check.fixed_point(fn)
    assert report.passed, str(report)


STASH = {}


def _fwd_stashing(a):
    x = solve(a)
    STASH["x"] = x  # kept outside: under jit this is a tracer, gone when bwd runs
    return x, a


def _bwd_stashed(a, g):
    x = STASH["x"]
    return (g / (1 + x) / (1 + a / (1 + x) ** 2),)


def while_loop_unrolled(a):
    return jax.lax.while_loop(
        lambda s: s[1] < 300, lambda s: (fixed_point_map(a, s[0]), s[1] + 1), (a, 0)
    )[0]


def _bwd_by_the_reference_solver(residuals, g):
    a, _ = residuals
    return jax.vjp(lambda a: fixed_point_implicit(fixed_point_map, a, 300), a)[1](g)


def _vjp_of_the_unrolled_solver(a, g):  # a helper of the learner's own, one call deeper
    return jax.vjp(lambda a: custom_derivatives.fixed_point_unrolled(fixed_point_map, a, 300), a)[
        1
    ](g)


def _bwd_through_the_loop(residuals, g):
    """Reverse mode through the given solver: the derivative of the loop, not of x*."""
    a, _ = residuals
    return jax.vjp(solve, a)[1](g)


def _bwd_grad_of_the_loop(residuals, g):
    a, _ = residuals
    return (g * jax.grad(lambda a: solve(a).sum())(a),)


def _bwd_closed_form(residuals, g):
    """The derivative the chapter prints after the exercise, 1 / sqrt(1 + 4a)."""
    a, _ = residuals
    return (g / jnp.sqrt(1 + 4 * a),)


def _bwd_closed_form_as_a_power(residuals, g):
    a, _ = residuals
    return (g * (1 + 4 * a) ** -0.5,)


def _bwd_vjp_of_the_closed_form(residuals, g):
    a, _ = residuals
    return jax.vjp(lambda a: 2 * a / (1 + jnp.sqrt(1 + 4 * a)), a)[1](g)


REFUSED = "uses the course's finished solvers"
UNROLLED = "Your derivative is that of the solver's loop"
CLOSED_FORM = (
    "Right values, but jax.vjp of your fixed_point computes {}: that comes from the closed form"
)

FIXED_POINT_BUGS = [
    (_fixed_point(_fwd, _bwd_by_the_reference_solver), REFUSED),
    (_fixed_point(_fwd, lambda r, g: _vjp_of_the_unrolled_solver(r[0], g)), REFUSED),
    (lambda a: fixed_point_implicit(fixed_point_map, a, 300), REFUSED),
    (_fixed_point(_fwd_stashing, _bwd_stashed), "residuals close over tracers"),
    (_fixed_point(_fwd, lambda r, g: _bwd_formula(r, g)[0]), "bwd returned the wrong structure"),
    (while_loop_unrolled, "cannot differentiate through lax.while_loop"),
    (_fixed_point(_fwd, _bwd_through_the_loop), UNROLLED),
    (_fixed_point(_fwd, _bwd_grad_of_the_loop), UNROLLED),
    (solve, UNROLLED),  # no custom_vjp at all: JAX differentiates the fori_loop itself
    (_fixed_point(_fwd, _bwd_closed_form), CLOSED_FORM.format("sqrt")),
    (_fixed_point(_fwd, _bwd_closed_form_as_a_power), CLOSED_FORM.format("v ** -0.5")),
    (_fixed_point(_fwd, _bwd_vjp_of_the_closed_form), CLOSED_FORM.format("sqrt")),
]


@pytest.mark.parametrize(
    ("fn", "hint"), FIXED_POINT_BUGS, ids=[str(i) for i in range(len(FIXED_POINT_BUGS))]
)
def test_wrong_fixed_point_fails_with_its_hint(fn, hint):
    report = check.fixed_point(fn)
    assert not report.passed
    assert hint in str(report), str(report)


def test_a_fixed_point_given_the_closed_form_later_is_judged_again():
    """The method's verdict is kept per function, shape and dtype, and per rules: defvjp run
    again on the same custom_vjp (a notebook cell run on its own) is judged again."""
    fn = _fixed_point(_fwd, _bwd_formula)
    assert check.fixed_point(fn).passed
    fn.defvjp(_fwd, _bwd_closed_form)
    report = check.fixed_point(fn)
    assert not report.passed
    assert CLOSED_FORM.format("sqrt") in str(report), str(report)


# ---------------------------------------------------------------- bessel_i0e


def external_i0e(v):
    return (np.exp(-np.abs(v)) * np.i0(v)).astype(v.dtype)


def _bessel(tangent, vmap_method="expand_dims", host=external_i0e):
    @jax.custom_jvp
    def bessel_i0e(x):
        shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
        return jax.pure_callback(host, shape, x, vmap_method=vmap_method)

    @bessel_i0e.defjvp
    def bessel_i0e_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        y = bessel_i0e(x)
        return y, tangent(x, y, t)

    return bessel_i0e


def _right(x, y, t):
    return (jax.scipy.special.i1e(x) - jnp.sign(x) * y) * t


bessel_product_rule = _bessel(_right)
# The same derivative written without the callback's value, from the unscaled functions.
bessel_unscaled = _bessel(
    lambda x, y, t: (
        jnp.exp(-jnp.abs(x)) * (jax.scipy.special.i1(x) - jnp.sign(x) * jax.scipy.special.i0(x)) * t
    ),
    vmap_method="broadcast_all",
)
bessel_where = _bessel(
    lambda x, y, t: jnp.where(x > 0, jax.scipy.special.i1e(x) - y, jax.scipy.special.i1e(x) + y) * t
)


@pytest.mark.parametrize("fn", [bessel_product_rule, bessel_unscaled, bessel_where])
def test_right_bessel_i0e_passes(fn):
    report = check.bessel_i0e(fn)
    assert report.passed, str(report)


def _numpy_derivative(v):
    h = 1e-3
    return ((external_i0e(v + h) - external_i0e(v - h)) / (2 * h)).astype(v.dtype)


def callback_derivative(x, y, t):
    shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
    return jax.pure_callback(_numpy_derivative, shape, x, vmap_method="expand_dims") * t


def plain_callback(x):
    shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
    return jax.pure_callback(external_i0e, shape, x, vmap_method="expand_dims")


def sinc_demo_copied():
    """The notebook's sinc demo with np.i0 and the I0' = I1 rule: what copying gives."""

    @jax.custom_jvp
    def bessel_i0e(x):
        shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
        return jax.pure_callback(
            lambda v: np.i0(v).astype(v.dtype), shape, x, vmap_method="expand_dims"
        )

    @bessel_i0e.defjvp
    def bessel_i0e_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return bessel_i0e(x), jax.scipy.special.i1(x) * t

    return bessel_i0e


@jax.custom_jvp
def bessel_by_jax(x):
    """The right rule on a value JAX computes itself: no callback, nothing made
    differentiable."""
    return jax.scipy.special.i0e(x)


@bessel_by_jax.defjvp
def _bessel_by_jax_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = bessel_by_jax(x)
    return y, _right(x, y, t)


NO_CALLBACK = "Right values, but your bessel_i0e never calls jax.pure_callback"

BESSEL_BUGS = [
    (jax.scipy.special.i0e, NO_CALLBACK),
    (bessel_by_jax, NO_CALLBACK),
    (_bessel(callback_derivative), "write the rule itself in jax.numpy"),
    (plain_callback, "Give the function a jax.custom_jvp rule"),
    (_bessel(_right, vmap_method=None), "needs a vmap_method"),
    (_bessel(lambda x, y, t: jax.scipy.special.i1e(x) * t), "differentiate both factors"),
    (_bessel(lambda x, y, t: jax.scipy.special.i1(x) * t), "derivative of I0, the unscaled"),
    (_bessel(lambda x, y, t: (jax.scipy.special.i1e(x) - y) * t), "The derivative of |x|"),
    (sinc_demo_copied(), "differentiate both factors"),
]


@pytest.mark.parametrize(("fn", "hint"), BESSEL_BUGS, ids=[str(i) for i in range(len(BESSEL_BUGS))])
def test_wrong_bessel_i0e_fails_with_its_hint(fn, hint):
    report = check.bessel_i0e(fn)
    assert not report.passed
    assert hint in str(report), str(report)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bessel_derivatives_on_a_bucket_are_the_elementwise_derivatives(dtype):
    """invoke_bessel_i0e differentiates x flattened and padded to a bucket (one compiled
    program per dtype, not per shape): its outputs must be those of differentiating each
    element of x in its own shape (XLA's code for another length may round the last bit
    differently, and the rule's i1e(x) - sign(x) * i0e(x) cancels, which amplifies it a few
    times; nothing more), and the padding compiles no new program."""
    from autograder.harness import ch06_implicit_callbacks_checkpointing as harness

    fn = bessel_product_rule
    rng = np.random.default_rng(5)
    compiled = harness._bessel_i0e_derivatives._cache_size()
    for shape in [(1,), (6,), (2, 3), (16,), (3, 1, 4)]:
        x = rng.uniform(-4, 4, shape).astype(dtype)
        y, y_jvp, jvp, grad, second = harness.invoke_bessel_i0e(fn, x, np.ones_like(x))
        with double_precision():
            flat = jnp.asarray(x).reshape(-1)
            expected = [jax.vmap(jax.grad(fn))(flat), jax.vmap(jax.grad(jax.grad(fn)))(flat)]
        for got, want in zip((grad, second), expected, strict=True):
            assert got.shape == x.shape and got.dtype == x.dtype
            np.testing.assert_allclose(
                got, np.asarray(want).reshape(x.shape), rtol=32 * np.finfo(dtype).eps, atol=0
            )
        np.testing.assert_array_equal(y, external_i0e(x))
        np.testing.assert_array_equal(y_jvp, y)
        np.testing.assert_allclose(jvp, expected[0].reshape(x.shape), rtol=1e-5)
    assert harness._bessel_i0e_derivatives._cache_size() == compiled + 1
    assert harness.bucketed(jnp.arange(17.0)).shape == (32,)


# ---------------------------------------------------------------- the references themselves


def _fixed_point_numpy(a):
    x = np.zeros_like(a)
    for _ in range(400):
        x = a / (1 + x)
    return x


def test_references_match_finite_differences_in_random_directions():
    """JVPs against a central difference along a random direction; VJPs by <g, J v> =
    <J^T g, v> for a random v. Only moderate float64 points."""
    rng = np.random.default_rng(0)
    checked = 0
    for exercise, f, tangent_name, vjp_name in [
        (FIXED_POINT, _fixed_point_numpy, None, "vjp"),
        (BESSEL_I0E, external_i0e, "jvp", None),
    ]:
        tangent_index = exercise.outputs.index(tangent_name) if tangent_name else None
        vjp_index = exercise.outputs.index(vjp_name) if vjp_name else None
        for case, outputs in zip(*reference_table(exercise), strict=True):
            x = case.values()[0]
            if x.dtype != np.float64 or np.abs(x).max() > 50:
                continue
            v = rng.normal(size=x.shape)
            if tangent_index is not None:
                t = case.values()[1]
                np.testing.assert_allclose(
                    outputs[tangent_index], central_difference(f, x, t), rtol=1e-5, atol=1e-6
                )
            if vjp_index is not None:
                g = case.values()[-1]
                lhs = float(np.vdot(g, central_difference(f, x, v)))
                np.testing.assert_allclose(
                    np.vdot(outputs[vjp_index], v), lhs, rtol=1e-5, atol=1e-6
                )
            checked += 1
    assert checked >= 5


def test_bessel_second_derivative_matches_finite_differences():
    for case, outputs in zip(*reference_table(BESSEL_I0E), strict=True):
        x = case.values()[0]
        if x.dtype != np.float64:
            continue
        first = outputs[BESSEL_I0E.outputs.index("grad")]
        np.testing.assert_allclose(first, central_difference(external_i0e, x, 1.0), rtol=1e-5)
        second = outputs[-1]

        def derivative(v):
            return central_difference(external_i0e, v, 1.0, h=1e-4)

        expected = central_difference(derivative, x, 1.0, h=1e-4)
        np.testing.assert_allclose(second, expected, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.name)
def test_the_primal_of_every_jvp_and_vjp_is_compared_with_the_value(exercise):
    assert_primals_are_the_value(exercise)


def test_every_exercise_is_a_jax_exercise_with_an_invoke():
    assert_jax_chapter(EXERCISES, "06", "ch06_implicit_callbacks_checkpointing")


# ---------------------------------------------------------------- remat_net


def _layer(w, h):
    return jnp.tanh(h @ w)


def _net(w, x):
    h = x
    for _ in range(6):
        h = _layer(w, h)
    return jnp.sum(h**2)


def remat_two_halves(w, x):
    """Two checkpointed halves of three layers: saves the inputs and the middle h."""

    def half(w, h):
        for _ in range(3):
            h = _layer(w, h)
        return h

    h = jax.checkpoint(half)(w, x)
    return jnp.sum(jax.checkpoint(half)(w, h) ** 2)


def remat_thirds_with_the_loss(w, x):
    """Three checkpointed pieces of two layers, the loss inside the last: saves w, x, h2, h4."""

    def two(w, h):
        return _layer(w, _layer(w, h))

    h = jax.remat(two)(w, jax.remat(two)(w, x))
    return jax.checkpoint(lambda w, h: jnp.sum(two(w, h) ** 2))(w, h)


@pytest.mark.parametrize("fn", [remat_two_halves, remat_thirds_with_the_loss])
def test_right_remat_net_passes(fn):
    report = check.remat_net(fn)
    assert report.passed, str(report)


def per_layer(w, x):
    """The scan demo's placement copied: one checkpoint per layer."""
    h = x
    for _ in range(6):
        h = jax.checkpoint(_layer)(w, h)
    return jnp.sum(h**2)


def thirds(w, x):
    """Three pieces of two layers, the loss outside: the last h is saved too, 5 arrays."""
    h = x
    for _ in range(3):
        h = jax.checkpoint(lambda w, h: _layer(w, _layer(w, h)))(w, h)
    return jnp.sum(h**2)


def nested(w, x):
    """Halves whose layers are checkpointed again: the layers run a third time."""

    def half(w, h):
        for _ in range(3):
            h = jax.checkpoint(_layer)(w, h)
        return h

    return jnp.sum(jax.checkpoint(half)(w, jax.checkpoint(half)(w, x)) ** 2)


REMAT_BUDGET_BROKEN = [
    (_net, "arrays (print_saved_residuals lists them)"),  # 15, or 14 on newer JAX
    (per_layer, "keeps 8 arrays"),
    (thirds, "keeps 5 arrays"),
    (jax.checkpoint(_net), "spans 6 layers"),  # the demo's jax.checkpoint(block), on the net
    (nested, "allows 12, each of the 6 layers once forward and recomputed at most once"),
]


@pytest.mark.parametrize(
    ("fn", "hint"),
    REMAT_BUDGET_BROKEN,
    ids=["no_checkpoint", "per_layer", "thirds", "whole_net", "nested"],
)
def test_right_values_that_break_the_budget_fail_on_the_method(fn, hint):
    report = check.remat_net(fn)
    assert not report.passed
    assert "Right values, but" in str(report) and hint in str(report), str(report)


def test_the_remat_references_are_the_plain_nets_derivatives():
    cases, outputs = reference_table(REMAT_NET)
    for case, (value, _, g_w, g_x) in zip(cases, outputs, strict=True):
        w, x, g = (np.asarray(v, np.float64) for v in case.values())  # g: a float
        with double_precision():
            y, pullback = jax.vjp(_net, jnp.asarray(w), jnp.asarray(x))
            want_w, want_x = pullback(jnp.asarray(g))
        np.testing.assert_allclose(value, y, rtol=1e-5)
        np.testing.assert_allclose(g_w, want_w, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(g_x, want_x, rtol=1e-4, atol=1e-5)


def test_remat_net_is_compiled_once_per_function_and_shape():
    """Every case of one shape runs the same compiled jax.vjp program (grading speed: op by
    op, the net was traced and dispatched again for every case)."""
    from autograder.harness import ch06_implicit_callbacks_checkpointing as harness

    rng = np.random.default_rng(3)
    compiled = harness._remat_program._cache_size()
    for _ in range(3):
        w, x = rng.uniform(-1, 1, (3, 3)), rng.uniform(-2, 2, (2, 3))
        value, _, g_w, g_x = harness.invoke_remat_net(remat_two_halves, w, x, 1.5)
        with double_precision():
            want_value, pullback = jax.vjp(_net, jnp.asarray(w), jnp.asarray(x))
            want = pullback(jnp.asarray(1.5))
        np.testing.assert_allclose(value, want_value, rtol=1e-12)
        np.testing.assert_allclose(g_w, want[0], rtol=1e-10)
        np.testing.assert_allclose(g_x, want[1], rtol=1e-10)
    assert harness._remat_program._cache_size() == compiled + 1


# ---------------------------------------------------------------- the chapter's topics


def _solve_until_converged(a, tol=1e-6):
    def not_converged(state):
        x, previous = state
        return jnp.any(jnp.abs(x - previous) > tol)

    def iterate(state):
        return fixed_point_map(a, state[0]), state[0]

    start = jnp.zeros_like(a)
    return jax.lax.while_loop(not_converged, iterate, (fixed_point_map(a, start), start))[0]


def test_reverse_mode_refuses_a_while_loop_and_a_traced_fori_loop_but_not_a_static_one():
    """What section 1 shows: jax.grad through while_loop raises, jax.jvp works, fori_loop with
    a Python-number bound is differentiable and a traced bound is refused the same way."""
    with pytest.raises(ValueError, match="while_loop"):
        jax.grad(_solve_until_converged)(2.0)
    np.testing.assert_allclose(jax.jvp(_solve_until_converged, (2.0,), (1.0,))[1], 1 / 3, 1e-4)

    def solve_for(a, n):
        return jax.lax.fori_loop(0, n, lambda _, x: fixed_point_map(a, x), jnp.zeros_like(a))

    np.testing.assert_allclose(jax.grad(solve_for)(2.0, 60), 1 / 3, rtol=1e-4)
    with pytest.raises(ValueError, match="while_loop"):
        jax.jit(jax.grad(solve_for))(2.0, 60)


def _segments_of(n, k):
    segment = jax.checkpoint(
        lambda h: jax.lax.scan(lambda c, _: (jnp.sin(c), None), h, None, length=k)[0]
    )
    return lambda h: jnp.sum(
        jax.lax.scan(lambda c, _: (segment(c), None), h, None, length=n // k)[0] ** 2
    )


def test_segments_of_sqrt_n_steps_need_the_least_memory():
    """Section 3's count n/k + k, on XLA's plan for the CPU: smallest at k = sqrt(n)."""
    n = 16
    with jax.default_device(jax.devices("cpu")[0]):
        h = jnp.ones((64, 64), jnp.float32)
        state = h.size * h.dtype.itemsize
        measured = {
            k: custom_derivatives.compiled_temp_bytes(jax.grad(_segments_of(n, k)), h) / state
            for k in (1, 2, 4, 8, 16)
        }
    assert min(measured, key=measured.get) == 4
    assert all(-0.5 < measured[k] - (n // k + k) < 3 for k in measured), measured


def test_dots_saveable_keeps_the_products_and_nothing_else_computed():
    def block(w, x):
        return jnp.tanh(w @ jnp.tanh(w @ x))

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        print_saved_residuals(
            jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable),
            jnp.full((3, 3), 0.1),
            jnp.ones(3),
        )
    kept = printed.getvalue().strip().splitlines()
    assert len(kept) == 4, kept
    assert sum("output of dot_general" in line for line in kept) == 2, kept


@pytest.mark.parametrize(
    "name", ["ch06_while_loop_reverse", "ch06_checkpoint_policy_dots", "ch06_sqrt_n_segments"]
)
def test_each_new_topic_is_predicted_and_revealed_in_both_learner_copies(name):
    """The while_loop, checkpoint-policy and sqrt(n) topics each ask a guess before the run
    and reveal what the run computed (nbval then fails the cell on a stale claim)."""
    for path in (
        "course/06_implicit_callbacks_checkpointing.ipynb",
        "course/zh-CN/06_implicit_callbacks_checkpointing.ipynb",
    ):
        sources = [c.source for c in nbformat.read(ROOT / path, as_version=4).cells]
        asked = [i for i, s in enumerate(sources) if f'check.predict("{name}"' in s]
        revealed = [i for i, s in enumerate(sources) if f'check.reveal("{name}"' in s]
        assert asked and revealed and asked[0] < revealed[0], (path, name)
