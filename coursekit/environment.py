"""What is installed: one line per package the course needs, never an exception.

`environment_report()` is what chapter 00 prints; a missing package gets a line saying how to
install it instead of an ImportError in the middle of a chapter, in the notebook's language
(the catalogue's, autograder.locale: the Chinese names the file README.zh-CN.md installs from).
"""

from __future__ import annotations

from importlib import metadata

from autograder.locale import say

PACKAGES = ("numpy", "tensorflow", "jax", "jaxlib", "ipywidgets", "matplotlib", "hypothesis")
INSTALL = "pip install -r requirements.txt (or run `make lab`; on Colab, run the first cell)"


def package_versions(packages: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    """Each package's installed version, or None when it is not installed."""
    found: dict[str, str | None] = {}
    for name in packages:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def environment_report(packages: tuple[str, ...] = PACKAGES) -> str:
    """One line per package: its version, or "missing: install with ..."."""
    versions = package_versions(packages)
    width = max((len(name) for name in versions), default=0)
    missing = say("missing: install with {install}", install=say(INSTALL))
    return "\n".join(
        f"{name:<{width}}  {version if version else missing}" for name, version in versions.items()
    )
