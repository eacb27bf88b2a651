"""Start one exercise over: its cell back to the original stub, from a shell or the notebook.

Where the stub comes from: each exercise cell of a learner copy carries its own stub in its
metadata (`cell.metadata["course"]["stub"]`, written by `notebooks.learner_copy`), so reset
needs only the notebook and this package: no clone of the repository, no solutions/ (a
learner on Colab, or one who downloaded a chapter, has neither). A notebook made before
stubs were recorded falls back to its solution notebook (`--solutions FOLDER`, by default
solutions/ beside course/), stubbed exactly as the build pipeline does.

From a shell, `python -m autograder reset NOTEBOOK EXERCISE` rewrites that one cell in the
file (its outputs and execution count cleared: the stub has not run); every other cell, the
learner's notes and answers included, is written back as it was read.

From inside the notebook, `check.reset("unbroadcast")` does not rewrite the file: the
frontend owns the open notebook and would overwrite the file on its next save. It reads the
stub from the notebook instead (on Colab, the open notebook through Colab's frontend;
elsewhere the saved file: the one the frontend names in the kernel, JupyterLab's
`__session__` or VS Code's `__vsc_ipynb_file__`, else the only file of the exercise's chapter
in the working folder, or the one passed as `notebook=`) and gives it back twice: in a new
cell under the calling one (IPython's `set_next_input`, which JupyterLab and Jupyter
Notebook honour and Colab and VS Code ignore) and shown as text to copy (everywhere). The
learner's own cell is left alone, to delete or to keep beside the fresh one.
"""

from __future__ import annotations

import html
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
from nbformat import NotebookNode

from autograder.authoring import code_text
from autograder.authoring.notebooks import BEGIN, DEF_LINE, strip_solutions
from autograder.locale import ENGLISH, current, normalized, say, speaking

COLAB_TIMEOUT = 10  # seconds to wait for Colab's frontend to send the open notebook


class ResetError(ValueError):
    """Reset cannot proceed; the message says what is missing and what to do."""


def defines(cell: NotebookNode, exercise: str) -> bool:
    """A code cell defining `def exercise(...)` at its top level."""
    return cell.cell_type == "code" and any(
        (match := DEF_LINE.match(line)) and match.group(1) == exercise and not line[:1].isspace()
        for line in cell.source.splitlines()
    )


def exercise_cell_index(notebook: NotebookNode, exercise: str, where: Path | str) -> int:
    """The cell of `exercise`: the one tagged `exercise` that defines it, else any that does."""
    found = [i for i, cell in enumerate(notebook.cells) if defines(cell, exercise)]
    tagged = [i for i in found if "exercise" in notebook.cells[i].metadata.get("tags", [])]
    if not found:
        declared = notebook.metadata.get("course", {}).get("exercises", [])
        raise ResetError(
            say(
                "No cell of {where} defines `def {exercise}(...)`. Its exercises: {declared}.",
                where=where,
                exercise=exercise,
                declared=", ".join(declared) or say("none declared"),
            )
        )
    return (tagged or found)[0]


def recorded_stub(cell: NotebookNode) -> str | None:
    """The stub the learner copy recorded in this cell, or None (a notebook made before)."""
    stub = cell.metadata.get("course", {}).get("stub")
    return stub if isinstance(stub, str) else None


def no_stub(name: str, exercise: str) -> ResetError:
    """What to do when neither the notebook nor a solutions folder has the stub."""
    return ResetError(
        say(
            "The `{exercise}` cell of {name} does not carry its original stub (the notebook "
            "was made before stubs were recorded). Either get a fresh copy of the chapter from "
            "the course (its cells carry their stubs) and copy your answers over, or pass the "
            "solutions/ folder of a clone of the course repository: `python -m autograder "
            "reset {name} {exercise} --solutions FOLDER`.",
            exercise=exercise,
            name=name,
        )
    )


def solution_for(notebook: Path, solutions: Path | None, exercise: str) -> Path:
    """The solution notebook a learner copy was built from: solutions/ beside course/."""
    folder = solutions if solutions is not None else notebook.resolve().parent.parent / "solutions"
    path = folder / notebook.name
    if not path.is_file():
        if solutions is None:
            raise no_stub(notebook.name, exercise)
        raise ResetError(
            say(
                "Cannot find {path}, the notebook {name} was generated from.",
                path=path,
                name=notebook.name,
            )
        )
    return path


def original_stub(solution: Path, exercise: str) -> str:
    """The exercise cell as a fresh learner copy has it, made from its solution notebook."""
    notebook = nbformat.read(solution, as_version=4)
    cell = notebook.cells[exercise_cell_index(notebook, exercise, solution)]
    return strip_solutions(cell.source, where=f"{solution.name}, exercise {exercise}")


def stub_for(cell: NotebookNode, notebook: Path, exercise: str, solutions: Path | None) -> str:
    """A solutions folder that is named wins; then the cell's own stub; then, in a solution
    notebook (either edition), its own cell stubbed; then solutions/ beside course/ (a
    notebook made before stubs were recorded, in a clone)."""
    if solutions is None and (stub := recorded_stub(cell)) is not None:
        return stub
    if solutions is None and BEGIN in cell.source:
        return strip_solutions(
            cell.source,
            where=f"{notebook.name}, exercise {exercise}",
            language=solution_stub_language(cell, notebook),
        )
    return original_stub(solution_for(notebook, solutions, exercise), exercise)


def solution_stub_language(cell: NotebookNode, notebook: Path) -> str:
    """The language of a solution notebook's stub, as its learner copy has it: the notebook's
    once the cell's own text is translated (no English prose left in it), else English."""
    translated = not code_text.prose_pieces(cell.source)
    return notebook_language(notebook) if translated else ENGLISH


def reset_exercise(notebook: Path, exercise: str, solutions: Path | None = None) -> int:
    """Restore the exercise cell in place; return its index. Other cells are not touched."""
    learner = nbformat.read(notebook, as_version=4)
    index = exercise_cell_index(learner, exercise, notebook)
    cell = learner.cells[index]
    cell.source = stub_for(cell, notebook, exercise, solutions)
    cell.outputs = []
    cell.execution_count = None
    nbformat.write(learner, notebook)
    return index


def notebook_language(notebook: Path) -> str:
    """The language a notebook's learner reads: its `course.language`, else the current one
    (an unreadable file, or one made before notebooks recorded their language)."""
    try:
        course = nbformat.read(notebook, as_version=4).metadata.get("course", {})
    except (OSError, ValueError):
        return current()
    language = course.get("language") if isinstance(course, dict) else None
    return normalized(language) if language else current()


def main(*, notebook: Path, exercise: str, solutions: Path | None = None) -> int:
    """Reset and say what was done, and what the learner must do in JupyterLab, in the
    notebook's language; 1 on a problem."""
    with speaking(notebook_language(notebook)):
        try:
            index = reset_exercise(notebook, exercise, solutions)
        except (ResetError, FileNotFoundError) as problem:
            print(say("Cannot reset: {problem}", problem=problem), file=sys.stderr)
            return 1
        print(
            say(
                "Reset cell {index} of {notebook} ({exercise}) to its original stub; no other "
                "cell changed. If the notebook is open, use File > Reload Notebook from Disk "
                "before saving.",
                index=index,
                notebook=notebook,
                exercise=exercise,
            )
        )
    return 0


# Inside the notebook ---------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class Stub:
    """What `check.reset` gives back: the original exercise cell, shown to copy."""

    exercise: str
    source: str

    def intro(self) -> str:
        return say(
            "The original `{exercise}` cell. JupyterLab and Jupyter Notebook put it in a new "
            "cell below this one; on Colab or in VS Code, copy it from here into your exercise "
            "cell. Run it to start over (your own cell is left as it is).",
            exercise=self.exercise,
        )

    def __repr__(self) -> str:
        return f"{self.intro()}\n\n{self.source}"

    def _repr_html_(self) -> str:
        return f"<p>{html.escape(self.intro())}</p><pre>{html.escape(self.source)}</pre>"


def _shell() -> Any:
    """The running IPython shell, or None outside IPython."""
    ipython = sys.modules.get("IPython")
    return ipython.get_ipython() if ipython is not None else None


def colab_notebook() -> NotebookNode | None:
    """The open notebook as Colab's frontend holds it, or None off Colab or when it does not
    answer. `get_ipynb` is Colab's own (private) request: on Colab there is no file to read."""
    if "google.colab" not in sys.modules:
        return None
    try:
        from google.colab import _message  # type: ignore[import-not-found]

        reply = _message.blocking_request("get_ipynb", timeout_sec=COLAB_TIMEOUT)
        return nbformat.reads(json.dumps(reply["ipynb"]), as_version=4)  # joins source lines
    except Exception:  # any failure of a private API means: cannot read it this way
        return None


def saved_notebook(chapter: str) -> Path | None:
    """The notebook file this kernel runs: the one the frontend names, else the only file of
    the chapter (`03_*.ipynb`) in the working folder (Jupyter starts kernels in the
    notebook's folder)."""
    user_ns = getattr(_shell(), "user_ns", {})
    for name in (user_ns.get("__session__"), user_ns.get("__vsc_ipynb_file__")):
        if isinstance(name, str) and name.endswith(".ipynb") and Path(name).is_file():
            return Path(name)
    found = sorted(Path.cwd().glob(f"{chapter}_*.ipynb"))
    return found[0] if len(found) == 1 else None


def chapter_of(exercise: str) -> str:
    """The exercise's chapter ("03"), or a ResetError naming the exercises there are."""
    from autograder.exercises import EXERCISES, no_such_exercise

    if exercise not in EXERCISES:
        raise ResetError(no_such_exercise(exercise))
    return EXERCISES[exercise].chapter


def not_found(exercise: str, chapter: str) -> ResetError:
    """What to do when the kernel cannot find its notebook (no file named, none in the folder,
    Colab not answering)."""
    return ResetError(
        say(
            "Cannot find this notebook's file to read the `{exercise}` stub from. Name it: "
            'check.reset("{exercise}", notebook="path/to/{chapter}_....ipynb") (on Colab: '
            "File > Download > Download .ipynb, upload it in the Files pane and pass "
            '"/content/<its name>"), or from a shell run `python -m autograder reset '
            "NOTEBOOK {exercise}`.",
            exercise=exercise,
            chapter=chapter,
        )
    )


def stub_in_notebook(exercise: str, notebook: str | Path | None = None) -> str:
    """The stub of `exercise`, read from the notebook this kernel runs (or `notebook`)."""
    chapter = chapter_of(exercise)
    if notebook is None and (live := colab_notebook()) is not None:
        cell = live.cells[exercise_cell_index(live, exercise, "this notebook")]
        if (stub := recorded_stub(cell)) is None:
            raise no_stub("this notebook", exercise)
        return stub
    path = Path(notebook) if notebook is not None else saved_notebook(chapter)
    if path is None or not path.is_file():
        raise not_found(exercise, chapter)
    learner = nbformat.read(path, as_version=4)
    cell = learner.cells[exercise_cell_index(learner, exercise, path)]
    return stub_for(cell, path, exercise, None)


def in_notebook(exercise: str, notebook: str | Path | None = None) -> Stub:
    """`check.reset(exercise)`: the original stub in a new cell below (where the frontend
    supports it) and shown to copy; nothing is written to the notebook's file."""
    stub = Stub(exercise, stub_in_notebook(exercise, notebook))
    if (shell := _shell()) is not None:
        shell.set_next_input(stub.source, replace=False)
    return stub
