"""The code that runs in the confined child: run the cells, confine itself, run the exercises.

The grader copies these files into a folder the child reads; the child runs them as scripts
under `python -I`, so they import the standard library, numpy and each other only (by file
path), never the rest of the package. The grader imports them too, for the file format they
share with it (wire.py) and for how the child reads the submitted cells (submitted.py).
"""
