"""`make bench`, section 4: the grader's own peak memory per submission, honest and hostile.

The grader parses every submission (its JSON, then its code) in its own process, where one
submission's cost is the whole batch's risk: a 5 MB cell of one-line statements made it peak
at 3.5 GB, and 64 MiB of small JSON values would have cost about 1.4 GB. Each case here is
graded alone by the instructor guide's command in a fresh process (after one warm-up run that
prepares the chapter's references, which every case then reads), whose own peak resident
memory (VmHWM, its sandboxed children excluded) is printed beside the honest
submission's. Target: no hostile case costs the grader more than HOSTILE_MARGIN_MIB over an
honest one.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTION = ROOT / "solutions" / "03_unbroadcasting.ipynb"
HOSTILE_MARGIN_MIB = 100
PEAK = re.compile(r"VmHWM:\s*(\d+) kB")
# The grader run as `python -m autograder grade ...`, printing its own peak at exit: VmHWM, the
# high-water mark of this process image (getrusage's ru_maxrss keeps the peak of the image
# before exec, here the benchmark's own, which built a 60 MiB file).
MEASURED = (
    "import atexit, runpy, sys\n"
    "atexit.register(lambda: print(*[line for line in open('/proc/self/status') "
    "if line.startswith('VmHWM')], file=sys.stderr))\n"
    "sys.argv = ['autograder', *sys.argv[1:]]\n"
    "runpy.run_module('autograder', run_name='__main__', alter_sys=True)\n"
)


def honest(path: Path) -> None:
    path.write_bytes(SOLUTION.read_bytes())


def large_cell(path: Path) -> None:
    """The solution with one more cell: "a = 1\\n" * 1,000,000 (a 6 MB notebook)."""
    notebook = json.loads(SOLUTION.read_text())
    notebook["cells"].append(
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": "a = 1\n" * 1_000_000,
        }
    )
    path.write_text(json.dumps(notebook))


def many_values(path: Path) -> None:
    """60 MiB of empty lists in the metadata, under the read limit: refused unparsed."""
    path.write_text(
        '{"nbformat": 4, "metadata": {"x": [' + ",".join(["[]"] * 20_000_000) + ']}, "cells": []}'
    )


def deep_nesting(path: Path) -> None:
    depth = 100_000
    path.write_text(
        '{"nbformat": 4, "metadata": {"x": ' + "[" * depth + "]" * depth + '}, "cells": []}'
    )


CASES: dict[str, Callable[[Path], None]] = {
    "honest (chapter 03 solution)": honest,
    "one 6 MB cell": large_cell,
    "60 MiB of JSON values": many_values,
    "JSON nested 100,000 deep": deep_nesting,
}


def grader_peak_mib(path: Path, out: Path, env: dict[str, str]) -> float:
    """The grader's own peak memory grading `path` alone, in MiB."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            MEASURED,
            "grade",
            str(path),
            "--out",
            str(out),
            "--seed",
            "1234",
            "--assignment",
            "03",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    found = PEAK.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"grading {path.name} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return int(found.group(1)) / 1024


def bench_grader_memory(folder: Path, env: dict[str, str]) -> bool:
    """Print each case's peak beside the honest one's; True when the target is met."""
    warm_up = folder / "warm-up.ipynb"
    honest(warm_up)
    grader_peak_mib(warm_up, folder / "warm-up", env)  # prepares the references, once
    peaks = {}
    for index, (label, write) in enumerate(CASES.items()):
        path = folder / f"case{index}.ipynb"
        write(path)
        peaks[label] = (path.stat().st_size, grader_peak_mib(path, folder / f"out{index}", env))
        path.unlink()
    honest_peak = peaks["honest (chapter 03 solution)"][1]
    print(f"{'submission':<32} {'file':>10} {'grader peak':>12} {'vs honest':>10}")
    for label, (size, peak) in peaks.items():
        print(
            f"{label:<32} {size / 1024**2:>7.1f} MiB {peak:>8.0f} MiB "
            f"{peak - honest_peak:>+7.0f} MiB"
        )
    worst = max(peak for _, peak in peaks.values()) - honest_peak
    passed = worst <= HOSTILE_MARGIN_MIB
    print(
        f"target: no hostile submission costs the grader more than {HOSTILE_MARGIN_MIB} MiB "
        f"over an honest one: worst {worst:+.0f} MiB, {'PASS' if passed else 'FAIL'}"
    )
    return passed
