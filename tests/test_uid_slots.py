"""Slot uids are reserved per grader process, so two graders on one machine never share one.

Every process of a slot uid is killed after each round: a uid held by two graders at once
would let one grader kill the other's children (a wrong 0 for an honest student).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import sandbox


def test_two_claims_get_disjoint_uids(tmp_path: Path) -> None:
    first, first_locks = sandbox.claim_uids(2, tmp_path)
    second, second_locks = sandbox.claim_uids(2, tmp_path)
    try:
        assert first == [sandbox.UID_BASE, sandbox.UID_BASE + 1]
        assert len(second) == 2 and not set(first) & set(second)
    finally:
        sandbox.release_uids(first_locks + second_locks)


def test_released_uids_can_be_claimed_again(tmp_path: Path) -> None:
    uids, locks = sandbox.claim_uids(1, tmp_path)
    sandbox.release_uids(locks)
    again, again_locks = sandbox.claim_uids(1, tmp_path)
    sandbox.release_uids(again_locks)
    assert again == uids


def test_another_process_holding_a_uid_is_respected(tmp_path: Path) -> None:
    """The lock is seen across processes: a second grader skips the uid the first holds."""
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path; from autograder import sandbox; "
         f"sandbox.claim_uids(1, Path({str(tmp_path)!r})); print('held', flush=True); "
         "sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        uids, locks = sandbox.claim_uids(1, tmp_path)
        sandbox.release_uids(locks)
        assert uids == [sandbox.UID_BASE + 1]
    finally:
        holder.communicate("")


def test_a_lock_folder_owned_by_someone_else_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    link = tmp_path / "locks"
    link.symlink_to(target)
    with pytest.raises(sandbox.SandboxFailure, match="not this grader's own folder"):
        sandbox.claim_uids(1, link)
