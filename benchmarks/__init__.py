"""Benchmarks: `make bench` runs `python -m benchmarks.bench` from the repository root.

Kept out of the grader package, because they use the teaching helpers (coursekit), which the
grader must never depend on.
"""
