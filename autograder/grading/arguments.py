"""The instructor's commands on the command line: `grade`, `merge`, `export`, `similarity`,
`prepare`, `gradescope`, `prairielearn` and `prairielearn-grade`, their arguments and help.

Kept apart from autograder/cli.py, which adds them to its parser beside the learner's and
the maintainer's commands: the grading commands' options are most of the command line, and
they belong with the grading they describe. Standard library only (argparse): `python -m
autograder --help` must not import the grader.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_grading_commands(commands: Any) -> None:
    """Add the instructor's commands to `commands` (argparse's subparsers)."""
    grade = commands.add_parser("grade", help="grade submitted notebooks (sandboxed)")
    grade.add_argument(
        "submissions",
        nargs="*",
        type=Path,
        metavar="SUBMISSION.ipynb",
        help="the notebooks (with --regrade, default: the files PREVIOUS_OUT graded)",
    )
    grade.add_argument("--out", type=Path, required=True, help="folder for the results")
    grade.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="sandboxed children at once: whole submissions first, and when "
        "fewer are left than that, one submission's exercises in parts at "
        "once (default: the CPUs the grader may use, as memory allows)",
    )
    grade.add_argument("--seed", type=int, default=None, help="hidden cases' seed (recorded)")
    grade.add_argument("--timeout", type=float, default=120.0, help="seconds per submission")
    grade.add_argument("--assignment", default=None, help="chapter, e.g. 03 (else metadata)")
    grade.add_argument(
        "--sandbox",
        dest="sandbox_mode",
        default="auto",
        choices=("auto", "bubblewrap", "fallback"),
        help="auto: bubblewrap where it works, else the fallback layers "
        "(own uid, Landlock, seccomp); the choice is recorded in results",
    )
    grade.add_argument(
        "--unsafe-no-sandbox",
        action="store_true",
        help="grade even where neither bubblewrap nor Landlock is available "
        "(recorded in every result)",
    )
    grade.add_argument(
        "--reference-cache",
        type=Path,
        default=None,
        help="folder of cached hidden cases and references (default: "
        "$AUTODIFF_REFERENCE_CACHE, else ~/.cache/autodiff-course/references)",
    )
    grade.add_argument(
        "--fork-server",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="fork each child from an interpreter that imported numpy and its "
        "framework once per batch, instead of importing TensorFlow or JAX "
        "in every child (seconds per submission); forked children are "
        "confined by their own uid, Landlock and seccomp, not bubblewrap. "
        "Default: on for a batch of a TensorFlow or JAX chapter larger than "
        "--jobs, where the machine allows it (and --sandbox is not "
        "bubblewrap); --no-fork-server never",
    )
    grade.add_argument(
        "--shard",
        default=None,
        metavar="K/N",
        help="grade shard K of N of the batch (0-based: 0/4 to 3/4; shard K takes the "
        "submissions at positions K, K+N, ... of the list given), to merge later with "
        "`merge`; needs --seed and --assignment",
    )
    grade.add_argument(
        "--shards",
        type=int,
        default=None,
        metavar="N",
        help="the batch is cut into N shards and this task's index is in the environment "
        "(JOB_COMPLETION_INDEX of a Kubernetes Indexed Job, else SLURM_ARRAY_TASK_ID); "
        "default: $AUTOGRADER_SHARDS, else no sharding",
    )
    grade.add_argument(
        "--regrade",
        type=Path,
        default=None,
        metavar="PREVIOUS_OUT",
        help="grade again what PREVIOUS_OUT graded (or the submissions given), with its seed, "
        "after the tests or the course changed, into a new or empty --out; PREVIOUS_OUT is "
        "left as it is, and OUT gets changes.csv and changes.md: each changed score, old and "
        "new, and why; students added or missing",
    )
    merge = commands.add_parser(
        "merge",
        help="combine the folders of a batch's shards (grade --shard) into one gradebook, "
        "the one grading the whole batch at once writes; refuses shards that do not fit",
    )
    merge.add_argument("out", type=Path, metavar="OUT", help="a new or empty folder")
    merge.add_argument("shards", nargs="+", type=Path, metavar="SHARD_DIR")
    export = commands.add_parser(
        "export",
        help="a gradebook for an LMS from a graded folder's grades.csv: canvas (its "
        "gradebook import CSV) or generic (student id, score, max, late)",
    )
    export.add_argument("graded", type=Path, metavar="OUT", help="the folder grade wrote")
    export.add_argument("--format", dest="kind", choices=("canvas", "generic"), required=True)
    export.add_argument("--to", type=Path, default=None, help="the file to write (default: in OUT)")
    export.add_argument(
        "--column",
        default=None,
        help="canvas: the assignment's column header; to update an existing assignment use "
        "its header in Canvas's own export, `Name (id)` (default: `Chapter NN`, which "
        "Canvas imports as a new assignment)",
    )
    add_similarity(commands)
    prepare = commands.add_parser(
        "prepare", help="compute and cache a chapter's hidden cases and references for a seed"
    )
    prepare.add_argument("chapters", nargs="+", metavar="CHAPTER", help="e.g. 03")
    prepare.add_argument("--seed", type=int, required=True, help="the grading run's seed")
    prepare.add_argument(
        "--reference-cache", type=Path, default=None, help="the cache folder (default as for grade)"
    )
    prepare.add_argument(
        "--warm-with",
        nargs="*",
        type=Path,
        default=[],
        metavar="NOTEBOOK",
        help="solution notebooks to grade once with JAX's compilation cache "
        "writable (trusted code only), so later children read it",
    )
    zipped = commands.add_parser("gradescope", help="build the Gradescope autograder zip")
    zipped.add_argument("--assignment", required=True, help="chapter, e.g. 03")
    zipped.add_argument("--out", type=Path, default=Path("autograder.zip"))
    zipped.add_argument("--timeout", type=float, default=120.0, help="seconds per submission")
    zipped.add_argument(
        "--seed",
        type=int,
        default=None,
        help="hidden cases' seed for the whole assignment (drawn and printed when left out)",
    )
    learn = commands.add_parser(
        "prairielearn",
        help="build PrairieLearn's external grader: the image's Dockerfile (the Gradescope "
        "zip's recipe), its entrypoint, and an example question's info.json and question.html",
    )
    learn.add_argument("--assignment", required=True, help="chapter, e.g. 03")
    learn.add_argument("--out", type=Path, default=Path("prairielearn"), help="a folder")
    learn.add_argument("--timeout", type=float, default=120.0, help="seconds per submission")
    learn.add_argument(
        "--seed",
        type=int,
        default=None,
        help="hidden cases' seed for the whole assignment (drawn and printed when left out)",
    )
    runner = commands.add_parser(
        "prairielearn-grade",
        help="inside PrairieLearn's grading container: grade the one notebook in "
        "ROOT/student and write ROOT/results/results.json in PrairieLearn's format",
    )
    runner.add_argument("--root", type=Path, default=Path("/grade"), help="default: /grade")
    runner.add_argument("--assignment", required=True, help="chapter, e.g. 03")
    runner.add_argument("--seed", type=int, required=True, help="the hidden cases' seed")
    runner.add_argument("--timeout", type=float, default=120.0, help="seconds per submission")
    runner.add_argument(
        "--reference-cache", type=Path, default=None, help="the cache folder (default as for grade)"
    )


def add_similarity(commands: Any) -> None:
    """`similarity`: the pairs of submissions whose exercise code is most alike."""
    similar = commands.add_parser(
        "similarity",
        help="pairs of submissions whose exercise code is unusually alike, beyond the "
        "handed-out notebook: OUT/similarity.csv and similarity.html, a list to read, "
        "never a verdict (submissions are read, never run)",
    )
    similar.add_argument(
        "submissions", nargs="*", type=Path, metavar="SUBMISSION.ipynb", help="the notebooks"
    )
    similar.add_argument(
        "--graded",
        type=Path,
        default=None,
        metavar="OUT",
        help="instead of naming the notebooks: the files a graded folder's grades.csv lists, "
        "named as its folders (the report goes into OUT unless --out says otherwise)",
    )
    similar.add_argument("--out", type=Path, default=None, help="folder for the report")
    similar.add_argument("--assignment", default=None, help="chapter, e.g. 03 (else metadata)")
    similar.add_argument(
        "--template",
        action="append",
        type=Path,
        default=None,
        metavar="NOTEBOOK",
        help="a learner copy handed out, whose code is ignored; repeat it for each edition "
        "(default: the chapter's notebooks under course/, both editions)",
    )
    similar.add_argument(
        "--top", type=int, default=30, help="pairs shown side by side on the page (default 30)"
    )
