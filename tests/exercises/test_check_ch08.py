"""The chapter 08 check: right answers written differently pass, and each wrong answer
learners write fails with the hint that names it."""

from __future__ import annotations

import numpy as np
import pytest

from autograder import check


def _softmax(logits):
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


# ---------------------------------------------------------------- right answers, several ways


def xent_vjp_direct(logits, labels, g):
    return g * (_softmax(logits) - labels) / logits.shape[0]


def xent_vjp_logsumexp(logits, labels, g):
    m = logits.max(axis=-1, keepdims=True)
    log_z = m + np.log(np.exp(logits - m).sum(axis=-1, keepdims=True))
    return (np.exp(logits - log_z) - labels) * (g / len(logits))


def xent_vjp_loop(logits, labels, g):
    out = np.empty_like(logits)
    for i, row in enumerate(logits):
        out[i] = (_softmax(row) - labels[i]) * g / logits.shape[0]
    return out


@pytest.mark.parametrize("fn", [xent_vjp_direct, xent_vjp_logsumexp, xent_vjp_loop])
def test_right_answers_pass(fn):
    report = check.capstone_xent_vjp(fn)
    assert report.passed, str(report)
    assert report.cases_checked >= 20


# ---------------------------------------------------------------- wrong answers learners write


# The declared mistakes (no mean, g ignored, sign flipped, logits, softmax over the batch) are
# run by tests/judging/test_mistakes.py; this one gets the exercise's non-finite hint.


def unstable_softmax(logits, labels, g):
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(logits)
        return g * (e / e.sum(axis=-1, keepdims=True) - labels) / logits.shape[0]


def test_an_unstable_softmax_is_told_to_subtract_the_maximum():
    report = check.capstone_xent_vjp(unstable_softmax)
    assert not report.passed
    assert "Subtract each row's maximum" in str(report), str(report)
