"""Each chapter's first cell, where the course is missing: on Colab and on any hosted Jupyter.

The cell pip-installs the course (a non-editable install) from the sources `[tool.course]
install-from` names, in turn, says so in the notebook's language, and then whether the runtime
needs a restart. These tests run it in a fresh venv holding the course's dependencies but not
the course (tests/installed.py), offline: the package index is a local folder laid out as PyPI's
simple index (`PIP_INDEX_URL`, as a learner's mirror is set), holding the wheel built from the
checkout, and the repository's `git+https://...` address, which the test machine cannot reach,
is replaced by that wheel's file address. Every pip setting of this machine is left out.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from autograder.authoring import code_text, coursemap, translations

from ..installed import (
    NOT_SOURCES,
    ROOT,
    Install,
    build_wheel,
    clean_environment,
    make_venv,
    run,
    work_folder,
)

pytestmark = pytest.mark.e2e  # fresh venvs, pip, and a learner copy in a kernel

CHAPTER = "00_start_here.ipynb"
FAKE_COLAB = """
import sys, types

colab = sys.modules["google.colab"] = types.ModuleType("google.colab")
colab.output = sys.modules["google.colab.output"] = types.ModuleType("google.colab.output")
"""
RUNNER = """
import sys
import nbformat
from nbclient import NotebookClient

notebook = nbformat.read(sys.argv[1], as_version=4)
NotebookClient(notebook, timeout=600, kernel_name="python3",
               resources={"metadata": {"path": sys.argv[2]}}).execute()
nbformat.write(notebook, sys.argv[1])
"""
WHERE_FROM = (
    "import json, autograder, autograder.exercises, coursekit.runtime\n"
    "print(json.dumps([m.__file__ for m in (autograder, autograder.exercises, "
    "coursekit.runtime)]))"
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return build_wheel(ROOT, work_folder(tmp_path_factory.mktemp("wheel"), "first-cell-wheel"))


def package_index(folder: Path, *wheels: Path) -> str:
    """A package index in PyPI's simple layout (PEP 503) holding `wheels`: its address."""
    project = folder / "simple" / "autodiff-course"
    project.mkdir(parents=True)
    links = []
    for wheel in wheels:
        os.link(wheel, project / wheel.name)
        links.append(f'<a href="{wheel.name}">{wheel.name}</a>')
    (project / "index.html").write_text(f"<html><body>{''.join(links)}</body></html>\n")
    return (folder / "simple").as_uri()


def pip_environment(index: str, **extra: str) -> dict[str, str]:
    """This process's environment without the machine's pip settings, the index `index`."""
    env = {key: value for key, value in clean_environment().items() if not key.startswith("PIP_")}
    return {
        **env,
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_INDEX_URL": index,
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        **extra,
    }


def with_install_from(setting: str, tmp_path: Path) -> Path:
    """A root whose pyproject.toml is the checkout's with `install-from = setting`."""
    root = tmp_path / "root"
    root.mkdir()
    text = (ROOT / "pyproject.toml").read_text()
    assert 'install-from = "repository"' in text
    (root / "pyproject.toml").write_text(
        text.replace('install-from = "repository"', f'install-from = "{setting}"')
    )
    return root


def offline(cell: str, wheel: Path) -> str:
    """The cell with the repository's address replaced by the wheel's file address."""
    repository = coursemap.install_spec(ROOT)
    assert f'"{repository}"' in cell
    return cell.replace(f'"{repository}"', f'"autodiff-course @ {wheel.as_uri()}"')


def in_chinese(cell: str) -> str:
    """The cell as the Chinese edition shows it (chapter 00's translation of it)."""
    notebook = nbformat.read(ROOT / "solutions" / CHAPTER, as_version=4)
    first = next(c for c in notebook.cells if "colab-setup" in c.metadata.get("tags", []))
    section = translations.read_sections(translations.translation_path(ROOT, CHAPTER))[first.id]
    return code_text.translate(cell, code_text.parse_pairs(section.text, CHAPTER))


def fresh_venv(tmp_path: Path) -> Install:
    return make_venv(work_folder(tmp_path, f"first-cell-{tmp_path.name}") / "venv")


def run_cell(python: Path | str, cell: str, env: dict[str, str], cwd: Path):
    """The cell as a script in `python`, run in `cwd` (the notebook's folder); it is plain
    Python, no magics."""
    script = cwd.parent / f"first_cell_{cwd.name}.py"
    script.write_text(cell)
    return subprocess.run(
        [str(python), str(script)], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def content(tmp_path: Path) -> Path:
    """A folder for the notebook, outside the course's files."""
    folder = tmp_path / "content"
    folder.mkdir(exist_ok=True)
    return folder


def imported_from(install: Install, env: dict[str, str], tmp_path: Path) -> Path:
    done = run(
        [str(install.python), "-c", "import autograder; print(autograder.__file__)"],
        cwd=tmp_path,
        env=env,
    )
    return Path(done.stdout.strip())


def test_the_first_cell_installs_the_course_from_the_package_index_in_the_notebooks_language(
    wheel, tmp_path
):
    """A hosted Jupyter that is not Colab (ModelScope, Kaggle), pip set to a mirror: the
    Chinese edition's cell installs this version from that index, and says so in Chinese."""
    install = fresh_venv(tmp_path)
    env = pip_environment(package_index(tmp_path / "mirror", wheel))
    cell = in_chinese(coursemap.install_cell(with_install_from("index", tmp_path)))
    done = run_cell(install.python, cell, env, content(tmp_path))
    assert done.returncode == 0, done.stderr
    version = wheel.name.split("-")[1]
    assert done.stdout.splitlines() == [
        f"正在安装本课程：`pip install autodiff-course=={version}`",
        "本课程的软件包已安装好，不需要重启。",
    ]
    assert imported_from(install, env, tmp_path).is_relative_to(install.site)


def test_the_first_cell_falls_back_to_the_repository_when_the_index_lacks_the_course(
    wheel, tmp_path
):
    """A mirror that has not synced the release yet: the cell then installs from the
    repository, and shows why the index failed."""
    install = fresh_venv(tmp_path)
    env = pip_environment(package_index(tmp_path / "mirror"))
    cell = offline(coursemap.install_cell(with_install_from("index", tmp_path)), wheel)
    done = run_cell(install.python, cell, env, content(tmp_path))
    assert done.returncode == 0, done.stderr
    tried = [line for line in done.stdout.splitlines() if line.startswith("Installing")]
    assert tried == [
        f"Installing the course: `pip install autodiff-course=={wheel.name.split('-')[1]}`",
        f"Installing the course: `pip install autodiff-course @ {wheel.as_uri()}`",
    ]
    assert "No matching distribution found for autodiff-course" in done.stdout
    assert "no restart needed" in done.stdout
    assert imported_from(install, env, tmp_path).is_relative_to(install.site)


def test_among_the_courses_files_the_first_cell_installs_from_them(tmp_path):
    """The zip unpacked on ModelScope (or on a laptop, a kernel without the course): the
    notebook's folder lies inside the course's files, which pip installs with their pinned
    requirements from the index it is set to use; no git host is asked."""
    install = fresh_venv(tmp_path)
    unpacked = tmp_path / "autodiff-course"
    shutil.copytree(ROOT, unpacked, ignore=NOT_SOURCES)
    (unpacked / "course" / "zh-CN").mkdir(parents=True)
    # The index holds no setuptools to build the folder with: the venv's own builds it.
    env = pip_environment(package_index(tmp_path / "mirror"), PIP_NO_BUILD_ISOLATION="0")
    cell = in_chinese(coursemap.install_cell(ROOT))
    done = run_cell(install.python, cell, env, unpacked / "course" / "zh-CN")
    assert done.returncode == 0, done.stdout + done.stderr
    requirements = unpacked / "requirements-learner.txt"
    assert done.stdout.splitlines() == [
        f"正在安装本课程：`pip install -r {requirements} {unpacked}`",
        "本课程的软件包已安装好，不需要重启。",
    ]
    assert imported_from(install, env, tmp_path).is_relative_to(install.site)


def test_the_first_cell_says_what_to_do_when_no_source_installs(tmp_path):
    """Nothing reachable: pip's own reason is shown, then what the learner can do."""
    install = fresh_venv(tmp_path)
    env = pip_environment(package_index(tmp_path / "mirror"))
    missing = tmp_path / "autodiff_course-0.1.0-py3-none-any.whl"  # never built
    cell = offline(coursemap.install_cell(ROOT), missing)
    done = run_cell(install.python, cell, env, content(tmp_path))
    assert done.returncode != 0
    assert str(missing) in done.stdout  # pip names the file it could not find
    assert "RuntimeError: pip could not install the course (pip's messages are above)" in (
        done.stderr
    )
    assert "set a package mirror" in done.stderr


def test_where_the_course_is_installed_the_first_cell_does_nothing(tmp_path):
    """JupyterLab after `make lab`, Binder: no pip, no output (the stored outputs stay empty)."""
    env = pip_environment((tmp_path / "nowhere").as_uri())
    done = run_cell(sys.executable, coursemap.install_cell(ROOT), env, content(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""


def outputs_text(cell: nbformat.NotebookNode) -> str:
    """Everything a cell showed: streams, plain text and HTML, and errors."""
    parts = []
    for output in cell.get("outputs", []):
        parts.append(output.get("text", ""))
        parts += [str(v) for k, v in output.get("data", {}).items() if k.startswith("text/")]
        parts.append(output.get("evalue", ""))
    return "\n".join(parts)


def run_on_fake_colab(
    install: Install, wheel: Path, tmp_path: Path
) -> tuple[nbformat.NotebookNode, str]:
    """Execute the learner copy (plus a cell asking where the course was imported from) in
    a kernel that has `google.colab` loaded, the repository replaced by the wheel."""
    folder = tmp_path / "content"
    folder.mkdir()
    notebook = nbformat.read(ROOT / "course" / CHAPTER, as_version=4)
    first = next(c for c in notebook.cells if c.cell_type == "code")
    first.source = offline(first.source, wheel)
    notebook.cells.append(nbformat.v4.new_code_cell(WHERE_FROM))
    nbformat.write(notebook, folder / CHAPTER)
    startup = tmp_path / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-fake-colab.py").write_text(FAKE_COLAB)
    (tmp_path / "runner.py").write_text(textwrap.dedent(RUNNER))
    env = pip_environment(
        package_index(tmp_path / "mirror"),
        IPYTHONDIR=str(tmp_path / "ipython"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
    )
    run(
        [str(install.python), str(tmp_path / "runner.py"), str(folder / CHAPTER), str(folder)],
        cwd=folder,
        env=env,
        timeout=900,
    )
    return nbformat.read(folder / CHAPTER, as_version=4), wheel.as_uri()


def test_a_learner_copy_runs_on_colab_from_what_the_first_cell_installs(wheel, tmp_path):
    install = fresh_venv(tmp_path)
    executed, address = run_on_fake_colab(install, wheel, tmp_path)
    code = [cell for cell in executed.cells if cell.cell_type == "code"]

    assert [line for line in outputs_text(code[0]).splitlines() if line] == [
        f"Installing the course: `pip install autodiff-course @ {address}`",
        "The course's packages are installed; no restart needed.",
    ]
    helpers = ("hint", "progress", "predict", "reset")  # cells that show no report
    resets = [outputs_text(cell) for cell in code if "check.reset(" in cell.source]
    assert resets and all("raise NotImplementedError(" in text for text in resets), resets
    reports = [
        outputs_text(cell)
        for cell in code
        if "check." in cell.source
        and not any(f"check.{helper}(" in cell.source for helper in helpers)
    ]
    assert reports and all(
        "NOT ANSWERED YET" in text or "FAILED" in text or "PASSED" in text for text in reports
    ), reports
    assert any("NOT ANSWERED YET" in text for text in reports)

    files = json.loads(outputs_text(code[-1]))
    for file in files:
        assert Path(file).is_relative_to(install.site), f"{file} is not from the wheel"


def test_the_install_cell_follows_the_repository_branch_and_version_settings(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nversion = "3.1.4"\n[tool.course]\n'
        'repository = "https://github.com/someone/fork/"\nbranch = "spring-term"\n'
    )
    fork = '["autodiff-course @ git+https://github.com/someone/fork@spring-term"],'
    cell = coursemap.install_cell(tmp_path)
    assert fork in cell and "autodiff-course==" not in cell  # the repository by default
    assert "try:\n    import autograder  # noqa: F401\nexcept ModuleNotFoundError:" in cell
    assert 'stop_if_restart_needed(language="en")' in cell
    text = (tmp_path / "pyproject.toml").read_text()
    (tmp_path / "pyproject.toml").write_text(text + 'install-from = "index"\n')
    cell = coursemap.install_cell(tmp_path)
    assert cell.index('["autodiff-course==3.1.4"],') < cell.index(fork)  # the index first
