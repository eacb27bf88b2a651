"""TensorFlow's start-up lines (printed through absl before TF_CPP_MIN_LOG_LEVEL applies) stay
off the grader's stderr; every other line written meanwhile still arrives."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat

from autograder.judging.quiet import STARTUP_LINE, without_startup_lines

from ..submissions import GOOD_MATMUL, GOOD_UNBROADCAST, LEARNER_COPY, ROOT, fill

# Lines TensorFlow 2.x prints while loading, as seen on CPU machines.
STARTUP = [
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "I0000 00:00:1795439971.920394   30990 cudart_stub.cc:31] Could not find cuda drivers on "
    "your machine, GPU will not be used.",
    "I0000 00:00:1732000000.123456   12345 port.cc:153] oneDNN custom operations are on. You may "
    "see slightly different numerical results due to floating-point round-off errors from "
    "different computation orders. To turn them off, set the environment variable "
    "`TF_ENABLE_ONEDNN_OPTS=0`.",
    "2024-05-01 10:00:00.000000: I tensorflow/core/platform/cpu_feature_guard.cc:210] This "
    "TensorFlow binary is optimized to use available CPU instructions in performance-critical "
    "operations.",
    "To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow "
    "with the appropriate compiler flags.",
    "E0000 00:00:1795438739.585241   21623 cuda_platform.cc:52] failed call to cuInit: INTERNAL: "
    "CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)",
]
KEPT = [
    "Traceback (most recent call last):",
    "E0000 00:00:1795438739.585241   21623 some_op.cc:52] Out of memory while allocating",
    "print('Could not find cuda drivers on your machine')",
    "ValueError: This TensorFlow binary is optimized",
]


def test_only_the_known_start_up_lines_are_dropped():
    assert all(STARTUP_LINE.match(line) for line in STARTUP)
    assert not any(STARTUP_LINE.match(line) for line in KEPT)
    mixed = "\n".join([STARTUP[0], KEPT[0], STARTUP[1], KEPT[1]]) + "\n"
    assert without_startup_lines(mixed) == f"{KEPT[0]}\n{KEPT[1]}\n"


def _python(code: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def test_tensorflow_loads_without_start_up_lines_and_other_output_still_arrives():
    done = _python(
        "import os, sys\n"
        "from autograder.judging import quiet, references\n"
        "with quiet.startup_lines_dropped():\n"
        "    os.write(2, b'a real error from C\\n')\n"
        "    print('a real error from Python', file=sys.stderr)\n"
        "tf = references.tensorflow()\n"
        "print(tf.reduce_sum(tf.ones(3)).numpy())\n"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "3.0"
    assert done.stderr.splitlines() == ["a real error from C", "a real error from Python"]


def _grader_python() -> str:
    """This venv's python by its real folder: a symlinked venv is not visible in the sandbox."""
    return str(Path(os.path.realpath(sys.prefix)) / "bin" / Path(sys.executable).name)


def test_the_grader_cli_prints_no_tensorflow_start_up_lines(tmp_path):
    submission = tmp_path / "good.ipynb"
    learner = nbformat.read(LEARNER_COPY, as_version=4)
    nbformat.write(fill(learner, GOOD_UNBROADCAST, GOOD_MATMUL, []), submission)
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    command = [
        _grader_python(),
        "-m",
        "autograder",
        "grade",
        str(submission),
        "--out",
        str(tmp_path / "out"),
        "--seed",
        "5",
        "--timeout",
        "60",
        "--assignment",
        "03",
    ]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "good.ipynb: 2/2" in done.stdout + done.stderr
    noise = [line for line in done.stderr.splitlines() if STARTUP_LINE.match(line)]
    assert noise == []
    for fragment in ("absl::InitializeLog", "cuda drivers", "oneDNN", "TensorFlow binary"):
        assert fragment not in done.stderr
