"""The sandboxed side of grading: runs ONE submission's code, then its exercise functions.

The grader copies this file, confine.py and the harness package (how each exercise calls
the learner's function, shared with the in-notebook check) into a folder the child can read
but not write, and runs it with a fresh Python (under bubblewrap where present) in an empty
working folder. Before any submitted code runs, it confines itself (confine.py: rlimits,
no_new_privs, Landlock, seccomp, as the grader's plan says) and then sends one byte on the
`ready` file descriptor it was given, which is how the grader knows the sandbox started. It
imports only the standard library, numpy and the harness, never the grader: the child sees
the case inputs and nothing else (no references, no seed). It writes plain data only, into
the output folder: `out_<exercise>.npz` (arrays) and `out_<exercise>.json` (per-case
status), which the grader reads as untrusted data and judges itself.

Layout of the read-only folder, written by the grader:
  child.py, confine.py  this code
  harness/              the invokes, imported as the package `harness`
  program.json          {"cells": [...], "exercises": [...], "time_limit": s, "out": folder,
                         "confine": plan, "allowed": [...], "invoke": {name: invoke name}}
  inputs_<name>.npz     the arrays of every case, keys "c<case>_<argument>"
  inputs_<name>.json    {"arguments": [...], "params": [{name: value}, ...]}
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import io
import json
import math
import os
import re
import signal
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import numpy as np

FRAMEWORKS = ("tensorflow", "jax", "jaxlib", "keras", "tf_keras", "torch", "autograd")
# Imported with the framework. Keras is not: TensorFlow imports it (and matplotlib with it)
# only when it is installed, 1-2 s of every TensorFlow child's start-up, so the grader
# allows "keras" only to a submission whose code names it (grading.child_frameworks).
COMPANIONS = {"jax": ("jaxlib",)}
# A case that raises one of these ends its exercise's run, as it ends the notebook check:
# the stub's NotImplementedError means "not answered", and the others (the grader's
# engine.INPUT_INDEPENDENT) fail every case the same way. Up to a hundred more calls into
# TensorFlow or JAX, each raising and formatting its traceback, would change nothing.
STOPPING_ERRORS = frozenset({"NotImplementedError", "NameError", "ImportError",
                             "ModuleNotFoundError", "SyntaxError", "IndentationError",
                             "TabError", "FrameworkUsed"})
OUTPUT_LIMIT = 20_000  # characters of printing kept per cell or exercise
MAX_OUTPUT_BYTES = 50_000_000


class FrameworkUsed(RuntimeError):
    """A numpy exercise reached for a framework: the rule must be the learner's own."""


class ExerciseTimeout(BaseException):
    """Raised by the alarm; a BaseException so a bare `except Exception` cannot swallow it."""


class BoundedWriter(io.TextIOBase):
    """Keeps the first OUTPUT_LIMIT characters; a flood of printing costs nothing more."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0

    def write(self, text: str) -> int:
        if self.size < OUTPUT_LIMIT:
            self.parts.append(text[: OUTPUT_LIMIT - self.size])
        self.size += len(text)
        return len(text)

    def text(self) -> str:
        tail = "\n... (output cut)" if self.size > OUTPUT_LIMIT else ""
        return "".join(self.parts) + tail


class _GuardModule(types.ModuleType):
    def __getattr__(self, attribute: str):
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        raise FrameworkUsed(
            f"{self.__name__}.{attribute} was used. In the classroom grader a numpy exercise "
            "must be your own rule: TensorFlow and JAX are not available to it."
        )


class _FrameworkGuard(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """`import tensorflow` succeeds, but any use of it raises FrameworkUsed."""

    def __init__(self, guarded: tuple[str, ...]) -> None:
        self.guarded = guarded

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in self.guarded:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _GuardModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module) -> None:
        return None


class _Absent(importlib.abc.MetaPathFinder):
    """The frameworks a framework round does not allow are not installed, as far as it sees.

    It stands in front of the interpreter's own finders and answers None for those names,
    exactly what an uninstalled package gives: `import jax` raises ModuleNotFoundError and
    `importlib.util.find_spec("keras")` is None, which TensorFlow's start-up expects when it
    looks for Keras (a finder that raised there would break `import tensorflow`)."""

    def __init__(self, absent: tuple[str, ...], finders: list) -> None:
        self.absent = absent
        self.finders = finders

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in self.absent:
            return None
        for finder in self.finders:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                return spec
        return None

    def invalidate_caches(self) -> None:
        for finder in self.finders:
            getattr(finder, "invalidate_caches", lambda: None)()


def _install_guards(allowed: list[str]) -> None:
    """Guard every framework this round's exercises may not use.

    In a numpy round, `import tensorflow` succeeds but any use raises FrameworkUsed, so the
    verdict can say what happened. In a framework round, the others are simply absent
    (ModuleNotFoundError): TensorFlow would otherwise import JAX too (seconds of start-up),
    and it imports fine without it.
    """
    permitted = {name for name in FRAMEWORKS for a in allowed if name == a or name in
                 COMPANIONS.get(a, ())}
    guarded = tuple(name for name in FRAMEWORKS if name not in permitted)
    for name in list(sys.modules):
        if name.split(".")[0] in guarded:
            del sys.modules[name]
    if permitted:
        sys.meta_path[:] = [_Absent(guarded, list(sys.meta_path))]
    else:
        sys.meta_path.insert(0, _FrameworkGuard(guarded))
    # Check cells become no-ops: the real checker is not here, so it cannot be patched.
    check = _NoCheck("autograder.check")
    package = types.ModuleType("autograder")
    package.__path__ = []
    package.check = check
    sys.modules["autograder"] = package
    sys.modules["autograder.check"] = check


class _NoCheck(types.ModuleType):
    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *args, **kwargs: None


MAGIC = re.compile(r"^(\s*)[%!].*$", re.MULTILINE)


def _without_magics(source: str) -> str:
    return MAGIC.sub(lambda m: f"{m.group(1)}pass", source)


def run_cells(cells: list[str], namespace: dict) -> list[dict]:
    """Run each cell; a cell that fails is recorded and the next one still runs."""
    problems = []
    for index, source in enumerate(cells):
        writer = BoundedWriter()
        sys.stdout = sys.stderr = writer
        try:
            exec(compile(_without_magics(source), f"<cell {index + 1}>", "exec"), namespace)
        except BaseException as error:  # SystemExit and KeyboardInterrupt included
            problems.append({
                "cell": index + 1,
                "type": type(error).__name__,
                "message": str(error)[:500],
            })
        finally:
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    return problems


def _on_alarm(signum, frame):
    raise ExerciseTimeout()


def _record_value(value, index: int, arrays: dict) -> dict:
    items = value if isinstance(value, tuple | list) else None
    if items is None:
        return _record_item(value, f"c{index}_0", arrays)
    return {
        "kind": "sequence",
        "type": type(value).__name__,
        "items": [_record_item(item, f"c{index}_{j}", arrays) for j, item in enumerate(items)],
    }


def _record_item(item, key: str, arrays: dict) -> dict:
    if isinstance(item, np.ndarray | np.generic) and np.asarray(item).dtype.kind in "fiub":
        array = np.asarray(item)
        if array.nbytes > MAX_OUTPUT_BYTES:
            return {"kind": "other", "module": "numpy", "type": "ndarray (too large)"}
        arrays[key] = array
        return {"kind": "array", "key": key, "generic": isinstance(item, np.generic)}
    return {"kind": "other", "module": type(item).__module__, "type": type(item).__name__}


MAX_INDEX_BYTES = 5_000_000


def pack_arrays(arrays: dict) -> dict:
    """.npz members for these arrays: one flat buffer per dtype, and "index" (JSON: each
    key's dtype, shape and offset). Reading an .npz member costs about 0.1 ms, and a chapter's
    cases or outputs are thousands of small arrays: packed, the grader and the child read a
    few members instead. The grader writes the child's inputs this way, and reads its
    outputs (and its own reference cache) with unpack_arrays."""
    parts: dict[str, list] = {}
    sizes: dict[str, int] = {}
    index = {}
    for key, value in arrays.items():
        array = np.asarray(value)
        kind = array.dtype.str
        index[key] = [kind, list(array.shape), sizes.get(kind, 0)]
        parts.setdefault(kind, []).append(array.reshape(-1))
        sizes[kind] = sizes.get(kind, 0) + array.size
    packs = {kind: f"pack{i}" for i, kind in enumerate(sorted(parts))}
    members = {packs[kind]: np.concatenate(parts[kind]).astype(kind, copy=False)
               for kind in packs}  # concatenate makes a big-endian buffer native
    table = json.dumps({"index": index, "packs": packs}).encode()
    members["index"] = np.frombuffer(table, dtype=np.uint8)
    return members


def unpack_arrays(members: dict) -> dict:
    """The arrays `pack_arrays` packed, as views of their buffers; every entry is checked
    (the grader reads a sandboxed child's outputs with this): ValueError if one does not fit."""
    raw = members.get("index")
    if raw is None or raw.dtype != np.uint8 or raw.ndim != 1 or raw.size > MAX_INDEX_BYTES:
        raise ValueError("no index of the packed arrays")
    try:
        table = json.loads(raw.tobytes().decode())
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise ValueError("the index is not JSON") from None
    index = table.get("index") if isinstance(table, dict) else None
    packs = table.get("packs") if isinstance(table, dict) else None
    if not isinstance(index, dict) or not isinstance(packs, dict):
        raise ValueError("the index is not an object")
    return {key: _unpacked(key, place, packs, members) for key, place in index.items()}


def _unpacked(key: str, place, packs: dict, members: dict):
    if not isinstance(place, list) or len(place) != 3:
        raise ValueError(f"malformed entry for {key}")
    kind, shape, start = place
    if not isinstance(shape, list) or not all(
            type(n) is int and n >= 0 for n in [*shape, start]):
        raise ValueError(f"{key}: a negative or non-integer size")
    buffer = members.get(packs.get(kind)) if isinstance(kind, str) else None
    size = math.prod(shape)
    if buffer is None or buffer.ndim != 1 or buffer.dtype.str != kind \
            or start + size > buffer.size:
        raise ValueError(f"{key} lies outside its buffer")
    return buffer[start:start + size].reshape(shape)


def _load_cases(inputs: Path, name: str) -> tuple[list[str], list[dict], dict]:
    meta = json.loads((inputs / f"inputs_{name}.json").read_text())
    with np.load(inputs / f"inputs_{name}.npz", allow_pickle=False) as data:
        arrays = unpack_arrays({key: data[key] for key in data.files})
    return meta["arguments"], meta["params"], arrays


def _case_args(index: int, arguments: list[str], params: dict, arrays: dict) -> list:
    return [
        np.array(arrays[f"c{index}_{arg}"]) if f"c{index}_{arg}" in arrays
        else _as_static(params[arg])
        for arg in arguments
    ]


def _as_static(value):
    return tuple(value) if isinstance(value, list) else value


def _invoker(harness: types.ModuleType, name: str, allowed: tuple[str, ...],
             depends: tuple[tuple[str, str], ...] = ()):
    """The exercise's way of calling the learner's function: its invoke, named by the grader,
    resolved as the notebook check resolves it. `allowed` is this child's frameworks, which
    are the exercise's own (the grader groups exercises by them), so a framework exercise
    runs at full precision here as in the notebook; `depends` pairs each exercise it calls
    with its reference in the harness ("ch03:unbroadcast", declared on that exercise and
    written by the grader), which it runs in their place, as in the notebook.

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


def run_exercise(
    inputs: Path, out: Path, name: str, namespace: dict, program: dict,
    harness: types.ModuleType,
) -> None:
    """Call the learner's function on every case; write out_<name>.npz and .json.

    The exercise's invoke is resolved under its time limit: importing a framework takes a
    while, and the learner's cells may have left it broken."""
    (out / f"started_{name}").write_text("")
    harness.new_check()  # as the notebook's check does
    started = time.perf_counter()
    fn = namespace.get(name)
    report: dict = {"cases": []}
    arrays: dict = {}
    if not callable(fn):
        report["missing"] = True
        report["defined"] = sorted(k for k, v in namespace.items()
                                   if callable(v) and not k.startswith("_"))[:30]
    else:
        arguments, params, arrays_in = _load_cases(inputs, name)
        writer = BoundedWriter()
        signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, float(program["time_limit"]))
        sys.stdout = sys.stderr = writer
        try:
            invoke = _invoker(harness, program.get("invoke", {}).get(name, ""),
                              tuple(program.get("allowed", [])),
                              tuple((str(dependency), str(reference)) for dependency, reference
                                    in program.get("depends", {}).get(name, [])))
            for index, case_params in enumerate(params):
                args = _case_args(index, arguments, case_params, arrays_in)
                try:
                    value = invoke(fn, *args)
                    report["cases"].append(_record_value(value, index, arrays))
                except harness.MethodNotFollowed as error:  # judged on its value first
                    record = _record_value(error.value, index, arrays)
                    report["cases"].append({**record, "method": str(error)[:2000]})
                except ExerciseTimeout:
                    raise
                except BaseException as error:
                    report["cases"].append({
                        "kind": "error",
                        "type": type(error).__name__,
                        "message": str(error)[:1000],
                        "traceback": harness.learner_traceback(error, 3000),
                        "function": harness.raised_in(error),
                    })
                    if type(error).__name__ in STOPPING_ERRORS:
                        break
        except ExerciseTimeout:
            report["timeout"] = True
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        report["printed"] = writer.text()[:2000]
    report["seconds"] = round(time.perf_counter() - started, 3)
    np.savez(out / f"out_{name}.npz", **pack_arrays(arrays))
    (out / f"out_{name}.json").write_text(json.dumps(report))


def _load_harness(folder: Path) -> types.ModuleType:
    """The harness package from this file's folder, which `python -I` leaves off sys.path.

    Imported before any submitted code runs, so `harness` is this package and no other;
    the folder is read-only, so no bytecode is written beside it.
    """
    sys.dont_write_bytecode = True
    sys.path.insert(0, str(folder))
    return importlib.import_module("harness")


def _load_confine(folder: Path):
    """confine.py from this file's own folder (`python -I` does not put it on sys.path)."""
    spec = importlib.util.spec_from_file_location("grader_confine", folder / "confine.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_PRELOADED: list[str] | None = None  # what preload() imported: a fork server, a warm child


def preload(allowed: list[str]) -> None:
    """Import these frameworks (under this round's guards) before any submission exists.

    The fork server (forkserver.py) calls this once, then forks a child per round from the
    imported interpreter, so a framework's seconds of start-up are paid once per batch. It
    imports framework code only: no submission, case or reference is ever in this process.
    """
    global _PRELOADED
    _install_guards(allowed)
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


ENVIRONMENT = re.compile(r"\b(?:environ|putenv|unsetenv)\b")
# The course's notebooks quiet TensorFlow's C++ logging before importing it; the child's
# environment already sets it (to 3), and it changes nothing but logging.
QUIET_LOGGING = re.compile(r"""environ(?:\.setdefault\(|\[)\s*["']TF_CPP_MIN_LOG_LEVEL["']""")


def sets_environment(cells: list[str]) -> bool:
    """Whether the submission's code touches the environment (but for TensorFlow's log
    level). TensorFlow and JAX read settings from it when imported (JAX_ENABLE_X64,
    XLA_FLAGS), so such code imports them itself, after its own settings, as its notebook
    did."""
    return any(ENVIRONMENT.search(QUIET_LOGGING.sub("", cell)) for cell in cells)


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
        sys.exit(f"warm child: the import left {threads} threads running, which Landlock "
                 "would not confine; grade with fresh children (the grader's own fault).")
    if os.read(go, 1) != b"1":
        os._exit(0)
    os.close(go)
    serve(inputs, ready)


def serve(inputs: Path, ready: int) -> None:
    """Confine, say so on `ready`, run the program in `inputs`/program.json; never returns."""
    program = json.loads((inputs / "program.json").read_text())
    allowed = program.get("allowed", [])
    if _PRELOADED is not None and allowed != _PRELOADED:
        raise RuntimeError(f"preloaded {_PRELOADED}, but this round allows {allowed}")
    workers = program.get("workers") or [program["exercises"]]
    names, first, siblings = [name for worker in workers for name in worker], True, []
    confinement = _load_confine(inputs)

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
    if _PRELOADED is None:
        _install_guards(allowed)
        if allowed and not sets_environment(program["cells"]):
            with contextlib.suppress(Exception):  # else the learner's import says what failed
                import_frameworks(allowed)
    namespace: dict = {"__name__": "__main__"}
    problems = run_cells(program["cells"], namespace)
    if first:
        (out / "cells.json").write_text(json.dumps(problems))
    for name in names:
        run_exercise(inputs, out, name, namespace, program, harness)
    _leave(siblings)


def _preloaded_for_workers(allowed: list[str], cells: list[str]) -> bool:
    """Whether the frameworks are imported, here before confinement when need be, so that
    workers forked now share the import (framework code only, as in a fork server)."""
    if _PRELOADED is not None:
        return True
    if not allowed or sets_environment(cells):
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


def fork_workers(workers: list[list[str]], ready: int, confine: Callable[[], None]
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
