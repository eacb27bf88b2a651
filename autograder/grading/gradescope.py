"""`python -m autograder gradescope`: the zip a Gradescope programming assignment expects.

Gradescope runs `setup.sh` once when building its image, then `run_autograder` for each
submission, with the student's files in /autograder/submission and the results expected at
/autograder/results/results.json. Our run_autograder grades with the very same command as a
local batch, into a folder only it writes, then copies that one results.json across.

Choices the zip makes (docs/instructor-guide.md repeats them):
- Base image: Gradescope's Ubuntu 22.04. Its `python3` is 3.10, too old; setup.sh installs
  the distribution's own `python3.11` package (no third-party PPA) and stops the build, saying
  why, when the Python it gets is older than 3.11.
- Packages: requirements-grader.txt, the grader's subset of requirements.txt with the same
  pins (tests/grading/test_gradescope.py keeps them equal): no JupyterLab, Playwright, ruff
  or pytest.
- Hidden cases: one seed for the whole assignment, baked into setup.sh and run_autograder, so
  every student (and every resubmission) is graded on the same cases; setup.sh computes them
  and their references once, into the reference cache that run_autograder reads.
- results.json is always written: when the grader itself fails, the score is 0 and the output
  says it is a grading error for the instructor, not the student's fault.
"""

from __future__ import annotations

import secrets
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MINIMUM_PYTHON = (3, 11)

SETUP_SH = """#!/usr/bin/env bash
# Gradescope image build (once, as root), for the base image Ubuntu 22.04: Python 3.11, the
# grader's pinned packages, the grader itself (a normal, non-editable install), bubblewrap for
# the sandbox, then the assignment's hidden cases and references, computed once with its seed
# and cached in $base/references, so grading a submission never imports TensorFlow or JAX.
set -euo pipefail
base="${{AUTOGRADER_ROOT:-/autograder}}"
python="${{AUTOGRADER_SETUP_PYTHON:-python3.11}}"

# AUTOGRADER_SETUP_PYTHON: a Python 3.11+ on an image prepared by hand (no apt-get then).
if [ -z "${{AUTOGRADER_SETUP_PYTHON:-}}" ]; then
  # Ubuntu 22.04's python3 is 3.10; its python3.11 package is the one we need.
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\
    python3.11 python3.11-venv bubblewrap ca-certificates
fi

version="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" \\
  || version="missing"
if ! printf '%s\\n' "$version" | grep -Eq '^3\\.(1[1-9]|[2-9][0-9])$'; then
  echo "setup.sh: FAILED: the grader needs Python {minimum} or newer, and $python is $version." >&2
  echo "  Pick the base image 'Ubuntu 22.04' in the assignment's autograder settings (its" >&2
  echo "  python3.11 package is installed above), or set AUTOGRADER_SETUP_PYTHON to a Python" >&2
  echo "  {minimum}+ that this image has." >&2
  exit 1
fi

cd "$base/source"
"$python" -m venv "$base/venv"
"$base/venv/bin/python" -m pip install --upgrade pip
"$base/venv/bin/python" -m pip install -r requirements-grader.txt
"$base/venv/bin/python" -m pip install --no-deps .
"$base/venv/bin/python" -m autograder prepare {assignment} --seed {seed} \\
  --reference-cache "$base/references"
echo "setup.sh: grader ready ($("$base/venv/bin/python" --version))"
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# One submission: grade it in a fresh folder, then hand Gradescope its results.json.
# Every path writes a valid results.json; a failure of the grader itself says so.
set -uo pipefail
base="${{AUTOGRADER_ROOT:-/autograder}}"
python="${{AUTOGRADER_PYTHON:-$base/venv/bin/python}}"
results="$base/results/results.json"
mkdir -p "$base/results"

write_results() {{  # score, message (plain text: no quotes or backslashes)
  printf '{{"score": %s, "output": "%s", "tests": []}}\\n' "$1" "$2" > "$results"
}}

grading_error() {{
  echo "run_autograder: grading error: $1" >&2
  write_results 0 "GRADING ERROR: the autograder itself failed ($1). This is not your \\
fault and the 0 is not your grade: please report it to your instructor, who can regrade."
  exit 0
}}

shopt -s nullglob
notebooks=("$base"/submission/*.ipynb)
if [ ${{#notebooks[@]}} -ne 1 ]; then
  write_results 0 "Submit exactly one .ipynb notebook, the chapter {assignment} notebook \\
(found ${{#notebooks[@]}} .ipynb files)."
  exit 0
fi

work="$(mktemp -d)" || grading_error "no temporary folder"
cp -- "${{notebooks[0]}}" "$work/submission.ipynb" || grading_error "could not copy the submission"
TF_CPP_MIN_LOG_LEVEL=3 "$python" -m autograder grade "$work/submission.ipynb" \\
  --out "$work/graded" --assignment {assignment} --timeout {timeout} --seed {seed} \\
  --reference-cache "$base/references"
status=$?
[ $status -eq 0 ] || grading_error "the grader exited with status $status"
graded=("$work"/graded/*/results.json)  # one submission: one folder, whatever its name
[ ${{#graded[@]}} -eq 1 ] && [ -s "${{graded[0]}}" ] || grading_error "the grader wrote no results"
valid='import json, sys; score = json.load(open(sys.argv[1]))["score"]
sys.exit(not isinstance(score, (int, float)))'
"$python" -c "$valid" "${{graded[0]}}" || grading_error "the grader wrote invalid results"
cp -- "${{graded[0]}}" "$results" || grading_error "could not copy the results"
"""

SOURCES = ("requirements.txt", "requirements-grader.txt", "pyproject.toml", "README.md", "LICENSE")
PACKAGES = ("autograder", "coursekit")


def setup_script(*, assignment: str, seed: int) -> str:
    return SETUP_SH.format(
        minimum=".".join(map(str, MINIMUM_PYTHON)), assignment=assignment, seed=seed
    )


def run_script(*, assignment: str, timeout: float, seed: int) -> str:
    return RUN_AUTOGRADER.format(assignment=assignment, timeout=timeout, seed=seed)


def build_zip(
    *, assignment: str, out: Path, timeout: float = 120.0, seed: int | None = None
) -> int:
    """Write the Gradescope autograder zip for one chapter, its hidden cases fixed by `seed`
    (drawn now and printed when not given: every submission then meets the same cases)."""
    seed = write_zip(assignment=assignment, out=out, timeout=timeout, seed=seed)
    print(
        f"wrote {out}: upload it as the autograder of the chapter {assignment} assignment "
        f"(base image Ubuntu 22.04); hidden cases' seed {seed} (--seed {seed} rebuilds it)"
    )
    return 0


def write_zip(*, assignment: str, out: Path, timeout: float, seed: int | None) -> int:
    """The zip itself, and the seed it fixes: also the recipe of the images that grade
    elsewhere (deploy/Dockerfile, PrairieLearn's image), which run its setup.sh."""
    missing = [name for name in SOURCES if not (ROOT / name).is_file()]
    if missing:
        raise SystemExit(
            f"gradescope: {', '.join(missing)} not found in {ROOT}: build the zip "
            "from a checkout of the course (the zip carries its sources)."
        )
    seed = secrets.randbelow(2**31) if seed is None else seed
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        _add_script(archive, "setup.sh", setup_script(assignment=assignment, seed=seed))
        _add_script(
            archive, "run_autograder", run_script(assignment=assignment, timeout=timeout, seed=seed)
        )
        for name in SOURCES:
            archive.write(ROOT / name, name)
        for package in PACKAGES:  # the code, and the Chinese message catalogue
            for path in sorted([*(ROOT / package).rglob("*.py"), *(ROOT / package).rglob("*.po")]):
                archive.write(path, str(path.relative_to(ROOT)))
    return seed


def _add_script(archive: zipfile.ZipFile, name: str, text: str) -> None:
    info = zipfile.ZipInfo(name)
    info.external_attr = 0o755 << 16  # executable, as Gradescope runs them directly
    archive.writestr(info, text)
