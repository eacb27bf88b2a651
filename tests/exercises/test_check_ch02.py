"""The chapter 02 checks: the learner's whole engine on random programs (`grad`: right engines
pass; breadth-first order, `=` instead of `+=` and seed 001's matmul rule fail, each shown as
the smallest program; a grad that breaks jax.grad's argnums or scalar output fails, named),
and the finite-difference checks `directional_derivative` and
`find_wrong_rule`: right answers written in different ways pass, each known wrong one fails
with the hint that names it. The rules' own exercises are tested in test_check_ch02_rules.py."""

from __future__ import annotations

import numpy as np
import pytest

import coursekit.tape
from autograder import check
from autograder.exercises.ch02_reverse_mode_tape import (
    DIRECTIONAL_DERIVATIVE,
    FIND_WRONG_RULE,
    GRAD,
)
from autograder.exercises.engine_reports import ProgramReport
from autograder.harness import ch02_reverse_mode_tape, programs
from autograder.harness.programs import operations
from tests.engines import (
    ANY_OUTPUT,
    ASSIGNING,
    BREADTH_FIRST,
    INT_ARGNUMS_AS_TUPLE,
    ONE_TUPLE_AS_BARE,
    SEED_001,
    engine,
)


def failed_with(report, words):
    assert not report.passed, str(report)
    assert report.failure is not None and words in report.failure.hint, str(report)


# ---------------------------------------------------------------- grad: the whole engine


def test_a_right_engine_passes_and_the_report_shows_programs():
    report = check.grad(engine()["grad"])
    assert report.passed, str(report)
    assert isinstance(report, ProgramReport)


@pytest.mark.parametrize(
    ("swaps", "most"),
    [(BREADTH_FIRST, 6), (ASSIGNING, 4), (SEED_001, 4)],
    ids=["breadth-first order", "= for +=", "seed 001's matmul"],
)
def test_wrong_engines_fail_on_a_small_program_shown_as_code(swaps, most):
    """The breadth-first order needs a value used at two depths, so its smallest program is
    longer; the issue's two bugs shrink to at most 4 operations."""
    report = check.grad(engine(swaps)["grad"])
    assert not report.passed
    program = report.failure.case.arg("program")
    assert operations(program) <= most, program
    assert all(f"  {line}\n" in str(report) for line in program.splitlines())


@pytest.mark.parametrize(
    ("swaps", "raised", "words"),
    [
        (INT_ARGNUMS_AS_TUPLE, "ArgnumsError", "grad(f) returned a tuple of length 1 for f"),
        (ONE_TUPLE_AS_BARE, "ArgnumsError", "(2,)) returned a value of type ndarray"),
        (ANY_OUTPUT, "ScalarOutputError", "has shape"),
    ],
    ids=["int argnums gives a 1-tuple", "tuple argnums gives a bare array", "no TypeError"],
)
def test_a_grad_that_is_not_jax_grads_fails_named_with_what_to_do(swaps, raised, words):
    """jax.grad's contract: an int argnums gives one array, a tuple (of one too) a tuple, and
    an output that is not a scalar is a TypeError. Right gradients do not hide a breach: the
    report names it (the message) and says what to do (the hint declared for it), on the
    smallest program."""
    report = check.grad(engine(swaps)["grad"])
    assert not report.passed, str(report)
    failure = report.failure
    assert failure.message.startswith(f"raised {raised}: ") and words in failure.message
    assert failure.hint == GRAD.hints_by_kind[f"exception:{raised}"], failure.hint
    assert operations(failure.case.arg("program")) <= 2, failure.case.arg("program")


def test_a_type_error_of_the_engine_itself_gets_the_engines_hint():
    """The contract's breaches have names of their own, so a TypeError the learner's engine
    raises (here: no `**`) is not taken for one: its hint points at the traceback."""
    namespace = engine()
    del namespace["Tensor"].__pow__
    try:
        report = check.grad(namespace["grad"])
    finally:
        namespace["Tensor"].__pow__ = engine()["Tensor"].__pow__
    assert report.failure is not None and report.failure.message.startswith("raised TypeError")
    assert report.failure.hint == GRAD.hints_by_kind["error"], report.failure.hint


def test_a_grad_returning_lists_and_refusing_every_output_of_an_axis_passes():
    """A list where jax.grad gives a tuple, and a TypeError for an output of shape (1, 1)
    too (as jax.grad does; the check leaves a size-1 output to the learner), are right."""
    report = check.grad(engine({"grad": "grad_as_lists"})["grad"])
    assert report.passed, str(report)


def test_the_engine_exercise_holds_no_answer_of_its_own():
    """No known wrong engine and no reference engine in the package: each would be a working
    engine but for one part; the declaration says why (answers_outside)."""
    assert GRAD.mistakes == () and GRAD.reference_implementation == ""
    assert GRAD.answers_outside and GRAD.chapter == "02"


@pytest.mark.parametrize("module", [ch02_reverse_mode_tape, programs, coursekit.tape])
def test_nothing_a_learners_kernel_imports_holds_an_engine_or_a_rule(module):
    names = {
        "Tensor",
        "RULES",
        "vjp_rule",
        "toposort",
        "backward",
        "grad",
        "reverse_topological",
        "unbroadcast",
        "record",
        *(f"vjp_{op}" for op in ("add", "mul", "matmul", "sum")),
    }
    assert not names & set(vars(module)), sorted(names & set(vars(module)))


def test_the_handed_out_table_is_right_but_for_its_one_wrong_rule():
    """Its right ops are the complex step's (no rule is written in the package): exact to
    rounding on the ops find_wrong_rule checks."""
    table, rng = ch02_reverse_mode_tape.handed_out_vjp_rule(), np.random.default_rng(3)
    x, y, g = (rng.uniform(0.5, 1.5, (3, 3)) for _ in range(3))
    np.testing.assert_allclose(table("mul", g, x, y), (g * y, g * x), rtol=1e-14)
    np.testing.assert_allclose(table("tanh", g, x)[0], g * (1 - np.tanh(x) ** 2), rtol=1e-14)
    np.testing.assert_allclose(
        table("sum", g[0], x, axis=1)[0], np.broadcast_to(g[0][:, None], (3, 3))
    )
    assert not np.allclose(table("matmul", g, x, y)[1], x.T @ g)


# ---------------------------------------------------------------- directional_derivative


def central_by_norm(f, x, v):
    """Right, written differently: the step scaled by 1 + the norm of x."""
    h = np.cbrt(np.finfo(x.dtype).eps) * (1 + np.linalg.norm(x))
    return (f(x + h * v) - f(x - h * v)) / (2 * h)


def central_in_float64(f, x, v):
    """Right, written differently: the step taken on float64 points (f computes in its own
    dtype), the difference divided by the step actually taken along v."""
    wide = x.astype(np.float64)
    h = np.finfo(x.dtype).eps ** (1 / 3) * max(1.0, float(np.abs(wide).max(initial=0.0)))
    ahead, behind = (wide + h * v).astype(x.dtype), (wide - h * v).astype(x.dtype)
    taken = float(np.dot((ahead - behind).astype(np.float64).ravel(), v.ravel()))
    return (np.float64(f(ahead)) - np.float64(f(behind))) / taken


@pytest.mark.parametrize("fn", [central_by_norm, central_in_float64])
def test_right_directional_derivatives_pass(fn):
    report = check.directional_derivative(fn)
    assert report.passed, str(report)


def test_a_step_relative_to_x_alone_fails_at_zero():
    """h = eps**(1/3) * max|x| with no floor is 0 at x = 0, and 0 / 0 is NaN: an edge case
    draws x = 0, and the hint names the missing floor."""

    def relative_step(f, x, v):
        h = np.cbrt(np.finfo(x.dtype).eps) * np.abs(x).max()
        return (f(x + h * v) - f(x - h * v)) / (2 * h)

    assert any(not np.any(case.arg("x")) for case in DIRECTIONAL_DERIVATIVE.edge_cases())
    with np.errstate(divide="ignore", invalid="ignore"):
        report = check.directional_derivative(relative_step)
    failed_with(report, "x = 0")


def test_a_forward_difference_fails_with_its_hint():
    def forward(f, x, v):
        h = np.sqrt(np.finfo(x.dtype).eps) * max(1.0, float(np.abs(x).max(initial=0.0)))
        return (f(x + h * v) - f(x)) / h

    failed_with(check.directional_derivative(forward), "Step both ways")


def test_derivative_cases_are_well_conditioned_and_unit():
    for case in DIRECTIONAL_DERIVATIVE.edge_cases():
        _, x, v = case.values()
        assert np.isclose(np.linalg.norm(v.astype(np.float64)), 1, rtol=1e-6)
        assert x.dtype == v.dtype


# ---------------------------------------------------------------- find_wrong_rule


def find_wrong_rule_by_columns(vjp_rule, forward, dtype):
    """Right, written differently: another seed, other inputs and tolerances, and the
    finite differences gathered into a whole cotangent before comparing."""
    rng = np.random.default_rng(42)
    tol = 3e-3 if np.dtype(dtype) == np.float32 else 1e-7
    for op, function in forward.items():
        for params in [{"axis": a} for a in (0, 1, None)] if op == "sum" else [{}]:
            primals = [
                rng.uniform(0.7, 1.9, (3, 3)).astype(dtype)
                for _ in range(2 if op in ("add", "sub", "mul", "div", "matmul") else 1)
            ]
            g = rng.standard_normal(np.shape(function(*primals, **params))).astype(dtype)
            for i, (primal, c) in enumerate(
                zip(primals, vjp_rule(op, g, *primals, **params), strict=True)
            ):
                numeric = np.zeros(primal.shape)
                for j in np.ndindex(primal.shape):
                    e = np.zeros_like(primal)
                    e[j] = 1

                    def f(t, i=i, e=e, params=params, function=function, g=g, primals=primals):
                        moved = [p + t * e if k == i else p for k, p in enumerate(primals)]
                        return np.sum(g * function(*moved, **params)).astype(dtype)

                    numeric[j] = directional_derivative(f, np.zeros((), dtype), np.ones((), dtype))
                if np.abs(numeric - c).max() > tol * max(1.0, np.abs(c).max()):
                    return op
    return None


def directional_derivative(f, x, v):  # the learner's own, found by find_wrong_rule
    h = np.finfo(x.dtype).eps ** (1 / 3) * max(1.0, float(np.abs(x).max(initial=0.0)))
    return (f(x + h * v) - f(x - h * v)) / (2 * h)


def test_right_find_wrong_rule_passes():
    report = check.find_wrong_rule(find_wrong_rule_by_columns)
    assert report.passed, str(report)


def test_a_check_that_never_flags_fails():
    failed_with(check.find_wrong_rule(lambda vjp_rule, forward, dtype: None), "wrong op")


def find_wrong_rule_last(vjp_rule, forward, dtype):
    """Every rule checked, and the LAST op flagged returned: right whenever only one rule
    of the table is wrong."""
    flagged = None
    for op in forward:
        one = {op: forward[op]}  # the right check, on this op alone
        if find_wrong_rule_by_columns(vjp_rule, one, dtype) is not None:
            flagged = op
    return flagged


def test_a_check_that_returns_the_last_wrong_rule_fails():
    """Tables with two and three wrong rules, where the first in `forward`'s order is the
    answer: a check that reports only the last wrong rule it met fails them."""
    assert any("+" in case.arg("table") for case in FIND_WRONG_RULE.edge_cases())
    failed_with(check.find_wrong_rule(find_wrong_rule_last), "LAST op it flags")
