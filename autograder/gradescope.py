"""`python -m autograder gradescope`: the zip a Gradescope programming assignment expects.

Gradescope runs `setup.sh` once when building its image, then `run_autograder` for each
submission, with the student's files in /autograder/submission and the results expected at
/autograder/results/results.json. Our run_autograder grades with the very same command as a
local batch, into a folder only it writes, then copies that one results.json across.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SETUP_SH = """#!/usr/bin/env bash
# Gradescope image build: the grader, its pinned packages, and bubblewrap for the sandbox.
set -euo pipefail
apt-get update && apt-get install -y python3 python3-pip python3-venv bubblewrap
cd /autograder/source
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install -r requirements.txt
/autograder/venv/bin/pip install --no-deps .
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# One submission: grade it in a fresh folder, then hand Gradescope its results.json.
set -uo pipefail
base="${{AUTOGRADER_ROOT:-/autograder}}"
python="${{AUTOGRADER_PYTHON:-$base/venv/bin/python}}"
work="$(mktemp -d)"
shopt -s nullglob
notebooks=("$base"/submission/*.ipynb)
mkdir -p "$base/results"
if [ ${{#notebooks[@]}} -ne 1 ]; then
  message="Submit exactly one .ipynb notebook (found ${{#notebooks[@]}})."
  printf '{{"score": 0, "output": "%s", "tests": []}}\\n' "$message" \\
    > "$base/results/results.json"
  exit 0
fi
cp "${{notebooks[0]}}" "$work/submission.ipynb"
TF_CPP_MIN_LOG_LEVEL=3 "$python" -m autograder grade "$work/submission.ipynb" \\
  --out "$work/graded" --jobs 1 --assignment {assignment} --timeout {timeout}
cp "$work/graded/submission/results.json" "$base/results/results.json"
"""

SOURCES = ("requirements.txt", "pyproject.toml", "README.md")
PACKAGES = ("autograder", "coursekit")


def build_zip(*, assignment: str, out: Path, timeout: float = 120.0) -> int:
    """Write the Gradescope autograder zip for one chapter."""
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        _add_script(archive, "setup.sh", SETUP_SH)
        _add_script(archive, "run_autograder",
                    RUN_AUTOGRADER.format(assignment=assignment, timeout=timeout))
        for name in SOURCES:
            archive.write(ROOT / name, name)
        for package in PACKAGES:
            for path in sorted((ROOT / package).rglob("*.py")):
                archive.write(path, str(path.relative_to(ROOT)))
    print(f"wrote {out}: upload it as the autograder of the chapter {assignment} assignment")
    return 0


def _add_script(archive: zipfile.ZipFile, name: str, text: str) -> None:
    info = zipfile.ZipInfo(name)
    info.external_attr = 0o755 << 16  # executable, as Gradescope runs them directly
    archive.writestr(info, text)
