"""`check.<exercise>(fn)`: the check cell under each exercise.

    from autograder import check
    check.unbroadcast(unbroadcast)

Each call returns a Report (`.passed`, shown as HTML in Jupyter, as text elsewhere). A wrong
answer or an exception inside the learner's function is reported, never raised. While it
runs, a Jupyter cell shows "checking unbroadcast: 31 cases…" (notebook/waiting.py).
`check.progress()` shows every chapter's exercises as passed, failed or not answered;
`check.hint("unbroadcast")` gives a nudge before the exercise's first failing check, and the
hints for specific mistakes after one (notebook/hints.py);
`check.predict(name, guess)` commits a guess before a trap and `check.reveal(name, observed)`
shows it beside what the run shows (notebook/predictions.py);
`check.language("zh-CN")` makes every report, hint and message Chinese (the Chinese edition
does it in its first cell);
`check.reset("unbroadcast")` gives the exercise's original cell back, to start it over
(in a new cell below, and shown to copy: authoring/reset.py says why not in place).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autograder.exercises import EXERCISES, no_such_exercise
from autograder.harness.compiling import cache_compiled_programs
from autograder.judging.engine import check_function, notebook_case_count
from autograder.judging.report import Report
from autograder.notebook.waiting import message, waiting

if TYPE_CHECKING:
    from autograder.authoring.reset import Stub
    from autograder.notebook.hints import Hint
    from autograder.notebook.predictions import Shown
    from autograder.notebook.progress import Progress


cache_compiled_programs()


def _checker(name: str) -> Callable[[Any], Report]:
    exercise = EXERCISES[name]

    def check_exercise(fn: Any) -> Report:
        with waiting(message(name, notebook_case_count(exercise))):
            return exercise.presented(check_function(exercise, fn))

    check_exercise.__name__ = name
    check_exercise.__qualname__ = name
    check_exercise.__doc__ = (
        f"Check your `{exercise.signature}` against {exercise.references_text}."
    )
    return check_exercise


def progress(folder: str | Path | None = None) -> Progress:
    """Every chapter's exercises as passed, failed or not answered, from the saved notebooks
    in `folder` (default: this notebook's folder, course/). Save first: it reads the files."""
    from autograder.notebook.progress import progress as course_progress

    return course_progress(Path.cwd() if folder is None else folder)


def hint(exercise: str, number: int = 1) -> Hint:
    """A nudge for `exercise` until its check has failed in this kernel (the idea, never the
    answer); after that, a mistake learners make: `check.hint("unbroadcast", 2)` is the next."""
    from autograder.notebook.hints import hint as exercise_hint

    return exercise_hint(exercise, number)


def reset(exercise: str, notebook: str | Path | None = None) -> Stub:
    """The original cell of `exercise`, to start it over: JupyterLab and Jupyter Notebook put
    it in a new cell below; on Colab or in VS Code, copy it from the output. Your own cell is
    left as it is. Read from this notebook (its cells carry their stubs); `notebook=` names
    the .ipynb file where it cannot be found."""
    from autograder.authoring.reset import in_notebook

    return in_notebook(exercise, notebook)


def predict(name: str, guess: Any) -> Shown:
    """Commit a guess before a trap (`prediction = "b"`); the next cell runs it and
    `check.reveal` says whether you were right. Nothing is graded."""
    from autograder.notebook.predictions import predict as commit

    return commit(name, guess)


def reveal(name: str, observed: Any) -> Shown:
    """What the run shows for the question `name`, beside the guess you committed."""
    from autograder.notebook.predictions import reveal as show

    return show(name, observed)


def language(code: str | None = None) -> str | None:
    """The language of every report, hint and message from now on: "en" or "zh-CN" (the
    Chinese edition's first cell sets it; nothing is shown). Without an argument, the one in
    use."""
    from autograder import locale

    if code is None:
        return locale.current()
    locale.set_language(code)
    return None


def __getattr__(name: str) -> Callable[[Any], Report]:
    if name in EXERCISES:
        return _checker(name)
    if name.startswith("_"):
        # Tools probe a module for dunder and private names: TensorFlow's autograph reads
        # `__module__` of every global of a function it converts (`check` among a notebook's),
        # IPython asks for `_repr_*_`. No exercise starts with "_", and the message below
        # imports nbformat, over a second that the learner's cell would wait for.
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    raise AttributeError(no_such_exercise(name))


def __dir__() -> list[str]:
    return sorted([*EXERCISES, "hint", "language", "predict", "progress", "reset", "reveal"])
