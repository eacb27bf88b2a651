"""Reading a file the grader did not write, bounded: a submission (start.py reads them before
the heavy imports, so this module is standard library only) and whatever a sandboxed child
left behind (untrusted.py). A FIFO that would block the reader, a device, anything larger
than the limit: refused, never read."""

from __future__ import annotations

import os
import stat
from pathlib import Path


class Untrusted(ValueError):
    """The file is not what the grader accepts (the submission's problem, never the batch's)."""


class TooLarge(Untrusted):
    """The file holds more than the limit."""


def read_bytes(path: Path, limit: int, *, follow_symlinks: bool = False) -> bytes:
    """The bytes of a regular file, at most `limit`; opened without blocking, then checked.
    A child's files are never followed through a symlink (it could point at another
    student's); a submission given by the instructor may be one."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_symlinks else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as error:
        raise Untrusted(f"cannot open {path.name}: {error.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Untrusted(f"{path.name} is not a regular file")
        if info.st_size > limit:
            raise TooLarge(f"{path.name} is larger than {limit} bytes")
        with os.fdopen(os.dup(fd), "rb") as file:
            data = file.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise TooLarge(f"{path.name} is larger than {limit} bytes")
    return data
