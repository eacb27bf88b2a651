"""Running untrusted code: detect what this machine can confine with, and start, supervise
and clean up the children that run a submission.

The code that runs inside the child is in `confined/`, which imports nothing of this package
(the child gets copies of its files). May import: the standard library and `confined`;
never judging, grading, exercises or notebook (a test keeps these directions).
"""
