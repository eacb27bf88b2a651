"""The random-program check of a learner's whole engine: right engines pass; seed 001's
learner's engine (a matmul rule that transposes every axis, an unbroadcast that sums the
leading axes only) and one that accumulates with `=` fail on every seed, shrunk to a program
of at most 4 operations, shown as code with the first value whose cotangent differs."""

from __future__ import annotations

import ast
import dataclasses
import itertools
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.exercises.engine_programs import (
    NOTEBOOK_LINES,
    QA_INPUTS,
    program_case,
    program_edges,
    program_jax,
    program_tf,
    programs,
)
from autograder.exercises.engine_reports import (
    check_engine,
    engine_exercise,
    first_difference,
    where_text,
)
from autograder.harness.programs import ProgramError, forward, invoke_engine, operations
from autograder.harness.programs import statements as program_lines
from autograder.judging.cases import NOTEBOOK, draw_cases, grading_profile
from autograder.judging.engine import shrink_with_references
from autograder.judging.exercise import Mistake
from autograder.judging.references import jax_references, tensorflow_references
from tests.engines import ASSIGNING, SEED_001, engine

SEEDS = range(20)
MOST_OPERATIONS = 4
ASSIGN_HINT = "Accumulate with +=: a value used twice gets the cotangent of each use."
SEED_HINT = "Transpose the last two axes only (np.swapaxes(b, -1, -2)), then unbroadcast."
MATMUL_ONLY = {"matmul_vjp": "matmul_vjp_all_axes"}
RIGHT_VARIANTS = {
    "in place": {"backward": "backward_in_place"},
    "unbroadcast by axes": {"unbroadcast": "unbroadcast_by_axes"},
}


@pytest.fixture(scope="module")
def exercise():
    """The check, with the two wrong engines as its known mistakes (the package ships no
    engine, right or wrong: the chapter that declares the check gives its own)."""
    return engine_exercise(
        (
            Mistake("assign_not_accumulate", ASSIGN_HINT, engine(ASSIGNING)["grad"]),
            Mistake("seed_001", SEED_HINT, engine(SEED_001)["grad"]),
        )
    )


def test_a_right_engine_passes_the_check_against_both_frameworks(exercise):
    report = check_engine(engine()["grad"], exercise)
    assert report.passed, str(report)
    assert report.cases_checked >= 25


@pytest.mark.parametrize("variant", RIGHT_VARIANTS)
def test_right_engines_written_otherwise_pass(exercise, variant):
    report = check_engine(engine(RIGHT_VARIANTS[variant])["grad"], exercise)
    assert report.passed, str(report)


def _shrunk(exercise, swaps, seed):
    """The smallest failing program the check's search finds for a wrong engine, on the
    notebook's number of programs drawn with this seed (None: none failed)."""
    profile = dataclasses.replace(NOTEBOOK, seed=seed)
    found = shrink_with_references(exercise, engine(swaps)["grad"], profile)
    return None if found is None else found[0]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("swaps", "hint"),
    [(SEED_001, SEED_HINT), (ASSIGNING, ASSIGN_HINT), (MATMUL_ONLY, "")],
    ids=["seed 001", "assigns", "seed 001's matmul rule alone"],
)
def test_each_wrong_engine_is_caught_and_shrunk_on_every_seed(exercise, swaps, hint):
    """On the programs drawn alone (the hand-picked ones would catch two of them): seed
    001's matmul rule alone shows only on a 3-D operand."""
    for seed in SEEDS:
        failure = _shrunk(exercise, swaps, seed)
        assert failure is not None, f"seed {seed}: no program caught it"
        program = failure.case.arg("program")
        assert failure.shrunk and operations(program) <= MOST_OPERATIONS, (seed, program)
        assert hint in failure.hint, (seed, failure.hint)


def test_the_notebooks_check_catches_the_matmul_rule_alone(exercise):
    """The notebook's check (its programs, and the Q&A case among its hand-picked ones)
    fails seed 001's matmul rule with a right unbroadcast, on a program with a matmul of at
    most 4 operations."""
    report = check_engine(engine(MATMUL_ONLY)["grad"], exercise)
    program = report.failure.case.arg("program")
    assert not report.passed and "@" in program and operations(program) <= MOST_OPERATIONS


def test_the_seed_engine_gives_the_seeds_wrong_gradient_on_the_qa_case():
    """The tests' engine is seed 001's learner's: (2,2,2) @ (2,2) @ (2,2,2) gives the weight
    the gradient that learner got, where both frameworks give another."""
    case = program_case("y0 = x0 @ x1\ny1 = y0 @ x2\ny2 = sum(y1)", QA_INPUTS)
    wrong = invoke_engine(engine(SEED_001)["grad"], *case.values())
    right = tensorflow_references(program_tf, [case])[0]
    np.testing.assert_allclose(wrong[1], [[33.0, 22.0], [54.0, 36.0]])
    np.testing.assert_allclose(right[1], [[66.0, -8.0], [80.0, -8.0]])


def test_the_report_shows_the_program_as_code_and_the_first_wrong_cotangent():
    """A wrong tanh rule in the middle of a program: going back from the output, y2 and y1
    have the right cotangents and y0, which tanh's rule sends its cotangent to, does not."""
    wrong_tanh = engine()
    wrong_tanh["tanh"] = _tanh_of_input(wrong_tanh)
    exercise = engine_exercise((Mistake("assigns", ASSIGN_HINT, engine(ASSIGNING)["grad"]),))
    case = program_case(
        "y0 = x0 * x1\ny1 = tanh(y0)\ny2 = sum(y1)", [QA_INPUTS[1], QA_INPUTS[1] / 4, QA_INPUTS[1]]
    )
    got = invoke_engine(wrong_tanh["grad"], *case.values())
    expected = jax_references(program_jax, [case])[0]
    difference = first_difference(case, got, expected)
    assert difference is not None and difference.name == "y0"
    where = where_text(case.arg("program"), difference)
    assert "y0" in where and "y1 = tanh(y0)" in where
    report = check_engine(wrong_tanh["grad"], exercise)
    assert not report.passed
    text = str(report)
    program = report.failure.case.arg("program")
    assert "tanh(" in program and operations(program) <= MOST_OPERATIONS
    assert all(f"  {line}\n" in text for line in program.splitlines())  # as code, one a line
    assert "input program" not in text and "input x2" not in text  # x2 is not used
    assert "node cotangents:" not in text


def _tanh_of_input(namespace):
    tensor = namespace["Tensor"]

    def tanh(x):
        return tensor(np.tanh(x.value), (x,), lambda g: (g * (1 - x.value**2),))

    return tanh


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(st.data())
def test_programs_are_small_and_end_in_a_scalar_that_uses_every_line(data):
    case = data.draw(programs(NOTEBOOK))
    program = case.arg("program")
    lines = program_lines(program)
    assert 2 <= len(lines) <= NOTEBOOK_LINES + 1
    values = forward(program, [case.arg(name) for name in ("x0", "x1", "x2")])
    assert values[-1].shape == () and all(np.all(np.isfinite(v)) for v in values)
    for (before, _), (_, expression) in itertools.pairwise(lines):
        assert before in {node.id for node in ast.walk(expression) if isinstance(node, ast.Name)}, (
            program
        )


@pytest.mark.parametrize("profile", [NOTEBOOK, grading_profile(3)], ids=["notebook", "grading"])
def test_every_check_runs_every_kind_of_operation(profile):
    """The check's programs (its hand-picked ones and those drawn): fan-out, reused inputs,
    broadcasting, reductions with axes and keepdims, slices, repeated integer indices,
    batched matmul, maximum, relu, log_softmax and the shape operations all occur."""
    cases = program_edges() + draw_cases(programs(profile), profile)
    text = "\n".join(case.arg("program") for case in cases)
    for needle in (
        " @ ",
        " + ",
        " - ",
        " * ",
        " / ",
        " ** ",
        "exp(",
        "log(",
        "tanh(",
        "relu(",
        "maximum(",
        "sum(",
        "mean(",
        "keepdims=True",
        "axis=",
        "reshape(",
        "transpose(",
        "broadcast_to(",
        "log_softmax(",
        "-y",
        ", [",
        "[[",
    ):
        assert needle in text, needle
    assert re.search(r"\[(:, )*\d:\d\]", text)  # a slice
    assert any(_repeats(case.arg("program")) for case in cases)
    assert sum(map(_batched_matmul, cases)) >= len(cases) // 4


def _repeats(program):
    """An integer index that repeats an entry (its VJP must add, not overwrite)."""
    for line in program.splitlines():
        if "[[" in line:
            indices = line.split("[[")[1].split("]]")[0].split(", ")
            if len(set(indices)) < len(indices):
                return True
    return False


def _batched_matmul(case):
    """A line `a @ b` where a or b has three axes."""
    program = case.arg("program")
    values = forward(program, [case.arg(name) for name in ("x0", "x1", "x2")])
    named = dict(
        zip(("x0", "x1", "x2", *(n for n, _ in program_lines(program))), values, strict=True)
    )
    return any(
        isinstance(e, ast.BinOp)
        and isinstance(e.op, ast.MatMult)
        and max(named[side.id].ndim for side in (e.left, e.right)) >= 3
        for _, e in program_lines(program)
    )


@pytest.mark.parametrize(
    "program",
    [
        "import os",
        "y0 = x0.value",
        "y0 = eval('1')",
        "y0 = x0 if x0 else x1",
        "y0 = (lambda: 1)()",
        "y0 = x0; y1 = y0.__class__",
    ],
)
def test_the_interpreter_refuses_anything_outside_the_grammar(program):
    with pytest.raises(ProgramError):
        program_lines(program)
