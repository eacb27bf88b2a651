"""The READMEs tell the truth: their course maps are current and every link points at a notebook.

README.md's map is built from the English notebooks, README.zh-CN.md's from the Chinese ones
(their titles are the Chinese notebooks' headings); `python -m autograder course-map` writes both.
"""

from __future__ import annotations

import re
from pathlib import Path

from autograder.authoring import coursemap

ROOT = Path(__file__).resolve().parents[2]


def readme() -> str:
    return (ROOT / "README.md").read_text()


def readme_zh() -> str:
    return (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")


def test_readme_opens_with_the_two_commands():
    first_block = readme().split("```bash", 1)[1].split("```", 1)[0]
    assert "make lab" in first_block and "make test" in first_block


def test_course_map_is_up_to_date():
    expected = coursemap.readme_with_map(readme(), coursemap.course_map(ROOT))
    assert readme() == expected, "Run `.venv/bin/python -m autograder course-map`."


def test_the_chinese_course_map_is_up_to_date():
    expected = coursemap.readme_with_map(readme_zh(), coursemap.course_map_zh(ROOT))
    assert readme_zh() == expected, "Run `.venv/bin/python -m autograder course-map`."
    assert coursemap.stale_readmes(ROOT) == []


def test_the_chinese_map_lists_every_chinese_notebook_with_its_chinese_title():
    table = readme_zh().split(coursemap.START, 1)[1].split(coursemap.END, 1)[0]
    notebooks = sorted((ROOT / "course" / "zh-CN").glob("[0-9][0-9]_*.ipynb"))
    assert notebooks
    for notebook in notebooks:
        title = coursemap.chinese_title(notebook)
        assert re.search(r"[\u4e00-\u9fff]", title), f"{notebook}: no Chinese in {title!r}"
        row = f"| {notebook.name[:2]} | {title} | [{notebook.name}](course/zh-CN/{notebook.name}) "
        assert row in table, row
        assert f"(solutions/zh-CN/{notebook.name})" in table
    # Colab and Binder, usually unreachable from mainland China, come last and say so.
    assert table.strip().splitlines()[0].endswith(f"| {coursemap.HOSTED_ZH} |")


def test_every_link_of_the_chinese_map_points_at_an_existing_notebook():
    table = readme_zh().split(coursemap.START, 1)[1].split(coursemap.END, 1)[0]
    links = re.findall(r"\(((?:course|solutions)/zh-CN/[^)]+\.ipynb)\)", table)
    binder = re.findall(r"labpath=([^)\s]+)", table)
    colab = re.findall(r"/blob/[^/]+/(course/zh-CN/[^)\s]+\.ipynb)", table)
    assert links and len(binder) == len(colab) == len(links) // 2
    for path in links + colab + [b.replace("%2F", "/") for b in binder]:
        assert (ROOT / path).is_file(), path


def test_a_stale_map_is_found_in_either_readme(tmp_path):
    """What `course-map` fixes, the test names: a README whose map lost a row is stale, and
    rewriting it makes both current again."""
    for name in ("README.md", "README.zh-CN.md", "pyproject.toml"):
        (tmp_path / name).write_text((ROOT / name).read_text(encoding="utf-8"), encoding="utf-8")
    for folder in ("course", "course/zh-CN"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        for notebook in (ROOT / folder).glob("[0-9][0-9]_*.ipynb"):
            (tmp_path / folder / notebook.name).write_bytes(notebook.read_bytes())
    zh = tmp_path / "README.zh-CN.md"
    stale = "\n".join(line for line in zh.read_text("utf-8").splitlines() if "| 03 |" not in line)
    zh.write_text(stale + "\n", encoding="utf-8")
    assert coursemap.stale_readmes(tmp_path) == ["README.zh-CN.md"]
    changed = dict(coursemap.update_readmes(tmp_path))
    assert changed == {"README.md": False, "README.zh-CN.md": True}
    assert coursemap.stale_readmes(tmp_path) == []


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


def test_every_chapter_starts_with_the_install_cell():
    import nbformat

    expected = coursemap.install_cell(ROOT)
    for folder in ("solutions", "course"):
        for path in sorted((ROOT / folder).glob("[0-9][0-9]_*.ipynb")):
            cells = nbformat.read(path, as_version=4).cells
            first_code = next(cell for cell in cells if cell.cell_type == "code")
            assert first_code.source == expected, f"{path}: run `python -m autograder course-map`"
            assert not first_code.get("outputs")  # where the course is installed, it is silent


def test_switching_to_the_package_index_rewrites_both_editions_install_cells(tmp_path):
    """After the first release, a maintainer sets `install-from = "index"` and runs
    course-map: every English and Chinese install cell then names the version, and the
    translation's fingerprint follows (only a source changed, no prose to translate)."""
    import shutil

    import nbformat

    from autograder.authoring import code_text, translations

    chapter = "00_start_here.ipynb"
    for relative in [
        f"solutions/{chapter}",
        f"course/{chapter}",
        f"solutions/zh-CN/{chapter}",
        f"course/zh-CN/{chapter}",
        "translations/zh-CN/00_start_here.md",
    ]:
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / relative, tmp_path / relative)
    text = (ROOT / "pyproject.toml").read_text()
    (tmp_path / "pyproject.toml").write_text(
        text.replace('install-from = "repository"', 'install-from = "index"')
    )
    changed = coursemap.update_install_cells(tmp_path)
    assert len(changed) == 5  # four notebooks and the translation

    english = coursemap.install_cell(tmp_path)
    assert '["autodiff-course==' in english
    solution = nbformat.read(tmp_path / "solutions" / chapter, as_version=4)
    sections = translations.read_sections(tmp_path / "translations" / "zh-CN" / "00_start_here.md")
    assert translations.code_drift(solution, sections, chapter) == []
    cell_id = next(c.id for c in solution.cells if "colab-setup" in c.metadata.get("tags", []))
    chinese = code_text.translate(english, code_text.parse_pairs(sections[cell_id].text, chapter))
    for folder in ("solutions/zh-CN", "course/zh-CN"):
        cells = nbformat.read(tmp_path / folder / chapter, as_version=4).cells
        assert next(c for c in cells if c.cell_type == "code").source == chinese
    assert coursemap.update_install_cells(tmp_path) == []  # once is enough


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


def test_a_chinese_notebook_carries_one_set_of_badges_and_they_open_chinese_copies():
    """The Chinese edition's badges are generated per edition: a translation that carries
    the English ones too (08 once did) showed two sets, one opening the English notebook."""
    import nbformat

    for folder in ("solutions/zh-CN", "course/zh-CN"):
        for path in sorted((ROOT / folder).glob("[0-9][0-9]_*.ipynb")):
            cells = nbformat.read(path, as_version=4).cells
            first = next(cell for cell in cells if cell.cell_type == "markdown").source
            assert first.count("<!-- badges:start -->") == 1, path
            badges = first.split("<!-- badges:start -->")[1].split("<!-- badges:end -->")[0]
            opened = re.findall(r"course(?:/|%2F)(?:zh-CN(?:/|%2F))?\d\d_\w+\.ipynb", badges)
            assert opened and all("zh-CN" in link for link in opened), (path, opened)
