"""Which frameworks a submission's child may import: its exercises' own, and Keras only when
the submission's code names it (TensorFlow's start-up imports an installed Keras, and
matplotlib with it, which costs every TensorFlow child 1-2 s)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from autograder.grading import rounds

from ..submissions import ROOT

# The child's guards, then the submission's imports, then what got loaded.
PROBE = """
import json, sys
from autograder.sandbox.confined import guards
guards.install({allowed})
import tensorflow as tf
x = tf.constant([1.0, 2.0])
with tf.GradientTape() as tape:
    tape.watch(x)
    y = tf.reduce_sum(x * x)
assert tape.gradient(y, x).numpy().tolist() == [2.0, 4.0]
outcome = {{"keras_loaded": "keras" in sys.modules, "jax_loaded": "jax" in sys.modules}}
for name in ("keras", "jax"):
    try:
        __import__(name)
        outcome[name] = "imported"
    except ModuleNotFoundError as error:
        outcome[name] = str(error)
print(json.dumps(outcome))
"""


def probe(allowed: list[str]) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(allowed=allowed)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_keras_is_allowed_only_to_code_that_names_it():
    plain = ["import tensorflow as tf\n", "def f(x):\n    return tf.exp(x)\n"]
    assert rounds.child_frameworks(("tensorflow",), plain) == ["tensorflow"]
    named = [*plain, "act = tf.keras.activations.relu\n"]
    assert rounds.child_frameworks(("tensorflow",), named) == ["tensorflow", "keras"]
    assert rounds.child_frameworks(("jax",), named) == ["jax"]
    assert rounds.child_frameworks((), named) == []


@pytest.mark.parametrize("allowed", [["tensorflow"], ["tensorflow", "keras"]])
def test_a_tensorflow_child_sees_keras_only_when_allowed(allowed):
    outcome = probe(allowed)
    assert outcome["jax"] == "No module named 'jax'" and not outcome["jax_loaded"]
    if "keras" in allowed:
        assert outcome["keras"] == "imported"
    else:  # as if not installed, and TensorFlow still imports and differentiates
        assert not outcome["keras_loaded"]
        assert outcome["keras"] == "No module named 'keras'"


def test_the_grading_process_imports_tensorflow_without_keras():
    """`grade` and `prepare` import TensorFlow themselves for references and for the hints
    of wrong answers; Keras (and matplotlib, which it imports) would add 1-2 s each time."""
    script = (
        "import json, sys\nfrom autograder import cli\ncli.without_keras()\n"
        "import tensorflow as tf\n"
        "print(json.dumps([sys.modules.get('keras') is None, 'matplotlib' in sys.modules,"
        " tf.reduce_sum(tf.ones(3)).numpy().item()]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert json.loads(done.stdout.splitlines()[-1]) == [True, False, 3.0]


STATE_CELLS = [
    "import gc, json, sys\n"
    "STATE = {'preloaded': 'jax' in sys.modules, 'frozen': gc.get_freeze_count() > 0}\n",
    "import jax\n"
    "STATE['x64'] = bool(jax.config.jax_enable_x64)\n"
    "STATE['collecting'] = gc.isenabled()\n"
    "open(OUT + '/state.json', 'w').write(json.dumps(STATE))\n",
]


def serve_cells(tmp_path, cells: list[str]) -> dict:
    """Run a JAX round's child (the grader's own copied files, its real entry point) on these
    cells, without confinement, and return the STATE they wrote."""
    from autograder.sandbox import submission_folders

    ctrl, out = tmp_path / "ctrl", tmp_path / "out"
    ctrl.mkdir()
    out.mkdir()
    folders = submission_folders.Folders(tmp_path, ctrl, tmp_path, out, None)
    submission_folders.install_child_files(folders)
    program = {
        "cells": [f"OUT = {str(out)!r}\n", *cells],
        "exercises": [],
        "out": str(out),
        "allowed": ["jax"],
        "time_limit": 60,
        "confine": {"limits": {"memory": 8 << 30, "cpu_seconds": 300, "file_size": 1 << 30}},
        "invoke": {},
        "depends": {},
    }
    (ctrl / "program.json").write_text(json.dumps(program))
    read, write = os.pipe()
    try:
        done = subprocess.run(
            [sys.executable, "-I", str(ctrl / "child.py"), str(write)],
            pass_fds=(write,),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
            env={"PATH": "/usr/bin:/bin"},
        )
    finally:
        os.close(write)
        os.close(read)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((out / "state.json").read_text())


def test_a_fresh_child_imports_its_framework_before_the_cells_with_the_collector_paused(tmp_path):
    """Paused, TensorFlow's import takes a fifth less; the objects it made are frozen, and
    the collector runs again for the learner's code. The course's own notebooks quiet
    TensorFlow's logging through the environment first, which changes nothing else."""
    quiet = "import os\nos.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')  # quiet\n"
    state = serve_cells(tmp_path, [quiet, *STATE_CELLS])
    assert state == {"preloaded": True, "frozen": True, "x64": False, "collecting": True}


def test_code_that_sets_the_environment_imports_the_framework_itself(tmp_path):
    """JAX reads JAX_ENABLE_X64 when imported: the setting a submission makes before its
    import must hold in the grader as it did in the notebook."""
    cells = ["import os\nos.environ['JAX_ENABLE_X64'] = '1'\n", *STATE_CELLS]
    state = serve_cells(tmp_path, cells)
    assert state == {"preloaded": False, "frozen": False, "x64": True, "collecting": True}
