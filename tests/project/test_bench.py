"""The benchmark's pure helpers: the submissions it grades carry exactly the intended bugs,
the latency child checks the course's own answers, its grade checks catch a wrong gradebook,
and its ratios and verdicts read right.

No TensorFlow, no grading run, no check timed: the benchmark itself measures those
(`make bench`); JAX is imported only to run chapter 03's solution cells.
"""

import ast
import math
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from benchmarks import bench, latency
from coursekit.fixes import Measurement

STUB_UNBROADCAST = '''def unbroadcast(g, shape):
    """Docstring."""
    raise NotImplementedError("Exercise unbroadcast: replace this line with your code.")'''

SOLUTION_MATMUL = '''def matmul_vjp(g, a, b):
    """Docstring."""
    ### BEGIN SOLUTION
    return None
    ### END SOLUTION'''


def template() -> nbformat.NotebookNode:
    return new_notebook(
        cells=[
            new_markdown_cell("# chapter"),
            new_code_cell("import numpy as np"),
            new_code_cell(STUB_UNBROADCAST, metadata={"tags": ["exercise"]}),
            new_code_cell("check.unbroadcast(unbroadcast)"),
            new_code_cell(SOLUTION_MATMUL, metadata={"tags": ["exercise"]}),
        ]
    )


# ---------------------------------------------------------------- the latency answers


def test_the_latency_answers_are_the_solutions_and_declared_mistakes():
    from autograder.exercises import EXERCISES

    for exercise, name in latency.LATENCY_CHECKS:
        declared = EXERCISES[exercise]
        if name == latency.SOLUTION:
            assert exercise in bench.solution_cells(declared.chapter), exercise
        else:
            assert name in {m.name for m in declared.mistakes}, (exercise, name)
    assert {name == latency.SOLUTION for _, name in latency.LATENCY_CHECKS} == {True, False}
    chapters = {EXERCISES[exercise].chapter for exercise, _ in latency.LATENCY_CHECKS}
    assert {"03", "05"} <= chapters
    with pytest.raises(ValueError):  # a mistake the exercise does not declare
        latency.answer("unbroadcast", "no_such_mistake")


def test_solution_cells_hold_each_exercises_definition():
    cells = bench.solution_cells("05")
    assert {"soft_threshold", "softmax_entropy"} <= set(cells)
    assert "def softmax_entropy_bwd(" in cells["softmax_entropy"]
    assert "### BEGIN SOLUTION" in cells["soft_threshold"]


def test_chapter_03s_latency_answers_are_right_and_wrong():
    unbroadcast = latency.answer("unbroadcast", latency.SOLUTION)
    out = unbroadcast(np.ones((6, 4, 5)), (4, 1))
    assert out.shape == (4, 1)
    np.testing.assert_array_equal(out, 30.0)
    assert latency.answer("unbroadcast", "leading_only")(np.ones((6, 4, 5)), (4, 1)).shape == (4, 5)
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(3, 2, 4)), rng.normal(size=(4, 5))
    g = rng.normal(size=(3, 2, 5))
    grad_a, grad_b = latency.answer("matmul_vjp", latency.SOLUTION)(g, a, b)
    np.testing.assert_allclose(grad_b, sum(a[i].T @ g[i] for i in range(3)))
    np.testing.assert_allclose(grad_a, g @ b.T)
    with pytest.raises(ValueError):  # a.T of a batch no longer lines up with g
        latency.answer("matmul_vjp", "all_axes_transposed")(g, a, b)


# ---------------------------------------------------------------- submissions


def test_stub_plan_mixes_full_partial_and_empty_submissions():
    plans = bench.stub_plan(4, 6)
    assert plans[:5] == [set(), {0, 2}, {1, 3}, {0}, {0, 1, 2, 3}]
    assert plans[5] == set()  # then again


def test_a_variant_takes_the_stubbed_cells_from_the_learner_copy():
    solution = template()
    solution.cells[2].source = "def unbroadcast(g, shape):\n    return g\n"
    learner = template()
    names = {"unbroadcast", "matmul_vjp"}
    notebook, expected = bench.make_variant(solution, learner, {0}, names)
    assert notebook.cells[2].source == STUB_UNBROADCAST
    assert notebook.cells[4].source == SOLUTION_MATMUL
    assert solution.cells[2].source.endswith("return g\n")  # the original is not modified
    assert expected == {"unbroadcast": 0.0, "matmul_vjp": 1.0}
    nbformat.validate(notebook)


def test_a_framework_import_is_timed_as_the_child_imports_it():
    """The slow-chapter notes time a child's framework import in a fresh interpreter."""
    assert 0 < bench.import_seconds("jax") < 60


def test_a_call_to_a_parameter_is_no_dependency_on_the_exercise_of_that_name():
    """Chapter 02's find_wrong_rule calls its argument `vjp_rule`, not the exercise."""
    solution = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                "def find_rule(vjp_rule, forward):\n"
                "    check = lambda op: vjp_rule(op)\n"
                "    return [op for op in forward if check(op)]\n"
                "def uses_global():\n    return vjp_rule('add')\n"
            )
        ]
    )
    reads = bench.reads_by_function(solution)
    assert reads["find_rule"] == set()
    assert reads["uses_global"] == {"vjp_rule"}


@pytest.mark.parametrize("chapter", ["03", "07"])
def test_a_batch_of_a_real_chapter_expects_what_its_cells_hold(tmp_path, chapter):
    paths, expected = bench.write_batch(chapter, tmp_path, 5)
    assert [p.name for p in paths] == [f"sub{i:02d}.ipynb" for i in range(1, 6)]
    assert set(expected["sub01"].values()) == {1.0} and set(expected["sub05"].values()) == {0.0}
    for path in paths:
        cells = [
            c.source
            for c in nbformat.read(path, as_version=4).cells
            if "exercise" in c.metadata.get("tags", [])
        ]
        stubs = sum("NotImplementedError" in c for c in cells)
        assert stubs == sum(1 for cell in cells if "BEGIN SOLUTION" not in cell)
        assert (stubs == 0) == all(expected[path.stem].values())


# ---------------------------------------------------------------- checking the gradebook


def gradebook(expected: dict) -> dict[str, dict[str, str]]:
    """What a correct grader writes."""
    return {
        stem: {**{k: str(v) for k, v in scores.items()}, "grading_error": ""}
        for stem, scores in expected.items()
    }


EXPECTED = {
    "sub01": {"unbroadcast": 1.0, "matmul_vjp": 1.0},
    "sub02": {"unbroadcast": 0.0, "matmul_vjp": 1.0},
}


def test_a_right_gradebook_has_no_problems():
    assert bench.grade_problems(gradebook(EXPECTED), EXPECTED) == []


def test_grade_problems_catch_wrong_grading():
    grades = gradebook(EXPECTED)
    grades["sub02"].update(unbroadcast="1.0")  # an unanswered exercise got the point
    problems = "\n".join(bench.grade_problems(grades, EXPECTED))
    assert "sub02: unbroadcast scored 1.0, expected 0" in problems
    del grades["sub01"]
    grades["sub02"]["grading_error"] = "boom"
    problems = "\n".join(bench.grade_problems(grades, EXPECTED))
    assert "1 rows, expected 2" in problems and "sub01: missing" in problems
    assert "sub02: grading error boom" in problems


def test_read_grades(tmp_path):
    path = tmp_path / "grades.csv"
    path.write_text(
        "submission,file,chapter,unbroadcast,matmul_vjp,total,max,problem\n"
        "001-sub01,/in/sub01.ipynb,03,1.0,1.0,2.0,2.0,\n"
    )
    assert bench.read_grades(path)["sub01"]["total"] == "2.0"


def test_submission_seconds_are_read_from_the_graders_progress_lines():
    stderr = (
        "seed 1; sandbox: bubblewrap\n[1/2] sub01.ipynb: 2/2 (3.6 s, 4 s elapsed)\n"
        "[2/2] sub02.ipynb: 0/2 (1.25 s, 5 s elapsed)  GRADING ERROR\n"
    )
    assert bench.submission_seconds(stderr) == [3.6, 1.25]


def test_a_typical_submission_is_the_median_not_the_first_that_waited_for_a_server(
    monkeypatch, tmp_path
):
    stderr = "".join(
        f"[{i}/3] s{i}.ipynb: 1/1 ({seconds} s, 9 s elapsed)\n"
        for i, seconds in enumerate((2.8, 0.2, 0.3), 1)
    )
    monkeypatch.setattr(bench, "run_grader", lambda *args: (3.3, stderr))
    assert bench.typical_submission([tmp_path / "s.ipynb"], tmp_path, tmp_path) == 0.3


# ---------------------------------------------------------------- ratios and verdicts


def test_ratio_and_verdict():
    assert bench.ratio(1.0, 4.0) == 0.25
    assert math.isinf(bench.ratio(1.0, 0.0))
    assert bench.verdict(True) == "PASS"
    assert bench.verdict(False) == "FAIL"
    assert bench.target_line("x < 1", "0.5", True) == "target: x < 1: 0.5 -> PASS"
    assert [bench.summary_verdict(v) for v in (True, False, None)] == ["PASS", "FAIL", "not run"]


def first_calls(first_unbroadcast: float, first_matmul: float) -> dict:
    return {
        "unbroadcast": {"first": first_unbroadcast, "median": 0.001},
        "matmul_vjp": {"first": first_matmul, "median": 0.001},
    }


def test_latency_verdict_judges_every_first_call_after_warm_up():
    cold = first_calls(1.1, 3.6)
    line, passed = bench.latency_verdict(cold, first_calls(0.8, 0.7))
    assert passed
    assert line.endswith(
        "unbroadcast 0.80 s (without warm-up 1.10 s), matmul_vjp 0.70 s (without warm-up 3.60 s)"
        " -> PASS"
    )
    line, passed = bench.latency_verdict(cold, first_calls(0.8, 2.9))
    assert not passed
    assert line.endswith("-> FAIL")


def times(**changes) -> "bench.ChapterTimes":
    base = {
        "chapter": "07",
        "nbconvert": 30.0,
        "first_run": 60.0,
        "one": 6.0,
        "one_serial": 6.0,
        "one_serial_child": 4.0,
        "serial": 10.0,
        "parallel": 7.0,
        "frameworks": ("jax",),
        "typical": 4.0,
        "other_flag": "--no-fork-server",
        "other_one": 5.0,
        "other_serial": 7.5,
        "other_parallel": 4.5,
        "other_typical": 3.0,
    }
    return bench.ChapterTimes(**{**base, **changes})


def test_chapter_times_derive_marginal_startup_and_jobs_speedup():
    t = times()
    assert bench.BATCH % 2 == 0  # else --jobs 2 ends with one submission running alone
    marginal = (10 - 6) / (bench.BATCH - 1)  # the batch, less the first, per submission
    assert t.marginal == marginal
    assert t.startup == 2.0  # grading one less a typical submission of the batch
    assert t.jobs_speedup == 8.0 / 5.0  # (10 - 2) / (7 - 2)
    assert times(typical=0.0).startup == 2.0  # no batch measured: the lone child's own
    row = bench.chapter_row(t)
    assert row.startswith(
        f"| 07 | 30.0 s | 60 s | 6.0 s (--jobs 1: 6.0 s) | 0.20 PASS | "
        f"{marginal:.2f} s | {marginal / 30:.3f} PASS | x1.60"
    )
    assert "(raw x1.43, 6 submissions) FAIL | forked children" in row
    assert t.other_marginal == (7.5 - 5.0) / (bench.BATCH - 1)
    assert t.other_startup == 2.0  # the other run's own: 5 - 3
    assert t.other_jobs_speedup == 5.5 / 2.5  # (7.5 - 2) / (4.5 - 2)
    assert row.endswith(
        f"| --no-fork-server: {t.other_marginal:.2f} s, {t.other_marginal / 30:.3f}, x2.20 (6) |"
    )
    bigger = times(other_batch=60, other_serial=11.0, other_typical=4.5)
    assert bigger.other_marginal == (11.0 - 5.0) / 59  # per submission of its own batch
    assert bigger.other_jobs_speedup == 10.5 / 4.0  # its own start-up, 0.5 s
    assert bench.default_way(times(other_flag="--fork-server")) == bench.FRESH


def test_a_cheap_chapters_batch_lasts_long_enough_to_measure_jobs_2():
    assert bench.batch_size(4.0) == bench.BATCH  # a framework chapter: 24 s already
    cheap = bench.batch_size(0.3)  # a numpy chapter: 1.8 s per BATCH
    assert cheap % bench.BATCH == 0 and cheap * 0.3 >= bench.MIN_BATCH_SECONDS
    assert bench.BATCH < cheap <= bench.MAX_BATCH
    assert bench.batch_size(0.0) == bench.MAX_BATCH  # bounded, even for nothing measured
    t = times(batch=36, serial=40.0)
    assert t.marginal == (40.0 - 6.0) / 35


def test_the_table_explains_what_stays_slow_and_judges_every_chapter():
    fast = times(chapter="03", frameworks=(), serial=7.0, parallel=6.0)
    slow = times(one=12.0, one_serial=13.0)
    lines = bench.grading_table([fast, slow], {"jax": 2.5})
    assert lines[:2] == bench.TABLE_HEADER and lines[2].startswith("| 03 |")
    notes = "\n".join(lines)
    assert "ch 07: grade one 12.0 s; with --jobs 1 13.0 s = parent start-up 9.0 s" in notes
    assert "jax (a fresh `import jax` alone: 2.5 s)" in notes
    assert "ch 03: grade one" not in notes
    targets = lines[-4:]
    assert targets[0].endswith("0 wrong entries -> PASS")
    assert targets[1].endswith("worst 0.40 -> FAIL")  # 12 / 30, the slow chapter decides
    assert all("the documented command" in line for line in targets[1:])
    assert bench.grading_targets([times(wrong_grades=2)])[0].endswith("2 wrong entries -> FAIL")


def test_chapter_04_s_missed_marginal_is_set_beside_the_learner_s_own_code():
    """The bench says how much of chapter 04's marginal no grader can take off."""
    floor = {"floor": 0.9, "invokes": 1.6, "cases": {"a": 120, "b": 100}}
    missed = times(chapter="04", nbconvert=9.0, serial=16.0)  # (16 - 6) / 5 = 2 s: 0.22
    notes = "\n".join(bench.grading_table([missed], {}, {"04": floor}))
    assert "the learner's code alone" in notes and "220 hidden cases" in notes
    assert "takes 0.90 s = 0.100 of nbconvert" in notes and "1.60 s = 0.178" in notes
    met = times(chapter="04", nbconvert=90.0, serial=10.0)
    met_notes = "\n".join(bench.grading_table([met], {}, {"04": floor}))
    assert "the learner's code alone" not in met_notes


def test_the_eager_floor_runs_the_solution_on_every_hidden_case():
    from autograder.exercises import for_chapter
    from benchmarks import eager_floor

    measured = eager_floor.measure(bench.GRADE_SEED, rounds=1)
    assert list(measured["cases"]) == [e.name for e in for_chapter(eager_floor.CHAPTER)]
    assert all(count >= 100 for count in measured["cases"].values())
    assert 0 < measured["floor"] < measured["invokes"]  # the checks do more than the floor


def test_the_targets_are_judged_on_the_readme_command_alone():
    """The other way's figures are shown for comparison; they cannot pass a chapter whose
    command misses a target (once, either way could)."""
    assert not bench.grading_passed([times()])  # the command: x1.60; the other way: x2.20
    assert bench.grading_passed([times(parallel=5.0)])  # the command: x2.67
    assert not bench.grading_passed([times(parallel=5.0, one=12.0)])  # grade one 0.40
    assert not bench.grading_passed([times(parallel=5.0, serial=40.0)])  # margin 1.13 s
    assert bench.batch_targets_met(times(parallel=5.0))
    assert not bench.batch_targets_met(times())


def test_fixes_ratios_are_against_reshape():
    rows = [
        Measurement("tile", 8, 3.0, 500, 400),
        Measurement("reshape", 8, 2.0, 100, 0),
        Measurement("unbroadcast", 8, 1.0, 300, 200),
        Measurement("tile", 1, 9.0, 9, 9),
    ]
    assert bench.fixes_ratios(rows, 8) == {
        "tile": (1.5, 5.0),
        "reshape": (1.0, 1.0),
        "unbroadcast": (0.5, 3.0),
    }


# ---------------------------------------------------------------- the latency subprocess


def test_parse_marked_json_skips_library_noise():
    out = f"noise\n{bench.JSON_MARKER}" + '{"imports": 1.5}\nmore noise\n'
    assert bench.parse_marked_json(out) == {"imports": 1.5}
    with pytest.raises(ValueError):
        bench.parse_marked_json("no result here\n")


def test_jax_cache_dir_follows_xdg(tmp_path):
    assert bench.jax_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == (
        tmp_path / "autodiff-course" / "jax"
    )
    assert bench.cache_entries(tmp_path / "missing") == 0


def top_level_imports(module) -> set[str]:
    imported = set()
    for node in ast.parse(Path(module.__file__).read_text()).body:
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    return imported


def test_the_bench_module_does_not_import_a_framework_at_top_level():
    """`make bench` times TensorFlow and JAX in fresh subprocesses: the parent must stay clean."""
    assert not top_level_imports(bench) & {"tensorflow", "jax", "jaxlib"}


def test_the_latency_child_imports_only_the_standard_library_before_it_times_imports():
    imported = top_level_imports(latency) - {"__future__"}
    assert imported and imported <= sys.stdlib_module_names, imported


def test_percentile_is_nearest_rank():
    values = [0.9, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0]
    assert bench.percentile(values, 90) == 0.9
    assert bench.percentile(values, 50) == 0.5
    assert bench.percentile([3.0], 90) == 3.0
    assert bench.percentile([*values, 5.0], 90) == 1.0


def repeated(*repeats: list[float]) -> dict:
    return {"checks": [{"repeats": list(r)} for r in repeats]}


def test_repeat_verdict_pools_every_re_run_against_half_a_second():
    line, passed = bench.repeat_verdict(repeated([0.01] * 8, [0.45, 3.0]))  # one outlier
    assert passed
    assert line.endswith("0.450 s over 10 re-runs -> PASS")
    line, passed = bench.repeat_verdict(repeated([0.01] * 8, [0.6, 2.0]))
    assert not passed
    assert "0.600 s over 10 re-runs -> FAIL" in line


def test_an_exercise_that_calls_an_unanswered_one_is_expected_to_fail():
    solution = template()
    solution.cells[4].source = "def matmul_vjp(g, a, b):\n    return unbroadcast(g, a.shape)\n"
    _, expected = bench.make_variant(solution, template(), {0}, {"unbroadcast", "matmul_vjp"})
    assert expected == {"unbroadcast": 0.0, "matmul_vjp": 0.0}
    _, expected = bench.make_variant(solution, template(), {1}, {"unbroadcast", "matmul_vjp"})
    assert expected == {"unbroadcast": 1.0, "matmul_vjp": 0.0}


def test_a_declared_dependency_that_is_unanswered_costs_nothing():
    """matmul_vjp is graded with a correct unbroadcast in place of the learner's stub."""
    solution = template()
    solution.cells[4].source = "def matmul_vjp(g, a, b):\n    return unbroadcast(g, a.shape)\n"
    _, expected = bench.make_variant(
        solution,
        template(),
        {0},
        {"unbroadcast", "matmul_vjp"},
        replaced={"matmul_vjp": ("unbroadcast",)},
    )
    assert expected == {"unbroadcast": 0.0, "matmul_vjp": 1.0}


def test_chapter_02s_engine_exercises_are_scored_through_the_learners_namespace(tmp_path):
    """grad and hessian_vector_product run the notebook's own engine, which their invokes
    look up by name (namespace_reads): unanswered, they score 0; answered, 1."""
    _, expected = bench.write_batch("02", tmp_path, 5)
    assert set(expected["sub01"].values()) == {1.0}
    assert expected["sub05"]["grad"] == expected["sub05"]["hessian_vector_product"] == 0.0
    assert expected["sub05"]["vjp_add"] == 0.0


def test_chapter_02s_stubs_inside_cells_count_as_unanswered(tmp_path):
    """Chapter 02's learner copy leaves more than its exercises as stubs: its Tensor's
    methods, `record`, the operations and `backward`. A stubbed Tensor (the first exercise
    cell) costs the exercises whose invoke makes Tensors (grad, hessian_vector_product), not
    the rules, which are called with arrays; a stubbed operation costs every rule that calls
    it (through unbroadcast), a stubbed backward costs grad. The gradebook of `grade
    --seed 1234` on these five submissions gave exactly these scores."""
    _, expected = bench.write_batch("02", tmp_path, 5)
    first_only = expected["sub04"]  # the Tensor cell stubbed
    assert first_only["grad"] == first_only["hessian_vector_product"] == 0.0
    assert {n for n, score in first_only.items() if score == 0.0} == {
        "grad",
        "hessian_vector_product",
    }
    every_other = expected["sub02"]  # Tensor, the operations, backward stubbed (and more)
    assert every_other["grad"] == every_other["vjp_div"] == every_other["vjp_sum"] == 0.0
    assert every_other["vjp_log"] == every_other["directional_derivative"] == 1.0
    the_others = expected["sub03"]  # record and apply, unbroadcast stubbed (and more)
    assert the_others["vjp_add"] == the_others["vjp_exp"] == 0.0
    assert the_others["vjp_neg"] == the_others["find_wrong_rule"] == 1.0


def test_a_stubbed_class_is_reached_through_an_invokes_names_only():
    reads = {"rule": {"apply"}, "apply": {"record"}, "record": {"Tensor"}, "grad": set()}
    classes = {"Tensor"}
    assert not bench.depends_on("rule", set(), reads, (), classes)
    assert bench.depends_on("grad", set(), reads, ("Tensor",), classes)
    assert bench.depends_on("rule", {"record"}, reads)  # a stubbed function is reached by calls
    assert bench.stubs(
        "class T:\n    def m(self):\n        raise NotImplementedError('x')\n\n"
        "def f():\n    raise NotImplementedError\n\ndef g():\n    return 1\n"
    ) == ({"f"}, {"T"})


def engine_run(first: float, repeats: list[float], earlier: bool = True) -> dict:
    run = {"imports": 12.0, "first": first, "first_cpu": first / 2, "cases": 32}
    run |= {"repeats": repeats, "load_average": 1.0}
    return run | ({"earlier_check": {"exercise": "vjp_neg", "seconds": 0.9}} if earlier else {})


def test_chapter_02s_check_cell_is_judged_on_its_first_run_after_the_cells_above_it():
    """The first run after an earlier check cell decides (as running the notebook from the
    top has it); the first run with nothing before it is shown, not judged; every re-run
    must stay under half a second."""
    alone, after = engine_run(2.6, [0.1, 0.12], earlier=False), engine_run(1.5, [0.09, 0.11])
    lines, passed = bench.engine_check_lines(alone, after)
    assert passed
    text = "\n".join(lines)
    assert "first run after an earlier check cell (check.vjp_neg: 0.90 s): 1.50 s" in text
    assert "TensorFlow, JAX and Hypothesis not yet used): 2.60 s" in text
    assert lines[-2].endswith("1.50 s -> PASS") and lines[-1].endswith("re-runs -> PASS")
    _, passed = bench.engine_check_lines(alone, engine_run(2.1, [0.09]))
    assert not passed
    lines, passed = bench.engine_check_lines(engine_run(1.0, [0.6], earlier=False), after)
    assert not passed and lines[-1].endswith("0.600 s over 3 re-runs -> FAIL")


@pytest.mark.slow
def test_the_engine_check_child_times_the_worked_engines_check_cell():
    """What section 1b reads: the solution notebook's engine, defined as a kernel defines
    it, passes check.grad, after an earlier check cell, with every time measured."""
    from benchmarks import engine_check

    result = engine_check.notebook_check(repeats=1, frameworks_used=False, after_check=True)
    assert result["earlier_check"]["exercise"] == engine_check.EARLIER_CHECK
    assert result["cases"] >= 25 and len(result["repeats"]) == 1
    assert result["first"] > 0 and result["first_cpu"] > 0


def test_latency_only_and_grading_only_exclude_each_other():
    assert bench.arguments(["--latency-only"]).latency_only
    with pytest.raises(SystemExit):
        bench.arguments(["--latency-only", "--grading-only"])
    assert bench.arguments(["--engine-check-only"]).engine_check_only
    with pytest.raises(SystemExit):
        bench.arguments(["--engine-check-only", "--grading-only"])


def test_side_by_side_measures_alternate_and_keep_each_ones_fastest(monkeypatch):
    monkeypatch.setattr(bench, "BATCH_RUNS", 3)
    calls: list[str] = []
    nbconvert_times, grader_times = iter([9.0, 8.0, 12.0]), iter([2.5, 2.7, 2.4])

    def nbconvert() -> float:
        calls.append("nbconvert")
        return next(nbconvert_times)

    def grade_one() -> float:
        calls.append("grade one")
        return next(grader_times)

    assert bench.fastest_side_by_side([nbconvert, grade_one]) == [8.0, 2.4]
    assert calls == ["nbconvert", "grade one"] * 3


def test_the_grader_memory_cases_are_what_they_claim(tmp_path):
    """Section 4's hostile files must reach the limits they stand for: values past
    VALUE_LIMIT but under READ_LIMIT, nesting past the parser's recursion limit, a cell
    larger than what the grader parses."""
    from autograder.grading import slicing, submissions
    from benchmarks import grader_memory

    paths = {}
    for name in ("many_values", "deep_nesting", "large_cell"):
        paths[name] = tmp_path / f"{name}.ipynb"
        getattr(grader_memory, name)(paths[name])
    data = paths["many_values"].read_bytes()
    assert len(data) < submissions.READ_LIMIT
    assert submissions.json_values_at_most(data) > submissions.VALUE_LIMIT
    (deep,) = submissions.read_submissions([paths["deep_nesting"]])
    assert "nested too deeply" in deep.problem
    (large,) = submissions.read_submissions([paths["large_cell"]])
    assert max(len(cell.source) for cell in large.notebook.cells) > slicing.SLICED_LIMIT


# ---------------------------------------------------------------- first check cells (1c)


def test_first_checks_finds_the_check_cells_not_hints_or_demos():
    from benchmarks import first_checks

    notebook = new_notebook(
        cells=[
            new_code_cell("from autograder import check"),
            new_code_cell("check.hint('unbroadcast')"),
            new_code_cell("check.unbroadcast(unbroadcast)"),
            new_code_cell("for f in fs:\n    check.unbroadcast(f)"),
            new_markdown_cell("check.matmul_vjp(matmul_vjp)"),
            new_code_cell("# a comment\ncheck.matmul_vjp(matmul_vjp)\ncheck.reset('x')"),
            new_code_cell('prediction = "a"\ncheck.predict("ch03_guess", prediction)'),
            new_code_cell("shown = demo()\ncheck.reveal('ch03_guess', shown)"),
        ]
    )
    assert first_checks.check_cells(notebook) == {2: "unbroadcast", 5: "matmul_vjp"}


def test_first_check_lines_judge_the_slowest_cell_of_all_chapters():
    results = {
        "03": [{"cell": 4, "exercise": "unbroadcast", "seconds": 0.4}],
        "05": [
            {"cell": 21, "exercise": "soft_threshold", "seconds": 1.3},
            {"cell": 41, "exercise": "softmax_entropy", "seconds": 0.2},
        ],
    }
    lines, passed = bench.first_check_lines(results)
    assert not passed
    assert "chapter 05 check.soft_threshold 1.30 s" in lines[-1] and "FAIL" in lines[-1]
    results["05"][0]["seconds"] = 0.9
    lines, passed = bench.first_check_lines(results)
    assert passed and "PASS" in lines[-1]
