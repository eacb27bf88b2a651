"""Every declared mistake, run as a learner's function through the in-notebook check, fails
with its own hint; every solution notebook's function passes.

The mistakes are the exercises' own data (wrong learner functions), so this one test covers
every chapter: a new mistake is tested the moment it is declared.
"""

from __future__ import annotations

import ast
import functools
import types
from functools import cache
from pathlib import Path
from typing import Any

import nbformat
import numpy as np
import pytest
from IPython.core.inputtransformer2 import TransformerManager

from autograder import harness
from autograder.exercises import EXERCISES
from autograder.judging import references
from autograder.judging.attempts import call_learner, fails, failure_to_show
from autograder.judging.cases import NOTEBOOK
from autograder.judging.engine import _notebook_table, check_function
from autograder.judging.exercise import SEVERAL_MISTAKES, Exercise, Mistake
from autograder.judging.report import FAILED, PASSED

ROOT = Path(__file__).resolve().parents[2]
DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)

MISTAKES = [
    pytest.param(exercise, mistake, id=f"{exercise.name}-{mistake.name}")
    for exercise in EXERCISES.values()
    for mistake in exercise.mistakes
]


@pytest.mark.parametrize(("exercise", "mistake"), MISTAKES)
def test_a_declared_mistake_fails_with_its_hint(exercise: Exercise, mistake: Mistake) -> None:
    report = check_function(exercise, mistake.answer)
    assert report.status == FAILED, f"{mistake.name} passed the check"
    assert report.failure is not None
    assert mistake.hint in report.failure.hint, (
        f"{mistake.name} got another hint: {report.failure.hint!r}"
    )


def _definitions_only(source: str) -> str:
    """The imports, functions and classes of a cell (what a later exercise cell may use),
    without its demonstrations, which may be slow."""
    tree = ast.parse(TransformerManager().transform_cell(source))
    tree.body = [node for node in tree.body if isinstance(node, DEFINITIONS)]
    return ast.unparse(tree)


def _is_exercise_cell(source: str) -> bool:
    return "### BEGIN SOLUTION" in source


@cache
def solution_namespace(chapter: str) -> dict[str, Any]:
    """The solution notebook of a chapter run as a learner would have it: every exercise cell
    whole (some finish a definition with a call, e.g. `.defvjp(fwd, bwd)`) and the
    definitions of the other cells, check cells left out."""
    (path,) = (ROOT / "solutions").glob(f"{chapter}_*.ipynb")
    namespace: dict[str, Any] = {"__name__": f"solution_{chapter}"}
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        code = cell.source if _is_exercise_cell(cell.source) else _definitions_only(cell.source)
        exec(compile(code, f"{path.name}", "exec"), namespace)
    return namespace


@pytest.mark.parametrize("exercise", list(EXERCISES.values()), ids=list(EXERCISES))
def test_the_solution_passes(exercise: Exercise) -> None:
    solution = solution_namespace(exercise.chapter)[exercise.name]
    report = check_function(exercise, solution)
    assert report.status == PASSED, str(report)


# ---------------------------------------------------------------- the course's own code


def calling(helper: Any) -> Any:
    """A learner's answer that hands its arguments to `helper` (held in a closure)."""

    def answer(*args: Any) -> Any:
        return helper(*args)

    return answer


def _course_function(exercise: Exercise) -> Any:
    """A function of the course's own code: a declared mistake of the exercise (the exercises'
    module), else the harness's plain call (the answer is refused before anything runs)."""
    return exercise.mistakes[0].answer if exercise.mistakes else harness.plain_call


@pytest.mark.parametrize("exercise", list(EXERCISES.values()), ids=list(EXERCISES))
def test_an_answer_that_calls_the_course_s_code_is_refused(exercise: Exercise) -> None:
    """The exercises' modules keep private helpers that do part of an answer, and a learner's
    kernel can import them: every exercise's check refuses an answer that calls any of the
    course's code, before its first case (no case is shown: every case fails alike)."""
    answer = calling(_course_function(exercise))
    report = check_function(exercise, answer)
    assert report.status == FAILED and report.failure is not None, str(report)
    assert "the course's own code" in report.failure.message, report.failure.message
    assert report.failure.input_independent


def _n_step_td_loss_ways() -> list[Any]:
    """n_step_td_loss from chapter 04's private `_n_step_returns` (the return, as two matrix
    products) and tf.stop_gradient: right values, reached five ways a name can hide."""
    from autograder.exercises import ch04_custom_gradient_tf as module

    tf = references.tensorflow()

    class XP:  # what _n_step_returns calls of its `xp`
        matmul = staticmethod(tf.linalg.matmul)
        asarray = staticmethod(lambda a, dtype=None: tf.constant(a, dtype=dtype))

    def using(returns: Any) -> Any:
        def n_step_td_loss(values: Any, target_values: Any, rewards: Any, gamma: Any, n: Any):
            target = tf.stop_gradient(returns(XP, target_values, rewards, gamma, n))
            return 0.5 * (values - target) ** 2

        return n_step_td_loss

    helper = module._n_step_returns
    copied = types.FunctionType(helper.__code__, dict(vars(module)), "returns")
    held = {"returns": helper}
    return [
        using(helper),  # an alias in a closure
        using(functools.partial(helper)),  # wrapped
        using(copied),  # a copy of its code, with a name of the learner's
        using(lambda *args: held["returns"](*args)),  # in a container
        using(module.__dict__["_n_step_returns"]),
    ]


def test_chapter_04_s_private_helper_is_refused_however_it_is_reached() -> None:
    """Found by trying it: `from autograder.exercises.ch04_custom_gradient_tf import
    _n_step_returns` and tf.stop_gradient once passed check.n_step_td_loss."""
    for answer in _n_step_td_loss_ways():
        report = check_function(EXERCISES["n_step_td_loss"], answer)
        assert report.status == FAILED and report.failure is not None
        assert "the course's own code" in report.failure.message, report.failure.message


# ---------------------------------------------------------------- hints that named the wrong
# mistake: on the shrunk case alone, each of these wrong answers gave the output of
# another declared mistake. Each is written here as a learner would write it.


def predict_first_axis_only(jacobian: np.ndarray, x_shape: tuple[int, ...]) -> np.ndarray:
    return jacobian.sum(axis=0)


def qa_batch_mean(
    x: np.ndarray, W: np.ndarray, b: np.ndarray, y0: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The loss divided by the batch size only, not by every entry of y."""
    y = np.tanh(x @ W + b)
    g_h = 2 * (y - y0) / x.shape[0] * (1 - y**2)
    return x.T @ g_h, g_h.sum(axis=0)


def clip_cotangent_norm_hard_coded(x: Any, max_norm: float) -> Any:
    import tensorflow as tf

    @tf.custom_gradient
    def identity(x: Any) -> Any:
        return tf.identity(x), lambda g: tf.clip_by_norm(g, 1.0)

    return identity(x)


@cache
def soft_threshold_straight_through() -> Any:
    """A custom_jvp soft_threshold whose rule passes the tangent through everywhere, the
    dead zone included. On a case whose only points in the dead zone are its ends x = +-1,
    it gives what the rule with live ends (slope 1 at +-1) gives."""
    import jax

    @jax.custom_jvp
    def soft_threshold(x: Any) -> Any:
        return jax.numpy.sign(x) * jax.numpy.maximum(jax.numpy.abs(x) - 1, 0)

    soft_threshold.defjvp(lambda primals, tangents: (soft_threshold(*primals), tangents[0]))
    return soft_threshold


def soft_threshold_straight_through_answer(x: Any) -> Any:
    return soft_threshold_straight_through()(x)


def batch_jacobian_batches_of_one(f: Any, x: Any) -> tuple[Any, Any]:
    """Each example's Jacobian from f on that example alone (a batch of one)."""
    import jax

    blocks = jax.numpy.stack([jax.jacrev(lambda row: f(row[None])[0])(x[i]) for i in range(len(x))])
    full = jax.jacrev(f)(x)
    off_diagonal = full * (1 - jax.numpy.eye(len(x), dtype=x.dtype)[:, None, :, None])
    return blocks, jax.numpy.all(off_diagonal == 0)


def _hint(exercise: str, mistake: str) -> str:
    return next(m.hint for m in EXERCISES[exercise].mistakes if m.name == mistake)


MISNAMED = [  # exercise, the learner's wrong answer, the hint it got, the hint it should get
    ("soft_threshold", soft_threshold_straight_through_answer, "live_ends", "straight_through"),
    ("predict_tape_gradient", predict_first_axis_only, "sums_x_axes", "first_axis_only"),
    ("clip_cotangent_norm", clip_cotangent_norm_hard_coded, "not_clipped", "fixed_limit"),
    ("qa_gradients", qa_batch_mean, "sum_not_mean_0_0", "batch_mean_0_0"),
]


@pytest.mark.parametrize(
    ("name", "answer", "wrong", "right"), MISNAMED, ids=[row[0] for row in MISNAMED]
)
def test_a_hint_names_the_mistake_made_not_a_look_alike(
    name: str, answer: Any, wrong: str, right: str
) -> None:
    report = check_function(EXERCISES[name], answer)
    assert report.status == FAILED and report.failure is not None
    assert _hint(name, wrong) not in report.failure.hint
    assert _hint(name, right) in report.failure.hint


TOGETHER = [  # exercise, the learner's wrong answer, its mistake, the look-alike
    # On batchnorm and batch_centred (the batch-mixing test functions) every output sums to
    # zero over the batch, so summing over the batch and differentiating each example alone
    # both give zero blocks.
    ("batch_jacobian", batch_jacobian_batches_of_one, "batches_of_one", "summed_over_batch"),
]


@pytest.mark.parametrize(
    ("name", "answer", "right", "look_alike"), TOGETHER, ids=[row[0] for row in TOGETHER]
)
def test_mistakes_no_failing_case_tells_apart_are_named_together(
    name: str, answer: Any, right: str, look_alike: str
) -> None:
    report = check_function(EXERCISES[name], answer)
    assert report.status == FAILED and report.failure is not None
    assert report.failure.hint.startswith(SEVERAL_MISTAKES)
    assert _hint(name, right) in report.failure.hint
    assert _hint(name, look_alike) in report.failure.hint


def test_the_grader_names_a_mistake_by_all_its_failing_cases() -> None:
    """The grader shows its smallest failing case; the hint must hold on the others too.
    On a failing case whose only dead-zone points are x = +-1, passing the tangent through
    everywhere looks like a rule with live ends."""
    exercise = EXERCISES["soft_threshold"]
    cases, outputs, _ = _notebook_table(exercise, NOTEBOOK)
    answer = soft_threshold_straight_through_answer
    attempts = [call_learner(answer, case, exercise) for case in cases]
    failing = [
        (case, attempt, expected)
        for case, attempt, expected in zip(cases, attempts, outputs, strict=True)
        if fails(exercise, attempt, expected)
    ]
    look_alike = next(m for m in exercise.mistakes if m.name == "live_ends")
    assert any(  # a failing case where the two give the same outputs: the trap is real
        all(
            np.array_equal(a, b)
            for a, b in zip(
                attempt.value, call_learner(look_alike.answer, case, exercise).value, strict=True
            )
        )
        for case, attempt, _ in failing
    )
    failure = failure_to_show(exercise, failing)
    assert failure is not None
    assert _hint("soft_threshold", "straight_through") in failure.hint
    assert _hint("soft_threshold", "live_ends") not in failure.hint
