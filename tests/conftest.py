import os

import pytest

from tests import tiers

# TensorFlow's start-up logging would otherwise reach every test's output and notebook kernel.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--chapter",
        metavar="NN",
        help="run only chapter NN's tests (its exercises' checks, its coursekit helpers, its "
        "notebook): `make test-chapter CH=NN`; tests/tiers.py says which tests belong",
    )


def pytest_configure(config: pytest.Config) -> None:
    chapter = config.getoption("chapter")
    if chapter is not None:
        tiers.chapter_or_error(chapter)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    chapter = config.getoption("chapter")
    if chapter is None:
        return
    selected, others = tiers.select_chapter(items, chapter)
    if others:
        config.hook.pytest_deselected(items=others)
    items[:] = selected
