"""The benchmark's pure helpers: the submissions it grades carry exactly the intended bugs,
its grade checks catch a wrong gradebook, and its ratios and verdicts read right.

No TensorFlow, no grading run: the benchmark itself measures those (`make bench`).
"""

import ast
import math
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from benchmarks import bench
from coursekit.fixes import Measurement

STUB_UNBROADCAST = '''def unbroadcast(grad, shape):
    """Docstring."""
    raise NotImplementedError("Exercise unbroadcast: replace this line with your code.")'''

SOLUTION_MATMUL = '''def matmul_vjp(g, a, b):
    """Docstring."""
    ### BEGIN SOLUTION
    return None
    ### END SOLUTION'''


def defined(source: str) -> dict:
    namespace = {"np": np}
    exec(source, namespace)
    return namespace


def template() -> nbformat.NotebookNode:
    return new_notebook(cells=[
        new_markdown_cell("# chapter"),
        new_code_cell("import numpy as np"),
        new_code_cell(STUB_UNBROADCAST, metadata={"tags": ["exercise"]}),
        new_code_cell("check.unbroadcast(unbroadcast)"),
        new_code_cell(SOLUTION_MATMUL, metadata={"tags": ["exercise"]}),
    ])


# ---------------------------------------------------------------- the planted bodies


def test_correct_unbroadcast_sums_back_to_shape():
    fn = defined(bench.function_source("unbroadcast", "correct"))["unbroadcast"]
    out = fn(np.ones((6, 4, 5)), (4, 1))
    assert out.shape == (4, 1)
    np.testing.assert_array_equal(out, 30.0)
    assert fn(np.ones((2, 3), np.float32), ()).shape == ()


@pytest.mark.parametrize(("variant", "wrong_shape"), [("no-keepdims", (4,)),
                                                      ("leading-only", (4, 5))])
def test_buggy_unbroadcast_returns_the_wrong_shape(variant, wrong_shape):
    fn = defined(bench.function_source("unbroadcast", variant))["unbroadcast"]
    assert fn(np.ones((6, 4, 5)), (4, 1)).shape == wrong_shape


def test_matmul_vjp_variants_differ_only_on_batches():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(3, 2, 4)), rng.normal(size=(4, 5))
    g = rng.normal(size=(3, 2, 5))
    ns = defined(bench.function_source("unbroadcast", "correct")
                 + bench.function_source("matmul_vjp", "correct"))
    grad_a, grad_b = ns["matmul_vjp"](g, a, b)
    np.testing.assert_allclose(grad_b, sum(a[i].T @ g[i] for i in range(3)))
    np.testing.assert_allclose(grad_a, g @ b.T)
    buggy = defined(bench.function_source("unbroadcast", "correct")
                    + bench.function_source("matmul_vjp", "dot-T"))["matmul_vjp"]
    with pytest.raises(ValueError):  # a.T of a batch no longer lines up with g
        buggy(g, a, b)
    two_d = [rng.normal(size=s) for s in ((2, 5), (2, 4), (4, 5))]
    for good, bad in zip(ns["matmul_vjp"](*two_d), buggy(*two_d), strict=True):
        np.testing.assert_allclose(bad, good)  # the bug hides on plain matrices


# ---------------------------------------------------------------- submissions


def test_bugs_for_plants_every_fourth_and_fifth():
    assert bench.bugs_for(1) == {"unbroadcast": "correct", "matmul_vjp": "correct"}
    assert bench.bugs_for(4) == {"unbroadcast": "no-keepdims", "matmul_vjp": "correct"}
    assert bench.bugs_for(5) == {"unbroadcast": "correct", "matmul_vjp": "dot-T"}
    assert bench.bugs_for(20) == {"unbroadcast": "no-keepdims", "matmul_vjp": "dot-T"}
    planted = [bench.bugs_for(i) for i in range(1, 41)]
    assert sum(p["unbroadcast"] != "correct" for p in planted) == 10
    assert sum(p["matmul_vjp"] != "correct" for p in planted) == 8


def test_fill_replaces_a_learner_stub_and_keeps_the_docstring():
    source = bench.fill_exercise_cell(STUB_UNBROADCAST, bench.bugs_for(1))
    assert "NotImplementedError" not in source
    assert '"""Docstring."""' in source
    assert "keepdims=True" in source
    fn = defined(source)["unbroadcast"]
    assert fn(np.ones((6, 4, 5)), (4, 1)).shape == (4, 1)


def test_fill_stubs_a_solution_copy_first():
    source = bench.fill_exercise_cell(SOLUTION_MATMUL, bench.bugs_for(5))
    assert "BEGIN SOLUTION" not in source
    assert "return None" not in source
    assert "b.T" in source


def test_fill_refuses_a_stub_it_cannot_answer():
    stub = 'def other(x):\n    raise NotImplementedError("Exercise other")'
    with pytest.raises(ValueError, match="other"):
        bench.fill_exercise_cell(stub, bench.bugs_for(1))


@pytest.mark.parametrize("index", [1, 4, 5, 20])
def test_make_submission_answers_exercise_cells_only(index):
    original = template()
    notebook = bench.make_submission(original, index)
    assert original.cells[2].source == STUB_UNBROADCAST  # the template is not modified
    assert notebook.cells[1].source == "import numpy as np"
    assert notebook.cells[3].source == "check.unbroadcast(unbroadcast)"
    program = notebook.cells[2].source + "\n" + notebook.cells[4].source
    assert f"# submission {index:02d}" in notebook.cells[2].source
    fn = defined(program)["unbroadcast"]
    shape = fn(np.ones((6, 4, 5)), (4, 1)).shape
    assert shape == ((4,) if index % 4 == 0 else (4, 1))
    assert ("b.T" in program) == (index % 5 == 0)
    nbformat.validate(notebook)


def test_the_chapter_template_gets_both_exercises_answered():
    path = bench.template_path()
    notebook = bench.make_submission(nbformat.read(path, as_version=4), 20)
    cells = [c.source for c in notebook.cells if "exercise" in c.metadata.get("tags", [])]
    program = "\n".join(cells)
    assert "NotImplementedError" not in program
    assert "BEGIN SOLUTION" not in program
    names = defined(program)
    assert {"unbroadcast", "matmul_vjp"} <= set(names)


def test_write_submissions_numbers_files(tmp_path):
    paths = bench.write_submissions(template(), tmp_path, 3)
    assert [p.name for p in paths] == ["sub01.ipynb", "sub02.ipynb", "sub03.ipynb"]
    assert "# submission 03" in nbformat.read(paths[2], as_version=4).cells[2].source


# ---------------------------------------------------------------- checking the gradebook


def gradebook(count: int) -> dict[str, dict[str, str]]:
    """What a correct grader writes for the planted bugs."""
    rows = {}
    for index in range(1, count + 1):
        bugs = bench.bugs_for(index)
        unb = 0.0 if bugs["unbroadcast"] != "correct" else 1.0
        # matmul_vjp is graded with a correct unbroadcast: a wrong one costs only its own mark
        mat = 0.0 if bugs["matmul_vjp"] != "correct" else 1.0
        rows[f"sub{index:02d}"] = {"submission": f"sub{index:02d}", "unbroadcast": str(unb),
                                   "matmul_vjp": str(mat), "total": str(unb + mat),
                                   "max": "2.0", "problem": ""}
    return rows


def test_a_right_gradebook_has_no_problems():
    assert bench.grade_problems(gradebook(40), 40) == []


def test_grade_problems_catch_wrong_grading():
    grades = gradebook(40)
    grades["sub04"].update(unbroadcast="1.0", total="2.0")  # a planted bug got full marks
    grades["sub01"].update(matmul_vjp="0.0", total="1.0")  # a correct one lost marks
    del grades["sub39"]
    problems = "\n".join(bench.grade_problems(grades, 40))
    assert "39 rows" in problems
    assert "sub39: missing" in problems
    assert "sub04: buggy unbroadcast" in problems
    assert "sub01: correct submission got 1.0/2.0" in problems


def test_read_grades(tmp_path):
    path = tmp_path / "grades.csv"
    path.write_text("submission,file,chapter,unbroadcast,matmul_vjp,total,max,problem\n"
                    "001-sub01,/in/sub01.ipynb,03,1.0,1.0,2.0,2.0,\n")
    assert bench.read_grades(path)["sub01"]["total"] == "2.0"


# ---------------------------------------------------------------- ratios and verdicts


def test_ratio_and_verdict():
    assert bench.ratio(1.0, 4.0) == 0.25
    assert math.isinf(bench.ratio(1.0, 0.0))
    assert bench.verdict(True) == "PASS"
    assert bench.verdict(False) == "FAIL"
    assert bench.target_line("x < 1", "0.5", True) == "target: x < 1: 0.5 -> PASS"


def latency(first_unbroadcast: float, first_matmul: float) -> dict:
    return {"unbroadcast": {"first": first_unbroadcast, "median": 0.001},
            "matmul_vjp": {"first": first_matmul, "median": 0.001}}


def test_latency_verdict_judges_every_first_call_after_warm_up():
    cold = latency(1.1, 3.6)
    line, passed = bench.latency_verdict(cold, latency(0.8, 0.7))
    assert passed
    assert line.endswith(
        "unbroadcast 0.80 s (without warm-up 1.10 s), matmul_vjp 0.70 s (without warm-up 3.60 s)"
        " -> PASS"
    )
    line, passed = bench.latency_verdict(cold, latency(0.8, 2.9))
    assert not passed
    assert line.endswith("-> FAIL")


def test_grading_summary_lines():
    lines = bench.grading_summary({1: 20.0, 20: 40.0, 40: 59.0}, nbconvert=30.0)
    text = "\n".join(lines)
    assert "batch of 40:    59.0 s total,   1.48 s per graded submission" in text
    assert "growth time40 / time20: 1.48" in text
    assert "(t40 - t1) / 39: 1.00 s" in text
    assert "= 0.049" in text  # 1.475 / 30
    assert "marginal ratio: 1.00 s / 30.0 s = 0.033" in text
    assert lines[-1].endswith("0.049 -> PASS")
    slow = bench.grading_summary({1: 20.0, 20: 60.0, 40: 200.0}, nbconvert=30.0)
    assert slow[-1].endswith("0.167 -> FAIL")


def test_fixes_ratios_are_against_reshape():
    rows = [Measurement("tile", 8, 3.0, 500, 400), Measurement("reshape", 8, 2.0, 100, 0),
            Measurement("unbroadcast", 8, 1.0, 300, 200), Measurement("tile", 1, 9.0, 9, 9)]
    assert bench.fixes_ratios(rows, 8) == {"tile": (1.5, 5.0), "reshape": (1.0, 1.0),
                                           "unbroadcast": (0.5, 3.0)}


# ---------------------------------------------------------------- the latency subprocess


def test_parse_marked_json_skips_library_noise():
    out = f"noise\n{bench.JSON_MARKER}" + '{"imports": 1.5}\nmore noise\n'
    assert bench.parse_marked_json(out) == {"imports": 1.5}
    with pytest.raises(ValueError):
        bench.parse_marked_json("no result here\n")


def test_latency_script_is_valid_python_with_all_three_functions():
    script = bench.latency_script(repeats=3)
    compile(script, "latency", "exec")
    for name in ("def unbroadcast(", "def matmul_vjp(", "def unbroadcast_leading_only("):
        assert name in script
    assert "range(3)" in script


def test_jax_cache_dir_follows_xdg(tmp_path):
    assert bench.jax_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == (
        tmp_path / "autodiff-course" / "jax")
    assert bench.cache_entries(tmp_path / "missing") == 0


def test_the_bench_module_does_not_import_a_framework_at_top_level():
    """`make bench` times TensorFlow and JAX in fresh subprocesses: the parent must stay clean."""
    tree = ast.parse(Path(bench.__file__).read_text())
    imported = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert not imported & {"tensorflow", "jax", "jaxlib"}


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


def test_latency_script_defines_every_checked_function_wrong_ones_and_chapter_05():
    script = bench.latency_script(repeats=2)
    for _, function, _ in bench.LATENCY_CHECKS:
        assert f"{function} = " in script or f"def {function}(" in script, function
    assert {right for *_, right in bench.LATENCY_CHECKS} == {True, False}
    from autograder.exercises import EXERCISES

    chapters = {EXERCISES[exercise].chapter for exercise, *_ in bench.LATENCY_CHECKS}
    assert {"03", "05"} <= chapters
