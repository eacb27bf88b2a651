"""The course's check engine and classroom grader.

`from autograder import check` gives `check.<exercise>(fn)` for every exercise. TensorFlow
(about 4 s to import) loads on the first check, not on import; JAX (about 0.5 s) is imported
by the chapters whose known mistakes are written with it.
"""

import os

# Before TensorFlow is imported anywhere: its oneDNN batch matmul (TF 2.21) corrupts the heap
# on some broadcast shapes (e.g. (6, 1, 6, 5) @ (5, 3) on AVX-512 CPUs), which would kill a
# learner's kernel while a check shrinks a case. The kernel configuration sets it too, for
# notebooks that import TensorFlow before the checks.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
