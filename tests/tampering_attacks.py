"""Chapter-03 submissions that switch off the checks from inside the child's interpreter.

Each one's `unbroadcast` is right only by a way the check refuses (coursekit's
`broadcast_plan`, the harness's own reference) or when the attack worked, and its
`matmul_vjp` is right. Found by a red team: each once scored full marks.
The grader's reading of the source (tampering.py) refuses them before any child runs, so in
the hostile corpus they score (0, 0); with that reading switched off (tests/grading/
test_tampering.py), the child's own binding must still hold: (0, 1).
"""

from __future__ import annotations

# An unbroadcast whose helper the check refuses as the course's finished code (coursekit's
# broadcast_plan, where the course is pip-installed and the child can import it): marked as
# coursekit's here, so the refusal holds whether or not coursekit is importable.
BY_PLAN = """
def _axes(g, shape):
    lead = g.ndim - len(shape)
    ones = tuple(lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1)
    return tuple(range(lead)), ones

_axes.__module__ = "coursekit.broadcasting"

def unbroadcast(g, shape):
    drop, ones = _axes(g, shape)
    return g.sum(axis=ones, keepdims=True).sum(axis=drop)
"""

SWITCH_OFF_INVOKER = """
import sys
for key in list(sys.modules):
    if key == "harness" or key.endswith("harness"):
        sys.modules[key].invoker = lambda *a, **k: (lambda fn, *args: fn(*args))
"""

SWITCH_OFF_BY_MAIN = """
import __main__
__main__._invoker = lambda *a, **k: (lambda fn, *args: fn(*args))
"""

SWITCH_OFF_BY_GC = """
import gc
for thing in gc.get_objects():
    if isinstance(thing, dict) and "invoke_own_code" in thing and "refuse_course_helpers" in thing:
        thing["refuse_course_helpers"] = lambda *a, **k: None
"""

COPY_THE_REFERENCE = """
def unbroadcast(g, shape):
    import importlib
    return importlib.import_module("harness.ch03_unbroadcasting").unbroadcast(g, shape)
"""

IMPORT_THE_REFERENCE = """
def unbroadcast(g, shape):
    import harness.ch03_unbroadcasting as reference
    return reference.unbroadcast(g, shape)
"""

# Right values of its own, but it walks the checks' frames (where, in one interpreter, it
# could rewrite any global of the harness): only the grader's reading stops it.
FRAME_WALK = """
def unbroadcast(g, shape):
    import sys
    frame = sys._getframe(1)
    while frame is not None:
        frame = frame.f_back
    lead = g.ndim - len(shape)
    ones = tuple(lead + i for i, n in enumerate(shape) if n == 1 and g.shape[lead + i] != 1)
    return g.sum(axis=ones, keepdims=True).sum(axis=tuple(range(lead)))
"""


def tampering_attacks() -> dict[str, tuple[str, list[str]]]:
    """name -> (unbroadcast cell, extra cells), as tests/hostile.py's attacks. The switch
    sits in the exercise cell itself: the child runs every exercise cell whole, but only the
    statements of other cells that the exercises need (slicing.py)."""
    return {
        "switch_off_invoker": (SWITCH_OFF_INVOKER + BY_PLAN, []),
        "switch_off_by_main": (SWITCH_OFF_BY_MAIN + BY_PLAN, []),
        "switch_off_by_gc": (SWITCH_OFF_BY_GC + BY_PLAN, []),
        "copy_the_reference": (COPY_THE_REFERENCE, []),
        "import_the_reference": (IMPORT_THE_REFERENCE, []),
        "frame_walk": (FRAME_WALK, []),
    }


# What the child's binding alone stops (the others walk objects or frames, which one
# interpreter cannot hide: only the grader's reading stops them; docs/security.md).
STOPPED_BY_THE_CHILD = (
    "switch_off_invoker",
    "switch_off_by_main",
    "copy_the_reference",
    "import_the_reference",
)
