"""Fixture submissions for the grader: good, buggy and hostile chapter-03 notebooks.

Each is the learner copy from course/ with its exercise cells filled in (and sometimes extra
cells), so the fixtures follow the course as it changes. `write_all(folder)` writes them.
"""

from __future__ import annotations

import copy
import inspect
from pathlib import Path

import nbformat

from autograder.exercises.ch03_unbroadcasting import UNBROADCAST
from autograder.judging.exercise import Exercise

ROOT = Path(__file__).resolve().parents[1]
LEARNER_COPY = ROOT / "course" / "03_unbroadcasting.ipynb"
CHINESE_COPY = ROOT / "course" / "zh-CN" / "03_unbroadcasting.ipynb"
# The Chinese learner copy, answered right, wrong (a declared mistake) and not at all: the
# grader answers each in Chinese, with the scores and counterexample of its English twin.
CHINESE_VARIANTS = {"zh_good": "good", "zh_forgets_keepdims": "forgets_keepdims", "zh_blank": None}

GOOD_UNBROADCAST = """
def unbroadcast(g, shape):
    leading = g.ndim - len(shape)
    summed = g.sum(axis=tuple(range(leading)))
    ones = tuple(i for i, n in enumerate(shape) if n == 1 and summed.shape[i] != 1)
    return summed.sum(axis=ones, keepdims=True)
"""

# Self-contained (does not call unbroadcast), so one broken exercise cannot sink the other.
GOOD_MATMUL = """
def matmul_vjp(g, a, b):
    def reduce_to(t, shape):
        t = t.sum(axis=tuple(range(t.ndim - len(shape))))
        ones = tuple(i for i, n in enumerate(shape) if n == 1 and t.shape[i] != 1)
        return t.sum(axis=ones, keepdims=True)
    return (reduce_to(g @ np.swapaxes(b, -1, -2), a.shape),
            reduce_to(np.swapaxes(a, -1, -2) @ g, b.shape))
"""

# As the exercise asks: it calls the learner's unbroadcast, so it is graded with a correct one.
MATMUL_CALLING_UNBROADCAST = """
def matmul_vjp(g, a, b):
    return (unbroadcast(g @ np.swapaxes(b, -1, -2), a.shape),
            unbroadcast(np.swapaxes(a, -1, -2) @ g, b.shape))
"""

# HIPS autograd's published matmul VJP (autograd/numpy/numpy_vjps.py, matmul_adjoint_0/1),
# with its own helper `unbroadcast(x, target_meta)`: a right matmul_vjp whose helper shares
# the unbroadcast exercise's name and does something else. It failed matmul_vjp ("grad_a has
# shape (1, 1, 1)") while the check put the course's unbroadcast(g, shape) in its place.
HIPS_UNBROADCAST = """
def unbroadcast(x, target_meta, broadcast_idx=0):
    target_shape, target_ndim, dtype, target_iscomplex = target_meta
    while np.ndim(x) > target_ndim:
        x = np.sum(x, axis=broadcast_idx)
    for axis, size in enumerate(target_shape):
        if size == 1:
            x = np.sum(x, axis=axis, keepdims=True)
    if np.iscomplexobj(x) and not target_iscomplex:
        x = np.real(x)
    return x
"""
HIPS_MATMUL = """
def metadata(A):
    return np.shape(A), np.ndim(A), np.result_type(A), np.iscomplexobj(A)

def matmul_adjoint_0(B, G, A_meta, B_ndim):
    if np.ndim(G) == 0:
        return unbroadcast(G * B, A_meta)
    _, A_ndim, _, _ = A_meta
    if A_ndim == 1:
        G = np.expand_dims(G, np.ndim(G) - 1)
    if B_ndim == 1:
        B = np.expand_dims(B, 0)
        G = np.expand_dims(G, np.ndim(G))
    else:
        B = np.swapaxes(B, B_ndim - 2, B_ndim - 1)
    result = np.matmul(G, B)
    return unbroadcast(result, A_meta)

def matmul_adjoint_1(A, G, A_ndim, B_meta):
    if np.ndim(G) == 0:
        return unbroadcast(G * A, B_meta)
    _, B_ndim, _, _ = B_meta
    B_is_vec = B_ndim == 1
    if B_is_vec:
        G = np.expand_dims(G, np.ndim(G))
    if A_ndim == 1:
        A = np.expand_dims(A, 1)
        G = np.expand_dims(G, np.ndim(G) - 1)
    else:
        A = np.swapaxes(A, A_ndim - 2, A_ndim - 1)
    result = np.matmul(A, G)
    if B_is_vec:
        result = np.squeeze(result, np.ndim(G) - 1)
    return unbroadcast(result, B_meta)

def matmul_vjp(g, a, b):
    return (matmul_adjoint_0(b, g, metadata(a), np.ndim(b)),
            matmul_adjoint_1(a, g, np.ndim(a), metadata(b)))
"""


def declared_mistake(exercise: Exercise, name: str) -> str:
    """A mistake the exercise declares, as the source of the learner's cell: the wrong
    answers the grader is tested with are the ones its hints are written for."""
    answer = next(m.answer for m in exercise.mistakes if m.name == name)
    borrowed = sorted(n for n in answer.__code__.co_names if n in answer.__globals__ and n != "np")
    if borrowed:  # a learner's cell has its own code only: the graded child would NameError
        raise ValueError(
            f"{exercise.name}'s mistake {name} uses {borrowed} from its module; "
            "write it self-contained, as a learner's cell is."
        )
    return inspect.getsource(answer).replace(f"def {answer.__name__}(", f"def {exercise.name}(", 1)


def bad_unbroadcast(body: str) -> str:
    return f"def unbroadcast(g, shape):\n{body}\n"


# name -> (unbroadcast cell, matmul cell, extra cells put before the exercises, expected scores)
VARIANTS: dict[str, tuple[str, str, list[str], tuple[float, float]]] = {
    "good": (GOOD_UNBROADCAST, GOOD_MATMUL, [], (1, 1)),
    "forgets_keepdims": (declared_mistake(UNBROADCAST, "no_keepdims"), GOOD_MATMUL, [], (0, 1)),
    "infinite_loop": (bad_unbroadcast("    while True:\n        pass"), GOOD_MATMUL, [], (0, 1)),
    "exit_at_import": (GOOD_UNBROADCAST, GOOD_MATMUL, ["import sys\nsys.exit(1)"], (1, 1)),
    "os_exit_in_function": (
        bad_unbroadcast("    import os\n    os._exit(3)"),
        GOOD_MATMUL,
        [],
        (0, 1),
    ),
    "keyboard_interrupt": (bad_unbroadcast("    raise KeyboardInterrupt"), GOOD_MATMUL, [], (0, 1)),
    "memory_grab": (
        bad_unbroadcast("    hoard = np.ones(10**10)\n    return hoard"),
        GOOD_MATMUL,
        [],
        (0, 1),
    ),
    "print_flood": (
        GOOD_UNBROADCAST.replace("    leading =", "    print('x' * 1_000_000)\n    leading ="),
        GOOD_MATMUL,
        [],
        (1, 1),
    ),
    "patched_numpy": (
        bad_unbroadcast("    return g"),
        GOOD_MATMUL,
        [
            "np.allclose = lambda *a, **k: True\n"
            "np.testing.assert_allclose = lambda *a, **k: None\n"
            "np.array_equal = lambda *a, **k: True\n"
            "np.isclose = lambda *a, **k: True"
        ],
        (0, 1),
    ),
    "syntax_error": ("def unbroadcast(g, shape)\n    return g\n", GOOD_MATMUL, [], (0, 1)),
    "renamed_function": (
        GOOD_UNBROADCAST.replace("def unbroadcast", "def unbroadcast_v2"),
        GOOD_MATMUL,
        [],
        (0, 1),
    ),
    "returns_none": (bad_unbroadcast("    return None"), GOOD_MATMUL, [], (0, 1)),
    "returns_nan": (
        bad_unbroadcast("    out = np.full(shape, np.nan, dtype=g.dtype)\n    return out"),
        GOOD_MATMUL,
        [],
        (0, 1),
    ),
    "matmul_calls_a_wrong_unbroadcast": (
        bad_unbroadcast("    return g"),
        MATMUL_CALLING_UNBROADCAST,
        [],
        (0, 1),
    ),
    "own_helper_named_unbroadcast": (HIPS_UNBROADCAST, HIPS_MATMUL, [], (0, 1)),
    "uses_tensorflow": (
        bad_unbroadcast("    import tensorflow as tf\n    return tf.reduce_sum(g).numpy()"),
        GOOD_MATMUL,
        [],
        (0, 1),
    ),
}


def hostile_write_cell(targets: list[Path]) -> str:
    """A cell that tries to forge files outside its own directory."""
    lines = [
        "import os",
        "for target in %r:" % [str(t) for t in targets],
        "    try:",
        "        with open(target, 'w') as f:",
        "            f.write('{\"score\": 100}')",
        "    except OSError:",
        "        pass",
        "with open('out_unbroadcast.json', 'w') as f:",
        "    f.write('{\"cases\": []}')",
    ]
    return "\n".join(lines)


def fill(
    notebook: nbformat.NotebookNode, unbroadcast_src: str, matmul_src: str, extra: list[str]
) -> nbformat.NotebookNode:
    filled = copy.deepcopy(notebook)
    sources = {"unbroadcast": unbroadcast_src, "matmul_vjp": matmul_src}
    for cell in filled.cells:
        if "exercise" not in cell.metadata.get("tags", []):
            continue
        for name, source in sources.items():
            if f"def {name}(" in cell.source:
                cell.source = source
    exercise_index = next(
        i for i, c in enumerate(filled.cells) if "exercise" in c.metadata.get("tags", [])
    )
    for offset, source in enumerate(extra):
        filled.cells.insert(exercise_index + offset, nbformat.v4.new_code_cell(source))
    return filled


def write_all(folder: Path, forge_targets: list[Path]) -> dict[str, tuple[float, float]]:
    """Write every fixture; return the expected (unbroadcast, matmul_vjp) scores by stem."""
    learner = nbformat.read(LEARNER_COPY, as_version=4)
    expected = {}
    for name, (ub, mm, extra, scores) in VARIANTS.items():
        nbformat.write(fill(learner, ub, mm, extra), folder / f"{name}.ipynb")
        expected[name] = scores
    forged = fill(
        learner,
        GOOD_UNBROADCAST.replace("return summed", "return 2 * summed"),
        GOOD_MATMUL,
        [hostile_write_cell(forge_targets)],
    )
    nbformat.write(forged, folder / "forges_files.ipynb")
    expected["forges_files"] = (0, 1)
    (folder / "invalid_json.ipynb").write_text('{"cells": [ this is not json')
    expected["invalid_json"] = (0, 0)
    # Nested deeper than the JSON parser's recursion limit: json.loads raised RecursionError
    # while the batch was read, and no submission got a result.
    depth = 100_000
    (folder / "deeply_nested.ipynb").write_text(
        '{"nbformat": 4, "metadata": {"x": ' + "[" * depth + "]" * depth + '}, "cells": []}'
    )
    expected["deeply_nested"] = (0, 0)
    # 2 MB of empty lists: parsed, about 40 MB of the grader's memory for 2 MB of file
    # (64 MiB of them: 1.4 GB); refused before it is parsed.
    (folder / "many_values.ipynb").write_text(
        '{"nbformat": 4, "metadata": {"x": [' + ",".join(["[]"] * 700_000) + ']}, "cells": []}'
    )
    expected["many_values"] = (0, 0)
    chinese = nbformat.read(CHINESE_COPY, as_version=4)
    for name, twin in CHINESE_VARIANTS.items():
        if twin is None:
            nbformat.write(chinese, folder / f"{name}.ipynb")
            expected[name] = (0, 0)
            continue
        ub, mm, extra, scores = VARIANTS[twin]
        nbformat.write(fill(chinese, ub, mm, extra), folder / f"{name}.ipynb")
        expected[name] = scores
    other = fill(learner, GOOD_UNBROADCAST, GOOD_MATMUL, [])
    other.metadata["course"] = {**other.metadata["course"], "chapter": "01"}
    nbformat.write(other, folder / "other_chapter.ipynb")
    expected["other_chapter"] = (0, 0)
    return expected
