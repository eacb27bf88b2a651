"""Children started before their submission is known: each imports its framework while the
grader prepares, then waits for the round it is given."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from dataclasses import dataclass

from autograder.sandbox.children import (
    ChildResult,
    cpus_for_round,
    end_processes,
    start_child,
    supervise_started,
)
from autograder.sandbox.pools import Sandbox
from autograder.sandbox.submission_folders import (
    Folders,
    for_submission,
    fresh_round,
    install_child_files,
)


@dataclass
class WarmChild:
    """A child started before its submission is known, which imports its frameworks and
    waits (child.wait_warm), in folders of its own.

    Grading one submission is mostly a TensorFlow or JAX child's import (TensorFlow: 1.5 s);
    the grader's own start-up (its imports, the references) is 0.3 s more, which a child
    started after it waits out. A warm child imports meanwhile. It is confined by the same
    layers as any child: only framework code runs before it confines itself, as in a fork
    server. The part that takes it writes its inputs and program, then says go; a part
    whose code sets the environment (read at import) or needs Keras runs a fresh child.
    """

    allowed: tuple[str, ...]
    base: Folders  # the submission first_round, as for_submission gives it
    first_round: Folders  # its first round's cleanup
    process: subprocess.Popen
    ready_read: int
    go: int
    cleanup: contextlib.ExitStack

    @classmethod
    def start(cls, sandbox: Sandbox, allowed: tuple[str, ...]) -> WarmChild:
        cleanup = contextlib.ExitStack()
        base = cleanup.enter_context(for_submission(sandbox))
        ready_read = ready_write = go_read = go_write = -1
        try:
            install_child_files(base)
            first_round = fresh_round(base, 1)
            ready_read, ready_write = os.pipe()
            go_read, go_write = os.pipe()
            process = start_child(
                sandbox.offered,
                first_round,
                [str(ready_write), "--warm", str(go_read), json.dumps(allowed)],
                (ready_write, go_read),
            )
        except BaseException:
            for fd in (ready_read, go_write):
                if fd >= 0:
                    os.close(fd)
            cleanup.close()
            raise
        finally:
            for fd in (ready_write, go_read):
                if fd >= 0:
                    os.close(fd)
        return cls(allowed, base, first_round, process, ready_read, go_write, cleanup)

    def run(self, deadline: float, sandbox: Sandbox) -> ChildResult:
        """Say go (the program is written; its CPUs settled) and supervise it as a freshly
        started child."""
        ready, self.ready_read = self.ready_read, -1
        with cpus_for_round(sandbox, self.first_round):
            with contextlib.suppress(OSError):  # gone already: it reports that it never started
                os.write(self.go, b"1")
            os.close(self.go)
            self.go = -1
            return supervise_started(
                self.process, ready, self.first_round, deadline, sandbox.offered
            )

    def stop(self) -> None:
        """End the child, if it still runs; its cleanup stay with its first_round."""
        if self.go >= 0:
            os.close(self.go)
            self.go = -1
        if self.ready_read >= 0:
            end_processes(self.process, self.first_round)
            os.close(self.ready_read)
            self.ready_read = -1
            self.process.stdout.close()

    def close(self) -> None:
        """End the child and remove its cleanup (the uid slot goes back)."""
        self.stop()
        self.cleanup.close()


def start_warm_children(sandbox: Sandbox, allowed: tuple[str, ...], count: int) -> None:
    """Start `count` warm children for these frameworks, kept in the sandbox's pool until a
    submission's part takes one (Sandbox.take_warm)."""
    for _ in range(count):
        sandbox.keep_warm(WarmChild.start(sandbox, allowed))
