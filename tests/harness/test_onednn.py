"""TensorFlow runs without oneDNN wherever the course imports it first: TF 2.21's oneDNN batch
matmul corrupts the heap on (6, 1, 6, 5) @ (5, 3) on AVX-512 CPUs (a learner's kernel or the
grader would die while computing that case's reference)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CRASH_CASE = (
    "import tensorflow as tf\n"
    "a, b = tf.ones((6, 1, 6, 5)), tf.ones((5, 3))\n"
    "with tf.GradientTape() as tape:\n"
    "    tape.watch([a, b])\n"
    "    y = a @ b\n"
    "print([t.shape for t in tape.gradient(y, [a, b], output_gradients=tf.ones_like(y))])\n"
)


def run(prelude: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
    return subprocess.run(
        [sys.executable, "-c", prelude + CRASH_CASE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_importing_the_checks_first_keeps_the_crash_case_alive():
    done = run("import autograder.check\n")
    assert done.returncode == 0, done.stderr[-1500:]
    assert "[TensorShape([6, 1, 6, 5]), TensorShape([5, 3])]" in done.stdout


def test_the_kernel_configuration_sets_it_before_any_cell():
    config = (ROOT / "etc" / "ipython" / "ipython_kernel_config.py").read_text()
    namespace: dict = {"c": type("Config", (), {"IPKernelApp": type("App", (), {})()})()}
    env_before = os.environ.pop("TF_ENABLE_ONEDNN_OPTS", None)
    try:
        exec(compile(config, "ipython_kernel_config.py", "exec"), namespace)
        assert os.environ["TF_ENABLE_ONEDNN_OPTS"] == "0"
    finally:
        os.environ.pop("TF_ENABLE_ONEDNN_OPTS", None)
        if env_before is not None:
            os.environ["TF_ENABLE_ONEDNN_OPTS"] = env_before
