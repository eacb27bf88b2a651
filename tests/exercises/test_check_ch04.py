"""The chapter 04 checks: right answers written in different ways pass (eagerly and inside
tf.function), each wrong answer learners write fails with the hint that names it, and the
references agree with TensorFlow's numerical differentiation (`tf.test.compute_gradient`)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from autograder.exercises.ch04_custom_gradient_tf import (
    CLIP_COTANGENT,
    EXERCISES,
    LINEAR_LAYER,
    LOG_OR_ZERO,
    LOGADDEXP,
    SIGN_STE,
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


def log_or_zero_double_where(x):
    positive = x > 0
    return tf.where(positive, tf.math.log(tf.where(positive, x, tf.ones_like(x))), 0.0)


@tf.custom_gradient
def log_or_zero_custom(x):
    positive = x > 0
    safe = tf.where(positive, x, tf.ones_like(x))

    def grad(g):
        return tf.where(positive, g / safe, tf.zeros_like(g))

    return tf.where(positive, tf.math.log(safe), tf.zeros_like(x)), grad


def clip_gradient_closure(x, limit):
    @tf.custom_gradient
    def identity(x):
        def grad(g):
            return tf.clip_by_value(g, -limit, limit)

        return tf.identity(x), grad

    return identity(x)


def clip_gradient_minmax(x, limit):
    @tf.custom_gradient
    def identity(x):
        return x, lambda g: tf.minimum(tf.maximum(g, -limit), limit)

    return identity(x)


@tf.custom_gradient
def sign_ste_custom(x):
    def grad(g):
        return g * tf.cast(tf.abs(x) <= 1, g.dtype)

    return tf.sign(x), grad


def sign_ste_stop_gradient(x):
    hard_tanh = tf.clip_by_value(x, -1, 1)
    return hard_tanh + tf.stop_gradient(tf.sign(x) - hard_tanh)


def linear_variables(x, w):
    @tf.custom_gradient
    def forward(x):
        def grad(g, variables=None):
            return g @ tf.transpose(w), [tf.transpose(x) @ g]

        return x @ w, grad

    return forward(x)


def linear_transpose_flags(x, w):
    @tf.custom_gradient
    def forward(x):
        def grad(g, variables):
            grad_x = tf.linalg.matmul(g, w, transpose_b=True)
            grad_vars = [tf.linalg.matmul(x, g, transpose_a=True) for _ in variables]
            return grad_x, grad_vars

        return tf.linalg.matmul(x, w), grad

    return forward(x)


RIGHT = [
    (LOGADDEXP, logaddexp_custom),
    (LOGADDEXP, logaddexp_residual),
    (LOGADDEXP, logaddexp_builtin),
    (LOG_OR_ZERO, log_or_zero_double_where),
    (LOG_OR_ZERO, log_or_zero_custom),
    (CLIP_COTANGENT, clip_gradient_closure),
    (CLIP_COTANGENT, clip_gradient_minmax),
    (SIGN_STE, sign_ste_custom),
    (SIGN_STE, sign_ste_stop_gradient),
    (LINEAR_LAYER, linear_variables),
    (LINEAR_LAYER, linear_transpose_flags),
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


def sign_straight_through_everywhere(x):
    return x + tf.stop_gradient(tf.sign(x) - x)


def linear_forgets_variables(x, w):
    @tf.custom_gradient
    def forward(x):
        def grad(g):
            return g @ tf.transpose(w)

        return x @ w, grad

    return forward(x)


def linear_variable_grads_not_a_list(x, w):
    @tf.custom_gradient
    def forward(x):
        def grad(g, variables=None):
            return g @ tf.transpose(w), tf.transpose(x) @ g

        return x @ w, grad

    return forward(x)


def linear_only_input_gradient(x, w):
    @tf.custom_gradient
    def forward(x):
        def grad(g, variables=None):
            return g @ tf.transpose(w)

        return x @ w, grad

    return forward(x)


def linear_numpy_inside(x, w):
    return tf.constant(x.numpy() @ w.numpy())


WRONG = [
    (LOGADDEXP, logaddexp_no_custom_gradient, "NaN or Inf at the edges"),
    (LOGADDEXP, logaddexp_one_gradient, "one gradient per input"),
    (SIGN_STE, sign_straight_through_everywhere, "only where |x| <= 1"),
    (LINEAR_LAYER, linear_forgets_variables, "does not accept `variables`"),
    (LINEAR_LAYER, linear_variable_grads_not_a_list, "in a list"),
    (LINEAR_LAYER, linear_only_input_gradient, "return a pair"),
    (LINEAR_LAYER, linear_numpy_inside, "raised"),
]


@pytest.mark.parametrize(
    ("exercise", "fn", "hint"), WRONG, ids=[f.__name__ for _, f, _ in WRONG]
)
def test_wrong_answers_fail_with_their_hint(exercise, fn, hint):
    report = check_function(exercise, fn)
    assert not report.passed
    assert report.status == "failed"
    assert hint in str(report), str(report)


def test_graph_only_failure_is_reported():
    """.numpy() works eagerly but not inside tf.function: the check runs both."""
    report = check_function(LINEAR_LAYER, linear_numpy_inside)
    assert "numpy" in report.failure.message


def test_eager_and_graph_must_agree():
    # Right when run eagerly, twice too large inside tf.function, on every case. (A function
    # that alternated on a call counter passed or failed by chance: whether a case traces
    # again depends on what TensorFlow traced before, in this process, so after shrinking
    # the reported failure could be a wrong value instead.)
    def depends_on_python_state(x, limit):
        return clip_gradient_closure(x, limit) * (1.0 if tf.executing_eagerly() else 2.0)

    report = check_function(CLIP_COTANGENT, depends_on_python_state)
    assert not report.passed
    assert "differs between the eager run and the run inside tf.function" in str(report)


def test_not_answered_stub_is_reported_as_such():
    @tf.custom_gradient
    def logaddexp(a, b):
        raise NotImplementedError("Exercise logaddexp: replace this line with your code.")

    assert check_function(LOGADDEXP, logaddexp).status == "not answered"


def test_exercises_allow_tensorflow_only_and_chapter_is_04():
    assert [e.name for e in EXERCISES] == [
        "linear_layer", "logaddexp", "log_or_zero", "clip_cotangent", "sign_ste"
    ]
    for exercise in EXERCISES:
        assert exercise.chapter == "04"
        assert exercise.frameworks == ("tensorflow",)
        module = exercise.invoker().__wrapped__.__module__
        assert module == "autograder.harness.ch04_custom_gradient_tf"


# ---------------------------------------------------------------- cases and references


@pytest.mark.parametrize("exercise", [LOGADDEXP, LOG_OR_ZERO, SIGN_STE], ids=lambda e: e.name)
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
    numeric = _vjp_by_compute_gradient(
        lambda a, b: tf.math.log(tf.exp(a) + tf.exp(b)), [a, b], g
    )
    np.testing.assert_allclose(grad_a, numeric[0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(grad_b, numeric[1], rtol=1e-6, atol=1e-8)
    invoke = LOGADDEXP.invoker()
    _, learner_a, learner_b = invoke(logaddexp_custom, a, b, g)
    np.testing.assert_allclose(learner_a, numeric[0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(learner_b, numeric[1], rtol=1e-6, atol=1e-8)


def test_log_or_zero_reference_matches_numerical_differentiation_away_from_zero():
    x = np.concatenate([SAFE.uniform(0.5, 5, 4), SAFE.uniform(-5, -0.5, 3)])
    g = SAFE.normal(size=x.shape)
    case = Case((("x", x), ("g", g)))
    _, grad = LOG_OR_ZERO.tf_reference(tf, case)
    (numeric,) = _vjp_by_compute_gradient(log_or_zero_double_where, [x], g)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-8)


def test_linear_reference_matches_numerical_differentiation():
    x, w, g = SAFE.normal(size=(3, 4)), SAFE.normal(size=(4, 2)), SAFE.normal(size=(3, 2))
    case = Case((("x", x), ("w", w), ("g", g)))
    _, grad_x, grad_w = LINEAR_LAYER.tf_reference(tf, case)
    numeric = _vjp_by_compute_gradient(tf.matmul, [x, w], g)
    np.testing.assert_allclose(grad_x, numeric[0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(grad_w, numeric[1], rtol=1e-6, atol=1e-8)


def test_sign_has_a_zero_true_derivative_away_from_zero():
    """Why the straight-through estimator exists: numerically, d sign / dx = 0."""
    x = np.array([-2.0, -0.3, 0.4, 1.5])
    (numeric,) = _vjp_by_compute_gradient(tf.sign, [x], np.ones(4))
    np.testing.assert_array_equal(numeric, np.zeros(4))


def test_clip_cotangent_is_identity_forward_numerically():
    x = SAFE.normal(size=5)
    g = SAFE.normal(size=5)
    (numeric,) = _vjp_by_compute_gradient(tf.identity, [x], g)
    y, grad = CLIP_COTANGENT.tf_reference(
        tf, Case((("x", x), ("limit", 10.0), ("g", g)))
    )
    np.testing.assert_allclose(grad, numeric, rtol=1e-6)  # no clipping below the limit
    np.testing.assert_array_equal(y, x)


@tf.custom_gradient
def log_or_zero_wrong_at_zero(x):
    """Finite everywhere, wrong only at x = 0 (x >= 0 instead of x > 0): no NaN anywhere."""
    positive = x > 0
    safe = tf.where(positive, x, tf.ones_like(x))

    def grad(g):
        return tf.where(x >= 0, g / safe, tf.zeros_like(x))

    return tf.where(positive, tf.math.log(safe), tf.zeros_like(x)), grad


def test_an_answer_without_nan_is_not_told_about_nan():
    """The single-where mistake has NaN at x = 0; an answer that is finite there is not it."""
    report = check_function(LOG_OR_ZERO, log_or_zero_wrong_at_zero)
    assert not report.passed
    assert not np.isnan(report.failure.got).any()
    assert "NaN" not in report.failure.hint, str(report)
    assert report.failure.hint == LOG_OR_ZERO.hints_by_kind["value"]
