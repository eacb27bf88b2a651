"""`python -m autograder similarity`: pairs of submissions whose exercise code is unusually
alike, as a list to read, never a verdict.

Only the exercise cells are compared, one exercise at a time: the rest of a notebook is the
course's own code, alike in every submission. Every code cell of the chapter's learner copies
(both editions, stubs included) is the template: what a student was handed counts for
nothing, so two students who left the stub, or pasted the course's demonstration into an
answer, do not match. The comparison is copydetect's (MOSS's winnowing: code tokenized and
names replaced, so renamed variables and moved comments change nothing; matches of fewer
than NOISE filtered characters are ignored), kept to every k-gram (window 1, copydetect's
default), so a report does not depend on Python's hash seed. copydetect is imported only
here, when the command runs: `grade` never needs it.

Submissions are read with `grade`'s bounded reader and never run; one that cannot be read
is listed as such, and the report is written all the same.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from autograder.grading.submissions import Notebook, output_folders, read_notebook

# The shortest run of matching code that counts, in copydetect's filtered characters (names
# become V or F, strings S, spaces and comments go): about two short statements.
NOISE = 20
MAX_CODE = 20_000  # characters of one answer compared; a course answer is under 2,000
CSV_NAME = "similarity.csv"
HTML_NAME = "similarity.html"
COLUMNS = (
    "rank",
    "submission_a",
    "submission_b",
    "exercise",
    "similarity",
    "similarity_a",
    "similarity_b",
    "shared_tokens",
)
# The stub, or the course's code pasted back: listed, never compared.
NOTHING_OF_ITS_OWN = "no code beyond the handed-out notebook"
CHAPTER = re.compile(r"\d\d")
TOP_LEVEL_DEF = re.compile(r"^(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_]\w*)", re.M)


class Refused(Exception):
    """The report cannot be made as asked; the message says why and what to do."""


@dataclass(frozen=True)
class Entry:
    """One submission as compared: its name in the report (the folder `grade` gives it),
    its file, its code per exercise, and why it was not compared, if it was not."""

    name: str
    path: Path
    code: dict[str, str] = field(default_factory=dict)
    problem: str = ""


@dataclass(frozen=True)
class Pair:
    """Two submissions' answers to one exercise: the share of each answer's own code (beyond
    the template) found in the other, and where, as (start, end) offsets in each answer."""

    a: str
    b: str
    exercise: str
    score_a: float
    score_b: float
    shared: int
    slices_a: tuple[tuple[int, int], ...] = ()
    slices_b: tuple[tuple[int, int], ...] = ()

    @property
    def score(self) -> float:
        """The smaller share: both answers must be mostly the same code, so a short answer
        found inside a long one does not rank first (each share is in the CSV)."""
        return min(self.score_a, self.score_b)


@dataclass(frozen=True)
class Template:
    """The handed-out code: the exercises (one per exercise cell of the learner copy, named
    by the exercise it defines), and every code cell of every learner copy given."""

    notebooks: list[Path]
    exercises: list[str]
    cells: list[str]


@dataclass
class Report:
    """What the command found, for the CSV and the page."""

    chapter: str
    template: Template
    entries: list[Entry]
    pairs: list[Pair]
    medians: dict[str, float]


def similarity(
    *,
    submissions: list[Path],
    graded: Path | None,
    out: Path | None,
    assignment: str | None,
    template: list[Path] | None,
    top: int,
) -> int:
    """Write OUT/similarity.csv and OUT/similarity.html; 0, or 2 when nothing was written."""
    try:
        named = sources(submissions, graded)
        read = [(name, path, *read_notebook(path)) for name, path in named]
        chapter = chapter_of([notebook for _, _, notebook, _ in read], assignment)
        handed_out = read_template(chapter, template or [])
        entries = [entry(*submission, handed_out) for submission in read]
        report = compare(chapter, handed_out, entries)
        target = out or graded
        assert target is not None  # sources() refused neither
        target.mkdir(parents=True, exist_ok=True)
    except Refused as error:
        print(f"Cannot compare: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"Cannot write the report: {error}", file=sys.stderr)
        return 2
    from autograder.grading.similarity_page import page

    write_csv(target / CSV_NAME, report.pairs)
    (target / HTML_NAME).write_text(page(report, top), encoding="utf-8")
    _summarize(report, target)
    return 0


# ---------------------------------------------------------------- what is compared


def sources(submissions: list[Path], graded: Path | None) -> list[tuple[str, Path]]:
    """(name, file) of each submission: the files given, named as `grade` names their
    folders when given in the same order; or those a graded folder's grades.csv lists."""
    if bool(submissions) == (graded is not None):
        raise Refused("name the submissions, or a graded folder with --graded, not both.")
    if submissions:
        return list(zip(output_folders(submissions), submissions, strict=True))
    assert graded is not None
    gradebook = graded / "grades.csv"
    try:
        with gradebook.open(encoding="utf-8", newline="") as file:
            rows = list(csv.DictReader(file))
    except OSError:
        raise Refused(f"{gradebook} not found: pass the folder `grade` wrote.") from None
    if not rows or not {"submission", "file"} <= set(rows[0]):
        raise Refused(f"{gradebook} lists no submissions with their files.")
    return [(row["submission"], Path(row["file"])) for row in rows]


def chapter_of(notebooks: list[Notebook | None], assignment: str | None) -> str:
    """--assignment, else the chapter most of the notebooks name (as `grade` decides). Two
    digits only: the chapter picks the template's file name, and metadata is the student's."""
    if assignment:
        if not CHAPTER.fullmatch(assignment):
            raise Refused(f"--assignment {assignment!r} is not a chapter: two digits, e.g. 03.")
        return assignment
    counts = Counter(nb.chapter for nb in notebooks if nb is not None and nb.chapter)
    ranked = [(chapter, n) for chapter, n in counts.most_common() if CHAPTER.fullmatch(chapter)]
    if not ranked:
        raise Refused("no notebook names its chapter: pass --assignment NN.")
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        raise Refused("the notebooks name different chapters equally often: pass --assignment NN.")
    return ranked[0][0]


def read_template(chapter: str, given: list[Path]) -> Template:
    """The learner copies of the chapter: those given, else every edition's under course/."""
    notebooks = given or sorted(Path("course").rglob(f"{chapter}_*.ipynb"))
    if not notebooks:
        raise Refused(
            f"no learner copy of chapter {chapter} in course/ to take the handed-out code from. "
            "Run from a clone of the course, or pass the notebook you handed out: --template "
            "NOTEBOOK.ipynb."
        )
    cells: list[str] = []
    for path in notebooks:
        notebook, problem = read_notebook(path)
        if notebook is None:
            raise Refused(f"the template {problem}")
        cells += [cell.source for cell in notebook.cells]
    first, _ = read_notebook(notebooks[0])
    assert first is not None
    return Template(notebooks, exercise_names(first, declared(notebooks[0])), cells)


def declared(path: Path) -> list[str]:
    """The exercises a learner copy's metadata declares (`course.exercises`); [] if none.
    A trusted course file, already read once with the bounded reader."""
    try:
        course = json.loads(path.read_text(encoding="utf-8"))["metadata"]["course"]
        return [name for name in course.get("exercises", []) if isinstance(name, str)]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []


def exercise_names(notebook: Notebook, exercises: list[str]) -> list[str]:
    """One name per exercise cell: the declared exercise it defines, else its first
    definition (chapter 02's `Tensor`), else its position."""
    names = []
    for index, cell in enumerate(exercise_cells(notebook), 1):
        defined = TOP_LEVEL_DEF.findall(cell)
        name = next((n for n in defined if n in exercises), defined[0] if defined else "")
        names.append(name or f"exercise cell {index}")
    return names


def exercise_cells(notebook: Notebook) -> list[str]:
    return [cell.source for cell in notebook.cells if "exercise" in cell.metadata.get("tags", [])]


def entry(
    name: str, path: Path, notebook: Notebook | None, problem: str, template: Template
) -> Entry:
    """The submission's answer to each exercise: the last exercise cell defining its name
    (the one that counts when the notebook runs), else the last code cell that does."""
    if notebook is None:
        if not path.exists():
            problem = f"{path} not found (run from the folder it was graded from)"
        return Entry(name, path, problem=f"unreadable: {problem}")
    tagged = exercise_cells(notebook)
    every = [cell.source for cell in notebook.cells]
    code = {}
    for exercise in template.exercises:
        found = [c for c in tagged if exercise in TOP_LEVEL_DEF.findall(c)] or [
            c for c in every if exercise in TOP_LEVEL_DEF.findall(c)
        ]
        if found:
            code[exercise] = found[-1][:MAX_CODE]
    if not code:
        return Entry(name, path, problem="defines none of the exercises")
    return Entry(name, path, code)


# ---------------------------------------------------------------- comparing


def compare(chapter: str, template: Template, entries: list[Entry]) -> Report:
    """Every pair's answers to each exercise, each answer fingerprinted once, the template's
    fingerprints taken out; pairs sharing nothing are left out."""
    fingerprint = _fingerprinter(template)
    prints = {
        (entry.name, exercise): fingerprint(entry.name, code)
        for entry in entries
        for exercise, code in entry.code.items()
    }
    answered = {name for (name, _), found in prints.items() if found.hashes}
    pairs: list[Pair] = []
    medians: dict[str, float] = {}
    for exercise in template.exercises:
        found = [
            (entry.name, prints[entry.name, exercise])
            for entry in entries
            if (entry.name, exercise) in prints and prints[entry.name, exercise].hashes
        ]
        alike = [
            pair
            for i, (name_a, a) in enumerate(found)
            for name_b, b in found[i + 1 :]
            if (pair := _pair(exercise, name_a, a, name_b, b)) is not None
        ]
        medians[exercise] = _median([p.score for p in alike], len(found) * (len(found) - 1) // 2)
        pairs += alike
    pairs.sort(key=lambda p: (-p.score, -max(p.score_a, p.score_b), -p.shared, p.a, p.b))
    marked = [
        e if e.problem or e.name in answered else replace(e, problem=NOTHING_OF_ITS_OWN)
        for e in entries
    ]
    return Report(chapter, template, marked, pairs, medians)


def _fingerprinter(template: Template) -> Any:
    """A function (name, code) -> copydetect's CodeFingerprint of that code, less what
    touches the template: every k-gram that overlaps a run of handed-out code. Dropping only
    the template's own k-grams (copydetect's boilerplate option, which also drops a repeated
    k-gram once only) keeps those that straddle the stub's docstring and the answer's first
    statement, which every answer starting `x = ...` shares."""
    try:
        from copydetect import CodeFingerprint
        from copydetect.utils import get_token_coverage
    except ImportError:
        raise Refused(
            "copydetect is not installed: `make install`, or `pip install copydetect==0.5.0`."
        ) from None

    def raw(name: str, code: str) -> Any:
        return CodeFingerprint(name, NOISE, 1, language="python", fp=io.StringIO(code))

    handed_out = {int(h) for cell in template.cells for h in raw("template", cell).hashes}

    def fingerprint(name: str, code: str) -> Any:
        found = raw(name, code)
        kept = _own(found.hash_idx, handed_out, len(found.filtered_code))
        found.hashes, found.hash_idx = set(kept), kept
        found.token_coverage = get_token_coverage(kept, NOISE, len(found.filtered_code))
        return found

    return fingerprint


def _own(hash_idx: dict, handed_out: set[int], length: int) -> dict:
    """copydetect's k-gram index (hash -> start positions) less every k-gram overlapping a
    k-gram of the handed-out code."""
    covered = [False] * (length + 1)
    for value, starts in hash_idx.items():
        if int(value) in handed_out:
            for start in starts:
                covered[start : start + NOISE] = [True] * NOISE
    touched = [0]  # touched[i]: how many covered positions lie before i
    for flag in covered:
        touched.append(touched[-1] + flag)
    kept: dict = {}
    for value, starts in hash_idx.items():
        own = [s for s in starts if touched[min(s + NOISE, length)] == touched[s]]
        if own:
            kept[value] = own
    return kept


def _pair(exercise: str, name_a: str, a: Any, name_b: str, b: Any) -> Pair | None:
    if not a.hashes & b.hashes:
        return None
    from copydetect import compare_files

    shared, (score_a, score_b), (slices_a, slices_b) = compare_files(a, b)
    if not shared:
        return None
    return Pair(
        name_a,
        name_b,
        exercise,
        float(score_a),
        float(score_b),
        int(shared),
        _spans(slices_a),
        _spans(slices_b),
    )


def _spans(slices: Any) -> tuple[tuple[int, int], ...]:
    """copydetect's 2xN array of starts and ends as (start, end) pairs of ints."""
    return tuple((int(start), int(end)) for start, end in zip(*slices, strict=True))


def _median(scores: list[float], compared: int) -> float:
    """The median over every pair compared; the pairs left out shared nothing (0)."""
    if not compared:
        return 0.0
    every = sorted(scores + [0.0] * (compared - len(scores)))
    middle = len(every) // 2
    return every[middle] if len(every) % 2 else (every[middle - 1] + every[middle]) / 2


# ---------------------------------------------------------------- writing


def write_csv(path: Path, pairs: list[Pair]) -> None:
    """One row per pair and exercise, most alike first; shares as fractions of 1."""
    with path.open("w", encoding="utf-8", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(COLUMNS)
        for rank, pair in enumerate(pairs, 1):
            writer.writerow(
                [
                    rank,
                    pair.a,
                    pair.b,
                    pair.exercise,
                    f"{pair.score:.3f}",
                    f"{pair.score_a:.3f}",
                    f"{pair.score_b:.3f}",
                    pair.shared,
                ]
            )


def _summarize(report: Report, target: Path) -> None:
    skipped = [entry for entry in report.entries if entry.problem]
    compared = len(report.entries) - len(skipped)
    print(
        f"compared the exercise code of {compared} submission(s) of chapter {report.chapter}: "
        f"{len(report.pairs)} pair(s) share code beyond the handed-out notebook; wrote "
        f"{target / CSV_NAME} and {target / HTML_NAME} (a list to read, not a verdict)",
        file=sys.stderr,
    )
    for entry in skipped:
        print(f"  not compared: {entry.name}: {entry.problem}", file=sys.stderr)
