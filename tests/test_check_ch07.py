"""The chapter 07 check: right answers written differently pass, and each wrong answer
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


def forgets_mean(logits, labels, g):
    return g * (_softmax(logits) - labels)


def ignores_g(logits, labels, g):
    return (_softmax(logits) - labels) / logits.shape[0]


def flips_sign(logits, labels, g):
    return g * (labels - _softmax(logits)) / logits.shape[0]


def uses_logits(logits, labels, g):
    return g * (logits - labels) / logits.shape[0]


def softmax_down_columns(logits, labels, g):
    e = np.exp(logits - logits.max(axis=0, keepdims=True))
    return g * (e / e.sum(axis=0, keepdims=True) - labels) / logits.shape[0]


def unstable_softmax(logits, labels, g):
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(logits)
        return g * (e / e.sum(axis=-1, keepdims=True) - labels) / logits.shape[0]


@pytest.mark.parametrize(
    ("fn", "hint"),
    [
        (forgets_mean, "MEAN over the batch"),
        (ignores_g, "does not depend on g"),
        (flips_sign, "sign is flipped"),
        (uses_logits, "used the logits where the probabilities belong"),
        (softmax_down_columns, "axis=-1"),
        (unstable_softmax, "Subtract each row's maximum"),
    ],
)
def test_wrong_answers_fail_with_their_hint(fn, hint):
    report = check.capstone_xent_vjp(fn)
    assert not report.passed
    assert hint in str(report), str(report)
