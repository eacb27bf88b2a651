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


# Test modules of long, independent tests with no module fixture (a whole chapter graded by each
# test): under `--dist loadfile` their tests are spread over the workers instead of running one
# after another on one of them.
SPREAD_OVER_WORKERS = frozenset(
    {
        "tests/grading/test_chapters_graded.py",
        "tests/sandbox/test_neighbours.py",
    }
)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, absent without it
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """`--dist loadfile` (the Makefile's), but with SPREAD_OVER_WORKERS spread: a module, or a
    notebook (nbval runs its cells in order in one kernel), stays on one worker, so its
    fixtures are built once. pytest-xdist's own `loadgroup` cannot say this: it marks a group
    by rewriting a test's `_nodeid`, which pytest 9 no longer reads."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SpreadingLoadFile(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return nodeid if path in SPREAD_OVER_WORKERS else path

    return SpreadingLoadFile(config, log)
