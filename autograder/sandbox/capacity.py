"""How many children this machine can run at once: its CPUs and memory, read the way a
container limits them (cgroup v2, then v1)."""

from __future__ import annotations

import contextlib
import math
import os
from pathlib import Path

# Memory a child may need at once: a TensorFlow child's resident set is about 0.6 GiB.
MEMORY_PER_CHILD = 1024**3
# Where a container's limits are: cgroup v2, then v1 ((quota, period) files for the CPU).
CGROUP_CPU_FILES: tuple[tuple[str, str | None], ...] = (
    ("/sys/fs/cgroup/cpu.max", None),
    ("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu/cpu.cfs_period_us"),
)
CGROUP_MEMORY_FILES = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


def default_jobs() -> int:
    """Children at once when --jobs is not given: the CPUs this process may run on (its
    affinity, and its container's CPU quota where one is set), and no more than the memory
    it may use allows."""
    cpus = min(len(os.sched_getaffinity(0)), _cgroup_cpus() or os.cpu_count() or 1)
    return max(1, min(cpus, _usable_memory() // MEMORY_PER_CHILD))


def _cgroup_cpus() -> int | None:
    """The CPU quota of this process's cgroup (v2 `cpu.max`, v1 `cpu.cfs_quota_us`), rounded
    up; None when there is none."""
    for quota_file, period_file in CGROUP_CPU_FILES:
        try:
            fields = Path(quota_file).read_text().split()
            if period_file:
                fields.append(Path(period_file).read_text().strip())
            quota, period = int(fields[0]), int(fields[1])
        except (OSError, ValueError, IndexError):
            continue
        if quota > 0 and period > 0:
            return max(1, math.ceil(quota / period))
    return None


def _usable_memory() -> int:
    """Bytes this process may still use: the machine's available memory, or less under a
    cgroup memory limit (`memory.max`, v1 `memory.limit_in_bytes`)."""
    available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    try:
        text = Path("/proc/meminfo").read_text()
        available = int(text.split("MemAvailable:")[1].split()[0]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    for limit_file in CGROUP_MEMORY_FILES:
        with contextlib.suppress(OSError, ValueError):
            available = min(available, int(Path(limit_file).read_text().strip()))
    return available
