"""The submission's cells in the child: each run in a fresh `__main__`, its printing bounded
and its shell and magic lines blanked; and whether the code sets the environment.

Split from child.py, which confines the process, forks its workers and runs the exercises:
this is the part that reads and runs the submitted cells themselves. The child loads it by
its path, beside child.py (it imports the standard library only); the grader imports it
too: rounds.py asks `sets_environment`, slicing.py parses cells with `MAGIC` blanked.
"""

from __future__ import annotations

import io
import re
import sys
import types

OUTPUT_LIMIT = 20_000  # characters of printing kept per cell or exercise


class BoundedWriter(io.TextIOBase):
    """Keeps the first OUTPUT_LIMIT characters; a flood of printing costs nothing more."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0

    def write(self, text: str) -> int:
        if self.size < OUTPUT_LIMIT:
            self.parts.append(text[: OUTPUT_LIMIT - self.size])
        self.size += len(text)
        return len(text)

    def text(self) -> str:
        tail = "\n... (output cut)" if self.size > OUTPUT_LIMIT else ""
        return "".join(self.parts) + tail


MAGIC = re.compile(r"^(\s*)[%!].*$", re.MULTILINE)


def _without_magics(source: str) -> str:
    return MAGIC.sub(lambda m: f"{m.group(1)}pass", source)


def run_cells(cells: list[str], namespace: dict) -> list[dict]:
    """Run each cell; a cell that fails is recorded and the next one still runs."""
    problems = []
    for index, source in enumerate(cells):
        writer = BoundedWriter()
        sys.stdout = sys.stderr = writer
        try:
            exec(compile(_without_magics(source), f"<cell {index + 1}>", "exec"), namespace)
        except BaseException as error:  # SystemExit and KeyboardInterrupt included
            problems.append(
                {
                    "cell": index + 1,
                    "type": type(error).__name__,
                    "message": str(error)[:500],
                }
            )
        finally:
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    return problems


def fresh_main() -> dict:
    """A new `__main__` module, whose namespace the cells run in: `import __main__` in a
    submitted cell gives the notebook's namespace, as in a kernel, not this file's module
    (its functions and their globals lead to the harness)."""
    main = types.ModuleType("__main__")
    sys.modules["__main__"] = main
    return main.__dict__


ENVIRONMENT = re.compile(r"\b(?:environ|putenv|unsetenv)\b")
# What the course's notebooks set before importing TensorFlow, and a child needs no late
# import for: its log level, set or defaulted (it changes nothing but logging; the child's
# environment sets 3), and oneDNN's switch defaulted (`setdefault` only: the child's
# environment already sets it to "0", so the default changes nothing there).
UNCHANGING_SETTINGS = re.compile(
    r"""environ(?:\.setdefault\(|\[)\s*["']TF_CPP_MIN_LOG_LEVEL["']"""
    r"""|environ\.setdefault\(\s*["']TF_ENABLE_ONEDNN_OPTS["']"""
)


def sets_environment(cells: list[str]) -> bool:
    """Whether the submission's code changes the environment (beyond UNCHANGING_SETTINGS).
    TensorFlow and JAX read settings from it when imported (JAX_ENABLE_X64, XLA_FLAGS), so
    such code imports them itself, after its own settings, as its notebook did: in a fresh
    child, which pays the framework's import (seconds), never in one forked from a server
    that imported it already."""
    return any(ENVIRONMENT.search(UNCHANGING_SETTINGS.sub("", cell)) for cell in cells)
