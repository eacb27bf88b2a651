"""What the grader writes for each submission (Gradescope's results.json, feedback.txt)
and for the class (grades.csv), and the summary it prints at the end."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

from autograder.grading.assignment import GradingRun
from autograder.grading.grade import SubmissionResult
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
        summary = say("Score 0: GRADING ERROR. The grader failed on this submission; this is "
                      "not your fault. Please tell your instructor. ({error})",
                      error=result.grading_error)
    elif result.error:
        summary += f" {result.error}"
    return {
        "score": result.score,
        "execution_time": round(result.seconds, 3),
        "output": summary,
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {"seed": run.seed, "protections": list(run.protections),
                       "grader_version": VERSION,
                       "notebook_cell_errors": result.cell_problems[:20],
                       "grading_error": result.grading_error},
    }



def feedback_text(result: SubmissionResult) -> str:
    lines = [say("Feedback for {file} (chapter {chapter})", file=result.path.name,
                 chapter=result.chapter), ""]
    if result.grading_error:
        lines += [say("GRADING ERROR: the grader failed on this submission; this is not your "
                      "fault. Please tell your instructor. ({error})",
                      error=result.grading_error), ""]
    if result.error:
        lines += [result.error, ""]
    for e in result.exercises:
        mark = say("PASSED") if e.passed else say("FAILED")
        lines += [f"== {e.name}: {mark} ({e.score:g}/{e.max_score:g})", e.output, ""]
    for problem in result.cell_problems:
        lines.append(say("Note: cell {cell} raised {type}: {message}", cell=problem.get("cell"),
                         type=problem.get("type"), message=problem.get("message")))
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



def write_gradebook(out: Path, results: list[SubmissionResult]) -> None:
    names = list(dict.fromkeys(e.name for r in results for e in r.exercises))
    with (out / "grades.csv").open("w", newline="", **TEXT) as file:
        writer = csv.writer(file)
        writer.writerow(["submission", "file", "chapter", *names, "total", "max", "problem",
                         "grading_error"])
        for r in results:
            scores = {e.name: e.score for e in r.exercises}
            writer.writerow([r.stem, str(r.path), r.chapter or "",
                             *[scores.get(n, 0) for n in names], r.score,
                             sum(e.max_score for e in r.exercises), r.error, r.grading_error])



def print_summary(results: list[SubmissionResult], out: Path) -> None:
    full = sum(1 for r in results if r.exercises and all(e.passed for e in r.exercises))
    broken = sum(1 for r in results if r.error and not r.grading_error)
    failed = [r for r in results if r.grading_error]
    print(f"Graded {len(results) - len(failed)} of {len(results)} submissions: {full} with "
          f"full marks, {broken} with a problem of their own noted. Results in "
          f"{out}/<submission>/results.json, gradebook {out}/grades.csv.", file=sys.stderr)
    if failed:
        print(f"GRADING ERRORS: the grader failed on {len(failed)} submission(s); these are "
              "not the students' fault. Fix the cause and grade them again:", file=sys.stderr)
        for r in failed:
            print(f"  {r.path}: {r.grading_error}", file=sys.stderr)
