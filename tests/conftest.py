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


# The longest modules (`make test`'s slowest, 35-140 s each), started first: `--dist loadfile`
# hands modules to the workers in collection order, and these, collected mid-way, kept one
# worker busy minutes after the other had finished everything else.
LONGEST_FIRST = (
    "tests/judging/test_mistakes.py",
    "tests/harness/test_method.py",
    "tests/exercises/test_adding_an_exercise.py",
    "tests/grading/test_chapters_graded.py",
    "tests/benchmarks/test_answered.py",
    "tests/notebook/test_browser.py",
    "tests/exercises/test_no_importable_answers.py",
    "tests/grading/test_warm_start.py",
    "tests/grading/test_default_way.py",
)


def _longest_first(item: pytest.Item) -> int:
    path = item.nodeid.split("::", 1)[0]
    return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    chapter = config.getoption("chapter")
    if chapter is None:
        items.sort(key=_longest_first)  # stable: every other test keeps its order
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
