"""Choosing the sandbox: whether a child may leave the IPC, network and host-name namespaces is
asked of a fork where the grader is still single-threaded (a tenth of the time a new Python
takes), of a new Python otherwise, and both must give the answer a child would get."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

from autograder.sandbox import sandbox

from ..submissions import ROOT

# In a fresh interpreter, single-threaded as `grade` is when it chooses its sandbox.
BOTH_PROBES = """
import json, os
from autograder.sandbox import sandbox
def namespaces():
    return [os.stat(f"/proc/self/ns/{name}").st_ino for name in ("ipc", "net", "uts")]
before = namespaces()
threads = len(os.listdir("/proc/self/task"))
fork, python = sandbox.unshare_in_fork(), sandbox.unshare_in_python()
print(json.dumps({"threads": threads, "fork": fork, "python": python,
                  "stayed": namespaces() == before, "chosen": sandbox.can_leave_namespaces()}))
"""


def test_a_fork_gives_a_new_python_s_answer_and_leaves_the_grader_where_it_was():
    done = subprocess.run(
        [sys.executable, "-c", BOTH_PROBES], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["threads"] == 1  # so can_leave_namespaces took the fork
    assert answer["fork"] == answer["python"] == answer["chosen"]
    assert answer["stayed"]


def test_a_grader_with_threads_starts_a_python_instead(monkeypatch):
    """A fork copies other threads' locks held: with a thread running, no fork."""

    def no_fork() -> bool:
        raise AssertionError("forked a multi-threaded grader")

    monkeypatch.setattr(sandbox, "unshare_in_fork", no_fork)
    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 0)  # as root, where it is asked
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert sandbox.can_leave_namespaces() == sandbox.unshare_in_python()
    finally:
        stop.set()
        other.join()
