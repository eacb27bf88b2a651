"""`sync NN` leaves an edition whose inputs are unchanged since its last build as it is.

Each build records in both its notebooks (metadata `built_from`) a digest of what it read
(notebooks.inputs_digest); sync builds an edition again only when that digest differs from
today's inputs', or with `rebuild=True` (`sync NN --rebuild`). Execution is replaced here by
writing the notebooks as they are (nothing runs); the digest is the real one.
tests/exercises/test_adding_an_exercise.py runs the real command: its second sync leaves the
English notebooks as the first built them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest

from autograder import cli
from autograder.authoring import notebooks, sync
from autograder.exercises import for_chapter

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = "00_start_here"
NAMES = [exercise.name for exercise in for_chapter("00")]
ENGLISH = f"solutions/{CHAPTER}.ipynb"
CHINESE = f"solutions/zh-CN/{CHAPTER}.ipynb"


@pytest.fixture
def chapter(tmp_path: Path) -> Path:
    """A checkout holding chapter 00, its translation, its exercise module, the coursekit
    modules it imports and the Chinese catalogue."""
    for folder in ("solutions", "course", "solutions/zh-CN", "course/zh-CN"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / folder / f"{CHAPTER}.ipynb", tmp_path / folder)
    for path in (
        f"translations/zh-CN/{CHAPTER}.md",
        f"autograder/exercises/ch00_{CHAPTER[3:]}.py",
        "coursekit/runtime.py",
        "coursekit/environment.py",
        "pyproject.toml",
        *(str(p.relative_to(ROOT)) for p in (ROOT / "autograder/locale/zh-CN").glob("*.po")),
    ):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / path, tmp_path / path)
    return tmp_path


@pytest.fixture
def executed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The solution notebooks the builds would execute; each is written unexecuted, with its
    learner copy, so the digests the builds record are the real ones."""
    record: list[str] = []

    def write_both(
        solution, solution_path: Path, learner_path: Path, stubs: str = notebooks.ENGLISH
    ) -> None:
        record.append(f"{solution_path.parent.name}/{solution_path.name}")
        nbformat.write(solution, solution_path)
        nbformat.write(notebooks.learner_copy(solution, solution_path.name, stubs), learner_path)

    monkeypatch.setattr(notebooks, "_execute_both", write_both)
    return record


def synced(root: Path, rebuild: bool = False) -> int:
    return sync.sync(root=root, chapter="00", names=NAMES, messages=list, rebuild=rebuild)


def test_a_second_sync_of_an_unchanged_chapter_builds_nothing(chapter, executed, capsys):
    assert synced(chapter) == 0  # the committed notebooks may predate the digest
    capsys.readouterr()
    executed.clear()
    assert synced(chapter) == 0
    out = capsys.readouterr().out
    assert executed == []
    assert out.count("unchanged since its last build") == 2, out
    assert "sync 00 --rebuild" in out
    assert "chapter 00 is complete" in out
    recorded = nbformat.read(chapter / ENGLISH, as_version=4).metadata[notebooks.BUILT_FROM]
    learner = nbformat.read(chapter / f"course/{CHAPTER}.ipynb", as_version=4)
    assert learner.metadata[notebooks.BUILT_FROM] == recorded


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) >= 1, (path, old)
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _rewrite(path: Path) -> None:
    path.write_bytes(path.read_bytes())


def _edit_a_code_cell(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    (cell,) = [c for c in notebook.cells if c.cell_type == "code"][-1:]
    cell.source += "\n# edited"
    nbformat.write(notebook, path)


@pytest.mark.parametrize(
    ("edit", "rebuilt"),
    [
        (lambda root: _edit_a_code_cell(root / ENGLISH), ["solutions", "zh-CN"]),
        (
            lambda root: _edit(
                root / f"autograder/exercises/ch00_{CHAPTER[3:]}.py", '"""', '"""Edited. '
            ),
            ["solutions", "zh-CN"],
        ),
        (
            lambda root: _edit(root / "coursekit/runtime.py", '"""', '"""Edited. '),
            ["solutions", "zh-CN"],
        ),
        (
            lambda root: _edit(root / f"translations/zh-CN/{CHAPTER}.md", "本课程", "这门课程"),
            ["zh-CN"],
        ),
        (lambda root: _rewrite(root / "autograder/locale/zh-CN/core.po"), []),
        (
            lambda root: (root / "autograder/locale/zh-CN/ch00.po").write_text(
                (root / "autograder/locale/zh-CN/ch00.po").read_text(encoding="utf-8")
                + '\nmsgid "A new message."\nmsgstr "一条新消息。"\n',
                encoding="utf-8",
            ),
            ["zh-CN"],
        ),
        (lambda root: (root / f"course/{CHAPTER}.ipynb").unlink(), ["solutions"]),
        (lambda root: (root / f"course/zh-CN/{CHAPTER}.ipynb").unlink(), ["zh-CN"]),
    ],
    ids=[
        "solution-cell",
        "exercise-module",
        "coursekit-module-it-imports",
        "translation",
        "catalogue-rewritten-as-it-was",
        "catalogue",
        "english-learner-copy-missing",
        "chinese-learner-copy-missing",
    ],
)
def test_a_changed_input_rebuilds_the_editions_that_read_it(chapter, executed, edit, rebuilt):
    synced(chapter)
    executed.clear()
    edit(chapter)
    synced(chapter)
    folders = [path.split("/")[0] for path in executed]
    assert folders == rebuilt


def test_outputs_and_run_records_do_not_change_the_digest_and_a_copy_gets_the_same(tmp_path):
    source = nbformat.read(ROOT / ENGLISH, as_version=4)
    digest = notebooks.inputs_digest(ROOT, source, f"{CHAPTER}.ipynb")
    executed = nbformat.read(ROOT / ENGLISH, as_version=4)
    for cell in executed.cells:
        if cell.cell_type == "code":
            cell.outputs = [nbformat.v4.new_output("stream", text="printed\n")]
            cell.execution_count = 7
            cell.metadata["execution"] = {"iopub.status.idle": "2026-01-01T00:00:00Z"}
    executed.metadata["language_info"] = {"name": "python", "version": "3.99"}
    executed.metadata[notebooks.BUILT_FROM] = "0123456789abcdef"
    assert notebooks.inputs_digest(ROOT, executed, f"{CHAPTER}.ipynb") == digest
    copy = tmp_path / "copy"
    for path in notebooks.build_inputs(ROOT, source, f"{CHAPTER}.ipynb", "zh-CN"):
        target = copy / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    assert notebooks.inputs_digest(copy, source, f"{CHAPTER}.ipynb") == digest
    source.cells[0].source += " Edited."
    assert notebooks.inputs_digest(ROOT, source, f"{CHAPTER}.ipynb") != digest


def test_rebuild_builds_both_and_build_course_builds_every_time(chapter, executed, capsys):
    synced(chapter)
    executed.clear()
    assert synced(chapter, rebuild=True) == 0
    assert executed == [ENGLISH, CHINESE.removeprefix("solutions/")]
    assert cli.parser().parse_args(["sync", "00", "--rebuild"]).rebuild
    executed.clear()
    cli.build_course(solutions=chapter / "solutions", course=chapter / "course")
    cli.build_course(solutions=chapter / "solutions", course=chapter / "course")
    assert executed == [ENGLISH, CHINESE.removeprefix("solutions/")] * 2
