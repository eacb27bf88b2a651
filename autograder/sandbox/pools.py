"""What is running in one batch's sandbox: the slot uids, the CPU groups in use, the fork
servers and the warm children, beside the record of what this machine offers
(capabilities.Capabilities), which they never change."""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from autograder.sandbox import forkserver
from autograder.sandbox.capabilities import Capabilities
from autograder.sandbox.environment import scrubbed_environment


class Waiting(Protocol):
    """A child started before its submission was known (warm_children.WarmChild), as the
    pool keeps it: its frameworks, and a way to stop it."""

    allowed: tuple[str, ...]

    def close(self) -> None: ...


@dataclass
class Sandbox:
    """One batch's sandbox: what this machine offers (`offered`, detected once by
    sandbox.detect) and the pools of what runs in it, shared by the threads that grade."""

    offered: Capabilities = field(default_factory=Capabilities)
    # The slot uids not in use (None: the children have no uid of their own), and the fds
    # whose flocks reserve them for this grader.
    uid_slots: queue.Queue | None = None
    uid_locks: list[int] = field(default_factory=list)
    cpu_users: list[int] = field(default_factory=list)  # boxes on each of offered.cpu_groups
    cpu_lock: threading.Lock = field(default_factory=threading.Lock)
    fork_servers: dict[tuple[str, ...], forkserver.ForkServer] = field(default_factory=dict)
    fork_lock: threading.Lock = field(default_factory=threading.Lock)
    # Children started before their submission was known, not yet taken.
    warm_children: list[Waiting] = field(default_factory=list)
    warm_started: int = 0

    def fork_server(self, allowed: tuple[str, ...]) -> forkserver.ForkServer:
        """The running server for these frameworks, started (again, if one died) on demand;
        starting it early lets its import overlap the grader's own preparation."""
        with self.fork_lock:
            server = self.fork_servers.get(allowed)
            if server is None or not server.alive():
                if server is not None:
                    server.close()
                server = forkserver.ForkServer(
                    allowed,
                    scrubbed_environment(
                        Path("/"),
                        self.offered.compile_cache,
                        self.offered.compile_cache_writable,
                    ),
                )
                self.fork_servers[allowed] = server
            return server

    def keep_warm(self, warm: Waiting) -> None:
        """Keep a child just started for later (warm_children.start_warm_children)."""
        with self.fork_lock:
            self.warm_children.append(warm)
            self.warm_started += 1

    def take_warm(self, allowed: tuple[str, ...]) -> Waiting | None:
        """A warm child for these frameworks, or None."""
        with self.fork_lock:
            for warm in self.warm_children:
                if warm.allowed == allowed:
                    self.warm_children.remove(warm)
                    return warm
        return None

    def take_uid(self) -> int:
        """A slot uid for a new submission sandbox, waiting for one to come back; while none is
        free, idle warm children are stopped one by one, so a sandbox never waits on a uid that
        a warm child nobody takes holds."""
        assert self.uid_slots is not None
        while True:
            try:
                return self.uid_slots.get(timeout=0.05)
            except queue.Empty:
                with self.fork_lock:
                    idle = self.warm_children.pop() if self.warm_children else None
                if idle is not None:
                    idle.close()

    def take_cpus(self) -> tuple[int, ...]:
        """The CPUs of the least used job slot, for a new submission box; () where children
        are not pinned (one job slot, or one CPU). The grader runs at most --jobs children
        at once (but for a submission's numpy part beside its own workers), so each gets a
        group of its own wherever there are as many CPUs as --jobs."""
        groups = self.borrow_cpus((), 1)
        return groups[0] if groups else ()

    def borrow_cpus(self, own: tuple[int, ...], count: int) -> list[tuple[int, ...]]:
        """`count` more groups, the least used first, never `own`: for a new box, or for a
        round whose child forks workers into job slots the grader reserved for it (with
        give_cpus for each once done)."""
        groups = self.offered.cpu_groups
        with self.cpu_lock:
            if len(self.cpu_users) != len(groups):
                self.cpu_users = [0] * len(groups)
            others = [i for i, group in enumerate(groups) if group != own]
            chosen = sorted(others, key=self.cpu_users.__getitem__)[: max(0, count)]
            for index in chosen:
                self.cpu_users[index] += 1
            return [groups[index] for index in chosen]

    def give_cpus(self, cpus: tuple[int, ...]) -> None:
        """A box's CPUs back (its processes are gone)."""
        with self.cpu_lock:
            if cpus in self.offered.cpu_groups:
                self.cpu_users[self.offered.cpu_groups.index(cpus)] -= 1

    def close(self) -> None:
        """Stop the fork servers and warm children (the uid locks go with the process)."""
        with self.fork_lock:
            warm, self.warm_children = self.warm_children, []
        self.close_fork_servers()
        for child in warm:
            child.close()

    def close_fork_servers(self) -> None:
        """Stop the fork servers; a later round starts its own again (with this sandbox's
        record as it is then)."""
        with self.fork_lock:
            for server in self.fork_servers.values():
                server.close()
            self.fork_servers.clear()
