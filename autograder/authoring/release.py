"""`python -m autograder release --tag vX.Y.Z --out DIR`: what a release publishes, built once.

The release workflow (.github/workflows/release.yml) runs this on a tag, then publishes what it
wrote: the package to PyPI (so that `pip install autodiff-course`, and the PyPI mirrors that
learners in mainland China use, serve the course, and each chapter's first cell can install it
from the index), and the zip of every notebook to the GitHub release and to the mirror of the
repository on a host reachable in mainland China, with a SHA-256 list to check a download by.

Built from the files git tracks (a copy of them), so a working tree's build/ folder, caches or
uncommitted files never reach a learner; with the build backend already installed (pip's
`--no-build-isolation`: the workflow installs setuptools first; the tests run it offline).
Only the standard library is imported: the workflow's runner has Python and setuptools only.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from email.parser import BytesHeaderParser
from pathlib import Path

from autograder.authoring.bundle import build_bundle, tracked_files

PACKAGE = "package"  # the folder of what goes to PyPI (the workflow uploads this folder)
ZIP = "autodiff-course.zip"
SUMS = "SHA256SUMS"


class ReleaseRefused(ValueError):
    """A release that would publish something other than what its tag names."""


def project_version(root: Path) -> str:
    with (root / "pyproject.toml").open("rb") as file:
        return tomllib.load(file)["project"]["version"]


def check_tag(root: Path, tag: str) -> str:
    """The version a tag releases: `v` and pyproject.toml's version, or refused (PyPI keeps
    a version forever, so a mistyped tag must publish nothing)."""
    version = project_version(root)
    if tag != f"v{version}":
        raise ReleaseRefused(
            f"the tag {tag!r} does not name pyproject.toml's version {version!r}: to release "
            f"it, set [project] version to the tag's (without the v), commit, and tag that "
            f"commit; else delete the tag"
        )
    return version


def build_wheel(root: Path, out: Path) -> Path:
    """The wheel, built from a copy of the files git tracks."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "source"
        for path in tracked_files(root):
            (source / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / path, source / path)
        command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
        subprocess.run([*command, "--quiet", "--wheel-dir", str(out), str(source)], check=True)
    wheels = sorted(out.glob("autodiff_course-*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"expected one wheel in {out}, found {[w.name for w in wheels]}")
    return wheels[0]


def wheel_metadata(wheel: Path) -> dict[str, str]:
    """The wheel's METADATA header fields (the first of each), read as the email headers
    they are (the core metadata format), as PyPI reads them."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        headers = BytesHeaderParser().parsebytes(archive.read(name))
    return {key: str(headers[key]) for key in headers}


def check_wheel(wheel: Path, version: str) -> None:
    """What PyPI and pip would refuse or get wrong, found before anything is uploaded."""
    fields = wheel_metadata(wheel)
    expected = {"Name": "autodiff-course", "Version": version}
    wrong = {key: fields.get(key) for key, value in expected.items() if fields.get(key) != value}
    if wrong:
        raise ReleaseRefused(f"{wheel.name}: metadata {wrong}, expected {expected}")
    if not fields.get("Requires-Python"):
        raise ReleaseRefused(f"{wheel.name}: no Requires-Python (pip would install it anywhere)")


def write_sums(out: Path, files: list[Path]) -> Path:
    """`sha256sum`'s format: a learner checks a download with `sha256sum -c` or PowerShell's
    Get-FileHash."""
    lines = [
        f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.relative_to(out).as_posix()}"
        for path in files
    ]
    sums = out / SUMS
    sums.write_text("\n".join(lines) + "\n")
    return sums


def build_release(root: Path, out: Path, tag: str) -> list[Path]:
    """Check the tag, build the wheel and the zip into `out`, list their hashes."""
    version = check_tag(root, tag)
    if out.exists() and any(out.iterdir()):
        raise ReleaseRefused(f"{out} is not empty: a release is built into an empty folder")
    wheel = build_wheel(root, out / PACKAGE)
    check_wheel(wheel, version)
    build_bundle(root, out / ZIP)
    files = [wheel, out / ZIP]
    return [*files, write_sums(out, files)]


def main(*, root: Path, out: Path, tag: str) -> int:
    try:
        written = build_release(root, out, tag)
    except ReleaseRefused as refused:
        print(f"release refused: {refused}", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path} ({path.stat().st_size / 1024**2:.1f} MiB)")
    return 0
