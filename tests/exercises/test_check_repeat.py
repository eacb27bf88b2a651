"""Re-running a check cell: the last counterexample is tried first, and a wrong function that
has not changed is not shrunk again (a repeated check must answer in under 0.5 s)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from autograder.exercises.ch03_unbroadcasting import MATMUL_VJP, UNBROADCAST
from autograder.judging import engine, references
from autograder.judging.counterexamples import forget_counterexamples, key, remembered
from autograder.judging.engine import check_function
from autograder.judging.fingerprint import fingerprint

from ..answers import unbroadcast


@pytest.fixture(autouse=True)
def fresh_memory():
    forget_counterexamples()
    yield
    forget_counterexamples()


@pytest.fixture
def shrinks(monkeypatch):
    """Counts the shrinks a check runs (each one is seconds in chapter 05)."""
    calls = []
    original = engine.shrink_with_references

    def counted(*args, **kwargs):
        calls.append(args[0].name)
        return original(*args, **kwargs)

    monkeypatch.setattr(engine, "shrink_with_references", counted)
    return calls


def leading_axes_only(g, shape):
    return g.sum(axis=tuple(range(g.ndim - len(shape))))


def forgets_keepdims(g, shape):
    lead = g.ndim - len(shape)
    ones = tuple(lead + i for i, n in enumerate(shape) if n == 1)
    return g.sum(axis=tuple(range(lead)) + ones)


def test_the_same_wrong_function_is_not_shrunk_again(shrinks):
    first = check_function(UNBROADCAST, forgets_keepdims)
    assert not first.passed and first.failure.shrunk
    assert shrinks == ["unbroadcast"]
    second = check_function(UNBROADCAST, forgets_keepdims)
    assert shrinks == ["unbroadcast"], "the second check shrank again"
    assert str(second) == str(first)
    assert second.failure.shrunk


def test_a_fixed_function_passes_after_a_wrong_one(shrinks):
    assert not check_function(UNBROADCAST, forgets_keepdims).passed
    report = check_function(UNBROADCAST, unbroadcast)
    assert report.passed, str(report)
    assert report.cases_checked >= 20


def test_another_wrong_function_gets_its_own_smallest_case(shrinks):
    check_function(UNBROADCAST, forgets_keepdims)
    after = check_function(UNBROADCAST, leading_axes_only)
    assert shrinks == ["unbroadcast", "unbroadcast"]
    forget_counterexamples()
    fresh = check_function(UNBROADCAST, leading_axes_only)
    assert str(after) == str(fresh)  # history does not change what it is told


def test_same_code_whose_state_changed_is_judged_again(shrinks):
    """A check never trusts the fingerprint alone: the remembered case is run again."""
    state = {"keepdims": False}

    def stateful(g, shape):
        lead = g.ndim - len(shape)
        summed = g.sum(axis=tuple(range(lead)))
        ones = tuple(i for i, n in enumerate(shape) if n == 1 and summed.shape[i] != 1)
        return summed.sum(axis=ones, keepdims=state["keepdims"])

    assert not check_function(UNBROADCAST, stateful).passed
    state["keepdims"] = True
    assert check_function(UNBROADCAST, stateful).passed


def test_the_remembered_failure_is_per_exercise(shrinks):
    check_function(UNBROADCAST, forgets_keepdims)

    def matmul_vjp(g, a, b):
        return unbroadcast(g @ b.T, a.shape), unbroadcast(a.T @ g, b.shape)

    report = check_function(MATMUL_VJP, matmul_vjp)
    assert not report.passed
    assert report.failure.case.arrays().keys() == {"g", "a", "b"}


# ---------------------------------------------------------------- fingerprints


def _define(source: str, **namespace) -> object:
    namespace = {"np": np, **namespace}
    exec(source, namespace)
    return namespace["f"]


def test_a_comment_does_not_change_the_fingerprint_and_the_code_does():
    plain = _define("def f(g, shape):\n    return g.sum(axis=0)\n")
    commented = _define("def f(g, shape):\n    # sum it\n\n    return g.sum(axis=0)\n")
    other = _define("def f(g, shape):\n    return g.sum(axis=1)\n")
    assert fingerprint(plain) == fingerprint(commented)
    assert fingerprint(plain) != fingerprint(other)


def test_the_fingerprint_follows_the_learners_helpers():
    """matmul_vjp calling a fixed unbroadcast is different code, though its own is not."""
    source = "def f(g, a, b):\n    return helper(g @ b.T, a.shape)\n"
    wrong = _define(source, helper=leading_axes_only)
    fixed = _define(source, helper=unbroadcast)
    assert fingerprint(wrong) != fingerprint(fixed)
    assert fingerprint(_define(source, helper=unbroadcast)) == fingerprint(fixed)


def test_the_fingerprint_follows_closures_and_wrapped_rules():
    jax = pytest.importorskip("jax")

    def rule(scale):
        @jax.custom_jvp
        def f(x):
            return x

        @f.defjvp
        def f_jvp(primals, tangents):
            return primals[0], tangents[0] * scale

        return f

    assert fingerprint(rule(2.0)) != fingerprint(rule(3.0))
    assert fingerprint(rule(2.0)) == fingerprint(rule(2.0))


def test_builtins_have_no_fingerprint():
    assert fingerprint(len) is None
    assert fingerprint(np.add) is None


def test_a_namesake_with_other_cases_never_gets_the_counterexample():
    """Chapter 02's `grad` and the engine check's `grad` share a chapter and a name: a case
    of one handed to the other raised TypeError for a right engine."""

    def wrong(g, shape):
        return g

    assert not check_function(UNBROADCAST, wrong).passed
    namesake = dataclasses.replace(UNBROADCAST, invoke="programs:invoke_engine")
    own_helpers_copy = dataclasses.replace(UNBROADCAST, depends_on=())
    assert remembered(UNBROADCAST, engine.NOTEBOOK) is not None
    assert remembered(namesake, engine.NOTEBOOK) is None
    assert key(own_helpers_copy, engine.NOTEBOOK) == key(UNBROADCAST, engine.NOTEBOOK)


def test_the_next_wrong_function_is_shrunk_through_references_already_computed(monkeypatch):
    """Shrinking replays the table's cases and then tries candidates that another wrong
    function's shrink tried too: their TensorFlow references are remembered, not recomputed,
    and what the learner is told is the same as from a fresh process."""
    computed = []
    original = references.tensorflow_references

    def counted(reference, cases):
        computed.append(len(cases))
        return original(reference, cases)

    monkeypatch.setattr(references, "tensorflow_references", counted)
    references.forget_remembered()
    check_function(UNBROADCAST, forgets_keepdims)
    computed.clear()
    after = check_function(UNBROADCAST, leading_axes_only)
    after_another = sum(computed)
    forget_counterexamples()
    references.forget_remembered()
    computed.clear()
    fresh = check_function(UNBROADCAST, leading_axes_only)
    assert str(after) == str(fresh)
    assert after_another < sum(computed), (after_another, sum(computed))
    kept = next(iter(references._remembered.values()))
    assert not kept[0].flags.writeable  # a kept reference cannot be changed by its reader


def test_remembered_references_are_bounded_and_the_least_recently_used_go_first(monkeypatch):
    monkeypatch.setattr(references, "REMEMBERED_CASES", 2)
    references.forget_remembered()
    made = []

    def outputs(name):
        made.append(name)
        return (np.zeros(3),)

    for name in ("a", "b"):
        references._recall((name,), lambda name=name: outputs(name))
    references._recall(("a",), lambda: outputs("a again"))  # kept: "a" is now the newest
    references._recall(("c",), lambda: outputs("c"))  # over the count: "b" goes
    assert list(references._remembered) == [("a",), ("c",)] and made == ["a", "b", "c"]
    monkeypatch.setattr(references, "REMEMBERED_BYTES", 30)  # two arrays of 24 bytes: one stays
    references._recall(("d",), lambda: outputs("d"))
    assert list(references._remembered) == [("d",)]
    references.forget_remembered()
