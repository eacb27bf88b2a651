"""The child of `make bench`'s latency section: `python -m benchmarks.latency --repeats N`.

It runs in a fresh interpreter, so nothing is imported or cached before it starts: it times
the imports of a check cell's session, then for each of LATENCY_CHECKS the first check call
and `repeats` re-runs of the same cell, and prints one line, JSON after bench.JSON_MARKER.

The answers are the course's own: a right answer is the exercise cell of the solution
notebook (solutions/), run as a kernel runs it; a wrong one is a mistake the exercise
declares (`Mistake.answer`, a learner's function with the exercise's signature).
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

# Only the standard library above: the first thing measured is importing the rest.

SOLUTION = "solution"
# (exercise, answer): the cells a learner re-runs, chapters 03 and 05, right and wrong. A
# wrong chapter 05 rule is traced under jit/jvp/vmap/grad by every check, and used to be
# shrunk again on every call (2-5 s).
LATENCY_CHECKS: tuple[tuple[str, str], ...] = (
    ("unbroadcast", SOLUTION),
    ("matmul_vjp", SOLUTION),
    ("unbroadcast", "leading_only"),
    ("matmul_vjp", "all_axes_transposed"),
    ("soft_threshold", SOLUTION),
    ("soft_threshold", "ignores_tangent"),
    ("soft_threshold", "composed_without_rule"),
    ("softmax_entropy", SOLUTION),
    ("softmax_entropy", "ignores_cotangent"),
)


def timed_imports() -> float:
    """Seconds to import what a chapter's first cells import: the checks and the frameworks."""
    started = time.perf_counter()
    import jax  # noqa: F401
    import numpy  # noqa: F401
    import tensorflow  # noqa: F401

    return time.perf_counter() - started


@functools.cache
def solution_namespace(chapter: str) -> dict[str, Any]:
    """The chapter's exercise cells from solutions/, run in one namespace as a kernel runs
    them, after the notebooks' usual imports (matmul_vjp finds unbroadcast there)."""
    import jax
    import numpy as np

    from benchmarks.bench import solution_cells

    namespace = {
        "__name__": f"solution_{chapter}",
        "functools": functools,
        "np": np,
        "jax": jax,
        "jnp": jax.numpy,
    }
    for source in dict.fromkeys(solution_cells(chapter).values()):
        exec(compile(source, f"<solutions {chapter}>", "exec"), namespace)
    return namespace


def answer(exercise: str, name: str) -> Callable[..., Any]:
    """The solution's function (name SOLUTION) or the declared mistake `name`."""
    from autograder.exercises import EXERCISES

    declared = EXERCISES[exercise]
    if name == SOLUTION:
        return solution_namespace(declared.chapter)[exercise]
    (found,) = [m.answer for m in declared.mistakes if m.name == name]
    return found


def timed(checker: Callable[[Any], Any], fn: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    report = checker(fn)
    return time.perf_counter() - start, report


def measure(repeats: int, checks: Sequence[tuple[str, str]] = LATENCY_CHECKS) -> dict[str, Any]:
    """The imports, then each check's first call and `repeats` re-runs of the same cell."""
    result: dict[str, Any] = {"imports": timed_imports(), "checks": []}
    from autograder import check

    for exercise, name in checks:
        checker, fn, right = getattr(check, exercise), answer(exercise, name), name == SOLUTION
        first, report = timed(checker, fn)
        if report.passed != right:
            raise SystemExit(f"{exercise} ({name}): expected passed={right}:\n{report}")
        runs = [timed(checker, fn)[0] for _ in range(repeats)]
        result["checks"].append(
            {
                "exercise": exercise,
                "function": name,
                "right": right,
                "first": first,
                "repeats": runs,
                "shrunk": bool(report.failure and report.failure.shrunk),
            }
        )
        if right:
            result.setdefault(exercise, {"first": first, "median": statistics.median(runs)})
    return result


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.latency", description=__doc__)
    parser.add_argument("--repeats", type=int, required=True, help="re-runs of each check")
    result = measure(parser.parse_args(argv).repeats)
    from benchmarks.bench import JSON_MARKER

    print(JSON_MARKER + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
