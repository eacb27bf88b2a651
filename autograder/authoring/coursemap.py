"""The READMEs' course maps: chapters, notebook links, Binder and Colab links.

README.md's map lists the English notebooks (with a column for the Chinese ones); README.zh-CN.md
has its own, with the Chinese titles read from the Chinese notebooks, so a learner reading
Chinese never meets an English chapter title. Links are built from one setting,
`[tool.course] repository` in pyproject.toml, so moving the repository means changing one line
and running `python -m autograder course-map`, which rewrites both maps.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from urllib.parse import quote

import nbformat

START, END = "<!-- course-map:start -->", "<!-- course-map:end -->"

PLANNED = {
    "00": "Start here",
    "01": "The chain rule, and why `tf.gradients` sums its ys",
    "02": "Build your own reverse-mode tape",
    "03": "Unbroadcasting and batched matmul",
    "04": "Custom gradients in TensorFlow",
    "05": "Custom derivatives in JAX",
    "06": "Implicit differentiation, callbacks and checkpointing",
    "07": "Jacobians, JVP vs VJP",
    "08": "Capstone: train a network with your own tape",
}


def settings(root: Path) -> dict[str, str]:
    with (root / "pyproject.toml").open("rb") as file:
        return tomllib.load(file)["tool"]["course"]


def binder_url(repository: str, branch: str, notebook: str) -> str:
    owner_repo = repository.removeprefix("https://github.com/").rstrip("/")
    return f"https://mybinder.org/v2/gh/{owner_repo}/{branch}?labpath={quote(notebook, safe='')}"


def colab_url(repository: str, branch: str, notebook: str) -> str:
    owner_repo = repository.removeprefix("https://github.com/").rstrip("/")
    return f"https://colab.research.google.com/github/{owner_repo}/blob/{branch}/{notebook}"


def install_spec(root: Path) -> str:
    """The course's package from the repository's configured branch, as pip names it."""
    config = settings(root)
    return f"autodiff-course @ git+{config['repository'].rstrip('/')}@{config['branch']}"


def install_sources(root: Path) -> list[str]:
    """What the first cell asks pip for, in turn, where the course is missing (after the
    course's own files, where the notebook sits among them).

    `[tool.course] install-from`: "repository" (the branch, from its git host) until the
    package is published, since a name on the index that the project does not own yet is
    anyone's to upload; then "index": this version from the index pip is set to use (a
    mirror, where the learner set one), the repository if that fails (a mirror that has not
    synced the release yet).
    """
    config = settings(root)
    if config.get("install-from", "repository") == "repository":
        return [install_spec(root)]
    with (root / "pyproject.toml").open("rb") as file:
        version = tomllib.load(file)["project"]["version"]
    return [f"autodiff-course=={version}", install_spec(root)]


def install_cell(root: Path) -> str:
    """The first code cell of every chapter: where the course's packages are missing (Colab,
    ModelScope, Kaggle, any hosted Jupyter, a kernel without them), pip installs them.

    First from the course's own files when the notebook sits among them (the zip unpacked on
    ModelScope, or a clone): its pinned requirements from the index pip is set to use (a
    mirror too), no git host needed; else from `install_sources`. Where they are installed
    (JupyterLab after `make lab`, Binder) it does nothing and shows nothing. It is plain
    Python, not `%pip`, so that it can try the next source when pip fails and say so, and
    imports nothing the grader refuses in a submission (`importlib`: it asks by importing
    `autograder`; the grader never runs it, autograder/grading/submissions.py). After
    the install it stops the run, saying so, when pip replaced a package the runtime had
    already imported (only a restart cures that). The Chinese edition's translation gives
    its comments and sentences in Chinese.
    """
    sources = "".join(f'        ["{source}"],\n' for source in install_sources(root))
    return (
        "# Install the course's packages (checks and helpers) where they are missing: on Colab,\n"
        "# ModelScope, Kaggle or any hosted Jupyter. Where they are installed, nothing happens.\n"
        "import pathlib\n"
        "import subprocess\n"
        "import sys\n"
        "\n"
        "try:\n"
        "    import autograder  # noqa: F401\n"
        "except ModuleNotFoundError:\n"
        "    sources = [\n"
        f"{sources}"
        "    ]\n"
        "    # The course's own files around this notebook (its zip unpacked) come first.\n"
        "    for folder in [pathlib.Path.cwd(), *pathlib.Path.cwd().parents]:\n"
        '        requirements = folder / "requirements-learner.txt"\n'
        '        if requirements.is_file() and (folder / "autograder").is_dir():\n'
        '            sources.insert(0, ["-r", str(requirements), str(folder)])\n'
        "            break\n"
        "    for source in sources:\n"
        "        print(f\"Installing the course: `pip install {' '.join(source)}`\")\n"
        '        pip = [sys.executable, "-m", "pip", "install", "--quiet", *source]\n'
        "        done = subprocess.run(pip, capture_output=True, text=True)\n"
        "        if done.returncode == 0:\n"
        "            break\n"
        "        print(done.stdout[-2000:] + done.stderr[-2000:])\n"
        "    else:\n"
        "        raise RuntimeError(\n"
        '            "pip could not install the course (pip\'s messages are above). Check the "\n'
        '            "network, or set a package mirror (README), then run this cell again; "\n'
        '            "if GitHub is unreachable, open this notebook from the unzipped course."\n'
        "        )\n"
        "    from coursekit.runtime import stop_if_restart_needed\n"
        "\n"
        '    stop_if_restart_needed(language="en")  # tells you when the runtime must restart'
    )


def course_map(root: Path) -> str:
    """The markdown table, one row per chapter; chapters not written yet say so."""
    config = settings(root)
    written = {path.name[:2]: path for path in sorted((root / "course").glob("[0-9][0-9]_*.ipynb"))}
    rows = [
        "| # | Chapter | Open | Binder | Colab | 中文版 (Chinese) |",
        "|---|---|---|---|---|---|",
    ]
    for number, planned_title in PLANNED.items():
        path = written.get(number)
        if path is None:
            rows.append(f"| {number} | {planned_title} | not written yet | | | |")
            continue
        meta = nbformat.read(path, as_version=4).metadata.get("course", {})
        notebook = f"course/{path.name}"
        rows.append(
            f"| {number} | {meta.get('title', planned_title)} | [{path.name}]({notebook}) "
            f"| [launch]({binder_url(config['repository'], config['branch'], notebook)}) "
            f"| [open]({colab_url(config['repository'], config['branch'], notebook)}) "
            f"| {_chinese_links(config, path.name)} |"
        )
    return "\n".join(rows)


def _chinese_links(config: dict[str, str], name: str) -> str:
    """The Chinese edition's notebook, with its Binder and Colab links."""
    notebook = f"course/zh-CN/{name}"
    return (
        f"[打开]({notebook}) · "
        f"[Binder]({binder_url(config['repository'], config['branch'], notebook)}) · "
        f"[Colab]({colab_url(config['repository'], config['branch'], notebook)})"
    )


# The Chinese map's column of hosted links: last, and saying why a learner in mainland China
# should not count on them (Google's and mybinder.org's services are usually unreachable there).
HOSTED_ZH = "Colab / Binder（国内通常无法访问）"


def chinese_title(path: Path) -> str:
    """The chapter's title as the Chinese notebook shows it: its first heading, without the
    "NN · " prefix. The notebooks' `course.title` metadata is the English title (the grader
    and the English map read it), so the Chinese title can only come from the heading, which
    the translation (translations/zh-CN/NN_*.md) supplies."""
    notebook = nbformat.read(path, as_version=4)
    first = next(cell for cell in notebook.cells if cell.cell_type == "markdown")
    heading = first.source.partition("\n")[0].lstrip("#").strip()
    return re.sub(r"^\d\d\s*·\s*", "", heading)


def course_map_zh(root: Path) -> str:
    """README.zh-CN.md's table: the Chinese notebooks, their solutions, and (last, marked as
    usually unreachable from mainland China) their Colab and Binder links."""
    config = settings(root)
    folder = root / "course" / "zh-CN"
    written = {path.name[:2]: path for path in sorted(folder.glob("[0-9][0-9]_*.ipynb"))}
    rows = [
        f"| 编号 | 章节 | 笔记本 | 参考答案 | {HOSTED_ZH} |",
        "|---|---|---|---|---|",
    ]
    for number in PLANNED:
        path = written.get(number)
        if path is None:
            rows.append(f"| {number} | 尚未编写 | | | |")
            continue
        notebook, solution = f"course/zh-CN/{path.name}", f"solutions/zh-CN/{path.name}"
        colab = colab_url(config["repository"], config["branch"], notebook)
        binder = binder_url(config["repository"], config["branch"], notebook)
        rows.append(
            f"| {number} | {chinese_title(path)} | [{path.name}]({notebook}) "
            f"| [答案]({solution}) | [Colab]({colab}) · [Binder]({binder}) |"
        )
    return "\n".join(rows)


def readme_with_map(readme: str, table: str) -> str:
    before, rest = readme.split(START, 1)
    _, after = rest.split(END, 1)
    return f"{before}{START}\n{table}\n{END}{after}"


# The install cell's tag (named when it installed on Colab only); the grader leaves the cell
# empty by it (grading/submissions.py, which may not import this module).
INSTALL_TAG = "colab-setup"


def update_install_cells(root: Path) -> list[Path]:
    """Rewrite the install cell (tagged colab-setup, its first home) of every chapter, in
    both editions; return the files changed.

    Both solutions/ and course/: the cell shows no output where the course is installed, so
    the learner copies' stored outputs stay what `make course` would store, without
    re-executing every chapter. A chapter's Chinese copies follow when the cell's translation
    still covers all its prose (only a source it installs from changed: a version, an
    address), with the section's fingerprint; else the drift test names what to translate.
    """
    expected, changed = install_cell(root), []
    for folder in ("solutions", "course"):
        for path in sorted((root / folder).glob("[0-9][0-9]_*.ipynb")):
            if _set_install_cell(path, expected):
                changed.append(path)
    for solution in sorted((root / "solutions").glob("[0-9][0-9]_*.ipynb")):
        changed += _update_translated_install_cell(root, solution, expected)
    return changed


def _install_cell_id(notebook_path: Path) -> str | None:
    notebook = nbformat.read(notebook_path, as_version=4)
    cells = [c for c in notebook.cells if INSTALL_TAG in c.metadata.get("tags", [])]
    return cells[0].id if cells else None


def _set_install_cell(path: Path, source: str) -> bool:
    """Give the notebook's install cell `source`; whether it changed."""
    notebook = nbformat.read(path, as_version=4)
    cells = [
        cell
        for cell in notebook.cells
        if INSTALL_TAG in cell.metadata.get("tags", []) and cell.source != source
    ]
    for cell in cells:
        cell.source = source
    if cells:
        nbformat.write(notebook, path)
    return bool(cells)


def _update_translated_install_cell(root: Path, solution: Path, english: str) -> list[Path]:
    """The chapter's Chinese install cells and its section's fingerprint, where every prose
    piece of `english` has its Chinese in the section (nothing for a translator to review)."""
    from autograder.authoring import code_text, translations

    cell_id = _install_cell_id(solution)
    path = translations.translation_path(root, solution.name)
    sections = translations.read_sections(path)
    section = sections.get(cell_id) if cell_id else None
    if section is None:
        return []
    pairs = code_text.parse_pairs(section.text, f"{path.name}: code cell {cell_id}")
    prose = {piece.text for piece in code_text.prose_pieces(english)}
    if code_text.unused(english, pairs) or not prose <= set(pairs):
        return []
    changed = []
    fingerprint = code_text.fingerprint(english)
    if section.translates != fingerprint:
        sections[cell_id] = translations.Section(cell_id, fingerprint, section.text)
        translations.write_sections(path, list(sections.values()))
        changed.append(path)
    chinese = code_text.translate(english, pairs, f"{path.name}: code cell {cell_id}")
    for folder in ("solutions", "course"):
        edition = root / folder / translations.CHINESE / solution.name
        if edition.exists() and _set_install_cell(edition, chinese):
            changed.append(edition)
    return changed


BADGES_START, BADGES_END = "<!-- badges:start -->", "<!-- badges:end -->"
COLAB_BADGE = "https://colab.research.google.com/assets/colab-badge.svg"
BINDER_BADGE = "https://mybinder.org/badge_logo.svg"
SOLUTIONS_TAG = "solutions-link"


def badges(root: Path, name: str, folder: str = "course") -> str:
    """The "Open in Colab" and "Launch Binder" badges of chapter `name`'s learner copy
    (`folder`: course/zh-CN for the Chinese edition)."""
    config = settings(root)
    notebook = f"{folder}/{name}"
    colab = colab_url(config["repository"], config["branch"], notebook)
    binder = binder_url(config["repository"], config["branch"], notebook)
    return (
        f"{BADGES_START}[![Open in Colab]({COLAB_BADGE})]({colab}) "
        f"[![Launch Binder]({BINDER_BADGE})]({binder}){BADGES_END}"
    )


def with_badges(source: str, line: str) -> str:
    """The first markdown cell with `line` replacing its badges, else under its heading."""
    if BADGES_START in source and BADGES_END in source:
        before, rest = source.split(BADGES_START, 1)
        return before + line + rest.split(BADGES_END, 1)[1]
    heading, _, body = source.partition("\n")
    return f"{heading}\n\n{line}\n{body}"


def _links(root: Path, notebook: str) -> tuple[str, str]:
    """The notebook's page on GitHub and its Colab address, from the repository setting."""
    config = settings(root)
    repository, branch = config["repository"].rstrip("/"), config["branch"]
    return (f"{repository}/blob/{branch}/{notebook}", colab_url(repository, branch, notebook))


def solutions_cell(root: Path, name: str) -> str:
    """The last cell of every chapter: where this chapter's worked solutions are."""
    notebook = f"solutions/{name}"
    github, colab = _links(root, notebook)
    return (
        "## Worked solutions\n\n"
        f"Every exercise of this chapter, answered and checked, is in [{notebook}](../{notebook}) "
        f"([on GitHub]({github}), [open in Colab]({colab})). Try an exercise first; "
        'when stuck, `check.hint("<exercise>")` names a mistake learners often make, and '
        f"`python -m autograder reset course/{name} <exercise>` puts one exercise cell back "
        "as it was. `check.progress()` shows what you have passed across the course."
    )


def solutions_cell_zh(root: Path, name: str) -> str:
    """The Chinese edition's last cell: where its worked solutions are."""
    notebook = f"solutions/zh-CN/{name}"
    github, colab = _links(root, notebook)
    return (
        "## 参考答案\n\n"
        f"本章每个练习的解答（都已通过检查）在 [{notebook}](../../{notebook})"
        f"（[在 GitHub 上查看]({github})，[在 Colab 中打开]({colab})）。请先自己做；"
        '卡住时，`check.hint("<练习名>")` 会指出学习者常犯的一个错误，'
        f"`python -m autograder reset course/zh-CN/{name} <练习名>` 可以把一个练习单元格恢复原样。"
        "`check.progress()` 显示你在整个课程中已通过的练习。"
    )


def notebook_links_changed(root: Path, notebook: nbformat.NotebookNode, name: str) -> bool:
    """Put the badges in the first markdown cell and the solutions cell last; True if changed."""
    first = next(cell for cell in notebook.cells if cell.cell_type == "markdown")
    old_first, old_last = first.source, notebook.cells[-1].source
    first.source = with_badges(first.source, badges(root, name))
    last = notebook.cells[-1]
    if SOLUTIONS_TAG not in last.metadata.get("tags", []):
        # A fixed id: the cell is the same in solutions/ and course/, and across rebuilds.
        last = nbformat.v4.new_markdown_cell(id=SOLUTIONS_TAG, metadata={"tags": [SOLUTIONS_TAG]})
        notebook.cells.append(last)
    last.source = solutions_cell(root, name)
    return (first.source, notebook.cells[-1].source) != (old_first, old_last)


def update_notebook_links(root: Path) -> list[Path]:
    """Badges and the solutions cell of every chapter, in solutions/ and course/ alike.

    Markdown only, so no stored output changes and nothing needs re-executing.
    """
    changed = []
    for folder in ("solutions", "course"):
        for path in sorted((root / folder).glob("[0-9][0-9]_*.ipynb")):
            notebook = nbformat.read(path, as_version=4)
            if notebook_links_changed(root, notebook, path.name):
                nbformat.write(notebook, path)
                changed.append(path)
    return changed


# Each README the course map is written into, with the function that builds its table.
READMES = (("README.md", course_map), ("README.zh-CN.md", course_map_zh))


def stale_readmes(root: Path) -> list[str]:
    """The READMEs whose map is not what `course-map` would write (tests name them)."""
    return [
        name
        for name, table in READMES
        if (text := (root / name).read_text(encoding="utf-8")) != readme_with_map(text, table(root))
    ]


def update_readmes(root: Path) -> list[tuple[str, bool]]:
    """Rewrite each README's map in place; returns each README's name and whether it changed."""
    results = []
    for name, table in READMES:
        path = root / name
        old = path.read_text(encoding="utf-8")
        new = readme_with_map(old, table(root))
        path.write_text(new, encoding="utf-8")
        results.append((name, new != old))
    return results
