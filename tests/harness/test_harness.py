"""The harness: how every exercise calls the learner's function, in the notebook and in the
grader's child alike. It must run where the grader is not importable."""

from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from autograder import harness
from autograder.exercises import EXERCISES
from autograder.exercises.ch02_reverse_mode_tape import DIRECTIONAL_DERIVATIVE
from autograder.judging.attempts import call_learner
from autograder.judging.cases import Case
from autograder.sandbox import submission_folders

HARNESS = Path(harness.__file__).parent
ALLOWED_IMPORTS = {"numpy", "jax", "tensorflow"}  # besides the standard library


def _imports(path: Path) -> set[str]:
    """The top-level packages a module imports absolutely (relative imports excluded)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            found.add(node.module.split(".")[0])
    return found - {"__future__"}


def test_the_harness_imports_only_the_standard_library_numpy_and_the_frameworks():
    modules = sorted(HARNESS.glob("*.py"))
    assert {m.stem for m in modules} >= {
        "__init__",
        "precision",
        "ch01_chain_rule",
        "ch02_reverse_mode_tape",
        "ch05_custom_derivatives_jax",
    }
    for module in modules:
        foreign = _imports(module) - ALLOWED_IMPORTS - set(sys.stdlib_module_names)
        assert not foreign, f"{module.name} imports {foreign}: the grader's child lacks them"


def test_every_exercise_names_an_invoke_that_resolves_to_a_harness_function():
    for exercise in EXERCISES.values():
        invoke = exercise.invoker()
        function = getattr(invoke, "__wrapped__", invoke)
        assert function.__module__.startswith(harness.__name__), exercise.name
        # Full precision exactly where a framework is allowed (the wrapper marks it).
        assert hasattr(invoke, "__wrapped__") == bool(exercise.frameworks), exercise.name


def test_a_misnamed_invoke_is_refused_when_the_exercise_is_declared():
    for wrong in (
        "ch02.invoke_directional_derivative",
        "ch02_reverse_mode_tape:",
        ":invoke",
        "ch02_reverse_mode_tape:invoke directional",
    ):
        with pytest.raises(ValueError, match="<module>:<function>"):
            dataclasses.replace(DIRECTIONAL_DERIVATIVE, invoke=wrong)


def _derivative_case() -> Case:
    x, v = np.full((2,), 2.0, np.float32), np.full((2,), 0.6, np.float32)
    return Case((("f", "log"), ("x", x), ("v", v)))


def test_the_traceback_starts_at_the_learners_own_frames():
    def directional_derivative(f, x, v):
        raise ValueError("the learner's own error")

    attempt = call_learner(directional_derivative, _derivative_case(), DIRECTIONAL_DERIVATIVE)
    assert "in directional_derivative" in attempt.traceback
    assert attempt.traceback.endswith("ValueError: the learner's own error")
    assert str(HARNESS) not in attempt.traceback and "engine.py" not in attempt.traceback
    assert "attempts.py" not in attempt.traceback


CHILD_SCRIPT = """
import sys
from pathlib import Path
import importlib.util
import numpy as np

ctrl = Path(sys.argv[1])
spec = importlib.util.spec_from_file_location("child", ctrl / "child.py")
child = importlib.util.module_from_spec(spec)
spec.loader.exec_module(child)
harness = child._load_harness(ctrl)
assert Path(harness.__file__).parent == ctrl / "harness", harness.__file__

def directional_derivative(f, x, v):
    raise ValueError("mine")

invoke = child._invoker(harness, "ch02_reverse_mode_tape:invoke_directional_derivative", ())
x = np.ones(2)
try:
    invoke(directional_derivative, "log", x, x)
except ValueError as error:
    text = harness.learner_traceback(error, 3000)
assert "in directional_derivative" in text and str(ctrl / "harness") not in text, text
broken = child._invoker(harness, "ch02_reverse_mode_tape:no_such_invoke", ())
try:
    broken(directional_derivative)
except AttributeError:
    pass
else:
    raise AssertionError("a missing invoke must fail every case, not the child")
assert not any(name.split(".")[0] in ("autograder", "coursekit") for name in sys.modules)
assert not list((ctrl / "harness").glob("__pycache__")), "bytecode written into ctrl"
print("ok")
"""


def test_the_child_imports_the_harness_the_grader_copied_and_nothing_of_the_grader(tmp_path):
    ctrl = tmp_path / "ctrl"
    ctrl.mkdir()
    folders = submission_folders.Folders(tmp_path, ctrl, tmp_path, tmp_path, None)
    submission_folders.install_child_files(folders)
    assert sorted(p.name for p in (ctrl / "harness").iterdir()) == sorted(
        p.name for p in HARNESS.glob("*.py")
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", textwrap.dedent(CHILD_SCRIPT), str(ctrl)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_grad_without_the_notebooks_engine_is_told_what_is_missing():
    """check.grad builds its programs with the engine of the namespace where grad was
    defined; without one it must not raise KeyError, as if the learner's code had."""
    from autograder import check

    namespace: dict = {"np": np}
    exec("def grad(f, argnums=0):\n    return f\n", namespace)
    report = check.grad(namespace["grad"])
    text = str(report)
    assert not report.passed and "KeyError" not in text, text
    assert "NameError" in text and "is defined where your function was defined" in text, text
