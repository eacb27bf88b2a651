"""`python -m autograder grade`: a batch of submissions in, Gradescope results and a CSV out."""

from __future__ import annotations

import contextlib
import csv
import json
import sys
import threading
import time
import traceback
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from autograder.exercises import for_chapter
from autograder.grading import refcache, slicing
from autograder.grading import start as early
from autograder.grading.grade import (
    Assignment,
    GradingRun,
    SubmissionResult,
    chapter_of,
    grade_submission,
    new_seed,
    prepare,
    read_notebook,
    save_known_mistakes,
)
from autograder.sandbox import sandbox

VERSION = "0.1.0"


def output_folders(paths: list[Path]) -> list[str]:
    """One output folder name per submission that can neither collide nor escape `--out`.

    The position comes first, so `alice/hw.ipynb` and `bob/hw.ipynb` get separate folders,
    and a name such as `...ipynb` or `grades.csv.ipynb` stays a plain folder name.
    """
    width = max(3, len(str(len(paths))))
    return [f"{index:0{width}d}-{clean_stem(path)}" for index, path in enumerate(paths, 1)]


STEM_BYTES = 100  # a cleaned stem's most UTF-8 bytes: well under the usual 255 per name


def clean_stem(path: Path) -> str:
    return clean_name(path.stem)


def clean_name(stem: str) -> str:
    """A file name's stem as a safe folder name that keeps the student's name in any script.

    NFC first (macOS hands over NFD names; one student, one folder). Letters, combining marks
    and digits of every script are kept, as are `.` and `-` between them; every run of other
    characters (spaces, punctuation, symbols, controls, bidi overrides, undecodable bytes)
    becomes one `_`. No `/`, `\\`, NUL or any of `<>:"|?*`, no leading or trailing `.`, `_`,
    `-`; at most STEM_BYTES of UTF-8, cut after a letter's last mark; never empty. The index
    before it in output_folders keeps two submissions apart whatever this gives.
    """
    clusters: list[str] = []  # a letter or digit with its combining marks, or one `.`, `-`, `_`
    for char in unicodedata.normalize("NFC", stem):
        kind = unicodedata.category(char)[0]
        if kind == "M":
            if clusters and clusters[-1] not in (".", "_", "-"):
                clusters[-1] += char  # a mark after no letter (say after `_`) is dropped
        elif kind in "LN" or char in ".-":
            clusters.append(char)
        elif not clusters or clusters[-1] != "_":
            clusters.append("_")
    kept: list[str] = []
    size = 0
    for cluster in clusters:
        size += len(cluster.encode())
        if size > STEM_BYTES:
            if not kept:  # one letter with more marks than fit: cut among its marks
                kept.append(cluster.encode()[:STEM_BYTES].decode(errors="ignore"))
            break
        kept.append(cluster)
    return "".join(kept).strip("._-") or "submission"


def chapters_needed(paths: list[Path], assignment: str | None) -> set[str]:
    """The chapters to prepare: named by --assignment, else by the notebooks' metadata.

    A chapter this course does not have is left out here; the notebook that names it gets
    its own message, and the rest of the batch is graded.
    """
    if assignment is not None:
        return {assignment}
    chapters = set()
    for path in paths:
        notebook, _ = read_notebook(path)
        chapter = chapter_of(notebook) if notebook is not None else None
        if chapter is not None and for_chapter(chapter):
            chapters.add(chapter)
    return chapters


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
    summary = f"Score {result.score:g} / {total:g}."
    if result.grading_error:
        summary = (f"Score 0: GRADING ERROR. The grader failed on this submission; this is "
                   f"not your fault. Please tell your instructor. ({result.grading_error})")
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
    lines = [f"Feedback for {result.path.name} (chapter {result.chapter})", ""]
    if result.grading_error:
        lines += ["GRADING ERROR: the grader failed on this submission; this is not your "
                  f"fault. Please tell your instructor. ({result.grading_error})", ""]
    if result.error:
        lines += [result.error, ""]
    for e in result.exercises:
        mark = "PASSED" if e.passed else "FAILED"
        lines += [f"== {e.name}: {mark} ({e.score:g}/{e.max_score:g})", e.output, ""]
    for problem in result.cell_problems:
        lines.append(f"Note: cell {problem.get('cell')} raised {problem.get('type')}: "
                     f"{problem.get('message')}")
    return "\n".join(lines).rstrip() + "\n"


# What the grader writes for an instructor is UTF-8 whatever the locale; a file name that
# is not valid UTF-8 (Python holds its bytes as surrogates) is written with its bytes
# escaped (\udcff), never an error that would stop the batch.
TEXT = {"encoding": "utf-8", "errors": "backslashreplace"}


def write_submission(out: Path, result: SubmissionResult, run: GradingRun) -> None:
    folder = out / result.stem
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_text(json.dumps(results_json(result, run), indent=2),
                                         **TEXT)
    (folder / "feedback.txt").write_text(feedback_text(result), **TEXT)


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


def grade(
    *, submissions: list[Path], out: Path, jobs: int | None = None, seed: int | None = None,
    timeout: float = 120.0, assignment: str | None = None, sandbox_mode: str = "auto",
    unsafe_no_sandbox: bool = False, reference_cache: Path | None = None,
    fork_server: bool | None = None, started: early.Start | None = None,
) -> int:
    """Grade every submission: 0 when each was graded, whatever the scores; 1 when the
    grader failed on any (counted and named); 2 when nothing could be graded at all.
    `fork_server` None: as the command line without the flag (early.forks_by_default).
    `started`: the sandbox and warm children `early.start` made for these arguments."""
    if started is None:
        started = early.start(
            submissions=submissions, out=out, jobs=jobs, sandbox_mode=sandbox_mode,
            unsafe_no_sandbox=unsafe_no_sandbox, reference_cache=reference_cache,
            fork_server=fork_server, assignment=assignment)
    if started.box is None:
        print(started.problem, file=sys.stderr)
        return 2
    try:
        return _grade_with(started.box, started.paths, out, started.jobs, seed, timeout,
                           assignment, reference_cache)
    finally:
        started.box.close()


def _start_fork_servers(box: sandbox.Sandbox, chapters: set[str]) -> None:
    """Start the fork servers the chapters' rounds will need, so that their imports overlap
    the grader's own preparation. One that cannot start is tried again by its first round,
    which then fails loudly as a grading error."""
    if box.fork:
        for chapter in chapters:
            for frameworks in {tuple(sorted(e.frameworks)) for e in for_chapter(chapter)}:
                with contextlib.suppress(OSError):
                    box.fork_server(frameworks)


def _grade_with(box: sandbox.Sandbox, paths: list[Path], out: Path, jobs: int,
                seed: int | None, timeout: float, assignment: str | None,
                reference_cache: Path | None) -> int:
    seed = new_seed() if seed is None else seed
    print(f"seed {seed}; sandbox: {box.mode}; {jobs} children at once", file=sys.stderr)
    chapters = chapters_needed(paths, assignment)
    _start_fork_servers(box, chapters)
    try:
        assignments: dict[str, Assignment] = {
            chapter: prepare(chapter, seed, reference_cache) for chapter in chapters
        }
    except ValueError as error:
        print(f"Cannot grade: {error}", file=sys.stderr)
        return 2
    prepare_first_time(box, assignments, seed, reference_cache)
    limits = sandbox.Limits(per_exercise=min(30.0, timeout / 2), per_submission=timeout)
    run = GradingRun(seed, limits, box, assignments, assignment, tuple(box.layers()))
    results = run_all(run, out, paths, output_folders(paths), jobs)
    write_gradebook(out, results)
    print_summary(results, out)
    return 1 if any(r.grading_error for r in results) else 0


def prepare_first_time(box: sandbox.Sandbox, assignments: dict[str, Assignment], seed: int,
                       reference_cache: Path | None) -> None:
    """What `prepare --warm-with` adds for a TensorFlow or JAX chapter, done by the first
    `grade` of its chapter and seed that finds it missing, so the command an instructor
    types is as fast from its second submission on as after `prepare`: the known mistakes'
    outputs (else a wrong answer's hint imports the framework into this process), and,
    where the course's own solution notebook is at hand (a clone), JAX's compiled programs
    and each exercise's cost (else every child compiles, and parts are split blindly)."""
    for chapter, assignment in assignments.items():
        if chapter not in early.WARM_GROUPS:
            continue  # a numpy chapter has nothing more to prepare
        entry = refcache.entry_path(early.folder(reference_cache), chapter, seed)
        solution = trusted_solution(chapter)
        to_warm = solution is not None and not refcache.costs_path(entry).is_file()
        if refcache.mistakes_path(entry).is_file() and not to_warm:
            continue
        print(f"chapter {chapter}, seed {seed}: preparing once (what `prepare` does; later "
              "runs read it)", file=sys.stderr)
        with contextlib.redirect_stdout(sys.stderr):
            save_known_mistakes(assignment, seed, reference_cache)
            if to_warm:
                warm_compile_cache({chapter: assignment}, seed, reference_cache, [solution])
                _use_compile_cache(box, reference_cache)


def trusted_solution(chapter: str) -> Path | None:
    """The course's own solution notebook of a chapter, beside the package in a clone of the
    course (an installed wheel carries none): trusted code, as `prepare --warm-with` takes."""
    folder = Path(__file__).resolve().parents[2] / "solutions"
    found = sorted(folder.glob(f"{chapter}_*.ipynb")) if folder.is_dir() else []
    return found[0] if found else None


def _use_compile_cache(box: sandbox.Sandbox, reference_cache: Path | None) -> None:
    """Children from now on read the compiled programs just written; fork servers started
    before it existed are restarted with it (on demand, by the next round)."""
    folder = early.compile_cache(reference_cache)
    if box.compile_cache is None and folder.is_dir():
        box.compile_cache = str(folder)
        box.close_fork_servers()


def prepare_cache(*, chapters: list[str], seed: int, reference_cache: Path | None = None,
                  warm_with: list[Path] = ()) -> int:
    """Fill the reference cache for these chapters and seed (Gradescope's setup.sh does this
    at image build time), so grading runs start without TensorFlow or JAX; then, for each
    notebook in `warm_with` (our own solution notebooks: trusted code), grade it once with
    JAX's compilation cache writable, so children of later runs read compiled programs."""
    assignments = {}
    for chapter in chapters:
        try:
            assignments[chapter] = prepare(chapter, seed, reference_cache)
        except ValueError as error:
            print(f"Cannot prepare: {error}", file=sys.stderr)
            return 2
        count = sum(len(cases) for cases in assignments[chapter].cases.values())
        print(f"chapter {chapter}, seed {seed}: {count} hidden cases and their references in "
              f"{refcache.entry_path(early.folder(reference_cache), chapter, seed)}")
        stored = save_known_mistakes(assignments[chapter], seed, reference_cache)
        if stored:
            print(f"chapter {chapter}: what {stored} known mistakes give on those cases, for "
                  "the hints of wrong TensorFlow and JAX answers")
    return warm_compile_cache(assignments, seed, reference_cache, list(warm_with))


def warm_compile_cache(assignments: dict[str, Assignment], seed: int,
                       reference_cache: Path | None, notebooks: list[Path]) -> int:
    """Grade trusted notebooks with the compilation cache writable; 1 if one loses a point
    (then the cache holds what it compiled, but the notebook is not a solution)."""
    if not notebooks:
        return 0
    folder = early.compile_cache(reference_cache)
    folder.mkdir(parents=True, exist_ok=True)
    box = sandbox.Sandbox(unsafe=True, compile_cache=str(folder), compile_cache_writable=True)
    run = GradingRun(seed, sandbox.Limits(per_exercise=120, per_submission=600), box,
                     assignments)
    status = 0
    for path in notebooks:
        result = grade_submission(run, path, clean_stem(path))
        full = bool(result.exercises) and all(e.passed for e in result.exercises)
        if full and result.chapter in assignments:
            _save_costs(run, path, result.chapter, seed, reference_cache)
        print(f"compiled {path.name} into {folder} ({result.seconds:.1f} s): "
              f"{result.score:g}/{len(result.exercises)}" + ("" if full else
              f"  WARNING: not a full-marks solution. {result.error}"))
        status = status or (0 if full else 1)
    refcache.share(folder)
    return status


def _save_costs(run: GradingRun, path: Path, chapter: str, seed: int,
                reference_cache: Path | None) -> None:
    """Grade the solution again, now that JAX's programs are compiled as a grading run finds
    them, and keep what each exercise's cases took, to split submissions evenly."""
    result = grade_submission(replace(run, sandbox=replace(
        run.sandbox, compile_cache_writable=False)), path, clean_stem(path))
    if result.exercises and all(e.passed for e in result.exercises):
        entry = refcache.entry_path(early.folder(reference_cache), chapter, seed)
        refcache.save_costs(refcache.costs_path(entry),
                            {e.name: e.seconds for e in result.exercises})


def grade_one(run: GradingRun, out: Path, path: Path, stem: str) -> SubmissionResult:
    """Grade and write one submission; whatever goes wrong costs this one only."""
    started = time.perf_counter()
    try:
        result = grade_submission(run, path, stem)
    except Exception as error:  # the grader's own failure: recorded loudly, batch goes on
        traceback.print_exc(file=sys.stderr)
        result = SubmissionResult(path, stem, run.assignment, grading_error=(
            f"{type(error).__name__}: {str(error)[:1000]}"))
        result.seconds = time.perf_counter() - started
    write_submission(out, result, run)
    return result


def run_all(run: GradingRun, out: Path, paths: list[Path], stems: list[str], jobs: int
            ) -> list[SubmissionResult]:
    """Grade up to `jobs` submissions at once. A worker with no submission left to start
    hands its slot to `run.spare`, where a submission still starting may take it to run
    its exercises in parts at once (grading one submission, or the last of a batch)."""
    lock = threading.Lock()
    done = [0]
    order = sorted(range(len(paths)), key=lambda i: -answered_exercises(paths[i]))
    pending = iter([(i, (paths[i], stems[i])) for i in order])
    results: list[SubmissionResult | None] = [None] * len(paths)
    workers = max(1, min(jobs, len(paths)))
    run.spare.give(max(0, jobs - workers))
    started = time.perf_counter()

    def one(path: Path, stem: str) -> SubmissionResult:
        result = grade_one(run, out, path, stem)
        with lock:
            done[0] += 1
            total = sum(e.max_score for e in result.exercises)
            flag = "  GRADING ERROR" if result.grading_error else ""
            print(f"[{done[0]}/{len(paths)}] {path.name}: {result.score:g}/{total:g} "
                  f"({result.seconds:.1f} s, {time.perf_counter() - started:.0f} s elapsed)"
                  f"{flag}", file=sys.stderr, flush=True)
        return result

    def worker() -> None:
        try:
            while True:
                with lock:
                    item = next(pending, None)
                if item is None:
                    return
                index, (path, stem) = item
                results[index] = one(path, stem)
        finally:
            run.spare.give(1)  # this worker is done: its slot is idle

    slicing.serialize_parsing()  # threads must not build ASTs at once (CPython 3.11)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for future in [pool.submit(worker) for _ in range(workers)]:
            future.result()  # a failure outside grade_one's own handling is raised here
    return [result for result in results if result is not None]


# A notebook larger than this is not read ahead of its turn (it is read when graded).
ORDERING_READ_LIMIT = 16 * 1024**2


def answered_exercises(path: Path) -> int:
    """How many exercise cells no longer hold the stub's NotImplementedError: the work a
    submission is likely to cost. Submissions start in that order, most first, so a batch
    does not end with one long submission running alone while the other slots idle."""
    try:
        if not path.is_file() or path.stat().st_size > ORDERING_READ_LIMIT:
            return 0  # a FIFO or a device is never read here
    except OSError:
        return 0
    notebook, _ = read_notebook(path)
    if notebook is None:
        return 0
    return sum(1 for cell in notebook.cells if "exercise" in cell.metadata.get("tags", [])
               and "NotImplementedError" not in cell.source)


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
