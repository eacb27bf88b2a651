"""How long the random-program check of a learner's engine takes:
`python -m benchmarks.engine_check [--cache DIR] [--repeats N] [--notebook [--json]]`.

`--notebook` times what chapter 02's check cell costs, `check.grad(grad)` on the worked
engine (every code cell of solutions/02_reverse_mode_tape.ipynb that defines something, run
in one namespace as a kernel runs them): its first run in this fresh interpreter, after the
imports (`--after-check`: and after an earlier check cell, as running the notebook from the
top gives), then its re-runs; `--json` prints that as one line for `make bench`
(benchmarks/bench.py, section 1), which judges it against ENGINE_FIRST_TARGET and
ENGINE_RERUN_TARGET. Without `--notebook`:

It runs in a fresh interpreter, as a fresh kernel would: it times the imports a chapter's
first cells make (numpy, JAX, TensorFlow, the check), then the first check of a right engine
(tests/engines.py: drawing the programs, both frameworks' references, the engine on every
program), `repeats` re-runs of the same check cell, and then each part of the first check
again on its own. `--cache` is
the JAX compilation cache folder (XDG_CACHE_HOME): run it twice with the same folder to see
a warm cache (what `make lab`'s warm-up gives a learner), once with an empty one for a cold.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any


def _seconds(since: float) -> float:
    return round(time.perf_counter() - since, 3)


NOTEBOOK = "solutions/02_reverse_mode_tape.ipynb"


def worked_engine() -> dict[str, Any]:
    """The solution notebook's engine as a kernel has it when its check cell runs: every
    exercise cell whole, the other code cells' imports, functions and classes (their
    demonstrations and the check cells left out), in one namespace."""
    import ast

    import nbformat
    from IPython.core.inputtransformer2 import TransformerManager

    kept = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)
    namespace: dict[str, Any] = {"__name__": "__main__"}
    path = Path(__file__).resolve().parent.parent / NOTEBOOK
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        tree = ast.parse(TransformerManager().transform_cell(cell.source))
        if "### BEGIN SOLUTION" not in cell.source:
            tree.body = [node for node in tree.body if isinstance(node, kept)]
        exec(compile(tree, path.name, "exec"), namespace)
    return namespace


EARLIER_CHECK = "vjp_neg"  # a check cell above check.grad's, as a notebook run top to bottom has


def notebook_check(repeats: int, frameworks_used: bool, after_check: bool) -> dict[str, Any]:
    """check.grad(grad) on the worked engine in this fresh interpreter: the imports, (the
    frameworks' first use, or an earlier check cell, when asked: what running the notebook's
    cells above it pays), the first run, the re-runs; wall and CPU seconds. What a learner
    waits for after running the check cell."""
    result: dict[str, Any] = {}
    started = time.perf_counter()
    import jax  # noqa: F401
    import numpy  # noqa: F401
    import tensorflow  # noqa: F401

    from autograder import check

    result["imports"] = _seconds(started)
    namespace = worked_engine()
    if frameworks_used:
        started = time.perf_counter()
        _use_the_frameworks()
        result["frameworks_used"] = _seconds(started)
    if after_check:
        started = time.perf_counter()
        earlier = getattr(check, EARLIER_CHECK)(namespace[EARLIER_CHECK])
        result["earlier_check"] = {"exercise": EARLIER_CHECK, "seconds": _seconds(started)}
        if not earlier.passed:
            raise SystemExit(f"check.{EARLIER_CHECK} failed on the solution:\n{earlier}")
    started, cpu = time.perf_counter(), time.process_time()
    report = check.grad(namespace["grad"])
    result["first"], result["first_cpu"] = _seconds(started), round(time.process_time() - cpu, 3)
    if not report.passed:
        raise SystemExit(f"check.grad failed on the solution's engine:\n{report}")
    result["cases"] = report.cases_checked
    again = []
    for _ in range(repeats):
        started = time.perf_counter()
        check.grad(namespace["grad"])
        again.append(time.perf_counter() - started)
    result["repeats"] = again
    result["load_average"] = os.getloadavg()[0]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", help="XDG_CACHE_HOME for JAX's compilation cache")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--frameworks-used",
        action="store_true",
        help="use TensorFlow and JAX once before the check, as an earlier "
        "check cell of the notebook would have",
    )
    parser.add_argument(
        "--notebook",
        action="store_true",
        help="time check.grad(grad) on the solution notebook's engine, as its check cell",
    )
    parser.add_argument(
        "--after-check",
        action="store_true",
        help=f"with --notebook: run check.{EARLIER_CHECK} first, as the cells above would have",
    )
    parser.add_argument("--json", action="store_true", help="with --notebook: one JSON line")
    args = parser.parse_args()
    if args.cache:
        os.environ["XDG_CACHE_HOME"] = args.cache
    if args.notebook:
        result = notebook_check(args.repeats, args.frameworks_used, args.after_check)
        if args.json:
            from benchmarks.bench import JSON_MARKER

            print(JSON_MARKER + json.dumps(result), flush=True)
        else:
            print(result)
        return
    started = time.perf_counter()
    import jax  # noqa: F401
    import numpy  # noqa: F401
    import tensorflow  # noqa: F401

    from autograder.exercises.engine_reports import check_engine, engine_exercise
    from autograder.judging.exercise import Mistake
    from tests.engines import ASSIGNING, engine

    print("imports (numpy, jax, tensorflow, the check):", _seconds(started), "s")
    exercise = engine_exercise((Mistake("assigns", "hint", engine(ASSIGNING)["grad"]),))
    right = engine()["grad"]
    if args.frameworks_used:
        started = time.perf_counter()
        _use_the_frameworks()
        print(
            "the frameworks' first use (what an earlier check cell pays):", _seconds(started), "s"
        )
    started = time.perf_counter()
    report = check_engine(right, exercise)
    print("first check:", _seconds(started), "s,", report.status, report.cases_checked, "cases")
    again = []
    for _ in range(args.repeats):
        started = time.perf_counter()
        check_engine(right, exercise)
        again.append(time.perf_counter() - started)
    print(f"re-runs: median {statistics.median(again):.3f} s, max {max(again):.3f} s")
    print(
        "the first check's parts, each again on its own (JAX's compiled program now in the cache):"
    )
    parts(exercise)


def _use_the_frameworks() -> None:
    """One eager TensorFlow gradient and one compiled JAX gradient on the CPU (their start-up:
    devices, kernels, the compiler options the references probe), nothing of the check."""
    import numpy as np

    from autograder.judging.references import (
        cpu_device,
        fast_compile_options,
        jax_module,
        tensorflow,
    )

    tf, jax = tensorflow(), jax_module()
    x = tf.constant(np.ones(3))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.tanh(x))
    tape.gradient(y, x)
    with jax.enable_x64(True):
        probe = jax.device_put(np.ones(3), cpu_device())
        gradient = jax.jit(jax.grad(lambda v: jax.numpy.tanh(v).sum()))
        gradient.lower(probe).compile(compiler_options=fast_compile_options())(probe)


def parts(exercise: object) -> None:
    """The first check's parts, each timed once in this fresh process: drawing the programs,
    TensorFlow's references, JAX's (one compiled program for all), the learner's engine."""
    from autograder.harness.programs import invoke_engine
    from autograder.judging import engine as judging
    from autograder.judging.references import jax_references, tensorflow_references
    from tests.engines import engine

    started = time.perf_counter()
    cases = exercise.edge_cases() + judging.draw_cases(
        exercise.strategy(judging.NOTEBOOK), judging.NOTEBOOK
    )
    print(f"draw {len(cases)} programs:", _seconds(started), "s")
    started = time.perf_counter()
    tensorflow_references(exercise.tf_reference, cases)
    print("TensorFlow references (eager):", _seconds(started), "s")
    started = time.perf_counter()
    jax_references(exercise.jax_reference, cases)
    print("JAX references (one jit over all programs):", _seconds(started), "s")
    right = engine()["grad"]
    started = time.perf_counter()
    for case in cases:
        invoke_engine(right, *case.fresh_values())
    print("the right engine on every program:", _seconds(started), "s")


if __name__ == "__main__":
    main()
