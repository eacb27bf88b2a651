"""What this machine offers to confine a child with, detected once per batch
(sandbox.detect), as a frozen record apart from what is running (pools.Sandbox).

The modules that only need to know what is offered (how to start, confine and supervise a
child; the protections recorded in every result) take this record and nothing else. The
grader's choices about it (fork the children from a server, JAX's compilation cache) make a
new record (dataclasses.replace), never a changed one.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Capabilities:
    """How children are confined here."""

    bwrap: str | None = None  # the bubblewrap binary, where it works here
    landlock_abi: int = 0
    seccomp: bool = False
    # The grader runs as root, and a child runs as root without capabilities (no slot uid
    # could run this Python or reach the temporary folder).
    run_as_root: bool = False
    # Each job slot has an unprivileged uid of its own (uid_slots.reserve_uid_slots).
    own_uids: bool = False
    tmpfs: bool = False  # each round's folders on a size-limited tmpfs of their own
    # Whether a child that starts as root may leave the IPC, network and host-name
    # namespaces (CAP_SYS_ADMIN: not in an unprivileged container).
    own_namespaces: bool = False
    # Each job slot's CPUs (sandbox.cpu_groups); a new submission box takes the least used.
    cpu_groups: tuple[tuple[int, ...], ...] = ()
    jobs: int = 1
    unsafe: bool = False
    # JAX's persistent compilation cache, built by the grader (`prepare --warm-with`): the
    # child reads it (bind-mounted read-only, a Landlock read rule) and never writes it; only
    # the grader's own warm-up, running our solution notebook, gets it writable.
    compile_cache: str | None = None
    compile_cache_writable: bool = False
    # `grade --fork-server`: each round forks from a server that imported numpy and the
    # round's framework once (forkserver.py), instead of starting a fresh Python.
    fork: bool = False

    @property
    def mode(self) -> str:
        if self.fork:
            return "fork server (fallback layers)"
        if self.bwrap:
            return "bubblewrap"
        return "unsafe: rlimits only" if self.unsafe and not self.landlock_abi else "fallback"
