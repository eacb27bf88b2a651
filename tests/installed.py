"""The course installed the way its users install it: a wheel, in a Python that is not the checkout.

Colab (`%pip install "autodiff-course @ git+..."`) and Gradescope (`pip install --no-deps .`)
both get a non-editable install. These helpers build the wheel from a clean copy of the
sources and install it into a fresh venv that holds the pinned packages (numpy, TensorFlow,
JAX, Jupyter) without a second download: hard links to this interpreter's site-packages, the
editable install's files left out.

Why not simply PYTHONPATH=<target> with this .venv's Python: its site-packages holds the
editable install's import hook, which would quietly serve any module missing from the wheel
(`autograder.exercises`, say) from the checkout: the very bug these tests exist to catch.
Why links rather than a path line to that folder: the grader's sandbox shows the child its
own Python's prefix only, as on Gradescope, where the packages live inside the venv. Where
hard links cannot be made (another file system) a .pth path line is the fallback; it adds the
folder only, never runs the hooks inside it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Not part of any distribution: kept out of the copy the wheel is built from.
NOT_SOURCES = shutil.ignore_patterns(
    ".git", ".venv*", "build", "*.egg-info", "__pycache__", ".hypothesis", ".ruff_cache",
    "test-artifacts", "bench-out", "course", "solutions", "tests", "*.zip",
)


@dataclass(frozen=True)
class Install:
    """A venv holding the course's wheel: its Python and its site-packages folder."""

    python: Path
    site: Path


def package_modules(root: Path = ROOT) -> set[str]:
    """Every .py file of the importable packages in the checkout (tests/ excluded), as paths
    relative to the root, e.g. `autograder/exercises/ch03_unbroadcasting.py`."""
    packages = [p for p in root.iterdir() if (p / "__init__.py").is_file() and p.name != "tests"]
    return {str(path.relative_to(root)) for package in packages
            for path in package.rglob("*.py") if "__pycache__" not in path.parts}


def build_wheel(source: Path, out: Path) -> Path:
    """Build the wheel from a clean copy of `source` (a stale build/ could hide a missing file),
    offline, with the setuptools already installed."""
    clean = out / "source"
    shutil.copytree(source, clean, ignore=NOT_SOURCES)
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--no-index", "--quiet", "-w", str(out), str(clean)], cwd=out)
    wheels = sorted(out.glob("autodiff_course-*.whl"))
    assert len(wheels) == 1, f"expected one wheel in {out}, found {wheels}"
    return wheels[0]


def wheel_modules(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return {name for name in archive.namelist() if name.endswith(".py")}


def make_venv(where: Path) -> Install:
    """A venv (no pip: the outer pip installs into it) holding this interpreter's packages."""
    run([sys.executable, "-m", "venv", "--without-pip", str(where)], cwd=where.parent)
    python = where / "bin" / "python"
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(run([str(python), "-c", purelib], cwd=where).stdout.strip())
    _share_packages(Path(sysconfig.get_paths()["purelib"]), site)
    ipython = Path(sys.prefix) / "etc" / "ipython"
    if ipython.is_dir():  # the kernel configuration `make install` puts there
        shutil.copytree(ipython, where / "etc" / "ipython")
    return Install(python=python, site=site)


def _share_packages(source: Path, site: Path) -> None:
    """Fill `site` with hard links to `source`'s packages, minus the editable course."""
    linked = site.with_name("linking")
    done = subprocess.run(["cp", "-al", str(source), str(linked)], capture_output=True)
    if done.returncode != 0:  # another file system: see the module docstring
        shutil.rmtree(linked, ignore_errors=True)
        (site / "pinned_packages.pth").write_text(f"{source}\n")
        return
    site.rmdir()
    linked.rename(site)
    for editable in [*site.glob("__editable__*"), *site.glob("autodiff_course-*.dist-info")]:
        shutil.rmtree(editable) if editable.is_dir() else editable.unlink()


def install_wheel(wheel: Path, install: Install) -> None:
    """`pip install --no-deps`, non-editable, into the venv's site-packages."""
    run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--quiet",
         "--target", str(install.site), str(wheel)], cwd=install.site)


def installed_course(work: Path) -> Install:
    """Build the wheel from the checkout and install it into a fresh venv under `work`."""
    wheels = work / "wheels"
    wheels.mkdir(parents=True)
    install = make_venv(work / "venv")
    install_wheel(build_wheel(ROOT, wheels), install)
    return install


def clean_environment(**extra: str) -> dict[str, str]:
    """This process's environment without anything that points Python at the checkout."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}
    return {**env, "TF_CPP_MIN_LOG_LEVEL": "3", **extra}


def run(command: list[str], cwd: Path, timeout: float = 600,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run a command; on failure, fail with its output (not only its exit code)."""
    done = subprocess.run(command, cwd=cwd, env=env or clean_environment(), capture_output=True,
                          text=True, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(command)} exited {done.returncode}\n"
                             f"stdout:\n{done.stdout[-4000:]}\nstderr:\n{done.stderr[-4000:]}")
    return done
