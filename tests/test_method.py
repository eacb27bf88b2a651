"""The method is checked where the exercise text names one (issue 17): an answer whose values
are right but that ignores the method fails with a message saying what to use instead; the
solutions, which follow it, pass; a wrong value still gets the hint that names its mistake."""

from __future__ import annotations

import json
import os
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from pathlib import Path

import jax
import jax.numpy as jnp
import nbformat
import numpy as np
import pytest
import tensorflow as tf
from jax import jacrev

from autograder import check
from autograder.report import FAILED

ROOT = Path(__file__).resolve().parent.parent


def solution_source(notebook: str, name: str) -> str:
    """The exercise cell of the solution notebook that defines `name`."""
    cells = nbformat.read(ROOT / "solutions" / notebook, as_version=4).cells
    (source,) = [c.source for c in cells
                 if "exercise" in c.metadata.get("tags", []) and f"def {name}(" in c.source]
    return source


def solution(notebook: str, name: str):
    """The exercise function `name` as the solution notebook defines it (its exercise cell
    run with the notebook's usual imports), so the test follows the notebook."""
    namespace = {"tf": tf, "jax": jax, "jnp": jnp, "np": np}
    exec(compile(solution_source(notebook, name), f"<{notebook}>", "exec"), namespace)
    return namespace[name]


# ---------------------------------------------------------------- jacobian_by_rows (ch01)


def rows_by_hand(x, W, b):
    return (1 - np.tanh(x @ W + b) ** 2)[:, None] * W.T


def rows_by_jacrev(x, W, b):
    return jax.jacrev(lambda x: jnp.tanh(x @ W + b))(x)


def rows_by_imported_jacrev(x, W, b):  # `from jax import jacrev` binds it in the globals
    return jacrev(lambda x: jnp.tanh(x @ W + b))(x)


def rows_by_tape_jacobian(x, W, b):
    x = tf.constant(x)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.tanh(tf.linalg.matvec(W, x, transpose_a=True) + b)
    return tape.jacobian(y, x, experimental_use_pfor=False).numpy()


def columns_forward_mode(x, W, b):
    """By columns: one JVP per input direction (forward mode), not one VJP per row."""
    x = tf.constant(x)
    columns = []
    for j in range(x.shape[0]):
        with tf.autodiff.ForwardAccumulator(x, tf.one_hot(j, x.shape[0])) as acc:
            y = tf.tanh(tf.linalg.matvec(W, x, transpose_a=True) + b)
        columns.append(acc.jvp(y))
    return tf.stack(columns, axis=1).numpy()


# ---------------------------------------------------------------- qa_gradients (ch01)


def qa_by_hand(x, W, b, y0):
    y = np.tanh(x @ W + b)
    g1 = 2 * (y - y0) / y.size * (1 - y**2)
    return x.T @ g1, g1.sum(axis=0)


def qa_in_one_tape_call(x, W, b, y0):
    W, b = tf.Variable(W), tf.Variable(b)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(tf.tanh(x @ W + b) - y0))
    return [g.numpy() for g in tape.gradient(loss, [W, b])]


def qa_in_one_jax_grad(x, W, b, y0):
    loss = lambda W, b: jnp.mean((jnp.tanh(x @ W + b) - y0) ** 2)  # noqa: E731
    return jax.grad(loss, argnums=(0, 1))(W, b)


# ---------------------------------------------------------------- hvp (ch06)


def hvp_by_hessian(f, x, v):
    return jnp.tensordot(jax.hessian(f)(x), v, axes=v.ndim)


def hvp_by_jacfwd_of_flat_grad(f, x, v):  # no builder named "hessian", still n x n
    def flat_grad(y):
        return jax.grad(f)(y.reshape(x.shape)).ravel()

    return (jax.jacfwd(flat_grad)(x.ravel()) @ v.ravel()).reshape(x.shape)


def hvp_by_columns(f, x, v):  # the Hessian built column by column from HVPs: no builder
    columns = [jax.jvp(jax.grad(f), (x,), (e.reshape(x.shape),))[1].ravel()
               for e in jnp.eye(x.size, dtype=x.dtype)]
    return (jnp.stack(columns, 1) @ v.ravel()).reshape(x.shape)


def hvp_reverse_over_reverse(f, x, v):
    """No Hessian either: the gradient of <grad f(x), v>. Right, and allowed."""
    return jax.grad(lambda y: jnp.vdot(jax.grad(f)(y), v))(x)


# ---------------------------------------------------------------- linear_layer (ch04)


def layer_without_custom_gradient(x, w):
    return x @ w


@tf.custom_gradient
def _matmul_by_module_weight(x):
    w = _WEIGHT[0]

    def grad_fn(g, variables=None):
        return g @ tf.transpose(w), [tf.transpose(x) @ g]

    return x @ w, grad_fn


_WEIGHT: list = [None]


def layer_with_a_module_level_custom_gradient(x, w):
    """Decorated once, outside the function: the rule still runs, so the method holds."""
    _WEIGHT[0] = w
    return _matmul_by_module_weight(x)


ROWS_SAYS = ("must build the Jacobian from m VJPs", "tape.gradient(y, x, output_gradients=")
QA_SAYS = ("in two parts through a cotangent", "output_gradients=g1")
HVP_SAYS = ("without the Hessian", "jax.jvp(jax.grad(f), (x,), (v,))")
LAYER_SAYS = ("@tf.custom_gradient", "your gradient rule never ran")

IGNORING = [
    ("jacobian_by_rows", rows_by_hand, (*ROWS_SAYS, "made 0 VJP call(s)")),
    ("jacobian_by_rows", rows_by_jacrev, (*ROWS_SAYS, "it used jax.jacrev")),
    ("jacobian_by_rows", rows_by_imported_jacrev, (*ROWS_SAYS, "it used jax.jacrev")),
    ("jacobian_by_rows", rows_by_tape_jacobian, (*ROWS_SAYS, "it used tape.jacobian")),
    ("jacobian_by_rows", columns_forward_mode, ROWS_SAYS),
    ("qa_gradients", qa_by_hand, (*QA_SAYS, "0 gradient call(s)")),
    ("qa_gradients", qa_in_one_tape_call, (*QA_SAYS, "1 gradient call(s), 0 of them")),
    ("qa_gradients", qa_in_one_jax_grad, (*QA_SAYS, "1 gradient call(s), 0 of them")),
    ("hvp", hvp_by_hessian, (*HVP_SAYS, "it used jax.hessian")),
    ("hvp", hvp_by_jacfwd_of_flat_grad, (*HVP_SAYS, "it used jax.jacfwd")),
    ("hvp", hvp_by_columns, (*HVP_SAYS, "as many entries as the Hessian")),
    ("linear_layer", layer_without_custom_gradient, LAYER_SAYS),
]


@pytest.mark.parametrize(("exercise", "fn", "says"), IGNORING,
                         ids=[fn.__name__ for _, fn, _ in IGNORING])
def test_right_values_by_another_method_fail_saying_what_to_use(exercise, fn, says):
    report = getattr(check, exercise)(fn)
    assert report.status == FAILED, str(report)
    for words in says:
        assert words in report.headline(), str(report)
    titles = [title for title, _ in report.sections()]
    assert not any("case" in title for title in titles), titles  # no case: it is the method


SOLUTIONS = [("01_chain_rule.ipynb", "jacobian_by_rows"), ("01_chain_rule.ipynb", "qa_gradients"),
             ("06_jacobians.ipynb", "hvp"), ("04_custom_gradient_tf.ipynb", "linear_layer")]


@pytest.mark.parametrize(("notebook", "name"), SOLUTIONS, ids=[n for _, n in SOLUTIONS])
def test_the_solutions_follow_the_method(notebook, name):
    report = getattr(check, name)(solution(notebook, name))
    assert report.passed, str(report)


@pytest.mark.parametrize("fn", [hvp_reverse_over_reverse,
                                layer_with_a_module_level_custom_gradient])
def test_other_ways_that_follow_the_method_pass(fn):
    exercise = "hvp" if fn is hvp_reverse_over_reverse else "linear_layer"
    report = getattr(check, exercise)(fn)
    assert report.passed, str(report)


def test_a_wrong_value_gets_its_hint_before_the_method():
    def transposed_by_hand(x, W, b):
        return rows_by_hand(x, W, b).T

    report = check.jacobian_by_rows(transposed_by_hand)
    assert report.status == FAILED
    assert "Your Jacobian is transposed" in str(report), str(report)
    assert "m VJPs" not in report.headline()


# ---------------------------------------------------------------- in the grader's child

HESSIAN_HVP = '''
def hvp(f, x, v):
    return jnp.tensordot(jax.hessian(f)(x), v, axes=v.ndim)
'''
UNDEFINED_NAME = '''
def jacobian_via_jvp(f, x):
    return jacobian_by_columns(f, x)
'''
UNANSWERED_HELPER = '''
def rows_of(f, x):
    raise NotImplementedError("rows_of")


def batch_jacobian(f, x):
    return rows_of(f, x)
'''


def _replace_exercise(notebook: nbformat.NotebookNode, name: str, source: str) -> None:
    for cell in notebook.cells:
        if "exercise" in cell.metadata.get("tags", []) and f"def {name}(" in cell.source:
            cell.source = source
            return
    raise AssertionError(f"no exercise cell defines {name}")


def test_the_grader_reports_the_method_the_stub_and_no_case_for_a_name_error(tmp_path):
    """One sandboxed grading of chapter 06: hvp by jax.hessian fails on the method, with no
    case; a NameError shows no case and only the learner's frames; an unanswered helper is
    named; the untouched exercise still passes."""
    notebook = nbformat.read(ROOT / "solutions" / "06_jacobians.ipynb", as_version=4)
    for name, source in [("hvp", HESSIAN_HVP), ("jacobian_via_jvp", UNDEFINED_NAME),
                         ("batch_jacobian", UNANSWERED_HELPER)]:
        _replace_exercise(notebook, name, source)
    nbformat.write(notebook, tmp_path / "submission.ipynb")
    out = tmp_path / "graded"
    run = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", str(tmp_path / "submission.ipynb"),
         "--out", str(out), "--seed", "5", "--jobs", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    (results,) = out.glob("*-submission/results.json")
    tests = {t["name"].split()[0]: t for t in json.loads(results.read_text())["tests"]}
    assert tests["jacobian_via_vjp"]["status"] == "passed", tests["jacobian_via_vjp"]["output"]
    method, name_error, stub = (tests[n]["output"] for n in
                                ("hvp", "jacobian_via_jvp", "batch_jacobian"))
    assert "without the Hessian" in method and "it used jax.hessian" in method, method
    assert "NameError" in name_error and "jacobian_by_columns" in name_error, name_error
    for output in (method, name_error):
        assert "ailing case" not in output and "input x" not in output, output
    assert "child.py" not in name_error and "harness" not in name_error, name_error
    assert "`rows_of` (called by `batch_jacobian`)" in stub, stub


# ---------------------------------------------------------------- exercises judged alone


def wrong_unbroadcast(g, shape):  # sums the leading axes only, never keepdims
    return g.sum(axis=tuple(range(g.ndim - len(shape))))


def test_matmul_vjp_is_checked_with_a_correct_unbroadcast_and_says_so():
    """matmul_vjp calls unbroadcast by its global name: the check puts the reference there
    while it runs (and puts the learner's back), and names the learner's as wrong."""
    namespace = {"np": np, "unbroadcast": wrong_unbroadcast}
    source = solution_source("03_unbroadcasting.ipynb", "matmul_vjp")
    exec(compile(source, "<matmul_vjp>", "exec"), namespace)
    assert not check.unbroadcast(wrong_unbroadcast).passed
    report = check.matmul_vjp(namespace["matmul_vjp"])
    assert report.passed, str(report)
    assert "Your unbroadcast is not right yet" in str(report)
    assert "checked with a correct unbroadcast in place of yours" in str(report)
    assert namespace["unbroadcast"] is wrong_unbroadcast


def test_no_note_when_the_dependency_is_right():
    namespace = {"np": np}
    exec(compile(solution_source("03_unbroadcasting.ipynb", "unbroadcast")
                 + "\n" + solution_source("03_unbroadcasting.ipynb", "matmul_vjp"),
                 "<chapter 03>", "exec"), namespace)
    report = check.matmul_vjp(namespace["matmul_vjp"])
    assert report.passed and "Your other exercises" not in str(report), str(report)


@tf.function
def _second_part(x, W, b, g1):
    with tf.GradientTape() as tape:
        tape.watch([W, b])
        h = x @ W + b
    return tape.gradient(h, [W, b], output_gradients=g1)


def qa_with_a_traced_second_part(x, W, b, y0):
    """Follows the method, but part 2 runs in a tf.function traced once per signature: on a
    case whose shapes were seen before, its tape.gradient is replayed, not called."""
    x, W, b, y0 = (tf.constant(a) for a in (x, W, b, y0))
    h = x @ W + b
    with tf.GradientTape() as tape:
        tape.watch(h)
        loss = tf.reduce_mean(tf.square(tf.tanh(h) - y0))
    return _second_part(x, W, b, tape.gradient(loss, h))


def test_a_graph_traced_on_an_earlier_case_is_not_a_method_failure():
    report = check.qa_gradients(qa_with_a_traced_second_part)
    assert report.passed, str(report)
