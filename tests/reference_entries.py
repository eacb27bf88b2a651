"""A test's own reference cache, seeded from the user's, and runs that share a cache.

Seeding: a chapter's hidden cases and references for a seed (and, when asked, what its known
mistakes give on them), computed once in the user's cache, as a plain `grade` of that seed
computes them, and copied from there.

For tests whose subject is what comes after the references (warm children, the first plain
grade's known mistakes and compiled programs): computing a chapter's references again in a
folder of their own cost 10-30 CPU-seconds per test module on every run. Tests of computing
and caching references themselves (tests/grading/test_grading.py) keep empty caches.

Sharing: `at_once` starts what stands for several grading runs together on one cache (a Slurm
array's tasks, a Job's pods), as threads: the cache's locks are flock's, which conflict between
separate opens of a file even within one process."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from autograder.grading import cache_folders, refcache
from autograder.grading.assignment import prepare, save_known_mistakes


def seed_reference_cache(cache: Path, chapter: str, seed: int, *, mistakes: bool) -> None:
    """Copy the chapter's entry for `seed` from the user's reference cache into `cache`,
    computing it there first when it is missing (and the known mistakes' outputs, when
    `mistakes`). Copied with their permissions: only the grader may read references."""
    assignment = prepare(chapter, seed)  # reads the user's entry, or computes and stores it
    if mistakes:
        save_known_mistakes(assignment, seed)  # nothing to do when they are stored
    user = refcache.entry_path(cache_folders.reference_cache(), chapter, seed)
    mine = refcache.entry_path(cache, chapter, seed)
    cache.mkdir(parents=True, exist_ok=True)
    pairs = [(user, mine)]
    if mistakes:
        pairs.append((refcache.mistakes_path(user), refcache.mistakes_path(mine)))
    for source, target in pairs:
        if source.is_file():  # an unwritable user cache: the test's own run computes it
            shutil.copy2(source, target)


def at_once(count: int, work: Callable[[], Any]) -> list[Any]:
    """`work()` in `count` threads released together; their results, in order."""
    results: list[Any] = [None] * count
    start = threading.Barrier(count)

    def run(index: int) -> None:
        start.wait()
        results[index] = work()

    threads = [threading.Thread(target=run, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results
