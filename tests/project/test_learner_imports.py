"""What a learner's or the grader's environment imports does not need the build's tools.

`make install` has nbconvert (requirements.txt: the notebook build merges stream outputs with
it), but a learner's pip install (requirements-learner.txt), the grader's image
(requirements-grader.txt) and `make versions` do not. `check.reset` once imported it through
authoring/notebooks.py and failed there with ModuleNotFoundError.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from ..installed import ROOT

BUILD_ONLY = ("nbconvert",)  # in requirements.txt, in none of the other environments
LEARNER_MODULES = (
    "autograder.check",
    "autograder.cli",
    "autograder.authoring.reset",
    "autograder.authoring.notebooks",
)


@pytest.mark.parametrize("module", LEARNER_MODULES)
def test_a_learner_module_imports_without_the_build_tools(module):
    code = textwrap.dedent(f"""
        import sys
        for name in {BUILD_ONLY!r}:
            sys.modules[name] = None  # `import name` now raises ImportError
        import {module}
    """)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{module} needs a build-only package:\n{done.stderr[-2000:]}"
