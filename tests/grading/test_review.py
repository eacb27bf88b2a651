"""The gradebook's seconds and review columns: what an instructor should look at."""

from __future__ import annotations

import csv
from pathlib import Path

from autograder.grading.grade import SubmissionResult
from autograder.grading.results import SLOW_SECONDS, slow_notes, write_gradebook
from autograder.grading.verdicts import ExerciseResult


def _result(stem: str, seconds: float, review: list[str] | None = None) -> SubmissionResult:
    result = SubmissionResult(
        Path(f"{stem}.ipynb"),
        stem,
        "03",
        [ExerciseResult("unbroadcast", 1.0, 1.0, True, "")],
        review=review or [],
    )
    result.seconds = seconds
    return result


def test_a_right_answer_that_sleeps_under_each_limit_is_flagged_and_keeps_its_score(tmp_path):
    """A right answer sleeping just under each exercise's limit took about 190x an honest
    submission's time with nothing to show for it: it keeps its points (right is right, and
    the limits bound its cost), and the gradebook names it."""
    results = [_result(f"honest{i}", 0.3 + 0.01 * i) for i in range(5)]
    results += [
        _result("sleeper", 57.0),
        _result("flagged", 0.4, ["flagged: cell 3, line 1: eval(...)"]),
    ]
    assert set(slow_notes(results)) == {5}
    write_gradebook(tmp_path, results)
    with (tmp_path / "grades.csv").open(encoding="utf-8") as file:
        rows = {row["submission"]: row for row in csv.DictReader(file)}
    assert rows["sleeper"]["total"] == "1.0" and rows["sleeper"]["seconds"] == "57.00"
    assert rows["sleeper"]["review"] == "slow: 57 s, 173x the batch's median"  # 57 / 0.33
    assert rows["flagged"]["review"] == "flagged: cell 3, line 1: eval(...)"
    assert rows["honest0"]["review"] == ""


def test_a_batch_of_slow_chapters_flags_nobody():
    results = [_result(f"s{i}", SLOW_SECONDS + i) for i in range(4)]
    assert slow_notes(results) == {}
