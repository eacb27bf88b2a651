"""Tools for the course's authors and for learners' copies: learner notebooks built from the
solutions (notebooks.py), the README's course map (coursemap.py), and putting an exercise's
stub back (reset.py). May import: exercises, locale. Never grading or sandbox.
"""
