"""A corpus of hostile chapter-03 submissions: each attacks the grader, not the exercise.

Every attack sits in a notebook whose `matmul_vjp` is right and whose `unbroadcast` is wrong
unless the attack succeeds: an attack that forges, steals or reads what it should not turns
its own `unbroadcast` into a pass. So the expected scores are (0, 1) in every mode, and any
(1, ...) is a hole. The attacks write into `TARGETS` (files the test digests afterwards).
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import nbformat
import numpy as np

from autograder.sandbox.children import FILE_SIZE_LIMIT
from autograder.sandbox.submission_folders import DISK_LIMIT, INODE_LIMIT

from .submissions import GOOD_MATMUL, GOOD_UNBROADCAST, LEARNER_COPY, ROOT, fill
from .tampering_attacks import tampering_attacks

WRONG = GOOD_UNBROADCAST.replace("return summed", "return 2 * summed")


def _correct_if(condition: str) -> str:
    """An unbroadcast that is right only when `condition` (the attack's success) holds."""
    return WRONG.replace(
        "    return 2 * summed",
        "    factor = 1 if (" + condition + ") else 2\n    return factor * summed",
    )


def _exit_in_unbroadcast(body: str) -> str:
    """An unbroadcast that runs `body`, then leaves at once (forcing another round)."""
    lines = "\n".join("    " + line for line in ["import json, os, sys", *body.splitlines()])
    return f"def unbroadcast(g, shape):\n{lines}\n    import os\n    os._exit(3)\n"


def _huge_npz() -> bytes:
    """An npz whose one member claims 10**13 float64 elements but holds eight bytes."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (10**13,)}
    )
    member = np.lib.format.MAGIC_PREFIX + b"\x01\x00" + header.getvalue()[8:] + b"\0" * 8
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("c0_0.npy", member)
    return buffer.getvalue()


def _forged_index_npz() -> bytes:
    """A packed npz whose index puts a billion float64 elements in a four-element buffer."""
    table = {"index": {"c0_0": ["<f8", [10**9], 0]}, "packs": {"<f8": "pack0"}}
    buffer = io.BytesIO()
    np.savez(
        buffer,
        pack0=np.arange(4.0),
        index=np.frombuffer(json.dumps(table).encode(), dtype=np.uint8),
    )
    return buffer.getvalue()


# Fills the child's folder: files of half the file-size limit until more than the disk limit
# is written or the folder is full, then empty files until no more can be made.
FILL_FOLDER = (
    "import os\n"
    f"block = b'x' * {FILE_SIZE_LIMIT // 2}\n"
    f"for i in range({DISK_LIMIT // (FILE_SIZE_LIMIT // 2) + 2}):\n"
    "    try:\n"
    "        with open(f'hog{i}', 'wb') as f:\n"
    "            f.write(block)\n"
    "    except OSError:\n"
    "        break\n"
    f"for i in range({INODE_LIMIT * 2}):\n"
    "    try:\n"
    "        open(f'inode{i}', 'w').close()\n"
    "    except OSError:\n"
    "        break\n"
)


def attacks(targets: dict[str, Path]) -> dict[str, tuple[str, list[str]]]:
    """name -> (unbroadcast cell, extra cells) for every attack."""
    paths = {k: str(v) for k, v in targets.items()}
    # The real output folder, as an attacker finds it: program.json beside sys.argv[0].
    # (Plain imports: `__import__` is refused by the grader's reading, tampering.py, before
    # any child runs, and these attacks are for the layers under it.)
    outs = "[json.load(open(os.path.join(os.path.dirname(sys.argv[0]), 'program.json')))['out']]"
    plant = (
        "import os, json, glob\n"
        "here = os.getcwd()\n"
        f"outs = {outs}\n"
        "for folder in [here, *outs]:\n"
        "    for name in ['child.log', 'program.json', 'cells.json', 'out_unbroadcast.json',\n"
        "                 'out_unbroadcast.npz', 'out_matmul_vjp.json']:\n"
        f"        for target in [{paths['victim']!r}, {paths['script']!r}]:\n"
        "            try:\n"
        "                os.symlink(target, os.path.join(folder, name))\n"
        "                break\n"
        "            except OSError:\n"
        "                pass\n"
    )
    write_out = (
        "import os, glob\n"
        "for folder in " + outs + ":\n"
        "    with open(os.path.join(folder, 'out_unbroadcast.json'), 'w') as f:\n"
        "        f.write(PAYLOAD)\n"
    )
    return {
        "symlink_next_round": (_exit_in_unbroadcast(plant), []),
        "fifo_outputs": (
            _exit_in_unbroadcast(
                "import os\n"
                "for folder in " + outs + ":\n"
                "    for name in ['out_unbroadcast.json', 'cells.json', 'out_unbroadcast.npz']:\n"
                "        try:\n"
                "            os.mkfifo(os.path.join(folder, name))\n"
                "        except OSError:\n"
                "            pass"
            ),
            [],
        ),
        "dev_zero_outputs": (
            _exit_in_unbroadcast(
                "import os\n"
                "for folder in " + outs + ":\n"
                "    for name in ['out_unbroadcast.json', 'out_unbroadcast.npz']:\n"
                "        try:\n"
                "            os.symlink('/dev/zero', os.path.join(folder, name))\n"
                "        except OSError:\n"
                "            pass"
            ),
            [],
        ),
        "deep_json": (_exit_in_unbroadcast("PAYLOAD = '[' * 200000\n" + write_out), []),
        "wrong_types_json": (
            _exit_in_unbroadcast(
                'PAYLOAD = \'{"cases": [{"kind": "array", "key": 5}], "defined": 7}\'\n' + write_out
            ),
            [],
        ),
        "huge_npz_header": (
            _exit_in_unbroadcast(
                f"import os\nBLOB = {_huge_npz()!r}\n"
                'PAYLOAD = \'{"cases": [{"kind": "array", "key": "c0_0"}]}\'\n'
                + write_out
                + "    with open(os.path.join(folder, 'out_unbroadcast.npz'), 'wb') as f:\n"
                "        f.write(BLOB)\n"
            ),
            [],
        ),
        "forged_packed_index": (
            _exit_in_unbroadcast(
                f"import os\nBLOB = {_forged_index_npz()!r}\n"
                'PAYLOAD = \'{"cases": [{"kind": "array", "key": "c0_0"}]}\'\n'
                + write_out
                + "    with open(os.path.join(folder, 'out_unbroadcast.npz'), 'wb') as f:\n"
                "        f.write(BLOB)\n"
            ),
            [],
        ),
        "daemon": (
            WRONG,
            [
                "import os, time\n"
                "if os.fork() == 0:\n"
                "    try:\n"
                "        os.setsid()\n"
                "    except OSError:\n"
                "        pass\n"
                "    if os.fork() == 0:\n"
                "        for _ in range(600):\n"
                "            time.sleep(0.1)\n"
                f"            for t in [{paths['victim']!r}, {paths['script']!r}]:\n"
                "                try:\n"
                "                    open(t, 'w').write('{\"score\": 100}')\n"
                "                except OSError:\n"
                "                    pass\n"
                "    os._exit(0)\n"
            ],
        ),
        "disk_hog": (
            WRONG,
            [
                "import os\n"
                "block = b'x' * (1 << 20)\n"
                "for i in range(3000):\n"
                "    try:\n"
                "        with open(f'hog{i}', 'wb') as f:\n"
                "            f.write(block)\n"
                "    except OSError:\n"
                "        break\n"
                "for i in range(60000):\n"
                "    try:\n"
                "        open(f'inode{i}', 'w').close()\n"
                "    except OSError:\n"
                "        break\n"
            ],
        ),
        # Fills its folder in one exercise, which ends the round: the grader's next round
        # must not need room there (it once failed with ENOSPC, a GRADING ERROR), and the
        # other exercise runs again in fresh folders and keeps its point.
        "fills_its_folder": (_exit_in_unbroadcast(FILL_FOLDER), []),
        # A right unbroadcast whose work is done by the course's own code (marked as a helper
        # of the exercises' module, which a pip-installed course lets a child import): the
        # check refuses any answer that calls the course's code, not only coursekit's.
        "calls_the_course_s_code": (
            "def _summed(g, shape):\n"
            "    lead = g.ndim - len(shape)\n"
            "    ones = tuple(lead + i for i, n in enumerate(shape)\n"
            "                 if n == 1 and g.shape[lead + i] != 1)\n"
            "    return g.sum(axis=ones, keepdims=True).sum(axis=tuple(range(lead)))\n"
            "_summed.__module__ = 'autograder.exercises.ch03_unbroadcasting'\n"
            "def unbroadcast(g, shape):\n"
            "    return _summed(g, shape)\n",
            [],
        ),
        "reads_parent_proc": (
            _correct_if("_peek()"),
            [
                "import os\n"
                "def _peek():\n"
                "    for pid in [os.getppid(), 1]:\n"
                "        try:\n"
                "            text = open(f'/proc/{pid}/cmdline', 'rb').read()\n"
                "            if b'--seed' in text or b'pytest' in text:\n"
                "                return True\n"
                "        except OSError:\n"
                "            pass\n"
                "    return False\n"
            ],
        ),
        "reads_solutions": (
            _correct_if("_solution_read()"),
            [
                "def _solution_read():\n"
                "    try:\n"
                f"        return 'BEGIN SOLUTION' in open({paths['solution']!r}).read()\n"
                "    except OSError:\n"
                "        return False\n"
            ],
        ),
        "lifts_rlimits_and_kills_parent": (
            _correct_if("_lifted()"),
            [
                "import os, resource, signal\n"
                "def _lifted():\n"
                "    try:\n"
                "        resource.setrlimit(resource.RLIMIT_AS, (-1, -1))\n"
                "        return True\n"
                "    except (OSError, ValueError):\n"
                "        return False\n"
                "for pid in [os.getppid()]:\n"
                "    try:\n"
                "        os.kill(pid, signal.SIGKILL)\n"
                "    except OSError:\n"
                "        pass\n"
            ],
        ),
        "writes_grader": (
            WRONG,
            [
                "import os\n"
                f"for target in {[paths[k] for k in ('package', 'script', 'victim', 'site')]!r}:\n"
                "    try:\n"
                "        with open(target, 'w') as f:\n"
                "            f.write('{\"score\": 100}')\n"
                "    except OSError:\n"
                "        pass\n"
            ],
        ),
        "forged_sandbox_message": (
            _exit_in_unbroadcast(
                "print('bwrap: execvp /usr/bin/python: No such file or directory', flush=True)\n"
                "import sys\n"
                "sys.__stdout__.write('bwrap: Creating new namespace failed\\n')\n"
                "sys.__stdout__.flush()"
            ),
            [
                "import sys\n"
                "sys.__stdout__.write('bwrap: setting up uid map: Permission denied\\n')"
                "\nsys.__stdout__.flush()"
            ],
        ),
        **leftover_attacks(),
    }


# Marks what the IPC attack makes, so a test can look for it by name as well as by count.
IPC_KEY, POSIX_SHM_NAME = 0x0AD40040, "autodiff_hostile_leftover"
# System V shared memory (16 MiB, filled), a message queue and a semaphore set, through
# ctypes, and POSIX shared memory: each outlives the process that made it unless the child
# has an IPC namespace of its own, or the calls are denied. The code is run by exec, which
# the grader's reading of the source only flags (ctypes itself it refuses): these are
# attacks on the layers below that reading. `_IPC_MADE` counts the objects it made.
MAKE_IPC = (
    "import ctypes\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "libc.shmat.restype = ctypes.c_void_p\n"
    "_IPC_MADE = 0\n"
    f"shm = libc.shmget({IPC_KEY}, 16 << 20, 0o1666)\n"
    "if shm >= 0:\n"
    "    _IPC_MADE += 1\n"
    "    address = libc.shmat(shm, None, 0)\n"
    "    if address not in (None, ctypes.c_void_p(-1).value):\n"
    "        ctypes.memset(address, 1, 16 << 20)\n"
    f"_IPC_MADE += libc.msgget({IPC_KEY}, 0o1666) >= 0\n"
    f"_IPC_MADE += libc.semget({IPC_KEY}, 4, 0o1666) >= 0\n"
    "try:\n"
    "    from multiprocessing import shared_memory\n"
    f"    posix = shared_memory.SharedMemory({POSIX_SHM_NAME!r}, create=True, size=1 << 20)\n"
    "    posix.buf[:4] = b'left'\n"
    "    posix.close()\n"
    "    _IPC_MADE += 1\n"
    "except Exception:\n"
    "    pass\n"
)
# Seconds the busy attack keeps its processes and threads busy: the neighbours' timing is
# measured in test_neighbours.py (a longer run); here it must merely cost nothing but its row.
BUSY_SECONDS = 2
# As many busy processes as it may start (500 once gave a grading error for its own row
# and 18-61 s for its neighbours'), and threads that hash without the GIL, so they take a CPU
# each. `_STARTED` counts the processes.
BUSY = (
    "import hashlib, os, threading, time\n"
    "def _burn(seconds):\n"
    "    block, end = b'x' * (4 << 20), time.time() + seconds\n"
    "    while time.time() < end:\n"
    "        hashlib.sha256(block).digest()\n"
    "def busy(processes, threads, seconds):\n"
    "    burners = [threading.Thread(target=_burn, args=(seconds,)) for _ in range(threads)]\n"
    "    for burner in burners:\n"
    "        burner.start()\n"
    "    started = []\n"
    "    for _ in range(processes):\n"
    "        try:\n"
    "            pid = os.fork()\n"
    "        except OSError:\n"
    "            break\n"
    "        if pid == 0:\n"
    "            _burn(seconds)\n"
    "            os._exit(0)\n"
    "        started.append(pid)\n"
    "    for pid in started:\n"
    "        os.waitpid(pid, 0)\n"
    "    for burner in burners:\n"
    "        burner.join()\n"
    "    return len(started)\n"
)
# Threads with small stacks, far past what a child may run (children.TASK_LIMIT, or its uid's
# RLIMIT_NPROC): each takes a process id, and enough of them would leave the machine none.
THREAD_BOMB = (
    "import threading, time\n"
    "_BOMBED = []\n"
    "def _bomb():\n"
    "    if not _BOMBED:  # once: unbroadcast is called for every case\n"
    "        threading.stack_size(1 << 16)\n"
    "        started = 0\n"
    "        try:\n"
    "            for _ in range(1500):\n"
    "                threading.Thread(target=time.sleep, args=(20,), daemon=True).start()\n"
    "                started += 1\n"
    "        except RuntimeError:\n"
    "            pass\n"
    "        time.sleep(2)\n"
    "        _BOMBED.append(started == 1500)\n"
    "    return _BOMBED[0]\n"
)


def leftover_attacks() -> dict[str, tuple[str, list[str]]]:
    """Attacks on what a child leaves on the machine and on its neighbours' share of it;
    each succeeds (its unbroadcast right) only where the layer against it is missing."""
    return {
        "ipc_leftovers": (_correct_if("_IPC_MADE > 0"), [f"exec({MAKE_IPC!r})\n"]),
        "busy_neighbours": (
            _correct_if("_STARTED >= 500"),
            [BUSY + f"_STARTED = busy(500, 4, {BUSY_SECONDS})\n"],
        ),
        "thread_bomb": (_correct_if("_bomb()"), [THREAD_BOMB]),
    }


def always_run(notebook: nbformat.NotebookNode, extra: list[str]) -> nbformat.NotebookNode:
    """Tag the attack cells as exercise cells, which the grader's child always runs whole.

    The child runs only the statements an exercise needs (autograder/grading/slicing.py), so an
    attack in a cell of its own would simply be skipped. An attacker controls the tags too,
    so this is the case to defend: the attack runs, and every protection is exercised."""
    for cell in notebook.cells:
        if cell.cell_type == "code" and cell.source in extra:
            cell.metadata.setdefault("tags", []).append("exercise")
    return notebook


def write_corpus(folder: Path, targets: dict[str, Path]) -> dict[str, tuple[float, float]]:
    """Write the hostile notebooks and the honest ones they might harm; return expected."""
    learner = nbformat.read(LEARNER_COPY, as_version=4)
    expected: dict[str, tuple[float, float]] = {}
    for name, (unbroadcast, extra) in attacks(targets).items():
        notebook = always_run(fill(learner, unbroadcast, GOOD_MATMUL, extra), extra)
        nbformat.write(notebook, folder / f"{name}.ipynb")
        expected[name] = (0, 1)
    # The hog fills its folder in the cells, which every round runs: no exercise has room
    # for its result, so it costs the whole submission, nothing else.
    expected["disk_hog"] = (0, 0)
    # Code that switches the checks off from inside the child's interpreter is refused by the
    # grader's reading of the source before any child runs: the whole submission scores 0.
    for name, (unbroadcast, extra) in tampering_attacks().items():
        nbformat.write(fill(learner, unbroadcast, GOOD_MATMUL, extra), folder / f"{name}.ipynb")
        expected[name] = (0, 0)
    honest = fill(learner, GOOD_UNBROADCAST, GOOD_MATMUL, [])
    for name in ("honest", "grades.csv", "..."):
        nbformat.write(honest, folder / f"{name}.ipynb")
        expected[name] = (1, 1)
    for student, cell in (("alice", GOOD_UNBROADCAST), ("bob", WRONG)):
        (folder / student).mkdir()
        nbformat.write(fill(learner, cell, GOOD_MATMUL, []), folder / student / "hw.ipynb")
    unknown = fill(learner, GOOD_UNBROADCAST, GOOD_MATMUL, [])
    unknown.metadata["course"] = {**unknown.metadata["course"], "chapter": "99"}
    nbformat.write(unknown, folder / "unknown_chapter.ipynb")
    return expected


SOLUTION = ROOT / "solutions" / "03_unbroadcasting.ipynb"
