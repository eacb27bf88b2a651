"""`python -m autograder grade` end to end on good, buggy and hostile submissions."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.exercises import for_chapter
from autograder.grading import assignment as assignment_module
from autograder.grading import cache_folders, refcache
from autograder.grading import command as batch_module
from autograder.grading import grade as grade_module
from autograder.grading import submissions as submissions_module
from autograder.grading.assignment import (
    Assignment,
    prepare,
    save_known_mistakes,
)
from autograder.grading.grade import SubmissionResult, grade_submission
from autograder.grading.grading_run import GradingRun
from autograder.grading.parts import SpareSlots, split_exercises
from autograder.grading.submissions import read_submission, read_submissions
from autograder.grading.verdicts import (
    cases_run,
)
from autograder.judging.attempts import INPUT_INDEPENDENT
from autograder.judging.cases import Case
from autograder.judging.exercise import Exercise, Raised
from autograder.sandbox import capacity, children, errors, sandbox
from autograder.sandbox.capabilities import Capabilities
from autograder.sandbox.confined import confine
from autograder.sandbox.confined.wire import STOPPING_ERRORS, validated_report
from autograder.sandbox.pools import Sandbox

from ..reference_entries import at_once
from ..submissions import ROOT, write_all

pytestmark = pytest.mark.e2e  # the grade command on whole submissions, through the sandbox

SEED = "5"


def grade(paths: list[Path], out: Path, cache: Path) -> subprocess.CompletedProcess:
    command = [
        sys.executable,
        "-m",
        "autograder",
        "grade",
        *map(str, paths),
        "--out",
        str(out),
        "--jobs",
        "2",
        "--seed",
        SEED,
        "--timeout",
        "10",
        "--assignment",
        "03",
    ]
    return subprocess.run(
        command,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", cache_folders.ENV: str(cache)},
    )


def package_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted((ROOT / "autograder").rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    folder = tmp_path_factory.mktemp("submissions")
    out = tmp_path_factory.mktemp("graded")
    targets = [
        out / "001-good" / "results.json",
        out / "forged.json",
        ROOT / "autograder" / "forged.py",
        folder / "good.ipynb.forged",
    ]
    expected = write_all(folder, targets)
    cache = tmp_path_factory.mktemp("references")
    before = package_digest()
    run = grade(sorted(folder.glob("*.ipynb")), out, cache)
    return {
        "folder": folder,
        "out": out,
        "expected": expected,
        "run": run,
        "targets": targets,
        "package_before": before,
        "cache": cache,
    }


def folder(out: Path, stem: str) -> Path:
    """The output folder of the submission named `stem` (folders are `<index>-<stem>`)."""
    (found,) = out.glob(f"[0-9]*-{stem}")
    return found


def results(batch, stem: str) -> dict:
    return json.loads((folder(batch["out"], stem) / "results.json").read_text())


def scores(batch, stem: str) -> tuple[float, float]:
    tests = {t["name"].split()[0]: t["score"] for t in results(batch, stem)["tests"]}
    return tests.get("unbroadcast", 0), tests.get("matmul_vjp", 0)


def test_batch_is_graded_and_exits_zero(batch):
    assert batch["run"].returncode == 0, batch["run"].stderr[-3000:]
    assert "Graded" in batch["run"].stderr and "[1/" in batch["run"].stderr


@pytest.mark.parametrize(
    "stem",
    [
        "good",
        "forgets_keepdims",
        "infinite_loop",
        "exit_at_import",
        "os_exit_in_function",
        "keyboard_interrupt",
        "memory_grab",
        "print_flood",
        "patched_numpy",
        "syntax_error",
        "renamed_function",
        "returns_none",
        "returns_nan",
        "uses_tensorflow",
        "forges_files",
        "invalid_json",
        "deeply_nested",
        "many_values",
        "other_chapter",
        "zh_good",
        "zh_forgets_keepdims",
        "zh_blank",
        "own_helper_named_unbroadcast",
        "matmul_calls_a_wrong_unbroadcast",
    ],
)
def test_each_submission_costs_only_its_own_points(batch, stem):
    assert scores(batch, stem) == batch["expected"][stem], results(batch, stem)


@pytest.mark.parametrize(
    ("stem", "message"),
    [
        ("forgets_keepdims", "keepdims=True"),
        ("infinite_loop", "time limit"),
        ("os_exit_in_function", "process ended while `unbroadcast` ran"),
        ("keyboard_interrupt", "raised KeyboardInterrupt"),
        ("memory_grab", "MemoryError"),
        ("syntax_error", "No function named `unbroadcast`"),
        ("renamed_function", "unbroadcast_v2"),
        ("returns_none", "should be a numpy array, got builtins.NoneType"),
        ("returns_nan", "contains NaN"),
        ("uses_tensorflow", "calls TensorFlow or JAX"),
        (
            "matmul_calls_a_wrong_unbroadcast",
            "checked with a correct unbroadcast in place of yours",
        ),
        ("invalid_json", "not a valid Jupyter notebook"),
        ("deeply_nested", "nested too deeply to read"),
        ("many_values", "more than 500,000 JSON values"),
        ("other_chapter", "notebook of chapter 01"),
    ],
)
def test_each_problem_gets_a_clear_message(batch, stem, message):
    text = json.dumps(results(batch, stem))
    assert message in text, text[:3000]
    assert message in (folder(batch["out"], stem) / "feedback.txt").read_text()


CJK = re.compile(r"[\u4e00-\u9fff]")


def array_lines(text: str) -> list[str]:
    """The printed arrays of a feedback text (the counterexample), whatever its language."""
    return [line.strip() for line in text.splitlines() if line.strip().startswith("[")]


def test_a_chinese_submission_is_answered_in_chinese_with_the_same_counterexample(batch):
    english = (folder(batch["out"], "forgets_keepdims") / "feedback.txt").read_text()
    chinese = (folder(batch["out"], "zh_forgets_keepdims") / "feedback.txt").read_text()
    assert not CJK.search(english)
    assert CJK.search(chinese) and "unbroadcast" in chinese and "keepdims=True" in chinese
    assert array_lines(chinese) == array_lines(english) != []
    payload = results(batch, "zh_forgets_keepdims")
    assert CJK.search(payload["output"]) and CJK.search(payload["tests"][0]["output"])
    assert payload["tests"][0]["name"] == "unbroadcast (chapter 03)"  # stable identifiers
    for stem in ("zh_good", "zh_blank"):
        text = (folder(batch["out"], stem) / "feedback.txt").read_text()
        assert CJK.search(text), text


def test_syntax_error_is_pointed_at(batch):
    assert "SyntaxError" in (folder(batch["out"], "syntax_error") / "feedback.txt").read_text()


def test_results_json_has_gradescope_fields_seed_and_protections(batch):
    payload = results(batch, "good")
    assert {"score", "execution_time", "output", "tests"} <= set(payload)
    for test in payload["tests"]:
        assert {"name", "score", "max_score", "status", "output", "visibility"} <= set(test)
    assert payload["score"] == 2
    assert payload["extra_data"]["seed"] == int(SEED)
    protections = payload["extra_data"]["protections"]
    assert "no_new_privs" in protections
    assert any(p.startswith(("bubblewrap:", "Landlock")) for p in protections), protections


def test_gradebook_has_a_row_per_submission_and_a_total(batch):
    with (batch["out"] / "grades.csv").open() as file:
        rows = list(csv.DictReader(file))
    assert {row["submission"].split("-", 1)[1] for row in rows} == set(batch["expected"])
    for row in rows:
        want = batch["expected"][row["submission"].split("-", 1)[1]]
        assert float(row["total"]) == sum(want)
        assert {"unbroadcast", "matmul_vjp", "total", "max"} <= set(row)


def test_forged_files_land_nowhere_and_the_grader_is_untouched(batch):
    assert package_digest() == batch["package_before"]
    assert not (ROOT / "autograder" / "forged.py").exists()
    assert 'score": 100' not in (folder(batch["out"], "good") / "results.json").read_text()
    written_by_grader = batch["out"] / "001-good" / "results.json"
    forged = [t for t in batch["targets"] if t != written_by_grader and t.exists()]
    assert not forged, forged


def test_good_result_does_not_depend_on_the_rest_of_the_batch(batch, tmp_path):
    alone = grade([batch["folder"] / "good.ipynb"], tmp_path, batch["cache"])
    assert alone.returncode == 0, alone.stderr[-2000:]
    solo = json.loads((folder(tmp_path, "good") / "results.json").read_text())
    assert solo["tests"] == results(batch, "good")["tests"]


def test_nothing_to_grade_is_an_error_exit(tmp_path):
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            str(tmp_path / "x.txt"),
            "--out",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode != 0 and "No submissions" in run.stderr


def test_rlimits_alone_still_contain_crashes(batch, tmp_path):
    """With only rlimits (--unsafe-no-sandbox), the child still dies alone."""
    assignment = prepare("03", seed=int(SEED))
    limits = children.Limits(per_exercise=3, per_submission=8)
    run = GradingRun(
        int(SEED), limits, Sandbox(Capabilities(unsafe=True)), {"03": assignment}, "03"
    )
    for stem in ("os_exit_in_function", "memory_grab", "infinite_loop", "good"):
        result = grade_submission(run, read_submission(batch["folder"] / f"{stem}.ipynb", stem))
        got = tuple(e.score for e in result.exercises)
        assert got == batch["expected"][stem], (stem, [e.output for e in result.exercises])


def test_grader_refuses_without_any_isolation(monkeypatch):
    monkeypatch.setattr(sandbox, "bubblewrap", lambda: None)
    monkeypatch.setattr(confine, "landlock_abi", lambda: 0)
    with pytest.raises(errors.SandboxUnavailable, match="--unsafe-no-sandbox"):
        sandbox.detect("auto")
    unsafe = sandbox.detect("auto", unsafe=True)
    assert "UNSAFE: graded with --unsafe-no-sandbox" in sandbox.protections(unsafe.offered)
    assert any("NOT isolated" in layer for layer in sandbox.protections(unsafe.offered))


def test_a_sandbox_that_cannot_start_is_a_loud_grading_error(batch, tmp_path, monkeypatch):
    """A launcher that fails (here: a Python that does not exist) is the grader's failure."""
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-such-python"))
    out = tmp_path / "out"
    code = batch_module.grade(
        submissions=[batch["folder"] / "good.ipynb"],
        out=out,
        jobs=1,
        seed=int(SEED),
        timeout=10,
        assignment="03",
        sandbox_mode="fallback",
    )
    assert code == 1
    payload = json.loads((folder(out, "good") / "results.json").read_text())
    assert payload["score"] == 0 and "GRADING ERROR" in payload["output"]
    assert "not your fault" in payload["output"]


def test_an_unknown_chapter_costs_only_its_notebook(batch, tmp_path):
    unknown = json.loads((batch["folder"] / "good.ipynb").read_text())
    unknown["metadata"]["course"]["chapter"] = "99"
    (tmp_path / "unknown.ipynb").write_text(json.dumps(unknown))
    command = [
        sys.executable,
        "-m",
        "autograder",
        "grade",
        str(tmp_path / "unknown.ipynb"),
        str(batch["folder"] / "good.ipynb"),
        "--out",
        str(tmp_path / "out"),
        "--seed",
        SEED,
        "--timeout",
        "10",
    ]
    run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert results({"out": tmp_path / "out"}, "good")["score"] == 2
    assert "chapter 99" in results({"out": tmp_path / "out"}, "unknown")["output"]


def test_seeds_that_draw_onednn_crash_shapes_still_grade(tmp_path):
    """Seed 1 draws matmul_vjp's (6, 1, 6, 5) @ (5, 3) case, on which TF 2.21's oneDNN batch
    matmul corrupted the grader's heap here (AVX-512): the grader runs TF without oneDNN."""
    solution = tmp_path / "solution.ipynb"
    solution.write_text((ROOT / "solutions" / "03_unbroadcasting.ipynb").read_text())
    env = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            str(solution),
            "--out",
            str(tmp_path / "out"),
            "--seed",
            "1",
            "--jobs",
            "1",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert results({"out": tmp_path / "out"}, "solution")["score"] == 2


# ---------------------------------------------------------------- the reference cache


def same_cases(first: list, second: list) -> bool:
    def plain(case) -> list:
        return [
            (name, type(v), v.dtype, v.tobytes())
            if isinstance(v, np.ndarray)
            else (name, type(v), v)
            for name, v in case.args
        ] + [case.label]

    return [plain(c) for c in first] == [plain(c) for c in second]


def test_the_run_cached_cases_and_references_that_equal_a_fresh_computation(batch, tmp_path):
    # Fresh in a new process, as the grader computes them: in this one, TensorFlow's state
    # after other test modules (chapter 04's checks, on the same xdist worker) can change a
    # float32 matmul in its last bit.
    (entry,) = batch["cache"].glob(f"03-{SEED}-*.npz")
    exercises = for_chapter("03")
    counts = {e.name: len(e.outputs) for e in exercises}
    cases, refs = refcache.load(entry, counts)
    prepared = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "prepare",
            "03",
            "--seed",
            SEED,
            "--reference-cache",
            str(tmp_path),
            "--warm-with",
            str(ROOT / "solutions" / "03_unbroadcasting.ipynb"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert prepared.returncode == 0, prepared.stderr[-3000:]
    (fresh,) = tmp_path.glob(f"03-{SEED}-*.npz")
    assert fresh.name == entry.name  # same grader sources and library versions
    # The solution's grading measured what each exercise costs, for splitting submissions.
    costs = prepare("03", int(SEED), tmp_path).costs
    assert set(costs) == set(counts) and all(seconds > 0 for seconds in costs.values())
    fresh_cases, fresh_refs = refcache.load(fresh, counts)
    for exercise in exercises:
        assert same_cases(cases[exercise.name], fresh_cases[exercise.name])
        for got, want in zip(refs[exercise.name], fresh_refs[exercise.name], strict=True):
            assert all(
                g.dtype == w.dtype and np.array_equal(g, w, equal_nan=True)
                for g, w in zip(got, want, strict=True)
            )


def test_a_warm_cache_keeps_tensorflow_and_jax_out_of_the_grading_parent(batch):
    cache = str(batch["cache"])
    program = (
        "import sys, pathlib\nfrom autograder.grading.assignment import prepare\n"
        f"a = prepare('03', {SEED}, pathlib.Path({cache!r}))\n"
        "print(sum(map(len, a.cases.values())), sorted(m for m in sys.modules\n"
        "      if m.split('.')[0] in ('tensorflow', 'jax', 'jaxlib')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, check=True
    )
    count, modules = done.stdout.split(" ", 1)
    assert int(count) > 100 and modules.strip() == "[]", done.stdout


def fake_references(exercises, seed):
    cases = {e.name: [Case((("x", np.arange(3.0) + seed), ("shape", (1, 3))))] for e in exercises}
    refs = {e.name: [tuple(np.ones(2) for _ in e.outputs)] for e in exercises}
    return cases, refs


@pytest.mark.parametrize("damage", ["truncated", "other exercises", "not numeric"])
def test_a_damaged_entry_is_recomputed_and_rewritten(tmp_path, monkeypatch, damage):
    exercises = for_chapter("03")
    entry = refcache.entry_path(tmp_path, "03", 9)
    cases, refs = fake_references(exercises, 9)
    if damage == "truncated":
        refcache.save(entry, cases, refs)
        entry.write_bytes(entry.read_bytes()[:300])
    elif damage == "other exercises":
        refcache.save(
            entry, {"unbroadcast": cases["unbroadcast"]}, {"unbroadcast": refs["unbroadcast"]}
        )
    else:
        refcache.save(
            entry, cases, {e.name: [tuple(np.array(["a"]) for _ in e.outputs)] for e in exercises}
        )
    calls = []
    monkeypatch.setattr(
        assignment_module,
        "compute_references",
        lambda ex, seed: calls.append(seed) or fake_references(ex, seed),
    )
    assignment = prepare("03", 9, tmp_path)
    assert calls == [9] and same_cases(assignment.cases["unbroadcast"], cases["unbroadcast"])
    assert assignment.cases["unbroadcast"][0].arg("shape") == (1, 3)  # a tuple again
    assert prepare("03", 9, tmp_path).references.keys() == refs.keys()
    assert calls == [9], "the rewritten entry was not read back"
    assert [p.name for p in tmp_path.iterdir()] == [entry.name]  # no partial files left


def test_runs_sharing_a_cache_compute_an_entry_once(tmp_path, monkeypatch):
    """A Slurm array's tasks, or a Job's pods on one volume, start together on an empty
    cache: one computes the references, the others wait for it and read them."""
    calls = []

    def slow(exercises, seed):
        calls.append(seed)
        threading.Event().wait(0.3)  # long enough for the others to find no entry
        return fake_references(exercises, seed)

    monkeypatch.setattr(assignment_module, "compute_references", slow)
    assignments = at_once(3, lambda: prepare("03", 9, tmp_path))
    assert calls == [9]
    first = assignments[0].cases["unbroadcast"]
    assert all(same_cases(a.cases["unbroadcast"], first) for a in assignments)
    assert [p.name for p in tmp_path.iterdir()] == [refcache.entry_path(tmp_path, "03", 9).name]


def test_runs_sharing_a_cache_store_the_known_mistakes_once(tmp_path, monkeypatch):
    assignment = Assignment("04", for_chapter("04"), {}, {})
    assignment.cases = {e.name: [Case((("x", np.ones(2)),))] for e in assignment.exercises}
    runs = []

    def slow(exercise, mistake, case, known=None):
        runs.append(mistake.name)
        threading.Event().wait(0.01)
        return Raised("ValueError")

    monkeypatch.setattr(Exercise, "run_mistake", slow)
    stored = at_once(3, lambda: save_known_mistakes(assignment, 5, tmp_path))
    mistakes = sum(len(e.mistakes) for e in assignment.exercises if e.frameworks)
    assert sorted(stored) == [0, 0, mistakes] and len(runs) == mistakes
    assert not list(tmp_path.glob("*.lock"))  # the lock's file goes with the work done


def test_the_child_and_the_grader_stop_on_the_same_errors():
    """The child stops an exercise's run on the errors the notebook check stops on."""
    assert INPUT_INDEPENDENT | {"NotImplementedError"} == STOPPING_ERRORS


def _error(kind: str) -> dict:
    return {"kind": "error", "type": kind, "message": "", "traceback": "", "function": ""}


def _value() -> dict:
    return {"kind": "other", "module": "builtins", "type": "NoneType"}


def test_only_an_error_that_ends_the_run_makes_it_shorter():
    """The child stops an exercise at the stub's NotImplementedError or an input-independent
    error; the cases it did not run are then not judged. A child that stops on its own, after
    a value or another error, leaves the rest as missing results, which fail."""
    assert cases_run([_value(), _error("NotImplementedError")], 10) == 2
    assert cases_run([_error("NameError")], 10) == 1
    assert cases_run([_value(), _value()], 10) == 10
    assert cases_run([_error("ValueError")], 10) == 10
    assert cases_run([_value()] * 9 + [_error("NameError")], 10) == 10
    assert cases_run([], 10) == 10


def stored_mistakes_entry(cache: Path, seed: int) -> Assignment:
    """Chapter 04's entry with its edge cases only and made-up references, and what its
    mistakes give on those cases, stored the way `prepare` stores them."""
    exercises = for_chapter("04")
    cases = {e.name: e.edge_cases() for e in exercises}
    refs = {
        e.name: [tuple(np.full(3, 7.0) for _ in e.outputs) for _ in cases[e.name]]
        for e in exercises
    }
    refcache.save(refcache.entry_path(cache, "04", seed), cases, refs)
    return Assignment("04", exercises, cases, refs)


def test_stored_mistakes_give_what_running_them_gives(tmp_path):
    assignment = stored_mistakes_entry(tmp_path, 3)
    stored = save_known_mistakes(assignment, 3, tmp_path)
    assert stored == sum(len(e.mistakes) for e in assignment.exercises)
    assert save_known_mistakes(assignment, 3, tmp_path) == 0  # kept, not redone
    loaded = prepare("04", 3, tmp_path)
    for exercise in loaded.exercises:
        known = loaded.known.get(exercise.name)
        assert known is not None
        for mistake in exercise.mistakes:
            for case in loaded.cases[exercise.name]:
                kept = known(mistake, case)
                assert kept is not None, (exercise.name, mistake.name, case.label)
                assert exercise._same(exercise.run_mistake(mistake, case), kept), (
                    exercise.name,
                    mistake.name,
                    case.label,
                )


def test_a_wrong_framework_answer_is_hinted_without_importing_its_framework(tmp_path):
    """What `prepare` stored names the mistake; the grading process never imports TF."""
    assignment = stored_mistakes_entry(tmp_path, 4)
    save_known_mistakes(assignment, 4, tmp_path)
    program = (
        "import sys, pathlib\nfrom autograder.grading.assignment import prepare\n"
        "from autograder.judging.attempts import failure_to_show\n"
        "from autograder.judging.attempts import Attempt\n"
        f"a = prepare('04', 4, pathlib.Path({str(tmp_path)!r}))\n"
        "e = next(x for x in a.exercises if x.name == 'logaddexp')\n"
        "m = next(x for x in e.mistakes if 'cotangent' in x.hint)\n"
        "known = a.known[e.name]\n"
        "failing = [(c, Attempt(value=known(m, c)), r)\n"
        "           for c, r in zip(a.cases[e.name], a.references[e.name])]\n"
        "shown = failure_to_show(e, failing, known=known)\n"
        "print(shown.hint == m.hint, sorted(x for x in sys.modules\n"
        "      if x.split('.')[0] in ('tensorflow', 'jax', 'jaxlib')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.stdout.strip() == "True []", done.stdout + done.stderr[-2000:]


def test_exercises_split_into_balanced_parts_in_their_own_order():
    exercises = for_chapter("04")
    cases = {
        e.name: [None] * n for e, n in zip(exercises, (120, 110, 90, 120, 40, 60), strict=True)
    }
    parts = split_exercises(exercises, cases, 2)
    assert len(parts) == 2
    assert sorted(e.name for part in parts for e in part) == sorted(e.name for e in exercises)
    for part in parts:
        assert part == [e for e in exercises if e in part]  # the assignment's order
    loads = [sum(len(cases[e.name]) for e in part) for part in parts]
    assert abs(loads[0] - loads[1]) <= 120
    assert len(split_exercises(exercises, cases, 9)) == len(exercises)
    assert split_exercises(exercises, cases, 1) == [exercises]


def test_a_part_pays_a_framework_start_up_only_where_it_must():
    """Chapter 01: a numpy exercise and two TensorFlow/JAX ones, in two parts: the two
    framework exercises share one child rather than each part importing the frameworks."""
    exercises = for_chapter("01")
    cases = {e.name: [None] * 120 for e in exercises}
    parts = split_exercises(exercises, cases, 2)
    assert sorted(sorted(e.name for e in part) for part in parts) == [
        ["per_example_gradients", "qa_gradients"],
        ["predict_tape_gradient"],
    ]


def test_a_lone_submission_runs_its_exercises_in_parts_at_once(batch, monkeypatch):
    assignment = prepare("03", int(SEED), batch["cache"])
    spare = SpareSlots(1)
    run = GradingRun(
        int(SEED),
        children.Limits(per_exercise=10, per_submission=30),
        Sandbox(Capabilities(unsafe=True)),
        {"03": assignment},
        "03",
        spare=spare,
    )
    both_running = threading.Barrier(2, timeout=20)  # broken unless two parts overlap
    parts, original = [], grade_module.run_part

    def part(grading_run, assignment, exercises, *rest):
        parts.append([e.name for e in exercises])
        both_running.wait()
        return original(grading_run, assignment, exercises, *rest)

    monkeypatch.setattr(grade_module, "run_part", part)
    result = grade_submission(run, read_submission(batch["folder"] / "good.ipynb", "good"))
    assert sorted(parts) == [["matmul_vjp"], ["unbroadcast"]]
    assert tuple(e.score for e in result.exercises) == batch["expected"]["good"]
    assert spare.take(5) == 1  # the slot it borrowed is back


def test_every_slot_is_idle_again_when_the_batch_ends(monkeypatch, tmp_path):
    seen = []

    def fake_grade_one(run, out, submission):
        idle = run.spare.take(10)
        run.spare.give(idle)
        seen.append(idle)
        return SubmissionResult(submission.path, submission.stem, "03")

    monkeypatch.setattr(batch_module, "grade_one", fake_grade_one)
    run = GradingRun(1, children.Limits(), Sandbox(Capabilities(unsafe=True)), {})
    submissions = read_submissions([tmp_path / f"{n}.ipynb" for n in range(4)])
    batch_module.run_all(run, tmp_path, submissions, jobs=3)
    assert run.spare.take(10) == 3
    lone = GradingRun(1, children.Limits(), Sandbox(Capabilities(unsafe=True)), {})
    batch_module.run_all(lone, tmp_path, submissions[:1], jobs=3)
    assert seen[-1] == 2 and lone.spare.take(10) == 3  # a lone submission may use 2 more


def test_submissions_with_more_answers_start_first_and_keep_their_places(monkeypatch, tmp_path):
    learner = ROOT / "course" / "03_unbroadcasting.ipynb"
    solution = ROOT / "solutions" / "03_unbroadcasting.ipynb"
    paths = [
        tmp_path / "stubs.ipynb",
        tmp_path / "answered.ipynb",
        tmp_path / "fifo.ipynb",
        tmp_path / "broken.ipynb",
    ]
    paths[0].write_bytes(learner.read_bytes())
    paths[1].write_bytes(solution.read_bytes())
    os.mkfifo(paths[2])  # opened without blocking, then refused: reading it would block
    paths[3].write_text("{not json")
    submissions = read_submissions(paths)
    assert [s.answered_exercises() for s in submissions] == [0, 2, 0, 0]
    assert "not a regular file" in submissions[2].problem
    started = []

    def fake_grade_one(run, out, submission):
        started.append(submission.path.name)
        return SubmissionResult(submission.path, submission.stem, "03")

    monkeypatch.setattr(batch_module, "grade_one", fake_grade_one)
    run = GradingRun(1, children.Limits(), Sandbox(Capabilities(unsafe=True)), {})
    results = batch_module.run_all(run, tmp_path, submissions, jobs=1)
    assert started[0] == "answered.ipynb"
    assert [r.path for r in results] == paths


def test_measured_costs_balance_the_parts_and_junk_costs_are_ignored(tmp_path):
    exercises = (*for_chapter("05"), *for_chapter("06"))
    exercises = tuple(
        e
        for e in exercises
        if e.name in {"soft_threshold", "softmax_entropy", "fixed_point", "bessel_i0e"}
    )
    cases = {e.name: [None] * 120 for e in exercises}
    costs = {"soft_threshold": 1.0, "softmax_entropy": 1.2, "fixed_point": 1.1, "bessel_i0e": 3.5}
    parts = split_exercises(exercises, cases, 2, costs)
    assert [[e.name for e in part] for part in parts] == [
        ["bessel_i0e"],
        ["soft_threshold", "softmax_entropy", "fixed_point"],
    ]
    path = tmp_path / "x.costs.json"
    refcache.save_costs(path, {**costs, "other": 2.0, "fixed_point": -1, "softmax_entropy": "x"})
    assert refcache.load_costs(path, set(costs)) == {"soft_threshold": 1.0, "bessel_i0e": 3.5}
    path.write_text("[1, 2]")
    assert refcache.load_costs(path, set(costs)) == {}
    report = {"cases": [], "defined": [], "seconds": "a while"}
    assert validated_report(report)["seconds"] == 0.0
    assert validated_report({**report, "seconds": 2.5})["seconds"] == 2.5


@pytest.mark.parametrize(
    ("cpu_max", "memory_max", "expected"),
    [
        ("max 100000", "max", 2),  # no quota: the two CPUs this test allows
        ("150000 100000", "max", 2),  # 1.5 CPUs: rounded up
        ("100000 100000", "max", 1),
        ("max 100000", str(768 * 1024**2), 1),  # a 768 MiB container: one child at a time
        ("400000 100000", str(3 * 1024**3), 2),
    ],
)
def test_default_jobs_follow_the_container_quota_and_memory(
    tmp_path, monkeypatch, cpu_max, memory_max, expected
):
    (tmp_path / "cpu.max").write_text(cpu_max)
    (tmp_path / "memory.max").write_text(memory_max)
    monkeypatch.setattr(capacity, "CGROUP_CPU_FILES", ((str(tmp_path / "cpu.max"), None),))
    monkeypatch.setattr(capacity, "CGROUP_MEMORY_FILES", (str(tmp_path / "memory.max"),))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert capacity.default_jobs() == expected


def test_the_seccomp_binding_loads_without_starting_a_process():
    """ctypes.util.find_library runs `ldconfig -p` for each library pyseccomp looks up: two
    processes in every child's start-up, inside its sandbox. The usual sonames load
    directly."""
    script = (
        "import subprocess\n"
        "def refuse(*args, **kwargs):\n"
        "    raise AssertionError(f'started a process: {args}')\n"
        "subprocess.Popen = refuse\n"
        "from autograder.sandbox.confined import confine\n"
        "print(confine.import_pyseccomp().SyscallFilter.__name__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.strip() == "SyscallFilter", done.stderr
    assert confine.seccomp_available()


# Output folder names: the student's name survives in every script.

UNSAFE = set('/\\<>:"|?*') | {chr(c) for c in range(32)} | {"\x7f"}


def test_a_chinese_name_keeps_its_letters_and_its_place():
    paths = [Path(f"submissions/{i}.ipynb") for i in range(11)]
    paths.append(Path("submissions/张三 作业3 (1).ipynb"))
    assert submissions_module.output_folders(paths)[-1] == "012-张三_作业3_1"


def test_nfd_and_nfc_names_give_the_same_folder():
    name = "José Müller hw3"
    nfd, nfc = unicodedata.normalize("NFD", name), unicodedata.normalize("NFC", name)
    assert nfd != nfc
    clean = submissions_module.clean_name
    assert clean(nfd) == clean(nfc) == "José_Müller_hw3"


@pytest.mark.parametrize(
    "stem, expected",
    [
        ("محمد علي - واجب", "محمد_علي_-_واجب"),  # Arabic
        ("Иван Петров, ДЗ №3", "Иван_Петров_ДЗ_3"),  # Cyrillic
        ("राम शर्मा गृहकार्य", "राम_शर्मा_गृहकार्य"),  # Devanagari, its vowel signs and viramas kept
        ("1 tamper", "1_tamper"),
        ("hw.v2", "hw.v2"),
    ],
)
def test_letters_marks_and_digits_of_every_script_are_kept(stem, expected):
    assert submissions_module.clean_name(stem) == expected


@pytest.mark.parametrize(
    "stem, expected",
    [
        ("../x", "x"),
        ("a/b", "a_b"),
        ("a\\b", "a_b"),
        ("a\x00b", "a_b"),
        ("\u202egpj.exe", "gpj.exe"),
        ("ab\u202ecd", "ab_cd"),
        ("..", "submission"),
        (".", "submission"),
        ("....", "submission"),
        (".hidden", "hidden"),
        ("", "submission"),
        ("!?*", "submission"),
        ('<a>:"b"|c?', "a_b_c"),
        ("a\udcffb", "a_b"),
        ("\u0301x", "x"),
    ],
)
def test_hostile_names_give_a_plain_folder(stem, expected):
    assert submissions_module.clean_name(stem) == expected


def test_a_long_name_is_cut_in_bytes_between_letters_and_never_inside_one():
    long = "é" * 60 + "张" * 100  # e + U+0301 after NFD: a letter and its mark are one unit
    name = submissions_module.clean_name(unicodedata.normalize("NFD", long))
    assert len(name.encode()) <= submissions_module.STEM_BYTES
    assert name == "é" * 50
    decomposed = submissions_module.clean_name("ab" + "e\u0301\u0323" * 40)  # NFC: ẹ and a mark
    assert decomposed == "ab" + "\u1eb9\u0301" * 19  # 97 bytes: a 20th would not fit
    zalgo = submissions_module.clean_name("z" + "\u0301" * 500)
    assert zalgo == "\u017a" + "\u0301" * 49  # one letter with too many marks: cut among them


@given(st.text())
@settings(max_examples=500, deadline=None)
def test_any_text_gives_a_safe_bounded_folder_name(text):
    name = submissions_module.clean_name(text)
    assert name and not name.startswith(".") and not set(name) & UNSAFE
    assert all(unicodedata.category(c)[0] in "LMN" or c in "._-" for c in name)
    assert len(name.encode("utf-8")) <= submissions_module.STEM_BYTES
    assert submissions_module.clean_name(unicodedata.normalize("NFD", text)) == name


def test_a_file_name_that_is_not_utf8_costs_nothing_but_its_escape(tmp_path):
    """A name of bytes that are not UTF-8 (a Windows zip, a Latin-1 laptop) used to stop the
    whole batch with UnicodeEncodeError when its feedback and the gradebook were written.
    Under a C locale too: what the grader writes is UTF-8 whatever the locale."""
    solution = ROOT / "solutions" / "03_unbroadcasting.ipynb"
    odd = Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9 hw.ipynb"))
    odd.write_bytes(solution.read_bytes())
    plain = tmp_path / "plain.ipynb"
    plain.write_bytes(solution.read_bytes())
    out = tmp_path / "graded"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            str(odd),
            str(plain),
            "--out",
            str(out),
            "--seed",
            "3",
            "--jobs",
            "1",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "LC_ALL": "C", "PYTHONUTF8": "0"},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    with (out / "grades.csv").open(encoding="utf-8") as file:
        rows = {row["submission"]: row for row in csv.DictReader(file)}
    assert len(rows) == 2 and all(row["total"] == row["max"] for row in rows.values()), rows
    feedback = next(out.glob("*caf*/feedback.txt")).read_text(encoding="utf-8")
    assert "caf\\udce9 hw.ipynb" in feedback


def test_a_submission_is_read_once_within_the_limit_and_may_be_a_link(tmp_path, monkeypatch):
    """A notebook larger than READ_LIMIT gets a message saying what to do; an instructor's
    folder of links to the submissions is read through them."""
    solution = ROOT / "solutions" / "03_unbroadcasting.ipynb"
    link = tmp_path / "linked.ipynb"
    link.symlink_to(solution)
    (read,) = read_submissions([link])
    assert read.problem == "" and read.chapter == "03" and read.answered_exercises() == 2
    monkeypatch.setattr(submissions_module, "READ_LIMIT", solution.stat().st_size - 1)
    (large,) = read_submissions([solution])
    assert large.notebook is None and "Clear its outputs" in large.problem


# The notebook side of the package: modules a grading run never imports.
NOTEBOOK_SIDE = {"authoring", "notebook", "check.py", "cli.py", "__main__.py"}


def _imports_authoring(path: Path) -> bool:
    import ast

    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [("." * node.level) + (node.module or "")]
            names += [f"{names[0]}.{alias.name}" for alias in node.names]
        if any(name.startswith("autograder.authoring") or ".authoring" in name for name in names):
            return True
    return False


def test_the_reference_digest_leaves_out_only_what_the_grader_never_imports(tmp_path, monkeypatch):
    """A change to how notebooks are built (sync, translations, the install cell) keeps every
    chapter's prepared references; a change to what grades does not."""
    package = ROOT / "autograder"
    graders = [
        path
        for path in package.rglob("*.py")
        if path.relative_to(package).parts[0] not in NOTEBOOK_SIDE
    ]
    assert graders and not [p for p in graders if _imports_authoring(p)]
    assert refcache.NOT_GRADING <= NOTEBOOK_SIDE

    copy = tmp_path / "autograder"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(refcache, "PACKAGE", copy)
    before = refcache.digest()
    with (copy / "authoring" / "coursemap.py").open("a") as file:
        file.write("\n# a new way to build the install cell\n")
    assert refcache.digest() == before
    with (copy / "judging" / "engine.py").open("a") as file:
        file.write("\n# a change to the checks\n")
    assert refcache.digest() != before
