"""The chapter 03 checks: right answers written in different ways pass, and each wrong answer
learners write fails with the hint that names it."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from autograder import check
from autograder.exercises.ch03_unbroadcasting import MATMUL_VJP, UNBROADCAST
from autograder.judging.cases import NOTEBOOK, draw_cases
from autograder.judging.derived import two_references
from autograder.judging.engine import check_function
from autograder.judging.references import ReferenceDisagreement
from coursekit.broadcasting import broadcast_plan

ROOT = Path(__file__).resolve().parents[2]

# ---------------------------------------------------------------- right answers, several ways


def unbroadcast_loops(g, shape):
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and g.shape[axis] != 1:
            g = g.sum(axis=axis, keepdims=True)
    return g


def unbroadcast_reshape(g, shape):
    leading = g.ndim - len(shape)
    axes = tuple(range(leading)) + tuple(leading + i for i, n in enumerate(shape) if n == 1)
    return np.asarray(g.sum(axis=axes)).reshape(shape)


def unbroadcast_in_place(g, shape):
    g *= 1  # writes into its input: the check must hand out copies
    return unbroadcast_loops(g, shape)


def matmul_vjp_einsum(g, a, b):
    g_a = np.einsum("...ij,...kj->...ik", g, b)
    g_b = np.einsum("...ij,...ik->...jk", a, g)
    return unbroadcast_loops(g_a, a.shape), unbroadcast_loops(g_b, b.shape)


def matmul_vjp_batch_loop(g, a, b):
    batch = g.shape[:-2]
    a_full = np.broadcast_to(a, batch + a.shape[-2:])
    b_full = np.broadcast_to(b, batch + b.shape[-2:])
    g_a = np.zeros(batch + a.shape[-2:], dtype=g.dtype)
    g_b = np.zeros(batch + b.shape[-2:], dtype=g.dtype)
    for index in np.ndindex(*batch):
        g_a[index] = g[index] @ b_full[index].T
        g_b[index] = a_full[index].T @ g[index]
    return unbroadcast_loops(g_a, a.shape), unbroadcast_loops(g_b, b.shape)


@pytest.mark.parametrize("fn", [unbroadcast_loops, unbroadcast_reshape, unbroadcast_in_place])
def test_right_unbroadcast_passes(fn):
    report = check.unbroadcast(fn)
    assert report.passed, str(report)
    assert report.cases_checked >= 20


@pytest.mark.parametrize("fn", [matmul_vjp_einsum, matmul_vjp_batch_loop])
def test_right_matmul_vjp_passes(fn):
    report = check.matmul_vjp(fn)
    assert report.passed, str(report)


# ---------------------------------------------------------------- wrong answers learners write


# The declared mistakes (exercises/ch03_unbroadcasting.py) are tested by test_mistakes.py;
# these wrong answers get a hint by their kind (dtype, exception, type) instead.


def declared(exercise, name):
    """A mistake the exercise declares, as the learner's function."""
    return next(m.answer for m in exercise.mistakes if m.name == name)


def upcasts(g, shape):
    return np.zeros(shape) + unbroadcast_loops(g, shape)


def reshapes(g, shape):
    return g.reshape(shape)


def returns_list(g, shape):
    return unbroadcast_loops(g, shape).tolist()


UNBROADCAST_BUGS = [
    (upcasts, "upcasts float32 to float64"),
    (reshapes, "must be added up"),
    (returns_list, "numpy array"),
]


@pytest.mark.parametrize(
    ("fn", "hint"), UNBROADCAST_BUGS, ids=[f.__name__ for f, _ in UNBROADCAST_BUGS]
)
def test_wrong_unbroadcast_fails_with_its_hint(fn, hint):
    report = check.unbroadcast(fn)
    assert not report.passed
    assert report.status == "failed"
    assert hint in str(report), str(report)


def returns_one_array(g, a, b):
    return matmul_vjp_einsum(g, a, b)[0]


MATMUL_BUGS = [
    (returns_one_array, "should return a tuple (g_a, g_b)"),
]


@pytest.mark.parametrize(("fn", "hint"), MATMUL_BUGS, ids=[f.__name__ for f, _ in MATMUL_BUGS])
def test_wrong_matmul_vjp_fails_with_its_hint(fn, hint):
    report = check.matmul_vjp(fn)
    assert not report.passed
    assert hint in str(report), str(report)


# ---------------------------------------------------------------- the notebook's demos, copied


def copied_section_2_line(g, shape):
    """Section 2's hand computation for (6, 4, 5) -> (4, 1), as a learner's function."""
    return g.sum(axis=0).sum(axis=1, keepdims=True)


def copied_tape_rule(g, a, b):
    """Section 4's tape rule (the 2-D rule with .T) and its batch sum, as a learner's function."""
    return g @ b.T, (a.T @ g).sum(axis=0)


def copied_tape_rule_bare(g, a, b):
    return g @ b.T, a.T @ g


def copied_per_matrix_loop(g, a, b):
    """Section 3's per-matrix demo, as a learner's function (no unbroadcast)."""
    g_a = np.stack([g_i @ b.T for g_i in g])
    g_b = np.stack([a_i.T @ g_i for a_i, g_i in zip(a, g, strict=True)])
    return g_a, g_b


def test_a_copied_demo_does_not_pass_unbroadcast():
    report = check.unbroadcast(copied_section_2_line)
    assert not report.passed
    assert "section 2's computation" in report.failure.hint, report.failure.hint


@pytest.mark.parametrize(
    ("fn", "hint"),
    [
        (copied_tape_rule, "g_a must have a's shape"),
        (copied_tape_rule_bare, "g_a must have a's shape"),
        (copied_per_matrix_loop, "g_a must have a's shape"),
    ],
    ids=["tape_rule", "tape_rule_bare", "per_matrix_loop"],
)
def test_a_copied_demo_does_not_pass_matmul_vjp(fn, hint):
    """No cell of the notebook, copied, solves exercise 2; each copy gets a hint that says
    what a right answer has (the declared mistakes cover the copies with unbroadcast added)."""
    report = check.matmul_vjp(fn)
    assert not report.passed
    assert hint in report.failure.hint, report.failure.hint


def unbroadcast_from_the_left(g, shape):
    # Published rules that line the shapes up from the left, then force the shape.
    out = g
    for axis in range(len(shape)):
        if shape[axis] == 1 and out.shape[axis] != 1:
            out = np.sum(out, axis=axis, keepdims=True)
    while out.ndim > len(shape):
        out = np.sum(out, axis=out.ndim - 1)
    return np.reshape(out, shape)


def test_a_left_aligned_rule_is_told_it_summed_over_the_wrong_axes():
    """It does sum, so the hint for a shape error ("contributions that must be added up")
    misled it: the hint names the left alignment."""
    report = check.unbroadcast(unbroadcast_from_the_left)
    assert "raised ValueError" in report.headline()
    assert "You did sum, but over the wrong axes" in report.failure.hint, report.failure.hint
    assert "from the left" in report.failure.hint


def test_all_axes_transpose_is_caught_on_the_qa_case():
    """The Q&A bug only shows with a 3-D operand; the case from the Q&A must catch it."""
    qa_case = MATMUL_VJP.edge_cases()[0]
    assert "Q&A" in qa_case.label
    g, a, b = qa_case.values()
    _, wrong_b = declared(MATMUL_VJP, "all_axes_transposed")(g, a, b)
    _, right_b = matmul_vjp_einsum(g, a, b)
    assert not np.allclose(wrong_b, right_b)


def test_failure_is_shrunk_to_a_small_case():
    report = check.unbroadcast(declared(UNBROADCAST, "leading_only"))
    assert report.failure.shrunk
    assert report.failure.case.size() <= 4


def test_exception_is_reported_with_the_learners_line():
    report = check.unbroadcast(reshapes)
    assert "raised ValueError" in report.headline()
    assert "g.reshape(shape)" in report.failure.traceback


def test_prints_are_captured_and_shown_for_the_failing_case():
    def noisy(g, shape):  # sums the leading axes only (the mistake "leading_only")
        print("debug", g.shape)
        return g.sum(axis=tuple(range(g.ndim - len(shape))))

    report = check.unbroadcast(noisy)
    assert "debug" in report.failure.printed


def test_not_answered_stub_is_reported_as_such():
    def unbroadcast(g, shape):
        raise NotImplementedError("Exercise unbroadcast: replace this line with your code.")

    report = check.unbroadcast(unbroadcast)
    assert report.status == "not answered"
    assert not report.passed
    assert "NOT ANSWERED" in report._repr_html_()


def test_passing_the_result_instead_of_the_function_is_explained():
    report = check.unbroadcast(np.zeros(3))
    assert report.status == "error"
    assert "pass the function itself" in str(report)


def test_reports_are_deterministic_for_nbval():
    left_aligned = declared(UNBROADCAST, "left_aligned")
    assert str(check.unbroadcast(left_aligned)) == str(check.unbroadcast(left_aligned))


def test_unknown_exercise_names_the_known_ones():
    with pytest.raises(AttributeError, match="unbroadcast"):
        check.unbroadcst  # noqa: B018


def printed_by_a_fresh_interpreter(probe: str) -> str:
    """What `probe` prints, run in a new Python (its own `sys.modules`, nothing imported yet)."""
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return done.stdout.strip()


def test_a_tool_probing_check_for_dunder_names_imports_nothing_more():
    """TensorFlow's autograph reads `__module__` of each global of a function it converts; in a
    notebook `check` is one. The probe once imported nbformat (over a second, in the learner's
    first tf.function cell or custom-gradient check); in a fresh interpreter it imports nothing."""
    probe = (
        "import sys\n"
        "from autograder import check\n"
        "before = set(sys.modules)\n"
        "assert getattr(check, '__module__', None) is None\n"
        "assert not hasattr(check, '_repr_html_')\n"
        "print(sorted(set(sys.modules) - before))\n"
    )
    assert printed_by_a_fresh_interpreter(probe) == "[]"


def test_a_first_hint_and_a_mistyped_name_import_no_notebook_library():
    """The "no exercise called ..." message and a hint need no notebook file: they once
    imported nbformat and nbclient (1.3 s before a learner's first hint appeared)."""
    probe = (
        "import sys\n"
        "from autograder import check\n"
        "check.hint('unbroadcast')\n"
        "try:\n"
        "    check.unbroadcst\n"
        "except AttributeError as error:\n"
        "    assert 'unbroadcast' in str(error)\n"
        "print(sorted(m for m in sys.modules if m.partition('.')[0] in ('nbformat', 'nbclient')))\n"
    )
    assert printed_by_a_fresh_interpreter(probe) == "[]"


# ---------------------------------------------------------------- the cases themselves


def test_cases_cover_dtypes_ranks_size_one_axes_and_random_cotangents():
    cases = draw_cases(UNBROADCAST.strategy(NOTEBOOK), NOTEBOOK)
    dtypes = {case.arg("g").dtype for case in cases}
    ranks = {case.arg("g").ndim for case in cases}
    assert dtypes == {np.dtype(np.float32), np.dtype(np.float64)}
    assert {0, 4} <= ranks
    assert any(1 in case.arg("shape") and case.arg("g").ndim > 0 for case in cases)
    assert any(len(case.arg("shape")) < case.arg("g").ndim for case in cases)
    big = [case.arg("g") for case in cases if case.arg("g").size >= 4]
    assert big and all(len(np.unique(g)) > 1 for g in big), "cotangents must not be constant"


def test_matmul_cases_include_broadcast_batch_axes():
    cases = draw_cases(MATMUL_VJP.strategy(NOTEBOOK), NOTEBOOK)
    assert any(case.arg("a").ndim != case.arg("b").ndim for case in cases)
    assert all(case.arg("a").ndim >= 2 and case.arg("b").ndim >= 2 for case in cases)


def test_frameworks_must_agree_before_judging():
    def perturbed_jax(jax, params, arrays):
        (result,) = UNBROADCAST.jax_reference(jax, params, arrays)
        return (result + 1,)

    broken = dataclasses.replace(
        UNBROADCAST,
        reference=two_references(
            tf=UNBROADCAST.tf_reference, jax=perturbed_jax, why="a JAX reference broken on purpose"
        ),
    )
    with pytest.raises(ReferenceDisagreement, match="disagree"):
        check_function(broken, unbroadcast_loops)


def test_two_chapters_cannot_share_an_exercise_name():
    from autograder.exercises import _by_name

    clash = dataclasses.replace(UNBROADCAST, chapter="99")
    with pytest.raises(ValueError, match="used by chapters 03 and 99"):
        _by_name((UNBROADCAST, clash))


# ---------------------------------------------------------------- the course's own helper


def unbroadcast_by_plan(g, shape):
    """Chapter 03's imported broadcast_plan, which names the axes that broadcast."""
    plan = broadcast_plan(shape, g.shape).a
    return g.sum(axis=plan.keep_axes, keepdims=True).sum(axis=plan.drop_axes)


def _axes_by_plan(g, shape):
    plan = broadcast_plan(shape, g.shape).a
    return plan.keep_axes, plan.drop_axes


def unbroadcast_by_plan_one_function_deeper(g, shape):
    keep, drop = _axes_by_plan(g, shape)
    return g.sum(axis=keep, keepdims=True).sum(axis=drop)


@pytest.mark.parametrize("fn", [unbroadcast_by_plan, unbroadcast_by_plan_one_function_deeper])
def test_an_unbroadcast_built_on_broadcast_plan_is_refused(fn):
    g = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(fn(g, (3, 1)), unbroadcast_loops(g, (3, 1)))  # right values
    report = check.unbroadcast(fn)
    assert not report.passed
    assert "course's own helper broadcast_plan" in str(report), str(report)


def unbroadcast_importing_the_plan_inside(g, shape):
    from coursekit.broadcasting import broadcast_plan as plan_of

    plan = plan_of(shape, g.shape).a
    return g.sum(axis=plan.keep_axes, keepdims=True).sum(axis=plan.drop_axes)


def test_an_unbroadcast_importing_broadcast_plan_inside_is_refused():
    report = check.unbroadcast(unbroadcast_importing_the_plan_inside)
    assert not report.passed
    assert "course's own helper" in str(report) and "coursekit.broadcasting" in str(report)


def _defined(source: str, name: str):
    namespace = {"np": np}
    exec(source, namespace)
    return namespace[name]


def test_a_right_matmul_vjp_is_judged_with_its_own_helper_of_the_same_name():
    """HIPS autograd's matmul VJP calls its own `unbroadcast(x, target_meta)`: the check
    used to put the course's unbroadcast(g, shape) in its place and fail a right answer."""
    from ..submissions import HIPS_MATMUL, HIPS_UNBROADCAST

    fn = _defined(HIPS_UNBROADCAST + HIPS_MATMUL, "matmul_vjp")
    report = check_function(MATMUL_VJP, fn)
    assert report.passed, report
    # A matmul_vjp that calls a wrong unbroadcast(g, shape) is still judged with a correct one.
    calls = _defined(
        "def unbroadcast(g, shape):\n    return g\n"
        "def matmul_vjp(g, a, b):\n"
        "    return (unbroadcast(g @ np.swapaxes(b, -1, -2), a.shape),\n"
        "            unbroadcast(np.swapaxes(a, -1, -2) @ g, b.shape))\n",
        "matmul_vjp",
    )
    report = check_function(MATMUL_VJP, calls)
    assert report.passed and "in place of yours" in str(report), report
