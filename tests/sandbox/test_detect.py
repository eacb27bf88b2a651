"""Choosing the sandbox: the probe of whether a child may leave the IPC, network and host-name
namespaces is asked of a fork where the grader is single-threaded (a tenth of the time a new
Python takes), and must answer as a new Python would."""

from __future__ import annotations

import os

from autograder.sandbox import sandbox


def namespaces() -> dict[str, int]:
    return {name: os.stat(f"/proc/self/ns/{name}").st_ino for name in ("ipc", "net", "uts")}


def test_a_fork_and_a_new_python_give_the_same_answer():
    assert sandbox.unshare_in_fork() == sandbox.unshare_in_python()


def test_the_fork_leaves_the_grader_where_it_was():
    before = namespaces()
    sandbox.unshare_in_fork()
    assert namespaces() == before
