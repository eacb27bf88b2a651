"""PrairieLearn's external grader: `python -m autograder prairielearn` builds what an instructor
copies, and `python -m autograder prairielearn-grade` grades one submission inside the image.

PrairieLearn (its documentation, "External Grading") starts the question's image for each
submission, with the student's files in /grade/student (a question's own files would be in
/grade/tests and /grade/serverFilesCourse: this grader needs none, the image carries it all),
runs the entrypoint, and reads /grade/results/results.json (the entrypoint makes /grade/results).
That file holds `score` in [0, 1], a `message`, an `output` and `tests` (name, points,
max_points, message, output), and is limited to 1 MB. `"gradable": false` (with
`format_errors`) marks a submission that could not be graded: no points are awarded or lost,
and the attempt does not count against the student.

Choices, for the same reasons as the Gradescope zip (gradescope.py), whose recipe the image
reuses (its setup.sh on Ubuntu 22.04, the hidden cases computed once at build time):
- the runner grades with the very `grade` command of a local batch, in a process of its own,
  into a fresh folder, then converts that one results.json;
- a submission the grader cannot read (not exactly one notebook, not JSON, another chapter's
  notebook) is not gradable, with a message that says what to hand in: the attempt is not
  counted, as PrairieLearn does for input that is formatted incorrectly;
- a failure of the grader itself is never the student's 0: not gradable, saying it is a
  grading error to report; the entrypoint writes that too when the runner cannot run at all;
- results.json is kept under the limit by cutting the longest texts, saying so.
"""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from autograder.grading import gradescope

LIMIT = 1_000_000  # bytes of results.json: PrairieLearn's documented 1 MB, read as 10**6
MAX_TIMEOUT = 600  # seconds: the most PrairieLearn lets a grading job run
STARTUP = 60  # seconds a job may need besides grading: the image's start, the grader's imports
ENTRYPOINT = "/autograder/prairielearn-entrypoint"
NOT_COUNTED = "This attempt is not counted against you."
GRADING_ERROR = (
    "GRADING ERROR: the autograder itself failed ({reason}). This is not your fault: please "
    "report it to your instructor, who can regrade. " + NOT_COUNTED
)

ENTRYPOINT_SH = """#!/usr/bin/env bash
# PrairieLearn external grader entrypoint (chapter {assignment}, seed {seed}): grade the one
# notebook in /grade/student and write /grade/results/results.json. Every path writes a valid
# results.json; when the grader itself fails, the submission is marked not gradable, so the
# attempt does not count against the student, with a message saying it is a grading error.
set -uo pipefail
root="${{1:-/grade}}"
base="${{AUTOGRADER_ROOT:-/autograder}}"
python="${{AUTOGRADER_PYTHON:-$base/venv/bin/python}}"
results="$root/results/results.json"
mkdir -p "$root/results"
rm -f -- "$results"

TF_CPP_MIN_LOG_LEVEL=3 "$python" -m autograder prairielearn-grade --root "$root" \\
  --assignment {assignment} --timeout {timeout} --seed {seed} \\
  --reference-cache "$base/references"
status=$?
reason="it exited with status $status"
[ $status -eq 0 ] && reason="it wrote no results"
if [ $status -ne 0 ] || [ ! -s "$results" ]; then
  echo "prairielearn-entrypoint: grading error: $reason" >&2
  message="GRADING ERROR: the autograder itself failed ($reason). \\
This is not your fault: please report it to your instructor, who can regrade. \\
{not_counted}"
  printf '{{"gradable": false, "format_errors": ["%s"], "message": "%s"}}\\n' \\
    "$message" "$message" > "$results"
fi
exit 0
"""

DOCKERFILE = """# The PrairieLearn external grader's image, chapter {assignment} (seed {seed}): the
# Gradescope autograder's own recipe (its setup.sh) on Ubuntu 22.04, plus the entrypoint
# PrairieLearn runs for each submission. Build it in this folder and push it where your
# PrairieLearn server can pull it:
#
#   docker build -t registry.example.edu/autodiff-grader:{assignment}-{seed} .
#   docker push registry.example.edu/autodiff-grader:{assignment}-{seed}
#
# setup.sh installs Python 3.11, bubblewrap, the grader's pinned packages and the grader, then
# computes the assignment's hidden cases and references once, into /autograder/references:
# grading needs no network (PrairieLearn gives a grading job none by default).
FROM ubuntu:22.04

ENV AUTOGRADER_ROOT=/autograder
RUN apt-get update \\
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends unzip \\
    && rm -rf /var/lib/apt/lists/*
COPY autograder.zip /tmp/autograder.zip
RUN mkdir -p /autograder/source \\
    && unzip -q /tmp/autograder.zip -d /autograder/source \\
    && rm /tmp/autograder.zip \\
    && bash /autograder/source/setup.sh \\
    && rm -rf /var/lib/apt/lists/* /root/.cache/pip
COPY prairielearn-entrypoint {entrypoint}
RUN chmod 755 {entrypoint}

ENV TF_CPP_MIN_LOG_LEVEL=3
WORKDIR /autograder
"""

QUESTION_HTML = """<pl-question-panel>
  <p>Upload your completed chapter {assignment} notebook, <code>{notebook}</code>.</p>
  <pl-file-upload file-names="{notebook}"></pl-file-upload>
</pl-question-panel>

<pl-submission-panel>
  <pl-external-grader-results></pl-external-grader-results>
</pl-submission-panel>
"""


# ---------------------------------------------------------------- the files an instructor copies


def build(*, assignment: str, out: Path, timeout: float = 120.0, seed: int | None = None) -> int:
    """Write the image's recipe (Dockerfile, the Gradescope zip it unpacks, the entrypoint)
    and an example question (info.json, question.html) into `out`."""
    if timeout + STARTUP > MAX_TIMEOUT:
        print(
            f"prairielearn: --timeout {timeout:g} leaves no time for the image to start: "
            f"PrairieLearn stops a grading job after {MAX_TIMEOUT} s. Pass --timeout "
            f"{MAX_TIMEOUT - STARTUP} or less.",
            file=sys.stderr,
        )
        return 2
    out.mkdir(parents=True, exist_ok=True)
    seed = gradescope.write_zip(
        assignment=assignment, out=out / "autograder.zip", timeout=timeout, seed=seed
    )
    fields = {"assignment": assignment, "seed": seed, "timeout": timeout}
    entrypoint = out / "prairielearn-entrypoint"
    entrypoint.write_text(ENTRYPOINT_SH.format(**fields, not_counted=NOT_COUNTED))
    entrypoint.chmod(0o755)
    (out / "Dockerfile").write_text(DOCKERFILE.format(**fields, entrypoint=ENTRYPOINT))
    notebook = notebook_name(assignment)
    info = info_json(assignment, seed, timeout)
    (out / "info.json").write_text(json.dumps(info, indent=2) + "\n")
    (out / "question.html").write_text(QUESTION_HTML.format(**fields, notebook=notebook))
    print(
        f"wrote {out}: build its Dockerfile into an image and push it; copy info.json (with "
        f"your image's name) and question.html into a question of your course. Chapter "
        f"{assignment}, hidden cases' seed {seed} (--seed {seed} rebuilds it)."
    )
    return 0


def info_json(assignment: str, seed: int, timeout: float) -> dict[str, Any]:
    """A question's info.json: external grading by the image's entrypoint, with PrairieLearn's
    time limit above the grader's own, so that the grader reports a slow submission itself."""
    return {
        "uuid": str(uuid.uuid4()),
        "title": f"Chapter {assignment} notebook",
        "topic": "Automatic differentiation",
        "type": "v3",
        "singleVariant": True,
        "gradingMethod": "External",
        "externalGradingOptions": {
            "enabled": True,
            "image": f"registry.example.edu/autodiff-grader:{assignment}-{seed}",
            "entrypoint": ENTRYPOINT,
            "timeout": min(MAX_TIMEOUT, math.ceil(timeout) + STARTUP),
        },
    }


def notebook_name(assignment: str) -> str:
    """The learner notebook's file name for the chapter (what students upload)."""
    course = gradescope.ROOT / "course"
    found = sorted(course.glob(f"{assignment}_*.ipynb")) if course.is_dir() else []
    return found[0].name if found else f"{assignment}.ipynb"


# ---------------------------------------------------------------- grading one submission


def grade(
    *,
    root: Path,
    assignment: str,
    seed: int,
    timeout: float = 120.0,
    reference_cache: Path | None = None,
) -> int:
    """Grade the one notebook in ROOT/student and write ROOT/results/results.json: 0 when
    written (whatever the outcome), 1 when it could not be."""
    payload = graded(root / "student", assignment, seed, timeout, reference_cache)
    try:
        write_results(root / "results", payload)
    except OSError as error:
        print(f"prairielearn-grade: cannot write results.json: {error}", file=sys.stderr)
        return 1
    return 0


def graded(
    student: Path, assignment: str, seed: int, timeout: float, reference_cache: Path | None
) -> dict[str, Any]:
    notebooks = sorted(student.glob("*.ipynb")) if student.is_dir() else []
    if len(notebooks) != 1:
        return not_gradable(
            f"Submit exactly one .ipynb notebook, the chapter {assignment} notebook (found "
            f"{len(notebooks)} .ipynb files). {NOT_COUNTED}"
        )
    with tempfile.TemporaryDirectory(prefix="prairielearn-") as folder:
        work = Path(folder)
        try:
            shutil.copyfile(notebooks[0], work / notebooks[0].name)
        except OSError as error:
            return grading_error(f"could not copy the submission: {error.strerror}")
        command = [sys.executable, "-m", "autograder", "grade", str(work / notebooks[0].name)]
        command += ["--out", str(work / "graded"), "--assignment", assignment]
        command += ["--timeout", str(timeout), "--seed", str(seed)]
        if reference_cache is not None:
            command += ["--reference-cache", str(reference_cache)]
        try:
            done = subprocess.run(
                command,
                stdout=sys.stderr,  # the grader's log, for the job's log, never the student's
                env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
                timeout=timeout + STARTUP,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return grading_error(f"it did not finish within {timeout + STARTUP:g} s")
        if done.returncode not in (0, 1):  # 1: graded, with a grading error it recorded
            return grading_error(f"it exited with status {done.returncode}")
        return converted_folder(work / "graded")


def converted_folder(out: Path) -> dict[str, Any]:
    """The one submission of a `grade` output folder, in PrairieLearn's format."""
    found = sorted(out.glob("*/results.json"))
    try:
        with (out / "grades.csv").open(encoding="utf-8", newline="") as file:
            (row,) = list(csv.DictReader(file))
        (path,) = found
        results = json.loads(path.read_text(encoding="utf-8"))
        feedback = (path.parent / "feedback.txt").read_text(encoding="utf-8")
        refused = any(note.startswith("refused: ") for note in row["review"].split("; "))
        return converted(results, feedback, problem="" if refused else row["problem"])
    except (OSError, ValueError, KeyError, TypeError):
        return grading_error("it wrote no results, or results that cannot be read")


def converted(results: dict[str, Any], feedback: str, problem: str = "") -> dict[str, Any]:
    """Gradescope's results.json (what `grade` writes) as PrairieLearn's.

    `problem`: what is wrong with the file itself (not a notebook, another chapter's): not
    gradable. Code refused for reaching into the checks is graded (0), as everywhere."""
    error = results.get("extra_data", {}).get("grading_error", "")
    if error:
        return grading_error(error)
    if problem:
        return not_gradable(f"{problem} {NOT_COUNTED}", output=feedback)
    tests = [
        {
            "name": test["name"],
            "points": test["score"],
            "max_points": test["max_score"],
            "message": first_line(test.get("output", "")),
            "output": test.get("output", ""),
        }
        for test in results["tests"]
    ]
    total = sum(test["max_points"] for test in tests)
    score = sum(test["points"] for test in tests) / total if total else 0.0
    return {
        "gradable": True,
        "score": min(1.0, max(0.0, score)),
        "message": results.get("output", ""),
        "output": feedback,
        "tests": tests,
    }


def first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def not_gradable(message: str, output: str = "") -> dict[str, Any]:
    payload: dict[str, Any] = {"gradable": False, "format_errors": [message], "message": message}
    if output:
        payload["output"] = output
    return payload


def grading_error(reason: str) -> dict[str, Any]:
    """The grader's failure: not gradable, so it costs the student neither points nor an
    attempt, and says it is for the instructor."""
    print(f"prairielearn-grade: grading error: {reason}", file=sys.stderr)
    return not_gradable(GRADING_ERROR.format(reason=reason))


# ---------------------------------------------------------------- results.json, under the limit


def write_results(folder: Path, payload: dict[str, Any]) -> None:
    """results.json, under the limit, written whole (renamed into place)."""
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / ".results.json.partial"
    partial.write_bytes(encoded(within_limit(payload)))
    partial.replace(folder / "results.json")


def encoded(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, ensure_ascii=False, indent=1).encode("utf-8")


def within_limit(payload: dict[str, Any], limit: int = LIMIT) -> dict[str, Any]:
    """The payload, its longest texts cut (saying so) until it encodes in `limit` bytes.

    A feedback can be long (a flood of printed output in a cell's error, many failing cases);
    PrairieLearn refuses results over its limit, which would leave the student no score."""
    payload = json.loads(json.dumps(payload))  # a copy, to cut
    while (excess := len(encoded(payload)) - limit) > 0:
        holder, key = _longest_text(payload)
        text = holder[key]
        if len(text) <= 200:  # nothing long is left: keep the score, drop the texts
            return _bare(payload)
        keep = max(100, len(text) - excess - 200)  # a character is at least one byte
        cut = len(text) - keep
        holder[key] = (
            text[:keep] + f"\n... [{cut} more characters cut: PrairieLearn keeps results "
            "under 1 MB]"
        )
    return payload


def _longest_text(payload: dict[str, Any]) -> tuple[Any, Any]:
    """(the dict or list holding the longest text, its key or index)."""
    places: list[tuple[Any, Any]] = [
        (payload, key) for key in ("output", "message") if isinstance(payload.get(key), str)
    ]
    for test in payload.get("tests", []):
        places += [(test, key) for key in ("output", "message") if isinstance(test.get(key), str)]
    errors = payload.get("format_errors", [])
    places += [(errors, index) for index, text in enumerate(errors) if isinstance(text, str)]
    return max(places, key=lambda place: len(place[0][place[1]]))


def _bare(payload: dict[str, Any]) -> dict[str, Any]:
    """The score and each test's points only, with a message saying why."""
    note = "The feedback was too long for PrairieLearn (over 1 MB) and is left out."
    bare = {key: payload[key] for key in ("gradable", "score") if key in payload}
    bare["message"] = note
    bare["tests"] = [
        {key: test[key] for key in ("name", "points", "max_points")}
        for test in payload.get("tests", [])
    ]
    if "format_errors" in payload:
        bare["format_errors"] = [text[:1000] for text in payload["format_errors"]]
    return bare
