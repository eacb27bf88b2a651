"""Where the grader keeps what it prepares once: the reference cache (refcache.py) and JAX's
compilation cache beside it. Standard library only: start.py reads it before the heavy
imports."""

from __future__ import annotations

import os
from pathlib import Path

ENV = "AUTODIFF_REFERENCE_CACHE"


def reference_cache(override: Path | None = None) -> Path:
    """--reference-cache, else $AUTODIFF_REFERENCE_CACHE, else the user's cache folder."""
    if override is not None:
        return override
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "autodiff-course" / "references"


def compile_cache(override: Path | None = None) -> Path:
    """JAX's persistent compilation cache for the grader's children, beside the references.
    JAX keys its entries by program, compiler options and versions itself."""
    return reference_cache(override) / "jax"
