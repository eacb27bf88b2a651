"""The test tiers (tests/tiers.py) leave no test out by accident: every test file is one pytest
collects, `make test` runs them all, the markers that take a test out of the fast tiers are
registered (and a misspelt one fails), and each chapter's tier selects tests and its notebook."""

from __future__ import annotations

import ast
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from tests import tiers

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
# pytest's own markers; any other must be registered in pyproject.toml.
BUILTIN_MARKERS = {"parametrize", "skip", "skipif", "xfail", "usefixtures", "filterwarnings"}


def pytest_settings() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]


def registered_markers() -> set[str]:
    return {line.split(":")[0].strip() for line in pytest_settings()["markers"]}


def markers_used(path: Path) -> set[str]:
    """The `pytest.mark.<name>` a test file names (decorators and `pytestmark` alike)."""
    return {
        node.attr
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "mark"
    }


def defines_tests(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(
        isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_")
        for node in tree.body
    )


def make_commands(target: str) -> str:
    """What `make <target>` would run, without running it (`make -n`)."""
    return subprocess.run(
        ["make", "-n", "--no-print-directory", target],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_lint_runs_the_linter_and_the_formatter_check_over_the_whole_tree():
    lint = make_commands("lint").splitlines()
    assert any(line.endswith("-m ruff check .") for line in lint), lint
    assert any(line.endswith("-m ruff format --check .") for line in lint), lint


def test_the_markers_that_leave_the_fast_tier_are_registered_and_strict():
    assert set(tiers.SLOW_MARKERS) <= registered_markers()
    assert "--strict-markers" in pytest_settings()["addopts"].split()
    for path in sorted(TESTS.rglob("*.py")):
        unknown = markers_used(path) - BUILTIN_MARKERS - registered_markers()
        assert not unknown, f"{path.relative_to(ROOT)} uses unregistered markers {unknown}"


def runner_scripts() -> str:
    """The scripts that run test files pytest does not collect by itself (CI's learner path,
    the GPU check)."""
    scripts = [ROOT / ".ci" / "run", ROOT / "Makefile", *TESTS.rglob("*.sh")]
    return "\n".join(script.read_text(encoding="utf-8") for script in scripts)


def test_every_file_that_defines_tests_is_one_pytest_collects_or_a_script_runs():
    """A file of tests named otherwise (`check_x.py`) would run in no tier at all."""
    scripts = runner_scripts()
    for path in sorted(TESTS.rglob("*.py")):
        if defines_tests(path) and not re.fullmatch(r"test_\w+\.py", path.name):
            name = path.relative_to(ROOT).as_posix()
            assert name in scripts, f"{name} defines tests, but pytest collects only test_*.py"
        elif defines_tests(path):
            assert (path.parent / "__init__.py").exists(), path.relative_to(ROOT)


def test_make_test_runs_every_tier_and_the_fast_tiers_leave_out_only_the_markers():
    parts = {
        part: make_commands(part)
        for part in ("test-all", "test-pytest", "test-notebooks", "test-fast", "test-chapter")
    }
    everything = re.search(
        r"-m pytest .*--nbval .* tests solutions course$", parts["test-all"], re.MULTILINE
    )
    assert everything and " -m " not in everything.group(0).replace("-m pytest", "")
    everything = re.search(r"-m pytest .* tests$", parts["test-pytest"], re.MULTILINE)
    assert everything and " -m " not in everything.group(0).replace("-m pytest", "")
    assert re.search(r"--nbval .* solutions course$", parts["test-notebooks"], re.MULTILINE)
    assert re.search(rf'-m "{tiers.FAST}" .*tests$', parts["test-fast"], re.MULTILINE)
    assert f'-m "{tiers.FAST}"' in parts["test-chapter"] and "--chapter" in parts["test-chapter"]
    assert tiers.FAST == "not slow and not e2e"
    test = (ROOT / "Makefile").read_text()
    assert re.search(r"^TEST_PARTS := lint test-all$", test, re.MULTILINE)


def test_the_chapter_tier_needs_a_chapter_and_refuses_an_unknown_one():
    missing = subprocess.run(
        ["make", "--no-print-directory", "test-chapter"], cwd=ROOT, capture_output=True, text=True
    )
    assert missing.returncode != 0 and "make test-chapter CH=03" in missing.stderr
    with pytest.raises(pytest.UsageError, match=r"--chapter '3'.*one of 00, 01"):
        tiers.chapter_or_error("3")


class Collected:
    """A plugin that keeps the items a nested collection selected."""

    def __init__(self) -> None:
        self.items: list[pytest.Item] = []

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self.items = list(items)


@pytest.fixture(scope="module")
def fast_items() -> list[pytest.Item]:
    """The fast tier's tests and every solution notebook, collected (not run) in this process.
    In a tier's run the test modules are already imported (each xdist worker collects them all),
    so this costs seconds; run alone, it imports them (a minute or two on 2 cores)."""
    collected = Collected()
    notebooks = [
        str(ROOT / "solutions" / f"{stem}.ipynb") for stem in tiers.chapter_notebooks().values()
    ]
    code = pytest.main(
        [
            "--collect-only",
            "-qq",
            "-p",
            "no:xdist",
            "--nbval",
            "-m",
            tiers.FAST,
            "--continue-on-collection-errors",
            "--rootdir",
            str(ROOT),
            str(TESTS),
            *notebooks,
        ],
        plugins=[collected],
    )
    # A module that fails to import is another test's failure (its own run reports it); the
    # chapters' assertions below still see every other module.
    assert code in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), code
    return collected.items


@pytest.mark.parametrize("chapter", sorted(tiers.chapter_notebooks()))
def test_each_chapter_tier_selects_its_checks_and_its_notebook(chapter, fast_items):
    selected, _ = tiers.select_chapter(fast_items, chapter)
    files = {Path(item.path).name for item in selected}
    assert f"test_check_ch{chapter}.py" in files
    assert f"{tiers.chapter_notebooks()[chapter]}.ipynb" in files
    others = set(tiers.chapter_notebooks()) - {chapter}
    assert not {f"test_check_ch{other}.py" for other in others} & files
