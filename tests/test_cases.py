"""Cases depend on the profile (and seed) alone, not on what the process happens to import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

DRAW = """
import sys
sys.path.insert(0, {folder!r})
{extra}
from autograder.cases import NOTEBOOK, draw_cases, grading_profile
from autograder.exercises.ch03_unbroadcasting import MATMUL_VJP, UNBROADCAST
for exercise in (UNBROADCAST, MATMUL_VJP):
    for profile in (NOTEBOOK, grading_profile(5)):
        cases = draw_cases(exercise.strategy(profile), profile)
        print(exercise.name, [case.key()[:12] for case in cases])
"""


def draw_in_fresh_process(folder: Path, extra: str) -> str:
    code = DRAW.format(folder=str(folder), extra=extra)
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout


def test_cases_do_not_depend_on_other_local_modules(tmp_path):
    # A local module full of literals: Hypothesis would otherwise mix them into its draws.
    literals = ", ".join(f"{v}.{v % 7}5" for v in range(1, 400))
    (tmp_path / "noisy_module.py").write_text(f"VALUES = [{literals}, 0.125, -7.5, 3.0]\n")
    plain = draw_in_fresh_process(tmp_path, "")
    noisy = draw_in_fresh_process(tmp_path, "import noisy_module")
    assert plain and plain == noisy
