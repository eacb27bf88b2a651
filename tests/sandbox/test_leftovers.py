"""Each layer that keeps a child from leaving things on the machine or taking its neighbours'
CPUs, tested alone: seccomp's ban on IPC objects, on new processes and on changing CPUs or
other processes' scheduling; the IPC namespace of a child that starts as root; the removal of
a slot uid's IPC objects; how the CPUs are shared out among job slots; the supervisor's count
of a child's threads. Each probe runs in a process of its own, since a filter or a namespace
cannot be undone. The whole grader under these attacks: test_hostile.py and
test_neighbours.py."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder.sandbox import children, sandbox, uid_slots
from autograder.sandbox.capabilities import Capabilities
from autograder.sandbox.confined import confine
from autograder.sandbox.pools import Sandbox

from ..submissions import ROOT

# Makes one System V object of each kind and a POSIX message queue; prints what each call
# returned and its errno (a denied call: -1 and EPERM).
MAKE_IPC = """
import ctypes, json
libc = ctypes.CDLL(None, use_errno=True)
def call(name, *args):
    value = getattr(libc, name)(*args)
    return [value, ctypes.get_errno()]
made = {"shm": call("shmget", 0, 1 << 20, 0o1666), "msg": call("msgget", 0, 0o1666),
        "sem": call("semget", 0, 2, 0o1666), "mq": call("mq_open", b"/leftover_probe", 0o102,
                                                      0o600, None)}
print(json.dumps(made))
"""


def run_confined(setup: str, probe: str, timeout: float = 60) -> str:
    """`setup` (confine's calls), then `probe`, in a fresh Python; its stdout."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from autograder.sandbox.confined import confine\n" + setup + "\n" + probe,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def needs_seccomp() -> None:
    if not confine.seccomp_available():
        pytest.skip("libseccomp or pyseccomp is missing here")


def sysv_objects() -> dict[str, set[str]]:
    """Every System V IPC object on the machine, by kind (its id and key)."""
    found = {}
    for kind in ("shm", "msg", "sem"):
        lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]
        found[kind] = {" ".join(line.split()[:2]) for line in lines}
    return found


def test_a_confined_child_may_make_no_ipc_object():
    """Shared memory, message queues and semaphores outlive the process that made them."""
    needs_seccomp()
    before = sysv_objects()
    made = run_confined("confine.apply_seccomp()", MAKE_IPC)
    assert sysv_objects() == before
    for kind, (value, error) in json.loads(made).items():
        assert (value, error) == (-1, 1), f"{kind}: returned {value}, errno {error}"


def test_a_child_started_as_root_takes_its_ipc_objects_with_it():
    """Without seccomp, the objects it makes are in its own IPC namespace, gone with it."""
    if not sandbox.can_leave_namespaces():
        pytest.skip("this grader may not make namespaces (not root, or no CAP_SYS_ADMIN)")
    before = sysv_objects()
    made = run_confined("confine.leave_namespaces()", MAKE_IPC)
    assert all(value >= 0 for value, _ in json.loads(made).values()), made
    assert sysv_objects() == before


def test_a_slot_uids_ipc_objects_are_removed_after_its_round():
    """A child with a uid of its own starts unprivileged, without a namespace of its own."""
    if os.geteuid() != 0:
        pytest.skip("uid slots need a grader running as root")
    uid = uid_slots.UID_BASE + uid_slots.UID_RANGE - 2  # a slot no grader here holds
    before = sysv_objects()
    shm_name = Path("/dev/shm") / f"leftover-probe-{os.getpid()}"
    python = python_for(uid)
    if python is None:
        pytest.skip("no Python here that the slot uid may run")
    made = subprocess.run(
        [
            python,
            "-I",
            "-c",
            MAKE_IPC.replace(
                "print(json.dumps(made))",
                f'open({str(shm_name)!r}, "w").close()\nprint(json.dumps(made))',
            ),
        ],
        user=uid,
        group=uid,
        extra_groups=[],
        cwd="/",
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert made.returncode == 0, made.stderr[-3000:]
    try:
        assert sysv_objects() != before  # the probe did make them
        uid_slots.remove_ipc_of(uid)
        assert sysv_objects() == before
        assert not shm_name.exists()
    finally:
        with contextlib.suppress(FileNotFoundError):
            shm_name.unlink()


def python_for(uid: int) -> str | None:
    """A Python this uid may start (the probe needs the standard library only): the
    grader's, or the system's where the grader's sits in a folder only root may enter."""
    for python in (sys.executable, "/usr/bin/python3"):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            if (
                subprocess.run(
                    [python, "-I", "-c", "pass"],
                    user=uid,
                    group=uid,
                    extra_groups=[],
                    cwd="/",
                    capture_output=True,
                    timeout=30,
                    check=False,
                ).returncode
                == 0
            ):
                return python
    return None


def test_a_child_without_its_own_uid_starts_threads_but_no_process():
    """No rlimit counts a root child's processes (RLIMIT_NPROC never applies to uid 0)."""
    needs_seccomp()
    probe = (
        "import os, subprocess, threading\n"
        "done = []\n"
        "threads = [threading.Thread(target=done.append, args=(1,)) for _ in range(8)]\n"
        "[t.start() for t in threads]; [t.join() for t in threads]\n"
        "outcome = {'threads': len(done)}\n"
        "for name, start in (('fork', os.fork), ('spawn', lambda: subprocess.run(['true']))):\n"
        "    try:\n"
        "        if start() == 0:\n"
        "            os._exit(0)\n"
        "        outcome[name] = 'started'\n"
        "    except OSError as error:\n"
        "        outcome[name] = error.errno\n"
        "print(outcome)\n"
    )
    assert run_confined("confine.apply_seccomp(single_process=True)", probe) == (
        "{'threads': 8, 'fork': 1, 'spawn': 1}"
    )
    # A child with a uid of its own keeps its processes (its uid's RLIMIT_NPROC bounds them).
    assert "'fork': 'started'" in run_confined("confine.apply_seccomp()", probe)


def test_a_pinned_child_keeps_its_cpus_and_leaves_its_neighbours_alone():
    needs_seccomp()
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("one CPU: nothing to pin to")
    probe = (
        "import os, threading\n"
        "outcome = {}\n"
        "for name, call in (('widen', lambda: os.sched_setaffinity(0, "
        f"{cpus})), ('renice parent', lambda: os.setpriority(os.PRIO_PROCESS, os.getppid(), "
        "19)), ('pin parent', lambda: os.sched_setaffinity(os.getppid(), "
        f"[{cpus[0]}]))):\n"
        "    try:\n"
        "        call()\n"
        "        outcome[name] = 'done'\n"
        "    except OSError as error:\n"
        "        outcome[name] = error.errno\n"
        "seen = []\n"
        "thread = threading.Thread(target=lambda: seen.append(sorted(os.sched_getaffinity(0))))\n"
        "thread.start(); thread.join()\n"
        "os.nice(1)  # its own priority stays its own\n"
        "print([sorted(os.sched_getaffinity(0)), seen[0], outcome])\n"
    )
    own = cpus[-1]
    assert run_confined(f"confine.pin_cpus([{own}])\nconfine.apply_seccomp()", probe) == str(
        [[own], [own], {"widen": 1, "renice parent": 1, "pin parent": 1}]
    )
    assert sorted(os.sched_getaffinity(0)) == cpus


def test_the_cpus_are_shared_out_one_group_per_job_slot():
    assert sandbox.cpu_groups(2, [0, 1, 2, 3]) == [(0, 1), (2, 3)]
    assert sandbox.cpu_groups(3, [0, 1, 2, 3, 4, 5, 6]) == [(0, 1), (2, 3), (4, 5, 6)]
    assert sandbox.cpu_groups(4, [0, 1]) == [(0,), (1,)]  # more slots than CPUs: shared
    assert sandbox.cpu_groups(1, [0, 1, 2, 3]) == []  # one slot: no neighbour, not pinned
    assert sandbox.cpu_groups(8, [3]) == []
    box = Sandbox(Capabilities(cpu_groups=((0,), (1,), (2,))))
    first, second = box.take_cpus(), box.take_cpus()
    assert first != second
    # A round whose child forks two workers (in slots the grader reserved) borrows one more
    # group, the least used, and gives it back after the round.
    borrowed = box.borrow_cpus(first, 1)
    assert borrowed == [(2,)]
    for group in borrowed:
        box.give_cpus(group)
    box.give_cpus(first)
    assert box.take_cpus() == first
    assert Sandbox().take_cpus() == ()


def test_the_supervisor_counts_every_thread_below_a_child():
    """What it stops a child without a uid of its own at (children.TASK_LIMIT)."""
    script = (
        "import os, threading, time\n"
        "for _ in range(20):\n"
        "    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
        "if os.fork() == 0:\n"
        "    for _ in range(10):\n"
        "        threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
        "print('ready', flush=True)\n"
        "time.sleep(30)\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, start_new_session=True
    )
    try:
        assert process.stdout.readline().strip() == b"ready"
        deadline = time.monotonic() + 10
        while children.descendant_tasks(process.pid) < 32 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert children.descendant_tasks(process.pid) == 21 + 11
    finally:
        os.killpg(process.pid, 9)
        process.wait()
        process.stdout.close()
