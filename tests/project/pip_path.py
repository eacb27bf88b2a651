#!/usr/bin/env python3
"""CI: a learner's pip path, as README.zh-CN.md writes it, without make or a clone.

Builds the zip learners download (`python -m autograder bundle`), unpacks it in a fresh
folder, runs the README's macOS/Linux block (between <!-- pip-path:start --> and
<!-- pip-path:end -->) word for word in bash, except its last line, `jupyter lab ...`, which
would wait for a browser: in its place the shell that ran the block checks that the command
exists and executes a Chinese chapter top to bottom, whose check cells must answer in Chinese.
Run by .ci/run with the system's Python 3 (no make, no .venv). Exit 0 when all of that holds.

The block points pip at a mirror in mainland China (`pip config --site set global.index-url
...`), which a CI machine may not reach. The command still runs as written: `--site` writes
into the new .venv only, never the machine's own pip configuration, and afterwards this script
checks that .venv/pip.conf holds the README's mirror. The downloads themselves go where
PIP_INDEX_URL says (PyPI unless the caller set it): pip ranks that variable above every
configuration file, and README.zh-CN.md documents it as the way to switch index for one shell.
"""

from __future__ import annotations

import configparser
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = "course/zh-CN/03_unbroadcasting.ipynb"
NOT_ANSWERED_ZH = "尚未作答"  # the Chinese headline of a check whose exercise is still a stub
PYPI = "https://pypi.org/simple"
MIRROR_COMMAND = re.compile(r"^python -m pip config --site set global\.index-url (\S+)$")


def documented_block(readme: str) -> list[str]:
    block = readme.split("<!-- pip-path:start -->", 1)[1].split("<!-- pip-path:end -->", 1)[0]
    code = re.search(r"```bash\n(.*?)```", block, re.DOTALL)
    if code is None:
        raise SystemExit("README.zh-CN.md: no ```bash block between the pip-path markers")
    return [line for line in code.group(1).splitlines() if line.strip()]


def documented_mirror(lines: list[str]) -> str | None:
    """The index URL the block's `pip config --site set global.index-url` line sets, if any."""
    found = [match.group(1) for line in lines if (match := MIRROR_COMMAND.match(line))]
    return found[-1] if found else None


def environment() -> dict[str, str]:
    """The environment the block runs in: a bare PATH and HOME, and PIP_INDEX_URL (the
    caller's, else PyPI), which overrides the mirror the block configures."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(Path.home()),
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "PIP_INDEX_URL": os.environ.get("PIP_INDEX_URL") or PYPI,
    }


def configured_index(venv: Path) -> str | None:
    """The index URL in the virtual environment's own pip configuration (`pip config --site`)."""
    config = configparser.ConfigParser()
    config.read(venv / "pip.conf", encoding="utf-8")
    return config.get("global", "index-url", fallback=None)


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
        env = environment()
        print(f"packages from PIP_INDEX_URL={env['PIP_INDEX_URL']}", flush=True)
        run = subprocess.run(["bash", "-c", script(lines)], cwd=course, text=True, env=env)
        if run.returncode:
            print(f"the documented pip path failed (exit {run.returncode})", file=sys.stderr)
            return 1
        mirror = documented_mirror(lines)
        if mirror is not None and configured_index(course / ".venv") != mirror:
            print(
                f"the block's mirror {mirror!r} is not in .venv/pip.conf "
                f"({configured_index(course / '.venv')!r})",
                file=sys.stderr,
            )
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
