"""What the grader's child runs of a notebook: what the exercises need, nothing of the demos."""

from __future__ import annotations

import ast
import threading

import pytest

from autograder.grading import slicing
from autograder.grading.slicing import needed_cells

CELLS = [
    "import numpy as np\nimport tensorflow as tf\nrng = np.random.default_rng(0)",
    "SCALE = 2.0\nslow_demo = sum(range(10**9))\nprint(slow_demo)",
    "def helper(v):\n    tape = v * SCALE\n    return tape",
    "def unbroadcast(g, shape):\n    x = helper(g)\n    return np.sum(x, axis=0)",
    "with tf.GradientTape() as tape:\n    y = tape.watch(1)\nprint(tape)",
    "np.allclose = lambda *a, **k: True\njax.config.update('jax_enable_x64', True)",
    "table = {}\ntable['k'] = 1\nlate = helper_after(1)",
    "def helper_after(v):\n    return v",
    "def broken(:\n",
]


def sliced(names=("unbroadcast",), exercises=frozenset({4})) -> list[str]:
    return needed_cells(CELLS, set(exercises), list(names))


def test_exercise_cells_and_what_they_read_are_kept_demos_are_not():
    out = sliced()
    assert out[3] == CELLS[3]  # the exercise cell, whole
    assert out[2] == CELLS[2]  # its helper
    assert out[1].split("\n") == ["SCALE = 2.0", "", ""]  # the constant, not the slow demo
    assert "import numpy as np" in out[0] and "tf" not in out[0]  # tf is not read
    assert "rng" not in out[0]
    assert out[4].strip() == ""  # `tape` inside helper is a local, not this cell's tape


def test_line_numbers_and_cell_count_are_kept():
    out = sliced()
    assert len(out) == len(CELLS)
    assert [a.count("\n") for a in out] == [c.count("\n") for c in CELLS]


def test_changes_to_what_is_read_and_configuration_are_kept():
    out = sliced()
    assert "np.allclose = " in out[5]  # a patched numpy reaches the exercise, as in a kernel
    assert "jax.config.update" in out[5]


def test_names_bound_later_and_writes_into_needed_objects_are_found():
    program = "def unbroadcast(g, shape):\n    return table['k'] + late"
    out = needed_cells([*CELLS[:8], program], {9}, ["unbroadcast"])
    assert "table['k'] = 1" in out[6] and "late = helper_after(1)" in out[6]
    assert out[7] == CELLS[7]  # helper_after, defined after the cell that calls it


def test_a_string_method_in_a_demo_keeps_nothing_for_an_answer_that_reads_str():
    """Before, `str(err).split(...)` counted as a change to `str`: an answer that reads `str`
    kept the demo, the imports it reads with it, and a TensorFlow child refused `import jax`
    in the setup cell before `import tensorflow as tf` (a right answer of chapter 04 scored 0)."""
    cells = [
        "import jax\nimport tensorflow as tf",
        "try:\n    jax.numpy.zeros(1)\nexcept TypeError as err:\n    print(str(err).split(',')[0])",
        "def answer(v):\n    return tf.identity(v) if not isinstance(v, str) else v",
    ]
    out = needed_cells(cells, {3}, ["answer"])
    assert out[0].split("\n") == ["", "import tensorflow as tf"] and out[1].strip() == ""
    rebinds = ["import jax", "str = MyString\nstr(1).register(jax)", cells[2]]
    assert "register" in needed_cells(rebinds, {3}, ["answer"])[1]  # the notebook's own str


def test_a_cell_that_does_not_parse_is_kept_whole_so_its_error_is_reported():
    assert sliced()[8] == CELLS[8]


def test_the_sliced_cells_still_define_a_working_exercise():
    namespace: dict = {"__name__": "__main__"}
    cells = sliced()
    for index, cell in enumerate(cells[:4]):
        exec(
            compile(cell.replace("import tensorflow as tf", ""), f"<cell {index}>", "exec"),
            namespace,
        )
    import numpy as np

    assert namespace["unbroadcast"](np.ones((3, 2)), (2,)).tolist() == [6.0, 6.0]
    assert "slow_demo" not in namespace


def test_names_the_chapter_02_invokes_look_up_by_string_are_declared():
    from autograder.exercises import EXERCISES
    from autograder.harness import programs

    wanted = {"Tensor", "backward", *programs.FUNCTIONS}
    # grad's invoke runs the random programs with the learner's own Tensor and functions
    assert wanted <= set(EXERCISES["grad"].namespace_reads)
    declared = set(EXERCISES["grad"].namespace_reads)
    kept = needed_cells(["def exp(x):\n    return x\n\nprint(exp(1))"], set(), ["grad", *declared])
    assert kept[0].startswith("def exp(x):") and "print" not in kept[0]


@pytest.mark.parametrize(
    "hostile",
    [
        "x" + ".a" * 100_000 + " = 1",  # the parser's recursion limit
        "y = " + "-" * 100_000 + "1",  # MemoryError while parsing
        "def f():\n    return w" + ".a" * 50_000,
        "z = w" + ".a" * 1500 + "\nq = z",  # parses, but too deep for the analysis
    ],
)
def test_a_cell_that_exhausts_the_parser_costs_time_never_a_grading_error(hostile):
    """Such a cell is the submission's problem: it is kept (the child meets the same error
    and reports it), and the exercise cell is still there."""
    exercise = "def unbroadcast(g, shape):\n    return z\n"
    kept = needed_cells([hostile, exercise], {2}, ["unbroadcast"])
    assert kept == [hostile, exercise]


def test_parsing_is_serialized_for_the_grading_threads():
    """Every ast.parse in the grader's process, the standard library's included (traceback
    formatting places its ^^^ markers with it), waits for PARSING: CPython 3.11 raises
    "SystemError: AST constructor recursion depth mismatch" when two threads build an AST
    at once, which made `grade --jobs 2` fail on hostile submissions."""
    slicing.serialize_parsing()
    slicing.serialize_parsing()  # idempotent: one lock, not a lock around a lock
    assert ast.parse.serialized and ast.parse.__wrapped__.__module__ == "ast"
    parsed = threading.Event()

    def parse_in_another_thread():
        ast.parse("x = 1")
        parsed.set()

    with slicing.PARSING:
        thread = threading.Thread(target=parse_in_another_thread)
        thread.start()
        assert not parsed.wait(0.5)  # blocked while this thread builds an AST
    assert parsed.wait(5)
    thread.join()


def test_a_large_cell_costs_the_grader_no_more_than_a_few_megabytes():
    """A 5 MB cell of one-line statements ("a=1\\n" * 1,000,000) made the grader peak at
    3.5 GB (every cell parsed, up to 4096 trees cached): code beyond SLICED_LIMIT is not
    parsed here, the child runs it whole, and what is cached holds no tree."""
    import tracemalloc

    large = "a = 1\n" * 1_000_000
    cells = [CELLS[0], large, CELLS[3]]
    slicing._analysed_cached.cache_clear()
    tracemalloc.start()
    try:
        out = needed_cells(cells, {3}, ["unbroadcast"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out == cells  # run whole
    assert peak < 20 * 1024**2, peak
    # Under the limit, many distinct large cells are analysed but not cached.
    pieces = ["b = 2\n" * 3000 + f"c{i} = {i}\n" for i in range(20)]
    needed_cells(pieces, {1}, ["unbroadcast"])
    assert slicing._analysed_cached.cache_info().currsize == 0
