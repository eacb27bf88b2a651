"""requirements.txt (pip) and environment.yml (Binder) must pin the same packages."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==([\w.]+)$")


def pins(lines: list[str]) -> dict[str, str]:
    found = {}
    for line in lines:
        match = PIN.match(line.strip())
        if match:
            found[match.group(1).lower()] = match.group(2)
    return found


def requirements() -> dict[str, str]:
    lines = [
        line
        for line in (ROOT / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    unpinned = [line for line in lines if not PIN.match(line.strip())]
    assert not unpinned, f"requirements.txt lines must be pinned with ==: {unpinned}"
    return pins(lines)


def environment_pip_section() -> dict[str, str]:
    lines = (ROOT / "environment.yml").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "- pip:")
    section = []
    for line in lines[start + 1 :]:
        if not line.strip().startswith("- "):
            break
        section.append(line.strip()[2:])
    return pins(section)


def test_environment_yml_mirrors_requirements():
    assert environment_pip_section() == requirements()


def test_course_packages_are_all_pinned():
    wanted = {
        "jupyterlab",
        "numpy",
        "tensorflow",
        "jax",
        "matplotlib",
        "ipywidgets",
        "nbval",
        "hypothesis",
        "nbformat",
        "nbclient",
    }
    assert wanted <= set(requirements())


def test_installed_versions_are_the_pinned_ones():
    from importlib.metadata import version

    for name, pinned in requirements().items():
        assert version(name) == pinned, f"{name}: installed {version(name)}, pinned {pinned}"


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make lab" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()
