"""The learner's path (notebook checks, hints, progress, predictions, the waiting line) keeps
off POSIX-only modules, so it runs on Windows: a fresh interpreter where the course's own code
cannot import fcntl, resource or termios and `signal` has no SIGALRM, alarm or setitimer runs
checks, right and wrong, in English and in Chinese. (The grader's sandbox is POSIX-only by
design and is not on this path.)"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

BLOCK = textwrap.dedent("""
    import importlib.abc, signal, sys

    POSIX_ONLY = {"fcntl", "resource", "termios"}
    for name in ("SIGALRM", "alarm", "setitimer"):
        if hasattr(signal, name):
            delattr(signal, name)

    def from_course():
        frame = sys._getframe(2)
        while frame is not None:
            module = frame.f_globals.get("__name__", "")
            if not module.startswith(("importlib", "_frozen_importlib")):
                return module.split(".")[0] in {"autograder", "coursekit"}
            frame = frame.f_back
        return False

    class RefusePosixOnly(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in POSIX_ONLY and from_course():
                raise ImportError(f"{name} does not exist on Windows")
            return None

    sys.meta_path.insert(0, RefusePosixOnly())
    for name in POSIX_ONLY:
        sys.modules.pop(name, None)
""")

LEARNER = textwrap.dedent("""
    import numpy as np
    from autograder import check
    from autograder.notebook.waiting import message

    def unbroadcast(g, shape):
        g = g.sum(axis=tuple(range(g.ndim - len(shape))))
        ones = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
        return g.sum(axis=ones, keepdims=True)

    def wrong(g, shape):
        return g.sum(axis=tuple(range(g.ndim - len(shape))))

    assert check.unbroadcast(unbroadcast).passed
    report = check.unbroadcast(wrong)
    assert not report.passed and "FAILED" in str(report), str(report)
    check.language("zh-CN")
    chinese = check.unbroadcast(wrong)
    assert not chinese.passed and "未通过" in str(chinese), str(chinese)
    import re
    assert re.search("[\u4e00-\u9fff]", check.hint("unbroadcast").text())
    assert "unbroadcast" in message("unbroadcast", 3)
    print(check.progress("course/zh-CN"))
    print("PORTABLE-OK")
""")


def test_checks_run_where_posix_only_modules_do_not_exist():
    run = subprocess.run(
        [sys.executable, "-c", BLOCK + LEARNER],
        cwd=ROOT,
        text=True,
        capture_output=True,
        timeout=600,
    )
    assert run.returncode == 0 and "PORTABLE-OK" in run.stdout, run.stderr[-3000:]


def test_the_blocker_itself_refuses_the_course_a_posix_only_module(tmp_path):
    """The guard must bite: a course module importing fcntl fails under it."""
    package = tmp_path / "coursekit"
    package.mkdir()
    (package / "__init__.py").write_text("import fcntl\n")
    run = subprocess.run(
        [sys.executable, "-c", BLOCK + "import coursekit\n"],
        cwd=tmp_path,
        text=True,
        capture_output=True,
        timeout=60,
    )
    assert run.returncode != 0 and "does not exist on Windows" in run.stderr
