"""What the notebook check and the grader share: one verdict for the same code on both sides.

The `Exercise` declaration (exercise.py), the cases and their profiles (cases.py), the
frameworks' references (references.py), the comparison (compare.py), calling a learner's
function once and judging the attempt (attempts.py), the whole check with its shrinking
(engine.py), the report and its words (report.py). May import: the
harness (how an exercise is called) and locale (its words in the notebook's language). Never
notebook, grading, sandbox or authoring.
"""
