"""A numpy exercise answered by asking TensorFlow or JAX for the gradient fails in the notebook,
as it scores 0 in the grader (whose child raises FrameworkUsed at any use): the same verdict on
both sides, and no numpy exercise passes by copying a demo's framework call."""

from __future__ import annotations

import tensorflow as tf

from autograder import check
from autograder.harness.course_helpers import frameworks_used
from autograder.locale import speaking


def unbroadcast(g, shape):
    g = g.sum(axis=tuple(range(g.ndim - len(shape))))
    ones = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return g.sum(axis=ones, keepdims=True)


def unbroadcast_by_tape(g, shape):  # what the chapter's demo cell does, as an answer
    x = tf.zeros(shape, dtype=g.dtype)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.broadcast_to(x, g.shape)
    return tape.gradient(y, x, output_gradients=g).numpy()


def calls_a_helper_that_uses_tensorflow(g, shape):
    return unbroadcast_by_tape(g, shape)


def test_a_numpy_answer_that_asks_tensorflow_fails_with_the_graders_words():
    for answer in (unbroadcast_by_tape, calls_a_helper_that_uses_tensorflow):
        report = check.unbroadcast(answer)
        assert not report.passed
        assert "calls TensorFlow or JAX" in str(report) and "tf" in str(report)
    with speaking("zh-CN"):
        assert "TensorFlow 或 JAX" in str(check.unbroadcast(unbroadcast_by_tape))


def test_the_numpy_answer_passes_and_names_nothing():
    assert frameworks_used(unbroadcast) == []
    assert frameworks_used(calls_a_helper_that_uses_tensorflow) == ["tf"]
    assert check.unbroadcast(unbroadcast).passed
