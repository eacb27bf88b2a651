"""`python -m autograder sync NN`: one chapter, from its edited sources to every generated file.

A maintainer edits the chapter's sources: the solution notebook (`solutions/NN_*.ipynb`), the
exercise module (`autograder/exercises/chNN_*.py`), and, to finish, the Chinese: the chapter's
messages (`autograder/locale/zh-CN/chNN.po`) and prose (`translations/zh-CN/NN_*.md`). Sync
makes everything else from them, in order:

1. the notebook's list of exercises (`course.exercises`, what `check.progress()` and `reset`
   read), written from the module's `EXERCISES`: the list lives in the module only;
2. the message catalogue: every new message (a hint, a label, a references text) as an entry
   in its chapter's .po file, translations kept (the step is the catalogue's, passed in);
3. a section holding the English, in the translation file, for each new English markdown cell;
4. the English solution notebook executed and its learner copy (`course/`) generated and
   executed;
5. the Chinese edition (`solutions/zh-CN/`, `course/zh-CN/`), built the same way once the
   chapter's Chinese is complete (before that it would show English to Chinese learners);
6. the sync check (what `check-sync` and the tests compare) for the chapter.

Steps 4 and 5 execute notebooks, which takes minutes: an edition whose two notebooks record
the digest of exactly what its build would read now (notebooks.inputs_digest: the solution's
cells and metadata, the chapter's exercise modules, harness and the coursekit modules it
names, and for the Chinese its translated notebook and the catalogue) is left as it is and
said to be unchanged. `rebuild=True` (`sync NN --rebuild`) builds both anyway: the digest
does not cover shared code (the judging engine, `check`, the installed packages).

It prints each file it changed, then what is left to do by hand (a message or a cell without
its Chinese, an exercise the notebook does not check, a cell that raised), and returns 1 while
anything is: run it again after doing it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbclient.exceptions import CellExecutionError

from autograder.authoring import notebooks, translations

CHAPTER = re.compile(r"\d\d")
CHECKED = re.compile(r"\bcheck\.(\w+)\(\s*(\w+)\s*\)")
PO_FILE = re.compile(r"^(\S+\.po): ")


class SyncError(ValueError):
    """The chapter cannot be synced; the message names what is missing and what to do."""


@dataclass(frozen=True)
class Chapter:
    """A chapter's sources and what is generated from them."""

    number: str
    pair: notebooks.Pair  # solutions/NN_*.ipynb -> course/NN_*.ipynb
    edition: translations.Edition  # translations/zh-CN/NN_*.md -> the Chinese notebooks
    module: Path | None  # autograder/exercises/chNN_*.py, None for a chapter without one


@dataclass
class Outcome:
    """What a sync changed, and what a maintainer still has to do."""

    todo: list[str] = field(default_factory=list)
    chinese_ready: bool = True


def find_chapter(root: Path, number: str) -> Chapter:
    """The chapter `number` ("03") of the checkout at `root`; SyncError naming what is missing."""
    if not CHAPTER.fullmatch(number):
        raise SyncError(f"{number!r} is no chapter: give its two digits, e.g. `sync 03`.")
    if not (root / "solutions").is_dir():
        raise SyncError(f"{root} has no solutions/: run sync from the repository's root.")
    solutions = sorted((root / "solutions").glob(f"{number}_*.ipynb"))
    if len(solutions) != 1:
        known = sorted({path.name[:2] for path in (root / "solutions").glob("[0-9][0-9]_*.ipynb")})
        raise SyncError(
            f"Expected one solutions/{number}_<topic>.ipynb, found {len(solutions)} "
            f"(chapters here: {', '.join(known) or 'none'}); a new chapter starts "
            "with its solution notebook."
        )
    modules = sorted((root / "autograder" / "exercises").glob(f"ch{number}_*.py"))
    (edition,) = [e for e in translations.editions(root) if e.source == solutions[0]]
    pair = notebooks.Pair(solutions[0], root / "course" / solutions[0].name)
    return Chapter(number, pair, edition, modules[0] if modules else None)


def outputs(chapter: Chapter, root: Path) -> list[Path]:
    """Every file sync may write for the chapter (compared before and after, to report)."""
    edition = chapter.edition
    return [
        chapter.pair.solution,
        chapter.pair.learner,
        edition.translation,
        edition.solution,
        edition.learner,
        *sorted((root / "autograder" / "locale").glob("*/*.po")),
    ]


def snapshot(paths: Iterable[Path]) -> dict[Path, bytes | None]:
    return {path: path.read_bytes() if path.exists() else None for path in paths}


def exercise_list(chapter: Chapter, names: list[str]) -> list[str]:
    """Write the module's exercises into the solution notebook's `course.exercises`; what the
    notebook lacks for them (a check cell, the module's order) is returned, to do by hand."""
    path = chapter.pair.solution
    notebook = nbformat.read(path, as_version=4)
    course = notebook.metadata.setdefault("course", {})
    if course.get("exercises") != names:
        course["exercises"] = names
        nbformat.write(notebook, path)
    checked = [
        match.group(1)
        for cell in notebook.cells
        if cell.cell_type == "code"
        for match in CHECKED.finditer(cell.source)
        if match.group(1) == match.group(2)
    ]
    todo = [
        f"{path.name} has no check cell `check.{name}({name})` for exercise {name}: "
        "add one under its exercise cell."
        for name in names
        if name not in checked
    ]
    todo += [
        f"{path.name} checks `{name}`, which {_module_name(chapter)} does not declare: "
        "add its Exercise to the module's EXERCISES."
        for name in dict.fromkeys(checked)
        if name not in names
    ]
    order = [name for name in dict.fromkeys(checked) if name in names]
    if order != [name for name in names if name in order]:
        todo.append(
            f"{_module_name(chapter)} declares EXERCISES as {', '.join(names)}; the "
            f"notebook asks {', '.join(order)}: list them in the notebook's order."
        )
    return todo


def _module_name(chapter: Chapter) -> str:
    return (
        f"autograder/exercises/{chapter.module.name}"
        if chapter.module
        else f"autograder/exercises/ch{chapter.number}_<topic>.py"
    )


def message_todo(problems: list[str], number: str) -> tuple[list[str], bool]:
    """The catalogue's problems as one line per .po file, and whether the chapter's own
    messages (its file and core's) all have their Chinese."""
    by_file: dict[str, list[str]] = {}
    for problem in problems:
        match = PO_FILE.match(problem)
        by_file.setdefault(match.group(1) if match else "?", []).append(problem)
    lines = [
        f"{len(found)} message(s) have no Chinese yet: translate them in "
        f"autograder/locale/zh-CN/{file} (the msgstr under each msgid; keep each "
        f"{{field}}), e.g. {found[0].split(': ', 1)[1]}"
        for file, found in by_file.items()
    ]
    return lines, not ({f"ch{number}.po", "core.po"} & set(by_file))


def prose_todo(root: Path, chapter: Chapter) -> tuple[list[str], bool]:
    """Add a section holding the English for each new English cell; what the translation
    still lacks, and whether it is complete."""
    edition = chapter.edition
    english = translations.read(edition.source)
    translations.stub_missing(english, edition.translation)
    drift = translations.drift(
        english,
        translations.read_sections(edition.translation),
        _relative(root, edition.translation),
    )
    lines = [
        f"{problem}: write the Chinese in that section (and set its fingerprint as named, if any)"
        for problem in drift
    ]
    return lines, not drift


def build(what: str, action: Callable[[], None]) -> list[str]:
    """Run one build step, printing it; a cell that raised is returned, to fix by hand."""
    print(f"executing {what} ...", flush=True)
    try:
        action()
    except CellExecutionError as error:
        lines = str(error).strip().splitlines()
        return [
            f"{what}: a cell raised, so the notebook that ran it was not written; fix "
            f"its source and sync again. {' / '.join(lines[-3:])}"
        ]
    return []


def sync_check(root: Path, chapter: Chapter) -> list[str]:
    """The chapter's part of `check-sync` (and of the tests that compare the same)."""
    problems = notebooks.sync_problems(chapter.pair)
    try:
        problems += notebooks.edition_sync_problems(root, chapter.edition)
    except ValueError as error:  # an incomplete translation: already listed to do
        problems.append(f"{chapter.edition.learner} not checked: {str(error).splitlines()[0]}")
    return [f"sync check: {problem}" for problem in problems]


def unchanged(what: str, number: str) -> list[str]:
    """Say that an edition is not rebuilt: its inputs are what its notebooks were built from."""
    print(
        f"{what}: unchanged since its last build (the digest of its inputs matches), not "
        f"rebuilt; `python -m autograder sync {number} --rebuild` builds it anyway",
        flush=True,
    )
    return []


def run(
    root: Path,
    chapter: Chapter,
    names: list[str],
    messages: Callable[[], list[str]],
    rebuild: bool = False,
) -> Outcome:
    """Every step in order (module docstring)."""
    outcome = Outcome(todo=exercise_list(chapter, names))
    message_lines, messages_ready = message_todo(messages(), chapter.number)
    prose_lines, prose_ready = prose_todo(root, chapter)
    outcome.todo += message_lines + prose_lines
    outcome.chinese_ready = messages_ready and prose_ready
    pair = chapter.pair
    what = f"{_relative(root, pair.solution)} and its learner copy"
    if not rebuild and notebooks.pair_is_current(pair):
        outcome.todo += unchanged(what, chapter.number)
    else:
        outcome.todo += build(what, lambda: notebooks.build(pair))
    if outcome.chinese_ready:
        what = f"the Chinese edition, {_relative(root, chapter.edition.solution)}"
        if not rebuild and notebooks.edition_is_current(root, chapter.edition):
            outcome.todo += unchanged(what, chapter.number)
        else:
            outcome.todo += build(what, lambda: notebooks.build_edition(root, chapter.edition))
    else:
        outcome.todo.append(
            f"The Chinese edition ({_relative(root, chapter.edition.solution)}, "
            f"{_relative(root, chapter.edition.learner)}) was not built: its "
            f"Chinese is incomplete (above). Then run `python -m autograder "
            f"sync {chapter.number}` again."
        )
    outcome.todo += sync_check(root, chapter)
    return outcome


def _relative(root: Path, path: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def sync(
    *,
    root: Path,
    chapter: str,
    names: list[str],
    messages: Callable[[], list[str]],
    rebuild: bool = False,
) -> int:
    """Sync chapter `chapter` of the checkout at `root`; `names` are its module's exercises in
    order, `messages` updates the catalogue and returns what lacks its Chinese. Prints what
    it wrote and what is left to do; 1 while anything is. An edition whose inputs are
    unchanged since its last build is not rebuilt unless `rebuild`."""
    found = find_chapter(root, chapter)
    print(
        f"sync {chapter}: from {_relative(root, found.pair.solution)} and {_module_name(found)}",
        flush=True,
    )
    before = snapshot(outputs(found, root))
    outcome = run(root, found, names, messages, rebuild)
    after = snapshot(before)
    for path in before:
        if before[path] != after[path]:
            print(f"wrote {_relative(root, path)}")
    if not outcome.todo:
        print(f"chapter {chapter} is complete: every generated file matches its sources.")
        return 0
    print(f"\nstill to do by hand ({len(outcome.todo)}):")
    print("\n".join(f"- {line}" for line in outcome.todo))
    return 1
