"""The environment every child starts with, fresh or forked: only what Python, numpy and the
frameworks need, nothing of the grader's own."""

from __future__ import annotations

from pathlib import Path

# A compile time no program reaches: JAX writes a program to its persistent cache only when
# compiling it took at least this long (it reads the cache whatever the setting).
NEVER_WRITTEN = "1e9"


def scrubbed_environment(
    workdir: Path, compile_cache: str | None = None, cache_writable: bool = False
) -> dict[str, str]:
    """Only what Python and numpy need; nothing of the grader's own environment. With a
    compilation cache, JAX looks there first, for every program however small. A child that
    may only read the cache (every child but the grader's own warm-up) is told never to
    write it: JAX would otherwise serialize and compress each program it compiled, try to
    write it, fail on the read-only folder and warn, for every program a submission of its
    own compiles (about 5 ms each)."""
    cache = (
        {
            "JAX_COMPILATION_CACHE_DIR": compile_cache,
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0" if cache_writable else NEVER_WRITTEN,
            "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
        }
        if compile_cache
        else {}
    )
    return cache | {
        "PATH": "/usr/bin:/bin",
        "HOME": str(workdir),
        "TMPDIR": str(workdir),
        "LANG": "C.UTF-8",
        "MPLBACKEND": "Agg",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "TF_ENABLE_ONEDNN_OPTS": "0",  # oneDNN's batch matmul can corrupt the heap (__main__)
        "XLA_FLAGS": "--xla_force_host_platform_device_count=1",
    }
