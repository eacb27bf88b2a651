# Installed into the environment's etc/ipython/ by `make` (and by Binder's postBuild).
# TensorFlow's C++ start-up logging cannot be switched off by TF_CPP_MIN_LOG_LEVEL and carries
# timestamps; keeping C-level output in the server's terminal (ipykernel's behaviour before
# 6.0) keeps it out of notebook outputs, so stored outputs stay comparable by nbval.
c.IPKernelApp.capture_fd_output = False  # noqa: F821

# TensorFlow 2.21's oneDNN batch matmul corrupts the heap on some broadcast shapes (e.g.
# (6, 1, 6, 5) @ (5, 3) on AVX-512 CPUs); set before any cell can import TensorFlow.
import os  # noqa: E402

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
