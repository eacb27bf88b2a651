"""What the grader writes for each submission (Gradescope's results.json, feedback.txt)
and for the class (grades.csv), and the summary it prints at the end."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

from autograder.grading.grade import SubmissionResult
from autograder.grading.grading_run import GradingRun
from autograder.locale import say, speaking

VERSION = "0.1.0"


def results_json(result: SubmissionResult, run: GradingRun) -> dict:
    """Gradescope's results.json: score, execution_time, output, tests[], plus our record."""
    tests = [
        {
            "name": f"{e.name} (chapter {result.chapter})",
            "score": e.score,
            "max_score": e.max_score,
            "status": "passed" if e.passed else "failed",
            "output": e.output,
            "visibility": "visible",
        }
        for e in result.exercises
    ]
    total = sum(e.max_score for e in result.exercises)
    summary = say("Score {score:g} / {total:g}.", score=result.score, total=total)
    if result.grading_error:
        summary = say(
            "Score 0: GRADING ERROR. The grader failed on this submission; this is "
            "not your fault. Please tell your instructor. ({error})",
            error=result.grading_error,
        )
    elif result.error:
        summary += f" {result.error}"
    return {
        "score": result.score,
        "execution_time": round(result.seconds, 3),
        "output": summary,
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {
            "seed": run.seed,
            "protections": list(run.protections),
            "grader_version": VERSION,
            "notebook_cell_errors": result.cell_problems[:20],
            "grading_error": result.grading_error,
            "review": result.review[:20],
        },
    }


def feedback_text(result: SubmissionResult) -> str:
    lines = [
        say(
            "Feedback for {file} (chapter {chapter})", file=result.path.name, chapter=result.chapter
        ),
        "",
    ]
    if result.grading_error:
        lines += [
            say(
                "GRADING ERROR: the grader failed on this submission; this is not your "
                "fault. Please tell your instructor. ({error})",
                error=result.grading_error,
            ),
            "",
        ]
    if result.error:
        lines += [result.error, ""]
    for e in result.exercises:
        mark = say("PASSED") if e.passed else say("FAILED")
        lines += [f"== {e.name}: {mark} ({e.score:g}/{e.max_score:g})", e.output, ""]
    flagged = [
        line.removeprefix("flagged: ") for line in result.review if line.startswith("flagged: ")
    ]
    if flagged:
        lines += [
            say(
                "Your instructor will look at this submission: the grader cannot follow "
                "what some of its code does ({found}).",
                found="; ".join(flagged[:5]),
            ),
            "",
        ]
    for problem in result.cell_problems:
        lines.append(
            say(
                "Note: cell {cell} raised {type}: {message}",
                cell=problem.get("cell"),
                type=problem.get("type"),
                message=problem.get("message"),
            )
        )
    return "\n".join(lines).rstrip() + "\n"


# What the grader writes for an instructor is UTF-8 whatever the locale; a file name that
# is not valid UTF-8 (Python holds its bytes as surrogates) is written with its bytes
# escaped (\udcff), never an error that would stop the batch.
TEXT = {"encoding": "utf-8", "errors": "backslashreplace"}


def write_submission(out: Path, result: SubmissionResult, run: GradingRun) -> None:
    folder = out / result.stem
    folder.mkdir(parents=True, exist_ok=True)
    with speaking(result.language):  # the submitted notebook's language
        results = json.dumps(results_json(result, run), indent=2, ensure_ascii=False)
        feedback = feedback_text(result)
    (folder / "results.json").write_text(results, **TEXT)
    (folder / "feedback.txt").write_text(feedback, **TEXT)


# A submission that took this many times the batch's median, and more than SLOW_SECONDS,
# is flagged for the instructor: its answers may be right, but it sleeps or spins just under
# each time limit (tens of times an honest submission's time). It keeps its score: a slow
# right answer is still right, and the time limits already bound what it can cost.
SLOW_FACTOR = 10
SLOW_SECONDS = 10.0


def slow_notes(results: list[SubmissionResult]) -> dict[int, str]:
    """index -> "slow: 62 s, 25x the batch's median" for the batch's outliers."""
    times = sorted(r.seconds for r in results if r.exercises and not r.error)
    if not times:
        return {}
    median = times[len(times) // 2]
    return {
        index: (f"slow: {r.seconds:.0f} s, {r.seconds / max(median, 0.01):.0f}x the batch's median")
        for index, r in enumerate(results)
        if r.seconds > SLOW_SECONDS and r.seconds > SLOW_FACTOR * median
    }


def write_gradebook(out: Path, results: list[SubmissionResult]) -> None:
    """grades.csv: a row per submission, with its time and what the instructor should
    review (code refused or flagged by tampering.py, an outlying time)."""
    names = list(dict.fromkeys(e.name for r in results for e in r.exercises))
    slow = slow_notes(results)
    with (out / "grades.csv").open("w", newline="", **TEXT) as file:
        writer = csv.writer(file)
        writer.writerow(
            [
                "submission",
                "file",
                "chapter",
                *names,
                "total",
                "max",
                "problem",
                "grading_error",
                "seconds",
                "review",
            ]
        )
        for index, r in enumerate(results):
            scores = {e.name: e.score for e in r.exercises}
            review = [*r.review, *([slow[index]] if index in slow else [])]
            writer.writerow(
                [
                    r.stem,
                    str(r.path),
                    r.chapter or "",
                    *[scores.get(n, 0) for n in names],
                    r.score,
                    sum(e.max_score for e in r.exercises),
                    r.error,
                    r.grading_error,
                    f"{r.seconds:.2f}",
                    "; ".join(review),
                ]
            )


def print_summary(results: list[SubmissionResult], out: Path) -> None:
    full = sum(1 for r in results if r.exercises and all(e.passed for e in r.exercises))
    broken = sum(1 for r in results if r.error and not r.grading_error)
    failed = [r for r in results if r.grading_error]
    print(
        f"Graded {len(results) - len(failed)} of {len(results)} submissions: {full} with "
        f"full marks, {broken} with a problem of their own noted. Results in "
        f"{out}/<submission>/results.json, gradebook {out}/grades.csv.",
        file=sys.stderr,
    )
    if failed:
        print(
            f"GRADING ERRORS: the grader failed on {len(failed)} submission(s); these are "
            "not the students' fault. Fix the cause and grade them again:",
            file=sys.stderr,
        )
        for r in failed:
            print(f"  {r.path}: {r.grading_error}", file=sys.stderr)
