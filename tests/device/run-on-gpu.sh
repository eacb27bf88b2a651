#!/usr/bin/env bash
# The GPU check (README "Supported versions"): the JAX chapters' check tests, right and wrong
# answers, with the learner's JAX code on a CUDA GPU, chapters 02 and 03's (the learner's numpy
# engine and rules, whose JAX references must stay on the CPU device), plus
# tests/device/gpu_checks.py.
#
# For a machine whose python3 has JAX with CUDA but no internet: pure-Python dependencies the
# image lacks come as wheels in $WHEELS (`pip download nbformat nbclient babel -d DIR`
# elsewhere, for the machine's Python version and platform). TensorFlow is not installed
# there (see jax_only_references.py).
# -p no:benchmark: the image's pytest-benchmark warns under xdist, and warnings are errors here.
# The tests that ask TensorFlow itself are deselected: chapter 07's test_tf_* and test_tape_*,
# chapter 02's two that compare JAX's and TensorFlow's derivatives at a tie and at relu's kink.
set -euo pipefail
WHEELS=${WHEELS:-.gpu/wheels}
WORKERS=${WORKERS:-8}  # pytest-xdist processes sharing the one GPU
# Each JAX process would otherwise take 75% of the GPU's memory at its first array.
export XLA_PYTHON_CLIENT_PREALLOCATE=false
PY=${PY:-python3}  # the image's Python with JAX (a venv of it would not see its packages)
SITE=${SITE:-/tmp/gpu-site}
# Only what the image lacks (it has attrs and typing_extensions), beside it, not over it.
ls "$WHEELS"/*.whl | grep -v -e attrs- -e typing_extensions- |
  xargs "$PY" -m pip install --quiet --no-index --no-deps --upgrade --target "$SITE"
export PYTHONPATH="$SITE:$PWD"
"$PY" -c 'import jax, numpy; print("jax", jax.__version__, "numpy",
  numpy.__version__, "devices", jax.devices())'
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
"$PY" -m pytest -p tests.device.jax_only_references -q -rfEP --durations=5 -n "$WORKERS" --dist load \
  -o addopts="-p no:cacheprovider" -p no:benchmark \
  tests/device/gpu_checks.py \
  tests/exercises/test_check_ch02.py tests/exercises/test_check_ch02_rules.py \
  tests/exercises/test_check_ch03.py tests/exercises/test_check_ch05.py tests/exercises/test_check_ch06.py \
  tests/exercises/test_check_ch07.py \
  -k "not test_tf_ and not test_tape_ and not tensorflow_gives and not in_both_frameworks" \
  "$@"
