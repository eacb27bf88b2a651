"""The notebook checks' cases and references are stored on disk once per machine: a later
process's check reads them (no TensorFlow import, no draws), and nothing it reads can be
anything but what it would have computed."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from autograder.exercises import EXERCISES
from autograder.judging import engine, stored_references
from autograder.judging.cases import NOTEBOOK
from autograder.judging.derived import two_references
from autograder.judging.references import ReferenceDisagreement

ROOT = Path(__file__).resolve().parents[2]
UNBROADCAST = EXERCISES["unbroadcast"]

# A JAX chapter's exercise, checked with the course's worked answer in a fresh interpreter;
# it prints whether TensorFlow was imported and whether Hypothesis drew cases.
CHILD = """
import sys
import jax, jax.numpy as jnp
from autograder.exercises import EXERCISES
from autograder.judging import cases, engine

draws = []
original = cases.run_property
cases.run_property = lambda *a, **k: draws.append(1) or original(*a, **k)
engine.draw_cases = lambda *a, **k: draws.append(1) or cases.draw_cases(*a, **k)

@jax.custom_jvp
def soft_threshold(x):
    return jnp.sign(x) * jnp.maximum(jnp.abs(x) - 1, 0)

@soft_threshold.defjvp
def _jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return soft_threshold(x), jnp.where(jnp.abs(x) > 1, t, jnp.zeros_like(t))

report = engine.check_function(EXERCISES["soft_threshold"], soft_threshold)
print(report.status, "tensorflow" in sys.modules, bool(draws))
"""


def _printed_by_a_fresh_process(code: str, cache_home: Path) -> list[str]:
    """What `code` prints, run in a fresh interpreter whose home and caches are `cache_home`."""
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={"XDG_CACHE_HOME": str(cache_home), "PATH": "/usr/bin:/bin", "HOME": str(cache_home)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.split()


def _check_in_a_fresh_process(cache_home: Path) -> list[str]:
    return _printed_by_a_fresh_process(CHILD, cache_home)


@pytest.mark.slow
def test_a_second_kernel_reads_the_stored_references_and_imports_no_tensorflow(
    tmp_path: Path,
) -> None:
    assert _check_in_a_fresh_process(tmp_path) == ["passed", "True", "True"]
    stored = sorted(p.name for p in (tmp_path / "autodiff-course").rglob("*.npz"))
    assert [name.split("-")[0] for name in stored] == ["soft_threshold", "soft_threshold"]
    assert _check_in_a_fresh_process(tmp_path) == ["passed", "False", "False"]


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty store, and this process's own tables forgotten."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    engine._notebook_cases.cache_clear()
    engine._notebook_table.cache_clear()
    yield stored_references.folder()
    engine._notebook_cases.cache_clear()
    engine._notebook_table.cache_clear()


def _table() -> tuple[list, list, int]:
    engine._notebook_cases.cache_clear()
    engine._notebook_table.cache_clear()
    return engine._notebook_table(UNBROADCAST, NOTEBOOK)


def _same_table(first: tuple[list, list, int], second: tuple[list, list, int]) -> None:
    assert [c.key() for c in first[0]] == [c.key() for c in second[0]]
    assert [c.label for c in first[0]] == [c.label for c in second[0]]
    assert first[2] == second[2]
    for a, b in zip(first[1], second[1], strict=True):
        assert all(np.array_equal(x, y) and x.dtype == y.dtype for x, y in zip(a, b, strict=True))


def test_what_is_read_back_is_what_was_computed(store: Path) -> None:
    computed = _table()
    assert len(list(store.glob("unbroadcast-*.npz"))) == 2
    _same_table(computed, _table())


@pytest.mark.parametrize("damage", ["truncated", "other_case", "non_numeric"])
def test_a_damaged_entry_is_recomputed_never_trusted(store: Path, damage: str) -> None:
    computed = _table()
    (cases_file,) = store.glob("unbroadcast-*-cases*.npz")
    (outputs_file,) = (p for p in store.glob("unbroadcast-*.npz") if p != cases_file)
    if damage == "truncated":
        outputs_file.write_bytes(outputs_file.read_bytes()[:100])
    elif damage == "other_case":  # an array changed under a case whose recorded hash stays
        with np.load(cases_file) as data:
            members = dict(data)
        first_array = next(key for key in members if key.startswith("0/"))
        members[first_array] = members[first_array] + 1
        np.savez(cases_file, **members)
    else:
        with np.load(outputs_file) as data:
            members = dict(data)
        members["0/0"] = np.array(["not", "numbers"])
        np.savez(outputs_file, **members)
    _same_table(computed, _table())


def test_an_altered_copy_of_an_exercise_is_not_served_the_stored_references(store: Path) -> None:
    _table()

    def perturbed_jax(jax, params, arrays):
        (result,) = UNBROADCAST.jax_reference(jax, params, arrays)
        return (result + 1,)

    broken = dataclasses.replace(
        UNBROADCAST,
        reference=two_references(tf=UNBROADCAST.tf_reference, jax=perturbed_jax, why="broken"),
    )
    with pytest.raises(ReferenceDisagreement):
        engine._notebook_table(broken, NOTEBOOK)


def test_entries_of_older_sources_are_removed_when_new_ones_are_written(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _table()
    old = sorted(store.glob("unbroadcast-*.npz"))
    monkeypatch.setattr(stored_references, "sources_digest", lambda: "f" * 64)
    _table()
    new = sorted(store.glob("unbroadcast-*.npz"))
    assert len(new) == 2 and not set(old) & set(new)


def test_another_environment_keeps_its_own_entries(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _table()
    first = sorted(store.glob("unbroadcast-*.npz"))
    monkeypatch.setattr(stored_references, "versions_digest", lambda: "e" * 64)
    _table()
    assert sorted(store.glob("unbroadcast-*.npz")) == first  # untouched by the other's writes
    assert len(list(stored_references.folder().glob("unbroadcast-*.npz"))) == 2


def test_a_store_that_cannot_be_written_only_means_computing(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.parent.mkdir(parents=True)
    store.write_text("a file where the folder should be")
    computed = _table()
    assert store.is_file()
    monkeypatch.setenv(stored_references.SWITCH, "0")
    _same_table(computed, _table())


# Whether JAX's persistent compilation cache is on in a notebook's kernel: cell 1 imports JAX,
# then the checks, then the chapter's demonstrations compile before any check runs.
JAX_FIRST = """
import jax, jax.numpy as jnp
from autograder import check
jax.jit(lambda x: x + 1)(jnp.ones(3))  # a demonstration compiles first
print(bool(jax.config.jax_compilation_cache_dir))
"""
CHECK_FIRST = """
from autograder import check
import jax, jax.numpy as jnp
jax.jit(lambda x: x + 1)(jnp.ones(3))
print(bool(jax.config.jax_compilation_cache_dir))
"""


@pytest.mark.parametrize("cell", [JAX_FIRST, CHECK_FIRST], ids=["jax_first", "check_first"])
def test_jax_compiles_into_the_persistent_cache_from_the_check_import_on(
    cell: str, tmp_path: Path
) -> None:
    assert _printed_by_a_fresh_process(cell, tmp_path) == ["True"]
    assert any((tmp_path / "autodiff-course" / "jax").iterdir()), "nothing was cached"
