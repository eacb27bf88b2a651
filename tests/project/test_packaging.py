"""The wheel carries the whole course, and a check and a grade work from it outside the repo.

This is what Colab's first cell and Gradescope's setup.sh get: a non-editable install. Each test
runs a fresh Python in a folder outside the checkout, with the course from the wheel only
(see tests/installed.py for why that Python cannot reach the checkout).
"""

from __future__ import annotations

import json
import textwrap
import zipfile
from email.parser import HeaderParser
from pathlib import Path

import pytest

from ..installed import (
    ROOT,
    Install,
    build_wheel,
    installed_course,
    package_modules,
    run,
    wheel_modules,
)
from ..submissions import GOOD_UNBROADCAST

pytestmark = pytest.mark.e2e  # builds the wheel, checks and grades from it

SOLUTION = ROOT / "solutions" / "03_unbroadcasting.ipynb"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Install:
    return installed_course(tmp_path_factory.mktemp("installed"))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built once from a clean copy of the checkout."""
    return build_wheel(ROOT, tmp_path_factory.mktemp("wheel"))


@pytest.fixture
def outside(tmp_path) -> Path:
    """A working folder that is not the checkout (and not inside it)."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    assert ROOT not in folder.parents
    return folder


def python_json(install: Install, code: str, cwd: Path) -> dict:
    """Run `code` in the installed Python; it prints one JSON line last."""
    done = run([str(install.python), "-c", textwrap.dedent(code)], cwd=cwd)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_wheel_carries_every_module_of_the_packages(wheel):
    expected = package_modules()
    assert "autograder/exercises/ch03_unbroadcasting.py" in expected  # the listing works
    missing = sorted(expected - wheel_modules(wheel))
    assert not missing, f"the wheel lacks {missing}: see [tool.setuptools.packages.find]"
    assert not any(name.startswith("tests/") for name in wheel_modules(wheel))


def test_the_wheel_names_its_licence_and_carries_its_text(wheel):
    """The wheel holds code only, under MIT: its metadata says so (an SPDX expression, PEP 639)
    and carries LICENSE word for word; the prose licence goes with the prose, not here."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next(
            name.rsplit("/", 1)[0] for name in names if name.endswith(".dist-info/METADATA")
        )
        metadata = HeaderParser().parsestr(archive.read(f"{info}/METADATA").decode())
        assert metadata["License-Expression"] == "MIT"
        assert metadata.get_all("License-File") == ["LICENSE"]
        assert archive.read(f"{info}/licenses/LICENSE") == (ROOT / "LICENSE").read_bytes()
    assert (ROOT / "LICENSE").read_text().startswith("MIT License\n")
    assert not [name for name in names if name.endswith((".ipynb", ".md"))], "prose in the wheel"


def test_the_course_imports_from_the_install_not_the_checkout(installed, outside):
    found = python_json(
        installed,
        """
        import json, sys
        import autograder, autograder.exercises, coursekit.broadcasting
        from autograder.sandbox.confined import child
        print(json.dumps({"files": [m.__file__ for m in (autograder, autograder.exercises,
                                                         child, coursekit)],
                          "path": sys.path}))
    """,
        outside,
    )
    for file in found["files"]:
        assert Path(file).is_relative_to(installed.site), f"{file} is not from the wheel"
    assert str(ROOT) not in found["path"] and "" not in found["path"][1:]


def test_a_check_runs_from_the_wheel(installed, outside):
    verdicts = python_json(
        installed,
        f"""
        import json
        import numpy as np
        import autograder
        from autograder import check
        {textwrap.indent(GOOD_UNBROADCAST, " " * 8).strip()}
        right = check.unbroadcast(unbroadcast)
        wrong = check.unbroadcast(lambda g, shape: g)
        text = str(wrong)  # a report is worded when shown, in the language then in use
        check.language("zh-CN")  # the Chinese catalogue is package data of the wheel
        chinese = str(check.unbroadcast(lambda g, shape: g))
        print(json.dumps({{"right": right.passed, "wrong": wrong.passed,
                          "text": text, "file": autograder.__file__,
                          "chinese": chinese}}))
    """,
        outside,
    )
    assert verdicts["chinese"].startswith("未通过 ")
    assert Path(verdicts["file"]).is_relative_to(installed.site)
    assert verdicts["right"] is True
    assert verdicts["wrong"] is False and "Smallest failing case" in verdicts["text"]


def test_a_grade_runs_from_the_wheel(installed, outside):
    submission = outside / "solution.ipynb"
    submission.write_bytes(SOLUTION.read_bytes())
    run(
        [
            str(installed.python),
            "-m",
            "autograder",
            "grade",
            str(submission),
            "--out",
            "graded",
            "--jobs",
            "1",
            "--seed",
            "7",
            "--timeout",
            "120",
        ],
        cwd=outside,
    )
    written = list((outside / "graded").glob("*/results.json"))  # one folder per submission
    assert len(written) == 1, written
    results = json.loads(written[0].read_text())
    statuses = {test["name"]: test["status"] for test in results["tests"]}
    assert statuses and set(statuses.values()) == {"passed"}, results
    assert results["score"] == sum(test["max_score"] for test in results["tests"]) == 2
