"""Checks give the same verdicts on any release and any device.

There is no GPU here, so what a GPU would change is observed from inside: the settings in
force while references and learners' functions run (JAX's matmul precision, TensorFlow's
TF32 switch, x64 as other threads see it), and that the learner's own settings come back.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

from autograder import check, harness
from autograder.exercises import EXERCISES
from autograder.exercises.ch03_unbroadcasting import MATMUL_VJP, UNBROADCAST
from autograder.exercises.ch04_custom_gradient_tf import LOGADDEXP
from autograder.exercises.ch07_jacobians import JACOBIAN_VIA_VJP
from autograder.harness import compiling
from autograder.judging import references
from autograder.judging.cases import Case, Profile, draw_cases
from autograder.judging.engine import check_function, reference_outputs

TINY = Profile("precision-tests", max_examples=4, max_side=3, max_dims=3)


@pytest.fixture
def learner_settings():
    """A learner who asked for fast, inexact matmuls in both frameworks; undone afterwards."""
    jax.config.update("jax_default_matmul_precision", "bfloat16")
    tf.config.experimental.enable_tensor_float_32_execution(True)
    yield
    jax.config.update("jax_default_matmul_precision", None)
    tf.config.experimental.enable_tensor_float_32_execution(True)


@pytest.fixture
def fresh_compile_probe(monkeypatch, tmp_path):
    """Forget which compile options were accepted, before and after the test; the answer is
    kept in a folder of the test's own (none kept there yet)."""
    decision = tmp_path / compiling.DECISION_FILE
    monkeypatch.setattr(compiling, "_decision_path", lambda: decision)
    compiling.fast_compile_options.cache_clear()
    yield decision
    compiling.fast_compile_options.cache_clear()


# ---------------------------------------------------------------- version-specific options


def test_compile_options_this_xla_refuses_are_dropped_silently(
    monkeypatch, fresh_compile_probe, capfd
):
    bogus = {"xla_no_such_option_for_this_test": True}
    monkeypatch.setattr(compiling, "FAST_COMPILE", {**compiling.FAST_COMPILE, **bogus})
    cases = draw_cases(MATMUL_VJP.strategy(TINY), TINY)
    outputs = reference_outputs(MATMUL_VJP, cases)  # raises if an option reached XLA
    report = check_function(UNBROADCAST, _unbroadcast, TINY)
    assert "xla_no_such_option_for_this_test" not in compiling.fast_compile_options()
    assert len(outputs) == len(cases) and report.passed, str(report)
    printed = capfd.readouterr()
    assert printed.out == "" and printed.err == ""


def test_accepted_compile_options_are_probed_once(monkeypatch, fresh_compile_probe):
    calls = []
    probe = compiling._accepted
    monkeypatch.setattr(compiling, "_accepted", lambda *a: calls.append(a) or probe(*a))
    first = compiling.fast_compile_options()
    assert compiling.fast_compile_options() == first
    if first == compiling.FAST_COMPILE:  # this XLA takes every option: one probe of them all
        assert calls == [(compiling.FAST_COMPILE,)]
    else:  # then each on its own
        assert len(calls) == 1 + len(compiling.FAST_COMPILE)
    assert set(first) <= set(compiling.FAST_COMPILE)


def test_options_are_probed_one_by_one_when_one_is_refused(monkeypatch, fresh_compile_probe):
    bogus = {"xla_no_such_option_for_this_test": True}
    every = {**compiling.FAST_COMPILE, **bogus}
    monkeypatch.setattr(compiling, "FAST_COMPILE", every)
    calls = []
    probe = compiling._accepted
    monkeypatch.setattr(compiling, "_accepted", lambda *a: calls.append(a) or probe(*a))
    kept = compiling.fast_compile_options()
    assert calls[0] == (every,) and len(calls) == 1 + len(every)
    assert set(kept) == {name for (options,) in calls[1:] if probe(options) for name in options}
    assert "xla_no_such_option_for_this_test" not in kept


def test_the_answer_is_kept_and_read_back_without_a_probe(monkeypatch, fresh_compile_probe):
    first = compiling.fast_compile_options()
    assert fresh_compile_probe.is_file()
    compiling.fast_compile_options.cache_clear()
    monkeypatch.setattr(compiling, "_accepted", _no_probe)
    assert compiling.fast_compile_options() == first


def _no_probe(*options: Any) -> bool:
    raise AssertionError(f"probed {options}, where the kept answer should have been read")


@pytest.mark.parametrize(
    "damage",
    ["another release", "an option of its own", "not json", "an option refused"],
)
def test_a_kept_answer_not_made_for_this_release_is_probed_again(
    monkeypatch, fresh_compile_probe, damage
):
    """A file from another JAX, one naming what FAST_COMPILE does not ask, or one a refused
    option was since added to (the key holds the options asked), is never trusted."""
    first = compiling.fast_compile_options()
    kept = json.loads(fresh_compile_probe.read_text())
    if damage == "another release":
        kept["key"]["jaxlib"] = "0.0.1"
    elif damage == "an option of its own":
        kept["accepted"].append("xla_dump_to")
    fresh_compile_probe.write_text("{" if damage == "not json" else json.dumps(kept))
    if damage == "an option refused":
        bogus = {"xla_no_such_option_for_this_test": True}
        monkeypatch.setattr(compiling, "FAST_COMPILE", {**compiling.FAST_COMPILE, **bogus})
    compiling.fast_compile_options.cache_clear()
    calls = []
    probe = compiling._accepted
    monkeypatch.setattr(compiling, "_accepted", lambda *a: calls.append(a) or probe(*a))
    again = compiling.fast_compile_options()
    assert calls, "a kept answer it should not trust was used"
    assert again == first  # the refused option is dropped again
    assert json.loads(fresh_compile_probe.read_text())["key"] == json.loads(
        json.dumps(compiling._decision_key())
    )


def test_an_unwritable_folder_only_means_probing(monkeypatch, fresh_compile_probe):
    unwritable = fresh_compile_probe.parent / "missing" / compiling.DECISION_FILE
    monkeypatch.setattr(compiling, "_decision_path", lambda: unwritable)
    assert set(compiling.fast_compile_options()) <= set(compiling.FAST_COMPILE)
    assert not unwritable.parent.exists()


def test_the_programs_of_a_check_share_one_mlir_context(monkeypatch):
    """Making a context per program cost a quarter of lowering it; shared, every program
    lowers to the very module JAX lowers by itself (so its compilation-cache key is too)."""
    from jax._src.interpreters import mlir

    made = []
    fresh = mlir.make_ir_context
    counted = lambda: made.append(1) or fresh()  # noqa: E731
    monkeypatch.setattr(mlir, "make_ir_context", counted)
    monkeypatch.setattr(compiling._CONTEXT, "context", None)
    x = np.linspace(-1, 1, 3, dtype=np.float32)
    for scale in (2.0, 3.0, 4.0):
        compiling.fast_jit(lambda a, scale=scale: jnp.sin(a) * scale)(x)
    assert len(made) == 1
    assert mlir.make_ir_context is counted  # JAX's own again after each program

    def program(a):
        return jnp.cumsum(jnp.tanh(a) * 5.0)

    alone = jax.jit(program).lower(x).as_text()
    with compiling.shared_ir_context():
        shared = jax.jit(program).lower(x).as_text()
    assert shared == alone
    assert len(made) == 2  # the lowering outside the block made its own context


def test_a_check_s_program_computes_what_the_default_compilation_does(fresh_compile_probe):
    """fast_jit changes how long XLA spends compiling, not the values: a Jacobian program
    compiled both ways agrees to the last bits that fused code may round differently."""

    def program(x):
        def f(v):
            return jnp.tanh(v) * jnp.sin(v).sum() + v**3 / (1.0 + v**2)

        return jax.jacrev(f)(x) @ jax.jacfwd(f)(x)

    x = np.linspace(-2.0, 2.0, 7)
    fast = compiling.fast_jit(program)
    assert fast.__name__ == "program"
    with jax.enable_x64(True):
        np.testing.assert_allclose(fast(x), jax.jit(program)(x), rtol=1e-13, atol=1e-13)
        # nested in another trace it is the plain jit (JAX refuses options there)
        np.testing.assert_allclose(jax.jit(fast)(x), fast(x), rtol=1e-13, atol=1e-13)
    assert compiling.fast_compile_options()  # this XLA accepts at least one of them


def _unbroadcast(g, shape):
    leading = g.ndim - len(shape)
    axes = tuple(range(leading)) + tuple(leading + i for i, n in enumerate(shape) if n == 1)
    return np.asarray(g.sum(axis=axes)).reshape(shape)


# ---------------------------------------------------------------- references at full precision


def _record_jax(seen: list[Any]):
    def reference(jax_module: Any, params: dict, arrays: dict) -> tuple:
        seen.append(jax_module.config.jax_default_matmul_precision)
        return (arrays["a"] @ arrays["b"],)

    return reference


def _record_tf(seen: list[Any]):
    def reference(tf_module: Any, case: Case) -> tuple:
        product = tf_module.constant(case.arg("a")) @ tf_module.constant(case.arg("b"))
        tf32 = tf_module.config.experimental.tensor_float_32_execution_enabled()
        seen.append((tf32, product.device))
        return (product.numpy(),)

    return reference


def _matmul_case() -> Case:
    rng = np.random.default_rng(21)
    a, b = (rng.standard_normal((3, 4, 4)).astype(np.float32) for _ in range(2))
    return Case((("a", a), ("b", b)))


def test_references_run_at_full_precision_on_the_cpu_whatever_the_learner_set(
    learner_settings,
):
    jax_seen: list[Any] = []
    tf_seen: list[Any] = []
    references.jax_references(_record_jax(jax_seen), [_matmul_case()])
    references.tensorflow_references(_record_tf(tf_seen), [_matmul_case()])
    assert jax_seen == ["highest"]
    assert tf_seen[0][0] is False and tf_seen[0][1].endswith("CPU:0")
    assert jax.config.jax_default_matmul_precision == "bfloat16"
    assert tf.config.experimental.tensor_float_32_execution_enabled() is True


def test_matmul_references_are_the_float64_math_under_a_bfloat16_setting(learner_settings):
    cases = [
        c for c in draw_cases(MATMUL_VJP.strategy(TINY), TINY) if c.arg("g").dtype == np.float32
    ]
    assert cases, "the matmul strategy draws float32 cases"
    for case, (grad_a, grad_b) in zip(cases, reference_outputs(MATMUL_VJP, cases), strict=True):
        g, a, b = (case.arg(k).astype(np.float64) for k in ("g", "a", "b"))
        exact_a, exact_b = _float64_matmul_vjp(g, a, b)
        # TF32 or bfloat16 products would be off by ~1e-3; float32 ones by ~1e-7.
        np.testing.assert_allclose(grad_a, exact_a, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(grad_b, exact_b, rtol=1e-5, atol=1e-5)


def _float64_matmul_vjp(g, a, b):
    grad_a = g @ np.swapaxes(b, -1, -2)
    grad_b = np.swapaxes(a, -1, -2) @ g
    return _sum_to(grad_a, a.shape), _sum_to(grad_b, b.shape)


def _sum_to(g, shape):
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True)


# ---------------------------------------------------------------- the learner's function


def test_a_jax_learner_runs_at_highest_precision_and_gets_their_setting_back(learner_settings):
    seen: list[Any] = []

    def jacobian_via_vjp(f, x):
        seen.append(jax.config.jax_default_matmul_precision)
        y, vjp_fn = jax.vjp(f, x)
        rows = jnp.eye(y.size, dtype=y.dtype).reshape((y.size, *y.shape))
        return jax.vmap(vjp_fn)(rows)[0].reshape(y.shape + x.shape)

    report = check.jacobian_via_vjp(jacobian_via_vjp)
    assert report.passed, str(report)
    assert seen and set(seen) == {"highest"}
    assert jax.config.jax_default_matmul_precision == "bfloat16"


def test_a_tensorflow_learner_runs_without_tf32_and_gets_their_setting_back(learner_settings):
    seen: list[bool] = []

    def logaddexp(a, b):
        seen.append(tf.config.experimental.tensor_float_32_execution_enabled())
        return tf.reduce_logsumexp(tf.stack([a, b]), axis=0)

    report = check_function(LOGADDEXP, logaddexp, TINY)
    assert report.passed, str(report)
    assert seen and set(seen) == {False}
    assert tf.config.experimental.tensor_float_32_execution_enabled() is True


def test_a_failing_learner_also_gets_their_setting_back(learner_settings):
    def wrong(f, x):
        raise ValueError("not yet")

    assert not check_function(JACOBIAN_VIA_VJP, wrong, TINY).passed
    assert jax.config.jax_default_matmul_precision == "bfloat16"
    assert tf.config.experimental.tensor_float_32_execution_enabled() is True


def test_every_framework_exercise_is_invoked_at_full_precision_and_only_once(learner_settings):
    seen: list[Any] = []

    def learner(x):
        seen.append(jax.config.jax_default_matmul_precision)
        return x + 1

    for exercise in EXERCISES.values():
        invoke = exercise.invoker()
        wrapped = getattr(invoke, "__wrapped__", None)
        assert (wrapped is not None) == bool(exercise.frameworks), exercise.name
        assert not hasattr(wrapped, "__wrapped__"), exercise.name  # wrapped once
    again = dataclasses.replace(JACOBIAN_VIA_VJP, signature="copy(f, x) -> ndarray")
    assert again.invoker() is JACOBIAN_VIA_VJP.invoker()
    assert harness.invoker("", ("jax",))(learner, 1) == harness.invoker("", ())(learner, 1) == 2
    assert seen == ["highest", "bfloat16"]


# ---------------------------------------------------------------- pure_callback and threads


def _bessel_on_another_thread():
    """A correct bessel_i0e whose callback does its numpy on a worker thread.

    It stands in for a GPU, where JAX runs pure_callback's Python on a host-callback
    thread and puts the arguments on the CPU device there (jax.device_put): under a
    thread-local x64 setting that thread would see float32.
    """
    pool = ThreadPoolExecutor(1)

    def on_worker(v):  # XLA hands a callback numpy buffers; JAX moves them to its CPU device
        return np.asarray(jax.device_put(np.asarray(v), jax.devices("cpu")[0]))

    def host(v):
        moved = pool.submit(on_worker, v).result()
        return (np.exp(-np.abs(moved)) * np.i0(moved)).astype(moved.dtype)

    @jax.custom_jvp
    def bessel_i0e(x):
        shape = jax.ShapeDtypeStruct(x.shape, x.dtype)
        return jax.pure_callback(host, shape, x, vmap_method="expand_dims")

    @bessel_i0e.defjvp
    def bessel_i0e_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        y = bessel_i0e(x)
        return y, (jax.scipy.special.i1e(x) - jnp.sign(x) * y) * t

    return bessel_i0e


def test_pure_callback_answers_pass_when_the_callback_runs_on_another_thread():
    assert threading.current_thread() is threading.main_thread()
    report = check.bessel_i0e(_bessel_on_another_thread())
    assert report.passed, str(report)
    assert jax.config.jax_enable_x64 is False
