"""Reading the submitted notebooks: each once per `grade`, before anything heavy is imported.

`grade` reads every submission here first (start.py): its chapter decides which warm
children start and whether children fork from a server; how many exercises it answered
decides the order submissions start in; its code cells are what its children run. It is
read with `json`, not nbformat: importing nbformat (jsonschema and its dependencies) costs
the grader's start-up 1-4 s, more than grading a numpy chapter. Standard library only.
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder.grading.bounded import TooLarge, Untrusted, read_bytes
from autograder.locale import language_of

# The largest submission read, in bytes: a larger file is refused with a message (a
# notebook of this course is well under 1 MiB with its outputs; what is kept of one read is
# its code cells only).
READ_LIMIT = 64 * 1024**2
# The most JSON values (an upper bound: its commas and opening brackets) a submission may hold.
# A course notebook with its outputs holds about 3,000; parsing costs the grader up to about
# 200 bytes a value (a 16 MiB file of small objects took 400 MiB), so this bounds the grader's
# memory per submission near 100 MiB where READ_LIMIT alone allowed 1.6 GiB.
VALUE_LIMIT = 500_000
SKIPPED_TAGS = {"display-only"}
# The install cell (autograder/authoring/coursemap.py): it stays in place, so cells keep their
# numbers in the feedback, but runs nothing: in the grader the course is the grader itself.
NOT_RUN_TAGS = {"colab-setup"}
STEM_BYTES = 100  # a cleaned stem's most UTF-8 bytes: well under the usual 255 per name


@dataclass(frozen=True)
class Cell:
    cell_type: str
    source: str
    metadata: dict


@dataclass(frozen=True)
class Notebook:
    """The parts of a submitted notebook the grader uses: its code cells (outputs and prose
    are dropped as it is read) and the chapter its course metadata names."""

    cells: list[Cell]
    chapter: str | None = None
    language: str = "en"  # `course.language`: the grader answers in the notebook's language


@dataclass(frozen=True)
class Submission:
    """One submitted file, read once: where it came from, the folder its results go to
    under --out (`stem`), and its notebook, or `problem` saying what is wrong with it."""

    path: Path
    stem: str
    notebook: Notebook | None = None
    problem: str = ""
    chapter: str | None = field(init=False, default=None)
    language: str = field(init=False, default="en")

    def __post_init__(self) -> None:
        if self.notebook is not None:
            object.__setattr__(self, "chapter", self.notebook.chapter)
            object.__setattr__(self, "language", self.notebook.language)

    def answered_exercises(self) -> int:
        """How many exercise cells no longer hold the stub's NotImplementedError: the work
        this submission is likely to cost. Submissions start in that order, most first, so a
        batch does not end with one long submission running alone while other slots idle."""
        if self.notebook is None:
            return 0
        return sum(
            1
            for cell in self.notebook.cells
            if "exercise" in cell.metadata.get("tags", [])
            and "NotImplementedError" not in cell.source
        )


def read_submissions(paths: list[Path]) -> list[Submission]:
    """Every submission read once, each with its own output folder (output_folders)."""
    return [
        read_submission(path, stem) for path, stem in zip(paths, output_folders(paths), strict=True)
    ]


def read_submission(path: Path, stem: str) -> Submission:
    notebook, problem = read_notebook(path)
    return Submission(path, stem, notebook, problem)


def read_notebook(path: Path) -> tuple[Notebook | None, str]:
    """(notebook, "") or (None, a message saying what is wrong and what to do). A FIFO or a
    device is never read (it could block the batch), nor more than READ_LIMIT bytes."""
    try:
        data = read_bytes(path, READ_LIMIT, follow_symlinks=True)
        if json_values_at_most(data) > VALUE_LIMIT:
            return None, (
                f"{path.name} holds more than {VALUE_LIMIT:,} JSON values, far more "
                "than a notebook of this course. Clear its outputs (Edit > Clear "
                "Outputs of All Cells), save it and submit it again."
            )
        return parse_notebook(json.loads(data.decode("utf-8"))), ""
    except (RecursionError, MemoryError):  # nested deeper than the parser's recursion limit
        return None, (
            f"{path.name} is not a valid Jupyter notebook: its JSON is nested too "
            "deeply to read. Download it again from JupyterLab (File > Download) "
            "and resubmit."
        )
    except TooLarge:
        return None, (
            f"{path.name} is larger than {READ_LIMIT // 1024**2} MiB. Clear its "
            "outputs (Edit > Clear Outputs of All Cells), save it and submit it "
            "again."
        )
    except (Untrusted, UnicodeDecodeError) as error:
        return None, f"could not read {path.name}: {error}. Submit the .ipynb file itself."
    except ValueError as error:  # JSON errors, and a structure that is not a notebook
        return None, (
            f"{path.name} is not a valid Jupyter notebook ({type(error).__name__}: "
            f"{str(error)[:200]}). Download it again from JupyterLab (File > Download) "
            "and resubmit."
        )


def json_values_at_most(data: bytes) -> int:
    """An upper bound on the values a JSON text holds, counted at C speed before parsing:
    every value but the first follows a comma, and every container opens with a bracket
    (commas and brackets inside strings only make the bound looser)."""
    return data.count(b",") + data.count(b"[") + data.count(b"{") + 1


def parse_notebook(data: Any) -> Notebook:
    """A version-4 notebook's code cells, each source joined, and its chapter; ValueError
    for anything else."""
    if not isinstance(data, dict) or data.get("nbformat") != 4:
        raise ValueError("not a version 4 notebook")
    cells, metadata = data.get("cells"), data.get("metadata", {})
    if not isinstance(cells, list) or not isinstance(metadata, dict):
        raise ValueError("cells must be a list and metadata an object")
    kept = [cell for cell in map(_cell, cells) if cell.cell_type == "code"]
    return Notebook(kept, chapter_in(metadata), language_of(metadata))


def _cell(data: Any) -> Cell:
    if not isinstance(data, dict) or not isinstance(data.get("cell_type"), str):
        raise ValueError("a cell without a cell_type")
    source, metadata = data.get("source", ""), data.get("metadata", {})
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        source = "".join(source)
    tags = metadata.get("tags", []) if isinstance(metadata, dict) else None
    if not isinstance(source, str) or not isinstance(tags, list):
        raise ValueError("a cell's source must be text and its tags a list")
    return Cell(data["cell_type"], source, {"tags": [t for t in tags if isinstance(t, str)]})


def chapter_in(metadata: dict) -> str | None:
    """The chapter a notebook's metadata names (`course.chapter`), or None."""
    course = metadata.get("course", {})
    return str(course["chapter"]) if isinstance(course, dict) and "chapter" in course else None


def program_cells(notebook: Any) -> tuple[list[str], set[int]]:
    """The code cells that define things (display-only cells such as plots and timings are
    skipped, the install cell is left empty), and the 1-based positions among them of the
    exercise cells."""
    kept = [
        cell
        for cell in notebook.cells
        if cell.cell_type == "code" and not SKIPPED_TAGS & set(cell.metadata.get("tags", []))
    ]
    exercise_cells = {
        index
        for index, cell in enumerate(kept, start=1)
        if "exercise" in cell.metadata.get("tags", [])
    }
    sources = [
        "" if NOT_RUN_TAGS & set(cell.metadata.get("tags", [])) else cell.source for cell in kept
    ]
    return sources, exercise_cells


def notable_cell_problems(problems: list[dict], exercise_cells: set[int]) -> list[dict]:
    """Errors worth a student's attention: in exercise cells, or syntax errors anywhere.

    Demonstration cells that use TensorFlow or JAX fail in the grader by design (the
    frameworks are not available to submitted code); reporting those would only confuse.
    """
    return [
        p
        for p in problems
        if p.get("cell") in exercise_cells or p.get("type") in ("SyntaxError", "IndentationError")
    ]


def output_folders(paths: list[Path]) -> list[str]:
    """One output folder name per submission that can neither collide nor escape `--out`.

    The position comes first, so `alice/hw.ipynb` and `bob/hw.ipynb` get separate folders,
    and a name such as `...ipynb` or `grades.csv.ipynb` stays a plain folder name.
    """
    width = max(3, len(str(len(paths))))
    return [f"{index:0{width}d}-{clean_stem(path)}" for index, path in enumerate(paths, 1)]


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
