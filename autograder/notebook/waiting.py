""" "checking unbroadcast: 31 cases…" while a check runs in a notebook, gone when it is done.

The first check in a kernel takes seconds (imports, compiling the references), so the cell
says what it is doing. The line lives in an output that starts empty and is updated twice,
to the message and back to empty; the report then appears as the cell's result, in its
place. Empty at both ends matters: nbval and a stored notebook both see an output with no
data, so stored outputs stay comparable. Outside a Jupyter kernel (plain python, a terminal
IPython, the grader) nothing extra is shown.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from autograder.locale import say

PROGRESS_CLASS = "autograder-waiting"


def kernel_display() -> Callable[..., Any] | None:
    """IPython's `display` when running in a Jupyter kernel, else None."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    if shell is None or getattr(shell, "kernel", None) is None:
        return None
    from IPython.display import display

    return display


def message(exercise: str, cases: int) -> str:
    return say("checking {exercise}: {cases} cases…", exercise=exercise, cases=cases)


def bundle(text: str) -> dict[str, str]:
    """The message as text and as a muted HTML line."""
    return {
        "text/plain": text,
        "text/html": f"<div class='{PROGRESS_CLASS}' style='color:#57606a'>"
        f"{html.escape(text)}</div>",
    }


@contextmanager
def waiting(text: str, display: Callable[..., Any] | None = None) -> Iterator[None]:
    """Show `text` while the body runs (in a Jupyter kernel), then clear it, even on error."""
    display = display or kernel_display()
    if display is None:
        yield
        return
    handle = display({}, raw=True, display_id=True)
    handle.update(bundle(text), raw=True)
    try:
        yield
    finally:
        handle.update({}, raw=True)
