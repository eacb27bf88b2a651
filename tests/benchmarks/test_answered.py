"""The bench's fully answered batches (benchmarks/answered.py) are what they claim: every
exercise cell holds an answer, a right one is the solution's, and a wrong one gives right
values on its first calls and wrong ones late, so the grader runs and judges every case."""

from __future__ import annotations

import ast

import nbformat
import numpy as np
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from autograder.grading import cache_folders
from benchmarks import answered, bench

# The seed and reference cache (the user's, as `grade` uses by default) that
# tests/grading/test_chapters_graded.py grades every chapter with: a chapter's hidden cases and
# references are computed once for both tests (10-60 s of CPU each), not once per test. What
# this test checks (the batches score as built, wrong answers fail late) holds for any seed.
SEED = 11

RULE = '''def scale_vjp(g, x, *, factor=2.0):
    """Docstring."""
    ### BEGIN SOLUTION
    return (g * factor,)
    ### END SOLUTION'''

CALLER = """def twice(g, x):
    return scale_vjp(g, x)[0] * 2"""


def run_cell(source: str) -> dict:
    namespace: dict = {}
    exec(compile(source, "<cell>", "exec"), namespace)  # the test's own generated cell
    return namespace


def test_a_wrong_answer_is_right_for_its_first_calls_then_wrong():
    cell = answered.wrong_late_cell(RULE, {"scale_vjp"}, {"scale_vjp": answered.Late(None, 3)})
    assert cell.startswith(RULE)  # the solution's cell as it was, then the wrapper
    namespace = run_cell(cell)
    wrapped = namespace["scale_vjp"]
    definition = next(n for n in ast.parse(cell).body[::-1] if isinstance(n, ast.FunctionDef))
    assert ast.unparse(definition.args) == "g, x, *, factor=2.0"  # the solution's parameters
    g, x = np.arange(3.0), np.zeros(3)
    for _ in range(3):
        np.testing.assert_array_equal(wrapped(g, x, factor=3.0)[0], g * 3.0)
    late = wrapped(g, x, factor=3.0)
    assert isinstance(late, tuple) and not np.allclose(late[0], g * 3.0)
    assert late[0].dtype == g.dtype


def test_a_traced_answer_turns_wrong_at_the_late_shape_whatever_its_calls():
    late = {"scale_vjp": answered.Late((2, 3), answered.NEVER)}
    wrapped = run_cell(answered.wrong_late_cell(RULE, {"scale_vjp"}, late))["scale_vjp"]
    for shape in [(3,), (2, 3), (3,)]:  # a compiled answer is called once per shape
        g = np.ones(shape)
        right = np.allclose(wrapped(g, g)[0], 2 * g)
        assert right == (shape != (2, 3))


class Case:
    """What late_point reads of a hidden case."""

    def __init__(self, *shapes: tuple[int, ...]) -> None:
        self.shapes = shapes

    def arrays(self) -> dict[str, np.ndarray]:
        return {f"a{i}": np.zeros(shape) for i, shape in enumerate(self.shapes)}


def test_the_late_shape_is_the_one_that_is_new_latest():
    cases = [Case((3,), (3,)), Case((2, 3), (3,)), Case((3,), (3,)), Case((4,), (1,))]
    assert answered.late_point(cases) == answered.Late((4,), answered.NEVER)
    same = [Case((3,)), Case((3,)), Case((3,))]  # one shape: counted calls, the last case
    assert answered.late_point(same) == answered.Late(None, 2)
    assert answered.late_point([Case(())]) == answered.Late(None, 1)


def test_a_shape_the_check_gives_every_case_is_never_the_late_one():
    """bessel_i0e's derivatives run on x padded to 16 elements for every case: an answer
    wrong from shape (16,) on was wrong from the first case, and the bench said so."""
    cases = [Case((6,)), Case((2, 3)), Case((16,)), Case((6,))]
    assert answered.late_point(cases) == answered.Late((16,), answered.NEVER)
    bucketed = answered.shapes_of_every_case("bessel_i0e")
    assert (16,) in bucketed and (32,) in bucketed
    assert answered.late_point(cases, bucketed) == answered.Late((2, 3), answered.NEVER)
    assert answered.shapes_of_every_case("fixed_point") == ()
    from autograder.harness.ch06_implicit_callbacks_checkpointing import DERIVATIVE_BUCKET

    assert answered.BESSEL_BUCKET == DERIVATIVE_BUCKET


def test_late_values_are_wrong_whatever_their_type():
    late = {"scale_vjp": answered.Late(None, 0)}
    wrong = run_cell(answered.wrong_late_cell(RULE, {"scale_vjp"}, late))
    spoil = wrong["_late_wrong"]
    zeros = np.zeros(2, np.float32)
    assert spoil(zeros).dtype == np.float32 and spoil(zeros).any()  # a zero gradient too
    assert spoil(3) == 4 and spoil("add") != "add" and spoil(True) is True
    assert spoil([zeros])[0].any() and spoil(lambda: zeros)().any()  # a returned function


def notebook(*sources: str) -> nbformat.NotebookNode:
    return new_notebook(cells=[new_code_cell(s, metadata={"tags": ["exercise"]}) for s in sources])


def test_expected_scores_name_wrong_right_and_callers_of_a_wrong_answer():
    solution = notebook(RULE, CALLER)
    names = {"scale_vjp", "twice"}
    late = {"scale_vjp": answered.Late(None, 5), "twice": answered.Late(None, 5)}
    built, expected, lone = answered.make_answered(solution, {0}, names, late)
    assert expected == {"scale_vjp": 0.0, "twice": None}  # twice may or may not notice
    assert lone == {"scale_vjp"}  # reaches no other wrong answer: it must fail late
    assert "_late_right_scale_vjp" in built.cells[0].source
    assert built.cells[1].source == CALLER
    _, declared, _ = answered.make_answered(
        solution, {0}, names, late, replaced={"twice": ("scale_vjp",)}
    )
    assert declared == {"scale_vjp": 0.0, "twice": 1.0}  # graded with a reference in its place
    _, right, none = answered.make_answered(solution, set(), names, late)
    assert right == {"scale_vjp": 1.0, "twice": 1.0} and none == set()
    _, both, lone = answered.make_answered(solution, {0, 1}, names, late)
    assert both == {"scale_vjp": 0.0, "twice": 0.0}
    assert lone == {"scale_vjp"}  # twice calls a wrong answer: it may fail from its first case
    assert answered.checked({"a": expected}) == {"a": {"scale_vjp": 0.0}}


def test_the_plans_are_fully_answered_and_mostly_right():
    plans = answered.wrong_plan(4, 6)
    assert plans[0] == set() and plans[1] == {0, 1, 2, 3} and plans[3] | plans[5] == {0, 1, 2, 3}
    assert sum(not plan for plan in plans) == 3


def test_feedback_counts_are_read():
    assert answered.late_failures("Failed 1 of 86 cases. FAILED unbroadcast: ...") == (1, 86)
    assert answered.late_failures("Passed all 86 cases (hidden cases included).") is None


@pytest.mark.e2e  # grades a chapter's fully answered batch through the sandbox
@pytest.mark.slow
@pytest.mark.parametrize("chapter", ["03", "04", "05"])
def test_a_fully_answered_batch_scores_as_built_and_its_wrong_answers_fail_late(tmp_path, chapter):
    cache = cache_folders.reference_cache()  # shared with test_chapters_graded: same seed
    points = answered.late_points(chapter, SEED, cache)
    paths, expected, late = answered.write_answered_batch(chapter, tmp_path / "subs", 2, points)
    learner = nbformat.read(bench.chapter_notebooks()[chapter][1], as_version=4)
    stubs = set(answered.answered_cells(learner))
    for path in paths:  # every exercise cell holds an answer: none is the stub
        cells = answered.answered_cells(nbformat.read(path, as_version=4))
        assert cells and not stubs & set(cells)
    assert set(expected["full01"].values()) == {1.0}
    assert set(expected["full02"].values()) == {0.0}
    bench.run_grader(paths, tmp_path / "graded", 1, cache, seed=SEED)
    grades = bench.read_grades(tmp_path / "graded" / "grades.csv")
    assert bench.grade_problems(grades, answered.checked(expected)) == []
    assert late["full02"] == set(expected["full02"])  # no exercise of theirs calls another
    assert answered.late_problems(tmp_path / "graded", late) == []


def chapter_times(**changes) -> bench.ChapterTimes:
    base = dict(
        chapter="04",
        nbconvert=10.0,
        first_run=30.0,
        one=2.0,
        one_serial=2.5,
        one_serial_child=1.5,
        serial=7.5,
        parallel=4.5,
        batch=6,
        typical=1.0,
        other_one=3.0,
        other_serial=20.0,
        other_parallel=11.0,
        other_typical=3.0,
    )
    return bench.ChapterTimes(**{**base, **changes})


def test_grade_one_is_the_slower_of_a_right_and_a_wrong_submission_mixed_is_not_judged():
    t = chapter_times(one_wrong=3.5, mixed_serial=3.5, mixed_parallel=3.0, mixed_batch=6)
    assert t.one_worst == 3.5
    row = bench.chapter_row(t)
    assert row.startswith("| 04 | 10.0 s | 30 s | 3.5 s (--jobs 1: 2.5 s) | 0.35 FAIL |")
    assert t.mixed_marginal == (3.5 - 2.5) / 5
    assert "| forked children | 0.20 s, 0.020, x1.33 (6) |" in row  # (3.5-1.5)/(3.0-1.5)
    assert not bench.grading_passed([t])  # grade one 0.35, whatever the mixed batch gives
    assert bench.grading_passed([chapter_times(one_wrong=2.9, mixed_parallel=3.5)])
    assert "not measured" in bench.chapter_row(chapter_times())
