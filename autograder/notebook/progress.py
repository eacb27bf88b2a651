"""Progress across the course: every chapter's exercises as passed, failed or not answered.

Read from the check cells' **saved outputs**, never by running anything: what the table shows
is what the learner last saw under each exercise, it costs a file read per chapter (no
TensorFlow, no JAX, no kernel), and it cannot disagree with the notebook on screen. The cost
of that choice: a check run but not yet saved (JupyterLab autosaves every two minutes) is not
seen, so the view says to save first.

An exercise's check cell is the one whose code is `check.<name>(<name>)`; its output's
headline ("PASSED name", "FAILED name", "NOT ANSWERED YET name", "CANNOT CHECK name") is its
status. No output, or no such cell, counts as not answered; an error output as failed.
"""

from __future__ import annotations

import html
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from autograder.judging.report import FAILED, NOT_ANSWERED, PASSED
from autograder.locale import CHINESE, LANGUAGES, current, language_of, say, speaking

CHAPTER_GLOB = "[0-9][0-9]_*.ipynb"
HEADLINES = (
    ("PASSED ", PASSED),
    ("FAILED ", FAILED),
    ("CANNOT CHECK ", FAILED),
    ("NOT ANSWERED YET ", NOT_ANSWERED),
)
# The report's headline templates, whose first word the Chinese edition's saved checks show.
HEADLINE_TEMPLATES = {
    PASSED: "PASSED {function}: matches {references} on all {count} cases.",
    FAILED: "FAILED {function}: {message}",
    NOT_ANSWERED: "NOT ANSWERED YET {where}: replace the `raise NotImplementedError(...)` "
    "line with your code, then run this cell again.",
}


def headlines() -> tuple[tuple[str, str], ...]:
    """Each headline's first word in every language, with the status it means."""
    translated = []
    for status, template in HEADLINE_TEMPLATES.items():
        for language in LANGUAGES:
            with speaking(language):
                first = say(template).split("{", 1)[0]
            if first.strip():
                translated.append((first, status))
    with speaking(CHINESE):
        cannot = say("CANNOT CHECK {function}: {note}").split("{", 1)[0]
    return (*HEADLINES, *dict.fromkeys(translated), (cannot, FAILED))


COLOURS = {PASSED: "#1a7f37", FAILED: "#cf222e", NOT_ANSWERED: "#9a6700"}


@dataclass(frozen=True)
class ExerciseProgress:
    """One exercise's status as its saved check cell shows it."""

    chapter: str
    notebook: str
    exercise: str
    status: str


def check_cell_source(exercise: str) -> re.Pattern[str]:
    """The check cell of `exercise`: `check.name(name)`, as the notebooks write it."""
    return re.compile(rf"\bcheck\.{exercise}\(\s*{exercise}\s*\)")


def status_of_outputs(outputs: list[NotebookNode]) -> str:
    """The status a check cell's saved outputs show; nothing shown means not answered."""
    for output in outputs:
        if output.get("output_type") == "error":
            return FAILED
        text = output.get("data", {}).get("text/plain", "") or output.get("text", "")
        for prefix, status in headlines():
            if text.lstrip("'\"").startswith(prefix):
                return status
    return NOT_ANSWERED


def notebook_progress(path: Path) -> list[ExerciseProgress]:
    """Each exercise the notebook declares (metadata `course.exercises`), with its status."""
    notebook = nbformat.read(path, as_version=4)
    meta = notebook.metadata.get("course", {})
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    rows = []
    for exercise in meta.get("exercises", []):
        pattern = check_cell_source(exercise)
        cells = [cell for cell in code if pattern.search(cell.source)]
        status = status_of_outputs(cells[-1].outputs) if cells else NOT_ANSWERED
        rows.append(
            ExerciseProgress(meta.get("chapter", path.name[:2]), path.name, exercise, status)
        )
    return rows


def course_progress(folder: Path) -> list[ExerciseProgress]:
    """Every chapter notebook of `folder`, in chapter order."""
    paths = sorted(Path(folder).glob(CHAPTER_GLOB))
    if not paths:
        raise FileNotFoundError(
            say(
                "No chapter notebooks (NN_name.ipynb) in {folder}: pass the course folder, "
                "e.g. `python -m autograder progress course/`.",
                folder=folder,
            )
        )
    return [row for path in paths for row in notebook_progress(path)]


@dataclass(frozen=True)
class Progress:
    """The whole course's progress: a text table, and an HTML table in Jupyter."""

    folder: Path
    rows: tuple[ExerciseProgress, ...]

    def counts(self) -> dict[str, int]:
        return {
            status: sum(row.status == status for row in self.rows)
            for status in (PASSED, FAILED, NOT_ANSWERED)
        }

    def summary(self) -> str:
        counts = self.counts()
        return say(
            "{passed} of {total} exercises passed, {failed} failed, {open} not "
            "answered (from the saved notebooks in {folder}: save a notebook to count "
            "its latest checks).",
            passed=counts[PASSED],
            total=len(self.rows),
            failed=counts[FAILED],
            open=counts[NOT_ANSWERED],
            folder=self.folder,
        )

    def __str__(self) -> str:
        width = max([len(row.exercise) for row in self.rows] + [len(say("exercise"))])
        lines = [f"{say('chapter'):<7}  {say('exercise'):<{width}}  {say('status')}"]
        lines += [
            f"{row.chapter:<7}  {row.exercise:<{width}}  {say(row.status)}" for row in self.rows
        ]
        return "\n".join([*lines, "", self.summary()])

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{html.escape(row.chapter)}</td><td><code>{html.escape(row.exercise)}"
            f"</code></td><td style='color:{COLOURS[row.status]};font-weight:bold'>"
            f"{html.escape(say(row.status))}</td></tr>"
            for row in self.rows
        )
        return (
            f"<div class='autograder-progress'><table><thead><tr><th>{say('chapter')}</th>"
            f"<th>{say('exercise')}</th><th>{say('status')}</th></tr></thead><tbody>{rows}"
            "</tbody></table>"
            f"<p style='white-space:normal'>{html.escape(self.summary())}</p></div>"
        )


def progress(folder: Path | str) -> Progress:
    """The progress view of the chapter notebooks in `folder`."""
    return Progress(Path(folder), tuple(course_progress(Path(folder))))


def folder_language(folder: Path) -> str | None:
    """The language of the folder's chapter notebooks (their `course.language`), when they
    all share one; None for an empty folder or a mix."""
    found = {
        language_of(nbformat.read(path, as_version=4).metadata)
        for path in sorted(Path(folder).glob(CHAPTER_GLOB))
    }
    return found.pop() if len(found) == 1 else None


def main(*, folder: Path, language: str | None = None) -> int:
    """`python -m autograder progress [FOLDER] [--language zh-CN]`: print the table in
    `language`, by default the notebooks' own (course/zh-CN/ answers in Chinese); exit 0 (a
    view, not a test), 1 when the folder holds no chapter."""
    with speaking(language or folder_language(folder) or current()):
        try:
            print(progress(folder))
        except FileNotFoundError as problem:
            print(problem, file=sys.stderr)
            return 1
    return 0
