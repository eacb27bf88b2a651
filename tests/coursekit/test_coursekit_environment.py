from __future__ import annotations

from importlib import metadata

from coursekit.environment import environment_report, package_versions


def test_installed_packages_report_their_versions():
    report = environment_report(("numpy", "tensorflow", "jax"))
    lines = report.splitlines()
    assert len(lines) == 3
    assert lines[0].split() == ["numpy", metadata.version("numpy")]
    assert "missing" not in report


def test_missing_package_is_reported_not_raised():
    name = "no-such-package-for-the-course"
    assert package_versions((name,)) == {name: None}
    report = environment_report(("numpy", name))
    assert report.splitlines()[1].startswith(name)
    assert "missing: install with pip install -r requirements.txt" in report
