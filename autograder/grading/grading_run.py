"""What every submission of one grading run shares: its seed, limits, sandbox, the prepared
assignments and the protections recorded in every result."""

from __future__ import annotations

from dataclasses import dataclass, field

from autograder.grading.assignment import Assignment
from autograder.grading.parts import SpareSlots
from autograder.sandbox.children import Limits
from autograder.sandbox.pools import Sandbox


@dataclass(frozen=True)
class GradingRun:
    """What every submission of one grading run shares, passed as one object.

    The seed and the protections are recorded in every result; the assignments hold the
    cases and references computed once for the run.
    """

    seed: int
    limits: Limits
    sandbox: Sandbox
    assignments: dict[str, Assignment]
    assignment: str | None = None
    protections: tuple[str, ...] = ()
    # Child slots (of --jobs) that no submission is using; a submission takes some to run its
    # exercises in parts at once.
    spare: SpareSlots = field(default_factory=SpareSlots)
