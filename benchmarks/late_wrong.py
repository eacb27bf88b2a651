"""The code a wrong exercise cell of a fully answered submission ends with (answered.py).

A class at its deadline hands in answers, not stubs: most right, some wrong, and the wrong
answer that costs a grader most is one that holds on the first cases and fails a late one,
since every case is then run and judged. answered.py builds that answer from the solution
notebook's own cell: it keeps the cell as it is, renames its answer (`_late_right`), and
appends `_late_wrong` and `_late_answer` under the exercise's name and parameters, with
LATE_FROM the number of calls after which the answer turns wrong.

This module is never imported by a submission nor by the grader: answered.py reads its
source, so the appended code is real code here (linted), not a string.
"""

LATE_SHAPE = ()  # replaced: the shape of an argument from which on the answer is wrong
LATE_FROM = 0  # replaced: calls answered right before the answer turns wrong regardless
_late_calls = [0]  # replaced: a counter of the exercise's own


def _late_right(*args):
    """Stands for the cell's own (right) answer, which answered.py renames to this name."""
    return args


def _late_wrong(value):
    """The value, wrong: floats scaled and shifted, integers and strings changed, containers
    and returned functions wrong inside; booleans and None as they are."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, tuple | list):
        items = [_late_wrong(item) for item in value]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, str):
        return value + "_"
    if callable(value) and not hasattr(value, "dtype"):

        def wrong(*args, **kwargs):
            return _late_wrong(value(*args, **kwargs))

        return wrong
    kind = str(getattr(value, "dtype", type(value).__name__))
    if "float" in kind or "complex" in kind:
        return value * 1.01 + 0.01
    if "int" in kind:
        return value + 1
    return value


def _late_shaped(args, shape):
    """Whether an argument is an array (numpy, TensorFlow, JAX, traced or not) of `shape`:
    a shape is known when a framework traces or compiles the answer, once per shape, where a
    count of calls would be taken once and kept."""
    for arg in args:
        found = getattr(arg, "shape", None)
        if found is not None and not callable(found) and tuple(found) == shape:
            return True
    return False


def _late_answer(*args):
    """The exercise's answer: right until an argument has LATE_SHAPE or it was called more
    than LATE_FROM times, then wrong (answered.py gives it the exercise's name and
    parameters, and calls _late_right and _late_shaped with them)."""
    _late_calls[0] += 1
    value = _late_right(*args)
    late = _late_calls[0] > LATE_FROM or _late_shaped(args, LATE_SHAPE)
    return _late_wrong(value) if late else value
