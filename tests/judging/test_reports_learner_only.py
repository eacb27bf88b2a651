"""Reports show what the learner can act on: the traceback has the learner's frames
only, an error that does not depend on the input shows no case, and a check that meets an
unanswered stub names the function that raised, even when it is not the one checked."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import jax
import jax.numpy as jnp
import tensorflow as tf

from autograder import check
from autograder.judging.report import FAILED, NOT_ANSWERED

HERE = os.path.basename(__file__)


def test_a_traceback_through_tensorflow_keeps_only_the_learners_frames():
    """tanh_layer runs under a GradientTape inside TensorFlow's custom_gradient machinery:
    none of those frames, nor the harness's or the engine's, are the learner's."""

    def tanh_layer(x, w):
        @tf.custom_gradient
        def forward(x):
            def grad_fn(g, variables=None):
                return g @ tf.transpose(w), [tf.transpose(x) @ gg]  # noqa: F821

            return tf.tanh(x @ w), grad_fn

        return forward(x)

    report = check.tanh_layer(tanh_layer)
    text = report.failure.traceback
    assert report.status == FAILED and "NameError" in text, str(report)
    assert "in grad_fn" in text and "gg" in text, text
    files = [line.split('"')[1] for line in text.splitlines() if line.startswith('  File "')]
    assert files and all(os.path.basename(f) == HERE for f in files), files


def test_an_error_that_does_not_depend_on_the_input_shows_no_case():
    def unbroadcast(g, shape):
        import numpy_extras  # noqa: F401  # a module that does not exist

    report = check.unbroadcast(unbroadcast)
    assert report.status == FAILED and "ModuleNotFoundError" in report.headline()
    titles = [title for title, _ in report.sections()]
    assert "Your function raised" in titles
    assert not any("case" in title or title.startswith("input") for title in titles), titles


def test_an_error_that_depends_on_the_input_still_shows_its_case():
    def unbroadcast(g, shape):
        if g.ndim > len(shape):
            raise ValueError("only equal ranks so far")
        return g

    titles = [title for title, _ in check.unbroadcast(unbroadcast).sections()]
    assert any("failing case" in title.lower() for title in titles), titles


def test_not_answered_names_the_stub_that_raised():
    @jax.custom_jvp
    def soft_threshold(x):
        return jnp.sign(x) * jnp.maximum(jnp.abs(x) - 1, 0)

    @soft_threshold.defjvp
    def soft_threshold_jvp(primals, tangents):
        raise NotImplementedError("Exercise soft_threshold_jvp: replace this line with your code.")

    report = check.soft_threshold(soft_threshold)
    assert report.status == NOT_ANSWERED, str(report)
    assert report.headline().startswith(
        "NOT ANSWERED YET soft_threshold_jvp (called by soft_threshold)"
    )


def test_not_answered_in_the_checked_function_itself_names_it_once():
    def unbroadcast(g, shape):
        raise NotImplementedError("Exercise unbroadcast: replace this line with your code.")

    report = check.unbroadcast(unbroadcast)
    assert report.headline().startswith("NOT ANSWERED YET unbroadcast: replace")
