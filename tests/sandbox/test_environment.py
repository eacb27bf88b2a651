"""The environment a child starts with: JAX reads the grader's compilation cache, and only the
grader's own warm-up writes it (a child's cache folder is mounted read-only; told so, JAX does
not serialize, compress and try to write each program a submission compiles)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from autograder.sandbox.environment import scrubbed_environment

# A program no other test compiles, so that the folder starts without it.
COMPILE = (
    "import jax, jax.numpy as jnp\n"
    "print(jax.jit(lambda x: jnp.sin(x) * 3.25 + 0.5)(jnp.arange(7.0)).sum())\n"
)


def entries_after_a_compile(tmp_path: Path, writable: bool) -> list[str]:
    cache = tmp_path / "cache"
    cache.mkdir()
    env = scrubbed_environment(tmp_path, str(cache), cache_writable=writable)
    done = subprocess.run(
        [sys.executable, "-c", COMPILE], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "persistent compilation cache" not in done.stderr  # no write error, no warning
    return sorted(path.name for path in cache.iterdir())


@pytest.mark.parametrize("writable", [True, False], ids=["warm-up", "child"])
def test_only_a_writable_cache_is_written(tmp_path: Path, writable: bool) -> None:
    assert bool(entries_after_a_compile(tmp_path, writable)) is writable


def test_without_a_cache_jax_is_told_nothing_of_one(tmp_path: Path) -> None:
    env = scrubbed_environment(tmp_path)
    assert not [name for name in env if name.startswith("JAX_")]
