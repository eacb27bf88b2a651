"""TensorFlow's start-up lines, kept off the grader's stderr and out of notebook cells.

Loading TensorFlow's C++ libraries prints lines such as "Could not find cuda drivers on your
machine, GPU will not be used." through absl before absl's logging is set up, so
TF_CPP_MIN_LOG_LEVEL cannot silence them ("All log messages before absl::InitializeLog()
is called are written to STDERR"). So while TensorFlow loads, file descriptor 2 is pointed
at a temporary file; afterwards every line is passed on to stderr except the known start-up
lines matched below. Anything else written meanwhile (a real error, another thread's
output) still arrives, only later.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

# absl's prefix ("I0000 00:00:1795439971.920394   30990 cudart_stub.cc:31] ") or TF's older
# one ("2024-05-01 10:00:00.000000: I tensorflow/core/util/port.cc:113] ").
_PREFIX = r"(?:[IWE]\d{4} [\d:.]+ +\d+ |\d{4}-\d\d-\d\d [\d:.]+: [IWE] )\S+:\d+\] "
_MESSAGES = (
    r"Could not find cuda drivers on your machine",
    r"failed call to cuInit",
    r"oneDNN custom operations are on",
    r"This TensorFlow binary is optimized to use available CPU instructions",
    r"Unable to register cu(?:DNN|FFT|BLAS) factory",
    r"TF-TRT Warning: Could not find TensorRT",
    r"computation placer already registered",
)
STARTUP_LINE = re.compile(
    r"^(?:WARNING: All log messages before absl::InitializeLog\(\) is called are written"
    r" to STDERR"
    rf"|{_PREFIX}(?:{'|'.join(_MESSAGES)}).*"
    r"|To enable the following instructions: .* rebuild TensorFlow with the appropriate"
    r" compiler flags\.)$"
)


def without_startup_lines(text: str) -> str:
    """`text` minus TensorFlow's known start-up lines; every other line kept, in order."""
    return "".join(
        line
        for line in text.splitlines(keepends=True)
        if not STARTUP_LINE.match(line.rstrip("\r\n"))
    )


@contextmanager
def startup_lines_dropped() -> Iterator[None]:
    """Run the body with fd 2 captured; relay what it wrote, less the start-up lines."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no stderr at all: nothing to protect
        yield
        return
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            kept = without_startup_lines(captured.read().decode(errors="replace"))
            if kept:
                sys.stderr.write(kept)
                sys.stderr.flush()
