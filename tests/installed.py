"""The course installed the way its users install it: a wheel, in a Python that is not the checkout.

Colab (`%pip install "autodiff-course @ git+..."`) and Gradescope (`pip install --no-deps .`)
both get a non-editable install. These helpers build the wheel from a clean copy of the
sources and install it into a fresh venv that holds the pinned packages (numpy, TensorFlow,
JAX, Jupyter) without a second download: hard links to this interpreter's site-packages, the
editable install's files left out (work_folder picks a place where hard links can be made).

Why not simply PYTHONPATH=<target> with this .venv's Python: its site-packages holds the
editable install's import hook, which would quietly serve any module missing from the wheel
(`autograder.exercises`, say) from the checkout: the very bug these tests exist to catch.
Why links rather than a path line to that folder: the grader's sandbox shows the child its
own Python's prefix only, as on Gradescope, where the packages live inside the venv.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
# Not part of any distribution: kept out of the copy the wheel is built from.
NOT_SOURCES = shutil.ignore_patterns(
    ".git",
    ".venv*",
    "build",
    "*.egg-info",
    "__pycache__",
    ".hypothesis",
    ".ruff_cache",
    "test-artifacts",
    "bench-out",
    "course",
    "solutions",
    "tests",
    "*.zip",
)


@dataclass(frozen=True)
class Install:
    """A venv holding the course's wheel: its Python and its site-packages folder."""

    python: Path
    site: Path


# Packages of the checkout that are for maintainers only and are not installed.
DEVELOPMENT_ONLY = {"tests", "benchmarks"}


def package_modules(root: Path = ROOT) -> set[str]:
    """Every .py file of the importable packages in the checkout (tests/ excluded), as paths
    relative to the root, e.g. `autograder/exercises/ch03_unbroadcasting.py`."""
    packages = [
        p
        for p in root.iterdir()
        if (p / "__init__.py").is_file() and p.name not in DEVELOPMENT_ONLY
    ]
    return {
        str(path.relative_to(root))
        for package in packages
        for path in package.rglob("*.py")
        if "__pycache__" not in path.parts
    }


def build_wheel(source: Path, out: Path) -> Path:
    """Build the wheel from a clean copy of `source` (a stale build/ could hide a missing file),
    offline, with the setuptools already installed."""
    clean = out / "source"
    shutil.copytree(source, clean, ignore=NOT_SOURCES)
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--quiet",
            "-w",
            str(out),
            str(clean),
        ],
        cwd=out,
    )
    wheels = sorted(out.glob("autodiff_course-*.whl"))
    assert len(wheels) == 1, f"expected one wheel in {out}, found {wheels}"
    return wheels[0]


def wheel_modules(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return {name for name in archive.namelist() if name.endswith(".py")}


def bare_venv(where: Path) -> Install:
    """An empty venv without pip (this interpreter's pip installs into it)."""
    run([sys.executable, "-m", "venv", "--without-pip", str(where)], cwd=where.parent)
    python = where / "bin" / "python"
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return Install(
        python=python, site=Path(run([str(python), "-c", purelib], cwd=where).stdout.strip())
    )


def make_venv(where: Path) -> Install:
    """A venv holding all of this interpreter's packages except the editable course."""
    install = bare_venv(where)
    _share_packages(Path(sysconfig.get_paths()["purelib"]), install.site)
    ipython = Path(sys.prefix) / "etc" / "ipython"
    if ipython.is_dir():  # the kernel configuration `make install` puts there
        shutil.copytree(ipython, where / "etc" / "ipython")
    return install


def _share_packages(source: Path, site: Path) -> None:
    """Fill `site` with hard links to `source`'s packages, minus the editable course."""
    linked = site.with_name("linking")
    run(["cp", "-al", str(source), str(linked)], cwd=site.parent)
    site.rmdir()
    linked.rename(site)
    for editable in [*site.glob("__editable__*"), *site.glob("autodiff_course-*.dist-info")]:
        shutil.rmtree(editable) if editable.is_dir() else editable.unlink()


def work_folder(tmp: Path, name: str) -> Path:
    """A fresh folder for an install: under `tmp`, or, where `tmp` is another file system than
    the packages (a tmpfs /tmp), under the checkout's ignored test-artifacts/, so that hard
    links work. Either way it is not an importable part of the checkout."""
    packages = Path(sysconfig.get_paths()["purelib"])
    same_device = tmp.stat().st_dev == packages.stat().st_dev
    folder = tmp / name if same_device else ROOT / "test-artifacts" / "installs" / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def make_grader_venv(where: Path, requirements: Path) -> Install:
    """A venv holding only what `requirements` needs (its pins and their dependencies), as
    setup.sh's `pip install -r requirements-grader.txt` would: hard links to this
    interpreter's copies, so a module the grader imports from anything else is missing."""
    install = bare_venv(where)
    source = Path(sysconfig.get_paths()["purelib"])
    for name in sorted(dependency_closure(requirement_names(requirements))):
        _link_distribution(metadata.distribution(name), source, install.site)
    return install


def requirement_names(requirements: Path) -> list[str]:
    lines = [line.split("#")[0].strip() for line in requirements.read_text().splitlines()]
    return [Requirement(line).name for line in lines if line]


def dependency_closure(names: list[str]) -> set[str]:
    """The distributions pip would install for `names` on this machine (markers evaluated)."""
    seen: set[str] = set()
    todo = [canonicalize_name(name) for name in names]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for line in metadata.requires(name) or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(canonicalize_name(requirement.name))
    return seen


def _link_distribution(distribution: metadata.Distribution, source: Path, site: Path) -> None:
    """Hard-link one installed distribution's files (its RECORD) from `source` into `site`."""
    for file in distribution.files or []:
        path = Path(distribution.locate_file(file)).resolve()
        if not path.is_file() or not path.is_relative_to(source):
            continue  # console scripts in bin/, stale RECORD lines
        target = site / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            os.link(path, target)


def install_wheel(wheel: Path, install: Install) -> None:
    """`pip install --no-deps`, non-editable, into the venv's site-packages (a wheel, or a
    source folder that pip builds with the setuptools already installed)."""
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "--quiet",
            "--no-build-isolation",
            "--target",
            str(install.site),
            str(wheel),
        ],
        cwd=install.site,
    )


def installed_course(tmp: Path) -> Install:
    """Build the wheel from the checkout and install it into a fresh venv (see work_folder)."""
    work = work_folder(tmp, "course")
    wheels = work / "wheels"
    wheels.mkdir()
    install = make_venv(work / "venv")
    install_wheel(build_wheel(ROOT, wheels), install)
    return install


def clean_environment(**extra: str) -> dict[str, str]:
    """This process's environment without anything that points Python at the checkout."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
    }
    return {**env, "TF_CPP_MIN_LOG_LEVEL": "3", **extra}


def run(
    command: list[str], cwd: Path, timeout: float = 600, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run a command; on failure, fail with its output (not only its exit code)."""
    done = subprocess.run(
        command,
        cwd=cwd,
        env=env or clean_environment(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise AssertionError(
            f"{' '.join(command)} exited {done.returncode}\n"
            f"stdout:\n{done.stdout[-4000:]}\nstderr:\n{done.stderr[-4000:]}"
        )
    return done
