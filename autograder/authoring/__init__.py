"""Tools for the course's authors and for learners' copies: one chapter from its edited
sources to every generated file (sync.py, `python -m autograder sync NN`), learner notebooks
built from the solutions (notebooks.py), the Chinese edition's prose and notebooks
(translations.py), the README's course map (coursemap.py), putting an exercise's stub back
(reset.py) and the zip for learners who cannot clone (bundle.py). May import: exercises,
locale. Never grading or sandbox: the message catalogue's step (autograder/catalogue.py, which
reads the grader's texts too) is passed to sync by the command line.
"""
