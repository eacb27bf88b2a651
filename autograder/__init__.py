"""The course's check engine and classroom grader.

`from autograder import check` gives `check.<exercise>(fn)` for every exercise. TensorFlow
(about 4 s to import) loads on the first check, not on import; JAX (about 0.5 s) is imported
by the chapters whose known mistakes are written with it.
"""
