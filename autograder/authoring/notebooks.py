"""The notebook pipeline: solutions/ is the source, course/ is generated from it.

A learner copy is the solution notebook with every `### BEGIN SOLUTION` ... `### END
SOLUTION` block replaced by a stub that raises NotImplementedError naming the exercise.
Both copies are executed here, so their stored outputs are what nbval compares against:
the learner copy's check cells show "not answered yet", the solutions' show "passed".
Each stubbed cell also keeps its stub in its metadata (`course.stub`), so `reset` can give a
learner the original cell back from the notebook alone, without solutions/ (authoring/reset.py).
Both notebooks of a build record a digest of what the build read (`built_from`, below), so
`sync NN` can leave an edition whose inputs have not changed since as it is.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat
from nbclient import NotebookClient
from nbformat import NotebookNode

from autograder.locale import ENGLISH, say, speaking

if TYPE_CHECKING:
    from autograder.authoring.translations import Edition

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
DEF_LINE = re.compile(r"^\s*def\s+(\w+)\s*\(")
EXECUTION_TIMEOUT = 600  # seconds per cell
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
BUILT_FROM = "built_from"  # notebook metadata: the digest of the inputs its build read
COURSEKIT_MODULE = re.compile(r"\bcoursekit\.(\w+)|\bfrom\s+coursekit\s+import\s+([\w, ]+)")


class SolutionMarkerError(ValueError):
    """A solution block that is not closed, or not inside a function."""


def stub_line(indent: str, exercise: str, language: str = ENGLISH) -> str:
    """The line a solution block becomes, its message in `language` (a Chinese learner copy
    whose chapter's code text is translated, translations.translates_code)."""
    with speaking(language):
        message = say("Exercise {exercise}: replace this line with your code.", exercise=exercise)
    return f'{indent}raise NotImplementedError("{message}")'


def strip_solutions(source: str, where: str = "cell", language: str = ENGLISH) -> str:
    """Replace each solution block by a stub raising NotImplementedError(exercise name)."""
    out: list[str] = []
    exercise = None
    inside = False
    for number, line in enumerate(source.splitlines(), start=1):
        stripped = line.strip()
        if match := DEF_LINE.match(line):
            exercise = exercise if inside else match.group(1)
        if stripped == BEGIN:
            if inside:
                raise SolutionMarkerError(f"{where}, line {number}: {BEGIN} inside a block.")
            if exercise is None:
                raise SolutionMarkerError(
                    f"{where}, line {number}: {BEGIN} must be inside a `def` (the exercise)."
                )
            inside = True
            out.append(stub_line(line[: len(line) - len(line.lstrip())], exercise, language))
        elif stripped == END:
            if not inside:
                raise SolutionMarkerError(f"{where}, line {number}: {END} without {BEGIN}.")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise SolutionMarkerError(f"{where}: {BEGIN} is never closed by {END}.")
    return "\n".join(out)


def learner_copy(
    solution: NotebookNode, name: str = "notebook", stub_language: str = ENGLISH
) -> NotebookNode:
    """The learner's notebook: solutions stubbed out (their message in `stub_language`), each
    stub also recorded in its cell's metadata (what reset restores), outputs cleared (to be
    re-executed)."""
    notebook = copy.deepcopy(solution)
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        stub = strip_solutions(cell.source, f"{name} cell {index}", stub_language)
        if stub != cell.source:
            cell.metadata.setdefault("course", {})["stub"] = stub
        cell.source = stub
        cell.outputs = []
        cell.execution_count = None
    return notebook


def execute(notebook: NotebookNode, directory: Path) -> NotebookNode:
    """Run every cell top to bottom in a fresh kernel; a cell that raises stops the build.

    No execution timestamps are recorded (nbclient's `record_timing`), and any left from an
    older build are removed: they changed every line of `metadata.execution` on each rebuild,
    burying the changes a reviewer should see. For the same reason consecutive stream outputs
    are merged (nbconvert's CoalesceStreamsPreprocessor): how a cell's printing was split into
    messages depends on when the kernel flushed, not on what it printed.

    nbconvert is imported here, not at the top: only a build executes notebooks, while
    `check.reset` and `python -m autograder reset` import this module in a learner's or the
    grader's environment, which need not have nbconvert (requirements-grader.txt,
    `pip install .`)."""
    from nbconvert.preprocessors import CoalesceStreamsPreprocessor

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    without_run_records(notebook)
    client = NotebookClient(
        notebook,
        timeout=EXECUTION_TIMEOUT,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(directory)}},
    )
    client.execute()
    CoalesceStreamsPreprocessor().preprocess(notebook, {})
    return notebook


def without_run_records(notebook: NotebookNode) -> NotebookNode:
    """Drop what a previous run left beside the outputs: each cell's `metadata.execution`
    (the kernel's timestamps) and the widgets' saved state (nbclient writes it anew)."""
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)
    notebook.metadata.pop("widgets", None)
    return notebook


def stable_widget_ids(notebook: NotebookNode, name: str) -> NotebookNode:
    """The notebook with each widget's random model id replaced by one derived from `name` and
    the widget's place in creation order, so an unchanged notebook rebuilds to the same file.

    nbclient stores the widgets' state in creation order; their ids (uuid4) are referenced
    from the outputs and from other widgets' state ("IPY_MODEL_<id>"), all replaced alike."""
    state = notebook.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    if not state:
        return notebook
    renamed = {
        old: hashlib.sha256(f"{name}:{index}".encode()).hexdigest()[:32]
        for index, old in enumerate(state)
    }
    pattern = re.compile("|".join(map(re.escape, renamed)))
    text = pattern.sub(lambda match: renamed[match.group(0)], json.dumps(notebook))
    return nbformat.from_dict(json.loads(text))


@dataclass(frozen=True)
class Pair:
    """A solution notebook and the learner copy generated from it."""

    solution: Path
    learner: Path


def pairs(solutions: Path, course: Path) -> list[Pair]:
    return [Pair(path, course / path.name) for path in sorted(solutions.glob("[0-9]*.ipynb"))]


def build(pair: Pair) -> None:
    """Execute the solution (storing its outputs), then generate and execute the learner copy."""
    solution = nbformat.read(pair.solution, as_version=4)
    solution.metadata[BUILT_FROM] = inputs_digest(_root_of(pair), solution, pair.solution.name)
    _execute_both(solution, pair.solution, pair.learner)


def build_edition(root: Path, edition: Edition) -> None:
    """The chapter's edition in another language (translations.Edition): its solution
    executed, then its learner copy generated and executed, like the English pair."""
    from autograder.authoring.translations import edition_notebook

    solution = edition_notebook(root, edition)
    solution.metadata[BUILT_FROM] = inputs_digest(
        root, solution, edition.source.name, edition.language
    )
    _execute_both(solution, edition.solution, edition.learner, stub_language(edition))


def stub_language(edition: Edition) -> str:
    """The language of the edition's stubs: its own once its chapter's code text is
    translated (translations.translates_code), English before."""
    from autograder.authoring import translations

    english = translations.read(edition.source)
    sections = translations.read_sections(edition.translation)
    return edition.language if translations.translates_code(english, sections) else ENGLISH


def _root_of(pair: Pair) -> Path:
    return pair.solution.parent.parent  # <root>/solutions/NN_name.ipynb


def build_inputs(root: Path, notebook: NotebookNode, name: str, language: str = "en") -> list[Path]:
    """The files besides the notebook that a build of chapter `name` reads and that belong to
    the chapter: its exercise modules and harness (`autograder/exercises/chNN_*.py`,
    `autograder/harness/chNN_*.py`), the `coursekit` modules its code names, and, for an
    edition in another language, that language's message catalogue (every .po file: the
    reports look a message up in all of them). Shared code (the judging engine, `check`,
    the kernel's packages) is not among them: after changing it, rebuild (`sync NN
    --rebuild`, `build-course`)."""
    number = name[:2]
    package = root / "autograder"
    found = [
        *sorted((package / "exercises").glob(f"ch{number}_*.py")),
        *sorted((package / "harness").glob(f"ch{number}_*.py")),
    ]
    named: set[str] = set()
    for cell in notebook.cells:
        if cell.cell_type == "code":
            for match in COURSEKIT_MODULE.finditer(cell.source):
                named.update(
                    [match.group(1)] if match.group(1) else re.findall(r"\w+", match.group(2))
                )
    found += [
        path
        for module in sorted(named)
        for path in (root / "coursekit" / f"{module}.py", root / "coursekit" / module)
        if path.is_file() or path.is_dir()
    ]
    if language != "en":
        found += sorted((package / "locale" / language).glob("*.po"))
    return [
        file for path in found for file in (sorted(path.rglob("*.py")) if path.is_dir() else [path])
    ]


def inputs_digest(root: Path, notebook: NotebookNode, name: str, language: str = "en") -> str:
    """Sixteen hex digits of SHA-256 over what a build of `notebook` reads: its cells and
    metadata without what a build writes (outputs, execution counts, run records, the kernel's
    `language_info`, this digest), and the content of each of `build_inputs`, named by its
    path under `root` (so a copy of the checkout gets the same digest)."""
    bare = without_run_records(copy.deepcopy(notebook))
    for key in ("language_info", BUILT_FROM):
        bare.metadata.pop(key, None)
    for cell in bare.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    digest = hashlib.sha256(json.dumps(bare, sort_keys=True, ensure_ascii=False).encode())
    for path in build_inputs(root, notebook, name, language):
        digest.update(f"\0{path.relative_to(root).as_posix()}\0".encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def built_from(*paths: Path) -> str | None:
    """The digest the notebooks at `paths` were all built from; None when one is missing,
    records none (built before digests were recorded) or records another."""
    found = {
        nbformat.read(path, as_version=4).metadata.get(BUILT_FROM) if path.exists() else None
        for path in paths
    }
    return found.pop() if len(found) == 1 else None


def pair_is_current(pair: Pair) -> bool:
    """Whether the pair's two notebooks were built from the solution and chapter sources as
    they are now (so building again would execute the same inputs)."""
    if not pair.solution.exists():
        return False
    solution = nbformat.read(pair.solution, as_version=4)
    recorded = built_from(pair.solution, pair.learner)
    return recorded is not None and recorded == inputs_digest(
        _root_of(pair), solution, pair.solution.name
    )


def edition_is_current(root: Path, edition: Edition) -> bool:
    """Whether the edition's two notebooks were built from what they would be built from now
    (the English source, the translation, the chapter's sources and the catalogue)."""
    from autograder.authoring.translations import edition_notebook

    recorded = built_from(edition.solution, edition.learner)
    return recorded is not None and recorded == inputs_digest(
        root, edition_notebook(root, edition), edition.source.name, edition.language
    )


def _execute_both(
    solution: NotebookNode, solution_path: Path, learner_path: Path, stubs: str = ENGLISH
) -> None:
    """Execute `solution` and write it; then its learner copy (stubs in `stubs`' language),
    executed, beside it in course/."""
    language = solution.metadata.get("course", {}).get("language", "en")
    for role, notebook, path in (
        ("solution", solution, solution_path),
        ("learner", None, learner_path),
    ):
        if notebook is None:
            notebook = learner_copy(solution, solution_path.name, stubs)
        path.parent.mkdir(parents=True, exist_ok=True)
        execute(notebook, path.parent)
        nbformat.write(stable_widget_ids(notebook, f"{language}/{role}/{path.name}"), path)


def edition_sync_problems(root: Path, edition: Edition) -> list[str]:
    """What differs between an edition's two notebooks and what the English source and the
    translation generate now (sources and recorded stubs; not outputs)."""
    from autograder.authoring.translations import edition_notebook

    expected = edition_notebook(root, edition)
    problems = []
    for path, notebook in (
        (edition.solution, expected),
        (edition.learner, learner_copy(expected, edition.solution.name, stub_language(edition))),
    ):
        if not path.exists():
            problems.append(f"{path} is missing")
            continue
        actual = nbformat.read(path, as_version=4)
        if _sources(notebook) != _sources(actual):
            problems.append(
                f"{path}: cells differ from what {edition.source} and "
                f"{edition.translation} generate"
            )
        if notebook.metadata.get("course") != actual.metadata.get("course"):
            problems.append(f"{path}: course metadata differs from {edition.source}")
    return problems


def _sources(notebook: NotebookNode) -> list[tuple[str, str, object]]:
    """Each cell's type, source and recorded stub: a copy without its stubs is out of sync."""
    return [(cell.cell_type, cell.source, cell.metadata.get("course")) for cell in notebook.cells]


def sync_problems(pair: Pair) -> list[str]:
    """What differs between course/ and a fresh learner copy of solutions/ (sources and
    recorded stubs; not outputs)."""
    if not pair.learner.exists():
        return [f"{pair.learner} is missing"]
    solution = nbformat.read(pair.solution, as_version=4)
    expected = learner_copy(solution, pair.solution.name)
    actual = nbformat.read(pair.learner, as_version=4)
    problems = []
    if _sources(expected) != _sources(actual):
        problems.append(f"{pair.learner}: cells differ from the learner copy of {pair.solution}")
    if expected.metadata.get("course") != actual.metadata.get("course"):
        problems.append(f"{pair.learner}: course metadata differs from {pair.solution}")
    return problems
