"""The in-notebook side of the checks: what a learner's kernel shows besides a report.

`check.progress` (progress.py), the line shown while a first check compiles (waiting.py) and
`check.hint` (hints.py). May import: locale, judging, exercises, authoring (for `check.reset`).
Never grading or sandbox: a learner's kernel has no sandbox.
"""
