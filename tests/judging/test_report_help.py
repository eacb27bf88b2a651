"""A failing report leads with what helps (issue: reports that bury what helps).

The headline says what is wrong in the course's words (the cotangent `g_x`, how many entries,
the worst one got against expected); the failing case and the hint come next, then the arrays;
the tolerance arithmetic comes last and states that the output's scale is floored at 1 (it
read as 0 where the expected output is 0). A function that crashes at one dtype and returns
wrong values at the other is told that the crash hides a second mistake, not the exercise's
hint for code that cannot run at all.
"""

from __future__ import annotations

import numpy as np
import pytest

from autograder.exercises import EXERCISES
from autograder.exercises.ch03_unbroadcasting import UNBROADCAST
from autograder.judging.attempts import Attempt, judge
from autograder.judging.cases import Case
from autograder.judging.compare import compare_array
from autograder.judging.engine import check_function
from autograder.judging.exercise import Raised
from autograder.judging.report import Report
from autograder.locale import localize, speaking

CLIP = EXERCISES["clip_cotangent_norm"]


@pytest.fixture(scope="module")
def clipped() -> Report:
    """The known mistake "clips each element" of clip_cotangent_norm, checked."""
    return check_function(CLIP, CLIP.mistakes[0].answer)


def titles(report: Report) -> list[str]:
    return [title for title, _ in report.sections()]


def test_the_headline_names_the_cotangent_the_count_and_the_worst_entry(clipped: Report):
    headline = clipped.headline()
    assert headline.startswith("FAILED clip_cotangent_norm: g_x (the cotangent of x) is wrong at ")
    assert "the worst is g_x[" in headline and ", expected " in headline
    for arithmetic in ("rtol", "atol", "allowed", "magnitude", "off by"):
        assert arithmetic not in headline, arithmetic


def test_case_and_hint_first_then_the_arrays_and_the_tolerance_last(clipped: Report):
    order = titles(clipped)
    assert order[0] == "Smallest failing case" and order[1] == "Hint"
    assert order[-1] == "Tolerance"
    arrays = order[2:-1]
    assert arrays and all(title.startswith(("input ", "expected ", "got ")) for title in arrays)
    assert "expected g_x" in arrays and "got g_x" in arrays and "expected grad_x" not in arrays
    text = str(clipped)
    assert text.index("Hint:") < text.index("input x:") < text.index("Tolerance:")


def test_the_chinese_report_keeps_the_order_and_the_terms(clipped: Report):
    with speaking("zh-CN"):
        headline, order, text = clipped.headline(), titles(clipped), str(clipped)
    assert headline.startswith("未通过 clip_cotangent_norm：x 的余切向量 g_x 有 ")
    assert "个元素与参考值不同（共 " in headline and "倍" not in headline
    assert order[:2] == ["最小反例", "提示"] and order[-1] == "容差"
    assert "max(1, 参考值 g_x 的最大绝对值)" in text


def test_the_tolerance_states_the_floor_where_the_expected_output_is_zero():
    """Before, the message read "atol 1e-06 of the output's largest magnitude": 0 here, while
    1e-06 was allowed, because the scale is floored at 1."""
    mismatch = compare_array("g_x", np.asarray([0.5], np.float32), np.zeros(1, np.float32))
    assert mismatch is not None
    assert mismatch.message == "g_x (the cotangent of x) is wrong: g_x[0] = 0.5, expected 0.0."
    assert "1e-06 is allowed there" in mismatch.tolerance
    assert "max(1, the largest magnitude in the expected g_x)" in mismatch.tolerance


def test_an_output_that_is_no_cotangent_is_named_as_declared():
    mismatch = compare_array("y", np.asarray([1.0, 2.0]), np.asarray([1.0, 3.0]))
    assert mismatch is not None
    assert mismatch.message.startswith("y is wrong at 1 of 2 entries; the worst is y[1] = 2.0")


def test_outputs_are_named_as_the_course_names_them():
    """The notebooks call the cotangent of x `g_x`, and reports name outputs as declared, so a
    cotangent is declared `g_x`, never `grad_x` (chapter 01's qa_gradients alone asks for the
    gradients of a scalar loss as grad_W and grad_b, and its report says so)."""
    named_grad = sorted(
        f"{exercise.name}: {name}"
        for exercise in EXERCISES.values()
        for name in exercise.outputs
        if name.startswith("grad_") and exercise.name != "qa_gradients"
    )
    assert named_grad == []


def cases_of(dtype: type) -> Case:
    return Case((("g", np.ones((2, 3), dtype)), ("shape", (3,))))


EXPECTED = (np.full(3, 2.0),)


def test_a_crash_at_one_dtype_that_hides_wrong_values_at_the_other_is_named():
    """Before, such a function got the exercise's hint for code that cannot run at all."""
    crashed = Attempt(error=TypeError("a float32 constant met a float64 input"))
    wrong = np.zeros(3, np.float32)
    failure = judge(
        UNBROADCAST, cases_of(np.float64), crashed, EXPECTED, [(cases_of(np.float32), wrong)]
    )
    assert failure is not None
    assert failure.hint.startswith("Your function raised on this float64 case, while on float32")
    assert "your gradient included, is tested there" in failure.hint
    assert UNBROADCAST.hints_by_kind["error"] not in failure.hint
    with speaking("zh-CN"):  # a report made in English, shown in Chinese: dtypes stay code
        assert localize(failure.hint).startswith("你的函数在这个 float64 用例上抛出了异常")


def test_a_crash_at_every_dtype_keeps_the_exercises_hint():
    crashed = Attempt(error=TypeError("no"))
    others = [(cases_of(np.float32), Raised("TypeError"))]
    failure = judge(UNBROADCAST, cases_of(np.float64), crashed, EXPECTED, others)
    assert failure is not None and failure.hint == UNBROADCAST.hints_by_kind["error"]
