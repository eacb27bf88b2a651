"""After the first cell's install (where the course was missing): must the runtime restart?

A hosted runtime (Colab's above all) comes with its own numpy, TensorFlow, JAX and more, and
may have imported some of them before the first cell runs. When pip replaces a package that
is already imported, the old version stays in memory beside the new files on disk; later
imports then mix the two and fail in ways that have nothing to do with the exercise. Python
cannot unload a module, so the only cure is a restart, and the learner has to be told so at
once, not three cells later.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Mapping
from importlib import metadata
from types import ModuleType

RESTART_HOW = (
    "Restart the runtime (Colab: Runtime > Restart session; Jupyter: Kernel > Restart "
    "Kernel), then run the notebook again from the top; the install cell then does nothing "
    "and this message goes away."
)
RESTART_NEEDED = (
    "The install replaced packages this runtime had already imported ({replaced}). {how}"
)
READY = "The course's packages are installed; no restart needed."


class RestartNeeded(RuntimeError):
    """Raised by the install cell so that 'Run all' stops before anything uses the old modules."""


def replaced_packages(modules: Mapping[str, ModuleType] | None = None) -> list[str]:
    """'name loaded -> installed' for each imported top-level package whose installed
    distribution no longer has the version that is loaded."""
    modules = sys.modules if modules is None else modules
    providers = metadata.packages_distributions()
    replaced = []
    for name, module in sorted(modules.items()):
        loaded = _loaded_version(module) if "." not in name else None
        installed = _installed_versions(providers.get(name, []))
        if loaded and installed and not any(_names(loaded, v) for v in installed):
            replaced.append(f"{name} {loaded} -> {', '.join(sorted(installed))}")
    return replaced


def _names(loaded: str, installed: str) -> bool:
    """Whether a module's own version names this installed one: the same, or the same
    release whose post-release or local label the module leaves out (certifi
    2026.10.19.post1 says `__version__ = "2026.10.19"`), which is no reason to restart."""
    return installed == loaded or installed.startswith((f"{loaded}.post", f"{loaded}+"))


def _loaded_version(module: ModuleType) -> str | None:
    with warnings.catch_warnings():  # some packages deprecate their own __version__
        warnings.simplefilter("ignore")
        version = getattr(module, "__version__", None)
    return version if isinstance(version, str) else None


def _installed_versions(distributions: list[str]) -> set[str]:
    versions = set()
    for distribution in distributions:
        try:
            versions.add(metadata.version(distribution))
        except metadata.PackageNotFoundError:
            continue
    return versions


def stop_if_restart_needed(
    modules: Mapping[str, ModuleType] | None = None, *, language: str = "en"
) -> None:
    """Raise RestartNeeded, naming the replaced packages, when the runtime must restart;
    otherwise say that the course is ready. In `language`, the notebook's: the install cell
    runs before the chapter's `check.language(...)`, so it passes the language itself."""
    from autograder.locale import say, speaking

    with speaking(language):
        replaced = replaced_packages(modules)
        if replaced:
            raise RestartNeeded(
                say(RESTART_NEEDED, replaced="; ".join(replaced), how=say(RESTART_HOW))
            )
        print(say(READY))
