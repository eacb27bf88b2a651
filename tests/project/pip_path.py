#!/usr/bin/env python3
"""CI: a learner's pip path, as README.zh-CN.md writes it, without make or a clone.

Builds the zip learners download (`python -m autograder bundle`), unpacks it in a fresh
folder, runs the README's macOS/Linux block (between <!-- pip-path:start --> and
<!-- pip-path:end -->) word for word in bash, except its last line, `jupyter lab ...`, which
would wait for a browser: in its place the shell that ran the block checks that the command
exists and executes a Chinese chapter top to bottom, whose check cells must answer in Chinese.
Run by .ci/run with the system's Python 3 (no make, no .venv). Exit 0 when all of that holds.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = "course/zh-CN/03_unbroadcasting.ipynb"
NOT_ANSWERED_ZH = "尚未作答"  # the Chinese headline of a check whose exercise is still a stub


def documented_block(readme: str) -> list[str]:
    block = readme.split("<!-- pip-path:start -->", 1)[1].split("<!-- pip-path:end -->", 1)[0]
    code = re.search(r"```bash\n(.*?)```", block, re.DOTALL)
    if code is None:
        raise SystemExit("README.zh-CN.md: no ```bash block between the pip-path markers")
    return [line for line in code.group(1).splitlines() if line.strip()]


def script(lines: list[str]) -> str:
    *install, last = lines
    if not last.startswith("jupyter lab "):
        raise SystemExit(f"the documented block should end by opening JupyterLab, not {last!r}")
    return "\n".join(
        [
            "set -euo pipefail",
            *install,
            "jupyter lab --version",
            f"jupyter nbconvert --to notebook --execute --ExecutePreprocessor.timeout=900 "
            f"--output executed.ipynb {CHAPTER}",
        ]
    )


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="pip-path-") as folder:
        work = Path(folder)
        zipped = work / "autodiff-course.zip"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "autograder",
                "bundle",
                "--out",
                str(zipped),
                "--root",
                str(ROOT),
            ],
            cwd=ROOT,
            check=True,
        )
        with zipfile.ZipFile(zipped) as archive:
            archive.extractall(work)
        course = work / "autodiff-course"
        lines = documented_block((course / "README.zh-CN.md").read_text(encoding="utf-8"))
        print("running, in a fresh folder:\n  " + "\n  ".join(lines), flush=True)
        run = subprocess.run(
            ["bash", "-c", script(lines)],
            cwd=course,
            text=True,
            env={
                "PATH": "/usr/local/bin:/usr/bin:/bin",
                "HOME": str(Path.home()),
                "TF_CPP_MIN_LOG_LEVEL": "3",
            },
        )
        if run.returncode:
            print(f"the documented pip path failed (exit {run.returncode})", file=sys.stderr)
            return 1
        executed = (course / "course" / "zh-CN" / "executed.ipynb").read_text(encoding="utf-8")
        if NOT_ANSWERED_ZH not in executed:
            print(
                f"the executed chapter's checks did not answer in Chinese ({NOT_ANSWERED_ZH!r} "
                "missing)",
                file=sys.stderr,
            )
            return 1
        print(f"pip path: installed as documented and ran {CHAPTER}; its checks answer in Chinese")
        return 0


if __name__ == "__main__":
    sys.exit(main())
