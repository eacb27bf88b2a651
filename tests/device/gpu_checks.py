"""What changes when the learner's JAX code runs on a GPU: it runs there, at full precision,
and the checks' verdicts are the ones the CPU gives.

Run by tests/device/run-on-gpu.sh on a machine with a CUDA GPU, beside the JAX chapters'
check tests; every test here fails on a machine without one (the first says why).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from autograder import check
from autograder.judging import references

SEEN_DEVICES: list[str] = []


def _jacobian_via_vjp(f, x):
    """A right answer that notes where its arrays live."""
    SEEN_DEVICES.extend(sorted(d.platform for d in x.devices()))
    y, vjp_fn = jax.vjp(f, x)
    rows = jnp.eye(y.size, dtype=y.dtype).reshape((y.size, *y.shape))
    return jax.vmap(vjp_fn)(rows)[0].reshape(y.shape + x.shape)


def test_jax_runs_on_a_gpu_here():
    assert jax.default_backend() == "gpu", (
        f"these checks are for a machine with a CUDA GPU; JAX's devices: {jax.devices()}"
    )
    print("devices:", jax.devices(), "jax", jax.__version__)


def test_the_learner_runs_on_the_gpu_and_the_references_on_the_cpu():
    SEEN_DEVICES.clear()
    report = check.jacobian_via_vjp(_jacobian_via_vjp)
    assert report.passed, str(report)
    assert set(SEEN_DEVICES) == {"gpu"}
    assert references.cpu_device().platform == "cpu"


def _float32_matmul_error(precision: str | None) -> float:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, 256)).astype(np.float32)
    b = rng.standard_normal((256, 256)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    with jax.default_matmul_precision(precision):
        got = np.asarray(jax.jit(jnp.matmul)(a, b), dtype=np.float64)
    return float(np.max(np.abs(got - exact)) / np.max(np.abs(exact)))


def test_checks_multiply_float32_exactly_on_this_gpu():
    """The harness runs a learner at "highest": float32 accuracy, not TF32's ~1e-3."""
    highest = _float32_matmul_error("highest")
    default = _float32_matmul_error(None)
    print(
        f"float32 256x256 matmul, largest error / largest entry: default {default:.1e}, "
        f"highest {highest:.1e}"
    )
    assert highest < 1e-5


@pytest.fixture
def bfloat16_setting():
    before = jax.config.jax_default_matmul_precision
    jax.config.update("jax_default_matmul_precision", "bfloat16")
    yield
    jax.config.update("jax_default_matmul_precision", before)


def test_a_learner_runs_at_highest_precision_and_gets_their_setting_back(bfloat16_setting):
    seen: list[str] = []

    def jacobian_via_vjp(f, x):
        seen.append(jax.config.jax_default_matmul_precision)
        return _jacobian_via_vjp(f, x)

    report = check.jacobian_via_vjp(jacobian_via_vjp)
    assert report.passed, str(report)
    assert set(seen) == {"highest"}
    assert jax.config.jax_default_matmul_precision == "bfloat16"


def test_a_checks_fast_compiled_program_runs_on_the_gpu_with_plain_jits_values():
    """`fast_jit`'s options are probed on the CPU device but also compile the programs a
    check builds around a learner's function on the GPU: the GPU's compiler must accept them
    and give the values plain `jax.jit` gives there."""
    from autograder.harness.compiling import fast_compile_options, fast_jit

    def jacobian(x):
        return jax.jacfwd(lambda v: jnp.tanh(v @ v.T).sum(0) * jnp.sin(v[0]))(x)

    x = jnp.asarray(np.random.default_rng(1).standard_normal((6, 6)), jnp.float32)
    with jax.default_matmul_precision("highest"):
        fast = fast_jit(jacobian)(x)
        plain = jax.jit(jacobian)(x)
    print("fast compile options:", fast_compile_options())
    assert {d.platform for d in fast.devices()} == {"gpu"}
    np.testing.assert_allclose(np.asarray(fast), np.asarray(plain), rtol=1e-6, atol=1e-6)
