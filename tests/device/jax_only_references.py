"""A pytest plugin for a GPU machine without TensorFlow: references from JAX alone.

The GPU machines the project is checked on carry JAX with CUDA but no TensorFlow (its wheel,
274 MB, cannot travel there). The references are always computed on JAX's CPU device
(references.py), so on such a machine what changes is where the learner's JAX code runs, not
what it is compared with. This plugin answers each TensorFlow reference with the same
exercise's JAX reference, so the checks' verdicts on the GPU can be tested; the cross-check
of the two frameworks is what `make test` does on every other machine.

Load it with `-p tests.device.jax_only_references`; it is never loaded by `make test`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from autograder.judging import references


def _exercise_with_tf_reference(reference: Callable[..., Any]) -> Any:
    from autograder.exercises import EXERCISES

    for exercise in EXERCISES.values():
        if exercise.tf_reference == reference:  # == : a bound method is a new object each time
            return exercise
    raise LookupError(f"no exercise has the TensorFlow reference {reference!r}")


def jax_in_place_of_tensorflow(reference: Callable[..., Any], cases: Sequence[Any]) -> list:
    """The JAX reference of the exercise whose TensorFlow reference was asked for."""
    exercise = _exercise_with_tf_reference(reference)
    return references.jax_references(exercise.jax_reference, cases)


@pytest.hookimpl
def pytest_configure(config: pytest.Config) -> None:
    references.tensorflow_references = jax_in_place_of_tensorflow
