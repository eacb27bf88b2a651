"""Checks for a machine with a GPU (JAX with CUDA), run by tests/device/run-on-gpu.sh.

They are not part of `make test` (no GPU there): the script names them explicitly.
"""
