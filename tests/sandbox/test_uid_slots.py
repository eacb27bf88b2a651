"""Slot uids are reserved per grader process, so two graders on one machine never share one.

Every process of a slot uid is killed after each round: a uid held by two graders at once
would let one grader kill the other's children (a wrong 0 for an honest student).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from autograder.sandbox import errors, uid_slots


def test_two_claims_get_disjoint_uids(tmp_path: Path) -> None:
    first, first_locks = uid_slots.claim_uids(2, tmp_path)
    second, second_locks = uid_slots.claim_uids(2, tmp_path)
    try:
        assert first == [uid_slots.UID_BASE, uid_slots.UID_BASE + 1]
        assert len(second) == 2 and not set(first) & set(second)
    finally:
        uid_slots.release_uids(first_locks + second_locks)


def test_released_uids_can_be_claimed_again(tmp_path: Path) -> None:
    uids, locks = uid_slots.claim_uids(1, tmp_path)
    uid_slots.release_uids(locks)
    again, again_locks = uid_slots.claim_uids(1, tmp_path)
    uid_slots.release_uids(again_locks)
    assert again == uids


def test_another_process_holding_a_uid_is_respected(tmp_path: Path) -> None:
    """The lock is seen across processes: a second grader skips the uid the first holds."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from autograder.sandbox import uid_slots; "
            f"uid_slots.claim_uids(1, Path({str(tmp_path)!r})); print('held', flush=True); "
            "sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        uids, locks = uid_slots.claim_uids(1, tmp_path)
        uid_slots.release_uids(locks)
        assert uids == [uid_slots.UID_BASE + 1]
    finally:
        holder.communicate("")


def test_a_lock_folder_owned_by_someone_else_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    link = tmp_path / "locks"
    link.symlink_to(target)
    with pytest.raises(errors.SandboxFailure, match="not this grader's own folder"):
        uid_slots.claim_uids(1, link)


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to a slot uid needs root")
def test_a_slot_uid_reaches_a_shared_folder_but_not_one_inside_a_private_one():
    """Submission boxes are made in the temporary folder and bound by bubblewrap as the slot
    uid: where it cannot reach that folder (a TMPDIR under /root), the grader must not use
    slot uids, or every child fails to start."""
    top = Path(tempfile.mkdtemp(prefix="uid-reach-", dir="/tmp"))  # /tmp: anyone may pass
    try:
        top.chmod(0o711)
        (top / "shared").mkdir(mode=0o711)
        (top / "private" / "tmp").mkdir(parents=True)
        (top / "private").chmod(0o700)
        assert uid_slots._uid_can_reach(uid_slots.UID_BASE, str(top / "shared"))
        assert not uid_slots._uid_can_reach(uid_slots.UID_BASE, str(top / "private" / "tmp"))
    finally:
        shutil.rmtree(top)


@pytest.mark.skipif(os.geteuid() != 0, reason="starting a process as a slot uid needs root")
def test_killing_a_uid_does_not_wait_for_its_zombies(monkeypatch):
    """The child the grader just started as a slot uid is a zombie until the grader reaps it:
    kill_uid must not wait for it (it waited 20 x 0.05 s, a second of every round)."""
    uid = uid_slots.UID_BASE + uid_slots.UID_RANGE - 1  # the last slot: no grader here holds it
    process = subprocess.Popen(["/bin/true"], user=uid, group=uid, extra_groups=[], cwd="/")
    try:
        while not uid_slots._zombie(process.pid):  # exited, not yet reaped
            os.sched_yield()
        naps: list[float] = []
        monkeypatch.setattr(uid_slots.time, "sleep", naps.append)
        uid_slots.kill_uid(uid)
        assert naps == []
    finally:
        process.wait()
