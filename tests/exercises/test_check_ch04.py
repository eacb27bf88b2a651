"""The chapter 04 checks: right answers written in different ways pass (eagerly and inside
tf.function), each wrong answer learners write fails with the hint that names it, and the
references agree with TensorFlow's numerical differentiation (`tf.test.compute_gradient`)."""

from __future__ import annotations

import ast
import functools
import types
from pathlib import Path

import nbformat
import numpy as np
import pytest
import tensorflow as tf
from tensorflow import clip_by_norm  # a learner's own name for a refused call

from autograder.exercises.ch04_custom_gradient_tf import (
    CLIP_COTANGENT_NORM,
    EXERCISES,
    LOGADDEXP,
    N_STEP_TD_LOSS,
    QUANTIZE_STE,
    SAFE_NORMALIZE,
    TANH_LAYER,
)
from autograder.judging.cases import NOTEBOOK, Case, draw_cases
from autograder.judging.engine import check_function, reference_outputs

# ---------------------------------------------------------------- right answers, several ways


@tf.custom_gradient
def logaddexp_custom(a, b):
    y = tf.maximum(a, b) + tf.math.log1p(tf.exp(-tf.abs(a - b)))

    def grad(g):
        return g * tf.sigmoid(a - b), g * tf.sigmoid(b - a)

    return y, grad


@tf.custom_gradient
def logaddexp_residual(a, b):
    y = tf.reduce_logsumexp(tf.stack([a, b]), axis=0)

    def grad(g):  # exp(a - y) is at most 1: the output is the residual to keep
        return g * tf.exp(a - y), g * tf.exp(b - y)

    return y, grad


def logaddexp_builtin(a, b):
    return tf.reduce_logsumexp(tf.stack([a, b]), axis=0)


def normalize_double_where(v):
    squares = tf.reduce_sum(tf.square(v), axis=-1, keepdims=True)
    nonzero = squares > 0
    return tf.where(nonzero, v / tf.sqrt(tf.where(nonzero, squares, 1)), tf.zeros_like(v))


def normalize_safe_input_to_norm(v):
    """The safe value on v itself: a row of ones where a row is all zeros, then tf.norm."""
    nonzero = tf.reduce_any(v != 0, axis=-1, keepdims=True)
    norm = tf.norm(tf.where(nonzero, v, tf.ones_like(v)), axis=-1, keepdims=True)
    return tf.where(nonzero, v / norm, tf.zeros_like(v))


def normalize_rsqrt(v):
    squares = tf.reduce_sum(v * v, axis=-1, keepdims=True)
    nonzero = squares > 0
    return tf.where(nonzero, v * tf.math.rsqrt(tf.where(nonzero, squares, 1)), 0.0)


@tf.custom_gradient
def normalize_custom(v):
    squares = tf.reduce_sum(v * v, axis=-1, keepdims=True)
    nonzero = squares > 0
    norm = tf.sqrt(tf.where(nonzero, squares, tf.ones_like(squares)))
    y = tf.where(nonzero, v / norm, tf.zeros_like(v))

    def grad(g):
        along = y * tf.reduce_sum(y * g, axis=-1, keepdims=True)
        return tf.where(nonzero, (g - along) / norm, tf.zeros_like(g))

    return y, grad


def clip_norm_builtin(x, max_norm):
    @tf.custom_gradient
    def identity(x):
        def grad(g):
            return tf.clip_by_norm(g, max_norm)

        return tf.identity(x), grad

    return identity(x)


def clip_norm_by_hand(x, max_norm):
    @tf.custom_gradient
    def identity(x):
        def grad(g):
            norm = tf.sqrt(tf.reduce_sum(g * g))
            return tf.where(norm > max_norm, g * max_norm / tf.maximum(norm, max_norm), g)

        return x, grad

    return identity(x)


def clip_norm_scale_factor(x, max_norm):
    @tf.custom_gradient
    def identity(x):
        def grad(g):
            scale = max_norm / tf.maximum(tf.norm(g), max_norm)  # 1 for a small cotangent
            return g * tf.cast(scale, g.dtype)

        return tf.identity(x), grad

    return identity(x)


def quantize_custom(x, levels):
    @tf.custom_gradient
    def forward(x):
        steps = levels - 1

        def grad(g):
            return tf.where((x >= 0) & (x <= 1), g, tf.zeros_like(g))

        return tf.round(tf.clip_by_value(x, 0, 1) * steps) / steps, grad

    return forward(x)


def quantize_stop_gradient(x, levels):
    clipped = tf.clip_by_value(x, 0.0, 1.0)
    quantized = tf.round(clipped * (levels - 1)) / (levels - 1)
    return clipped + tf.stop_gradient(quantized - clipped)


def n_step_loop(values, target_values, rewards, gamma, n):
    steps = values.shape[-1]
    returns = []
    for t in range(steps):
        m = min(n, steps - t)
        ret = gamma**m * target_values[..., t + m - 1]
        for k in range(m):
            ret += gamma**k * rewards[..., t + k]
        returns.append(ret)
    return 0.5 * (values - tf.stop_gradient(tf.stack(returns, axis=-1))) ** 2


def n_step_backward_recursion(values, target_values, rewards, gamma, n):
    """The returns by padding: n rewards ahead, zeros past the end, and the bootstrap taken
    where the n steps stop or the trajectory ends; inputs stopped one by one."""
    target_values, rewards = tf.stop_gradient(target_values), tf.stop_gradient(rewards)
    steps = values.shape[-1]
    columns = []
    for t in range(steps):
        end = min(t + n, steps)
        weights = tf.constant([gamma**k for k in range(end - t)], values.dtype)
        ahead = tf.reduce_sum(rewards[..., t:end] * weights, axis=-1)
        columns.append(ahead + gamma ** (end - t) * target_values[..., end - 1])
    return tf.math.squared_difference(values, tf.stack(columns, axis=-1)) / 2


def tanh_residual(x, w):
    @tf.custom_gradient
    def forward(x):
        y = tf.tanh(x @ w)

        def grad(g, variables=None):
            g_z = g * (1 - y * y)
            return g_z @ tf.transpose(w), [tf.transpose(x) @ g_z]

        return y, grad

    return forward(x)


def tanh_transpose_flags(x, w):
    @tf.custom_gradient
    def forward(x):
        z = tf.linalg.matmul(x, w)

        def grad(g, variables):
            g_z = g / tf.cosh(z) ** 2
            grad_x = tf.linalg.matmul(g_z, w, transpose_b=True)
            grad_vars = [tf.linalg.matmul(x, g_z, transpose_a=True) for _ in variables]
            return grad_x, grad_vars

        return tf.tanh(z), grad

    return forward(x)


RIGHT = [
    (LOGADDEXP, logaddexp_custom),
    (LOGADDEXP, logaddexp_residual),
    (LOGADDEXP, logaddexp_builtin),
    (SAFE_NORMALIZE, normalize_double_where),
    (SAFE_NORMALIZE, normalize_safe_input_to_norm),
    (SAFE_NORMALIZE, normalize_rsqrt),
    (SAFE_NORMALIZE, normalize_custom),
    (CLIP_COTANGENT_NORM, clip_norm_scale_factor),
    (CLIP_COTANGENT_NORM, clip_norm_by_hand),
    (QUANTIZE_STE, quantize_custom),
    (QUANTIZE_STE, quantize_stop_gradient),
    (N_STEP_TD_LOSS, n_step_loop),
    (N_STEP_TD_LOSS, n_step_backward_recursion),
    (TANH_LAYER, tanh_residual),
    (TANH_LAYER, tanh_transpose_flags),
]


@pytest.mark.parametrize(("exercise", "fn"), RIGHT, ids=[f.__name__ for _, f in RIGHT])
def test_right_answers_pass(exercise, fn):
    report = check_function(exercise, fn)
    assert report.passed, str(report)
    assert report.cases_checked >= 20


# ---------------------------------------------------------------- wrong answers learners write
# (the declared mistakes are run by tests/judging/test_mistakes.py; these are other wrong answers)


def logaddexp_no_custom_gradient(a, b):
    return tf.math.log(tf.exp(a) + tf.exp(b))


@tf.custom_gradient
def logaddexp_one_gradient(a, b):
    def grad(g):
        return g * tf.sigmoid(a - b)

    return tf.reduce_logsumexp(tf.stack([a, b]), axis=0), grad


def quantize_straight_through_everywhere(x, levels):
    """The round demo's stop_gradient form on the unclipped input: no window."""
    quantized = tf.round(tf.clip_by_value(x, 0.0, 1.0) * (levels - 1)) / (levels - 1)
    return x + tf.stop_gradient(quantized - x)


def tanh_forgets_variables(x, w):
    @tf.custom_gradient
    def forward(x):
        y = tf.tanh(x @ w)

        def grad(g):
            return (g * (1 - y * y)) @ tf.transpose(w)

        return y, grad

    return forward(x)


def tanh_variable_grads_not_a_list(x, w):
    @tf.custom_gradient
    def forward(x):
        y = tf.tanh(x @ w)

        def grad(g, variables=None):
            g_z = g * (1 - y * y)
            return g_z @ tf.transpose(w), tf.transpose(x) @ g_z

        return y, grad

    return forward(x)


def tanh_only_input_gradient(x, w):
    @tf.custom_gradient
    def forward(x):
        y = tf.tanh(x @ w)

        def grad(g, variables=None):
            return (g * (1 - y * y)) @ tf.transpose(w)

        return y, grad

    return forward(x)


def tanh_weights_as_input(x, w):
    """Right values, but w is an input of the custom-gradient function: TensorFlow never
    hands grad_fn `variables`, and w's gradient flows through the read of the variable
    instead: right values by the wrong way must not pass."""

    @tf.custom_gradient
    def forward(x, w):
        y = tf.tanh(x @ w)

        def grad(g):
            g_z = g * (1 - y * y)
            return g_z @ tf.transpose(w), tf.transpose(x) @ g_z

        return y, grad

    return forward(x, w)


def tanh_weights_read_outside(x, w):
    """The same, with w's value read outside and passed in as a tensor."""

    @tf.custom_gradient
    def forward(x, w_value):
        y = tf.tanh(x @ w_value)

        def grad(g, variables=None):
            g_z = g * (1 - y * y)
            return g_z @ tf.transpose(w_value), tf.transpose(x) @ g_z

        return y, grad

    return forward(x, tf.convert_to_tensor(w))


def tanh_numpy_inside(x, w):
    return tf.constant(np.tanh(x.numpy() @ w.numpy()))


def n_step_stops_the_whole_loss(values, target_values, rewards, gamma, n):
    return tf.stop_gradient(n_step_loop(values, target_values, rewards, gamma, n))


def n_step_online_bootstrap(values, target_values, rewards, gamma, n):
    """Bootstraps from the online values shifted by one step (TD(0)'s habit), not the target
    network's: wrong values wherever a bootstrap is used."""
    shifted = tf.concat([values[..., 1:], target_values[..., -1:]], axis=-1)
    return n_step_loop(values, tf.stop_gradient(shifted), rewards, gamma, n)


WRONG = [
    (LOGADDEXP, logaddexp_no_custom_gradient, "NaN or Inf at the edges"),
    (LOGADDEXP, logaddexp_one_gradient, "one gradient per input"),
    (QUANTIZE_STE, quantize_straight_through_everywhere, "0 <= x <= 1"),
    (TANH_LAYER, tanh_forgets_variables, "does not accept `variables`"),
    (TANH_LAYER, tanh_variable_grads_not_a_list, "in a list"),
    (TANH_LAYER, tanh_only_input_gradient, "return a pair"),
    (TANH_LAYER, tanh_numpy_inside, "raised"),
    (TANH_LAYER, tanh_weights_as_input, "grad_fn never received `variables`"),
    (TANH_LAYER, tanh_weights_read_outside, "grad_fn never received `variables`"),
    (N_STEP_TD_LOSS, n_step_stops_the_whole_loss, "only values may receive a gradient"),
    (N_STEP_TD_LOSS, n_step_online_bootstrap, "half the square of values minus its n-step"),
]


@pytest.mark.parametrize(("exercise", "fn", "hint"), WRONG, ids=[f.__name__ for _, f, _ in WRONG])
def test_wrong_answers_fail_with_their_hint(exercise, fn, hint):
    report = check_function(exercise, fn)
    assert not report.passed
    assert report.status == "failed"
    assert hint in str(report), str(report)


def clip_norm_global(x, max_norm):
    @tf.custom_gradient
    def identity(x):
        return tf.identity(x), lambda g: tf.clip_by_global_norm([g], max_norm)[0][0]

    return identity(x)


def copied_clip_backward_by_norm(x, max_norm):
    """The clip_backward demo with tf.clip_by_value swapped for the library's norm clip."""
    source = _demo_source("clip_backward").replace(
        "tf.clip_by_value(g, -limit, limit)", "tf.clip_by_norm(g, limit)"
    )
    assert "clip_by_norm" in source
    namespace = {"tf": tf}
    exec(source, namespace)
    return namespace["clip_backward"](x, max_norm)


def clip_norm_imported(x, max_norm):
    """tf.clip_by_norm under the learner's own name, bound before the check: a renamed
    framework call is still the framework's, and the method check sees through it."""

    @tf.custom_gradient
    def identity(x):
        return tf.identity(x), lambda g: clip_by_norm(g, max_norm)

    return identity(x)


@pytest.mark.parametrize(
    "fn", [clip_norm_builtin, clip_norm_global, copied_clip_backward_by_norm, clip_norm_imported]
)
def test_clip_cotangent_norm_refuses_the_library_call(fn):
    """Right values from tf.clip_by_norm / tf.clip_by_global_norm fail on the method, and the
    message says why: the call is the exercise."""
    report = check_function(CLIP_COTANGENT_NORM, fn)
    assert report.status == "failed", str(report)
    assert "must compute the scaling itself" in str(report), str(report)
    assert "tf.clip_by" in str(report)
    # every name replaced during the check is put back
    assert clip_by_norm is tf.clip_by_norm and tf.clip_by_norm.__module__.startswith("tensorflow")


def test_a_right_clip_passes_beside_globals_bound_to_none():
    """The learner's globals are searched for the refused calls: a name bound to None (a
    notebook's `__doc__`, as in the grader's child) is not one of them."""
    own_globals = {**clip_norm_scale_factor.__globals__, "__doc__": None, "nothing": None}
    learner = types.FunctionType(
        clip_norm_scale_factor.__code__, own_globals, "clip_cotangent_norm"
    )
    report = check_function(CLIP_COTANGENT_NORM, learner)
    assert report.passed, str(report)


def test_graph_only_failure_is_reported():
    """.numpy() works eagerly but not inside tf.function: the check runs both."""
    report = check_function(TANH_LAYER, tanh_numpy_inside)
    assert "numpy" in report.failure.message


def test_eager_and_graph_must_agree():
    # Right when run eagerly, twice too large inside tf.function, on every case. (A function
    # that alternated on a call counter passed or failed by chance: whether a case traces
    # again depends on what TensorFlow traced before, in this process, so after shrinking
    # the reported failure could be a wrong value instead.)
    def depends_on_python_state(x, max_norm):
        return clip_norm_by_hand(x, max_norm) * (1.0 if tf.executing_eagerly() else 2.0)

    report = check_function(CLIP_COTANGENT_NORM, depends_on_python_state)
    assert not report.passed
    assert "differs between the eager run and the run inside tf.function" in str(report)


def test_not_answered_stub_is_reported_as_such():
    @tf.custom_gradient
    def logaddexp(a, b):
        raise NotImplementedError("Exercise logaddexp: replace this line with your code.")

    assert check_function(LOGADDEXP, logaddexp).status == "not answered"


def test_exercises_allow_tensorflow_only_and_chapter_is_04():
    assert [e.name for e in EXERCISES] == [
        "tanh_layer",
        "logaddexp",
        "safe_normalize",
        "clip_cotangent_norm",
        "quantize_ste",
        "n_step_td_loss",
    ]
    for exercise in EXERCISES:
        assert exercise.chapter == "04"
        assert exercise.frameworks == ("tensorflow",)
        module = exercise.invoker().__wrapped__.__module__
        assert module == "autograder.harness.ch04_custom_gradient_tf"


# ---------------------------------------------------------------- cases and references


@pytest.mark.parametrize("exercise", [LOGADDEXP, QUANTIZE_STE], ids=lambda e: e.name)
def test_stability_cases_are_included_and_finite(exercise):
    values = {float(v) for case in exercise.edge_cases() for v in case.values()[0].ravel()}
    assert {0.0, 100.0, -100.0, 1000.0, -1000.0} <= values
    for outputs in reference_outputs(exercise, exercise.edge_cases()):
        assert all(np.isfinite(o).all() for o in outputs)


def test_cotangents_are_random_not_ones():
    for exercise in EXERCISES:
        cases = exercise.edge_cases() + draw_cases(exercise.strategy(NOTEBOOK), NOTEBOOK)
        big = [c.arg("g") for c in cases if c.arg("g").size >= 4]
        assert big and all(len(np.unique(g)) > 1 for g in big), exercise.name


def _vjp_by_compute_gradient(f, inputs, g):
    """J^T g from tf.test.compute_gradient's numerical Jacobian (float64)."""
    _, numeric = tf.test.compute_gradient(f, [tf.constant(v) for v in inputs])
    return [(j.T @ g.ravel()).reshape(v.shape) for j, v in zip(numeric, inputs, strict=True)]


SAFE = np.random.default_rng(7)


def test_logaddexp_references_match_numerical_differentiation():
    a, b = SAFE.uniform(-5, 5, (2, 6))
    g = SAFE.normal(size=6)
    case = Case((("a", a), ("b", b), ("g", g)))
    _, grad_a, grad_b = LOGADDEXP.tf_reference(tf, case)
    numeric = _vjp_by_compute_gradient(lambda a, b: tf.math.log(tf.exp(a) + tf.exp(b)), [a, b], g)
    np.testing.assert_allclose(grad_a, numeric[0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(grad_b, numeric[1], rtol=1e-6, atol=1e-8)
    invoke = LOGADDEXP.invoker()
    _, learner_a, learner_b = invoke(logaddexp_custom, a, b, g)
    np.testing.assert_allclose(learner_a, numeric[0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(learner_b, numeric[1], rtol=1e-6, atol=1e-8)


def test_safe_normalize_edges_hold_zero_rows_and_tiny_and_huge_norms_and_are_finite():
    rows = [
        row
        for case in SAFE_NORMALIZE.edge_cases()
        for row in case.arg("v").reshape(-1, case.arg("v").shape[-1])
    ]
    norms = {float(np.linalg.norm(row.astype(np.float64))) for row in rows}
    assert 0.0 in norms and min(n for n in norms if n > 0) <= 1e-12 and max(norms) >= 1e12
    assert any(np.count_nonzero(row) == 1 and row.size > 1 for row in rows)
    for case, outputs in zip(
        SAFE_NORMALIZE.edge_cases(),
        reference_outputs(SAFE_NORMALIZE, SAFE_NORMALIZE.edge_cases()),
        strict=True,
    ):
        assert all(np.isfinite(o).all() for o in outputs), case.label
        zero = ~case.arg("v").any(axis=-1)
        assert (outputs[0][zero] == 0).all() and (outputs[1][zero] == 0).all(), case.label


def test_safe_normalize_reference_matches_numerical_differentiation_away_from_zero():
    v = SAFE.uniform(0.5, 5, (3, 4)) * SAFE.choice([-1, 1], (3, 4))
    g = SAFE.normal(size=v.shape)
    _, grad = SAFE_NORMALIZE.tf_reference(tf, Case((("v", v), ("g", g))))
    (numeric,) = _vjp_by_compute_gradient(lambda v: v / tf.norm(v, axis=-1, keepdims=True), [v], g)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-8)
    y = v / np.linalg.norm(v, axis=-1, keepdims=True)
    projected = (g - y * (y * g).sum(-1, keepdims=True)) / np.linalg.norm(v, axis=-1, keepdims=True)
    np.testing.assert_allclose(grad, projected, rtol=1e-12)


def test_the_trap_is_measured_where_the_statement_puts_it():
    """What the statement and the hints say, measured: tf.norm's own gradient at a row of
    zeros is NaN; the where on the output alone still gives NaN there (from v / n: 0 / 0);
    the double where gives 0."""
    v = tf.constant([[0.0, 0.0, 0.0], [3.0, 4.0, 0.0]])
    g = tf.constant([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(v)
        norm = tf.norm(v, axis=-1, keepdims=True)
        single = tf.where(norm > 0, v / norm, 0.0)
        double = normalize_double_where(v)
    assert np.isnan(tape.gradient(norm, v)[0]).all()
    assert np.isnan(tape.gradient(single, v, output_gradients=g)[0]).all()
    np.testing.assert_array_equal(tape.gradient(double, v, output_gradients=g)[0], 0)
    np.testing.assert_array_equal(single, double)


def test_tanh_reference_matches_numerical_differentiation():
    x, w, g = SAFE.normal(size=(3, 4)), SAFE.normal(size=(4, 2)), SAFE.normal(size=(3, 2))
    case = Case((("x", x), ("w", w), ("g", g)))
    _, grad_x, grad_w = TANH_LAYER.tf_reference(tf, case)
    numeric = _vjp_by_compute_gradient(lambda x, w: tf.tanh(x @ w), [x, w], g)
    # tanh's curvature makes the finite differences less exact than for a matmul
    np.testing.assert_allclose(grad_x, numeric[0], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(grad_w, numeric[1], rtol=1e-5, atol=1e-7)


def test_round_has_no_gradient_and_the_ste_window_is_the_clip_s():
    """Why the straight-through estimator exists: tf.round has no gradient; the window the
    reference keeps is where tf.clip_by_value passes the cotangent, edges included."""
    x = tf.constant([-0.5, 0.0, 0.4, 1.0, 1.5], tf.float64)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        rounded, clipped = tf.round(x), tf.clip_by_value(x, 0.0, 1.0)
    assert tape.gradient(rounded, x) is None
    np.testing.assert_array_equal(tape.gradient(clipped, x), [0, 1, 1, 1, 0])
    g = np.arange(1.0, 6.0)
    _, grad = QUANTIZE_STE.tf_reference(tf, Case((("x", x.numpy()), ("levels", 3), ("g", g))))
    np.testing.assert_array_equal(grad, [0, 2, 3, 4, 0])


def quantize_ste_float32_only(x, levels):
    # A float32 constant meets float64 inputs (a crash there), and the cotangent passes
    # everywhere (wrong values on float32, where it runs).
    steps = tf.constant(levels - 1, tf.float32)

    @tf.custom_gradient
    def forward(x):
        def grad_fn(g):
            return g

        return tf.round(tf.clip_by_value(x, 0.0, 1.0) * steps) / steps, grad_fn

    return forward(x)


def test_a_float64_crash_hiding_a_gradient_mistake_is_named():
    """It was told only to use tf ops on tensors, which it does: the report names the dtype
    crash and says the gradient is untested until the function runs."""
    report = check_function(QUANTIZE_STE, quantize_ste_float32_only)
    assert "raised InvalidArgumentError" in report.headline()
    hint = report.failure.hint
    assert hint.startswith("Your function raised on this float64 case, while on float32"), hint
    assert "your gradient included, is tested there" in hint
    assert "Use tf ops" not in hint


def test_clip_cotangent_norm_is_identity_forward_and_keeps_a_small_cotangent():
    x = SAFE.normal(size=5)
    g = SAFE.normal(size=5)
    (numeric,) = _vjp_by_compute_gradient(tf.identity, [x], g)
    y, grad = CLIP_COTANGENT_NORM.tf_reference(tf, Case((("x", x), ("max_norm", 10.0), ("g", g))))
    np.testing.assert_allclose(grad, numeric, rtol=1e-6)  # no rescaling below max_norm
    np.testing.assert_array_equal(y, x)
    _, grad = CLIP_COTANGENT_NORM.tf_reference(tf, Case((("x", x), ("max_norm", 0.1), ("g", g))))
    np.testing.assert_allclose(np.linalg.norm(grad), 0.1, rtol=1e-6)
    np.testing.assert_allclose(grad / np.linalg.norm(grad), g / np.linalg.norm(g), rtol=1e-6)


@pytest.mark.parametrize("n", [1, 2, 4, 9])
def test_n_step_reference_is_the_gradient_with_the_return_held_constant(n):
    """The reference against the n-step return written out in numpy, term by term: rewards
    up to n ahead (fewer near the end), then the target network's value after the last."""
    values, target_values, rewards, g = (SAFE.normal(size=6) for _ in range(4))
    gamma = 0.9
    loss, g_values, g_target, g_rewards = N_STEP_TD_LOSS.tf_reference(
        tf,
        Case(
            (
                ("values", values),
                ("target_values", target_values),
                ("rewards", rewards),
                ("gamma", gamma),
                ("n", n),
                ("g", g),
            )
        ),
    )
    returns = np.zeros(6)
    for t in range(6):
        last = min(t + n, 6) - 1  # the last reward in the return
        returns[t] = sum(gamma ** (k - t) * rewards[k] for k in range(t, last + 1))
        returns[t] += gamma ** (last + 1 - t) * target_values[last]
    np.testing.assert_allclose(loss, 0.5 * (values - returns) ** 2, rtol=1e-12)
    np.testing.assert_allclose(g_values, g * (values - returns), rtol=1e-12)
    np.testing.assert_array_equal(g_target, np.zeros(6))
    np.testing.assert_array_equal(g_rewards, np.zeros(6))


def test_n_step_mistake_factory_makes_no_right_answer():
    from autograder.exercises.ch04_custom_gradient_tf import _n_step

    with pytest.raises(ValueError, match="mistakes only"):
        _n_step()


@tf.custom_gradient
def normalize_twice_the_gradient(v):
    """The right value and a finite gradient, twice the right one: no NaN anywhere."""
    squares = tf.reduce_sum(v * v, axis=-1, keepdims=True)
    nonzero = squares > 0
    norm = tf.sqrt(tf.where(nonzero, squares, tf.ones_like(squares)))
    y = tf.where(nonzero, v / norm, tf.zeros_like(v))

    def grad(g):
        return (g - y * tf.reduce_sum(y * g, axis=-1, keepdims=True)) / norm * 2.0

    return y, grad


def test_an_answer_without_nan_is_not_told_about_nan():
    """The single-where mistake has NaN at a row of zeros; an answer that is finite there is
    not it."""
    report = check_function(SAFE_NORMALIZE, normalize_twice_the_gradient)
    assert not report.passed
    assert not np.isnan(report.failure.got).any()
    assert "NaN" not in report.failure.hint, str(report)
    assert report.failure.hint == SAFE_NORMALIZE.hints_by_kind["value"]


# ---------------------------------------------------------------- the notebook's demos, copied

SOLUTION = Path(__file__).resolve().parents[2] / "solutions" / "04_custom_gradient_tf.ipynb"


def _demo_source(name: str) -> str:
    """The source of the solution notebook's def `name` (with its decorator), alone."""
    for cell in nbformat.read(SOLUTION, as_version=4).cells:
        if cell.cell_type != "code" or f"def {name}(" not in cell.source:
            continue
        tree = ast.parse(cell.source)
        node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
        return ast.get_source_segment(cell.source, node, padded=True)
    raise LookupError(f"no demo {name} in {SOLUTION.name}")


@functools.cache
def _demo(name: str) -> dict:
    """The namespace in which the solution notebook's function `name` is defined, as a
    learner copying that cell would have it: the def alone (with its decorator), run."""
    for cell in nbformat.read(SOLUTION, as_version=4).cells:
        if cell.cell_type != "code" or f"def {name}(" not in cell.source:
            continue
        tree = ast.parse(cell.source)
        node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
        namespace = {"tf": tf, "np": np}
        exec(compile(ast.Module([node], []), str(SOLUTION), "exec"), namespace)
        return namespace
    raise LookupError(f"no demo {name} in {SOLUTION.name}")


def copied_linear_layer(x, w):
    namespace = _demo("linear_with_variables")
    namespace["w"] = w  # the demo reads a global w, as a layer reads its weight
    return namespace["linear_with_variables"](x)


def copied_log_double_where(x):
    return _demo("log_double_where")["log_double_where"](x)


def copied_log_custom(x):
    return _demo("log_custom")["log_custom"](x)


def copied_clip_backward(x, max_norm):
    return _demo("clip_backward")["clip_backward"](x, max_norm)


COPIED = [
    (TANH_LAYER, copied_linear_layer, "copied_linear"),
    (SAFE_NORMALIZE, copied_log_double_where, "copied_log"),
    (SAFE_NORMALIZE, copied_log_custom, "copied_log"),
    (CLIP_COTANGENT_NORM, copied_clip_backward, "clips_elementwise"),
]


@pytest.mark.parametrize(
    ("exercise", "fn", "mistake"), COPIED, ids=[f.__name__ for _, f, _ in COPIED]
)
def test_a_copied_demo_fails_with_the_hint_that_says_so(exercise, fn, mistake):
    """The nearest demo of each exercise, copied from the solution notebook, does not pass,
    and its hint says what the exercise asks beyond the demo."""
    report = check_function(exercise, fn)
    assert report.status == "failed", str(report)
    hint = next(m.hint for m in exercise.mistakes if m.name == mistake)
    assert hint in report.failure.hint, str(report)


def where_on_the_output_only(v):
    n = tf.norm(v, axis=-1, keepdims=True)
    return tf.where(n > 0, v / n, 0)


def copied_single_where(v):
    """The chapter's first tf.where demo, copied as it is written there."""
    return tf.where(v > 0, tf.math.log(v), 0.0)


def copied_log_double_where_times_v(v):
    """What passed the old exercise: the demo's function, multiplied by its input."""
    return v * _demo("log_double_where")["log_double_where"](v)


@pytest.mark.parametrize(
    "fn", [where_on_the_output_only, copied_single_where, copied_log_double_where_times_v]
)
def test_the_where_on_the_output_alone_and_the_demos_fail_safe_normalize(fn):
    report = check_function(SAFE_NORMALIZE, fn)
    assert report.status == "failed", str(report)
    if fn is where_on_the_output_only:
        hint = next(m.hint for m in SAFE_NORMALIZE.mistakes if m.name == "where_on_output_only")
        assert hint in report.failure.hint, str(report)


def _statement(exercise: str) -> str:
    """The learner copy's statement of `exercise`: the markdown cell before its exercise cell,
    and the exercise cell's stub (its docstring)."""
    cells = nbformat.read(SOLUTION.parents[1] / "course" / SOLUTION.name, as_version=4).cells
    index = next(
        i for i, c in enumerate(cells) if c.cell_type == "code" and f"def {exercise}(" in c.source
    )
    return cells[index - 1].source + cells[index].source


@pytest.mark.parametrize(
    ("exercise", "given_away"),
    [
        ("n_step_td_loss", ("stop_gradient(", "0.5 *", "target_values[..., t", "tf.stack")),
        ("quantize_ste", ("tf.round(tf.clip_by_value", "(levels - 1)) /", "x <= 1", "x >= 0")),
        ("safe_normalize", ("tf.where(nonzero", "tf.ones_like(squares)", "reduce_sum(v * v")),
    ],
)
def test_the_statement_does_not_print_the_answer(exercise, given_away):
    """The learner derives these expressions: the statement states the rule, not the code."""
    statement = _statement(exercise)
    for text in given_away:
        assert text not in statement, (exercise, text)
