"""pyproject.toml's bounds and the README's "Supported versions" say what was tested.

The pinned set (requirements.txt) is the lower bound of every dependency it pins, an extra's
too; each bound is closed above, so no release newer than the ones `make versions` tested is
admitted.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FRAMEWORKS = ("jax", "numpy", "tensorflow")
BOUNDS = re.compile(r"^([A-Za-z0-9_.-]+)>=([\w.]+)(?:,<([\w.]+))?$")


def _pins() -> dict[str, str]:
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    pairs = (line.split("==") for line in lines if "==" in line and not line.startswith("#"))
    return {name.strip().lower(): version.strip() for name, version in pairs}


def _bounds() -> dict[str, tuple[str, str | None]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project.get("optional-dependencies", {}).values()
    found = {}
    for requirement in [*project["dependencies"], *(r for extra in extras for r in extra)]:
        match = BOUNDS.match(requirement.replace(" ", ""))
        assert match, f"{requirement!r}: write bounds as name>=pin,<next"
        found[match[1].lower()] = (match[2], match[3])
    return found


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def _readme_row(label: str) -> list[str]:
    section = (ROOT / "README.md").read_text().split("## Supported versions", 1)[1]
    row = next(line for line in section.splitlines() if line.startswith(f"| {label}"))
    return [cell.strip() for cell in row.strip("|").split("|")]


def test_every_pinned_dependency_has_its_pin_as_lower_bound_and_an_upper_bound():
    pins = _pins()
    for name, (lower, upper) in _bounds().items():
        if name in pins:
            assert lower == pins[name], f"{name}: lower bound {lower}, pinned {pins[name]}"
            assert upper is not None, f"{name}: no upper bound"
            assert _version(pins[name]) < _version(upper)


def test_readme_states_the_pinned_set():
    _, python, jax, numpy, tensorflow, *_ = _readme_row("pinned")
    pins = _pins()
    assert python == "3.11"
    assert jax == f"{pins['jax']}" and pins["jaxlib"] == pins["jax"]
    assert (numpy, tensorflow) == (pins["numpy"], pins["tensorflow"])


def test_readme_newest_releases_lie_within_the_bounds():
    _, python, jax, numpy, tensorflow, *_ = _readme_row("newest")
    bounds = _bounds()
    assert python == "3.12"
    for name, stated in zip(FRAMEWORKS, (jax, numpy, tensorflow), strict=True):
        lower, upper = bounds[name]
        assert upper is not None
        assert _version(lower) <= _version(stated) < _version(upper), name
