"""The install cell's restart check: it names a replaced package, and only a replaced one, in the
notebook's language."""

from __future__ import annotations

import importlib
import sys

import numpy  # noqa: F401 - loaded, as in every chapter, so the check has real packages to see
import pytest

from coursekit.runtime import RestartNeeded, replaced_packages, stop_if_restart_needed


def _installed(folder, loaded: str, on_disk: str):
    """`stalepkg` imported saying `loaded`, while its distribution on disk says `on_disk`."""
    (folder / "stalepkg").mkdir()
    (folder / "stalepkg" / "__init__.py").write_text(f'__version__ = "{loaded}"\n')
    info = folder / f"stalepkg-{on_disk}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: stalepkg\nVersion: {on_disk}\n")
    (info / "top_level.txt").write_text("stalepkg\n")
    importlib.invalidate_caches()
    return importlib.import_module("stalepkg")


@pytest.fixture
def replaced_package(tmp_path, monkeypatch):
    """`stalepkg` 1.0 imported, while the distribution on disk now says 2.0 (pip upgraded it)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    yield _installed(tmp_path, "1.0", "2.0")
    sys.modules.pop("stalepkg", None)


def test_a_version_without_the_distributions_post_release_label_is_not_replaced(
    tmp_path, monkeypatch
):
    """certifi 2026.10.19.post1 says `__version__ = "2026.10.19"`: no restart for that."""
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        module = _installed(tmp_path, "2026.10.19", "2026.10.19.post1")
        assert replaced_packages({"stalepkg": module}) == []
    finally:
        sys.modules.pop("stalepkg", None)


def test_nothing_is_reported_when_the_loaded_versions_are_installed():
    assert replaced_packages() == []


def test_a_package_replaced_after_import_is_named(replaced_package):
    assert replaced_packages({"stalepkg": replaced_package}) == ["stalepkg 1.0 -> 2.0"]


def test_the_install_cell_stops_and_says_restart(replaced_package):
    with pytest.raises(RestartNeeded, match=r"stalepkg 1\.0 -> 2\.0.*Restart the runtime"):
        stop_if_restart_needed({"stalepkg": replaced_package})


def test_the_install_cell_says_when_no_restart_is_needed(capsys):
    stop_if_restart_needed()
    assert "no restart needed" in capsys.readouterr().out


def test_the_install_cell_speaks_the_notebooks_language(replaced_package, capsys):
    """It runs before the chapter's check.language(...): the cell passes the language."""
    stop_if_restart_needed({}, language="zh-CN")
    assert capsys.readouterr().out == "本课程的软件包已安装好，不需要重启。\n"
    with pytest.raises(RestartNeeded, match=r"（stalepkg 1\.0 -> 2\.0）。请重启内核"):
        stop_if_restart_needed({"stalepkg": replaced_package}, language="zh-CN")
