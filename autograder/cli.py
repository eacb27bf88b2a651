"""`python -m autograder ...`: argument parsing only; each command forwards to a function."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from autograder.grading.arguments import add_grading_commands

# `notebooks` (nbclient, Jupyter) is imported by the commands that execute notebooks only:
# the grader's own install (Gradescope, requirements-grader.txt) has no Jupyter. `coursemap`
# (nbformat) only by course-map: importing nbformat takes about 2 s (jsonschema compiles URI
# grammars), which every `grade` would pay before its first submission.

ROOT = Path.cwd()


def build_course(*, solutions: Path, course: Path, only: Sequence[str] = ()) -> int:
    """Execute solutions/ and regenerate course/ from it."""
    from autograder.authoring import notebooks, translations

    for pair in notebooks.pairs(solutions, course):
        if only and not any(pair.solution.name.startswith(prefix) for prefix in only):
            continue
        print(f"building {pair.learner} from {pair.solution}", flush=True)
        notebooks.build(pair)
    for edition in translations.editions(solutions.parent):
        if only and not any(edition.source.name.startswith(prefix) for prefix in only):
            continue
        print(
            f"building {edition.learner} from {edition.source} and {edition.translation}",
            flush=True,
        )
        notebooks.build_edition(solutions.parent, edition)
    return 0


def check_sync(*, solutions: Path, course: Path) -> int:
    """Exit 1, listing the notebooks, when course/ is not what solutions/ generates."""
    from autograder.authoring import notebooks, translations

    pairs = notebooks.pairs(solutions, course)
    problems = [p for pair in pairs for p in notebooks.sync_problems(pair)]
    problems += [
        p
        for edition in translations.editions(solutions.parent)
        for p in notebooks.edition_sync_problems(solutions.parent, edition)
    ]
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(
            "Run `python -m autograder sync NN` for each chapter named (it also says what "
            "is left to do by hand), or `make course` to regenerate every chapter.",
            file=sys.stderr,
        )
    return 1 if problems else 0


def course_map(*, root: Path) -> int:
    """Rewrite both READMEs' course maps (README.md from the English notebooks, README.zh-CN.md
    from the Chinese ones), and each notebook's Colab cell, badges and solutions link, from
    course/ and the repository setting."""
    from autograder.authoring import coursemap

    for name, changed in coursemap.update_readmes(root):
        print(f"{name} course map " + ("updated" if changed else "already up to date"))
    for path in coursemap.update_install_cells(root):
        print(f"updated the install cell of {path}")
    for path in coursemap.update_notebook_links(root):
        print(f"updated the badges and solutions link of {path}")
    return 0


def translation_status(*, root: Path) -> int:
    """List what each chapter's translation lacks (adding stubs for new English cells); exit 1
    when anything does."""
    from autograder.authoring import translations

    problems = []
    for edition in translations.editions(root):
        english = translations.read(edition.source)
        added = translations.stub_missing(english, edition.translation)
        if added:
            print(f"{edition.translation}: added {added} section(s) holding the English")
        problems += translations.drift(
            english, translations.read_sections(edition.translation), str(edition.translation)
        )
    print("\n".join(problems) or "every chapter's translation is complete and current")
    return 1 if problems else 0


def sync_chapter(*, root: Path, chapter: str, rebuild: bool = False) -> int:
    """One chapter from its edited sources to every generated file (authoring/sync.py)."""
    from autograder.authoring.sync import SyncError, sync
    from autograder.catalogue import sync_messages

    try:
        from autograder.exercises import for_chapter

        names = [exercise.name for exercise in for_chapter(chapter)]
    except ValueError as error:  # a declaration refused on import names itself
        print(f"The exercise modules do not load: {error}", file=sys.stderr)
        return 1
    try:
        return sync(
            root=root, chapter=chapter, names=names, messages=sync_messages, rebuild=rebuild
        )
    except SyncError as error:
        print(error, file=sys.stderr)
        return 2


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m autograder", description=__doc__)
    commands = top.add_subparsers(dest="command", required=True)
    for name, help_text in (
        ("build-course", "execute solutions/ and regenerate course/ from it"),
        ("check-sync", "fail when course/ is out of sync with solutions/"),
    ):
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument("--solutions", type=Path, default=ROOT / "solutions")
        sub.add_argument("--course", type=Path, default=ROOT / "course")
        if name == "build-course":
            sub.add_argument("--only", nargs="*", default=(), help="chapter prefixes, e.g. 03")
    commands.add_parser(
        "course-map", help="rewrite the course maps of README.md and README.zh-CN.md"
    ).add_argument("--root", type=Path, default=ROOT)
    sync = commands.add_parser(
        "sync",
        help="one chapter from its edited solution notebook and exercise module to "
        "every generated file (messages, translation stubs, both editions' notebooks), then "
        "the sync check; lists what is left to do by hand and exits 1 while anything is",
    )
    sync.add_argument("chapter", metavar="NN", help="the chapter's two digits, e.g. 03")
    sync.add_argument("--root", type=Path, default=ROOT, help="the checkout (default: here)")
    sync.add_argument(
        "--rebuild",
        action="store_true",
        help="execute both editions' notebooks even when their inputs are unchanged since "
        "their last build (after changing shared code: the engine, check, coursekit)",
    )
    commands.add_parser(
        "warm-up", help="store the notebook checks' cases and references once (make lab runs it)"
    )
    bundle = commands.add_parser(
        "bundle",
        help="zip every notebook and what runs them, for "
        "learners who cannot clone (README.zh-CN.md)",
    )
    bundle.add_argument("--out", type=Path, default=ROOT / "dist" / "autodiff-course.zip")
    bundle.add_argument("--root", type=Path, default=ROOT)
    release = commands.add_parser(
        "release",
        help="build what a release publishes (the wheel for PyPI, the zip, their SHA-256 "
        "list) into an empty folder, refusing a tag that is not v<pyproject version>; the "
        "release workflow runs it",
    )
    release.add_argument("--tag", required=True, help="the git tag, e.g. v0.1.0")
    release.add_argument("--out", type=Path, required=True)
    release.add_argument("--root", type=Path, default=ROOT)
    commands.add_parser(
        "messages",
        help="update autograder/locale/zh-CN/*.po with every "
        "message the checks and the grader say (translations kept)",
    )
    commands.add_parser(
        "translations",
        help="what the Chinese edition's prose lacks: "
        "untranslated, or changed in English since (adds stubs for new cells)",
    )
    progress = commands.add_parser(
        "progress", help="every chapter's exercises as passed, failed or not answered"
    )
    progress.add_argument(
        "folder",
        nargs="?",
        type=Path,
        default=ROOT / "course",
        help="the folder of chapter notebooks (default: course/)",
    )
    progress.add_argument(
        "--language",
        default=None,
        help="en or zh-CN (default: the notebooks' own language, e.g. zh-CN for course/zh-CN/)",
    )
    reset = commands.add_parser(
        "reset",
        help="restore one exercise cell to its original stub (says so in the notebook's language)",
    )
    reset.add_argument("notebook", type=Path, metavar="NOTEBOOK.ipynb")
    reset.add_argument("exercise", metavar="EXERCISE", help="the function's name, e.g. unbroadcast")
    reset.add_argument(
        "--solutions",
        type=Path,
        default=None,
        help="a solutions folder to take the stub from; needed only for a copy "
        "made before its cells carried their stubs (default: the stub the "
        "cell carries, else solutions/ beside the notebook's folder)",
    )
    add_grading_commands(commands)
    return top


def without_keras() -> None:
    """Make Keras look absent to this process (importlib.util.find_spec gives None).

    TensorFlow imports an installed Keras, and matplotlib with it, 1-2 s each time the
    grader imports TensorFlow itself: to compute references, or to run an exercise's
    declared mistakes when a wrong answer's hint needs them. Nothing in the grader uses Keras.
    """
    sys.modules.setdefault("keras", None)


def planned_regrade(args: dict) -> str:
    """Fill in a regrade's seed, assignment and submissions from PREVIOUS_OUT, and hand
    `grade` PREVIOUS_OUT read once; or say why it cannot be regraded ("" when it can)."""
    from autograder.grading import regrade

    try:
        planned = regrade.plan(
            args["regrade"],
            out=args["out"],
            seed=args["seed"],
            assignment=args["assignment"],
            submissions=args["submissions"],
            shard=args["shard"],
        )
    except regrade.Refused as error:
        return f"Cannot regrade: {error}"
    args.update(
        regrade=planned.previous,
        seed=planned.seed,
        assignment=planned.assignment,
        submissions=planned.submissions,
    )
    return ""


def main(argv: Sequence[str] | None = None) -> int:
    args = vars(parser().parse_args(argv))
    command = args.pop("command")
    if command == "grade":
        from autograder.grading import shards

        try:
            args["shard"] = shards.resolve(args.pop("shard"), args.pop("shards"), os.environ)
        except shards.ShardError as error:
            print(f"Cannot grade: {error}", file=sys.stderr)
            return 2
        if refused := shards.refusal(args["shard"], args["seed"], args["assignment"]):
            print(refused, file=sys.stderr)
            return 2
        if args["regrade"] is not None and (refused := planned_regrade(args)):
            print(refused, file=sys.stderr)
            return 2
        from autograder.grading.start import start

        started = start(**args)  # the sandbox and warm children, before the grader's imports
        from autograder.grading.command import grade

        without_keras()
        return grade(**args, started=started)
    if command == "prepare":
        from autograder.grading.preparation import prepare_cache

        without_keras()
        return prepare_cache(**args)
    if command == "warm-up":
        from autograder.exercises import EXERCISES
        from autograder.judging.engine import warm_up

        print(f"prepared the references of {warm_up(EXERCISES.values())} notebook cases")
        return 0
    if command == "merge":
        from autograder.grading.merge import merge

        return merge(**args)
    if command == "export":
        from autograder.grading.lms import export

        return export(**args)
    if command == "similarity":
        from autograder.grading.similarity import similarity

        return similarity(**args)
    if command == "gradescope":
        from autograder.grading.gradescope import build_zip

        return build_zip(**args)
    if command == "prairielearn":
        from autograder.grading.prairielearn import build

        return build(**args)
    if command == "prairielearn-grade":
        from autograder.grading.prairielearn import grade as grade_for_prairielearn

        return grade_for_prairielearn(**args)
    if command == "reset":
        from autograder.authoring.reset import main as reset

        return reset(**args)
    if command == "progress":
        from autograder.notebook.progress import main as progress

        return progress(**args)
    if command == "bundle":
        from autograder.authoring.bundle import main as bundle

        return bundle(**args)
    if command == "release":
        from autograder.authoring.release import main as release

        return release(**args)
    if command == "messages":
        from autograder.catalogue import update

        left = update()
        print("untranslated messages per file: " + ", ".join(f"{k} {v}" for k, v in left.items()))
        return 0
    if command == "translations":
        return translation_status(root=ROOT)
    commands = {
        "build-course": build_course,
        "check-sync": check_sync,
        "course-map": course_map,
        "sync": sync_chapter,
    }
    return commands[command](**args)
