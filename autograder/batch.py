"""`python -m autograder grade`: a batch of submissions in, Gradescope results and a CSV out."""

from __future__ import annotations

import csv
import json
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import sandbox
from .grading import (
    Assignment,
    SubmissionResult,
    chapter_of,
    grade_submission,
    new_seed,
    prepare,
    read_notebook,
)

VERSION = "0.1.0"


def unique_stems(paths: list[Path]) -> list[str]:
    """One output folder per submission, even when two files share a name."""
    seen: Counter[str] = Counter()
    stems = []
    for path in paths:
        seen[path.stem] += 1
        stems.append(path.stem if seen[path.stem] == 1 else f"{path.stem}-{seen[path.stem]}")
    return stems


def chapters_needed(paths: list[Path], assignment: str | None) -> set[str]:
    if assignment is not None:
        return {assignment}
    chapters = set()
    for path in paths:
        notebook, _ = read_notebook(path)
        chapter = chapter_of(notebook) if notebook is not None else None
        if chapter is not None:
            chapters.add(chapter)
    return chapters


def results_json(result: SubmissionResult, seed: int, protections: list[str]) -> dict:
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
    summary = f"Score {result.score:g} / {total:g}."
    if result.error:
        summary += f" {result.error}"
    return {
        "score": result.score,
        "execution_time": round(result.seconds, 3),
        "output": summary,
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {"seed": seed, "protections": protections, "grader_version": VERSION,
                       "notebook_cell_errors": result.cell_problems[:20]},
    }


def feedback_text(result: SubmissionResult) -> str:
    lines = [f"Feedback for {result.path.name} (chapter {result.chapter})", ""]
    if result.error:
        lines += [result.error, ""]
    for e in result.exercises:
        mark = "PASSED" if e.passed else "FAILED"
        lines += [f"== {e.name}: {mark} ({e.score:g}/{e.max_score:g})", e.output, ""]
    for problem in result.cell_problems:
        lines.append(f"Note: cell {problem.get('cell')} raised {problem.get('type')}: "
                     f"{problem.get('message')}")
    return "\n".join(lines).rstrip() + "\n"


def write_submission(
    out: Path, result: SubmissionResult, seed: int, protections: list[str]
) -> None:
    folder = out / result.stem
    folder.mkdir(parents=True, exist_ok=True)
    payload = results_json(result, seed, protections)
    (folder / "results.json").write_text(json.dumps(payload, indent=2))
    (folder / "feedback.txt").write_text(feedback_text(result))


def write_gradebook(out: Path, results: list[SubmissionResult]) -> None:
    names = list(dict.fromkeys(e.name for r in results for e in r.exercises))
    with (out / "grades.csv").open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["submission", "file", "chapter", *names, "total", "max", "problem"])
        for r in results:
            scores = {e.name: e.score for e in r.exercises}
            writer.writerow([r.stem, str(r.path), r.chapter or "",
                             *[scores.get(n, 0) for n in names], r.score,
                             sum(e.max_score for e in r.exercises), r.error])


def grade(
    *, submissions: list[Path], out: Path, jobs: int = 2, seed: int | None = None,
    timeout: float = 120.0, assignment: str | None = None,
) -> int:
    """Grade every submission; 0 when the batch was graded, whatever the scores."""
    paths = [p for p in submissions if p.suffix == ".ipynb" or p.is_file()]
    if not paths:
        print("No submissions given: pass .ipynb files.", file=sys.stderr)
        return 2
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        print(f"Cannot write to {out}: {error}", file=sys.stderr)
        return 2
    seed = new_seed() if seed is None else seed
    bwrap = sandbox.bubblewrap()
    protections = sandbox.protections(bwrap)
    print(f"seed {seed}; sandbox: {'bubblewrap' if bwrap else 'rlimits only'}", file=sys.stderr)
    try:
        assignments: dict[str, Assignment] = {
            chapter: prepare(chapter, seed) for chapter in chapters_needed(paths, assignment)
        }
    except ValueError as error:
        print(f"Cannot grade: {error}", file=sys.stderr)
        return 2
    limits = sandbox.Limits(per_exercise=min(30.0, timeout / 2), per_submission=timeout)
    results = run_all(paths, unique_stems(paths), assignments, assignment, limits, bwrap, seed,
                      out, protections, jobs)
    write_gradebook(out, results)
    print_summary(results, out)
    return 0


def run_all(paths, stems, assignments, assignment, limits, bwrap, seed, out, protections, jobs):
    lock = threading.Lock()
    done = [0]
    started = time.perf_counter()

    def one(item: tuple[Path, str]) -> SubmissionResult:
        path, stem = item
        result = grade_submission(path, stem, assignments, assignment, limits, bwrap, seed)
        write_submission(out, result, seed, protections)
        with lock:
            done[0] += 1
            total = sum(e.max_score for e in result.exercises)
            print(f"[{done[0]}/{len(paths)}] {path.name}: {result.score:g}/{total:g} "
                  f"({result.seconds:.1f} s, {time.perf_counter() - started:.0f} s elapsed)",
                  file=sys.stderr, flush=True)
        return result

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, zip(paths, stems, strict=True)))


def print_summary(results: list[SubmissionResult], out: Path) -> None:
    full = sum(1 for r in results if r.exercises and all(e.passed for e in r.exercises))
    broken = sum(1 for r in results if r.error)
    print(f"Graded {len(results)} submissions: {full} with full marks, {broken} with a "
          f"problem noted. Results in {out}/<submission>/results.json, gradebook "
          f"{out}/grades.csv.", file=sys.stderr)
