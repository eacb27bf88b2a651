"""Cases depend on the profile (and seed) alone, not on what the process happens to import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from autograder.exercises import EXERCISES
from autograder.judging.cases import (
    FLOAT_DTYPES,
    NOTEBOOK,
    Case,
    draw_cases,
    dtype_and_shape,
    grading_profile,
)

ROOT = Path(__file__).resolve().parents[2]

DRAW = """
import sys
sys.path.insert(0, {folder!r})
{extra}
from autograder.judging.cases import NOTEBOOK, draw_cases, grading_profile
from autograder.exercises.ch03_unbroadcasting import MATMUL_VJP, UNBROADCAST
for exercise in (UNBROADCAST, MATMUL_VJP):
    for profile in (NOTEBOOK, grading_profile(5)):
        cases = draw_cases(exercise.strategy(profile), profile)
        print(exercise.name, [case.key()[:12] for case in cases])
"""


def draw_in_fresh_process(folder: Path, extra: str) -> str:
    code = DRAW.format(folder=str(folder), extra=extra)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout


def test_cases_do_not_depend_on_other_local_modules(tmp_path):
    # A local module full of literals: Hypothesis would otherwise mix them into its draws.
    literals = ", ".join(f"{v}.{v % 7}5" for v in range(1, 400))
    (tmp_path / "noisy_module.py").write_text(f"VALUES = [{literals}, 0.125, -7.5, 3.0]\n")
    plain = draw_in_fresh_process(tmp_path, "")
    noisy = draw_in_fresh_process(tmp_path, "import noisy_module")
    assert plain and plain == noisy


# Chapters whose learner code runs in TensorFlow or JAX, which trace or compile it once per
# input signature: their cases come from short shape menus, so grading compiles a
# bounded number of times however many cases it draws. numpy chapters draw freely.
FRAMEWORK_CHAPTERS = ("01", "04", "05", "06", "07")
MAX_SIGNATURES = 20
FLOAT32_ONLY = {"qa_gradients", "per_example_gradients"}  # the Q&A's float32 network


@pytest.mark.parametrize(
    "exercise",
    [e for e in EXERCISES.values() if e.chapter in FRAMEWORK_CHAPTERS],
    ids=lambda e: e.name,
)
def test_framework_exercises_draw_a_bounded_set_of_shapes(exercise):
    profile = grading_profile(1234)
    cases = draw_cases(exercise.strategy(profile), profile)
    signatures = {case.signature() for case in cases}
    assert len(cases) >= 80  # values still vary: far more cases than signatures
    assert len(signatures) <= MAX_SIGNATURES, sorted(signatures)
    assert {dtype for signature in signatures for _, _, dtype in signature} == {
        "float32",
        "float64",
    } or exercise.name in FLOAT32_ONLY


def test_dtype_and_shape_draws_every_shape_in_one_dtype_each_dtype_in_turn():
    notebook, grading = ((1,), (6,), (2, 3)), ((3, 1, 4), (16,))
    for profile, shapes in ((NOTEBOOK, notebook), (grading_profile(7), notebook + grading)):
        drawn = draw_cases(
            dtype_and_shape(profile, notebook, grading).map(
                lambda pair: Case((("x", np.zeros(pair[1], pair[0])),))
            ),
            profile,
        )
        dtype_of: dict[tuple, set] = {}
        for case in drawn:
            x = case.values()[0]
            dtype_of.setdefault(x.shape, set()).add(x.dtype)
        assert set(dtype_of) == set(shapes)
        assert all(dtype_of[shape] == {FLOAT_DTYPES[i % 2]} for i, shape in enumerate(shapes))


def test_chapters_05_and_06_compile_each_shape_once_with_their_edge_cases():
    """Chapters 05 and 06's JAX exercises draw each shape in one dtype (dtype_and_shape): grading a
    submission compiles at most one program per shape, plus one for an edge case's own
    (shape, dtype)."""
    profile = grading_profile(1234)
    for exercise in (e for e in EXERCISES.values() if e.chapter in ("05", "06")):
        cases = [*exercise.edge_cases(), *draw_cases(exercise.strategy(profile), profile)]
        last = [[v for v in case.values() if isinstance(v, np.ndarray)][-1] for case in cases]
        arrays = {(array.shape, array.dtype) for array in last}
        assert len(arrays) <= 6, (exercise.name, sorted(arrays, key=str))
