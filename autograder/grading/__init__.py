"""The classroom grader: from `python -m autograder grade` to the gradebook.

The steps, in order (command.py runs them): decide the sandbox and start warm children
before anything heavy is imported (start.py); read each submission once (submissions.py);
draw each chapter's hidden cases and references, from the reference cache when it has them
(assignment.py, refcache.py), shared by every submission with the run's seed, limits and
sandbox (grading_run.py); split a submission's exercises into parts (parts.py); run each
part's children round by round in the sandbox (rounds.py, slicing.py); judge what the child
wrote, read as untrusted data (verdicts.py, untrusted.py); write results.json, feedback.txt
and grades.csv (results.py). gradescope.py builds the Gradescope zip.

May import: judging, exercises, harness, sandbox, locale. This package's __init__ imports nothing,
so start.py runs before numpy and the exercises are imported.
"""
