"""Broadcasting seen from the backward pass.

A broadcast copies an operand along some result axes; its VJP must add those copies back up.
`broadcast_plan` names exactly which axes, so a learner can compare the plan with their own
`unbroadcast` and with what the frameworks do.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import numpy as np

from autograder.locale import say

Shape = tuple[int, ...]
Aligned = tuple[int | None, ...]


@dataclass(frozen=True)
class OperandPlan:
    """What the backward pass does to one operand's cotangent.

    `drop_axes` are result axes the operand does not have (missing leading axes): summed away.
    `keep_axes` are result axes where the operand has size 1 but the result does not: summed
    with keepdims, so the cotangent keeps the operand's rank.
    """

    shape: Shape
    aligned: Aligned
    drop_axes: tuple[int, ...]
    keep_axes: tuple[int, ...]


@dataclass(frozen=True)
class BroadcastPlan:
    """Forward result shape of `a op b` and, per operand, the sums its cotangent needs."""

    a: OperandPlan
    b: OperandPlan
    result: Shape

    def describe(self) -> str:
        """A short deterministic text table: one column per result axis, in the notebook's
        language (columns aligned as displayed: a Chinese character takes two columns)."""
        rank = len(self.result)
        header = ["", *(say("axis {i}", i=i) for i in range(rank))]
        rows = [
            header,
            ["a", *(_cell(d) for d in self.a.aligned)],
            ["b", *(_cell(d) for d in self.b.aligned)],
            [say("result"), *(str(d) for d in self.result)],
        ]
        widths = [max(_width(row[i]) for row in rows) for i in range(rank + 1)]
        lines = [
            "  ".join(" " * (w - _width(c)) + c for c, w in zip(row, widths, strict=True))
            for row in rows
        ]
        lines.append(say("result shape: {shape}", shape=self.result))
        for name, op in (("a", self.a), ("b", self.b)):
            lines.append(
                say(
                    "grad {name} {shape}: sum axes (drop) {drop}, sum axes (keepdims) {keep}",
                    name=name,
                    shape=op.shape,
                    drop=op.drop_axes,
                    keep=op.keep_axes,
                )
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.describe()


def _width(text: str) -> int:
    """Columns `text` takes on screen: two for a wide (Chinese) character."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _cell(dim: int | None) -> str:
    return "-" if dim is None else str(dim)


def _align(shape: Shape, rank: int) -> Aligned:
    """Right-align a shape to `rank` axes, padding missing leading axes with None."""
    return (None,) * (rank - len(shape)) + tuple(shape)


def _operand(shape: Shape, result: Shape) -> OperandPlan:
    aligned = _align(shape, len(result))
    drop = tuple(i for i, d in enumerate(aligned) if d is None)
    keep = tuple(i for i, d in enumerate(aligned) if d == 1 and result[i] != 1)
    return OperandPlan(tuple(shape), aligned, drop, keep)


def _first_clash(shape_a: Shape, shape_b: Shape) -> int:
    """Index (in the right-aligned result) of the first axis where the shapes cannot broadcast."""
    rank = max(len(shape_a), len(shape_b))
    pairs = zip(_align(shape_a, rank), _align(shape_b, rank), strict=True)
    for i, (da, db) in enumerate(pairs):
        if None not in (da, db) and 1 not in (da, db) and da != db:
            return i
    raise AssertionError("shapes were expected to clash")


def broadcast_plan(shape_a: Shape, shape_b: Shape) -> BroadcastPlan:
    """Plan the forward broadcast of two shapes and the sums their cotangents need.

    Raises ValueError naming both shapes and the offending axis when they are incompatible.
    """
    shape_a, shape_b = tuple(int(d) for d in shape_a), tuple(int(d) for d in shape_b)
    try:
        result = tuple(int(d) for d in np.broadcast_shapes(shape_a, shape_b))
    except ValueError:
        axis = _first_clash(shape_a, shape_b)
        rank = max(len(shape_a), len(shape_b))
        da, db = _align(shape_a, rank)[axis], _align(shape_b, rank)[axis]
        raise ValueError(
            say(
                "shapes {shape_a} and {shape_b} cannot be broadcast: at result axis {axis} "
                "(shapes right-aligned) the sizes are {da} and {db}; they must be equal or one "
                "be 1",
                shape_a=shape_a,
                shape_b=shape_b,
                axis=axis,
                da=da,
                db=db,
            )
        ) from None
    return BroadcastPlan(_operand(shape_a, result), _operand(shape_b, result), result)


def parse_shape(text: str) -> Shape:
    """Parse "6,1,5" (or "(6, 1, 5)", or "" for a scalar) into a shape tuple."""
    body = text.strip().strip("()[]").strip()
    if not body:
        return ()
    parts = [p.strip() for p in body.split(",") if p.strip()]
    try:
        dims = tuple(int(p) for p in parts)
    except ValueError:
        raise ValueError(
            say("cannot read {text!r} as a shape; write sizes like 6,1,5", text=text)
        ) from None
    if any(d < 0 for d in dims):
        raise ValueError(say("shape {dims} has a negative size", dims=dims))
    return dims


def explain(text_a: str, text_b: str) -> str:
    """The explorer's text for two typed shapes: the plan, or the error message. Never raises."""
    try:
        return broadcast_plan(parse_shape(text_a), parse_shape(text_b)).describe()
    except ValueError as err:
        return say("error: {err}", err=err)


def broadcast_explorer(shape_a: str = "6,1,5", shape_b: str = "4,1"):
    """An ipywidgets explorer: type two shapes, see the aligned table and the backward sums."""
    import html

    import ipywidgets as widgets

    box_a = widgets.Text(value=shape_a, description=say("shape a"))
    box_b = widgets.Text(value=shape_b, description=say("shape b"))
    out = widgets.HTML()

    def refresh(_change: object = None) -> None:
        out.value = f"<pre>{html.escape(explain(box_a.value, box_b.value))}</pre>"

    box_a.observe(refresh, names="value")
    box_b.observe(refresh, names="value")
    refresh()
    return widgets.VBox([widgets.HBox([box_a, box_b]), out])
