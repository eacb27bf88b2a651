"""`python -m autograder bundle`: every notebook and what runs them, in one zip.

For learners who cannot clone the repository or reach Colab and Binder: the zip unpacks into
a folder where README.zh-CN.md's pip commands work as written (the package is installed from
the folder itself, `pip install --no-deps .`). Only files git tracks go in, so a working tree's
caches, virtual environments and checkpoints never do.
"""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

INCLUDED = (
    "course",
    "solutions",
    "autograder",
    "coursekit",
    "etc/ipython",
    "pyproject.toml",
    "requirements-learner.txt",
    "requirements.txt",
    "environment.yml",
    "README.md",
    "README.zh-CN.md",
    "LICENSE",
    "LICENSE-CONTENT",
)
TOP = "autodiff-course"  # the folder the zip unpacks into


def tracked_files(root: Path) -> list[str]:
    """The files git tracks under INCLUDED, as paths relative to `root`. Every entry of
    INCLUDED must contribute a file: a listed file that git does not track (the licences were
    once listed before they existed) is an error, never a zip that quietly lacks it."""
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--", *INCLUDED], cwd=root, check=True, capture_output=True
        )
        .stdout.decode()
        .split("\0")
    )
    files = sorted(path for path in listed if path and (root / path).is_file())
    missing = [entry for entry in INCLUDED if not any(_under(path, entry) for path in files)]
    if missing:
        raise FileNotFoundError(
            f"bundle: {', '.join(missing)} listed in INCLUDED but not "
            f"tracked by git in {root}: commit it before bundling"
        )
    return files


def _under(path: str, entry: str) -> bool:
    """Whether `path` is the file `entry` or lies in the folder `entry`."""
    return path == entry or path.startswith(f"{entry}/")


def build_bundle(root: Path, out: Path) -> list[str]:
    """Write the zip; returns what it holds (relative paths)."""
    files = tracked_files(root)
    for needed in (
        "course/00_start_here.ipynb",
        "course/zh-CN/00_start_here.ipynb",
        "requirements-learner.txt",
        "pyproject.toml",
    ):
        if needed not in files:
            raise FileNotFoundError(f"{needed} is not tracked by git: commit it before bundling")
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in files:
            archive.write(root / path, f"{TOP}/{path}")
    return files


def main(*, root: Path, out: Path) -> int:
    files = build_bundle(root, out)
    size = out.stat().st_size / 1024**2
    print(
        f"wrote {out}: {len(files)} files, {size:.1f} MiB; unzip it and follow "
        "README.zh-CN.md (本地安装) or README.md"
    )
    return 0
