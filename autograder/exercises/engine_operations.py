"""Drawing a random program's text for the engine check, one operation at a time.

Split from engine_programs.py, which holds the check's contract, its inputs and cases and
the frameworks' references: this is the grammar the programs are drawn from (OPS, each with
what values suit it) and the drawing itself, which keeps every value away from a kink, a pole
or an overflow (TIE, LARGEST) so that any convention at a tie passes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st

from autograder.harness.programs import INPUTS, numpy_value, shown

TIE = 1e-3  # maximum and relu never see two values (or a value and 0) closer than this
LARGEST = 100.0  # no value of a program is larger in magnitude

# ---------------------------------------------------------------- one operation at a time

Pool = dict[str, np.ndarray]  # every value so far, by name: the inputs, then y0, y1, ...
Draw = st.DrawFn


def _small(x: np.ndarray, bound: float) -> bool:
    return x.size == 0 or float(np.abs(x).max()) <= bound


def _positive(x: np.ndarray) -> bool:
    return x.size == 0 or float(x.min()) >= 0.2


def _away_from_zero(x: np.ndarray) -> bool:
    return x.size == 0 or float(np.abs(x).min()) >= 0.2


def _broadcasts(a: np.ndarray, b: np.ndarray) -> bool:
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        return False
    return True


def _multiplies(a: np.ndarray, b: np.ndarray) -> bool:
    if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-2]:
        return False
    try:
        np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        return False
    return True


def _no_tie(a: np.ndarray, b: np.ndarray) -> bool:
    return float(np.abs(np.subtract(a, b)).min(initial=np.inf)) >= TIE


# op -> (does `a` (and `b`) suit it, the expression with `a` and `b` filled in)
ELEMENTWISE: dict[str, tuple[Callable[[np.ndarray, np.ndarray], bool], str]] = {
    "add": (_broadcasts, "{a} + {b}"),
    "sub": (_broadcasts, "{a} - {b}"),
    "mul": (_broadcasts, "{a} * {b}"),
    "div": (lambda a, b: _broadcasts(a, b) and _away_from_zero(b), "{a} / {b}"),
    "matmul": (_multiplies, "{a} @ {b}"),
    "maximum": (lambda a, b: _broadcasts(a, b) and _no_tie(a, b), "maximum({a}, {b})"),
}
DISTINCT = ("sub", "div", "maximum")  # never with the same value twice (x - x is 0: a tie)
UNARY: dict[str, tuple[Callable[[np.ndarray], bool], str]] = {
    "neg": (lambda a: True, "-{a}"),
    "exp": (lambda a: float(a.max(initial=0.0)) <= 3.0, "exp({a})"),
    "log": (_positive, "log({a})"),
    "tanh": (lambda a: True, "tanh({a})"),
    "relu": (lambda a: float(np.abs(a).min(initial=np.inf)) >= TIE, "relu({a})"),
    "square": (lambda a: _small(a, 8.0), "{a} ** 2"),
    "cube": (lambda a: _small(a, 4.0), "{a} ** 3"),
    "sqrt": (_positive, "{a} ** 0.5"),
    "reciprocal": (_positive, "{a} ** -1"),
}
SHAPED = ("sum", "mean", "reshape", "transpose", "broadcast_to", "index", "log_softmax")
# What each line draws from: matmul three times, the broadcasting operations and indexing twice,
# so that a notebook's 30 programs hold several of each (a draw that does not suit the value
# gives way to the next op that does).
OPS = (
    "tanh",
    "matmul",
    "add",
    "mul",
    "index",
    "matmul",
    *ELEMENTWISE,
    *(op for op in UNARY if op != "tanh"),
    *SHAPED,
)


def _axes(draw: Draw, ndim: int) -> Any:
    """None, one axis, or (when there are two or more) a pair of axes."""
    choices: list[Any] = [None, *range(ndim)]
    if ndim >= 2:
        choices.append((0, ndim - 1))
    return draw(st.sampled_from(choices))


def _reduction(draw: Draw, op: str, a: str, value: np.ndarray) -> str:
    axis = _axes(draw, value.ndim)
    keepdims = draw(st.booleans()) if axis is not None else False
    return (
        f"{op}({a}"
        + (f", axis={axis}" if axis is not None else "")
        + (", keepdims=True" if keepdims else "")
        + ")"
    )


def _reshape(draw: Draw, a: str, value: np.ndarray) -> str | None:
    shape = value.shape
    targets = [t for t in ((value.size,), shape[::-1], (1, *shape)) if t != shape]
    return f"reshape({a}, {draw(st.sampled_from(targets))})" if targets else None


def _transpose(draw: Draw, a: str, value: np.ndarray) -> str | None:
    if value.ndim < 2:
        return None
    axes = tuple(draw(st.permutations(range(value.ndim))))
    if axes == tuple(range(value.ndim)):
        axes = axes[::-1]
    return f"transpose({a}, {axes})"


def _broadcast_to(draw: Draw, a: str, value: np.ndarray) -> str:
    shape = tuple(draw(st.integers(2, 3)) if n == 1 else n for n in value.shape)
    if shape == value.shape:
        shape = (draw(st.integers(2, 3)), *shape)
    return f"broadcast_to({a}, {shape})"


def _index(draw: Draw, a: str, value: np.ndarray) -> str | None:
    """A slice along one axis, or an integer list along it (it may repeat indices)."""
    if value.ndim == 0:
        return None
    axis = draw(st.integers(0, value.ndim - 1))
    n = value.shape[axis]
    if n >= 2 and draw(st.booleans()):
        start = draw(st.integers(0, n - 1))
        stop = draw(st.integers(start + 1, n))
        if (start, stop) == (0, n):
            start = 1
        key = f"{start}:{stop}"
    else:
        key = str(draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n + 1)))
    return f"{a}[{':, ' * axis}{key}]"


def _log_softmax(draw: Draw, a: str, value: np.ndarray) -> str | None:
    if value.ndim == 0:
        return None
    axis = draw(st.integers(0, value.ndim - 1))
    return f"log_softmax({a})" if axis == value.ndim - 1 else f"log_softmax({a}, axis={axis})"


def _shaped(draw: Draw, op: str, a: str, value: np.ndarray) -> str | None:
    if op in ("sum", "mean"):
        return _reduction(draw, op, a, value)
    build = {
        "reshape": _reshape,
        "transpose": _transpose,
        "broadcast_to": _broadcast_to,
        "index": _index,
        "log_softmax": _log_softmax,
    }[op]
    return build(draw, a, value)


def _binary(draw: Draw, op: str, a: str, pool: Pool) -> str | None:
    """`a` with a second operand from the pool (itself included, unless DISTINCT), either
    way round: None when no value of the pool suits."""
    suits, template = ELEMENTWISE[op]
    names = [name for name in pool if not (op in DISTINCT and name == a)]
    orders = [
        (x, y) for name in names for x, y in ((a, name), (name, a)) if suits(pool[x], pool[y])
    ]
    if not orders:
        return None
    x, y = draw(st.sampled_from(orders))
    return template.format(a=x, b=y)


def _expression(draw: Draw, op: str, a: str, pool: Pool) -> str | None:
    """One operation on `a` (the last value), or None when `op` does not suit it."""
    if op in ELEMENTWISE:
        return _binary(draw, op, a, pool)
    if op in UNARY:
        suits, template = UNARY[op]
        return template.format(a=a) if suits(pool[a]) else None
    return _shaped(draw, op, a, pool[a])


def _value(expression: str, pool: Pool) -> np.ndarray | None:
    """The expression's value over the pool (None: not finite, or larger than LARGEST)."""
    with np.errstate(all="ignore"):
        value = numpy_value(expression, pool)
    if not np.all(np.isfinite(value)) or not _small(value, LARGEST):
        return None
    return value


@st.composite
def program_text(draw: Draw, inputs: list[np.ndarray], most: int, batched: bool) -> str:
    """A program over the inputs: 1 to `most` operations, each on the value before it (the
    first on an input; `batched`: the first is x0 @ x1 or x1 @ x0), then the sum of the last
    value. An operation that does not suit the value (log of a negative value, no operand to
    multiply with) gives way to the next of OPS that does."""
    pool: Pool = dict(zip(INPUTS, inputs, strict=True))
    a, lines = draw(st.sampled_from(INPUTS)), []
    for line in range(draw(st.integers(1, most))):
        if batched and not lines:
            expression = "x1 @ x0" if draw(st.booleans()) else "x0 @ x1"
            value = numpy_value(expression, pool)
        else:
            start = draw(st.integers(0, len(OPS) - 1))
            expression, value = _first_that_suits(draw, start, a, pool)
        a = f"y{line}"
        pool[a] = value
        lines.append(f"{a} = {expression}")
    lines.append(f"y{len(lines)} = sum({a})")
    return shown("\n".join(lines))


def _first_that_suits(draw: Draw, start: int, a: str, pool: Pool) -> tuple[str, np.ndarray]:
    """The expression and value of OPS[start] on `a`, or of the first op after it that suits
    (tanh always does)."""
    for op in OPS[start:] + OPS[:start]:
        expression = _expression(draw, op, a, pool)
        value = None if expression is None else _value(expression, pool)
        if value is not None:
            return expression, value
    raise AssertionError("tanh suits every value")
