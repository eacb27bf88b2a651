"""The Colab path: a learner copy runs top to bottom with the course installed from the wheel.

Colab's first cell pip-installs the course (a non-editable install) and must then say whether
the runtime needs a restart. Here a kernel whose `autograder` and `coursekit` come from the
wheel (tests/installed.py) runs chapter 00's learner copy from a folder outside the checkout,
as Colab would: `google.colab` is imported at start-up and `%pip` is replaced by a recorder,
since the real one would fetch the repository from GitHub.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import nbformat
import pytest

from autograder.authoring import coursemap

from ..installed import ROOT, Install, clean_environment, installed_course, run

pytestmark = pytest.mark.e2e  # runs a learner copy in a kernel, from the wheel

CHAPTER = "00_start_here.ipynb"
FAKE_COLAB = '''
import sys, types

colab = sys.modules["google.colab"] = types.ModuleType("google.colab")
colab.output = sys.modules["google.colab.output"] = types.ModuleType("google.colab.output")


def pip(line):
    """Colab's %pip, recorded instead of run (the test machine has no GitHub)."""
    with open({record!r}, "a") as record:
        record.write(line + "\\n")


get_ipython().register_magic_function(pip, "line", "pip")
'''
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
def installed(tmp_path_factory) -> Install:
    return installed_course(tmp_path_factory.mktemp("installed"))


def fake_colab_profile(ipython_dir: Path, record: Path) -> None:
    """An IPython profile whose start-up makes the kernel look like Colab's."""
    startup = ipython_dir / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-fake-colab.py").write_text(FAKE_COLAB.format(record=str(record)))


def outputs_text(cell: nbformat.NotebookNode) -> str:
    """Everything a cell showed: streams, plain text and HTML, and errors."""
    parts = []
    for output in cell.get("outputs", []):
        parts.append(output.get("text", ""))
        parts += [str(v) for k, v in output.get("data", {}).items() if k.startswith("text/")]
        parts.append(output.get("evalue", ""))
    return "\n".join(parts)


def run_on_fake_colab(install: Install, tmp_path: Path) -> tuple[nbformat.NotebookNode, Path]:
    """Execute the learner copy (plus a cell asking where the course was imported from)."""
    folder, record = tmp_path / "content", tmp_path / "pip-calls.txt"
    folder.mkdir()
    notebook = nbformat.read(ROOT / "course" / CHAPTER, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(WHERE_FROM))
    nbformat.write(notebook, folder / CHAPTER)
    fake_colab_profile(tmp_path / "ipython", record)
    (tmp_path / "runner.py").write_text(textwrap.dedent(RUNNER))
    env = clean_environment(
        IPYTHONDIR=str(tmp_path / "ipython"), JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime")
    )
    run(
        [str(install.python), str(tmp_path / "runner.py"), str(folder / CHAPTER), str(folder)],
        cwd=folder,
        env=env,
        timeout=900,
    )
    return nbformat.read(folder / CHAPTER, as_version=4), record


def test_a_learner_copy_runs_on_colab_from_the_wheel(installed, tmp_path):
    executed, record = run_on_fake_colab(installed, tmp_path)
    code = [cell for cell in executed.cells if cell.cell_type == "code"]

    spec = coursemap.install_spec(ROOT)
    assert f"@{coursemap.settings(ROOT)['branch']}" in spec
    assert record.read_text().split() == ["install", "--quiet", *f'"{spec}"'.split()]
    assert "no restart needed" in outputs_text(code[0])

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
        assert Path(file).is_relative_to(installed.site), f"{file} is not from the wheel"


def test_the_install_cell_follows_the_repository_and_branch_settings(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.course]\nrepository = "https://github.com/someone/fork/"\nbranch = "spring-term"\n'
    )
    cell = coursemap.colab_cell(tmp_path)
    assert 'course = "autodiff-course @ git+https://github.com/someone/fork@spring-term"' in cell
    assert '%pip install --quiet "{course}"' in cell and "stop_if_restart_needed()" in cell
    assert 'if "google.colab" in sys.modules:' in cell  # does nothing outside Colab
