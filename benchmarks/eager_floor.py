"""What grading chapter 04 cannot go below: the learner's own TensorFlow code on the cases.

A check of chapter 04 runs each answer eagerly, forward and backward under one GradientTape, on
every hidden case, as the learner's notebook runs it (and inside tf.function for a few input
signatures, and with the method watched). This runs the solution's functions that way and only
that way, in one warm process: no graph run, no method check, no sandbox, no reading or judging
of results. Whatever the grader does around it, a fully answered submission costs at least
this, so it is the floor of chapter 04's marginal time per submission in `make bench`; the
check's own run of the same cases (the exercise's invoke) is measured beside it.

    .venv/bin/python -m benchmarks.eager_floor [--seed 1234] [--rounds 3]

Prints one JSON line: the fastest round of each, in seconds, and the cases per exercise.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.bench import GRADE_SEED, solution_cells

CHAPTER = "04"


def solution_functions() -> dict[str, Any]:
    """The solution's exercise cells run in a fresh namespace after the notebook's imports
    (bench.solution_cells): new function objects, as each submission brings."""
    import tensorflow as tf

    namespace: dict[str, Any] = {"__name__": f"solution_{CHAPTER}", "np": np, "tf": tf}
    for source in dict.fromkeys(solution_cells(CHAPTER).values()):
        exec(compile(source, f"<solutions {CHAPTER}>", "exec"), namespace)
    return namespace


def eager_forward_backward(fn: Callable[..., Any], args: tuple, variables: tuple[int, ...]) -> None:
    """fn on one case, forward and backward under one tape, as the check's eager run: the
    case's last array is the cotangent."""
    import tensorflow as tf

    from autograder.harness.ch04_custom_gradient_tf import _forward_backward

    *values, g = args
    values = [
        tf.Variable(v) if i in variables else tf.constant(v) if isinstance(v, np.ndarray) else v
        for i, v in enumerate(values)
    ]
    for tensor in _forward_backward(fn, values, g):
        np.asarray(tensor)


def measure(seed: int, rounds: int) -> dict[str, Any]:
    """The fastest of `rounds` rounds, each with new function objects: the floor, and the
    invokes on the same cases."""
    from autograder.exercises import for_chapter
    from autograder.judging.cases import grading_profile
    from autograder.judging.engine import _notebook_cases

    profile = grading_profile(seed)
    exercises = for_chapter(CHAPTER)
    cases = {ex.name: _notebook_cases(ex, profile)[0] for ex in exercises}
    floors, invokes = [], []
    for _ in range(rounds + 1):  # the first round warms the process, as a forked child is not
        functions = solution_functions()
        floor = invoke = 0.0
        for exercise in exercises:
            fn = functions[exercise.name]
            variables = (1,) if exercise.name == "tanh_layer" else ()  # a layer's weights
            start = time.perf_counter()
            for case in cases[exercise.name]:
                eager_forward_backward(fn, case.fresh_values(), variables)
            floor += time.perf_counter() - start
            run = exercise.invoker()
            start = time.perf_counter()
            for case in cases[exercise.name]:
                run(fn, *case.fresh_values())
            invoke += time.perf_counter() - start
        floors.append(floor)
        invokes.append(invoke)
    return {
        "floor": min(floors[1:]),
        "invokes": min(invokes[1:]),
        "cases": {name: len(chapter_cases) for name, chapter_cases in cases.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=GRADE_SEED)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(measure(args.seed, args.rounds)))


if __name__ == "__main__":
    main()
