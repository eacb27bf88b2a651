"""The course's check engine and classroom grader.

`from autograder import check` gives `check.<exercise>(fn)` for every exercise. TensorFlow
and JAX load on the first check, not on import.
"""
