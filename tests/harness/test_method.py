"""The method is checked where the exercise text names one: an answer whose values
are right but that ignores the method fails with a message saying what to use instead; the
solutions, which follow it, pass; a wrong value still gets the hint that names its mistake."""

from __future__ import annotations

import json
import os
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import nbformat
import numpy as np
import pytest
import tensorflow as tf
from jax import jacrev

from autograder import check
from autograder.judging.report import FAILED

ROOT = Path(__file__).resolve().parents[2]


def solution_source(notebook: str, name: str) -> str:
    """The exercise cell of the solution notebook that defines `name`."""
    cells = nbformat.read(ROOT / "solutions" / notebook, as_version=4).cells
    (source,) = [
        c.source
        for c in cells
        if "exercise" in c.metadata.get("tags", []) and f"def {name}(" in c.source
    ]
    return source


def solution(notebook: str, name: str):
    """The exercise function `name` as the solution notebook defines it (its exercise cell
    run with the notebook's usual imports), so the test follows the notebook."""
    namespace = {"tf": tf, "jax": jax, "jnp": jnp, "np": np}
    exec(compile(solution_source(notebook, name), f"<{notebook}>", "exec"), namespace)
    return namespace[name]


# ---------------------------------------------------------------- per_example_gradients (ch01)


def _losses_jnp(x, W, b, y0):
    return jnp.mean((jnp.tanh(x @ W + b) - y0) ** 2, axis=-1)  # one loss per example


def _losses_tf(x, W, b, y0):
    return tf.reduce_mean(tf.square(tf.tanh(x @ W + b) - y0), axis=-1)


def per_example_by_hand(x, W, b, y0):
    y = np.tanh(x @ W + b)
    g_h = 2 * (y - y0) / y.shape[-1] * (1 - y**2)  # row i: example i's own g_h
    return (x[:, :, None] * g_h[:, None, :]).astype(np.float32), g_h.astype(np.float32)


def per_example_by_jacrev(x, W, b, y0):
    return jax.jacrev(lambda W, b: _losses_jnp(x, W, b, y0), argnums=(0, 1))(W, b)


def per_example_by_imported_jacrev(x, W, b, y0):  # `from jax import jacrev` binds it
    return jacrev(lambda W, b: _losses_jnp(x, W, b, y0), argnums=(0, 1))(W, b)


def per_example_by_tape_jacobian(x, W, b, y0):
    W, b = tf.constant(W), tf.constant(b)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([W, b])
        losses = _losses_tf(x, W, b, y0)
    return [j.numpy() for j in tape.jacobian(losses, [W, b], experimental_use_pfor=False)]


def per_example_by_one_tape_each(x, W, b, y0):
    """One forward pass and one gradient per example, none with a cotangent: right values,
    but not the chapter's method (a cotangent that selects one loss)."""
    W, b = tf.constant(W), tf.constant(b)
    parts = []
    for i in range(x.shape[0]):
        with tf.GradientTape() as tape:
            tape.watch([W, b])
            loss_i = _losses_tf(x[i : i + 1], W, b, y0[i : i + 1])[0]
        parts.append(tape.gradient(loss_i, [W, b]))
    return tuple(np.stack([p[k].numpy() for p in parts]) for k in range(2))


# ---------------------------------------------------------------- qa_gradients (ch01)


def qa_by_hand(x, W, b, y0):
    y = np.tanh(x @ W + b)
    g_h = 2 * (y - y0) / y.size * (1 - y**2)
    return x.T @ g_h, g_h.sum(axis=0)


def qa_in_one_tape_call(x, W, b, y0):
    W, b = tf.Variable(W), tf.Variable(b)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(tf.tanh(x @ W + b) - y0))
    return [g.numpy() for g in tape.gradient(loss, [W, b])]


def qa_in_one_jax_grad(x, W, b, y0):
    loss = lambda W, b: jnp.mean((jnp.tanh(x @ W + b) - y0) ** 2)  # noqa: E731
    return jax.grad(loss, argnums=(0, 1))(W, b)


# ---------------------------------------------------------------- gauss_newton_product (ch07)


def _pulled_back(f, x, hu):
    return jax.vjp(f, x)[1](hu)[0]


def gn_by_loss_hessian(f, loss, x, v):  # H of the loss built whole by jax.hessian
    z = f(x)
    u = jax.jvp(f, (x,), (v,))[1]
    return _pulled_back(f, x, jnp.tensordot(jax.hessian(loss)(z), u, axes=u.ndim))


def gn_by_jacfwd(f, loss, x, v):  # J built whole by jax.jacfwd
    z = f(x)
    jacobian = jax.jacfwd(lambda t: f(t.reshape(x.shape)).ravel())(x.ravel())
    hu = jax.jvp(jax.grad(loss), (z,), ((jacobian @ v.ravel()).reshape(z.shape),))[1]
    return (jacobian.T @ hu.ravel()).reshape(x.shape)


def gn_by_columns(f, loss, x, v):  # J built column by column from JVPs: no builder
    z = f(x)
    columns = [
        jax.jvp(f, (x,), (e.reshape(x.shape),))[1].ravel() for e in jnp.eye(x.size, dtype=x.dtype)
    ]
    jacobian = jnp.stack(columns, 1)
    hu = jax.jvp(jax.grad(loss), (z,), ((jacobian @ v.ravel()).reshape(z.shape),))[1]
    return (jacobian.T @ hu.ravel()).reshape(x.shape)


def gn_reverse_over_reverse(f, loss, x, v):
    """No matrix either: the loss's curvature as the gradient of <grad loss(z), J v>."""
    z = f(x)
    u = jax.jvp(f, (x,), (v,))[1]
    return _pulled_back(f, x, jax.grad(lambda y: jnp.vdot(jax.grad(loss)(y), u))(z))


# ---------------------------------------------------------------- tanh_layer (ch04)


def layer_without_custom_gradient(x, w):
    return tf.tanh(x @ w)


@tf.custom_gradient
def _tanh_by_module_weight(x):
    w = _WEIGHT[0]
    y = tf.tanh(x @ w)

    def grad_fn(g, variables=None):
        g_z = g * (1 - y * y)
        return g_z @ tf.transpose(w), [tf.transpose(x) @ g_z]

    return y, grad_fn


_WEIGHT: list = [None]


def layer_with_a_module_level_custom_gradient(x, w):
    """Decorated once, outside the function: the rule still runs, so the method holds."""
    _WEIGHT[0] = w
    return _tanh_by_module_weight(x)


PER_EXAMPLE_SAYS = (
    "must take each example's gradient from a VJP with its own cotangent",
    "output_gradients=tf.one_hot(i, B",
)
QA_SAYS = ("in two parts through a cotangent", "output_gradients=g_h")
GN_SAYS = ("without a matrix", "one after the other")
LAYER_SAYS = ("@tf.custom_gradient", "your gradient rule never ran")

IGNORING = [
    ("per_example_gradients", per_example_by_hand, (*PER_EXAMPLE_SAYS, "made 0 VJP call(s)")),
    ("per_example_gradients", per_example_by_jacrev, (*PER_EXAMPLE_SAYS, "it used jax.jacrev")),
    (
        "per_example_gradients",
        per_example_by_imported_jacrev,
        (*PER_EXAMPLE_SAYS, "it used jax.jacrev"),
    ),
    (
        "per_example_gradients",
        per_example_by_tape_jacobian,
        (*PER_EXAMPLE_SAYS, "it used tape.jacobian"),
    ),
    ("per_example_gradients", per_example_by_one_tape_each, PER_EXAMPLE_SAYS),
    ("qa_gradients", qa_by_hand, (*QA_SAYS, "0 gradient call(s)")),
    ("qa_gradients", qa_in_one_tape_call, (*QA_SAYS, "1 gradient call(s), 0 of them")),
    ("qa_gradients", qa_in_one_jax_grad, (*QA_SAYS, "1 gradient call(s), 0 of them")),
    ("gauss_newton_product", gn_by_loss_hessian, (*GN_SAYS, "it used jax.hessian")),
    ("gauss_newton_product", gn_by_jacfwd, (*GN_SAYS, "it used jax.jacfwd")),
    ("gauss_newton_product", gn_by_columns, (*GN_SAYS, "as many entries as the Jacobian")),
    ("tanh_layer", layer_without_custom_gradient, LAYER_SAYS),
]


@pytest.mark.parametrize(
    ("exercise", "fn", "says"), IGNORING, ids=[fn.__name__ for _, fn, _ in IGNORING]
)
def test_right_values_by_another_method_fail_saying_what_to_use(exercise, fn, says):
    report = getattr(check, exercise)(fn)
    assert report.status == FAILED, str(report)
    for words in says:
        assert words in report.headline(), str(report)
    titles = [title for title, _ in report.sections()]
    assert not any("case" in title for title in titles), titles  # no case: it is the method


SOLUTIONS = [
    ("01_chain_rule.ipynb", "per_example_gradients"),
    ("01_chain_rule.ipynb", "qa_gradients"),
    ("07_jacobians.ipynb", "gauss_newton_product"),
    ("04_custom_gradient_tf.ipynb", "tanh_layer"),
]


@pytest.mark.parametrize(("notebook", "name"), SOLUTIONS, ids=[n for _, n in SOLUTIONS])
def test_the_solutions_follow_the_method(notebook, name):
    report = getattr(check, name)(solution(notebook, name))
    assert report.passed, str(report)


@pytest.mark.parametrize("fn", [gn_reverse_over_reverse, layer_with_a_module_level_custom_gradient])
def test_other_ways_that_follow_the_method_pass(fn):
    exercise = "gauss_newton_product" if fn is gn_reverse_over_reverse else "tanh_layer"
    report = getattr(check, exercise)(fn)
    assert report.passed, str(report)


def test_a_wrong_value_gets_its_hint_before_the_method():
    def summed_by_hand(x, W, b, y0):
        return tuple(
            np.broadcast_to(g.sum(axis=0), g.shape) for g in per_example_by_hand(x, W, b, y0)
        )

    report = check.per_example_gradients(summed_by_hand)
    assert report.status == FAILED
    assert "Every example's gradient is the same" in str(report), str(report)
    assert "its own cotangent" not in report.headline()


# ---------------------------------------------------------------- in the grader's child

HESSIAN_GN = """
def gauss_newton_product(f, loss, x, v):
    z = f(x)
    u = jax.jvp(f, (x,), (v,))[1]
    hu = jnp.tensordot(jax.hessian(loss)(z), u, axes=u.ndim)
    return jax.vjp(f, x)[1](hu)[0]
"""
UNDEFINED_NAME = """
def jacobian_via_jvp(f, x):
    return jacobian_by_columns(f, x)
"""
UNANSWERED_HELPER = """
def rows_of(f, x):
    raise NotImplementedError("rows_of")


def batch_jacobian(f, x):
    return rows_of(f, x)
"""


def _replace_exercise(notebook: nbformat.NotebookNode, name: str, source: str) -> None:
    for cell in notebook.cells:
        if "exercise" in cell.metadata.get("tags", []) and f"def {name}(" in cell.source:
            cell.source = source
            return
    raise AssertionError(f"no exercise cell defines {name}")


def graded_tests(notebook: nbformat.NotebookNode, tmp_path: Path, seed: int) -> dict:
    """Grade the notebook alone, sandboxed, with --jobs 1: its results by exercise."""
    nbformat.write(notebook, tmp_path / "submission.ipynb")
    out = tmp_path / "graded"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            str(tmp_path / "submission.ipynb"),
            "--out",
            str(out),
            "--seed",
            str(seed),
            "--jobs",
            "1",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    (results,) = out.glob("*-submission/results.json")
    return {t["name"].split()[0]: t for t in json.loads(results.read_text())["tests"]}


@pytest.mark.e2e  # grades a notebook through the sandbox
def test_the_grader_reports_the_method_the_stub_and_no_case_for_a_name_error(tmp_path):
    """One sandboxed grading of chapter 07: gauss_newton_product by jax.hessian fails on the
    method, with no
    case; a NameError shows no case and only the learner's frames; an unanswered helper is
    named; the untouched exercise still passes."""
    notebook = nbformat.read(ROOT / "solutions" / "07_jacobians.ipynb", as_version=4)
    for name, source in [
        ("gauss_newton_product", HESSIAN_GN),
        ("jacobian_via_jvp", UNDEFINED_NAME),
        ("batch_jacobian", UNANSWERED_HELPER),
    ]:
        _replace_exercise(notebook, name, source)
    tests = graded_tests(notebook, tmp_path, seed=11)
    assert tests["jacobian_via_vjp"]["status"] == "passed", tests["jacobian_via_vjp"]["output"]
    method, name_error, stub = (
        tests[n]["output"] for n in ("gauss_newton_product", "jacobian_via_jvp", "batch_jacobian")
    )
    assert "without a matrix" in method and "it used jax.hessian" in method, method
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
    exec(
        compile(
            solution_source("03_unbroadcasting.ipynb", "unbroadcast")
            + "\n"
            + solution_source("03_unbroadcasting.ipynb", "matmul_vjp"),
            "<chapter 03>",
            "exec",
        ),
        namespace,
    )
    report = check.matmul_vjp(namespace["matmul_vjp"])
    assert report.passed and "Your other exercises" not in str(report), str(report)


@tf.function
def _second_part(x, W, b, g_h):
    with tf.GradientTape() as tape:
        tape.watch([W, b])
        h = x @ W + b
    return tape.gradient(h, [W, b], output_gradients=g_h)


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


# ---------------------------------------------------------------- the same verdict every time
# Once, a vmap answer failed its first check and passed every later one, because a function
# once seen following the method was let off when a compiled part replayed without Python.
# Now compiled code runs its Python while watched, and no check remembers an earlier one.


def per_example_by_vmap_of_the_pullback(x, W, b, y0):
    """One jax.vjp, its pullback mapped over the one-hot rows: one VJP per example."""
    losses, pullback = jax.vjp(lambda W, b: _losses_jnp(x, W, b, y0), jnp.asarray(W), b)
    return jax.vmap(pullback)(jnp.eye(losses.shape[0], dtype=losses.dtype))


def per_example_by_a_loop_of_the_pullback(x, W, b, y0):
    losses, pullback = jax.vjp(lambda W, b: _losses_jnp(x, W, b, y0), jnp.asarray(W), b)
    eye = jnp.eye(losses.shape[0], dtype=losses.dtype)
    parts = [pullback(eye[i]) for i in range(losses.shape[0])]
    return tuple(jnp.stack([p[k] for p in parts]) for k in range(2))


@jax.jit
def _per_example_jitted(x, W, b, y0):
    return per_example_by_a_loop_of_the_pullback(x, W, b, y0)


def per_example_by_a_jitted_loop(x, W, b, y0):
    """Follows the method inside jax.jit: a later call of the same shapes replays the
    compiled program without calling Python, unless the check makes it."""
    return _per_example_jitted(x, W, b, y0)


def per_example_by_vectorized_map(x, W, b, y0):
    W, b = tf.constant(W), tf.constant(b)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([W, b])
        losses = _losses_tf(x, W, b, y0)
    eye = tf.eye(losses.shape[0], dtype=losses.dtype)
    return tf.vectorized_map(lambda e: tape.gradient(losses, [W, b], output_gradients=e), eye)


def per_example_by_one_vmapped_sum(x, W, b, y0):
    """A pullback, but of the ones cotangent only: right values (by hand), 0 VJPs per
    example: must fail."""
    losses, pullback = jax.vjp(lambda W, b: _losses_jnp(x, W, b, y0), jnp.asarray(W), b)
    pullback(jnp.ones_like(losses))
    return per_example_by_hand(x, W, b, y0)


@tf.function
def _qa_whole(x, W, b, y0):
    """Both parts in one tf.function, part 1 by tf.gradients (which needs a graph)."""
    h = x @ W + b
    loss = tf.reduce_mean(tf.square(tf.tanh(h) - y0))
    (g_h,) = tf.gradients(loss, h)
    with tf.GradientTape() as tape:
        tape.watch([W, b])
        h = x @ W + b
    return tape.gradient(h, [W, b], output_gradients=g_h)


def qa_in_a_tf_function(x, W, b, y0):
    return _qa_whole(tf.constant(x), tf.constant(W), tf.constant(b), tf.constant(y0))


FOLLOWING = [
    ("per_example_gradients", per_example_by_vmap_of_the_pullback),
    ("per_example_gradients", per_example_by_a_loop_of_the_pullback),
    ("per_example_gradients", per_example_by_a_jitted_loop),
    ("per_example_gradients", per_example_by_vectorized_map),
    ("qa_gradients", qa_with_a_traced_second_part),
    ("qa_gradients", qa_in_a_tf_function),
]


@pytest.mark.parametrize(("exercise", "fn"), FOLLOWING, ids=[fn.__name__ for _, fn in FOLLOWING])
def test_an_answer_that_follows_the_method_passes_its_first_check_and_every_later_one(exercise, fn):
    reports = [getattr(check, exercise)(fn) for _ in range(3)]
    assert all(report.passed for report in reports), "\n".join(map(str, reports))


def per_example_by_the_jitted_loop_after_the_learner_ran_it(x, W, b, y0):
    return _per_example_jitted(x, W, b, y0)


def test_a_function_the_learner_ran_before_the_check_still_passes():
    """The learner's own cell traced the jitted function on these shapes before the check."""
    rng = np.random.default_rng(0)
    for batch, n, m in [(1, 3, 2), (4, 3, 2), (3, 3, 3), (5, 2, 1)]:
        _per_example_jitted(
            rng.normal(size=(batch, n)).astype(np.float32),
            rng.normal(size=(n, m)).astype(np.float32),
            rng.normal(size=m).astype(np.float32),
            rng.normal(size=(batch, m)).astype(np.float32),
        )
    report = check.per_example_gradients(per_example_by_the_jitted_loop_after_the_learner_ran_it)
    assert report.passed, str(report)


@pytest.mark.parametrize(
    ("exercise", "fn"),
    [
        ("per_example_gradients", per_example_by_one_vmapped_sum),
        ("per_example_gradients", per_example_by_hand),
        ("qa_gradients", qa_in_one_tape_call),
    ],
)
def test_an_answer_that_does_not_follow_the_method_fails_its_first_check_and_every_later_one(
    exercise, fn
):
    reports = [getattr(check, exercise)(fn) for _ in range(3)]
    assert all(report.status == FAILED for report in reports), "\n".join(map(str, reports))
    assert len({report.headline() for report in reports}) == 1


def test_a_layer_whose_custom_gradient_runs_in_a_tf_function_passes_every_time():
    """The solution inside the learner's own tf.function: traced by the first check, it
    would replay in later ones without calling its custom gradient, unless retraced."""
    forward = tf.function(solution("04_custom_gradient_tf.ipynb", "tanh_layer"))

    def layer_in_a_tf_function(x, w):
        return forward(x, w)

    reports = [check.tanh_layer(layer_in_a_tf_function) for _ in range(3)]
    assert all(report.passed for report in reports), "\n".join(map(str, reports))


_HELPER = {"gauss_newton_product": None}


def gn_through_a_helper(f, loss, x, v):
    return _HELPER["gauss_newton_product"](f, loss, x, v)


def test_gauss_newton_is_judged_on_what_its_helpers_do_now_not_on_an_earlier_check():
    """The traced-shape memory was kept per function across checks: a fixed helper behind an
    unchanged function kept failing. Each check now traces afresh."""
    _HELPER["gauss_newton_product"] = gn_by_columns
    assert check.gauss_newton_product(gn_through_a_helper).status == FAILED
    _HELPER["gauss_newton_product"] = gn_reverse_over_reverse
    report = check.gauss_newton_product(gn_through_a_helper)
    assert report.passed, str(report)


VMAP_PER_EXAMPLE = """def per_example_gradients(x, W, b, y0):
    def losses_of(W, b):
        return jnp.mean((jnp.tanh(x @ W + b) - y0) ** 2, axis=-1)

    losses, pullback = jax.vjp(losses_of, jnp.asarray(W), jnp.asarray(b))
    return jax.vmap(pullback)(jnp.eye(losses.shape[0], dtype=losses.dtype))
"""


@pytest.mark.e2e  # grades a notebook through the sandbox
def test_the_grader_gives_the_vmap_answer_the_notebook_check_s_verdict(tmp_path):
    notebook = nbformat.read(ROOT / "solutions" / "01_chain_rule.ipynb", as_version=4)
    _replace_exercise(notebook, "per_example_gradients", VMAP_PER_EXAMPLE)
    tests = graded_tests(notebook, tmp_path, seed=11)
    assert tests["per_example_gradients"]["status"] == "passed", tests["per_example_gradients"][
        "output"
    ]


@partial(jax.jit, static_argnums=(0, 1))
def _gn_by_a_jitted_hessian(f, loss, x, v):
    return gn_by_loss_hessian(f, loss, x, v)


def gn_by_a_jitted_hessian(f, loss, x, v):
    """jax.hessian inside jax.jit: a case of a shape traced before replays without calling
    it, so only a trace of the check's own (with every call seen) can name it every time."""
    return _gn_by_a_jitted_hessian(f, loss, x, v)


def test_a_jitted_hessian_gets_the_same_verdict_and_message_on_every_check():
    reports = [check.gauss_newton_product(gn_by_a_jitted_hessian) for _ in range(3)]
    assert all(report.status == FAILED for report in reports), "\n".join(map(str, reports))
    assert {report.headline() for report in reports} == {reports[0].headline()}
    assert "it used jax.hessian" in reports[0].headline(), reports[0].headline()
