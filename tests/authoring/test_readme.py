"""The README tells the truth: its course map is current and every link points at a notebook."""

from __future__ import annotations

import re
from pathlib import Path

from autograder.authoring import coursemap

ROOT = Path(__file__).resolve().parents[2]


def readme() -> str:
    return (ROOT / "README.md").read_text()


def test_readme_opens_with_the_two_commands():
    first_block = readme().split("```bash", 1)[1].split("```", 1)[0]
    assert "make lab" in first_block and "make test" in first_block


def test_course_map_is_up_to_date():
    expected = coursemap.readme_with_map(readme(), coursemap.course_map(ROOT))
    assert readme() == expected, "Run `.venv/bin/python -m autograder course-map`."


def test_every_notebook_link_points_at_an_existing_notebook():
    links = re.findall(r"\((course/[^)]+\.ipynb)\)", readme())
    binder = re.findall(r"labpath=([^)\s]+)", readme())
    colab = re.findall(r"/blob/[^/]+/(course/[^)\s]+\.ipynb)", readme())
    assert links and len(links) == len(binder) == len(colab)
    for path in links + colab + [b.replace("%2F", "/") for b in binder]:
        assert (ROOT / path).is_file(), path


def test_every_course_notebook_is_on_the_map():
    for notebook in (ROOT / "course").glob("[0-9][0-9]_*.ipynb"):
        assert f"(course/{notebook.name})" in readme()


def test_links_follow_the_repository_setting():
    setting = coursemap.settings(ROOT)["repository"].removeprefix("https://github.com/")
    assert f"mybinder.org/v2/gh/{setting}/" in readme()
    assert f"colab.research.google.com/github/{setting}/" in readme()


def test_every_chapter_starts_with_the_colab_install_cell():
    import nbformat

    expected = coursemap.colab_cell(ROOT)
    for folder in ("solutions", "course"):
        for path in sorted((ROOT / folder).glob("[0-9][0-9]_*.ipynb")):
            cells = nbformat.read(path, as_version=4).cells
            first_code = next(cell for cell in cells if cell.cell_type == "code")
            assert first_code.source == expected, f"{path}: run the Colab cell update"
            assert "google.colab" in first_code.source  # does nothing outside Colab


def chapter_notebooks():
    return [
        path
        for folder in ("solutions", "course")
        for path in sorted((ROOT / folder).glob("[0-9][0-9]_*.ipynb"))
    ]


def test_every_notebook_carries_its_badges_and_solutions_link():
    import nbformat

    for path in chapter_notebooks():
        cells = nbformat.read(path, as_version=4).cells
        first = next(cell for cell in cells if cell.cell_type == "markdown")
        assert coursemap.badges(ROOT, path.name) in first.source, (
            f"{path}: run `.venv/bin/python -m autograder course-map`"
        )
        assert "Open in Colab" in first.source and "Launch Binder" in first.source
        assert cells[-1].source == coursemap.solutions_cell(ROOT, path.name), path
        assert f"(../solutions/{path.name})" in cells[-1].source


def test_badges_follow_the_repository_setting(tmp_path):
    import nbformat

    setting = (ROOT / "pyproject.toml").read_text()
    old = coursemap.settings(ROOT)["repository"]
    (tmp_path / "pyproject.toml").write_text(setting.replace(old, "https://github.com/me/fork"))
    notebook = nbformat.read(chapter_notebooks()[0], as_version=4)
    assert coursemap.notebook_links_changed(tmp_path, notebook, chapter_notebooks()[0].name)
    first = next(cell for cell in notebook.cells if cell.cell_type == "markdown")
    assert "github/me/fork/blob/" in first.source and old not in first.source
    assert first.source.count(coursemap.BADGES_START) == 1  # replaced, not added again
    assert not coursemap.notebook_links_changed(tmp_path, notebook, chapter_notebooks()[0].name)
