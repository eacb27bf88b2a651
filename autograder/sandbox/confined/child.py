"""The sandboxed side of grading: runs ONE submission's code, then its exercise functions.

The grader copies this folder's files (this one; confine.py, guards.py, submitted.py, which
runs the cells, and wire.py) and the harness package (how each exercise calls the learner's
function, shared with the in-notebook check) into a folder the child can read but not write,
and runs this file with a fresh Python (under bubblewrap where present) in an empty working
folder. Before any submitted code runs, it confines itself (confine.py: rlimits,
no_new_privs, Landlock, seccomp, as the grader's plan says) and then sends one byte on the
`ready` file descriptor it was given, which is how the grader knows the sandbox started. It
imports only the standard library, numpy, the harness and its siblings, never the grader: the
child sees the case inputs and nothing else (no references, no seed). What it reads and
writes, and in which files, is wire.py's format; the grader reads what it writes as untrusted
data and judges it itself.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import signal
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import numpy as np


def _sibling(name: str) -> types.ModuleType:
    """A file beside this one. The grader imports it as part of its package; the child (run
    as `python -I child.py`) and the fork server (which loads this file by its path) load it
    by its path, since `python -I` puts no folder on sys.path."""
    if __package__:
        return importlib.import_module(f"{__package__}.{name}")
    key = f"grader_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, Path(__file__).with_name(f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


wire = _sibling("wire")
guards = _sibling("guards")
submitted = _sibling("submitted")


class ExerciseTimeout(BaseException):
    """Raised by the alarm; a BaseException so a bare `except Exception` cannot swallow it."""


def _on_alarm(signum, frame):
    raise ExerciseTimeout()


def _invoker(
    harness: types.ModuleType,
    name: str,
    allowed: tuple[str, ...],
    depends: tuple[tuple[str, str], ...] = (),
):
    """The exercise's way of calling the learner's function: its invoke, named by the grader,
    resolved as the notebook check resolves it. `allowed` is this child's frameworks, which are the
    exercise's own (the grader groups exercises by them), so a framework exercise runs at full
    precision here as in the notebook; `depends` pairs each exercise it calls with its reference in
    the harness ("ch03_unbroadcasting:unbroadcast", declared on that exercise and written by the
    grader), which it runs in their place, as in the notebook.

    If it cannot even be set up (say the learner's cells broke an import), every case
    reports that error instead of the child dying.
    """
    try:
        return harness.invoker(name, allowed, depends)
    except Exception as error:
        failure = error

        def broken(fn, *args):
            raise failure

        return broken


class Checks:
    """What run_exercise needs of the harness (each exercise's invokes included), bound
    before any submitted cell runs: a cell that replaces `harness.invoker` changes nothing."""

    def __init__(self, harness: types.ModuleType, program: dict, names: list[str]) -> None:
        self.new_check = harness.new_check
        self.method_not_followed = harness.MethodNotFollowed
        self.learner_traceback = harness.learner_traceback
        self.raised_in = harness.raised_in
        allowed = tuple(program.get("allowed", []))
        self.invokes: dict[str, Callable] = {}
        for name in names:
            invoke = program.get("invoke", {}).get(name, "")
            depends = tuple(
                (str(dependency), str(reference))
                for dependency, reference in program.get("depends", {}).get(name, [])
            )
            self.invokes[name] = _invoker(harness, invoke, allowed, depends)
            if depends:  # judged with the learner's own helpers too (wire.OWN_HELPERS)
                self.invokes[wire.own_helpers(name)] = _invoker(harness, invoke, allowed)


def _hidden_harness(folder: Path) -> dict[str, types.ModuleType]:
    """Take the harness and the child's own modules out of sys.modules and their folder off
    sys.path (`import harness` in a cell finds nothing); returns them, for bind_checks."""
    hidden = {
        key: module
        for key, module in list(sys.modules.items())
        if key == "harness" or key.startswith(("harness.", "grader_"))
    }
    for key in hidden:
        del sys.modules[key]
    with contextlib.suppress(ValueError):
        sys.path.remove(str(folder))
    return hidden


def bind_checks(
    harness: types.ModuleType, hidden: dict[str, types.ModuleType], program: dict, names: list[str]
) -> Checks:
    """The checks, bound with the harness modules put back for the binding only (a chapter
    module may be imported now), then hidden again."""
    sys.modules.update(hidden)
    try:
        return Checks(harness, program, names)
    finally:
        for key in [
            k for k in sys.modules if k == "harness" or k.startswith(("harness.", "grader_"))
        ]:
            hidden[key] = sys.modules.pop(key)


def run_exercise(
    inputs: Path,
    out: Path,
    name: str,
    namespace: dict,
    program: dict,
    checks: Checks,
    label: str = "",
) -> None:
    """Call the learner's function on every case; write out_<label>.npz and .json (`label`:
    the exercise's name, or wire.own_helpers(name) for its run with the learner's helpers).

    The invokes were bound before the cells ran (Checks); the cases run under the time
    limit."""
    label = label or name
    wire.started_file(out, label).write_text("")
    checks.new_check()  # as the notebook's check does
    started = time.perf_counter()
    fn = namespace.get(name)
    report: dict = {"cases": []}
    arrays: dict = {}
    if not callable(fn):
        report["missing"] = True
        report["defined"] = sorted(
            k for k, v in namespace.items() if callable(v) and not k.startswith("_")
        )[:30]
    else:
        arguments, params, arrays_in = wire.load_cases(inputs, name)
        writer = submitted.BoundedWriter()
        signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, float(program["time_limit"]))
        sys.stdout = sys.stderr = writer
        try:
            invoke = checks.invokes[label]
            for index, case_params in enumerate(params):
                args = wire.case_args(index, arguments, case_params, arrays_in)
                try:
                    value = invoke(fn, *args)
                    report["cases"].append(wire.record_value(value, index, arrays))
                except checks.method_not_followed as error:  # judged on its value first
                    record = wire.record_value(error.value, index, arrays)
                    report["cases"].append({**record, "method": str(error)[:2000]})
                except ExerciseTimeout:
                    raise
                except BaseException as error:
                    report["cases"].append(
                        {
                            "kind": "error",
                            "type": type(error).__name__,
                            "message": str(error)[:1000],
                            "traceback": checks.learner_traceback(error, 3000),
                            "function": checks.raised_in(error),
                        }
                    )
                    if type(error).__name__ in wire.STOPPING_ERRORS:
                        break
        except ExerciseTimeout:
            report["timeout"] = True
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        report["printed"] = writer.text()[:2000]
    report["seconds"] = round(time.perf_counter() - started, 3)
    report_file, arrays_file = wire.output_files(out, label)
    np.savez(arrays_file, **wire.pack_arrays(arrays))
    report_file.write_text(json.dumps(report))


def _load_harness(folder: Path) -> types.ModuleType:
    """The harness package from this file's folder, which `python -I` leaves off sys.path.

    Imported before any submitted code runs, so `harness` is this package and no other;
    the folder is read-only, so no bytecode is written beside it.
    """
    sys.dont_write_bytecode = True
    sys.path.insert(0, str(folder))
    return importlib.import_module("harness")


_PRELOADED: list[str] | None = None  # what preload() imported: a fork server, a warm child


def preload(allowed: list[str]) -> None:
    """Import these frameworks (under this round's guards) before any submission exists.

    The fork server (forkserver.py) calls this once, then forks a child per round from the
    imported interpreter, so a framework's seconds of start-up are paid once per batch. It
    imports framework code only: no submission, case or reference is ever in this process.
    """
    global _PRELOADED
    guards.install(allowed)
    import_frameworks(allowed)
    _PRELOADED = list(allowed)


def import_frameworks(allowed: list[str]) -> None:
    """Import the round's frameworks with the cyclic garbage collector paused, then freeze
    what they made.

    TensorFlow's import makes hundreds of thousands of objects, and the collector kept
    walking them while it ran: pausing it takes a fifth off the import (3.1 s -> 2.5 s, five
    runs each). Freezing keeps later collections, while the learner's code runs, from
    walking them again, and a forked child from touching (copying) their pages. Only the
    framework's own code runs here, never the submission's."""
    gc.disable()
    try:
        for name in allowed:
            importlib.import_module(name)
            if name == "jax":
                importlib.import_module("jax.numpy")
    finally:
        gc.enable()
        gc.freeze()


def main() -> None:
    inputs, ready = Path(__file__).resolve().parent, int(sys.argv[1])
    if sys.argv[2:3] == ["--warm"]:
        wait_warm(inputs, ready, int(sys.argv[3]), json.loads(sys.argv[4]))
    serve(inputs, ready)


def thread_count() -> int:
    """This process's threads: a fork copies the calling one only, and Landlock confines the
    calling one only, so a fork server, a warm child and a child that forks workers check
    that the framework's import left no other."""
    return len(os.listdir("/proc/self/task"))


def wait_warm(inputs: Path, ready: int, go: int, allowed: list[str]) -> None:
    """A warm child: import the frameworks before the submission is known, then wait for
    the grader's go (one byte on `go`) and serve the program it wrote by then.

    The grader starts these before it has imported itself and read the submission, so a
    TensorFlow child's second and a half of import overlaps its own start-up (sandbox.
    WarmChild). As in a fork server, only framework code runs before confinement. Landlock
    confines the calling thread only, so the import must have left no other thread; and
    end of file on `go` means the grader did not need this child. An import that fails
    here is made again after confinement, where the learner's own import says what failed,
    as in a fresh child."""
    with contextlib.suppress(Exception):
        preload(allowed)
    threads = thread_count()
    if threads != 1:
        sys.exit(
            f"warm child: the import left {threads} threads running, which Landlock "
            "would not confine; grade with fresh children (the grader's own fault)."
        )
    if os.read(go, 1) != b"1":
        os._exit(0)
    os.close(go)
    serve(inputs, ready)


def serve(inputs: Path, ready: int) -> None:
    """Confine, say so on `ready`, run the program in `inputs`/program.json; never returns."""
    program = json.loads((inputs / wire.PROGRAM).read_text())
    allowed = program.get("allowed", [])
    if _PRELOADED is not None and allowed != _PRELOADED:
        raise RuntimeError(f"preloaded {_PRELOADED}, but this round allows {allowed}")
    workers = program.get("workers") or [program["exercises"]]
    names, first, siblings = [name for worker in workers for name in worker], True, []
    confinement = _sibling("confine")

    def confine() -> None:
        confinement.confine(program["confine"])

    if len(workers) > 1 and _preloaded_for_workers(allowed, program["cells"]):
        names, first, siblings, ready = fork_workers(workers, ready, confine)
    confine()
    if ready >= 0:
        os.write(ready, b"1")  # confined: only now may submitted code run
        os.close(ready)
    out = Path(program["out"])
    harness = _load_harness(inputs)
    late = submitted.sets_environment(program["cells"])
    if _PRELOADED is None:
        guards.install(allowed)
        if allowed and not late:
            with contextlib.suppress(Exception):  # else the learner's import says what failed
                import_frameworks(allowed)
    # Code that sets the environment imports the frameworks itself, after its settings; the
    # chapter modules of the harness import them too, so their invokes are bound after the
    # cells (the grader's reading of the source, tampering.py, decides for those).
    checks = None if late and allowed else Checks(harness, program, names)
    hidden = _hidden_harness(inputs)
    namespace = submitted.fresh_main()
    problems = submitted.run_cells(program["cells"], namespace)
    if first:
        (out / wire.CELL_ERRORS).write_text(json.dumps(problems))
    checks = checks or bind_checks(harness, hidden, program, names)
    for name in names:
        run_exercise(inputs, out, name, namespace, program, checks)
        if wire.own_helpers(name) in checks.invokes:
            run_exercise(inputs, out, name, namespace, program, checks, wire.own_helpers(name))
    _leave(siblings)


def _preloaded_for_workers(allowed: list[str], cells: list[str]) -> bool:
    """Whether the frameworks are imported, here before confinement when need be, so that
    workers forked now share the import (framework code only, as in a fork server)."""
    if _PRELOADED is not None:
        return True
    if not allowed or submitted.sets_environment(cells):
        return False
    try:
        preload(allowed)
    except Exception:  # the learner's own import, after confinement, says what failed
        return False
    return True


def _leave(workers: list[int]) -> NoReturn:
    """Wait for these workers, then leave at once: the learner's atexit handlers and
    threads have no say in the result."""
    for pid in workers:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    sys.stdout.flush()
    os._exit(0)


def fork_workers(
    workers: list[list[str]], ready: int, confine: Callable[[], None]
) -> tuple[list[str], bool, list[int], int]:
    """Fork one worker process per list of exercises: each confines itself, then runs the
    cells and its own exercises. The process that forked them confines itself, says so on
    `ready` and waits for them; it runs no submitted code, so a worker that crashes ends its
    own exercise only. Returns in each worker (its exercises, whether it is the first, which
    writes cells.json, the workers it must wait for: none, and no `ready`: -1).

    The grader asks for workers when a submission's exercises may run at once: one child
    imports the framework and its workers share the import (copy-on-write) instead of each
    part's child paying it. They fork before confinement, as a fork server's children do:
    Landlock lets each process read its own /proc/<pid> only, which TensorFlow needs; and
    before the learner's cells: TensorFlow and JAX start thread pools at their first
    operation, and a fork copies the calling thread only, so only a process with one thread
    forks; otherwise it runs every exercise itself."""
    if thread_count() != 1:
        return [name for worker in workers for name in worker], True, [], ready
    started: list[int] = []
    sys.stdout.flush()  # or what is buffered would be written once per worker
    for index, worker in enumerate(workers):
        try:
            pid = os.fork()
        except OSError:  # no process left to fork: this process runs the rest itself
            rest = [name for later in workers[index:] for name in later]
            return rest, not started, started, ready
        if pid == 0:
            os.close(ready)
            return worker, index == 0, [], -1
        started.append(pid)
    confine()
    os.write(ready, b"1")
    os.close(ready)
    _leave(started)


if __name__ == "__main__":
    main()
