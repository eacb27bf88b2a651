"""`python -m autograder`: the command line (see cli.py)."""

import os
import sys

# Both must be set before TensorFlow is imported. TF 2.21's oneDNN batch matmul corrupts the
# heap on some broadcast shapes, e.g. (6, 1, 6, 5) @ (5, 3) on an AVX-512 CPU, killing the
# whole batch (`free(): invalid pointer`); Eigen's kernels compute the same references safely.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from autograder.cli import main

sys.exit(main())
