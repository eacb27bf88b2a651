"""The chapter 07 checks: right answers written in different ways pass, and each wrong answer
learners write (transposed Jacobian, output and input axes swapped, a ones cotangent instead
of one-hot rows, the Hessian of the composition for the Gauss-Newton product, ...) fails with
the hint that names it."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import nbformat
import numpy as np
import pytest

from autograder import check
from autograder.exercises import ch07_jacobians as ch
from autograder.harness import ch07_jacobians as harness
from autograder.judging.cases import NOTEBOOK, draw_cases, grading_profile
from coursekit.jacobians import measure_modes, measure_second_order

from ..submissions import ROOT

# ---------------------------------------------------------------- right answers, several ways


def jacobian_vmap_vjp(f, x):
    y, vjp_fn = jax.vjp(f, x)
    rows = jnp.eye(y.size, dtype=y.dtype).reshape((y.size, *y.shape))
    (jac,) = jax.vmap(vjp_fn)(rows)
    return jac.reshape(y.shape + x.shape)


def jacobian_loop_vjp(f, x):
    y, vjp_fn = jax.vjp(f, x)
    rows = []
    for i in range(y.size):
        e = np.zeros(y.size, dtype=y.dtype)
        e[i] = 1
        rows.append(np.asarray(vjp_fn(e.reshape(y.shape))[0]))
    return np.stack(rows).reshape(y.shape + x.shape)


def jacobian_vmap_jvp(f, x):
    y = f(x)
    tangents = jnp.eye(x.size, dtype=x.dtype).reshape((x.size, *x.shape))
    cols = jax.vmap(lambda t: jax.jvp(f, (x,), (t,))[1])(tangents)
    return jnp.moveaxis(cols, 0, -1).reshape(y.shape + x.shape)


def jacobian_loop_jvp(f, x):
    cols = []
    for i in range(x.size):
        t = np.zeros(x.size, dtype=x.dtype)
        t[i] = 1
        cols.append(np.asarray(jax.jvp(f, (x,), (jnp.asarray(t.reshape(x.shape)),))[1]))
    y_shape = cols[0].shape
    return np.stack(cols, axis=-1).reshape(y_shape + x.shape)


def batch_jacobian_einsum(f, x):
    full = jax.jacrev(f)(x)
    blocks = jnp.einsum("bibj->bij", full)
    off = full * (1 - jnp.eye(x.shape[0], dtype=x.dtype))[:, None, :, None]
    return blocks, bool(jnp.all(off == 0))


def batch_jacobian_indexing(f, x):
    full = jax.jacfwd(f)(x)
    b = jnp.arange(x.shape[0])
    mask = jnp.eye(x.shape[0], dtype=bool)[:, None, :, None]
    return full[b, :, b, :], jnp.all(jnp.where(mask, 0.0, full) == 0)


def gauss_newton_jvp_then_vjp(f, loss, x, v):
    z, f_vjp = jax.vjp(f, x)
    _, u = jax.jvp(f, (x,), (v,))
    _, hu = jax.jvp(jax.grad(loss), (z,), (u,))
    return f_vjp(hu)[0]


def gauss_newton_linearize_and_transpose(f, loss, x, v):
    """Reverse over reverse for the loss's curvature, and J^T as the transpose of J."""
    z, f_jvp = jax.linearize(f, x)
    u = f_jvp(v)
    hu = jax.grad(lambda z: jnp.vdot(jax.grad(loss)(z), u))(z)
    return jax.linear_transpose(f_jvp, x)(hu)[0]


def gauss_newton_by_a_quadratic(f, loss, x, v):
    """G v as the gradient in w of 1/2 (J w)^T H (J v): one more product, no matrix."""
    z = f(x)
    u = jax.jvp(f, (x,), (v,))[1]
    hu = jax.jvp(jax.grad(loss), (z,), (u,))[1]
    return jax.grad(lambda w: jnp.vdot(jax.jvp(f, (x,), (w,))[1], hu))(x)


RIGHT = [
    (check.jacobian_via_vjp, jacobian_vmap_vjp),
    (check.jacobian_via_vjp, jacobian_loop_vjp),
    (check.jacobian_via_jvp, jacobian_vmap_jvp),
    (check.jacobian_via_jvp, jacobian_loop_jvp),
    (check.batch_jacobian, batch_jacobian_einsum),
    (check.batch_jacobian, batch_jacobian_indexing),
    (check.gauss_newton_product, gauss_newton_jvp_then_vjp),
    (check.gauss_newton_product, gauss_newton_linearize_and_transpose),
    (check.gauss_newton_product, gauss_newton_by_a_quadratic),
]


@pytest.mark.parametrize(("checker", "fn"), RIGHT, ids=[fn.__name__ for _, fn in RIGHT])
def test_right_answers_pass(checker, fn):
    report = checker(fn)
    assert report.passed, str(report)
    assert report.cases_checked >= 20


def _compiled(programs: dict, fn) -> int:
    """How many programs the harness compiled for the learner's fn (one per signature)."""
    return sum(program._cache_size() for key, program in programs.items() if key[0] is fn)


@pytest.mark.parametrize(
    ("checker", "right", "programs", "edges", "names"),
    [
        (check.jacobian_via_vjp, jacobian_vmap_vjp, "_PROGRAMS", ch.VECTOR_EDGES, 1),
        (check.batch_jacobian, batch_jacobian_indexing, "_PROGRAMS", ch.BATCH_EDGES, 1),
        (
            check.gauss_newton_product,
            gauss_newton_jvp_then_vjp,
            "_PROGRAMS",
            ch.GAUSS_NEWTON_EDGES,
            2,
        ),
    ],
    ids=["jacobian_via_vjp", "batch_jacobian", "gauss_newton_product"],
)
def test_a_notebook_check_compiles_one_program_per_edge_case_signature(
    checker, right, programs, edges, names
):
    """A first check's time is mostly compiling the learner's program, once per (test
    function, shape, dtype) its cases meet: the drawn cases of a notebook take the edge
    cases' signatures, so it compiles 5 to 7 programs (12 to 16 before, over 1 s)."""

    def fresh(*args):  # a function this process has not compiled yet
        return right(*args)

    report = checker(fresh)
    assert report.passed, str(report)
    signatures = ch._signatures(edges, names)
    assert len(signatures) == len(edges)
    assert _compiled(getattr(harness, programs), fresh) == len(signatures)


def test_grading_cases_meet_signatures_beyond_the_edge_cases():
    """Only the notebook keeps to the edge signatures: grading draws from the whole menus."""
    profile = grading_profile(1)
    cases = draw_cases(ch.BATCH_JACOBIAN.strategy(profile), profile)
    drawn = {(c.arg("name"), c.arg("x").shape, c.arg("x").dtype) for c in cases}
    assert len(drawn - set(ch._signatures(ch.BATCH_EDGES, 1))) >= 5


# ---------------------------------------------------------------- wrong answers learners write


# The declared mistakes (axes swapped or reversed, ones as cotangent or tangent, columns
# reshaped, the batch summed or taken one by one, a wrong flag, Gauss-Newton mix-ups) are run by
# tests/judging/test_mistakes.py; this wrong answer gets the structure hint.


def jacobian_jacrev(f, x):  # section 1's jax.jacrev, copied
    return jax.jacrev(f)(x)


def jacobian_jacfwd(f, x):
    return jax.jacfwd(f)(x)


@pytest.mark.parametrize(
    ("checker", "fn", "words"),
    [
        (check.jacobian_via_vjp, jacobian_jacrev, ("jacobian_via_vjp must build", "jax.jacrev")),
        (check.jacobian_via_jvp, jacobian_jacfwd, ("jacobian_via_jvp must build", "jax.jacfwd")),
        (check.jacobian_via_jvp, jacobian_jacrev, ("from jax.jvp", "jax.jacrev")),
    ],
)
def test_a_jacobian_builder_fails_on_the_method(checker, fn, words):
    report = checker(fn)
    assert report.status == "failed", str(report)
    for word in words:
        assert word in report.headline(), str(report)


def _jacrev_compiled(f, x):
    return jax.jacrev(f)(x)


_jacrev_compiled = jax.jit(_jacrev_compiled, static_argnums=0)


def jacobian_by_a_jitted_builder(f, x):
    """jax.jacrev inside the learner's own jitted helper: after the first check, its trace
    is cached, and a call with the same f and shapes runs without its Python."""
    return _jacrev_compiled(f, x)


@pytest.mark.parametrize("checker", [check.jacobian_via_vjp, check.jacobian_via_jvp])
def test_a_builder_in_a_jitted_helper_is_found_on_every_check(checker):
    reports = [checker(jacobian_by_a_jitted_builder) for _ in range(3)]
    for report in reports:
        assert report.status == "failed", str(report)
        assert "it used jax.jacrev" in report.headline(), str(report)


@pytest.mark.parametrize(
    ("checker", "right", "edges", "names"),
    [
        (check.jacobian_via_vjp, jacobian_vmap_vjp, ch.VECTOR_EDGES, 1),
        (check.gauss_newton_product, gauss_newton_jvp_then_vjp, ch.GAUSS_NEWTON_EDGES, 2),
    ],
    ids=["jacobian_via_vjp", "gauss_newton_product"],
)
def test_the_method_is_read_from_the_trace_that_is_compiled(checker, right, edges, names):
    """The learner's code is traced once per signature of a check, and that one trace is
    both where its builders are looked for and the program that runs (a second trace for
    the method cost a grader's child as much as compiling)."""
    traced = []

    def counted(*args):
        traced.append(args[-1].shape)
        return right(*args)

    for _ in range(2):  # a second check traces again: no verdict rests on an earlier one
        traced.clear()
        report = checker(counted)
        assert report.passed, str(report)
        assert len(traced) == len(ch._signatures(edges, names))


def copied_vjp_demo(f, x):
    """Section 2's demo, one-hot rows of a vector y pulled back and stacked, for every row."""
    y, vjp_fn = jax.vjp(f, x)
    return jnp.stack([vjp_fn(e)[0] for e in jnp.eye(y.size, dtype=y.dtype)])


def copied_jvp_demo(f, x):
    """Section 3's demo, one-hot tangents of a vector x pushed forward, for every column."""
    return jnp.stack([jax.jvp(f, (x,), (e,))[1] for e in jnp.eye(x.size, dtype=x.dtype)], -1)


def copied_batch_demo(f, x):
    """Section 1's demo for example 0 only (its own block, its blocks against the others)."""
    full = jax.jacrev(f)(x)
    return full[0, :, 0, :][None], bool(jnp.all(full[0, :, 1:, :] == 0))


@pytest.mark.parametrize(
    ("checker", "fn"),
    [
        (check.jacobian_via_vjp, copied_vjp_demo),
        (check.jacobian_via_jvp, copied_jvp_demo),
        (check.batch_jacobian, copied_batch_demo),
    ],
    ids=["vjp", "jvp", "batch"],
)
def test_the_nearest_demo_copied_fails_with_a_hint(checker, fn):
    report = checker(fn)
    assert report.status == "failed", str(report)
    assert report.failure.hint, str(report)


# The notebook imports coursekit.jacobians for its measurements; its programs are jax.jacfwd,
# jax.jacrev, jax.hessian and the HVP the notebook passes in. An answer that runs the course's
# code is refused before it runs (the measurements themselves take seconds), whatever it returns.


def jacobian_beside_the_course_measurement(f, x):
    measure_modes([x.size], n_out=2, hidden=4, repeats=1)
    return jacobian_vmap_vjp(f, x)


def jvp_jacobian_beside_the_course_measurement(f, x):
    measure_modes([x.size], n_out=2, hidden=4, repeats=1)
    return jacobian_vmap_jvp(f, x)


def batch_jacobian_beside_the_course_measurement(f, x):
    measure_modes([x.shape[1]], n_out=2, hidden=4, repeats=1)
    return batch_jacobian_einsum(f, x)


def gauss_newton_beside_the_course_measurement(f, loss, x, v):
    measure_second_order([max(x.size, 2)], lambda f, x, v: x, repeats=1)
    return gauss_newton_jvp_then_vjp(f, loss, x, v)


COURSE_CODE = [
    (check.jacobian_via_vjp, jacobian_beside_the_course_measurement, "jacobian_via_vjp"),
    (check.jacobian_via_jvp, jvp_jacobian_beside_the_course_measurement, "jacobian_via_jvp"),
    (check.batch_jacobian, batch_jacobian_beside_the_course_measurement, "batch_jacobian"),
    (
        check.gauss_newton_product,
        gauss_newton_beside_the_course_measurement,
        "gauss_newton_product",
    ),
]


@pytest.mark.parametrize(
    ("checker", "fn", "exercise"), COURSE_CODE, ids=[name for _, _, name in COURSE_CODE]
)
def test_an_answer_running_the_course_helpers_is_refused(checker, fn, exercise):
    report = checker(fn)
    assert report.status == "failed", str(report)
    assert f"Your {exercise} calls the course's own helper measure_" in str(report), str(report)


# The Gauss-Newton answer's lines: the push of v through f, the loss's curvature on it, and
# the pullback of that (section 2 and 3's `jax.vjp(f, x)` and `jax.jvp(f, (x,), ...)` are the
# chapter's API, not the answer).
GAUSS_NEWTON_ANSWER = ("f_vjp(hjv)", "jax.grad(loss)", "jax.jvp(f, (x,), (v,))")


def _cells_before(name: str) -> list[str]:
    notebook = nbformat.read(ROOT / "course" / "07_jacobians.ipynb", as_version=4)
    sources = [cell.source for cell in notebook.cells]
    (at,) = [i for i, src in enumerate(sources) if f"def {name}(" in src]
    return sources[: at + 1]


@pytest.mark.parametrize(
    ("name", "answers"),
    [
        ("jacobian_via_vjp", ("reshape((y.size", "reshape(y.shape + x.shape", "vmap(vjp_fn)(")),
        ("jacobian_via_jvp", ("moveaxis", "reshape(y.shape + x.shape")),
        ("batch_jacobian", ('"bibj->bij"', "np.eye(7")),
        ("gauss_newton_product", GAUSS_NEWTON_ANSWER),
    ],
)
def test_no_answer_is_on_screen_before_its_exercise(name, answers):
    """What the learner reads up to the exercise (prose, code, its docstring) holds none of the
    answer's lines."""
    for answer in answers:
        assert not [text for text in _cells_before(name) if answer in text], answer


GAUSS_NEWTON_RECIPE = (*GAUSS_NEWTON_ANSWER, "grad(loss)", "(v,))[1])", "pullback(hu")


def test_no_cell_of_the_learner_copy_gives_the_gauss_newton_composition():
    """gauss_newton_product is the chapter's last exercise, but a learner reads on past a
    failing check (and the summary): no cell of the learner copy, before or after it, names
    its composition (the HVP demo before it is one of its three parts, on the loss alone)."""
    notebook = nbformat.read(ROOT / "course" / "07_jacobians.ipynb", as_version=4)
    for answer in GAUSS_NEWTON_RECIPE:
        assert not [cell.source for cell in notebook.cells if answer in cell.source], answer


def test_no_gauss_newton_message_gives_the_composition():
    """A message is on screen after any first failure: none holds the answer's code (a mistake
    hint says in words what to do instead; the fallback for wrong values states the formula,
    never the calls)."""
    said = [
        ch.GAUSS_NEWTON.references_text,
        ch.GAUSS_NEWTON.nudge,
        *(m.hint for m in ch.GAUSS_NEWTON.mistakes),
        *ch.GAUSS_NEWTON.hints_by_kind.values(),
        harness.GAUSS_NEWTON_METHOD,
    ]
    for answer in GAUSS_NEWTON_RECIPE:
        assert not [text for text in said if answer in text], answer


def gauss_newton_by_columns(f, loss, x, v):
    """J built one JVP column at a time (no builder named), then J^T H J v."""
    z = f(x)
    eye = jnp.eye(x.size, dtype=x.dtype).reshape((x.size, *x.shape))
    columns = jax.vmap(lambda t: jax.jvp(f, (x,), (t,))[1])(eye).reshape(x.size, z.size).T
    hu = jax.jvp(jax.grad(loss), (z,), ((columns @ v.ravel()).reshape(z.shape),))[1]
    return (columns.T @ hu.ravel()).reshape(x.shape)


def gauss_newton_by_matrices(f, loss, x, v):
    z = f(x)
    jacobian = jax.jacfwd(f)(x).reshape(z.size, x.size)
    hessian = jax.hessian(loss)(z).reshape(z.size, z.size)
    return (jacobian.T @ hessian @ jacobian @ v.ravel()).reshape(x.shape)


@pytest.mark.parametrize(
    ("fn", "says"),
    [
        (gauss_newton_by_matrices, "it used jax.jacfwd"),
        (gauss_newton_by_columns, "as many entries as the Jacobian of f"),
    ],
    ids=["builders", "columns"],
)
def test_a_gauss_newton_product_that_builds_a_matrix_fails_on_the_method(fn, says):
    """Right values, built through J: refused, by the builder's name or by the jaxpr's sizes."""
    report = check.gauss_newton_product(fn)
    assert report.status == "failed", str(report)
    assert "gauss_newton_product must compute G v without a matrix" in str(report), str(report)
    assert says in str(report), str(report)


def test_the_test_models_and_losses_compute_nothing_as_large_as_the_jacobian():
    """The method check counts arrays as large as J: the right answer must hold none, on every
    hand-picked case with more than one entry (else it would be refused for the model's own)."""
    for case in ch.GAUSS_NEWTON.edge_cases():
        model, loss, x, v = case.values()
        if x.size > 1:
            answer = functools.partial(
                gauss_newton_jvp_then_vjp,
                harness.vector_function(model),
                harness.loss_function(loss),
            )
            with harness._precision_for((x, v)):
                assert harness.matrix_in(jax.make_jaxpr(answer)(x, v), model, x) == "", case


def test_the_gauss_newton_matrix_is_not_the_hessian_of_the_composition():
    """The mistake this exercise is about differs from the answer on the check's cases where
    the model is curved (every model here), and agrees for a linear model."""
    full = next(m for m in ch.GAUSS_NEWTON.mistakes if m.name == "hessian_of_the_composition")
    case = ch.GAUSS_NEWTON.edge_cases()[0]
    model, loss_name, x0, v0 = case.values()
    f, loss = harness.vector_function(model), harness.loss_function(loss_name)
    expected = gauss_newton_jvp_then_vjp(f, loss, jnp.asarray(x0), jnp.asarray(v0))
    wrong = full.answer(f, loss, jnp.asarray(x0), jnp.asarray(v0))
    assert not np.allclose(expected, wrong, rtol=1e-3, atol=1e-4)
    x = np.linspace(-1, 1, 4).astype(np.float32)
    v = np.cos(np.arange(4)).astype(np.float32)
    linear = lambda t: jnp.cumsum(2.0 * t)  # noqa: E731
    loss = harness.loss_function("coupled_squares")
    np.testing.assert_allclose(
        full.answer(linear, loss, x, v), gauss_newton_jvp_then_vjp(linear, loss, x, v), rtol=1e-5
    )


def batch_only_blocks(f, x):
    return batch_jacobian_einsum(f, x)[0]


def test_batch_jacobian_returning_only_the_blocks_is_told_the_structure():
    report = check.batch_jacobian(batch_only_blocks)
    assert report.status == "failed", str(report)
    assert "should return a tuple (jacobian, independent)" in str(report), str(report)


def test_not_answered_stub_is_reported_as_such():
    def jacobian_via_vjp(f, x):
        raise NotImplementedError("Exercise jacobian_via_vjp: replace this line with your code.")

    assert check.jacobian_via_vjp(jacobian_via_vjp).status == "not answered"


def test_failing_case_names_the_test_function():
    ones_rows = next(m.answer for m in ch.JACOBIAN_VIA_VJP.mistakes if m.name == "ones_rows")
    report = check.jacobian_via_vjp(ones_rows)
    assert "input name" in str(report)


# ---------------------------------------------------------------- the references and the cases


def _tf_tape_jacobian(fn, x):
    import tensorflow as tf  # here, not at the top: the GPU check runs this file without it

    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
    return tape, y, x


@pytest.mark.parametrize("case", ch.JACOBIAN_VIA_VJP.edge_cases(), ids=lambda c: c.label)
def test_tf_reference_is_what_tape_jacobian_computes(case):
    import tensorflow as tf  # here, not at the top: the GPU check runs this file without it

    name, x = case.values()
    tape, y, xt = _tf_tape_jacobian(lambda t: ch._tf_vector_function(tf, name, t), x)
    expected = tape.jacobian(y, xt).numpy()
    (ours,) = ch.JACOBIAN_VIA_VJP.tf_reference(tf, case)
    assert ours.shape == expected.shape == tuple(y.shape) + x.shape
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", ch.BATCH_JACOBIAN.edge_cases(), ids=lambda c: c.label)
def test_tape_batch_jacobian_is_right_only_for_independent_rows(case):
    import tensorflow as tf  # here, not at the top: the GPU check runs this file without it

    name, x = case.values()
    tape, y, xt = _tf_tape_jacobian(lambda t: ch._tf_batch_function(tf, name, t), x)
    batch = tape.batch_jacobian(y, xt).numpy()
    blocks, independent = ch.BATCH_JACOBIAN.tf_reference(tf, case)
    summed_over_batch = next(m for m in ch.BATCH_JACOBIAN.mistakes if m.name == "summed_over_batch")
    summed, _ = ch.BATCH_JACOBIAN.run_mistake(summed_over_batch, case)
    np.testing.assert_allclose(batch, summed, rtol=1e-4, atol=1e-5)
    if bool(independent):
        np.testing.assert_allclose(batch, blocks, rtol=1e-4, atol=1e-5)
    else:
        assert not np.allclose(batch, blocks, atol=1e-3)
    assert bool(independent) == (name in ("dense_tanh", "softmax_rows") or x.shape[0] == 1)


def _exercise_cases(exercise):
    return exercise.edge_cases() + draw_cases(exercise.strategy(NOTEBOOK), NOTEBOOK)[:12]


@pytest.mark.parametrize("case", ch.GAUSS_NEWTON.edge_cases(), ids=lambda c: c.label)
def test_tf_gauss_newton_reference_is_the_whole_matrices_product(case):
    """TensorFlow's three products equal J^T H J v built from tape.jacobian and nested tapes."""
    import tensorflow as tf  # here, not at the top: the GPU check runs this file without it

    model, loss, x, v = case.values()
    xt = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        z = ch._tf_vector_function(tf, model, xt)
    jacobian = tf.reshape(tape.jacobian(z, xt), [-1, x.size]).numpy()
    zt = tf.constant(z)
    with tf.GradientTape() as outer:
        outer.watch(zt)
        with tf.GradientTape() as inner:
            inner.watch(zt)
            value = ch._tf_loss_function(tf, loss, zt)
        g_z = inner.gradient(value, zt)
    hessian = tf.reshape(outer.jacobian(g_z, zt), [z.shape.num_elements()] * 2).numpy()
    expected = (jacobian.T @ hessian @ jacobian @ v.ravel()).reshape(x.shape)
    (ours,) = ch.GAUSS_NEWTON.tf_reference(tf, case)
    np.testing.assert_allclose(ours, expected, rtol=1e-4, atol=1e-5)


def test_cases_are_float32_and_float64_with_multi_axis_inputs_and_outputs():
    exercise = ch.JACOBIAN_VIA_VJP
    cases = exercise.edge_cases() + draw_cases(exercise.strategy(NOTEBOOK), NOTEBOOK)
    assert {case.arg("x").dtype for case in cases} == set(ch.FLOAT_DTYPES)
    assert {case.arg("x").shape for case in cases if case.arg("x").dtype == ch.FLOAT64} <= set(
        ch.FLOAT64_SHAPES["vector"]
    )
    assert {case.arg("name") for case in cases} == set(ch.VECTOR_NAMES)
    assert any(case.arg("x").ndim >= 2 for case in cases)
    assert any(case.arg("x").ndim == 0 for case in cases)


def test_invoke_calls_eagerly_when_jit_fails_and_is_resolved_once():
    invoke = ch.JACOBIAN_VIA_VJP.invoker()
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
    by_jit = invoke(jacobian_vmap_vjp, "outer", x)
    eager_only = invoke(jacobian_loop_vjp, "outer", x)  # np.asarray on tracers
    assert isinstance(by_jit, np.ndarray) and by_jit.shape == (2, 3, 3, 2, 3)
    np.testing.assert_allclose(by_jit, eager_only, rtol=1e-6)
    assert ch.GAUSS_NEWTON.invoker() is ch.GAUSS_NEWTON.invoker()


def test_exercises_declare_jax_and_chapter():
    assert [e.name for e in ch.EXERCISES] == [
        "jacobian_via_vjp",
        "jacobian_via_jvp",
        "batch_jacobian",
        "gauss_newton_product",
    ]
    assert all(e.frameworks == ("jax",) and e.chapter == "07" for e in ch.EXERCISES)
