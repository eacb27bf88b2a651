"""The release workflow: its build step, run here as written, and the names its jobs agree on.

`.github/workflows/release.yml` runs `python -m autograder release` on a tag, then publishes
the folder it wrote: the wheel to PyPI, the zip and the hashes to the GitHub release, the
repository to a mirror. Publishing needs the project's accounts; building is tested here,
offline (the build backend is this environment's setuptools, as the workflow installs it).
`make lint` validates the file against GitHub's workflow schema.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from autograder.authoring import release

from ..installed import ROOT

pytestmark = pytest.mark.e2e  # builds the wheel and the zip

WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"


def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def step(job: str, name: str) -> dict:
    return next(s for s in workflow()["jobs"][job]["steps"] if s.get("name") == name)


def run_build_step(tag: str, runner_temp: Path) -> subprocess.CompletedProcess:
    """The build job's "Build the release" step, as GitHub's runner would run it: bash, in the
    checkout, with the tag and the runner's temporary folder in the environment."""
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_REF_NAME": tag,
        "RUNNER_TEMP": str(runner_temp),
    }
    command = step("build", "Build the release")["run"]
    return subprocess.run(
        ["bash", "-e", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True
    )


def test_the_build_step_builds_the_wheel_the_zip_and_their_hashes(tmp_path):
    version = release.project_version(ROOT)
    done = run_build_step(f"v{version}", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "release"
    wheel = out / release.PACKAGE / f"autodiff_course-{version}-py3-none-any.whl"
    assert sorted(p.name for p in (out / release.PACKAGE).iterdir()) == [wheel.name]
    metadata = release.wheel_metadata(wheel)
    assert (metadata["Name"], metadata["Version"]) == ("autodiff-course", version)
    with zipfile.ZipFile(out / release.ZIP) as archive:
        names = set(archive.namelist())
    assert "autodiff-course/course/zh-CN/00_start_here.ipynb" in names
    assert "autodiff-course/requirements-learner.txt" in names
    sums = dict(
        reversed(line.split("  ")) for line in (out / release.SUMS).read_text().splitlines()
    )
    assert set(sums) == {f"{release.PACKAGE}/{wheel.name}", release.ZIP}
    for name, digest in sums.items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest


def test_a_tag_that_does_not_name_the_version_publishes_nothing(tmp_path):
    done = run_build_step("v0.0.0-typo", tmp_path)
    assert done.returncode == 1
    assert "release refused: the tag 'v0.0.0-typo' does not name pyproject.toml's version" in (
        done.stderr
    )
    assert not (tmp_path / "release").exists()


def test_the_jobs_publish_the_folder_the_build_step_writes():
    """The artifact is the build step's folder; PyPI gets its package folder only (the zip
    is no distribution), the GitHub release the zip, the hashes and the wheel."""
    jobs = workflow()["jobs"]
    upload = next(s for s in jobs["build"]["steps"] if "upload-artifact" in s.get("uses", ""))
    assert upload["with"]["path"] == "${{ runner.temp }}/release/"
    assert '--out "$RUNNER_TEMP/release"' in step("build", "Build the release")["run"]
    publish = next(s for s in jobs["pypi"]["steps"] if "pypi-publish" in s.get("uses", ""))
    assert publish["with"]["packages-dir"] == f"release/{release.PACKAGE}/"
    assert jobs["pypi"]["permissions"] == {"id-token": "write"}
    attach = step("github-release", "Attach the zip, the wheel and their hashes to the release")
    for name in (release.ZIP, release.SUMS, f"{release.PACKAGE}/*.whl"):
        assert f"release/{name}" in attach["run"]
    assert workflow()[True] == {"push": {"tags": ["v*"]}}  # YAML 1.1 reads `on` as True
