"""Running a learner's function on every case and judging it against the references.

The in-notebook flow: draw the cases, compute both references (cached), call the learner's
function on each, and for the first failure among generated cases let Hypothesis shrink it
to the smallest failing case, which is then confirmed against both frameworks again. One
call and its judgement (shared with the grader) are in attempts.py.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from functools import cache
from typing import Any

from hypothesis import Phase

from autograder.harness import new_check
from autograder.judging import references, stored_references
from autograder.judging.attempts import (
    EVIDENCE,
    INPUT_INDEPENDENT,
    Attempt,
    call_learner,
    error_type,
    fails,
    failure_message,
    failure_to_show,
    judge,
    method_failure,
    not_answered,
    others_than,
    result_of,
    verdict,
)
from autograder.judging.cases import NOTEBOOK, Case, Profile, draw_cases, run_property
from autograder.judging.counterexamples import Counterexample, remember, remembered
from autograder.judging.exercise import Evidence, Exercise, Outputs
from autograder.judging.fingerprint import fingerprint
from autograder.judging.numpy_only import framework_refused, frameworks_used
from autograder.judging.references import reference_outputs
from autograder.judging.report import ERROR, FAILED, PASSED, Failure, Report, dependency_note
from autograder.locale import say


def _wrong_dependencies(exercise: Exercise, fn: Any) -> list[str]:
    """The exercises `fn` depends on that the learner's own versions (in the namespace
    where fn was defined) do not pass yet, each checked once per function object."""
    from autograder.exercises import EXERCISES

    namespace = getattr(fn, "__globals__", {})
    wrong = []
    for name in exercise.depends_on:
        own = namespace.get(name) if isinstance(namespace, dict) else None
        if callable(own) and not _passes(EXERCISES[name], own):
            wrong.append(name)
    return wrong


_PASSES: dict[tuple[str, int], tuple[Any, bool]] = {}


def _passes(exercise: Exercise, fn: Any) -> bool:
    key = (exercise.name, id(fn))
    if key not in _PASSES or _PASSES[key][0] is not fn:
        if len(_PASSES) > 64:  # each redefinition in the notebook is a new function
            _PASSES.clear()
        _PASSES[key] = (fn, check_function(exercise, fn).passed)
    return _PASSES[key][1]


@cache
def _notebook_cases(exercise: Exercise, profile: Profile) -> tuple[list[Case], int]:
    """The edge cases, then the drawn ones, and how many are edge cases (drawn once per
    machine: kept in this process, and on disk by stored_references)."""
    return stored_references.cases_for(exercise, profile, _draw_notebook_cases)


def _draw_notebook_cases(exercise: Exercise, profile: Profile) -> tuple[list[Case], int]:
    edge = exercise.edge_cases()
    return edge + draw_cases(exercise.strategy(profile), profile), len(edge)


def notebook_case_count(exercise: Exercise, profile: Profile = NOTEBOOK) -> int:
    """How many cases a check runs: drawing them is quick, their references are not."""
    return len(_notebook_cases(exercise, profile)[0])


@cache
def _notebook_table(exercise: Exercise, profile: Profile) -> tuple[list[Case], list[Outputs], int]:
    """Cases and references for a profile, computed once per machine (they never change):
    kept in this process, and on disk by stored_references."""
    cases, edge_count = _notebook_cases(exercise, profile)
    return cases, stored_references.references_for(exercise, cases, reference_outputs), edge_count


def check_function(exercise: Exercise, fn: Any, profile: Profile = NOTEBOOK) -> Report:
    """Check a learner's function on every case of the profile; never raises for a wrong
    answer. It is run with correct versions of the exercises it calls; the report says
    which of the learner's own are wrong."""
    report = _check(exercise, fn, profile)
    if not exercise.depends_on or report.status not in (PASSED, FAILED):
        return report
    if report.status == FAILED and (own := _with_own_helpers(exercise, fn, profile)).passed:
        return own
    return replace(
        report, dependencies=dependency_note(exercise.name, _wrong_dependencies(exercise, fn))
    )


def _with_own_helpers(exercise: Exercise, fn: Any, profile: Profile) -> Report:
    """The check with the learner's own versions of the exercises it calls: an answer whose
    helper shares an exercise's name and does something else (HIPS autograd's matmul VJP
    and its `unbroadcast(x, target_meta)`) is right. The remembered counterexample stays."""
    kept = remembered(exercise, profile)
    try:
        return _full_check(replace(exercise, depends_on=()), fn, profile, fingerprint(fn))
    finally:
        remember(exercise, profile, kept)


def _check(exercise: Exercise, fn: Any, profile: Profile) -> Report:
    """The exercise's last counterexample is tried first. If it still fails the same way for
    the same code, it is reported again without shrinking again: a re-run check cell answers
    in well under a second. New code gets the full check (its own failing cases and smallest
    case, the report a fresh kernel gives), and still fails if only the remembered case
    shows that it is wrong.
    """
    name = getattr(fn, "__name__", exercise.name)
    if not callable(fn):
        note = say(
            "pass the function itself, e.g. check.{name}({name}), not the result of "
            "calling it (got a {type}).",
            name=exercise.name,
            type=type(fn).__name__,
        )
        base = Report(exercise.name, name, PASSED, 0, exercise.references_text)
        return replace(base, status=ERROR, note=note)
    if not exercise.frameworks and (used := frameworks_used(fn)):
        return framework_refused(exercise, name, used)
    new_check()  # the same code gets the same verdict, first check or tenth, as in the grader
    if "jax" in sys.modules:  # the learner's JAX programs compile into the persistent cache
        references.jax_module()  # too, though stored references no longer configure it first
    source = fingerprint(fn)
    known = remembered(exercise, profile)
    if known is None:
        return _full_check(exercise, fn, profile, source)
    attempt = call_learner(fn, known.case, exercise)
    if not_answered(attempt):
        return verdict(exercise, name, 0, None, unanswered=True, stub=attempt.raised_in)
    failed_before = fails(exercise, attempt, known.expected)
    same_code = source is not None and source == known.source
    if failed_before and same_code and _same_failure(exercise, known, attempt):
        return verdict(exercise, name, notebook_case_count(exercise, profile), known.failure)
    report = _full_check(exercise, fn, profile, source)
    if failed_before and report.passed:  # a case it fails is known: a wrong answer must fail
        failure = judge(exercise, known.case, attempt, known.expected)
        return _remember(
            exercise,
            name,
            profile,
            source,
            report.cases_checked,
            replace(failure, shrunk=False) if failure else known.failure,
            known.expected,
        )
    return report


def _same_failure(exercise: Exercise, known: Counterexample, attempt: Attempt) -> bool:
    """The function does the same wrong thing as when its failure was remembered (the same
    code can read changed state; then it is checked afresh)."""
    return (
        failure_message(exercise, attempt, known.expected) == known.failure.message
        and attempt.printed == known.failure.printed
    )


def _full_check(exercise: Exercise, fn: Any, profile: Profile, source: str | None) -> Report:
    """Every case of the table. Failing cases are collected (a few, as evidence for naming a
    known mistake); the first failing generated case is shrunk, else the first failing edge
    case is reported; a method not followed only when every value is right."""
    name = getattr(fn, "__name__", exercise.name)
    cases, edge_count = _notebook_cases(exercise, profile)
    # A stub is recognised before any reference is computed: the references of a whole table
    # (TensorFlow imported, programs traced) take seconds to tens of seconds, and an unanswered
    # exercise needs none of them.
    first = call_learner(fn, cases[0], exercise) if cases else None
    if first is not None and not_answered(first):
        return verdict(exercise, name, 0, None, unanswered=True, stub=first.raised_in)
    outputs = _notebook_table(exercise, profile)[1]
    failing: list[tuple[Case, Attempt, Outputs]] = []
    generated: tuple[Case, Attempt, Outputs] | None = None
    method: Failure | None = None
    for index, (case, expected) in enumerate(zip(cases, outputs, strict=True)):
        attempt = first if index == 0 and first is not None else call_learner(fn, case, exercise)
        if not_answered(attempt):
            return verdict(exercise, name, 0, None, unanswered=True, stub=attempt.raised_in)
        if not fails(exercise, attempt, expected):
            method = method or method_failure(case, attempt)
            continue
        if error_type(attempt) in INPUT_INDEPENDENT:  # every case would fail the same way
            return _remember(
                exercise,
                name,
                profile,
                source,
                len(cases),
                failure_to_show(exercise, [(case, attempt, expected)]),
                expected,
            )
        failing.append((case, attempt, expected))
        if index >= edge_count:
            generated = generated or failing[-1]
        if generated is not None and len(failing) > EVIDENCE:
            break  # enough failing cases to shrink from and to recognise a mistake by
    if not failing:
        return verdict(exercise, name, len(cases), method)
    evidence = [(case, result_of(attempt)) for case, attempt, _ in failing]
    shrunk = (
        shrink_with_references(exercise, fn, profile, evidence, known=(cases, outputs))
        if generated is not None
        else None
    )
    failure, expected = shrunk or _shown_with_expected(exercise, failing, generated)
    return _remember(exercise, name, profile, source, len(cases), failure, expected)


def _shown_with_expected(
    exercise: Exercise,
    failing: list[tuple[Case, Attempt, Outputs]],
    preferred: tuple[Case, Attempt, Outputs] | None,
) -> tuple[Failure | None, Outputs]:
    """failure_to_show, with the references of the case it shows (kept with the failure as
    the exercise's last counterexample)."""
    failure = failure_to_show(exercise, failing, preferred or failing[0])
    shown = next(
        (f for f in failing if failure is not None and f[0] is failure.case),
        preferred or failing[0],
    )
    return failure, shown[2]


def _remember(
    exercise: Exercise,
    name: str,
    profile: Profile,
    source: str | None,
    cases_checked: int,
    failure: Failure | None,
    expected: Outputs,
) -> Report:
    """The report, after keeping its failure (if any) as the exercise's last counterexample."""
    if failure is not None:
        remember(exercise, profile, Counterexample(failure.case, expected, failure, source))
    return verdict(exercise, name, cases_checked, failure)


def warm_up(exercises: Iterable[Exercise], profile: Profile = NOTEBOOK) -> int:
    """Draw these exercises' notebook cases and compute their references once.

    The notebook cases are the same on every machine, so `make lab` (and Binder's postBuild)
    run this to store their references on disk (stored_references.py): a learner's first
    check then reads them instead of importing TensorFlow and compiling with JAX. Returns
    the number of cases prepared.
    """
    return sum(len(_notebook_table(exercise, profile)[0]) for exercise in exercises)


class _Failed(Exception):
    def __init__(self, case: Case) -> None:
        super().__init__("a failing case")
        self.case = case


def shrink_with_references(
    exercise: Exercise,
    fn: Callable[..., Any],
    profile: Profile,
    evidence: Sequence[Evidence] = (),
    known: tuple[Sequence[Case], Sequence[Outputs]] | None = None,
) -> tuple[Failure, Outputs] | None:
    """Let Hypothesis find the smallest failing case; confirm it with both frameworks.

    Candidates are judged against TensorFlow alone (fast, no compilation) and only for
    pass/fail: the hint (which runs every known mistake) is worked out once, for the final
    case, after JAX agrees, naming a mistake only if that mistake also reproduces the
    `evidence` (other failing cases). Returns None if shrinking could not reproduce a
    failure (a function that is not deterministic), so the caller keeps the failure it found.
    Candidates' references are remembered for the process (references.py); `known` (the
    check's table, cases and references) is remembered first, since the shrinker's search
    replays the table's cases from the same seed.
    """

    def body(case: Case) -> None:
        expected = references.tensorflow_reference(exercise.tf_reference, case)
        if fails(exercise, call_learner(fn, case, exercise), expected):
            raise _Failed(case)

    if known is not None:  # the table's references: shrinking first replays its cases
        references.remember_tensorflow(exercise.tf_reference, *known)
    try:
        run_property(
            exercise.strategy(profile), body, profile, phases=(Phase.generate, Phase.shrink)
        )
    except _Failed as found:
        case = found.case
        expected = references.confirmed_reference(exercise, case)
        confirmed = judge(
            exercise, case, call_learner(fn, case, exercise), expected, others_than(case, evidence)
        )
        return (replace(confirmed, shrunk=True), expected) if confirmed else None
    except Exception:  # Hypothesis reports flakiness and similar as its own errors
        return None
    return None
