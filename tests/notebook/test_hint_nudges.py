"""Hints that teach: before an exercise's first failing check, `check.hint` gives its nudge.

A nudge points at the idea (which rule, which shape, what to think about); a mistake's hint
often states the answer, so it waits for a failing check. Every nudge, in both languages, is
measured against the worked answer (the exercise cell's solution block in solutions/): a
code-like fragment of it that the solution's code contains, or a formula, fails.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from autograder import check
from autograder.exercises import EXERCISES
from autograder.judging.counterexamples import forget_counterexamples
from autograder.locale import CHINESE, say, speaking

ROOT = Path(__file__).resolve().parents[2]
SOLUTION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.S)
BACKTICKED = re.compile(r"`([^`]+)`")
# Where prose splits into words: spaces, and Chinese text and its full-width punctuation.
WORD_BREAK = re.compile(r"[\s\u3000-\u303f\u4e00-\u9fff\uff00-\uffef\u2018-\u201d\u2026\u2014]+")
# A word that reads as code: an operator or bracket, a dot or underscore inside a name
# (`x.T`, `jnp.clip`, `kept_shape`), or a hyphen between two operands (`n-1`).
CODE_LIKE = re.compile(r"[()\[\]{}*+/=<>@^|&%~]|\w[._]\w|\w-\w|^[-_.]\w|^\W+$")
# What states an answer's formula whatever the solution's code: an equation, derivative
# notation (dy/dx, f'(x), ∂), or arithmetic between two operands (a * b, x**2, g/n).
FORMULA = re.compile(
    r"[=\uff1d\u2248\u2202]"  # =, its full-width form, approximately, partial
    r"|\bd\w*\s*/\s*d\w+|\w'\s*\("  # dy/dx, f'(x)
    r"|[\w)]\s*(\*\*|[*/^\u00b7\u00d7+])\s*[\w(]"  # a * b, x**2, g/n, a + b
)


def solution_code(exercise_name: str) -> str:
    """The worked answer: the solution blocks of the cell of solutions/NN_*.ipynb that defines
    the exercise's function."""
    exercise = EXERCISES[exercise_name]
    (path,) = sorted((ROOT / "solutions").glob(f"{exercise.chapter}_*.ipynb"))
    defines = re.compile(rf"^def {re.escape(exercise.name)}\(", re.M)
    blocks = [
        block
        for cell in nbformat.read(path, as_version=4).cells
        if cell.cell_type == "code" and defines.search(cell.source)
        for block in SOLUTION.findall(cell.source)
    ]
    assert blocks, f"{exercise.name}: no solution block in a cell of {path.name} defining it"
    return "\n".join(blocks)


def code_fragments(text: str) -> Iterator[str]:
    """Each fragment of `text` that reads as code: its backticked spans, then each word with
    an operator, a bracket, or a dot or underscore inside it (end punctuation stripped)."""
    yield from BACKTICKED.findall(text)
    for word in WORD_BREAK.split(BACKTICKED.sub(" ", text)):
        word = word.strip(".,;:!?'\"()")
        if word and CODE_LIKE.search(word):
            yield word


def overlaps(text: str, solution: str) -> list[str]:
    """What in `text` gives away `solution`: code-like fragments its code contains (spaces
    ignored, so `g*(1 - y**2)` is found in `g * (1 - y**2)`), and any formula."""
    code = re.sub(r"\s+", "", solution)
    found = [f for f in code_fragments(text) if re.sub(r"\s+", "", f) in code]
    found += [f"formula {match.group(0)!r}" for match in FORMULA.finditer(text)]
    return found


def sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.?!。？！])\s*", text.strip()) if s]


@pytest.fixture
def fresh_kernel() -> Iterator[None]:
    """No check has failed yet, as in a kernel just started."""
    forget_counterexamples()
    yield
    forget_counterexamples()


def test_every_exercise_declares_a_short_nudge():
    missing = [name for name, exercise in EXERCISES.items() if not exercise.nudge.strip()]
    assert not missing, f"exercises without a nudge: {missing}"
    long = [n for n, e in EXERCISES.items() if len(sentences(e.nudge)) > 2 or len(e.nudge) > 320]
    assert not long, f"a nudge is one or two sentences: {long}"


@pytest.mark.parametrize("name", sorted(EXERCISES))
def test_no_nudge_gives_away_the_worked_answer(name):
    solution = solution_code(name)
    english = EXERCISES[name].nudge
    with speaking(CHINESE):
        chinese = say(english)
    assert not overlaps(english, solution), (name, overlaps(english, solution))
    assert not overlaps(chinese, solution), (name, overlaps(chinese, solution))


def test_the_measure_catches_hints_that_state_the_answer():
    """The hints check.hint used to show first, before any attempt, are caught: code of the
    answer (softmax_entropy, tanh_layer) and formulas (vjp_div)."""
    assert "jax.nn.log_softmax(logits" in overlaps(
        "Compute log p as jax.nn.log_softmax(logits, axis=-1), never log(p).",
        solution_code("softmax_entropy"),
    )
    assert overlaps("g_z is `g * (1 - y**2)`.", solution_code("tanh_layer"))
    assert overlaps("Transpose with x.T", "x.T @ g")
    assert overlaps("d(a/b)/db = -a / b**2: yours has the opposite sign.", "")
    assert not overlaps(
        "Which operand does the output grow with, and by how much?", solution_code("vjp_div")
    )


def test_before_a_failing_check_hint_shows_the_nudge_only(fresh_kernel):
    for name, exercise in EXERCISES.items():
        shown = str(check.hint(name))
        assert say(exercise.nudge) in shown, name
        leaked = [m.name for m in exercise.mistakes if say(m.hint) in shown]
        assert not leaked, (name, leaked)
        if exercise.mistakes:
            assert "failing check" in shown, shown
            assert say(exercise.mistakes[-1].hint) not in str(check.hint(name, 2)), name


def test_the_nudge_is_said_in_the_notebooks_language(fresh_kernel):
    check.language(CHINESE)
    try:
        shown = str(check.hint("unbroadcast"))
    finally:
        check.language("en")
    assert re.search("[\u4e00-\u9fff]", shown) and "unbroadcast" in shown


def test_after_a_failing_check_the_mistake_hints_are_reachable(fresh_kernel):
    """The report names the mistake its counterexample matches, and only that one; then
    check.hint(name, n) gives every mistake's hint, as before."""
    exercise = EXERCISES["warmup_cube_vjp"]

    def forgets_the_cotangent(g, x):
        return 3 * x**2

    report = check.warmup_cube_vjp(forgets_the_cotangent)
    assert not report.passed
    matched, *others = exercise.mistakes
    assert matched.hint in str(report) and not any(m.hint in str(report) for m in others)
    distinct = list(dict.fromkeys(m.hint for m in exercise.mistakes))
    offered = [check.hint(exercise.name, n).text() for n in range(1, len(distinct) + 1)]
    assert offered == distinct
    assert f"check.hint({exercise.name!r}, 2)" in str(check.hint(exercise.name))


def test_a_passing_check_opens_no_hints(fresh_kernel):
    assert check.warmup_cube_vjp(lambda g, x: g * 3 * x**2).passed
    assert check.hint("warmup_cube_vjp").text() == EXERCISES["warmup_cube_vjp"].nudge
