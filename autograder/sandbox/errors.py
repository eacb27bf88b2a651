"""The sandbox's own failures: never the student's."""

from __future__ import annotations


class SandboxFailure(RuntimeError):
    """The sandbox itself did not start: a grader problem, never the student's."""


class SandboxUnavailable(RuntimeError):
    """This machine cannot protect the grader; the message says what is missing and how."""
